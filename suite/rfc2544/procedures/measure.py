"""The search's `measure(duration, load)` built on a trial runner.

`run_trial(spec) -> TrialResult` is a Tester's (or the recording runner's);
the search gets Outcomes and never sees a Tester.
"""
from dataclasses import replace

from rfc2544.model import TrialSpec
from rfc2544.model import SOURCE_GENERATOR
from rfc2544.search import Outcome
from rfc2544.model import BOUND_PERCENTILES


def outcome_from(result):
    spacing = getattr(result, "spacing", None)
    # only the trial's own departures: a calibration link's estimate is another run
    gap_ns = spacing.max_gap_ns if spacing is not None and spacing.source == SOURCE_GENERATOR else 0
    return Outcome(
        duration_s=result.spec.duration_s, load_fps=result.spec.load_fps,
        loss_ratio=result.loss_ratio, tester_limited=result.tester_limited,
        aborted=result.aborted_early, traffic_s=result.traffic_s,
        saved_s=result.saved_traffic_s, intended_frames=result.intended_frames,
        tx_frames=result.tx_frames, rx_frames=result.rx_frames,
        tester_bursty=getattr(result, "tester_bursty", False), longest_gap_s=gap_ns / 1e9,
        streams=stream_losses(result), latency_ns=latency_of(result))


def latency_of(result):
    """{LatencyStats field: ns} of the percentiles a latency bound may
    name (search.outcome.BOUND_PERCENTILES), or None without latency."""
    stats = getattr(result, "latency", None)
    if stats is None or not stats.samples:
        return None
    return {name: getattr(stats, name) for name in BOUND_PERCENTILES.values()}


def stream_losses(result):
    """{(tx port, rx port): (sent, lost)} of a trial's streams (the
    receiver's loss where it counts it, else sent minus received)."""
    return {(s.tx_port, s.rx_port): (s.tx_frames, s.lost if s.lost is not None
                                     else max(s.tx_frames - s.rx_frames, 0))
            for s in getattr(result, "streams", None) or []}


def make_measure(run_trial, frame_size, ipv6=False, early_abort=False, test="throughput",
                 tester_limited_retries=0, frames_per_burst=1, latency=False):
    """A measure function for one frame size; `early_abort` passes the
    search's loss goal to the tester so it may stop a failing trial. A trial
    the tester could not send at the intended rate is repeated up to
    `tester_limited_retries` times (a busy tester host misses the rate now
    and then); the last attempt is what the search sees. `frames_per_burst`
    > 1: bursty traffic at that mean load (RFC 2544 section 21).
    `latency`: every trial records each frame's latency (a search with a
    latency bound judges it).

    An aborted trial whose final counts (after the residual wait) are
    within the goal was stopped wrongly: frames still queued in the DUT
    counted as lost while it ran. It is run again in full, without early
    abort, and that trial decides; `measure.wrong_aborts` lists the loads
    where it happened (the run says how often)."""
    def measure(duration_s, load_fps, goal_loss_ratio=None):
        spec = TrialSpec(frame_size=frame_size, load_fps=float(load_fps),
                         duration_s=float(duration_s), ipv6=ipv6, test=test,
                         abort_loss_ratio=goal_loss_ratio if early_abort else None,
                         frames_per_burst=frames_per_burst, latency=latency)
        outcome = attempt(spec, goal_loss_ratio)
        for _ in range(tester_limited_retries):
            if not outcome.tester_limited:
                break
            retry = attempt(spec, goal_loss_ratio)
            retry.traffic_s += outcome.traffic_s        # both attempts cost traffic
            outcome = retry
        return outcome

    def attempt(spec, goal_loss_ratio):
        outcome = outcome_from(run_trial(spec))
        # the abort claimed the whole trial would lose more than the goal
        # allows of its intended frames; its final counts may say otherwise
        allowed = (goal_loss_ratio or 0.0) * outcome.intended_frames
        if outcome.aborted and not outcome.tester_limited and outcome.tx_frames - outcome.rx_frames <= allowed:
            measure.wrong_aborts.append(spec.load_fps)
            full = outcome_from(run_trial(replace(spec, abort_loss_ratio=None)))
            full.traffic_s += outcome.traffic_s        # both cost traffic; nothing was saved
            outcome = full
        return outcome
    measure.wrong_aborts = []
    return measure
