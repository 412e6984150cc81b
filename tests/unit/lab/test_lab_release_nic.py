"""The lab's Debian release (`--release`) and test-link NIC model (`--nic`),
without VMs.

Nothing is booted or built here. Where a test needs a running lab it is
simulated, and the test says how: a state.json written by the test with the
process check (qemu.is_our_qemu) patched to say the recorded QEMU runs; the
archive keyring check by a patched gpgv verdict and stand-ins for apt-get and
dpkg-deb (the real fetch is exercised by building a sid image, not here).
"""
import json
import os
import shutil
import subprocess
import sys

import pytest
import yaml

from rfc2544 import cli
from rfc2544.config import inventory
from rfc2544.errors import BadInput, InfraError
from rfc2544.lab import image, inventory_file, qemu, topology
from rfc2544.lab.lab import Lab


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("RFC2544_CACHE", str(tmp_path / "cache"))


def run_cli(*args, tmp_path):
    env = {**os.environ, "RFC2544_CACHE": str(tmp_path / "cache")}
    return subprocess.run([sys.executable, "-m", "rfc2544", *args], capture_output=True,
                          text=True, env=env, timeout=60)


# ---- release ------------------------------------------------------------------

def test_known_releases_and_default():
    assert list(image.RELEASES) == ["bookworm", "trixie", "sid"]
    assert image.DEFAULT_RELEASE == "bookworm"
    assert image.release_info("sid").name == "sid"


@pytest.mark.parametrize("bad", ["forky", "Sid", "", "bookworm;reboot", "../sid", None])
def test_unknown_release_is_bad_input(bad):
    with pytest.raises(BadInput, match=r"unknown Debian release .*\(known: bookworm, trixie, sid\)"):
        image.release_info(bad)
    with pytest.raises(BadInput):
        image.image_key(bad)


def test_image_key_differs_per_release(monkeypatch):
    keys = {r: image.image_key(r) for r in image.RELEASES}
    assert len(set(keys.values())) == 3
    assert image.image_key() == keys["bookworm"]
    # a package added for one release changes only that release's key
    monkeypatch.setitem(image.RELEASES, "sid", image.Release("sid", "Debian unstable", ("nano",)))
    assert image.image_key("sid") != keys["sid"]
    assert image.image_key("bookworm") == keys["bookworm"]
    assert image.packages("sid")[-1] == "nano" and "nano" not in image.packages("bookworm")


@pytest.mark.parametrize("cmd", [["lab", "up", "--name", "unit"], ["lab", "image"]])
def test_cli_refuses_unknown_release_before_building(cmd, tmp_path):
    r = run_cli(*cmd, "--release", "forky", tmp_path=tmp_path)
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip() == ("rfc2544: unknown Debian release 'forky' for the lab image "
                                "(known: bookworm, trixie, sid)")
    assert not (tmp_path / "cache" / "images").exists()


def test_image_records_and_describes_its_release(tmp_path):
    d = tmp_path / "img"
    d.mkdir()
    (d / "image.json").write_text(json.dumps({"key": "k", "kernel_release": "7.2.13+deb14-amd64",
                                              "suite": "sid", "build_seconds": 1}))
    (d / "rootfs.raw").write_bytes(b"")
    img = image.Image(d)
    assert img.release == "sid"
    assert image.describe(img).startswith("image k: Debian unstable (sid), kernel 7.2.13+deb14-amd64")
    # images built before the release was recorded came from bookworm
    (d / "image.json").write_text(json.dumps({"key": "k", "kernel_release": "6.1.0-50-amd64"}))
    assert image.Image(d).release == "bookworm"


def test_image_root_is_kept_only_where_the_host_lacks_the_kernel_compiler(tmp_path):
    assert [r for r, info in image.RELEASES.items() if info.keep_root] == ["trixie", "sid"]
    d = tmp_path / "img"
    d.mkdir()
    (d / "image.json").write_text(json.dumps({"key": "k", "kernel_release": "7.2.13+deb14-amd64",
                                              "suite": "sid"}))
    assert image.Image(d).root is None
    (d / "root").mkdir()
    assert image.Image(d).root == d / "root"


def test_prune_keeps_the_current_image_of_every_release(tmp_path):
    root = tmp_path / "cache" / "images"
    current = [image.image_key(r) for r in image.RELEASES]
    for name in current + ["old"]:
        (root / name).mkdir(parents=True)
    assert [p.name for p in image.prune()] == ["old"]
    assert sorted(p.name for p in root.iterdir()) == sorted(current)


