#!/usr/bin/env python3
"""Cost of rfc2544_pktgen's netdev notifier for devices no generator uses.

Every namespace user's veth churn sends NETDEV_UNREGISTER (and friends) to
our notifier under RTNL. It must stay cheap for a device no generator holds
(issue 11 item 2). In the lab VM, one `ip -batch` process creates and
deletes ROUNDS x PAIRS veth pairs in the tester's namespace, timed in the
guest, with

  none:  the module not loaded (the baseline),
  idle:  the module loaded, no generator,
  busy:  the module loaded and a generator sending on tx0 (another device,
         count 0, --ratep pps) from kpktgend_0,

in alternating order per round. Figure: pairs created+deleted per second
(median of rounds) and the ratio none/mode (time cost; goal <= 1.1).

Usage: bench/kmod_notifier_churn.py [--lab NAME] [--rounds 5] [--pairs 200]
       [--ratep 10000] [--src DIR (module sources, default pktgen-kmod/)]
"""
import sys
from pathlib import Path

import kmod_common
from kmod_common import OURS, PG, lab_session, median, parser, table

BATCH = "/root/churn.batch"


def churn(b, pairs):
    """Seconds for `pairs` veth create+delete cycles in one ip -batch."""
    out = b.sh(f"t0=$(date +%s%N); ip -batch {BATCH} >/dev/null; t1=$(date +%s%N); "
               "echo $((t1 - t0))")
    return int(out.strip()) / 1e9


def mode(b, which, ratep):
    b.sh(f"echo stop > {PG}/pgctrl 2>/dev/null; sleep 0.2; rmmod {OURS} 2>/dev/null; true")
    if which == "none":
        return
    b.use(OURS)
    if which == "busy":
        b.configure(0, ratep=ratep)
        b.sh(f"(echo start > {PG}/pgctrl) >/dev/null 2>&1 </dev/null & sleep 0.5; "
             f"grep -q 'Running: tx0' {PG}/kpktgend_0")


def main():
    p = parser(__doc__)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--pairs", type=int, default=200)
    p.add_argument("--ratep", type=int, default=10000)
    p.add_argument("--src", help="module source directory (e.g. an older tree)")
    args = p.parse_args()
    if args.src:
        kmod_common.KMOD = Path(args.src).resolve()
    modes = ["none", "idle", "busy"]
    secs = {m: [] for m in modes}
    with lab_session(args.lab) as b:
        b.sh(f"rm -f {BATCH}; for i in $(seq {args.pairs}); do "
             f"echo 'link add vc0 type veth peer name vc1' >> {BATCH}; "
             f"echo 'link del vc0' >> {BATCH}; done; ip link del vc0 2>/dev/null; true")
        for r in range(args.rounds):
            order = modes if r % 2 == 0 else modes[::-1]
            for m in order:
                mode(b, m, args.ratep)
                secs[m].append(churn(b, args.pairs))
        mode(b, "none", args.ratep)
    rates = {m: [args.pairs / s for s in secs[m]] for m in modes}
    base = median(secs["none"])
    rows = []
    for m in modes:
        rows.append([m, f"{median(rates[m]):.2f}", f"{min(rates[m]):.2f}",
                     f"{max(rates[m]):.2f}", f"{median(secs[m]) / base:.3f}"])
    src = args.src or "pktgen-kmod/"
    print(f"\nveth pair create+delete in the tester VM's namespace, {args.pairs} pairs per "
          f"round, {args.rounds} rounds, module from {src}; busy = generator on tx0 at "
          f"{args.ratep} pps")
    table(["module", "pairs/s median", "min", "max", "time vs none"], rows)
    worst = max(median(secs[m]) / base for m in ("idle", "busy"))
    print(f"\ngoal <= 1.1x the time without the module: {'met' if worst <= 1.1 else 'NOT met'} "
          f"(worst {worst:.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
