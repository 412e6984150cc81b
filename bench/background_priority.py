#!/usr/bin/env python3
"""What "niced" background work leaves a foreground process, per way of niceing.

The session's lab runs timing tests (recovery time, NDR) while background
labs boot and test beside it, started niced. A daemonized QEMU is in a
session of its own (setsid), and with CONFIG_SCHED_AUTOGROUP a session is a
scheduling group weighted by its own nice value (rfc2544.lab.niceness).

Foreground: one process that spins for --seconds, reading the clock; a gap
between two reads over 1 ms is time it was not running. Background: --hogs
CPU-bound processes (the background VMs), started one of these ways:
  none               no background (the floor)
  nice(1), setsid    `nice -n N` in sessions of their own: how the lab
                     started background QEMUs before (qemu -daemonize)
  + session nice     the same, and each session's autogroup niced to N
                     (rfc2544.lab.niceness.set_session_nice): how it does now
  nice(1), our session  `nice -n N` in the foreground's session (reference:
                     what nice(1) alone was meant to do)
The ways alternate, --rounds times, in one run. Columns: the foreground's
share of one CPU, its longest gap, and its total time off-CPU, each the
median over the rounds.

Usage: bench/background_priority.py [--hogs 4] [--nice 10] [--seconds 5] [--rounds 3]
"""
import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "suite"))
from rfc2544.lab import niceness  # noqa: E402

HOG = [sys.executable, "-c", "while True: pass"]


def start_hogs(way, n, nice):
    if way == "none":
        return []
    own_session = way != "nice(1), our session"
    hogs = [subprocess.Popen(["nice", "-n", str(nice), *HOG], start_new_session=own_session) for _ in range(n)]
    if way == "+ session nice":
        for h in hogs:
            if not niceness.set_session_nice(h.pid, nice):
                sys.exit("bench: cannot set the autogroup's nice (no autogroups in this kernel?)")
    return hogs


def foreground(seconds):
    """(CPU share, longest gap s, total gap s) of a spinning loop."""
    clock = time.perf_counter_ns
    cpu0, t0 = time.process_time(), clock()
    end = t0 + int(seconds * 1e9)
    last, longest, total = t0, 0, 0
    while True:
        now = clock()
        gap = now - last
        if gap > 1_000_000:
            total += gap
            longest = max(longest, gap)
        last = now
        if now >= end:
            break
    wall = (last - t0) / 1e9
    return (time.process_time() - cpu0) / wall, longest / 1e9, total / 1e9


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hogs", type=int, default=4)
    ap.add_argument("--nice", type=int, default=10)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    if niceness.session_nice(os.getpid()) is None:
        sys.exit("bench: this kernel has no autogroups (/proc/self/autogroup): every way is nice(1)'s")
    ways = ["none", "nice(1), setsid", "+ session nice", "nice(1), our session"]
    got = {w: [] for w in ways}
    for r in range(a.rounds):
        for way in ways:
            hogs = start_hogs(way, a.hogs, a.nice)
            try:
                time.sleep(0.2)
                got[way].append(foreground(a.seconds))
            finally:
                for h in hogs:
                    h.kill()
                    h.wait()
            print(f"round {r + 1}/{a.rounds}: {way} done", file=sys.stderr, flush=True)
    print(f"\n{a.hogs} background hogs at nice {a.nice}, {os.cpu_count()} CPUs, "
          f"{a.seconds:g} s per round, median of {a.rounds} rounds\n")
    print(f"{'background':<22} {'fg CPU share':>12} {'longest gap ms':>15} {'off-CPU s':>10}")
    for way in ways:
        share, longest, total = (statistics.median(x[i] for x in got[way]) for i in range(3))
        print(f"{way:<22} {share:>12.2f} {longest * 1e3:>15.1f} {total:>10.2f}")


if __name__ == "__main__":
    main()
