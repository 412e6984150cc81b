"""Lab pieces that need no VM: topology scripts, inventory, pktgen/cap input
checks, QEMU command lines, and the bad-input paths of `lab up`.

Where a failure cannot be produced for real in a unit test it is simulated,
and the test says how: a missing QEMU by an empty PATH, a full disk by a
patched shutil.disk_usage, an SSH that never comes up by a VM that stays
"running" (patched process check) while nothing answers on its port.
"""
import os
import re
import shutil
import subprocess
import sys
import time

import pytest
import yaml

from rfc2544.config import inventory
from rfc2544.errors import BadInput, InfraError
from rfc2544.lab import boot_faults, cap, flow_counter, image, inventory_file, kernel_pktgen, qemu, topology
from rfc2544.lab.lab import Lab


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("RFC2544_CACHE", str(tmp_path / "cache"))


def run_cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "rfc2544", *args], capture_output=True,
                          text=True, env=env, timeout=60)


@pytest.mark.parametrize("name,vm", [("single", "tester"), ("two-host", "tester"), ("two-host", "dut")])
def test_network_scripts_are_valid_sh(name, vm, tmp_path):
    script = topology.get(name).script(vm)
    path = tmp_path / "net.sh"
    path.write_text(script)
    assert subprocess.run(["sh", "-n", str(path)]).returncode == 0
    assert "10.0.2.15/24 dev mgmt0" in script
    if vm == "dut" or name == "single":
        assert "echo 1 > /proc/sys/net/ipv4/ip_forward" in script
        assert "neigh replace 198.18.0.1 lladdr 02:00:00:18:00:01 dev dut0 nud permanent" in script
    if vm == "tester":
        assert "neigh replace 198.18.0.2 lladdr 02:00:00:18:00:02 dev tx0 nud permanent" in script
    # the tester's calibration link: a veth pair of its own, up, no addresses
    assert ("link add cal0 type veth peer name cal1" in script) == (vm == "tester")
    if vm == "tester":
        assert "link set cal1 up" in script and "dev cal0" not in script and "dev cal1" not in script


def test_single_topology_puts_dut_ports_in_the_namespace():
    script = topology.get("single").script("tester")
    assert "peer name dut0 address 02:00:00:18:00:02 netns dut" in script
    ns_part = script.split("ip netns exec dut sh -eu <<'NSEOF'")[-1]
    assert "addr add 198.19.0.2/24 dev dut1" in ns_part and "tx0" not in ns_part


def test_unknown_topology_and_hosts_are_bad_input():
    with pytest.raises(BadInput, match="unknown lab topology 'triangle'"):
        topology.get("triangle")
    with pytest.raises(BadInput, match="--hosts must be 1 or 2"):
        topology.from_hosts(3)
    with pytest.raises(BadInput, match="unknown lab topology"):
        Lab("unit").up("triangle")
    r = run_cli("lab", "up", "--hosts", "3", "--name", "unit")
    assert r.returncode == 2 and r.stderr.strip() == "rfc2544: --hosts must be 1 or 2, not 3"


def test_bad_lab_name_is_bad_input():
    with pytest.raises(BadInput):
        Lab("../etc")


@pytest.mark.parametrize("name", ["single", "two-host"])
def test_written_inventory_loads_with_the_project_schema(name, tmp_path):
    topo = topology.get(name)
    ports = {vm.name: 20000 + vm.index for vm in topo.vms}
    path = tmp_path / "inventory.yml"
    inventory_file.write(path, inventory_file.build("unit", topo, ports, tmp_path / "key", tmp_path / "kh"))
    inv = inventory.load(path)
    tester, dut = inv.hosts["tester"], inv.hosts["dut"]
    assert tester.group == "testers" and dut.group == "duts"
    assert tester.key_file == str(tmp_path / "key") and tester.known_hosts == str(tmp_path / "kh")
    assert tester.ports["tx0"].peer_mac == "02:00:00:18:00:02"
    assert tester.ports["tx0"].peer_ipv4 == "198.18.0.2"
    assert tester.ports["rx0"].ipv6 == "2001:2:0:100::1/64"
    assert dut.netns == ("dut" if name == "single" else None)
    assert dut.port == (tester.port if name == "single" else 20002)
    # wired (cal0-cal1) but not named: the tests that want it name it
    assert tester.calibration_link is None and dut.calibration_link is None
    raw = yaml.safe_load(path.read_text())
    args = raw["all"]["children"]["testers"]["hosts"]["tester"]["ansible_ssh_common_args"]
    assert "StrictHostKeyChecking=yes" in args and f"UserKnownHostsFile={tmp_path / 'kh'}" in args


def test_pktgen_script_rejects_values_that_could_reach_a_shell():
    ok = dict(dev="tx0", count=10, src_ip="198.18.0.1", dst_ip="198.19.0.1", dst_mac="02:00:00:18:00:02")
    assert "echo 'count 10' > /proc/net/pktgen/tx0" in kernel_pktgen.script(**ok)
    for key, bad in (("dev", "tx0;reboot"), ("dst_mac", "02:00:00:18:00:02;x"), ("count", 0),
                     ("count", "10"), ("dst_ip", "198.19.0.1 && x")):
        with pytest.raises((BadInput, ValueError)):
            kernel_pktgen.script(**{**ok, key: bad})


