"""Throughput by MLRsearch (RFC 9971) through FD.io CSIT's `MLRsearch` package.

NDR (0 % loss) and, optionally, PDR in one pass. Short trials first, longer
ones as the interval narrows. Our measure is adapted to the package's
AbstractMeasurer. RFC 2544-strict settings: exceed_ratio 0 and a duration sum
equal to the final trial duration (one full-length zero-loss trial decides).

A latency bound is a goal of its own in the same pass. The package judges
a trial for every goal by one loss ratio, so a trial without loss but over
the bound is reported as losing one frame in OVER_BOUND_COUNT: bad for the
bounded goal (loss ratio 0), good for the NDR goal, whose ratio is then
NDR_RATIO_WITH_BOUND, far below one frame of any trial a tester can send
(trials of up to 1e11 frames, fits_bound_encoding: minutes at 100 GbE line
rate; a longer one is refused).
"""
import logging
import math

from MLRsearch import AbstractMeasurer, Config, MeasurementResult, MultipleLossRatioSearch, SearchGoal

from rfc2544.search.outcome import CountingMeasure, SearchResult

log = logging.getLogger(__name__)

# Wall-clock limit the package enforces; trials here may be replayed from a
# results file (instant) or last minutes, so only a runaway search hits it.
SEARCH_DURATION_MAX_S = 7 * 24 * 3600.0
NDR_RATIO_WITH_BOUND = 1e-12
OVER_BOUND_COUNT = 10 ** 15


def fits_bound_encoding(max_load, longest_s):
    """One frame of the longest trial (at most 1e11 frames) is a loss ratio
    ten times above NDR_RATIO_WITH_BOUND, so it still fails the NDR goal."""
    return max_load * longest_s * NDR_RATIO_WITH_BOUND < 0.1


class _Measurer(AbstractMeasurer):
    def __init__(self, measure, abort_ratio, bound=None):
        self.measure_fn = measure
        self.abort_ratio = abort_ratio
        self.bound = bound

    def measure(self, intended_duration, intended_load):
        o = self.measure_fn(intended_duration, intended_load, goal_loss_ratio=self.abort_ratio)
        intended = max(o.intended_frames, 1)
        if o.aborted or o.tester_limited:
            # Bad for every goal: the full trial would have lost more than the
            # largest goal (aborted) or the load was never offered (tester).
            # Extrapolate the observed ratio so the package's forwarding-rate
            # hints stay sensible, but never at or below the largest goal.
            unsent = max(intended - o.tx_frames, 0) if o.tester_limited else 0
            ratio = max(o.loss_ratio, (unsent + o.tx_frames - o.rx_frames) / intended)
            floor = (self.abort_ratio or 0.0) + 1.0 / intended
            loss = math.ceil(max(ratio, floor) * intended)
            return MeasurementResult(
                intended_duration=intended_duration, intended_load=intended_load,
                offered_count=intended, loss_count=min(loss, intended),
                offered_duration=intended_duration)
        if self.bound is not None and o.tx_frames == o.rx_frames and self.bound.exceeded(o):
            return MeasurementResult(
                intended_duration=intended_duration, intended_load=intended_load,
                offered_count=OVER_BOUND_COUNT, loss_count=1, offered_duration=intended_duration)
        return MeasurementResult(
            intended_duration=intended_duration, intended_load=intended_load,
            offered_count=o.tx_frames, loss_count=o.tx_frames - o.rx_frames,
            # the tester judged what it sent close enough to the intent
            intended_count=o.tx_frames, offered_duration=intended_duration)


def search(measure, *, min_load, max_load, resolution, search_duration, final_duration,
           pdr_loss_ratio=None, duration_sum=None, exceed_ratio=0.0, latency_bound=None, **_ignored):
    counted = CountingMeasure(measure)
    # goal names in the package's order; the bounded goal (no loss, within the bound) last
    kinds = ["ndr"] + (["pdr"] if pdr_loss_ratio else []) + (["bounded"] if latency_bound else [])
    ndr_ratio = NDR_RATIO_WITH_BOUND if latency_bound else 0.0
    ratios = [{"ndr": ndr_ratio, "pdr": pdr_loss_ratio, "bounded": 0.0}[k] for k in kinds]
    if latency_bound and not fits_bound_encoding(max_load, max(final_duration, duration_sum or 0)):
        raise ValueError("a latency bound with MLRsearch needs trials of fewer than 1e11 frames")
    goals = [SearchGoal(
        loss_ratio=r, exceed_ratio=exceed_ratio, relative_width=resolution,
        initial_trial_duration=min(search_duration, final_duration),
        final_trial_duration=final_duration,
        duration_sum=max(duration_sum or final_duration, final_duration),
        preceding_targets=2, expansion_coefficient=2, fail_fast=False) for r in ratios]
    config = Config()
    config.goals = goals
    config.min_load = min_load
    config.max_load = max_load
    config.search_duration_max = SEARCH_DURATION_MAX_S
    config.warmup_duration = None
    # Early abort may only stop a trial that is bad for every goal.
    results = MultipleLossRatioSearch(config=config).search(
        measurer=_Measurer(counted, max(ratios), latency_bound), debug=log.debug)
    out = SearchResult("mlr", ndr_fps=None, resolution=resolution)
    for kind, goal in zip(kinds, goals):
        res = results[goal]
        lower = float(res.relevant_lower_bound) if res.relevant_lower_bound else None
        upper = float(res.relevant_upper_bound) if res.relevant_upper_bound else None
        if kind == "ndr":
            out.ndr_fps, out.ndr_upper_fps = lower, upper
        elif kind == "pdr":
            out.pdr_fps, out.pdr_upper_fps, out.pdr_loss_ratio = lower, upper, pdr_loss_ratio
        else:
            out.latency_bound, out.bounded_fps, out.bounded_upper_fps = latency_bound, lower, upper
    return counted.fill(out)
