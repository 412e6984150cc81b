#!/usr/bin/env python3
"""Rate accuracy: asked (ratep) vs achieved, 1 % to 95 % of the maximum,
rfc2544_pktgen side by side with the in-tree pktgen asked the same rates.

The maximum is our generator's unlimited rate on this path (tx0 -> DUT ->
rx0, 64 B). Each point sends SECONDS worth of packets; achieved = (packets -
1) / the Result's start-to-stop time. Under TCG the VM's vCPUs stall at
times; both generators see the same environment.

Usage: bench/kmod_rate_accuracy.py [--lab NAME] [--seconds 2]
"""
import sys

from kmod_common import INTREE, OURS, lab_session, parser, table

PERCENTS = [1, 5, 10, 25, 50, 75, 90, 95]


def achieved(b, rate, seconds):
    count = max(100, int(rate * seconds))
    b.configure(count, ratep=rate)
    b.start()
    packets, usec, _ = b.result()
    return (packets - 1) / (usec / 1e6)


def main():
    p = parser(__doc__)
    p.add_argument("--seconds", type=float, default=2.0)
    args = p.parse_args()
    rows, worst = [], {OURS: 0.0, INTREE: 0.0}
    with lab_session(args.lab) as b:
        b.use(OURS)
        b.configure(100000)
        b.start()
        _, _, top = b.result()
        for pct in PERCENTS:
            rate = max(1, int(top * pct / 100))
            row = [f"{pct}%", rate]
            for which in (OURS, INTREE):
                b.use(which)
                got = achieved(b, rate, args.seconds)
                err = (got - rate) / rate * 100
                worst[which] = max(worst[which], abs(err))
                row += [f"{got:.0f}", f"{err:+.2f}%"]
            rows.append(row)
    print(f"\nmaximum (ours, unlimited): {top} pps; {args.seconds:g} s per point, 64 B")
    table(["of max", "asked pps", "ours", "ours err", "in-tree", "in-tree err"], rows)
    print(f"\nworst |error|: ours {worst[OURS]:.2f} %, in-tree {worst[INTREE]:.2f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
