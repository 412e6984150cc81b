#!/usr/bin/env python3
"""Where the generators send, and what the host then receives (issue 56).

On the lab's 2-vCPU tester, whose DUT is a namespace of the same VM (its
ports' RPS on the last vCPU, as the lab sets them), three cases in
alternating order each round:
  N = 1            one generator, default placement (off the receive CPUs)
  N = 2 default    two generators, default placement (both on the CPUs the
                   receive path leaves free)
  N = 2 every CPU  two generators on every CPU (--generator-cpus all)
For each: the send ceiling (SSHTester.send_at_max_rate, frames to the tx
port's own MAC, what `calibrate` measures), the receiver's ceiling on the
tester's calibration link cal0 -> cal1 (LinkPacing.count, what `calibrate`
now measures at each generator count: that ceiling offered, counted by
pgrx), and what arrives through the DUT at 1.5 x the send ceiling (the run's
own path: generators, DUT namespace, receiver). Figures: median fps over the
rounds, and the share the link's receiver counted of what was sent.

Usage: bench/placement_ab.py [--lab NAME] [--rounds 4] [--seconds 2]
"""
from kmod_common import lab_session, median, parser, table
from rfc2544.config import inventory
from rfc2544.engine.tester import SSHTester
from rfc2544.lab.topology import CALIBRATION_LINK
from rfc2544.model import TrialSpec

CASES = (("N = 1", 1, False), ("N = 2 default", 2, False), ("N = 2 every CPU", 2, True))


def measure(inv, generators, every_cpu, seconds):
    """(send fps, link received fps, link share, through-DUT received fps, CPUs summary)."""
    with SSHTester(inv, waits={"learning_frames": 0}, generators=generators, every_cpu=every_cpu) as t:
        t.detect()
        placed = "; ".join(c.summary() for c in t.host_cpus().values())
        frames, elapsed = t.send_at_max_rate(64, seconds)
        send = frames / elapsed
        link = t.count_on_link(64, send, seconds)
        through = t.run_trial(TrialSpec(frame_size=64, load_fps=1.5 * send, duration_s=seconds))
    link_fps = link.rx_frames / (link.traffic_s or seconds)
    return send, link_fps, link.rx_frames / max(link.tx_frames, 1), through.rx_frames / (through.traffic_s or seconds), \
        placed


def main():
    p = parser(__doc__)
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--seconds", type=float, default=2.0)
    args = p.parse_args()
    got = {name: [] for name, _, _ in CASES}
    placed = {}
    with lab_session(args.lab) as b:
        b.use("rfc2544_pktgen")
        inv = inventory.load(b.lab.inventory_path)
        inv.hosts["tester"].calibration_link = CALIBRATION_LINK     # wired in the lab, left out of its inventory
        for r in range(args.rounds):
            for name, n, every in (CASES if r % 2 == 0 else CASES[::-1]):
                *figures, placed[name] = measure(inv, n, every, args.seconds)
                got[name].append(figures)
                print(f"round {r + 1} {name}: " + ", ".join(f"{x:,.3f}" for x in figures), flush=True)
    print(f"\n64 B, {args.rounds} rounds (order alternating), {args.seconds:g} s each; median fps")
    rows = []
    for name, _, _ in CASES:
        cols = list(zip(*got[name]))
        rows.append([name, f"{median(cols[0]):,.0f}", f"{median(cols[1]):,.0f}", f"{median(cols[2]):.1%}",
                     f"{median(cols[3]):,.0f}"])
    table(["case", "send ceiling", "link received", "link share", "through DUT received"], rows)
    for name, text in placed.items():
        print(f"{name}: {text}")


if __name__ == "__main__":
    main()
