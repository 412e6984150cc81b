"""Starting and stopping QEMU VMs, and the KVM-or-TCG probe."""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from rfc2544.errors import BadInput, InfraError
from rfc2544.lab import niceness, paths

QEMU = "qemu-system-x86_64"
MEMORY_MB = 1024
CPUS = 2
KVM_PROBE_TIMEOUT = 20.0
# tsc=reliable: the guest's clocksource watchdog compares the TSC with the
# HPET over intervals a busy host stretches, and marked the TSC unstable in
# every VM of a CI run (five of five): which clock a lab's timestamps come
# from then depended on the host's load. (Not for speed: in one TCG VM the
# in-tree pktgen sent 56-62 kpps on the TSC, 60-81 kpps on the HPET.) QEMU's
# TSC is one monotonic clock for every vCPU.
# kfence.sample_interval=100: where the kernel has KFENCE (Debian's 6.12 and
# later; not 6.1), one slab allocation every 100 ms is guarded, so the lab
# tests catch an out-of-bounds access or use-after-free by the module in its
# kernel log; the hostile-frame corpus raises it to every 5 ms while it runs
# (test_kmod_rx_adversarial). Not 5 at boot: each sample wakes the guest, and
# an idle sid VM then cost 10.7 % of a host core under TCG against 0.8 % with
# KFENCE off (60 s each, side by side), so CI's three idle sid VMs spent
# ~600 core-seconds on it. A kernel without KFENCE ignores the word.
APPEND = ("root=/dev/vda rw console=ttyS0,115200 net.ifnames=0 biosdevname=0 "
          "fsck.mode=skip mitigations=off panic=10 tsc=reliable kfence.sample_interval=100")
# NIC models for the two-host topology's test links (`lab up --nic`):
# name -> (QEMU -device, the guest's driver, link speed ethtool reports in
# Mb/s or None). The management NIC is always virtio.
NICS = {
    "virtio": ("virtio-net-pci", "virtio_net", None),
    "e1000e": ("e1000e", "e1000e", 1000),
}
DEFAULT_NIC = "virtio"


def nic_model(name) -> str:
    """QEMU device for the test-link NIC `name` (BadInput if unknown)."""
    if name not in NICS:
        raise BadInput(f"unknown lab NIC '{name}' (known: {', '.join(NICS)})")
    return NICS[name][0]


def qemu_binary() -> str:
    path = shutil.which(QEMU)
    if path is None:
        raise InfraError(f"{QEMU} not found on PATH: install qemu-system-x86 (`make deps`)")
    return path


def free_port(kind=socket.SOCK_STREAM) -> int:
    """A currently free 127.0.0.1 port (TCP or UDP)."""
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _qemu_version(binary):
    try:
        return subprocess.run([binary, "--version"], capture_output=True, text=True,
                              timeout=10).stdout.splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return "unknown"


def accel(kernel: Path) -> str:
    """'kvm' if a probe boot of the lab kernel under KVM prints its banner,
    else 'tcg'. The verdict is cached per (qemu, kernel, host kernel)."""
    if os.environ.get("RFC2544_ACCEL") in ("kvm", "tcg"):
        return os.environ["RFC2544_ACCEL"]
    binary = qemu_binary()
    key = f"{_qemu_version(binary)}|{kernel.stat().st_size}:{kernel.name}|{os.uname().release}"
    cache = paths.cache_root() / "kvm-probe.json"
    try:
        cached = json.loads(cache.read_text())
        if cached.get("key") == key:
            return cached["accel"]
    except (OSError, ValueError):
        pass
    verdict = "kvm" if _probe_kvm(binary, kernel) else "tcg"
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps({"key": key, "accel": verdict, "when": time.time()}) + "\n")
    return verdict


def _probe_kvm(binary, kernel: Path) -> bool:
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return False
    log = paths.cache_root() / "kvm-probe.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    if log.exists():
        log.unlink()
    # No root fs: the kernel prints its banner, then panics; -no-reboot ends QEMU.
    cmd = [binary, "-nodefaults", "-no-user-config", "-display", "none", "-accel", "kvm",
           "-cpu", "host", "-m", "256", "-kernel", str(kernel), "-no-reboot",
           "-append", "console=ttyS0 panic=-1", "-serial", f"file:{log}"]
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except OSError:
        return False
    deadline = time.monotonic() + KVM_PROBE_TIMEOUT
    ok = False
    try:
        while time.monotonic() < deadline:
            if log.exists() and b"Linux version" in log.read_bytes():
                ok = True
                break
            if proc.poll() is not None:
                break
            time.sleep(0.2)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    return ok