def test_pktgen_script_waits_for_the_result_when_start_returns_early(tmp_path):
    """Simulated: /proc/net/pktgen is a folder, modprobe a stub that plays a
    thread which only finishes 0.5 s after `start` returned (the in-tree race),
    the device file meanwhile holding the last command's "OK: src_max=..." result."""
    proc, bin_ = tmp_path / "pktgen", tmp_path / "bin"
    proc.mkdir(), bin_.mkdir()
    done = ("Params: count 10\nCurrent:\n     pkts-sofar: 10  errors: 0\n"
            "Result: OK: 500(c400+d100) usec, 10 (60byte,0frags)\n")
    (bin_ / "rmmod").write_text("#!/bin/sh\nexit 1\n")
    (bin_ / "modprobe").write_text(
        "#!/bin/sh\n(while ! grep -q start " + str(proc / "pgctrl") + " 2>/dev/null; do sleep 0.05; done;"
        " printf 'Result: OK: src_max=198.18.0.1\\n' > " + str(proc / "tx0") + "; sleep 0.5;"
        " printf '" + done.replace("\n", "\\n") + "' > " + str(proc / "tx0") + ") &\n")
    for stub in bin_.iterdir():
        stub.chmod(0o755)
    text = kernel_pktgen.script("tx0", 10, "198.18.0.1", "198.19.0.1", "02:00:00:18:00:02", wait_s=20)
    out = subprocess.run(["sh", "-s"], input=text.replace("/proc/net/pktgen", str(proc)), text=True,
                         capture_output=True, timeout=60,
                         env={**os.environ, "PATH": f"{bin_}:{os.environ['PATH']}"})
    assert out.returncode == 0, out.stderr
    assert kernel_pktgen.parse(out.stdout).sent == 10


def test_pktgen_result_parsing():
    text = ("Params: count 10000  min_pkt_size: 60  max_pkt_size: 60\nCurrent:\n"
            "     pkts-sofar: 10000  errors: 0\n"
            "Result: OK: 565891(c565000+d891) usec, 10000 (60byte,0frags)\n  17671pps 8Mb/sec\n")
    r = kernel_pktgen.parse(text)
    assert (r.sent, r.errors, r.usec) == (10000, 0, 565891)
    with pytest.raises(InfraError):
        kernel_pktgen.parse("Result: Idle\n")


class _Recorder:
    """Stands in for an SSHHost: records the commands, each succeeding with
    no output (so no clsact exists yet)."""
    def __init__(self):
        self.cmds = []

    def run(self, cmd, check=True):
        self.cmds.append(cmd)
        return 0, "", ""


def test_flow_counter_action():
    for action in ("pass", "drop"):
        host = _Recorder()
        with flow_counter.FlowCounter(host, "dut0", "198.18.0.1", "198.19.0.1", action=action):
            pass
        added = [c for c in host.cmds if c.startswith("tc filter add")]
        assert len(added) == 1 and added[0].endswith(f"action gact {action}"), host.cmds
        assert host.cmds[-1] == "tc qdisc del dev dut0 clsact"      # the clsact it added goes
    with pytest.raises(BadInput):
        flow_counter.FlowCounter(_Recorder(), "dut0", "198.18.0.1", "198.19.0.1", action="drop; reboot")


def test_cap_commands_and_checks():
    cmds = cap.commands(2000, None)
    assert cmds[-1].endswith("police pkts_rate 2000 pkts_burst 20 conform-exceed drop/pipe")
    for bad in (0, -1, "5", 1.5, True):
        with pytest.raises(BadInput):
            cap.commands(bad, None)


def test_shaper_commands_hold_the_queue_asked_and_refuse_bad_values():
    (cmd,) = cap.shape_commands(3000, 60, 2.0)
    # 3000 frames/s of 60 bytes, a FIFO of 2 s of them (6000 frames), a
    # bucket of 0.1 s of them (300 frames)
    assert cmd.endswith("root tbf rate 1440000bit burst 18000 limit 360000")
    (cmd,) = cap.shape_commands(3000, 60, 2.0, bucket_s=0.001)
    assert cmd.endswith("burst 1600 limit 360000")      # never below a full-size frame
    for args in ((0, 60, 1.0), (3000, 0, 1.0), (3000, 60, 0), (3000, 60, 61), (3000, 60, float("nan")),
                 ("3000", 60, 1.0), (3000, 60, True), (3000, 60, 1.0, 0), (3000, 60, 1.0, float("nan"))):
        with pytest.raises(BadInput):
            cap.shape_commands(*args)


