#!/usr/bin/env python3
"""Generator speed of this rfc2544_pktgen against a baseline revision of
it, A/B in one run: is a refactoring free? (issue 33 item 3: within 2 %).

Both builds are loaded in turn in the same lab VM. Each round runs every
case once per module, the two modules' order alternating (ABBA...), with
short trials so that a module's block lasts seconds, not minutes: on a
shared host the load drifts, and pairing a round's two blocks takes the
drift out. The table gives each module's median pps over the rounds and
the median of the per-round ratios with their spread (min..max).

Cases (64 B frames, 1 kpktgend thread, no rate limit):
  start_xmit dummy      every frame built (clone_skb 0): pg_build_skb's cost
  start_xmit clone 1000 a dummy device, one build per 1000 frames
  start_xmit burst 32   a dummy device
  start_xmit veth       tx0 -> DUT namespace -> rx0
  queue_xmit veth       tx0 -> DUT -> rx0
  netif_receive         injected into rx0's receive path, burst 1 and 32

Usage: bench/kmod_tx_ab.py --baseline-rev REV [--this-rev REV] [--lab NAME]
                           [--rounds 12] [--scale 1.0] [--cases NAME,NAME]
"""
import statistics

from kmod_common import OURS, REMOTE_KO, lab_session, median, parser, table
from kmod_rx_scaling import BASE_KO, export
from kmod_tx_matrix import DUMMY, run_case

# name, device, extra commands, frames per trial (whole bursts of 32)
CASES = [
    ("start_xmit dummy", DUMMY, (), 200_000),
    ("start_xmit clone_skb 1000", DUMMY, ("clone_skb 1000",), 2_000_000),
    ("start_xmit burst 32", DUMMY, ("burst 32",), 2_000_000),
    ("start_xmit veth", "tx0", (), 20_000),
    ("queue_xmit veth", "tx0", ("xmit_mode queue_xmit",), 20_000),
    ("netif_receive", "rx0", ("xmit_mode netif_receive",), 20_000),
    ("netif_receive burst 32", "rx0", ("xmit_mode netif_receive", "burst 32"), 400_000),
]


def main():
    p = parser(__doc__)
    p.add_argument("--baseline-rev", required=True)
    p.add_argument("--this-rev", default=None, help="default: the working tree")
    p.add_argument("--rounds", type=int, default=12)
    p.add_argument("--scale", type=float, default=1.0, help="frames per trial x this")
    p.add_argument("--cases", default=None, help="comma-separated case names (default: all)")
    args = p.parse_args()
    cases = [c for c in CASES if not args.cases or c[0] in args.cases.split(",")]
    assert cases, f"no such case: {args.cases}"
    builds = {"this": REMOTE_KO, "baseline": BASE_KO}
    got = {}        # (case, which) -> [pps per round]
    with lab_session(args.lab) as b:
        if args.this_rev:
            b.push_module(export(args.this_rev), REMOTE_KO)
        b.push_module(export(args.baseline_rev), BASE_KO)
        b.sh(f"ip link del {DUMMY} 2>/dev/null; ip link add {DUMMY} type dummy && "
             f"ip link set {DUMMY} up")
        try:
            for r in range(args.rounds):
                order = ("this", "baseline") if r % 4 in (0, 3) else ("baseline", "this")
                for which in order:
                    b.use(OURS, builds[which])
                    b.which = which
                    for name, dev, extra, count in cases:
                        count = max(32, int(count * args.scale) // 32 * 32)
                        got.setdefault((name, which), []).append(run_case(b, dev, extra, 1, count))
        finally:
            b.sh(f"ip link del {DUMMY} 2>/dev/null; true")
    rows, missed = [], 0
    for name, *_ in cases:
        this, base = got[name, "this"], got[name, "baseline"]
        ratios = [t / s for t, s in zip(this, base)]
        ratio = statistics.median(ratios)
        missed += ratio < 0.98
        rows.append([name, int(median(this)), int(median(base)), f"{median(this) / median(base):.3f}",
                     f"{ratio:.3f}", f"{min(ratios):.2f}..{max(ratios):.2f}"])
    print(f"\n64 B frames, 1 thread, {args.rounds} rounds (module order ABBA), TCG lab VM; "
          f"this = {args.this_rev or 'working tree'}, baseline = {args.baseline_rev}")
    table(["case", "this pps", "baseline pps", "ratio of medians", "median ratio", "ratio min..max"],
          rows)
    print(f"\ngoal this/baseline >= 0.98 (median of per-round ratios): met in "
          f"{len(rows) - missed} of {len(rows)} cases")


if __name__ == "__main__":
    main()
