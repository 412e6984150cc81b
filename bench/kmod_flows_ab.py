#!/usr/bin/env python3
"""One flow against 256 flows per stream, side by side in one run (issue
31: "receiver with 256 flows per stream and with 1 flow: pps within 5 %;
generator with 256 flows and with 1 flow: pps within 5 %").

The suite gives a stream N flows by stepping its UDP source port over N
ports (drivers/pktgen.DeviceConfig: udp_src_min 9, udp_src_max 9 + N); the
addresses stay, so pgrx counts the stream as one. The third variant draws
the source address from 256 per frame, with a stream id in the header
(module 1.3, `stream_id 1`), so pgrx counts the stream by its id: the cost
of keying streams by id where the address cannot. One module build, in one
lab VM; each round runs every case with 1 flow and with 256, the order
alternating (ABBA...), and each round's pair gives one ratio. Reported per
case: the median pps of each, the ratio of the medians, and the median
pair ratio with its spread (min..max).

Cases (64 B frames, 1 kpktgend thread, no rate limit):
  generator, dummy       start_xmit into a dummy device: the per-frame
                         cost of building a frame with its port stepped
  receiver, pgrx time    netif_receive into rx0, pgrx counting at level
                         `time` (sequence, latency): the receive path's cost

Usage: bench/kmod_flows_ab.py [--lab NAME] [--rounds 8] [--scale 1.0]
"""
import re
import statistics

from kmod_common import OURS, PG, lab_session, median, parser, table
from kmod_tx_matrix import DUMMY, run_case as run_generator

FLOWS = {"1 flow": (), "256 flows": ("udp_src_min 9", "udp_src_max 265"),
         "256 sources, stream id": ("stream_id 1", "src_min 198.18.0.0", "src_max 198.18.0.255", "flag IPSRC_RND")}


def run_receiver(b, extra, count):
    """pps of netif_receive into rx0 with pgrx counting every frame."""
    for t in range(2):
        b.pg(f"kpktgend_{t}", "rem_device_all")
    b.pg("pgrx", "statistics time", "display script", "rx rx0")
    b.pg("kpktgend_0", "add_device rx0")
    b.pg("rx0", f"count {count}", "pkt_size 60", "delay 0", f"dst_mac {b.rx_mac}",
         "dst 198.19.0.1", "src_min 198.18.0.1", "xmit_mode netif_receive", *extra)
    b.start()
    packets, usec, _ = b.result("rx0")
    counted = int(re.search(r"^total id=all packets=(\d+)", b.sh(f"cat {PG}/pgrx"), re.M).group(1))
    streams = re.findall(r"^stream ", b.sh(f"cat {PG}/pgrx"), re.M)
    assert counted == count and len(streams) <= 1, (extra, counted, len(streams))   # one stream, every frame
    return int(packets * 1e6 / usec)


def main():
    p = parser(__doc__)
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--scale", type=float, default=1.0, help="frames per trial x this")
    args = p.parse_args()
    cases = [("generator, dummy", lambda b, extra: run_generator(b, DUMMY, extra, 1, int(200_000 * args.scale)
                                                                 // 32 * 32)),
             ("receiver, pgrx time", lambda b, extra: run_receiver(b, extra, int(200_000 * args.scale)))]
    got = {}        # (case, flows) -> [pps per round]
    with lab_session(args.lab) as b:
        b.use(OURS)
        b.which = "this"
        b.sh(f"ip link del {DUMMY} 2>/dev/null; ip link add {DUMMY} type dummy && ip link set {DUMMY} up")
        try:
            for r in range(args.rounds):
                order = list(FLOWS) if r % 4 in (0, 3) else list(reversed(FLOWS))
                for name, run in cases:
                    for flows in order:
                        got.setdefault((name, flows), []).append(run(b, FLOWS[flows]))
        finally:
            b.pg("pgrx", "rx_disable")
            b.sh(f"ip link del {DUMMY} 2>/dev/null; true")
    rows = []
    for name, _ in cases:
        one = got[name, "1 flow"]
        for variant in list(FLOWS)[1:]:
            many = got[name, variant]
            ratios = [m / o for m, o in zip(many, one)]
            rows.append([name, variant, int(median(one)), int(median(many)), f"{median(many) / median(one):.3f}",
                         f"{statistics.median(ratios):.3f}", f"{min(ratios):.2f}..{max(ratios):.2f}"])
    print(f"\n64 B frames, 1 thread, {args.rounds} rounds (order ABBA), TCG lab VM; "
          "256 flows = UDP source ports 9..264, one stream; 256 sources = 198.18.0.0/24 drawn, stream id 1")
    table(["case", "variant", "1 flow pps", "variant pps", "ratio of medians", "median ratio", "ratio min..max"],
          rows)


if __name__ == "__main__":
    main()