def test_qemu_command_line(tmp_path):
    if shutil.which(qemu.QEMU) is None:
        pytest.skip("qemu not installed (make deps)")
    cmd = qemu.command(name="rfc2544-unit-tester", vm_dir=tmp_path, kernel="vmlinuz", initrd="initrd",
                       accel_name="tcg", ssh_port=2222, mgmt_mac="52:54:00:25:44:01",
                       links=[("02:00:00:18:00:01", 4000, 4001)])
    line = " ".join(cmd)
    assert "hostfwd=tcp:127.0.0.1:2222-:22" in line and "restrict=on" in line
    assert "socket,id=link0,udp=127.0.0.1:4001,localaddr=127.0.0.1:4000" in line
    assert line.index("drive=root") < line.index("drive=seed")   # root is vda
    assert cmd[cmd.index("-name") + 1] == "rfc2544-unit-tester,debug-threads=on"
    append = cmd[cmd.index("-append") + 1]
    assert append == qemu.APPEND
    cmd = qemu.command(name="rfc2544-unit-tester", vm_dir=tmp_path, kernel="vmlinuz", initrd="initrd",
                       accel_name="tcg", ssh_port=2222, mgmt_mac="52:54:00:25:44:01",
                       kernel_args=("slub_debug=FZP", "nokaslr"))
    assert cmd[cmd.index("-append") + 1] == qemu.APPEND + " slub_debug=FZP nokaslr"


def test_our_qemu_is_known_by_its_name_with_or_without_options(tmp_path):
    """The lab's QEMUs are recognised by `-name NAME,debug-threads=on` and
    by the bare `-name NAME` of labs booted before that option; a longer
    name that starts with NAME is another lab's. (A sleeping Python started
    as qemu-system-x86_64 stands in for QEMU.)"""
    fake = tmp_path / "qemu-system-x86_64"
    fake.symlink_to(sys.executable)
    for arg, ours in (("lab1,debug-threads=on", True), ("lab1", True), ("lab10,debug-threads=on", False),
                      ("lab10", False)):
        proc = subprocess.Popen([str(fake), "-c", "import time; time.sleep(30)", "-name", arg])
        try:
            time.sleep(0.1)
            assert qemu.is_our_qemu(proc.pid, "lab1") is ours, arg
        finally:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("word", ["a b", "x;reboot", "init=/bin/sh", "", "=1", "quiet\n", "$(id)"])
def test_lab_up_refuses_kernel_args_that_are_not_one_word(tmp_path, word):
    """Nothing is booted: the check comes before the image or QEMU."""
    env = {**os.environ, "RFC2544_CACHE": str(tmp_path / "cache")}
    r = run_cli("lab", "up", "--name", "unit", "--kernel-arg", word, env=env)
    assert r.returncode == 2, r.stderr
    assert "is not of the form name or name=value" in r.stderr
    assert not (tmp_path / "cache" / "images").exists()


def test_qemu_missing_is_one_clear_line(tmp_path):
    """Simulated: PATH holds no qemu-system-x86_64."""
    env = {**os.environ, "PATH": str(tmp_path), "RFC2544_CACHE": str(tmp_path / "cache")}
    r = run_cli("lab", "up", "--name", "unit", env=env)
    assert r.returncode == 3
    assert r.stderr.strip() == ("rfc2544: qemu-system-x86_64 not found on PATH: "
                                "install qemu-system-x86 (`make deps`)")


def test_no_free_disk_for_the_image(monkeypatch, tmp_path):
    """Simulated: shutil.disk_usage reports 1 GiB free; nothing is built or left behind."""
    monkeypatch.setattr(image, "check_tools", lambda: None)
    monkeypatch.setattr(image.shutil, "disk_usage", lambda p: shutil._ntuple_diskusage(100 << 30, 99 << 30, 1 << 30))
    with pytest.raises(InfraError, match=r"not enough free disk for the lab image .*1\.0 GiB free, 5 GiB needed"):
        image.ensure_image()
    assert [p.name for p in (tmp_path / "cache" / "images").iterdir() if not p.name.endswith(".lock")] == []


