"""The search's `measure(duration, load)` built on a trial runner.

`run_trial(spec) -> TrialResult` is a Tester's (or the recording runner's);
the search gets Outcomes and never sees a Tester.
"""
from rfc2544.model import TrialSpec
from rfc2544.engine.pacing import SOURCE_GENERATOR
from rfc2544.search import Outcome


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
        streams=stream_losses(result))


def stream_losses(result):
    """{(tx port, rx port): (sent, lost)} of a trial's streams (the
    receiver's loss where it counts it, else sent minus received)."""
    return {(s.tx_port, s.rx_port): (s.tx_frames, s.lost if s.lost is not None
                                     else max(s.tx_frames - s.rx_frames, 0))
            for s in getattr(result, "streams", None) or []}


def make_measure(run_trial, frame_size, ipv6=False, early_abort=False, test="throughput",
                 tester_limited_retries=0, frames_per_burst=1):
    """A measure function for one frame size; `early_abort` passes the
    search's loss goal to the tester so it may stop a failing trial. A trial
    the tester could not send at the intended rate is repeated up to
    `tester_limited_retries` times (a busy tester host misses the rate now
    and then); the last attempt is what the search sees. `frames_per_burst`
    > 1: bursty traffic at that mean load (RFC 2544 section 21)."""
    def measure(duration_s, load_fps, goal_loss_ratio=None):
        spec = TrialSpec(frame_size=frame_size, load_fps=float(load_fps),
                         duration_s=float(duration_s), ipv6=ipv6, test=test,
                         abort_loss_ratio=goal_loss_ratio if early_abort else None,
                         frames_per_burst=frames_per_burst)
        outcome = outcome_from(run_trial(spec))
        for _ in range(tester_limited_retries):
            if not outcome.tester_limited:
                break
            retry = outcome_from(run_trial(spec))
            retry.traffic_s += outcome.traffic_s        # both attempts cost traffic
            outcome = retry
        return outcome
    return measure
