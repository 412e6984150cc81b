#!/usr/bin/env python3
"""What a niced lab VM takes from the CPU it shares: nice(1) alone, and
nice(1) with its autogroup niced too (rfc2544.lab.qemu.nice_autogroup).

A daemonized QEMU is a session leader, and with the kernel's autogroups
every session is a scheduling group of its own. Stand-ins, both pinned to
CPU 0 for SECONDS each round, side by side in one run:

  foreground  a busy loop at nice 0 in this session (a test's own lab VM)
  niced       a busy loop started as `nice -n 19 setsid ...` (a background
              lab VM: nice 19, a session of its own)

Rows: the niced loop's share of CPU 0 with its autogroup left at nice 0,
then with nice_autogroup(pid, 19). Needs autogroups
(/proc/sys/kernel/sched_autogroup_enabled = 1) and taskset.
"""
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "suite"))
from rfc2544.lab.qemu import nice_autogroup  # noqa: E402

SECONDS = 5.0
LOOP = ["sh", "-c", "while :; do :; done"]


def cpu_ticks(pid):
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])       # utime + stime


def shares(fg, bg):
    a0, b0 = cpu_ticks(fg.pid), cpu_ticks(bg.pid)
    time.sleep(SECONDS)
    a, b = cpu_ticks(fg.pid) - a0, cpu_ticks(bg.pid) - b0
    return a / (a + b), b / (a + b)


def main():
    if Path("/proc/sys/kernel/sched_autogroup_enabled").read_text().strip() != "1":
        sys.exit("autogroups are off on this kernel: nice(1) alone ranks the VMs")
    fg = subprocess.Popen(["taskset", "-c", "0", *LOOP])
    bg = subprocess.Popen(["taskset", "-c", "0", "nice", "-n", "19", "setsid", *LOOP])
    try:
        time.sleep(0.3)
        print(f"{'niced loop autogroup':<34} {'foreground':>11} {'niced':>7}")
        before = Path(f"/proc/{bg.pid}/autogroup").read_text().strip()
        f, b = shares(fg, bg)
        print(f"{before:<34} {f:>10.1%} {b:>7.1%}")
        if not nice_autogroup(bg.pid, 19):
            sys.exit("could not set the autogroup's nice")
        after = Path(f"/proc/{bg.pid}/autogroup").read_text().strip()
        f, b = shares(fg, bg)
        print(f"{after:<34} {f:>10.1%} {b:>7.1%}")
    finally:
        for p in (fg, bg):
            p.kill()
            p.wait()
    print(f"(this session: {Path(f'/proc/{os.getpid()}/autogroup').read_text().strip()}; {SECONDS:g} s per row)")


if __name__ == "__main__":
    main()
