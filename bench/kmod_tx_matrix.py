#!/usr/bin/env python3
"""Generator speed in every transmit mode: rfc2544_pktgen vs the in-tree
pktgen, same VM, with 1 and 2 kpktgend threads (issue 11, item 5).

Cases (64 B frames, no rate limit, receiver off; pps = frames handed to the
driver or stack per second, whether it then dropped them or not):
  start_xmit            tx0 (veth) -> DUT namespace -> rx0, clone_skb 0
  start_xmit clone 1000 a dummy device (veth cannot share skbs)
  start_xmit burst 32   a dummy device
  queue_xmit            tx0 -> DUT -> rx0
  netif_receive         injected into rx0's receive path, burst 1 and 32
With 2 threads each of kpktgend_0 and kpktgend_1 runs its own generator on
the same device (DEV@0, DEV@1), COUNT frames each; the figure is the sum of
the two Result pps. Rounds alternate which module goes first; the table has
each case's median over the rounds. Goal: ours / in-tree >= 1.0 everywhere.

With --baseline-rev REV the other module is not the in-tree pktgen but
rfc2544_pktgen as of REV (built from `git archive`, loaded in turn in the
same VM): a refactoring's cost, goal within 2 %. --this-rev REV builds
"ours" from REV too (default: the working tree).

Usage: bench/kmod_tx_matrix.py [--lab NAME] [--rounds 3] [--count 100000]
                               [--baseline-rev REV] [--this-rev REV]
"""
import re

from kmod_common import INTREE, OURS, PG, REMOTE_KO, lab_session, median, parser, table
from kmod_rx_scaling import BASE_KO, export

DUMMY = "kmbench0"
# name, device, extra commands, frames per generator in units of --count
# (a dummy device takes millions per second: 20x keeps its runs ~0.2 s long)
CASES = [
    ("start_xmit", "tx0", (), 1),
    ("start_xmit clone_skb 1000", DUMMY, ("clone_skb 1000",), 20),
    ("start_xmit burst 32", DUMMY, ("burst 32",), 20),
    ("queue_xmit", "tx0", ("xmit_mode queue_xmit",), 1),
    ("netif_receive", "rx0", ("xmit_mode netif_receive",), 1),
    ("netif_receive burst 32", "rx0", ("xmit_mode netif_receive", "burst 32"), 1),
]


def run_case(b, dev, extra, threads, count):
    """Sum of the generators' Result pps for one case on `threads` threads."""
    for t in range(2):
        b.pg(f"kpktgend_{t}", "rem_device_all")
    names = [f"{dev}@{t}" for t in range(threads)]
    dmac = b.rx_mac if dev == "rx0" else b.dut_mac
    for t, name in enumerate(names):
        b.pg(f"kpktgend_{t}", f"add_device {name}")
        b.pg(name, f"count {count}", "pkt_size 60", "delay 0", f"dst_mac {dmac}",
             "dst 198.19.0.1", "src_min 198.18.0.1", *extra)
    b.start()
    total = 0
    for name in names:
        packets, usec, _ = b.result(name)
        # frames handed to the driver: ours counts the ones veth dropped
        # (its peer's backlog full) in tx_dropped, the in-tree one as sent
        m = re.search(r"tx_dropped: (\d+)", b.sh(f"cat {PG}/{name}"))
        handed = packets + (int(m.group(1)) if m else 0)
        assert count <= handed < count + 32, (b.which, name, handed)  # upstream ends a burst
        total += handed * 1e6 / usec
    return int(total)


def main():
    p = parser(__doc__)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--count", type=int, default=100000)
    p.add_argument("--baseline-rev", default=None,
                   help="compare with rfc2544_pktgen as of this git revision, not the in-tree pktgen")
    p.add_argument("--this-rev", default=None,
                   help="build 'ours' from this git revision, not the working tree")
    args = p.parse_args()
    args.count = -(-args.count // 32) * 32      # whole bursts: both modules send the same
    got = {}        # (case, threads, module) -> [pps per round]
    other = "baseline" if args.baseline_rev else INTREE
    with lab_session(args.lab) as b:
        if args.this_rev:
            b.push_module(export(args.this_rev), REMOTE_KO)
        if args.baseline_rev:
            b.push_module(export(args.baseline_rev), BASE_KO)
        b.sh(f"ip link del {DUMMY} 2>/dev/null; ip link add {DUMMY} type dummy && "
             f"ip link set {DUMMY} up")
        try:
            for r in range(args.rounds):
                for which in (OURS, other) if r % 2 == 0 else (other, OURS):
                    if which == "baseline":
                        b.use(OURS, BASE_KO)
                    else:
                        b.use(which, REMOTE_KO)
                    b.which = which
                    for name, dev, extra, scale in CASES:
                        for threads in (1, 2):
                            pps = run_case(b, dev, extra, threads, args.count * scale)
                            got.setdefault((name, threads, which), []).append(pps)
        finally:
            b.sh(f"ip link del {DUMMY} 2>/dev/null; true")
    rows, missed = [], 0
    goal = 0.98 if args.baseline_rev else 1.0
    for name, *_ in CASES:
        for threads in (1, 2):
            ours, base = median(got[name, threads, OURS]), median(got[name, threads, other])
            ratio = ours / base
            missed += ratio < goal
            rows.append([name, threads, int(ours), int(base), f"{ratio:.3f}" if args.baseline_rev
                         else f"{ratio:.2f}"])
    print(f"\n64 B frames, {args.count} per generator ({20 * args.count} on the dummy device), "
          f"median of {args.rounds} rounds, TCG lab VM"
          + (f"; ours = {args.this_rev or 'working tree'}, baseline = rfc2544_pktgen at "
             f"{args.baseline_rev}" if args.baseline_rev else ""))
    label = "baseline" if args.baseline_rev else "in-tree"
    table(["case", "threads", "ours pps", f"{label} pps", f"ours/{label}"], rows)
    print(f"\ngoal ours/{label} >= {goal}: met in {len(rows) - missed} of {len(rows)} cases")


if __name__ == "__main__":
    main()
