"""Throughput by MLRsearch (RFC 9971) through FD.io CSIT's `MLRsearch` package.

NDR (0 % loss) and, optionally, PDR in one pass. Short trials first, longer
ones as the interval narrows. Our measure is adapted to the package's
AbstractMeasurer. RFC 2544-strict settings: exceed_ratio 0 and a duration sum
equal to the final trial duration (one full-length zero-loss trial decides).
"""
import logging
import math

from MLRsearch import AbstractMeasurer, Config, MeasurementResult, MultipleLossRatioSearch, SearchGoal

from rfc2544.search.outcome import CountingMeasure, SearchResult

log = logging.getLogger(__name__)

# Wall-clock limit the package enforces; trials here may be replayed from a
# results file (instant) or last minutes, so only a runaway search hits it.
SEARCH_DURATION_MAX_S = 7 * 24 * 3600.0


class _Measurer(AbstractMeasurer):
    def __init__(self, measure, abort_ratio):
        self.measure_fn = measure
        self.abort_ratio = abort_ratio

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
        return MeasurementResult(
            intended_duration=intended_duration, intended_load=intended_load,
            offered_count=o.tx_frames, loss_count=o.tx_frames - o.rx_frames,
            # the tester judged what it sent close enough to the intent
            intended_count=o.tx_frames, offered_duration=intended_duration)


def search(measure, *, min_load, max_load, resolution, search_duration, final_duration,
           pdr_loss_ratio=None, duration_sum=None, exceed_ratio=0.0, **_ignored):
    counted = CountingMeasure(measure)
    ratios = [0.0] + ([pdr_loss_ratio] if pdr_loss_ratio else [])
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
        measurer=_Measurer(counted, max(ratios)), debug=log.debug)
    out = SearchResult("mlr", ndr_fps=None, resolution=resolution)
    for goal in goals:
        res = results[goal]
        lower = float(res.relevant_lower_bound) if res.relevant_lower_bound else None
        upper = float(res.relevant_upper_bound) if res.relevant_upper_bound else None
        if goal.loss_ratio == 0.0:
            out.ndr_fps, out.ndr_upper_fps = lower, upper
        else:
            out.pdr_fps, out.pdr_upper_fps, out.pdr_loss_ratio = lower, upper, goal.loss_ratio
    return counted.fill(out)