def test_failed_build_leaves_no_half_image(monkeypatch, tmp_path):
    """Simulated: debootstrap fails (a stand-in script on PATH exits 1); the
    archive keyring check before it (an InRelease download) is patched out."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "debootstrap").write_text("#!/bin/sh\necho 'E: Failed getting release file' >&2\nexit 1\n")
    (fake / "debootstrap").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:{os.environ['PATH']}")
    monkeypatch.setattr(image, "check_tools", lambda: None)
    monkeypatch.setattr(image, "_debootstrap_keyring", lambda release, workdir: None)
    with pytest.raises(InfraError, match="debootstrap failed"):
        image.ensure_image()
    assert [p for p in (tmp_path / "cache" / "images").iterdir() if not p.name.endswith(".lock")] == []


def test_image_key_changes_with_inputs(monkeypatch):
    key = image.image_key()
    monkeypatch.setattr(image, "PACKAGES", image.PACKAGES + ("nano",))
    assert image.image_key() != key


def fake_clock_lab(monkeypatch, console_text):
    """Simulated, on a fake clock (the wait's sleeps advance it; nothing
    sleeps): a booting lab 'unit' whose tester VM stays running (patched
    process check), with `console_text` on its console and SSH on a port
    that never answers. Returns (lab, the lab module, clock, port)."""
    import types
    from rfc2544.lab import lab as lab_mod
    clock = [0.0]
    monkeypatch.setattr(lab_mod, "time", types.SimpleNamespace(
        monotonic=lambda: clock[0], time=lambda: clock[0],
        sleep=lambda s: clock.__setitem__(0, clock[0] + s)))
    lab = Lab("unit")
    lab.dir.mkdir(parents=True)
    (lab.dir / "tester").mkdir()
    (lab.dir / "tester" / "console.log").write_text(console_text)
    lab._save({"vms": {"tester": {"pid": 1, "ssh_port": qemu.free_port()}}})
    monkeypatch.setattr(qemu, "is_our_qemu", lambda pid, name: True)
    return lab, lab_mod, clock, lab._state()["vms"]["tester"]["ssh_port"]


def test_ssh_never_up_reports_console_tail(monkeypatch, tmp_path):
    """Simulated, on a fake clock: a 'VM' that stays running (patched
    process check) but whose SSH port never answers; the timeout is 1 s."""
    lab, lab_mod, clock, port = fake_clock_lab(
        monkeypatch, "[    1.0] Linux version 6.1\n[    9.9] Kernel panic - not syncing\n")
    monkeypatch.setattr(lab_mod, "SSH_TIMEOUT", 1.0)
    # a VM that had the CPU all along: the wait ends at its timeout
    monkeypatch.setattr(qemu, "cpu_seconds", lambda pid: clock[0])
    with pytest.raises(InfraError) as exc:
        lab._wait_ready("tester", port, clock[0], 0, retry=False)
    msg = str(exc.value)
    # (the wait polls every 2 s: it ends at the first look past its timeout)
    assert re.search(r"SSH to tester \(127.0.0.1:\d+\) not ready after 2 s \(no answer; its QEMU ran 2 s "
                     r"on a CPU\)", msg), msg
    assert msg.endswith("[    9.9] Kernel panic - not syncing")


STALLED_CONSOLE = """\
[  540.101] rcu: INFO: rcu_sched self-detected stall on CPU
[  540.102] rcu: \t1-....: (5249 ticks this GP) idle=8e4/1/0x4000000000000000
[  540.350] Call Trace:
[  576.350] watchdog: BUG: soft lockup - CPU#1 stuck for 23s! [ext4lazyinit:201]
[  576.351]  ext4_lazyinit_thread+0x565/0x630 [ext4]
[  576.352]  kthread+0xd7/0x100
"""


def test_a_vm_that_had_the_cpu_but_never_answered_is_booted_again(monkeypatch, tmp_path):
    """Simulated, on a fake clock: a 'VM' whose QEMU ran its whole wait on
    a CPU while its console filled with stall reports and no SSH banner
    came (CI: a background VM, 657 s on a CPU in 601 s). The first boot
    raises BootCrash naming the first stall (up() boots it again); the
    retry fails with the console's tail. A starved VM is not retried."""
    lab, lab_mod, clock, port = fake_clock_lab(monkeypatch, STALLED_CONSOLE)
    monkeypatch.setattr(lab_mod, "SSH_TIMEOUT", 1.0)
    monkeypatch.setattr(lab_mod, "STALL_S", 60.0)
    monkeypatch.setattr(qemu, "cpu_seconds", lambda pid: 1.1 * clock[0])
    with pytest.raises(lab_mod.BootCrash) as exc:
        lab._wait_ready("tester", port, clock[0], 0)
    assert re.search(r"not ready after 2 s \(no answer; its QEMU ran 2 s on a CPU; its kernel reported "
                     r"2 stall\(s\), first: \[  540.101\] rcu: INFO: rcu_sched self-detected stall on CPU\)",
                     exc.value.first_line), exc.value.first_line
    with pytest.raises(InfraError) as exc:
        lab._wait_ready("tester", port, clock[0], 0, retry=False)
    assert not isinstance(exc.value, lab_mod.BootCrash)
    assert str(exc.value).endswith("kthread+0xd7/0x100")
    # starved (no CPU in its wait): the next boot would starve too
    monkeypatch.setattr(qemu, "cpu_seconds", lambda pid: 5.0)
    with pytest.raises(InfraError, match="its QEMU ran 0 s on a CPU") as exc:
        lab._wait_ready("tester", port, clock[0], 0)
    assert not isinstance(exc.value, lab_mod.BootCrash)


def test_console_stalls_reads_each_watchdog_headline(tmp_path):
    log = tmp_path / "console.log"
    log.write_text(STALLED_CONSOLE + "[  600.0] INFO: task systemd:1 blocked for more than 120 seconds.\n"
                   "[  601.0] Kernel panic - not syncing\n")
    assert [line.split("] ", 1)[1] for line in qemu.console_stalls(log)] == [
        "rcu: INFO: rcu_sched self-detected stall on CPU",
        "watchdog: BUG: soft lockup - CPU#1 stuck for 23s! [ext4lazyinit:201]",
        "INFO: task systemd:1 blocked for more than 120 seconds."]
    assert qemu.console_stalls(tmp_path / "missing.log") == []