# ---- archive keyring (simulated) -----------------------------------------------

class _FakeResp:
    def __init__(self, data):
        self.data = data

    def read(self):
        return self.data

    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


@pytest.fixture
def keyring_sim(monkeypatch):
    """InRelease 'download' and the gpgv verdict are simulated; apt-get and
    dpkg-deb are recorded and stood in for (dpkg-deb 'extracts' a keyring file)."""
    calls = []
    verdicts = []
    monkeypatch.setattr(image.urllib.request, "urlopen", lambda url, timeout: _FakeResp(b"signed"))
    monkeypatch.setattr(image, "_signers", lambda path, keyring: verdicts.pop(0))

    def fake_run(cmd, what, check=True, **kw):
        calls.append((cmd, kw))
        if cmd[:1] == ["apt-get"] and cmd[-1] == "debian-archive-keyring":
            (kw["cwd"] / "debian-archive-keyring_2099.1_all.deb").write_bytes(b"")
        if cmd[:2] == ["dpkg-deb", "-x"]:
            ring = image.Path(cmd[3]) / "usr/share/keyrings/debian-archive-keyring.gpg"
            ring.parent.mkdir(parents=True)
            ring.write_bytes(b"")
        return subprocess.CompletedProcess(cmd, 0, "", "")
    monkeypatch.setattr(image, "_run", fake_run)
    return calls, verdicts


def test_host_keyring_that_knows_every_signer_is_used_as_is(keyring_sim, tmp_path):
    calls, verdicts = keyring_sim
    verdicts.append(({"OLDKEY", "NEWKEY"}, set()))
    assert image._debootstrap_keyring("sid", tmp_path / "k") is None
    assert calls == []          # nothing fetched: debootstrap's default keyring


def test_missing_newer_key_fetches_the_release_keyring_with_own_apt_dirs(keyring_sim, tmp_path):
    calls, verdicts = keyring_sim
    verdicts += [({"OLDKEY"}, {"NEWKEY"}), ({"OLDKEY", "NEWKEY"}, set())]
    ring = image._debootstrap_keyring("sid", tmp_path / "k")
    assert ring == tmp_path / "k/apt/keyring/usr/share/keyrings/debian-archive-keyring.gpg"
    argv = [c for c, _ in calls]
    assert [a[0] for a in argv] == ["apt-get", "apt-get", "dpkg-deb"]
    for a in argv[:2]:
        opts = dict(o[2:].split("=", 1) for o in a if o.startswith("-o"))
        assert opts["Dir::State"] == str(tmp_path / "k/apt")
        assert opts["Dir::Etc::sourcelist"] == str(tmp_path / "k/apt/sources.list")
        assert not any(v.startswith("/etc/apt") for v in opts.values())
    sources = (tmp_path / "k/apt/sources.list").read_text()
    assert sources.startswith(f"deb [arch=amd64 signed-by={image.HOST_KEYRING} ")
    assert sources.rstrip().endswith(" sid main")


def test_release_signed_only_by_unknown_keys_is_one_clear_error(keyring_sim, tmp_path):
    calls, verdicts = keyring_sim
    verdicts.append((set(), {"NEWKEY"}))
    with pytest.raises(InfraError, match="signed only by keys the host's .* does not have .*NEWKEY"):
        image._debootstrap_keyring("sid", tmp_path / "k")
    assert calls == []


def test_unreachable_archive_is_one_clear_error(monkeypatch, tmp_path):
    """Simulated: urlopen raises as it does when deb.debian.org is unreachable."""
    def down(url, timeout):
        raise image.urllib.error.URLError("[Errno -3] Temporary failure in name resolution")
    monkeypatch.setattr(image.urllib.request, "urlopen", down)
    with pytest.raises(InfraError, match=r"cannot fetch http.*/dists/sid/InRelease: .*name resolution"):
        image._debootstrap_keyring("sid", tmp_path / "k")


