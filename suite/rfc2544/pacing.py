"""How evenly the tester sent, and when that, not the DUT, explains a loss.

The generator (rfc2544_pktgen) records each frame's departure: the gap
from the frame before, in a histogram, and micro-bursts, runs of frames
each sent less than half the nominal gap after the one before (a vCPU
stall, an interrupt storm, `burst N`: then the generator sends its debt back
to back).

The tester-bursty rule. A failed trial is tester-bursty when all hold:
  1. its longest micro-burst M is at least 2 frames;
  2. M is longer than the longest micro-burst of any trial that passed in
     the same unit (test, IP version, frame size) so far, A (0 if none):
     the DUT was never seen to absorb a burst that long;
  3. the frames lost L are at most the close frames C, the frames sent less
     than half a gap after the one before: a buffer that overflowed on
     bursts can lose only frames that came too close.
A DUT that cannot carry the rate loses frames spread over the whole trial,
typically more than the few close frames (3 fails), or the same loss again
on an evenly paced retry. The search treats a tester-bursty trial like a
tester-limited one: retried, and never taken as a pass.
"""
from rfc2544.drivers import pgrx as pgrx_mod
from rfc2544.model import Spacing

# The trials whose loss the rule may put on the tester: steady rates that
# should pass (system recovery overloads on purpose, reset makes an outage,
# back-to-back bursts at the maximum rate).
STEADY_TESTS = ("throughput", "latency", "frame_loss")
# pgrx's percentiles over merged histograms (the same bucket geometry)
_Q = {"p50_gap_ns": 0.5, "p99_gap_ns": 0.99, "p999_gap_ns": 0.999}


def spacing_of(devices, rates):
    """Spacing of one trial from the generators' device states (None when no
    generator reports departures: the in-tree pktgen). `rates`: each
    device's frames/s (None: unpaced), for the nominal gap."""
    # an unpaced generator (no rate) times no frame: nothing to say about spacing
    parts = [(d.departures, r) for d, r in zip(devices, rates)
             if d is not None and d.departures and d.departures.get("frames")]
    if not parts:
        return None
    merged = {}
    for dep, _ in parts:
        for low, high, count in dep.get("gap_hist_ns", []):
            merged[(low, high)] = merged.get((low, high), 0) + count
    buckets = [pgrx_mod.HistBucket(lo, hi, c) for (lo, hi), c in sorted(merged.items())]
    frames = sum(dep["frames"] for dep, _ in parts)     # > 0: parts hold timed frames only
    nominal = [1e9 / r for _, r in parts if r]
    nominal_gap = min(nominal) if len(nominal) == len(parts) else None
    lo = min(dep.get("min_gap_ns", 0) for dep, _ in parts)
    hi = max(dep.get("max_gap_ns", 0) for dep, _ in parts)
    mean = sum(dep.get("mean_gap_ns", 0) * dep["frames"] for dep, _ in parts) / frames
    return Spacing(
        source="generator", frames=frames, nominal_gap_ns=nominal_gap, min_gap_ns=float(lo),
        mean_gap_ns=float(mean), max_gap_ns=float(hi),
        **{k: pgrx_mod.percentile_from_hist(buckets, q, lo, hi) for k, q in _Q.items()},
        micro_bursts=sum(dep.get("micro_bursts", 0) for dep, _ in parts),
        longest_micro_burst=max(dep.get("longest_micro_burst", 0) for dep, _ in parts),
        close_frames=close_frames(buckets, nominal_gap),
        hist=[[b.low, b.high, b.count] for b in buckets])


def close_frames(buckets, nominal_gap_ns):
    """Frames sent less than half the nominal gap after the one before (by
    whole buckets: a bucket straddling the half counts only if below it)."""
    if not nominal_gap_ns:
        return 0
    half = nominal_gap_ns / 2
    return sum(b.count for b in buckets if b.high < half)


def bursty_reason(result, absorbed):
    """Why `result` (a TrialResult) is tester-bursty, or None (the rule
    above); `absorbed`: the longest micro-burst of a passed trial in its
    unit so far (0 if none)."""
    s = result.spacing
    spec = result.spec
    # loss is the point of an overload, an outage or a burst at the maximum rate
    if spec.test not in STEADY_TESTS or spec.recovery_load_fps is not None or spec.burst_frames:
        return None
    # an aborted trial (early abort: its loss already broke the goal) is a failed one too
    if s is None or result.tester_limited or result.lost_frames == 0:
        return None
    if s.longest_micro_burst < 2 or s.longest_micro_burst <= absorbed:
        return None
    if result.lost_frames > s.close_frames:
        return None
    return (f"tester-bursty: the generator sent micro-bursts of up to {s.longest_micro_burst} frames "
            f"({s.close_frames} frames less than half the nominal {s.nominal_gap_ns / 1000:.1f} us gap after "
            f"the one before), enough to explain the {result.lost_frames} frames lost; the longest micro-burst "
            f"a passed trial showed the DUT absorbing is {absorbed} frames")