def test_a_starved_vm_is_waited_for_until_it_had_the_cpu(monkeypatch, tmp_path):
    """Simulated, on a fake clock (the wait's sleeps advance it; nothing
    sleeps): a 'VM' whose QEMU gets no CPU (a niced VM on a busy host) is
    waited for past its 1 s timeout up to STARVED_CAP times it; one that
    gets its CPU_SHARE late is waited for until then, and no longer."""
    lab, lab_mod, clock, port = fake_clock_lab(monkeypatch, "[  585.1] Mounted tmp.mount\n")
    monkeypatch.setattr(lab_mod, "SSH_TIMEOUT", 1.0)
    monkeypatch.setattr(lab_mod, "STALL_S", 60.0)
    monkeypatch.setattr(qemu, "cpu_seconds", lambda pid: 7.0)
    t0 = clock[0]
    with pytest.raises(InfraError, match=r"not ready after [3-5] s \(no answer; its QEMU ran 0 s on a CPU\)"):
        lab._wait_ready("tester", port, t0, 0)
    # the wait looks every 2 s: it ends at the first look past the cap
    assert lab_mod.STARVED_CAP * 1.0 <= clock[0] - t0 < lab_mod.STARVED_CAP * 1.0 + 2.0
    # no CPU for 1.5 s, then a CPU of its own: done once it ran CPU_SHARE of the timeout
    t0 = clock[0]
    monkeypatch.setattr(qemu, "cpu_seconds", lambda pid: max(0.0, clock[0] - t0 - 1.5))
    with pytest.raises(InfraError, match="not ready after [2-4] s"):
        lab._wait_ready("tester", port, t0, 0)
    assert 1.5 + lab_mod.CPU_SHARE <= clock[0] - t0 < 1.5 + lab_mod.CPU_SHARE + 2.0


def test_a_vm_whose_console_stays_silent_has_hung(monkeypatch, tmp_path):
    """Simulated: a 'VM' that stays running but prints nothing more and never
    answers SSH (CI: a sid guest silent after "smp: Brought up 1 node, 2
    CPUs" until the 600 s wait ran out). With a 0.5 s stall limit the wait
    ends long before its 30 s: BootCrash (booted again) on the first boot,
    InfraError on the retry. A console that keeps growing is waited for."""
    import time
    import types
    from rfc2544.lab import lab as lab_mod
    lab = Lab("unit")
    lab.dir.mkdir(parents=True)
    (lab.dir / "tester").mkdir()
    console = lab.dir / "tester" / "console.log"
    console.write_text("[    1.005359] smp: Brought up 1 node, 2 CPUs\n")
    lab._save({"vms": {"tester": {"pid": 1, "ssh_port": qemu.free_port()}}})
    monkeypatch.setattr(lab_mod, "SSH_TIMEOUT", 30.0)
    monkeypatch.setattr(lab_mod, "STALL_S", 0.5)
    monkeypatch.setattr(qemu, "is_our_qemu", lambda pid, name: True)
    monkeypatch.setattr(lab_mod, "time", types.SimpleNamespace(monotonic=time.monotonic, time=time.time,
                                                               sleep=lambda s: time.sleep(0.05)))
    port = lab._state()["vms"]["tester"]["ssh_port"]
    t0 = time.monotonic()
    with pytest.raises(lab_mod.BootCrash, match="hung: console silent for 0 s after '.*Brought up 1 node"):
        lab._wait_ready("tester", port, time.monotonic(), 0)
    with pytest.raises(InfraError, match="hung") as exc:
        lab._wait_ready("tester", port, time.monotonic(), 0, retry=False)
    assert not isinstance(exc.value, lab_mod.BootCrash)
    assert time.monotonic() - t0 < 10
    # a console that grows is no hang: the wait runs to its own end
    monkeypatch.setattr(lab_mod, "SSH_TIMEOUT", 1.5)
    monkeypatch.setattr(qemu, "cpu_seconds", lambda pid: time.monotonic())
    def booting(s):
        with console.open("a") as f:
            f.write("[    2.0] still booting\n")
        time.sleep(0.05)
    monkeypatch.setattr(lab_mod, "time", types.SimpleNamespace(monotonic=time.monotonic, time=time.time,
                                                               sleep=booting))
    with pytest.raises(InfraError, match="not ready after 2 s"):
        lab._wait_ready("tester", port, time.monotonic(), 0)


def test_connect_tries_again_when_a_busy_vm_answers_late(monkeypatch, tmp_path):
    """Simulated: a VM whose sshd sends no banner in time twice, then answers;
    a host key that does not match is final at once."""
    import types
    from rfc2544.drivers import ssh as ssh_mod
    from rfc2544.errors import HostKeyError
    from rfc2544.lab import lab as lab_mod
    lab = Lab("unit")
    monkeypatch.setattr(Lab, "ssh_port", lambda self, host: ("tester", 2222))
    monkeypatch.setattr(lab_mod, "time", types.SimpleNamespace(monotonic=lab_mod.time.monotonic,
                                                               sleep=lambda s: None))
    calls = []

    def late(name, host, port, user, key, known, timeout):
        calls.append(timeout)
        if len(calls) < 3:
            raise InfraError(f"{name}: SSH to {host}:{port} failed: Error reading SSH protocol banner")
        return "connected"
    monkeypatch.setattr(ssh_mod.SSHHost, "connect", staticmethod(late))
    assert lab.connect("tester") == "connected" and calls == [lab_mod.CONNECT_TIMEOUT_S] * 3
    calls.clear()

    def wrong_key(*args, **kw):
        calls.append(1)
        raise HostKeyError("tester: host key of 127.0.0.1:2222 does not match /x/known_hosts")
    monkeypatch.setattr(ssh_mod.SSHHost, "connect", staticmethod(wrong_key))
    with pytest.raises(HostKeyError, match="does not match"):
        lab.connect("tester")
    assert calls == [1]