def test_signers_parses_gpgv_status(monkeypatch, tmp_path):
    """Simulated: gpgv's --status-fd output for one good and one unknown signature."""
    out = ("[GNUPG:] NEWSIG\n[GNUPG:] ERRSIG 762F67A0B2C39DE4 22 8 01 1793347770 9 -\n"
           "[GNUPG:] NO_PUBKEY 762F67A0B2C39DE4\n[GNUPG:] NEWSIG\n"
           "[GNUPG:] GOODSIG 78DBA3BC47EF2265 Debian Archive Automatic Signing Key (13/trixie)\n"
           "[GNUPG:] VALIDSIG B8E5F13176D2A7A75220028078DBA3BC47EF2265 2026-10-30 1793347770\n")
    monkeypatch.setattr(image, "_run", lambda cmd, what, check=True: subprocess.CompletedProcess(cmd, 2, out, ""))
    assert image._signers(tmp_path / "InRelease", "ring") == (
        {"B8E5F13176D2A7A75220028078DBA3BC47EF2265"}, {"762F67A0B2C39DE4"})


# ---- NIC -----------------------------------------------------------------------

def test_known_nics():
    assert qemu.DEFAULT_NIC == "virtio"
    assert {n: qemu.nic_model(n) for n in qemu.NICS} == {"virtio": "virtio-net-pci", "e1000e": "e1000e"}
    for bad in ("rtl8139", "e1000", "virtio-net-pci", "", None):
        with pytest.raises(BadInput, match=r"unknown lab NIC .*\(known: virtio, e1000e\)"):
            qemu.nic_model(bad)


def _argv(tmp_path, **kw):
    if shutil.which(qemu.QEMU) is None:
        pytest.skip("qemu not installed (make deps)")
    return qemu.command(name="rfc2544-unit-tester", vm_dir=tmp_path, kernel="vmlinuz", initrd="initrd",
                        accel_name="tcg", ssh_port=2222, mgmt_mac="52:54:00:25:44:01",
                        links=[("02:00:00:18:00:01", 4000, 4001), ("02:00:00:19:00:01", 4002, 4003)], **kw)


def _devices(argv):
    return [argv[i + 1] for i, a in enumerate(argv) if a == "-device"]


@pytest.mark.parametrize("nic,model", [(None, "virtio-net-pci"), ("virtio", "virtio-net-pci"),
                                       ("e1000e", "e1000e")])
def test_qemu_argv_link_devices_follow_nic(tmp_path, nic, model):
    argv = _argv(tmp_path, **({"nic": nic} if nic else {}))
    devices = _devices(argv)
    assert f"{model},netdev=link0,mac=02:00:00:18:00:01" in devices
    assert f"{model},netdev=link1,mac=02:00:00:19:00:01" in devices
    # the management NIC stays virtio whatever the test links are
    assert "virtio-net-pci,netdev=mgmt,mac=52:54:00:25:44:01" in devices
    assert len([d for d in devices if d.startswith(model + ",")]) == (3 if model == "virtio-net-pci" else 2)


def test_qemu_argv_refuses_unknown_nic(tmp_path):
    with pytest.raises(BadInput):
        _argv(tmp_path, nic="rtl8139")


