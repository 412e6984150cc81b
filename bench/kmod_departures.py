#!/usr/bin/env python3
"""What recording departures costs rfc2544_pktgen, and how evenly it paces.

1. Cost (issue 23, item 1: within 3 % of before). The module with departure
   recording (this checkout) against the module of the commit before it
   (--baseline-rev, built from `git archive`), loaded alternately in the
   same VM, round by round, both going first in turn:
     veth       tx0 -> DUT namespace -> rx0, 64 B, no rate limit
     dummy      a dummy device, 64 B, no rate limit (the generator alone)
     dummy b32  the same with burst 32
     dummy ratep 150k  paced near the generator's ceiling: every frame timed
     dummy ratep 2M    paced above it: every frame timed and policed
                       (departures.h) at the generator's full speed
   (unpaced runs read no clock and only count their frames as unpaced;
   paced ones time every frame, so the last cases carry the full cost)
   Figure: frames handed to the driver per second (Result pps plus the
   tester's own drops), median over the rounds.
2. Pacing (item 3: the default after a late wake-up from measurements).
   This checkout's module at RATE pps for SECONDS s on tx0 with
   catchup_pct 0 (the default, as upstream: send the debt back to back),
   10 and 50: the longest micro-burst, micro-bursts, frames sent less than
   half a gap after the one before, and the gaps' p99 and p99.9 against
   the nominal gap.

Usage: bench/kmod_departures.py [--lab NAME] [--rounds 5] [--count 200000]
       [--baseline-rev d511fcc] [--rate 10000] [--seconds 4]
"""
import re
import subprocess
import tempfile
from pathlib import Path

from kmod_common import OURS, PG, REMOTE_KO, ROOT, lab_session, median, parser, table

DUMMY = "kmdepb0"
BASELINE_KO = "/root/rfc2544_pktgen_baseline.ko"
CASES = [("veth", "tx0", ()), ("dummy", DUMMY, ()), ("dummy b32", DUMMY, ("burst 32",)),
         ("dummy ratep 150k", DUMMY, ("ratep 150000",)), ("dummy ratep 2M", DUMMY, ("ratep 2000000",))]


def handed_pps(b, dev):
    text = b.sh(f"cat {PG}/{dev}")
    m = re.search(r"Result: OK: (\d+)\(c\d+\+d\d+\) usec, (\d+) ", text)
    dropped = re.search(r"tx_dropped: (\d+)", text)
    return (int(m.group(2)) + (int(dropped.group(1)) if dropped else 0)) * 1e6 / int(m.group(1))


def run_case(b, dev, extra, count):
    b.pg("kpktgend_0", "rem_device_all", f"add_device {dev}")
    b.pg(dev, f"count {count}", "pkt_size 60", "delay 0", f"dst_mac {b.dut_mac}", "dst 198.19.0.1",
         "src_min 198.18.0.1", *extra)
    b.start()
    return handed_pps(b, dev)


def departures(b, rate, seconds, catchup):
    b.sh(f"echo {catchup} > /sys/module/{OURS}/parameters/catchup_pct")
    b.configure(rate * seconds, ratep=rate)
    b.start()
    from rfc2544.drivers import pktgen
    d = pktgen.parse_device(b.sh(f"cat {PG}/tx0")).departures
    nominal = d["nominal_gap_ns"]
    close = sum(c for lo, hi, c in d["gap_hist_ns"] if hi < nominal / 2)
    return [catchup, d["frames"], d["longest_micro_burst"], d["micro_bursts"], close,
            f"{d['p99_gap_ns'] / nominal:.2f}", f"{d['p999_gap_ns'] / nominal:.2f}",
            f"{d['max_gap_ns'] / 1e6:.1f}"]


def baseline_source(rev):
    work = Path(tempfile.mkdtemp(prefix="bench-baseline-"))
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "pktgen-kmod"], capture_output=True,
                             check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(work)], input=archive, check=True)
    return work / "pktgen-kmod"


def main():
    p = parser(__doc__)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--count", type=int, default=200_000)
    p.add_argument("--baseline-rev", default="d511fcc")
    p.add_argument("--rate", type=int, default=10_000)
    p.add_argument("--seconds", type=int, default=4)
    args = p.parse_args()
    with lab_session(args.lab) as b:
        b.push_module(baseline_source(args.baseline_rev), BASELINE_KO)
        b.sh(f"ip link add {DUMMY} type dummy 2>/dev/null; ip link set {DUMMY} up")
        figures = {(name, which): [] for name, _, _ in CASES for which in ("before", "after")}
        for r in range(args.rounds):
            order = [("after", REMOTE_KO), ("before", BASELINE_KO)]
            for which, ko in (order if r % 2 == 0 else order[::-1]):
                b.use(OURS, ko=ko)
                for name, dev, extra in CASES:
                    figures[(name, which)].append(run_case(b, dev, extra, args.count))
        rows = []
        for name, _, _ in CASES:
            before, after = median(figures[(name, "before")]), median(figures[(name, "after")])
            rows.append([name, f"{before:,.0f}", f"{after:,.0f}", f"{(after / before - 1) * 100:+.1f} %"])
        print(f"\nCost of departure recording: frames/s handed to the driver, median of {args.rounds} rounds")
        table(["case", f"before ({args.baseline_rev})", "after", "change"], rows)
        b.use(OURS, ko=REMOTE_KO)
        pacing = [departures(b, args.rate, args.seconds, c) for c in (0, 10, 50) for _ in range(2)]
        b.sh(f"echo 0 > /sys/module/{OURS}/parameters/catchup_pct")
        print(f"\nPacing at {args.rate} pps for {args.seconds} s on tx0 (two runs each)")
        table(["catchup_pct", "frames", "longest micro-burst", "micro-bursts", "close frames",
               "p99/nominal", "p99.9/nominal", "max gap ms"], pacing)
        b.sh(f"ip link del {DUMMY} 2>/dev/null; true")


if __name__ == "__main__":
    main()
