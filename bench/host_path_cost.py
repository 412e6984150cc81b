#!/usr/bin/env python3
"""What issue 56's per-trial additions cost a trial's control (ms).

  host counters   each trial's zero and final counter reads also read the
                  tester's /proc/net/softnet_stat and its receiving ports'
                  NIC drop counters (drivers/host_path.py), parsed into
                  the trial's `host_path`
  merged spacing  the stream's generators' departure records merged into
                  the one timeline the DUT sees (engine/catch_ups.py), in
                  pacing.spacing_of
Trials of 2 generators through the lab's DUT at 2,000 fps for 1 s,
alternating with the host counters read (as shipped) and not read (their
file list emptied), both orders in turn. Control = a trial's wall time minus
its traffic time (the trial's fixed waits included: the same on both
sides), median over the trials of each side; the merged spacing is timed
inside each trial (perf_counter around spacing_of).

Usage: bench/host_path_cost.py [--lab NAME] [--trials 20]
"""
import time
from unittest import mock

from kmod_common import lab_session, median, parser, table
from rfc2544.config import inventory
from rfc2544.drivers import host_path
from rfc2544.engine import trial_result
from rfc2544.engine.tester import SSHTester
from rfc2544.model import TrialSpec


def main():
    p = parser(__doc__)
    p.add_argument("--trials", type=int, default=20)
    args = p.parse_args()
    control = {"read": [], "not read": []}
    spacing_ms = []
    timed = trial_result.spacing_of

    def spacing_of(*a, **kw):
        t0 = time.perf_counter()
        try:
            return timed(*a, **kw)
        finally:
            spacing_ms.append((time.perf_counter() - t0) * 1e3)
    with lab_session(args.lab) as b, mock.patch.object(trial_result, "spacing_of", spacing_of):
        b.use("rfc2544_pktgen")
        inv = inventory.load(b.lab.inventory_path)
        with SSHTester(inv, waits={"learning_frames": 0}, generators=2) as t:
            t.run_trial(TrialSpec(frame_size=64, load_fps=2000, duration_s=1.0))      # warm: set-up done
            for i in range(args.trials):
                for side in (("read", "not read") if i % 2 == 0 else ("not read", "read")):
                    files = host_path.path_files if side == "read" else (lambda rx_ports: [])
                    with mock.patch.object(host_path, "path_files", files):
                        t0 = time.monotonic()
                        r = t.run_trial(TrialSpec(frame_size=64, load_fps=2000, duration_s=1.0))
                        wall = time.monotonic() - t0
                    assert (r.host_path is not None) == (side == "read"), r.host_path
                    control[side].append((wall - r.traffic_s) * 1e3)
    print(f"\n{args.trials} trials each side (order alternating), 2 generators, 2,000 fps, 1 s; ms")
    table(["", "median", "min..max"],
          [[f"control, host counters {side}", f"{median(v):.1f}", f"{min(v):.1f}..{max(v):.1f}"]
           for side, v in control.items()]
          + [["merged spacing (spacing_of)", f"{median(spacing_ms):.2f}",
              f"{min(spacing_ms):.2f}..{max(spacing_ms):.2f}"]])
    print(f"host counters: {median(control['read']) - median(control['not read']):+.1f} ms a trial "
          "(difference of medians)")


if __name__ == "__main__":
    main()
