#!/usr/bin/env python3
"""Receiver scaling: pgrx's cost per packet at each statistics level, on 1
and 2 receiving CPUs, this module against a baseline build (issue 11 item 5).

The generator injects into rx0's receive path (xmit_mode netif_receive,
unlimited, 64 B frames), so each packet runs the stack and pgrx's hook on the
generator's CPU: the injection rate is what the receive path with the
receiver sustains. One thread (rx0@0 on kpktgend_0) is one receiving CPU;
two threads (rx0@0, rx0@1) are two, both feeding ONE stream (same source
address), the case a shared per-stream lock serialises. Levels: counter,
basic, time (arrival read in the hook, the default), time+stack (`timestamp
stack`: the core's receive stamp; the baseline always used it, and the lab
keeps the kernel's stamping on, so it costs no extra clock read there), and
`off` (pgrx disabled, the path without a receiver). Under TCG the guest's
clock is an emulated HPET: a clock read in the hook costs far more than on a
host with a TSC.

Baseline: the module as of --baseline-rev (default: the commit before the
per-CPU receiver, found from git), built from `git archive`, measured in the
same run, rounds alternating. Goals: `time` within 10 % of `counter`; 2 CPUs
>= 1.7x of 1 at every level.

--levels and --threads choose the cases (default: all levels, 1 and 2
threads). Issue 33's "receiver pps unchanged" comparison is this bench with
--baseline-rev at the commit before the change.

Usage: bench/kmod_rx_scaling.py [--lab NAME] [--rounds 3] [--count 200000]
       [--baseline-rev REV] [--this-rev REV] [--levels counter,basic,time] [--threads 1,2]
"""
import io
import re
import subprocess
import tarfile
import tempfile
from pathlib import Path

from kmod_common import OURS, PG, REMOTE_KO, ROOT, lab_session, median, parser, table

LEVELS = ("off", "counter", "basic", "time", "time+stack")
BASE_KO = "/root/rfc2544_pktgen-baseline.ko"


def default_baseline():
    added = subprocess.run(["git", "log", "--format=%H", "--diff-filter=A", "--", "pktgen-kmod/seqwin.c"],
                           cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    return f"{added[-1]}~1" if added else "HEAD"


def export(rev):
    """pktgen-kmod/ at `rev` in a temporary directory."""
    tar = subprocess.run(["git", "archive", rev, "pktgen-kmod"], cwd=ROOT, capture_output=True, check=True)
    d = Path(tempfile.mkdtemp(prefix="kmod-baseline-"))
    with tarfile.open(fileobj=io.BytesIO(tar.stdout)) as t:
        t.extractall(d)
    return d / "pktgen-kmod"


def run_case(b, level, threads, count, has_timestamp_cmd):
    """Packets per second the receive path took, summed over the threads."""
    for t in range(2):
        b.pg(f"kpktgend_{t}", "rem_device_all")
    if level == "off":
        b.pg("pgrx", "rx_disable")
    else:
        stat, _, stamp = level.partition("+")
        b.pg("pgrx", f"statistics {stat}", "display script", "rx rx0")
        if has_timestamp_cmd:
            b.pg("pgrx", f"timestamp {stamp or 'hook'}")
    names = [f"rx0@{t}" for t in range(threads)]
    for t, name in enumerate(names):
        b.pg(f"kpktgend_{t}", f"add_device {name}")
        b.pg(name, f"count {count}", "pkt_size 60", "delay 0", f"dst_mac {b.rx_mac}",
             "dst 198.19.0.1", "src_min 198.18.0.1", "xmit_mode netif_receive")
    b.start()
    total = 0
    for name in names:
        packets, usec, _ = b.result(name)
        total += packets * 1e6 / usec
    if level != "off":
        counted = int(re.search(r"^total id=all packets=(\d+)", b.sh(f"cat {PG}/pgrx"), re.M).group(1))
        assert counted == count * threads, (level, threads, counted)
    return int(total)


def main():
    p = parser(__doc__)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--count", type=int, default=200000)
    p.add_argument("--baseline-rev", default=None)
    p.add_argument("--this-rev", default=None, help="build 'this' from git at REV (default: the working tree)")
    p.add_argument("--levels", default=",".join(LEVELS), help="comma-separated, of: " + " ".join(LEVELS))
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts (1, 2)")
    args = p.parse_args()
    levels = [lv for lv in args.levels.split(",") if lv]
    threads_list = [int(t) for t in args.threads.split(",") if t]
    assert set(levels) <= set(LEVELS) and set(threads_list) <= {1, 2}, (levels, threads_list)
    rev = args.baseline_rev or default_baseline()
    builds = {"this": REMOTE_KO, "baseline": BASE_KO}
    got = {}
    base_src = export(rev)
    # whether each build knows the `timestamp` command (the baseline may predate it)
    knows_ts = {"this": True, "baseline": '"timestamp"' in (base_src / "rx.c").read_text()}
    with lab_session(args.lab) as b:
        b.push_module(base_src, BASE_KO)
        if args.this_rev:
            b.push_module(export(args.this_rev), REMOTE_KO)
        for r in range(args.rounds):
            for which in (("this", "baseline") if r % 2 == 0 else ("baseline", "this")):
                b.use(OURS, builds[which])
                for level in levels:
                    for threads in threads_list:
                        got.setdefault((which, level, threads), []).append(
                            run_case(b, level, threads, args.count, knows_ts[which]))
        b.pg("pgrx", "rx_disable")
    print(f"\nreceive path with pgrx, xmit_mode netif_receive into rx0, 64 B frames, one stream, "
          f"{args.count} per thread, median of {args.rounds} rounds; baseline = {rev}, "
          f"this = {args.this_rev or 'working tree'}")
    if levels == list(LEVELS) and threads_list == [1, 2]:
        rows = []
        for which in ("this", "baseline"):
            for level in LEVELS:
                one, two = median(got[which, level, 1]), median(got[which, level, 2])
                counter1 = median(got[which, "counter", 1])
                rows.append([which, level, int(one), int(two), f"{two / one:.2f}",
                             f"{one / counter1:.2f}" if level != "off" else "-"])
        table(["module", "level", "1 CPU pps", "2 CPUs pps", "2/1", "1 CPU vs counter"], rows)
        this = {r[1]: r for r in rows if r[0] == "this"}
        print(f"\ngoal time within 10 % of counter (1 CPU): {this['time'][5]}; "
              f"goal 2 CPUs >= 1.7x of 1: " + ", ".join(f"{lv} {this[lv][4]}" for lv in LEVELS))
    # side by side: this build against the baseline, every round's figure
    rows = []
    for level in levels:
        for threads in threads_list:
            this_r, base_r = got["this", level, threads], got["baseline", level, threads]
            t, bl = median(this_r), median(base_r)
            rows.append([level, threads, int(bl), int(t), f"{(t / bl - 1) * 100:+.1f} %",
                         " ".join(str(x) for x in base_r), " ".join(str(x) for x in this_r)])
    table(["level", "CPUs", "baseline pps", "this pps", "this vs baseline",
           "baseline rounds", "this rounds"], rows)


if __name__ == "__main__":
    main()
