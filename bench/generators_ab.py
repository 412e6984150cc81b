#!/usr/bin/env python3
"""The tester's ceiling with one generator per stream against two, side by
side in one run (issue 44: N = 2 at least 1.7x N = 1 at 64 B on the 2-vCPU
lab tester, with both vCPU threads busy during N = 2).

Each round measures the lab inventory's stream (tx0 -> rx0) through the
suite itself: SSHTester(generators=N).send_at_max_rate, what `rfc2544
calibrate` runs, frames to the tx port's own MAC so the DUT forwards
nothing and only the generators are measured. The order alternates (order alternating)
and each round's ratio pairs two measurements taken seconds apart, which
takes the host's drift out. Beside the rates: how busy each vCPU thread of
the tester's QEMU was (host CPU seconds over wall seconds, from
/proc/PID/task), the figure that shows the second generator ran on the
second vCPU rather than beside the first.

A third row, upstream's own multi-queue sample on the in-tree pktgen in
the same rounds (issue 44: ours with N = 2 at least 1.0x it):
samples/pktgen/pktgen_sample02_multiqueue.sh from Debian's linux-source-6.1
tarball, unchanged, `-i tx0 -t 2 -m <tx0's MAC>`: a device per thread
(tx0@0, tx0@1), QUEUE_MAP_CPU, NO_TIMESTAMP, random UDP source ports; its
figure is the frames of both devices over the longer of their times.

Last, the paced check (issue 44: a trial at 1.3x the N = 1 ceiling is
tester-limited with N = 1 and sent in full with N = 2): per round, a trial
through the lab's DUT at a load one generator cannot reach gives N = 1's
trial ceiling T1 (forwarding included); then a trial at 1.3 T1 with N = 1
and with N = 2, each judged as a run judges it (tester_limited, frames
sent of those intended). A bench, not a lab test: whether two vCPU threads
get two host cores is the host's doing, and the CI host's two cores run
four VMs.

Usage: bench/generators_ab.py [--lab NAME] [--rounds 6] [--seconds 2] [--frame-size 64] [--paced-rounds 3]
"""
import re
import statistics
import tempfile
import time
from pathlib import Path

from kmod_bidir_ab import vcpu_seconds
from kmod_common import INTREE, OURS, lab_session, median, parser, table
from kmod_upstream_netif_receive import REMOTE, unpack_samples
from rfc2544.config import inventory
from rfc2544.drivers.ssh import put_file
from rfc2544.engine.tester import SSHTester

SAMPLE = "pktgen_sample02_multiqueue.sh"
RESULT = re.compile(r"Result: OK: (\d+)\(c\d+\+d\d+\) usec, (\d+) ")


def upstream_sample(b, frame_size, frames):
    """(frames/s, [vCPU busy share]) of upstream's sample02 with 2 threads."""
    mac = b.sh("cat /sys/class/net/tx0/address").strip()
    cpu0, t0 = vcpu_seconds(b), time.monotonic()
    out = b.sh(f"cd {REMOTE} && bash ./{SAMPLE} -i tx0 -t 2 -s {frame_size - 4} -n {frames // 2} "
               f"-m {mac} -d 198.19.0.1 2>&1")
    used, wall = [a - c for a, c in zip(vcpu_seconds(b), cpu0)], time.monotonic() - t0
    runs = [(int(us), int(n)) for us, n in RESULT.findall(out)]
    if len(runs) != 2:
        raise RuntimeError(f"{SAMPLE}: expected two Result lines:\n{out[-600:]}")
    return sum(n for _, n in runs) / (max(us for us, _ in runs) / 1e6), [u / wall for u in used]


def ceiling(b, inv, generators, frame_size, seconds):
    """(frames/s, [vCPU busy share]) of one measurement."""
    with SSHTester(inv, waits={"learning_frames": 0}, generators=generators) as t:
        t.detect()
        cpu0, t0 = vcpu_seconds(b), time.monotonic()
        frames, elapsed = t.send_at_max_rate(frame_size, seconds)
        used, wall = [a - c for a, c in zip(vcpu_seconds(b), cpu0)], time.monotonic() - t0
    return frames / elapsed, [u / wall for u in used]


PACED_OVER = 1.3


