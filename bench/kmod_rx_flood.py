#!/usr/bin/env python3
"""The receiver's pps for a genuine stream alone and beside a flood of new
sources, side by side in one run (issue 32: "receiver pps for genuine
traffic with and without a concurrent flood of new sources; the genuine
stream's counts stay exact").

Both streams enter rx0's receive path directly (xmit_mode netif_receive),
each from its own kpktgend thread, so each runs on its own vCPU and the
only thing they share is pgrx (level `time`): the genuine stream from
198.18.0.1 on kpktgend_0, the flood from random sources in 10.0.0.0/8
(IPSRC_RND: nearly every frame a source pgrx has not seen) on kpktgend_1,
twice as many frames so that it outlasts the genuine one. After the first
1024 sources the stream table is full and every flood frame is turned away
without the table's lock. A third case runs the second generator from one
fixed source instead (a second stream pgrx knows): the same CPU contention
without new sources, so the flood's own cost is the difference between the
last two columns. Each round runs the three cases, the order reversed every
other round.

Reported: the genuine stream's pps (its generator's Result: the receive
path's cost per frame on its CPU, hook included) alone and with the flood,
their ratio (median and min..max over rounds), the flood's own pps, and
whether pgrx counted the genuine stream exactly in every round (packets =
sent, nothing lost, duplicated or out of order).

Usage: bench/kmod_rx_flood.py [--lab NAME] [--rounds 6] [--count 200000]
"""
import re
import statistics

from kmod_common import OURS, PG, lab_session, median, parser, table

GENUINE_SRC = "198.18.0.1"


def stream_line(text, src):
    m = re.search(rf"^stream src={re.escape(src)} packets=(\d+) bytes=\d+ seq_max=(\d+) lost=(\d+) "
                  rf"ooo=(\d+) dup=(\d+) old=(\d+)", text, re.M)
    return tuple(int(x) for x in m.groups()) if m else None


def run(b, count, flood):
    """(genuine pps, second generator's pps or None, genuine counted
    exactly); flood: None, "new" (random sources) or "one" (one source)."""
    for t in range(2):
        b.pg(f"kpktgend_{t}", "rem_device_all")
    b.pg("pgrx", "rx_reset")
    common = ["pkt_size 60", "delay 0", f"dst_mac {b.rx_mac}", "dst 198.19.0.1", "xmit_mode netif_receive"]
    b.pg("kpktgend_0", "add_device rx0@0")
    b.pg("rx0@0", f"count {count}", f"src_min {GENUINE_SRC}", f"src_max {GENUINE_SRC}", *common)
    if flood:
        b.pg("kpktgend_1", "add_device rx0@1")
        sources = ["src_min 10.0.0.1", "src_max 10.255.255.254", "flag IPSRC_RND"] if flood == "new" \
            else ["src_min 10.0.0.1", "src_max 10.0.0.1", "flag !IPSRC_RND"]
        b.pg("rx0@1", f"count {2 * count}", *sources, *common)
    b.start()
    packets, usec, _ = b.result("rx0@0")
    flood_pps = None
    if flood:
        fp, fu, _ = b.result("rx0@1")
        flood_pps = fp * 1e6 / fu
    text = b.sh(f"cat {PG}/pgrx")
    st = stream_line(text, GENUINE_SRC)
    exact = st is not None and st == (count, count, 0, 0, 0, 0) and packets == count
    streams = int(re.search(r" streams=(\d+) ", text).group(1))
    want = {None: 1, "one": 2, "new": 1024}[flood]
    assert streams == want, f"{flood}: {streams} streams, not {want}"
    return packets * 1e6 / usec, flood_pps, exact


def main():
    p = parser(__doc__)
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--count", type=int, default=200_000)
    args = p.parse_args()
    cases = {"alone": None, "one other source": "one", "flood": "new"}
    got = {name: [] for name in cases}
    with lab_session(args.lab) as b:
        b.use(OURS)
        b.which = "this"
        b.pg("pgrx", "statistics time", "display script", "action drop", "rx rx0")
        try:
            for r in range(args.rounds):
                order = list(cases) if r % 2 == 0 else list(reversed(cases))
                for name in order:
                    got[name].append(run(b, args.count, cases[name]))
        finally:
            b.pg("pgrx", "rx_disable")
            for t in range(2):
                b.pg(f"kpktgend_{t}", "rem_device_all")
    alone, other, flood = ([g[0] for g in got[name]] for name in cases)
    exact = all(g[2] for name in cases for g in got[name])
    print(f"\n64 B frames into rx0's receive path (netif_receive), pgrx level time, {args.rounds} rounds "
          f"(order reversed every other), {args.count} genuine frames per round, TCG lab VM with 2 vCPUs")
    rows = []
    for name, xs in (("beside one other source", other), ("beside a flood of new sources", flood)):
        ratios = [x / a for x, a in zip(xs, alone)]
        rows.append([name, int(median(alone)), int(median(xs)), f"{median(xs) / median(alone):.3f}",
                     f"{statistics.median(ratios):.3f}", f"{min(ratios):.2f}..{max(ratios):.2f}",
                     int(median([g[1] for g in got["one other source" if xs is other else "flood"]]))])
    table(["genuine stream", "alone pps", "beside pps", "ratio of medians", "median ratio", "ratio min..max",
           "second generator pps"], rows)
    print(f"flood against one other source: {median(flood) / median(other):.3f} (the new sources' own cost); "
          f"genuine per-frame cost on its CPU: {1e9 / median(alone):.0f} ns alone, "
          f"{1e9 / median(other):.0f} ns beside one source, {1e9 / median(flood):.0f} ns beside the flood; "
          f"genuine stream counted exactly in every round: {'yes' if exact else 'NO'}")


if __name__ == "__main__":
    main()