def test_e1000e_in_single_topology_is_refused_before_anything_boots(tmp_path):
    with pytest.raises(BadInput, match="--nic e1000e needs the two-host topology: the single topology's "
                                       "test links are veth pairs"):
        Lab("unit").up("single", nic="e1000e")
    r = run_cli("lab", "up", "--name", "unit", "--nic", "e1000e", tmp_path=tmp_path)
    assert r.returncode == 2 and "needs the two-host topology" in r.stderr, r.stderr
    r = run_cli("lab", "up", "--name", "unit", "--topology", "two-host", "--nic", "rtl8139", tmp_path=tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip() == "rfc2544: unknown lab NIC 'rtl8139' (known: virtio, e1000e)"
    r = run_cli("lab", "up", "--name", "unit", "--release", "sid", "--nic", "e1000e", tmp_path=tmp_path)
    assert r.returncode == 2 and "needs the two-host topology" in r.stderr
    assert not (tmp_path / "cache" / "images").exists()


def test_two_host_scripts_wait_for_carrier_single_does_not(tmp_path):
    for vm, nics in (("tester", "tx0 rx0"), ("dut", "dut0 dut1")):
        script = topology.get("two-host").script(vm)
        assert f"for n in {nics}; do i=0" in script
        assert script.index(f"for n in {nics}") > script.index("up\nneigh replace")
        (tmp_path / "net.sh").write_text(script)
        assert subprocess.run(["sh", "-n", str(tmp_path / "net.sh")]).returncode == 0
    assert "/carrier" not in topology.get("single").script("tester")


def test_carrier_wait_gives_up_with_a_message(tmp_path):
    """Run for real against a fake /sys/class/net (carrier stays 0), with a 0.2 s limit."""
    lines = topology._wait_carrier(["tx0"])
    script = "\n".join(lines).replace("/sys/class/net", str(tmp_path)).replace("-lt 200", "-lt 2")
    (tmp_path / "tx0").mkdir()
    (tmp_path / "tx0" / "carrier").write_text("0\n")
    r = subprocess.run(["sh", "-eu", "-c", script], capture_output=True, text=True, timeout=30)
    assert r.returncode == 1 and "no carrier on tx0" in r.stderr
    (tmp_path / "tx0" / "carrier").write_text("1\n")
    assert subprocess.run(["sh", "-eu", "-c", script], timeout=30).returncode == 0


def test_inventory_speed_follows_nic(tmp_path):
    topo = topology.get("two-host")
    ports = {"tester": 20001, "dut": 20002}
    for speed, want in ((None, topology.NOMINAL_SPEED_MBPS), (qemu.NICS["e1000e"][2], 1000)):
        path = tmp_path / "inventory.yml"
        inventory_file.write(path, inventory_file.build("unit", topo, ports, tmp_path / "key",
                                                        tmp_path / "kh", speed_mbps=speed))
        inv = inventory.load(path)
        assert {p.speed_mbps for h in inv.hosts.values() for p in h.ports.values()} == {want}


# ---- status (simulated running lab) --------------------------------------------

def _fake_lab(monkeypatch, state):
    """Simulated: a state.json as `lab up` writes it; the recorded pid 'is' our QEMU."""
    lab = Lab("unit")
    lab.dir.mkdir(parents=True)
    lab._save({"name": "unit", "accel": "tcg", "kernel_release": "7.2.13+deb14-amd64",
               "vms": {"tester": {"pid": 4242, "ssh_port": 2222, "console": "c"}}, **state})
    monkeypatch.setattr(qemu, "is_our_qemu", lambda pid, name: pid == 4242)
    return lab


def _status_cli(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        cli.main(["lab", "status", "--name", "unit", *args])
    out, err = capsys.readouterr()
    assert exc.value.code == 0, err
    return out


def test_status_shows_release_and_nic(monkeypatch, capsys):
    lab = _fake_lab(monkeypatch, {"topology": "two-host", "release": "sid", "nic": "e1000e"})
    st = lab.status()
    assert st["up"] and (st["release"], st["nic"]) == ("sid", "e1000e")
    text = _status_cli(capsys)
    assert text.splitlines()[0] == ("lab unit: up, topology two-host, TCG, Debian sid, "
                                    "kernel 7.2.13+deb14-amd64, test NICs e1000e")
    as_json = json.loads(_status_cli(capsys, "--json"))
    assert (as_json["release"], as_json["nic"]) == ("sid", "e1000e")


def test_status_of_single_topology_and_of_old_state_files(monkeypatch, capsys):
    lab = _fake_lab(monkeypatch, {"topology": "single", "release": "sid", "nic": None})
    assert (lab.status()["release"], lab.status()["nic"]) == ("sid", None)
    assert _status_cli(capsys).splitlines()[0].endswith("Debian sid, kernel 7.2.13+deb14-amd64, test links veth")
    # a state.json written before release/nic were recorded: bookworm, virtio links
    state = lab._state()
    del state["release"], state["nic"]
    state["topology"] = "two-host"
    lab._save(state)
    assert (lab.status()["release"], lab.status()["nic"]) == ("bookworm", "virtio")


def test_written_inventory_yaml_is_unchanged_for_virtio(tmp_path):
    """The default (virtio) inventory still says the nominal 10000 Mb/s."""
    topo = topology.get("two-host")
    path = tmp_path / "inventory.yml"
    inventory_file.write(path, inventory_file.build("unit", topo, {"tester": 1, "dut": 2}, tmp_path / "k",
                                                    tmp_path / "kh"))
    raw = yaml.safe_load(path.read_text())
    ports = raw["all"]["children"]["testers"]["hosts"]["tester"]["rfc2544_ports"]
    assert [p["speed_mbps"] for p in ports] == [10000, 10000]
