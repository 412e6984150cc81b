"""The read-only modules of the pktgen_kmod and facts roles against a
simulated host tree (no lab). The lab tests run them for real."""
import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def load(rel):
    path = ROOT / rel
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


info = load("playbooks/roles/pktgen_kmod/library/pktgen_kmod_info.py")
facts = load("playbooks/roles/facts/library/facts_collect.py")

PARAMS = {"name": "rfc2544_pktgen", "kernel_release": "6.1.0-50-amd64",
          "stamp_path": "/var/lib/rfc2544/pktgen_kmod-6.1.0-50-amd64.json",
          "intree_marker_path": "/var/lib/rfc2544/pktgen_kmod-intree-unloaded",
          "sig_enforce_path": "/sys/module/module/parameters/sig_enforce",
          "lockdown_path": "/sys/kernel/security/lockdown"}


def tree(tmp_path, files):
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def modinfo_for(path):
    def run(argv):
        assert argv[:4] == ["modinfo", "-k", "6.1.0-50-amd64", "rfc2544_pktgen"]
        if path is None:
            return 1, "", "modinfo: ERROR: Module rfc2544_pktgen not found.\n"
        return 0, f"filename:       {path}\nversion:        1.0\nsrcversion:     ABCDEF0123\nvermagic:       6.1.0-50-amd64 SMP\n", ""
    return run


def test_fresh_host_with_intree_pktgen_busy(tmp_path):
    tree(tmp_path, {
        "proc/modules": "pktgen 73728 1 - Live 0x0000000000000000\nveth 36864 0 - Live 0x0\n",
        "sys/module/module/parameters/sig_enforce": "N\n",
        "sys/kernel/security/lockdown": "[none] integrity confidentiality\n",
        "lib/modules/6.1.0-50-amd64/build/Makefile": "",
        "proc/sys/kernel/random/boot_id": "b00t\n",
    })
    r = info.collect(PARAMS, modinfo_for(None), root=str(tmp_path))
    assert r["loaded"] is False and r["intree_loaded"] is True and r["intree_refcnt"] == 1
    assert r["intree_builtin"] is False
    assert r["kdir_exists"] is True and r["sig_enforce"] == "N" and r["lockdown"] == "none"
    assert r["installed_path"] == "" and r["stamp"] == {}
    assert r["intree_running"] == []


def test_intree_pktgen_running_a_test_without_a_reference(tmp_path):
    # The start writer holds the in-tree module only while it waits; on a
    # busy host it can return before the thread starts: use count 0, yet
    # sending (the kpktgend_N text is the 6.1 kernel's pktgen_thread_show).
    tree(tmp_path, {
        "proc/modules": "pktgen 73728 0 - Live 0x0000000000000000\n",
        "proc/net/pktgen/pgctrl": "",
        "proc/net/pktgen/kpktgend_0": "Running: rx0 \nStopped: \nResult: OK: add_device=rx0\n",
        "proc/net/pktgen/kpktgend_1": "Running: tx0 rx0 \nStopped: eth9 \nResult: \n",
        "proc/net/pktgen/rx0": "Params: count 0\n",
    })
    r = info.collect(PARAMS, modinfo_for(None), root=str(tmp_path))
    assert r["intree_refcnt"] == 0 and r["intree_running"] == ["rx0", "tx0"]
    tree(tmp_path, {"proc/net/pktgen/kpktgend_0": "Running: \nStopped: rx0 \nResult: OK\n",
                    "proc/net/pktgen/kpktgend_1": "Running: \nStopped: \nResult: \n"})
    assert info.collect(PARAMS, modinfo_for(None), root=str(tmp_path))["intree_running"] == []


def test_loaded_and_installed_build_with_stamp(tmp_path):
    ko = "/lib/modules/6.1.0-50-amd64/updates/rfc2544_pktgen.ko"
    tree(tmp_path, {
        "proc/modules": "rfc2544_pktgen 90112 0 - Live 0x0 (OE)\n",
        "sys/module/rfc2544_pktgen/srcversion": "ABCDEF0123\n",
        "sys/module/rfc2544_pktgen/version": "1.0\n",
        ko.lstrip("/"): "ELF...",
        "proc/net/pktgen/pgrx": "",
        "sys/kernel/security/lockdown": "none [integrity] confidentiality\n",
        PARAMS["stamp_path"].lstrip("/"): json.dumps({"source_id": "x", "installed_checksum": "y"}),
    })
    r = info.collect(PARAMS, modinfo_for(ko), root=str(tmp_path))
    assert r["loaded"] and r["loaded_srcversion"] == "ABCDEF0123" == r["installed_srcversion"]
    assert r["installed_path"] == ko and len(r["installed_checksum"]) == 40
    assert r["pgrx_present"] and r["lockdown"] == "integrity"
    assert r["sig_enforce"] == "N"      # no switch at all: a kernel without module signing
    assert r["stamp"]["source_id"] == "x"


