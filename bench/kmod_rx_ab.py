#!/usr/bin/env python3
"""A/B of pgrx's receive path: two builds of the module (git revisions),
swapped before EVERY run, for a before/after comparison that a loaded host
cannot skew (issue 33 item 3: "receiver pps unchanged, within 2 %").

Each run is kmod_rx_scaling's case: frames injected into rx0 by
netif_receive (unlimited, 64 B, one stream, --count frames per thread),
pgrx counting at the given level; pps = frames / the generator's time.
Runs go A B B A A B ... (each pair's order alternates), so drift in the
host's load hits both alike, and each adjacent A/B pair gives one ratio.
Reported per case: median and max pps of each build, and the median of the
pair ratios B/A with its interquartile range. Under heavy host load single
runs vary by 2x and more; the paired median and the max (the least
disturbed run) are the figures to compare.

Usage: bench/kmod_rx_ab.py --lab NAME --a REV --b REV [--pairs 12]
       [--count 200000] [--levels counter,time] [--threads 1]
"""
import statistics

from kmod_common import OURS, lab_session, parser, table
from kmod_rx_scaling import export, run_case

KO = {"A": "/root/rfc2544_pktgen-a.ko", "B": "/root/rfc2544_pktgen-b.ko"}


def quartiles(xs):
    q = statistics.quantiles(xs, n=4) if len(xs) >= 2 else [xs[0]] * 3
    return q[0], q[2]


def main():
    p = parser(__doc__)
    p.add_argument("--a", required=True, help="git revision of build A (before)")
    p.add_argument("--b", required=True, help="git revision of build B (after)")
    p.add_argument("--pairs", type=int, default=12)
    p.add_argument("--count", type=int, default=200000)
    p.add_argument("--levels", default="counter,time")
    p.add_argument("--threads", default="1")
    args = p.parse_args()
    levels = [lv for lv in args.levels.split(",") if lv]
    threads_list = [int(t) for t in args.threads.split(",") if t]
    srcs = {"A": export(args.a), "B": export(args.b)}
    knows_ts = {k: '"timestamp"' in (d / "rx.c").read_text() for k, d in srcs.items()}
    got = {}
    with lab_session(args.lab) as b:
        for k in ("A", "B"):
            b.push_module(srcs[k], KO[k])
        for i in range(args.pairs):
            for which in (("A", "B") if i % 2 == 0 else ("B", "A")):
                b.use(OURS, KO[which])
                for level in levels:
                    for threads in threads_list:
                        got.setdefault((level, threads, which), []).append(
                            run_case(b, level, threads, args.count, knows_ts[which]))
        b.pg("pgrx", "rx_disable")
    print(f"\npgrx receive path, netif_receive into rx0, 64 B, one stream, {args.count} frames per thread; "
          f"A = {args.a}, B = {args.b}; {args.pairs} pairs, builds swapped before every run")
    rows = []
    for level in levels:
        for threads in threads_list:
            a, bb = got[level, threads, "A"], got[level, threads, "B"]
            ratios = [y / x for x, y in zip(a, bb)]
            lo, hi = quartiles(ratios)
            rows.append([level, threads, int(statistics.median(a)), int(statistics.median(bb)),
                         max(a), max(bb), f"{(max(bb) / max(a) - 1) * 100:+.1f} %",
                         f"{(statistics.median(ratios) - 1) * 100:+.1f} %",
                         f"{(lo - 1) * 100:+.1f} .. {(hi - 1) * 100:+.1f} %"])
    table(["level", "CPUs", "A median", "B median", "A max", "B max", "B/A max",
           "B/A paired median", "B/A paired IQR"], rows)
    print("\nevery run (pps):")
    for (level, threads, which), xs in sorted(got.items()):
        print(f"  {level:8} {threads} {which}: " + " ".join(map(str, xs)))


if __name__ == "__main__":
    main()
