"""Shared plumbing for the bench/kmod_*.py benchmarks of rfc2544_pktgen.

Brings up (or reuses, --lab NAME) a single-topology lab, builds the module on
the host against the lab kernel's headers, copies it to the tester VM and
switches between our module and the in-tree pktgen. Commands go through one
SSH connection; outputs are read until EOF.
"""
import argparse
import contextlib
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from rfc2544.lab import Lab, kernel_pktgen
from rfc2544.drivers.ssh import put_file, quote

ROOT = Path(__file__).resolve().parents[1]
KMOD = ROOT / "pktgen-kmod"
PG = "/proc/net/pktgen"
OURS, INTREE = "rfc2544_pktgen", "pktgen"
REMOTE_KO = "/root/rfc2544_pktgen.ko"
DUT = "ip netns exec dut "


def parser(doc):
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lab", help="use this running lab (default: bring up 'bench-kmod' and stop it after)")
    return p


@contextlib.contextmanager
def lab_session(name):
    """Yields a Bench on a lab; a lab brought up here is stopped afterwards."""
    lab = Lab(name or "bench-kmod")
    started = False
    if not name:
        if lab.is_up():
            lab.down(log=lambda m: None)
        lab.up("single", log=lambda m: print(m, file=sys.stderr, flush=True))
        started = True
    bench = Bench(lab)
    try:
        yield bench
    finally:
        with contextlib.suppress(Exception):
            bench.sh(f"echo stop > {PG}/pgctrl 2>/dev/null; rmmod {OURS} 2>/dev/null; "
                     f"rmmod {INTREE} 2>/dev/null; true")
        bench.host.close()
        if started:
            lab.down(log=lambda m: None)


class Bench:
    def __init__(self, lab):
        self.lab = lab
        self.host = lab.connect("tester")
        self._push_module()
        self.dut_mac = self.sh(DUT + "cat /sys/class/net/dut0/address").strip()
        self.rx_mac = self.sh("cat /sys/class/net/rx0/address").strip()

    def run(self, cmd, timeout=600, check=True):
        status, out, err = self.host.run(cmd, timeout=timeout, check=False)
        if check and status:
            raise RuntimeError(f"'{cmd[:200]}' exited {status}: {err[-500:]}")
        return status, out

    def sh(self, cmd, timeout=600):
        return self.run(cmd, timeout)[1]

    def _push_module(self):
        self.push_module(KMOD, REMOTE_KO)

    def push_module(self, src, remote):
        """Build the module sources in `src` for the lab kernel, copy to `remote`."""
        work = Path(tempfile.mkdtemp(prefix="bench-kmod-"))
        for p in Path(src).rglob("*"):
            rel = p.relative_to(src)
            # what a build reads: sources, Kbuild, Makefile, the configure step and its probes
            if p.is_file() and rel.parts[0] != "tools" and p.name != "probes.h" and (
                    p.suffix in (".c", ".h") or p.name in ("Kbuild", "Makefile", "configure")) \
                    and not p.name.endswith(".mod.c"):
                (work / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(p, work / rel)
        res = subprocess.run(["make", f"KDIR={self.lab.kdir}"], cwd=work,
                             capture_output=True, text=True)
        if res.returncode:
            raise RuntimeError("module build failed:\n" + res.stdout[-2000:] + res.stderr[-2000:])
        put_file(self.host, work / f"{OURS}.ko", remote)
        shutil.rmtree(work, ignore_errors=True)

    def use(self, which, ko=REMOTE_KO):
        """Load our module (the build at `ko`) or the in-tree pktgen,
        unloading whatever else is loaded."""
        if which == OURS:
            self.sh(f"rmmod {INTREE} 2>/dev/null; "
                    f"[ \"$(cat /tmp/bench-loaded 2>/dev/null)\" = {quote(ko)} ] && lsmod | grep -q '^{OURS} ' "
                    f"|| {{ rmmod {OURS} 2>/dev/null; insmod {quote(ko)} && echo {quote(ko)} > /tmp/bench-loaded; }}")
        else:
            self.sh(f"rmmod {OURS} 2>/dev/null; rm -f /tmp/bench-loaded; modprobe {INTREE}")
        self.which = which

    def pg(self, name, *cmds):
        path = f"{PG}/{name}"
        script = "\n".join(f"echo {quote(c)} > {quote(path)} || {{ echo {quote(c)} refused; "
                           f"tail -n 2 {quote(path)}; exit 1; }}" for c in cmds)
        self.sh(script)

    def configure(self, count, ratep=None, size=60, dev="tx0", extra=()):
        """One generator on kpktgend_0: dev -> DUT -> rx0, 64 B frames by default."""
        self.pg("kpktgend_0", "rem_device_all", f"add_device {dev}")
        cmds = [f"count {count}", f"pkt_size {size}", "clone_skb 0", "delay 0",
                f"dst_mac {self.dut_mac}", "dst 198.19.0.1", "src_min 198.18.0.1", *extra]
        if ratep:
            cmds.append(f"ratep {ratep}")
        self.pg(dev, *cmds)

    def start(self):
        self.sh(f"echo start > {PG}/pgctrl")

    def result(self, dev="tx0", wait_s=120):
        """(packets, usec, pps) from the device's Result line, once the run
        has one (kernel_pktgen.wait_for_result: the in-tree `start` can
        return early)."""
        import re
        pattern = r"Result: OK: (\d+)\(c\d+\+d\d+\) usec, (\d+) \(\d+byte,\d+frags\)\s+(\d+)pps"
        text = self.sh(f"{kernel_pktgen.wait_for_result(f'{PG}/{dev}', wait_s)}; cat {PG}/{dev}")
        m = re.search(pattern, text)
        if not m:
            raise RuntimeError(f"no Result in {dev}: {text[-300:]}")
        return int(m.group(2)), int(m.group(1)), int(m.group(3))

    def counter(self, dev, name, netns=False):
        return int(self.sh((DUT if netns else "") + f"cat /sys/class/net/{dev}/statistics/{name}"))


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def table(headers, rows):
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) for i, h in enumerate(headers)]
    line = "  ".join(str(h).rjust(w) for h, w in zip(headers, widths))
    print(line)
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print("  ".join(str(c).rjust(w) for c, w in zip(r, widths)))