def test_down_never_kills_a_pid_that_is_not_our_qemu(tmp_path):
    """A recorded pid now belonging to another process (here: a sleep) is left alone."""
    proc = subprocess.Popen(["sleep", "30"])
    try:
        lab = Lab("unit")
        lab.dir.mkdir(parents=True)
        lab._save({"topology": "single", "vms": {"tester": {"pid": proc.pid, "ssh_port": 1}}})
        assert not lab.is_up()
        assert lab.down(log=lambda m: None) == []
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait()


def test_down_keeps_what_each_vm_cost(tmp_path, monkeypatch):
    """Simulated: a recorded VM whose pid passes as our QEMU (a busy python
    here). Its CPU time is read while it runs and kept once it is stopped."""
    proc = subprocess.Popen([sys.executable, "-c", "import time\nt = time.process_time()\n"
                             "while time.process_time() - t < 0.3: pass\ntime.sleep(30)"])
    try:
        lab = Lab("unit")
        lab.dir.mkdir(parents=True)
        lab._save({"topology": "single", "vms": {"tester": {"pid": proc.pid, "ssh_port": 1}}})
        monkeypatch.setattr(qemu, "is_our_qemu", lambda pid, name: proc.poll() is None)
        monkeypatch.setattr(qemu, "stop", lambda pid, name: proc.kill() or proc.wait() is not None)
        time.sleep(1)
        running = lab.cpu_seconds()["tester"]
        assert running >= 0.25
        assert lab.down(log=lambda m: None) == ["tester"]
        assert proc.poll() is not None
        assert lab.cpu_seconds()["tester"] >= running
    finally:
        proc.kill()
        proc.wait()


def test_status_and_connect_when_not_up():
    lab = Lab("unit")
    assert lab.status() == {"name": "unit", "up": False, "vms": {}}
    with pytest.raises(InfraError, match="is not up"):
        lab.connect("tester")
    r = run_cli("lab", "ssh", "--name", "unit", "tester", "--", "true")
    assert r.returncode == 3 and r.stderr.startswith("rfc2544: lab 'unit' is not up")


def test_documented_physical_example_inventory_loads():
    from pathlib import Path
    path = Path(__file__).resolve().parents[3] / "inventory" / "example-two-box.yml"
    inv = inventory.load(path)
    assert [(s.tx_port, s.rx_port) for s in inv.streams] == [("enp1s0f0", "enp1s0f1")]
    assert inv.hosts["tester"].ports["enp1s0f0"].peer_mac == inv.hosts["dut"].ports["ens1f0"].mac


def test_prune_keeps_current_and_in_use_images(tmp_path):
    root = tmp_path / "cache" / "images"
    for name in (image.image_key(), "old1", "old2"):
        (root / name).mkdir(parents=True)
    (root / "alias").symlink_to("old1")
    removed = image.prune(in_use=[str(root / "old2")])
    assert sorted(p.name for p in removed) == ["old1"]
    assert sorted(p.name for p in root.iterdir()) == sorted([image.image_key(), "old2"])


def test_a_vm_that_crashes_while_booting_is_booted_once_more(monkeypatch, tmp_path):
    """Simulated (no QEMU): the first 'QEMU' of the tester exits with an oops
    on its console (a TCG race with the kernel's live patching), the second
    boots. up() boots it again once, from a fresh overlay, and keeps the
    crashed console; a VM that crashes twice fails with its console tail."""
    from rfc2544.lab import lab as lab_mod
    from rfc2544.lab import seed
    starts, overlays = [], []
    lab = Lab("unit")
    img = type("Img", (), {"rootfs": tmp_path / "rootfs.raw", "kernel": tmp_path / "vmlinuz",
                           "initrd": tmp_path / "initrd", "dir": tmp_path, "kernel_release": "7.2.13"})()
    monkeypatch.setattr(lab_mod.image_mod, "ensure_image", lambda release: img)
    monkeypatch.setattr(qemu, "accel", lambda kernel: "tcg")
    monkeypatch.setattr(qemu, "qemu_binary", lambda: "qemu-system-x86_64")
    monkeypatch.setattr(qemu, "make_overlay", lambda base, overlay: overlays.append(overlay))
    monkeypatch.setattr(seed, "keygen", lambda *a: None)
    monkeypatch.setattr(seed, "make_seed", lambda *a: None)
    monkeypatch.setattr(seed, "host_public_key", lambda vm_dir: "ssh-ed25519 AAAA")
    crashes = {"left": 1}

    def start(cmd, vm_dir, nice=0):
        starts.append(vm_dir.name)
        crashed = crashes["left"] > 0
        crashes["left"] -= 1
        (vm_dir / "console.log").write_text("[    1.6] Oops: int3: 0000 [#1] SMP NOPTI\n" if crashed
                                            else "[    1.0] Linux version 7.2.13\n")
        return 100 + len(starts) if not crashed else 1

    def ready(self, vm, port, t0, nice, retry=True):
        if qemu.boot_crash(self.dir / vm / "console.log"):
            if retry:
                raise lab_mod.BootCrash("[    1.6] Oops: int3: 0000 [#1] SMP NOPTI")
            raise InfraError("exited during boot")

    stopped = []
    monkeypatch.setattr(qemu, "start", start)
    monkeypatch.setattr(qemu, "stop", lambda pid, name: stopped.append(pid))
    monkeypatch.setattr(Lab, "_wait_ready", ready)
    monkeypatch.setattr(Lab, "_stop_all", lambda self, state: [])
    monkeypatch.setattr(lab_mod.inventory_file, "write", lambda *a: None)
    monkeypatch.setattr(lab_mod.inventory_file, "build", lambda *a, **k: None)
    said = []
    lab.up("single", log=said.append, release="sid")
    assert starts == ["tester", "tester"] and len(overlays) == 2
    assert stopped == [1]           # the first QEMU is stopped first (a hung one still runs)
    assert "Oops: int3" in (lab.dir / "tester" / "console.crash.log").read_text()
    assert any("crashed while booting" in m and "booting it again" in m for m in said), said
    crashes["left"] = 2
    with pytest.raises(InfraError, match="exited during boot"):
        lab.up("single", log=said.append, release="sid")


