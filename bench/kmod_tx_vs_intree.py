#!/usr/bin/env python3
"""Generator speed: rfc2544_pktgen vs the in-tree pktgen, same VM, same port.

Both send COUNT 64 B frames (pkt_size 60 + FCS), clone_skb 0 (veth cannot
share skbs), no rate limit, from kpktgend_0 on tx0 through the DUT namespace
to rx0, receiver off. Rounds alternate the two modules; the figure is each
generator's own Result pps. Goal (issue 3): ours / in-tree >= 1.0.

Usage: bench/kmod_tx_vs_intree.py [--lab NAME] [--rounds 5] [--count 200000]
"""
import sys

from kmod_common import INTREE, OURS, lab_session, median, parser, table


def main():
    p = parser(__doc__)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--count", type=int, default=200000)
    args = p.parse_args()
    rows, ours, intree = [], [], []
    with lab_session(args.lab) as b:
        for r in range(1, args.rounds + 1):
            got = {}
            for which in (OURS, INTREE) if r % 2 else (INTREE, OURS):
                b.use(which)
                b.configure(args.count)
                b.start()
                packets, usec, pps = b.result()
                assert packets == args.count, (which, packets)
                got[which] = pps
            ours.append(got[OURS])
            intree.append(got[INTREE])
            rows.append([r, got[OURS], got[INTREE], f"{got[OURS] / got[INTREE]:.3f}"])
        rows.append(["median", int(median(ours)), int(median(intree)),
                     f"{median(ours) / median(intree):.3f}"])
    print(f"\n64 B frames, {args.count} per run, tx0 -> DUT (netns) -> rx0, TCG lab VM")
    table(["round", "ours pps", "in-tree pps", "ours/in-tree"], rows)
    ratio = median(ours) / median(intree)
    print(f"\ngoal ours/in-tree >= 1.0: {'met' if ratio >= 1.0 else 'NOT met'} ({ratio:.3f})")
    return 0 if ratio >= 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
