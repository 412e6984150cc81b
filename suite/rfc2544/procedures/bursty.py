"""RFC 2544 section 21: throughput with bursty traffic.

For each burst size of the profile, frames leave in bursts of that many,
back to back at the generator's minimum gap, and the interval between
bursts is searched as throughput is: the search sees the mean rate (the
burst size over the interval), and the NDR is the highest mean rate with no
loss. A burst larger than what the DUT can buffer or its policer's bucket
holds loses frames at any mean rate: no NDR. The largest burst size with an
NDR is reported.

The generator's spacing rule (engine/pacing.py) is not applied: these
trials are bursty by design.
"""
import math

from rfc2544.errors import BadInput
from rfc2544.procedures import Skip, trial_overhead_s
from rfc2544.procedures.throughput import note_wrong_aborts
from rfc2544.search import search

TEST = "bursty"


def run(ctx, frame_size, ipv6):
    if not ctx.paced_bursts():
        raise Skip("bursty traffic needs the rfc2544_pktgen module 1.2 or later on every tester host "
                   "(burst_frames): run 'rfc2544 setup'")
    s = ctx.profile.model.search
    max_load, source = ctx.max_load(frame_size, ipv6)
    min_load = max_load * s.min_load_pct / 100
    tp = ctx.throughput(frame_size, ipv6)
    steady = tp.get("ndr_fps") if tp else None
    rows = []
    for size in ctx.profile.model.bursty.burst_sizes:
        measure = ctx.measure(frame_size, ipv6, early_abort=s.early_abort, test=TEST, frames_per_burst=size)
        try:
            result = search(
                s.method, _at_least_one_burst(measure, size), min_load=min_load, max_load=max_load,
                resolution=s.resolution_pct / 100, search_duration=s.initial_duration_s,
                final_duration=ctx.profile.model.trial_duration_s, pdr_loss_ratio=None,
                duration_sum=s.duration_sum_s, exceed_ratio=s.exceed_ratio)
        except BadInput as exc:
            raise Skip(str(exc))
        note_wrong_aborts(ctx, measure, f"{frame_size} B, bursts of {size}")
        rows.append(burst_row(size, result, steady))
    passing = [r["frames_per_burst"] for r in rows if r["ndr_fps"]]
    largest = max(passing, default=None)
    failing = [r["frames_per_burst"] for r in rows if not r["ndr_fps"]]
    if failing:
        ctx.note(f"bursty traffic at {frame_size} B: bursts of {', '.join(map(str, failing))} frames lost frames "
                 f"even at the lowest mean load ({min_load:.0f} fps): larger than the DUT buffers", code="bursty_no_ndr")
    return {
        "frame_size": frame_size, "bursts": rows, "largest_passing_burst": largest,
        "throughput_fps": steady, "max_load_fps": max_load, "max_load_source": source,
        "search": s.method, "resolution_pct": s.resolution_pct,
    }


def _at_least_one_burst(measure, size):
    """A trial holds at least one whole burst: a load too low for one burst
    in the trial's duration is offered as a longer trial of one burst."""
    def measure_bursts(duration_s, load_fps, goal_loss_ratio=None):
        return measure(max(duration_s, size / load_fps), load_fps, goal_loss_ratio)
    return measure_bursts


def burst_row(size, result, steady):
    """One burst size's results: the NDR (mean fps), bursts per second and
    the interval between burst starts at it, and its share of the steady
    throughput."""
    ndr = result.ndr_fps
    return {
        "frames_per_burst": size, "fps": ndr or 0.0, "ndr_fps": ndr, "ndr_upper_fps": result.ndr_upper_fps,
        "bursts_per_s": ndr / size if ndr else None,
        "burst_interval_us": size / ndr * 1e6 if ndr else None,
        "pct_of_throughput": ndr * 100 / steady if ndr and steady else None,
        "trials": result.trials, "traffic_s": result.traffic_s,
    }


def estimate_s(m):
    """Rough seconds of one step (the progress display's ETA)."""
    s = m.search
    steps = math.log2(1 / (s.resolution_pct / 100)) + 2
    return len(m.bursty.burst_sizes) * steps * (s.initial_duration_s + trial_overhead_s(m))