def test_boot_crash_reads_the_first_oops_or_panic(tmp_path):
    log = tmp_path / "console.log"
    log.write_text("[    1.0] Linux version 7.2\r\n[    1.6] Oops: int3: 0000 [#1] SMP NOPTI\n"
                   "[    1.7] Kernel panic - not syncing: Fatal exception\n")
    assert qemu.boot_crash(log) == "[    1.6] Oops: int3: 0000 [#1] SMP NOPTI"
    log.write_text("[    1.0] Linux version 7.2\n[    2.0] rfc2544-seed: network ready\n")
    assert qemu.boot_crash(log) is None
    assert qemu.boot_crash(tmp_path / "missing.log") is None


# Kernel log lines of real lab boots (CI's sid tester under load; an idle 6.1 tester).
TSC_SKEWED = """[    0.044000] tsc: PIT calibration deviates from HPET: 304025 2596131
[    0.044000] tsc: Using PIT calibration value
[    0.044000] tsc: Detected 304.025 MHz processor
[    8.119430] clocksource: tsc: mask: 0xffffffffffffffff max_cycles: 0x461e131b1c, max_idle_ns: 440795217003 ns
"""
TSC_GOOD = """[    0.000000] tsc: Fast TSC calibration using PIT
[    0.000000] tsc: Detected 2596.137 MHz processor
[    2.438026] tsc: Refined TSC clocksource calibration: 2596.141 MHz
[    2.439044] clocksource: tsc: mask: 0xffffffffffffffff max_cycles: 0x256bfea584d, max_idle_ns: 440795253219 ns
"""


def test_tsc_calibration_reads_whether_the_hpet_confirmed_the_rate():
    assert boot_faults.tsc_calibration(TSC_GOOD) == ("good", None)
    assert boot_faults.tsc_calibration(TSC_SKEWED) == ("bad", (304025, 2596131))
    # the refinement has not run yet: wait for it
    assert boot_faults.tsc_calibration(TSC_GOOD.splitlines()[1]) == ("pending", None)
    # refined work done, no refinement accepted, no reference printed
    assert boot_faults.tsc_calibration("tsc: Detected 900.000 MHz processor\nclocksource: tsc: mask: 0xff\n") == \
        ("bad", (900000, None))
    assert boot_faults.tsc_calibration("kvm-clock: Using msrs 4b564d01\n") == ("none", None)


def test_a_clock_the_console_shows_wrong_is_booted_again_before_ssh(monkeypatch, tmp_path):
    """Simulated, on a fake clock: CI's sid tester kept a TSC of 29 MHz for
    the HPET's 2.6 GHz, its clock ran 89 times fast and stall reports kept
    it from SSH for 1800 s. The console says so as soon as the kernel gave
    up refining: a ClockFault telling the HPET's rate on the first boot, an
    InfraError on the retry, long before the wait's end. Under KVM the TSC
    lines are not read."""
    lab, lab_mod, clock, port = fake_clock_lab(monkeypatch, TSC_SKEWED.replace("304025", "29127")
                                               .replace("Detected 304.025", "Detected 29.127"))
    state = lab._state()
    lab._save({**state, "accel": "tcg"})
    monkeypatch.setattr(qemu, "cpu_seconds", lambda pid: clock[0])
    with pytest.raises(lab_mod.ClockFault) as exc:
        lab._wait_ready("tester", port, clock[0], 0)
    assert exc.value.kernel_args == ("tsc_early_khz=2596131",) and "89.1 times too fast" in exc.value.first_line
    assert clock[0] < 10
    with pytest.raises(InfraError, match="89.1 times too fast") as exc:
        lab._wait_ready("tester", port, clock[0], 0, retry=False)
    assert not isinstance(exc.value, lab_mod.BootCrash)
    lab._save({**state, "accel": "kvm"})
    monkeypatch.setattr(lab_mod, "SSH_TIMEOUT", 1.0)
    with pytest.raises(InfraError, match="not ready after") as exc:
        lab._wait_ready("tester", port, clock[0], 0, retry=False)


class _ReadyHost:
    """Simulated SSH to a ready guest whose `dmesg` has `kernel_log`."""

    def __init__(self, kernel_log):
        self.kernel_log = kernel_log

    def run(self, cmd, timeout=None, check=True):
        assert "dmesg" in cmd
        return 0, "ready\n" + self.kernel_log, ""

    def close(self):
        pass