def test_builtin_pktgen_and_damaged_stamp(tmp_path):
    tree(tmp_path, {"proc/modules": "", "proc/net/pktgen/pgctrl": "",
                    PARAMS["stamp_path"].lstrip("/"): "{not json"})
    r = info.collect(PARAMS, modinfo_for(None), root=str(tmp_path))
    assert r["intree_builtin"] is True
    assert r["stamp"] == {}


def test_module_users_are_reported():
    mods = info.loaded_modules("pktgen 73728 2 foo,bar, Live 0x0\n")
    assert mods["pktgen"] == {"refcnt": 2, "users": ["foo", "bar"]}


def test_facts_parsers():
    assert facts.speed_mbps("Settings for eth1:\n\tSpeed: 10000Mb/s\n\tDuplex: Full\n") == 10000
    assert facts.speed_mbps("Settings for veth0:\n\tSpeed: Unknown!\n") is None
    ethtool_i = "driver: virtio_net\nversion: 1.0.0\nfirmware-version: \nbus-info: 0000:00:04.0\n"
    assert facts.parse_keyvalue(ethtool_i)["driver"] == "virtio_net"
    channels = ("Channel parameters for eth1:\nPre-set maximums:\nRX:\t\tn/a\nTX:\t\tn/a\nOther:\t\tn/a\n"
                "Combined:\t4\nCurrent hardware settings:\nRX:\t\tn/a\nTX:\t\tn/a\nOther:\t\tn/a\nCombined:\t2\n")
    assert facts.parse_channels(channels) == {"max": {"combined": 4}, "current": {"combined": 2}}
    assert facts.cpu_model("processor\t: 0\nmodel name\t: QEMU Virtual CPU version 2.5+\n") == "QEMU Virtual CPU version 2.5+"
    assert facts.os_release('NAME="Debian"\nPRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\n') == "Debian GNU/Linux 12 (bookworm)"


def test_nic_facts_in_a_namespace():
    calls = []

    def run(argv):
        calls.append(argv)
        cmd = argv[4:]
        if cmd[:2] == ["ip", "-j"]:
            return 0, json.dumps([{"ifname": "dut0", "address": "02:00:00:00:00:02", "mtu": 1500,
                                   "operstate": "UP", "linkinfo": {"info_kind": "veth"},
                                   "num_rx_queues": 2, "num_tx_queues": 2}]), ""
        if cmd[:2] == ["ethtool", "-i"]:
            return 0, "driver: veth\nversion: 1.0\nfirmware-version: \nbus-info: \n", ""
        if cmd[:2] == ["ethtool", "-l"]:
            return 76, "", "netlink error: Operation not supported\n"
        return 0, "Settings for dut0:\n\tSpeed: 10000Mb/s\n", ""

    nic = facts.nic_facts(run, "dut0", "dut")
    assert all(c[:4] == ["ip", "netns", "exec", "dut"] for c in calls)
    assert nic["driver"] == "veth" and nic["kind"] == "veth" and nic["speed_mbps"] == 10000
    assert nic["rx_queues"] == 2 and nic["channels"] is None and nic["netns"] == "dut"


def test_missing_nic_is_reported_not_raised():
    nic = facts.nic_facts(lambda argv: (1, "", 'Device "nope" does not exist.\n'), "nope", "")
    assert nic["error"] == 'Device "nope" does not exist.'


def test_collect_on_this_machine_has_the_schema():
    out = facts.collect({"ports": [], "netns": "", "module_name": "rfc2544_pktgen",
                         "tuning_snapshot_path": "/nonexistent/tuning.json"},
                        lambda argv: (1, "", "not here"))
    assert out["schema"] == "rfc2544-host-facts/1"
    assert out["kernel"]["release"] and out["cpu"]["count"] >= 1
    assert out["module"]["loaded"] is False
    assert out["tuning"]["snapshot"] is None and out["tuning"]["irqbalance"] == "not installed"
    json.dumps(out)


# ---- pktgen_kmod_ko_info: the prebuilt module's .modinfo (simulated files) ----

ko_info = load("playbooks/roles/pktgen_kmod/library/pktgen_kmod_ko_info.py")


def test_ko_info_reads_name_vermagic_and_srcversion(tmp_path):
    from fake_ko import fake_ko
    data = fake_ko(tmp_path / "m.ko", vermagic="7.2.13+deb14-amd64 SMP preempt mod_unload ").read_bytes()
    info = ko_info.modinfo(data)
    assert info["name"] == "rfc2544_pktgen" and info["srcversion"] == "0123456789ABCDEF0123456"
    assert info["vermagic"].split()[0] == "7.2.13+deb14-amd64" and info["license"] == "GPL"


def test_ko_info_refuses_what_is_not_a_module(tmp_path):
    import lzma
    import pytest
    from fake_ko import fake_ko
    good = fake_ko(tmp_path / "m.ko").read_bytes()
    for data, words in ((lzma.compress(good), "not an ELF file"),
                        (b"\x7fELF\x03\x01" + bytes(58), "not a valid ELF header"),
                        (good[:80], "truncated or damaged"),
                        (good.replace(b".modinfo", b".notinfo"), "no .modinfo section")):
        with pytest.raises(ValueError, match=words):
            ko_info.modinfo(data)