def command(*, name, vm_dir: Path, kernel, initrd, accel_name, ssh_port, mgmt_mac,
            links=(), cpus=CPUS, memory_mb=MEMORY_MB, kernel_args=(), nic=DEFAULT_NIC):
    """qemu-system-x86_64 argv for one lab VM. `links`: (mac, local_udp, remote_udp),
    each a NIC of model `nic` (NICS). `kernel_args`: words appended to the
    kernel command line (e.g. slub_debug=FZP)."""
    device = nic_model(nic)
    cmd = [
        # debug-threads: vCPU threads named "CPU N/TCG" (top -H, benchmarks' per-vCPU CPU time)
        qemu_binary(), "-name", f"{name},debug-threads=on", "-nodefaults", "-no-user-config", "-display", "none",
        "-daemonize", "-no-reboot", "-pidfile", str(vm_dir / "qemu.pid"),
        "-serial", f"file:{vm_dir / 'console.log'}",
        "-accel", "kvm" if accel_name == "kvm" else "tcg,thread=multi",
        "-cpu", "host" if accel_name == "kvm" else "max",
        "-smp", str(cpus), "-m", str(memory_mb),
        "-kernel", str(kernel), "-initrd", str(initrd), "-append", " ".join((APPEND, *kernel_args)),
        # explicit devices in this order: root is vda, seed vdb (if=virtio
        # drives would be created after -device ones and come second)
        "-drive", f"file={vm_dir / 'overlay.qcow2'},if=none,id=root,format=qcow2,cache=unsafe",
        "-device", "virtio-blk-pci,drive=root",
        "-drive", f"file={vm_dir / 'seed.img'},if=none,id=seed,format=raw,readonly=on",
        "-device", "virtio-blk-pci,drive=seed,serial=rfc2544seed",
        "-device", "virtio-rng-pci",
        # restrict=on: the guest reaches nothing outside; hostfwd still lets us in
        "-netdev", f"user,id=mgmt,net=10.0.2.0/24,restrict=on,hostfwd=tcp:127.0.0.1:{ssh_port}-:22",
        "-device", f"virtio-net-pci,netdev=mgmt,mac={mgmt_mac}",
    ]
    for i, (mac, local, remote) in enumerate(links):
        cmd += ["-netdev", f"socket,id=link{i},udp=127.0.0.1:{remote},localaddr=127.0.0.1:{local}",
                "-device", f"{device},netdev=link{i},mac={mac}"]
    return cmd


def make_overlay(base: Path, overlay: Path):
    if overlay.exists():
        overlay.unlink()
    r = subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", "-F", "raw", "-b", str(base),
                        str(overlay)], capture_output=True, text=True)
    if r.returncode != 0:
        raise InfraError(f"lab: qemu-img create failed: {r.stderr.strip()}")


def start(cmd, vm_dir: Path, nice=0) -> int:
    """Start a daemonized QEMU (at niceness `nice`); returns its pid."""
    log = vm_dir / "qemu.log"
    with open(log, "w") as out:
        # nice(1) execs QEMU, so the pid file and argv stay QEMU's
        r = subprocess.run((["nice", "-n", str(nice)] if nice else []) + list(cmd), stdout=out,
                           stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        msg = log.read_text().strip().splitlines()
        raise InfraError(f"lab: QEMU failed to start: {msg[-1] if msg else 'exit %d' % r.returncode}")
    pid = int((vm_dir / "qemu.pid").read_text().strip())
    if nice:
        # -daemonize put QEMU in a session of its own: nice(1) alone ranks it
        # only there (niceness.py)
        niceness.set_session_nice(pid, nice)
    return pid


def cpu_seconds(pid: int):
    """CPU time (user + system, all threads) process `pid` has run, or None."""
    try:
        stat = Path(f"/proc/{int(pid)}/stat").read_text()
    except (OSError, TypeError, ValueError):
        return None
    # fields after the command (which may hold spaces): state is field 3, utime 14, stime 15
    fields = stat.rsplit(")", 1)[-1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def is_our_qemu(pid: int, name: str) -> bool:
    """True if `pid` is a running QEMU started with `-name name[,option...]`."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    if not argv or b"qemu-system" not in os.path.basename(argv[0]):
        return False
    prefix = name.encode() + b","
    return any(a == name.encode() or a.startswith(prefix) for a in argv)


def stop(pid: int, name: str, timeout=10.0) -> bool:
    """Stop our QEMU `pid` (verified by its command line). True if it was running."""
    if not is_our_qemu(pid, name):
        return False
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not is_our_qemu(pid, name):
            return True
        time.sleep(0.1)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    while is_our_qemu(pid, name):
        time.sleep(0.1)
    return True


def boot_crash(path: Path):
    """The first line of a kernel oops or panic in the console log, or None."""
    try:
        text = path.read_bytes().decode(errors="replace")
    except OSError:
        return None
    for line in text.replace("\r", "").splitlines():
        if re.search(r"\] (Oops: |Kernel panic - not syncing|BUG: |general protection fault)", line):
            return line.strip()
    return None


def ssh_banner(port, timeout=3.0):
    """True once something on the port speaks SSH (QEMU's hostfwd accepts
    connections before the guest's sshd listens)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.settimeout(timeout)
            return s.recv(4).startswith(b"SSH-")
    except OSError:
        return False


# The kernel's watchdog reports: a CPU stuck (soft or hard lockup), an RCU
# grace period that did not end, a task blocked. Their stack traces fill a
# console's tail, so the headline is read apart.
STALL_REPORT = re.compile(r"\] .*(soft lockup - CPU|hard LOCKUP|rcu: INFO: .*detected stall"
                          r"|rcu_\w+ (?:self-)?detected stall|INFO: task .* blocked for more than)")


def console_stalls(path: Path) -> list:
    """The headline of each watchdog report in the console log, in order."""
    try:
        text = path.read_bytes().decode(errors="replace")
    except OSError:
        return []
    return [line.strip() for line in text.replace("\r", "").splitlines() if STALL_REPORT.search(line)]


def console_tail(path: Path, lines=15) -> str:
    try:
        text = path.read_bytes().decode(errors="replace")
    except OSError:
        return "(no console log)"
    tail = [l.rstrip() for l in text.replace("\r", "").splitlines() if l.strip()][-lines:]
    return "\n".join(tail) or "(console log empty)"