def test_a_guest_whose_clock_runs_fast_is_booted_again_with_the_hpets_rate(monkeypatch, tmp_path):
    """Simulated (no QEMU, no SSH): the first 'boot' of the tester logs CI's
    skewed calibration (8.5x fast), the second a good one. _wait_ready reads
    the guest's kernel log once it is ready and raises ClockFault; up() boots
    the VM again with tsc_early_khz set to the HPET's figure and keeps it.
    A second bad clock fails with the kernel's lines; under KVM nothing is
    checked."""
    from rfc2544.lab import lab as lab_mod
    from rfc2544.lab import seed
    lab = Lab("unit")
    img = type("Img", (), {"rootfs": tmp_path / "rootfs.raw", "kernel": tmp_path / "vmlinuz",
                           "initrd": tmp_path / "initrd", "dir": tmp_path, "kernel_release": "7.2.13"})()
    accel = {"name": "tcg"}
    monkeypatch.setattr(lab_mod.image_mod, "ensure_image", lambda release: img)
    monkeypatch.setattr(qemu, "accel", lambda kernel: accel["name"])
    monkeypatch.setattr(qemu, "qemu_binary", lambda: "qemu-system-x86_64")
    monkeypatch.setattr(qemu, "make_overlay", lambda base, overlay: None)
    monkeypatch.setattr(seed, "keygen", lambda *a: None)
    monkeypatch.setattr(seed, "make_seed", lambda *a: None)
    monkeypatch.setattr(seed, "host_public_key", lambda vm_dir: "ssh-ed25519 AAAA")
    logs, starts = [TSC_SKEWED, TSC_GOOD], []

    def start(cmd, vm_dir, nice=0):
        starts.append(" ".join(cmd))
        (vm_dir / "console.log").write_text("[    1.0] Linux version 7.2.13\n")
        return 100 + len(starts)

    monkeypatch.setattr(qemu, "start", start)
    monkeypatch.setattr(qemu, "stop", lambda pid, name: True)
    # only the newest 'QEMU' runs (the one an earlier up() left is gone)
    monkeypatch.setattr(qemu, "is_our_qemu", lambda pid, name: pid == 100 + len(starts))
    monkeypatch.setattr(qemu, "ssh_banner", lambda port: True)
    monkeypatch.setattr(Lab, "_ssh", lambda self, vm, port, timeout=10: _ReadyHost(logs[len(starts) - 1]))
    monkeypatch.setattr(Lab, "_stop_all", lambda self, state: [])
    monkeypatch.setattr(lab_mod.inventory_file, "write", lambda *a: None)
    monkeypatch.setattr(lab_mod.inventory_file, "build", lambda *a, **k: None)
    said = []
    lab.up("single", log=said.append, release="sid")
    assert len(starts) == 2
    assert "tsc_early_khz" not in starts[0]
    assert starts[1].endswith("kfence.sample_interval=100 tsc_early_khz=2596131") or \
        " tsc_early_khz=2596131 " in starts[1], starts[1]
    assert "tsc_early_khz=2596131" in (lab.dir / "tester" / "qemu.cmdline").read_text()
    assert any("tester's clock is wrong" in m and "304.025 MHz against the HPET's 2596.131 MHz" in m
               and "8.5 times too fast" in m and "booting it again with tsc_early_khz=2596131" in m
               for m in said), said
    # skewed twice: the lab fails and shows the kernel's own lines
    logs[:], starts[:] = [TSC_SKEWED, TSC_SKEWED], []
    with pytest.raises(InfraError, match=r"(?s)tester: its kernel calibrated the TSC.*deviates from HPET"):
        lab.up("single", log=said.append, release="sid")
    # KVM guests keep kvm-clock: their TSC lines are not read
    accel["name"], logs[:], starts[:] = "kvm", [TSC_SKEWED], []
    lab.up("single", log=said.append, release="sid")
    assert len(starts) == 1


def test_a_vm_whose_qemu_exits_silently_while_booting_is_booted_again(monkeypatch, tmp_path):
    """Simulated: a 'VM' whose QEMU is gone (patched process check) and
    whose console stops without an oops (CI: a sid tester at "sched_clock:
    Marking stable"; with -no-reboot a guest reset ends QEMU). The first
    boot raises BootCrash (up() boots it again), the retry InfraError with
    the console's tail."""
    from rfc2544.lab import lab as lab_mod
    lab = Lab("unit")
    lab.dir.mkdir(parents=True)
    (lab.dir / "tester").mkdir()
    (lab.dir / "tester" / "console.log").write_text("[    9.426715] sched_clock: Marking stable\n")
    lab._save({"vms": {"tester": {"pid": 1, "ssh_port": qemu.free_port()}}})
    monkeypatch.setattr(qemu, "is_our_qemu", lambda pid, name: False)
    port = lab._state()["vms"]["tester"]["ssh_port"]
    with pytest.raises(lab_mod.BootCrash, match="QEMU exited .* without a kernel message"):
        lab._wait_ready("tester", port, time.monotonic(), 0)
    with pytest.raises(InfraError, match="(?s)exited during boot.*Marking stable") as exc:
        lab._wait_ready("tester", port, time.monotonic(), 0, retry=False)
    assert not isinstance(exc.value, lab_mod.BootCrash)