def paced_round(inv, frame_size, seconds, c1):
    """One paced round: (T1, {N: (tester_limited, sent / intended)})."""
    from rfc2544.model import TrialSpec
    waits = {"learning_frames": 0}
    with SSHTester(inv, waits=waits, generators=1) as t:
        # 1.5x the to-self ceiling is out of one generator's reach through the DUT
        top = t.run_trial(TrialSpec(frame_size=frame_size, load_fps=1.5 * c1, duration_s=1.0))
        t1 = top.achieved_fps
        one = t.run_trial(TrialSpec(frame_size=frame_size, load_fps=PACED_OVER * t1, duration_s=seconds))
    with SSHTester(inv, waits=waits, generators=2) as t:
        two = t.run_trial(TrialSpec(frame_size=frame_size, load_fps=PACED_OVER * t1, duration_s=seconds))
    return t1, {n: (r.tester_limited, r.tx_frames / r.intended_frames) for n, r in ((1, one), (2, two))}


def main():
    p = parser(__doc__)
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--seconds", type=float, default=2.0)
    p.add_argument("--frame-size", type=int, default=64)
    p.add_argument("--paced-rounds", type=int, default=3)
    args = p.parse_args()
    cases = (1, 2, "upstream")
    fps = {c: [] for c in cases}
    busy = {c: [] for c in cases}
    with tempfile.TemporaryDirectory() as tmp, lab_session(args.lab) as b:
        samples = unpack_samples(Path(tmp), ("functions.sh", "parameters.sh", SAMPLE))
        b.sh(f"mkdir -p {REMOTE}")
        for f in ("functions.sh", "parameters.sh", SAMPLE):
            put_file(b.host, samples / f, f"{REMOTE}/{f}")
        inv = inventory.load(b.lab.inventory_path)
        for r in range(args.rounds):
            for case in (cases if r % 2 == 0 else cases[::-1]):
                if case == "upstream":
                    b.use(INTREE)
                    rate, share = upstream_sample(b, args.frame_size, int(2 * max(fps[1] or [150_000])
                                                                          * args.seconds))
                else:
                    b.use(OURS)
                    rate, share = ceiling(b, inv, case, args.frame_size, args.seconds)
                fps[case].append(rate)
                busy[case].append(share)
        b.use(OURS)
        paced = [paced_round(inv, args.frame_size, args.seconds, median(fps[1])) for _ in range(args.paced_rounds)]
    ratios = [two / one for one, two in zip(fps[1], fps[2])]
    names = {1: "ours, N = 1", 2: "ours, N = 2", "upstream": "in-tree, sample02 -t 2"}
    rows = [[names[c], f"{median(fps[c]):,.0f}", f"{min(fps[c]):,.0f}..{max(fps[c]):,.0f}",
             " ".join(f"{median([s[i] for s in busy[c]]):.2f}" for i in range(len(busy[c][0])))]
            for c in cases]
    print(f"\n{args.frame_size} B frames, tx0 -> its own MAC (nothing forwarded), {args.rounds} rounds (order alternating), "
          f"{args.seconds:g} s each, through SSHTester.send_at_max_rate; vCPU busy = host CPU s / wall s of each "
          "vCPU thread of the tester's QEMU, median")
    table(["generators", "median fps", "min..max", "vCPU busy"], rows)
    print(f"N = 2 / N = 1: median of per-round ratios {statistics.median(ratios):.3f} "
          f"(min..max {min(ratios):.2f}..{max(ratios):.2f}); ratio of medians {median(fps[2]) / median(fps[1]):.3f}; "
          "goal >= 1.7")
    up = [two / u for two, u in zip(fps[2], fps["upstream"])]
    print(f"ours N = 2 / in-tree sample02 -t 2: median of per-round ratios {statistics.median(up):.3f} "
          f"(min..max {min(up):.2f}..{max(up):.2f}); goal >= 1.0")
    print(f"\npaced at {PACED_OVER:g} x N = 1's trial ceiling T1 through the DUT, {args.seconds:g} s trials; "
          "goal: N = 1 tester-limited, N = 2 sent in full")
    table(["round", "T1 fps", "N = 1: limited, sent", "N = 2: limited, sent"],
          [[str(i + 1), f"{t1:,.0f}"] + [f"{'yes' if lim else 'no'}, {share:.1%}" for lim, share in (r[1], r[2])]
           for i, (t1, r) in enumerate(paced)])


if __name__ == "__main__":
    main()
