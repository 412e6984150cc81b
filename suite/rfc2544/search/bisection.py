"""Classic RFC 2544 throughput search: binary search on the offered load.

Short search trials narrow [lower, upper] until (upper - lower) / upper is
within the resolution; the lower bound is then confirmed with one
full-length trial (RFC 2544 section 24: the final determination uses
full-length trials). A failed confirmation makes it the new upper bound and
the search goes on below it with full-length trials only: short trials have
just shown they pass loads a full trial does not (a buffer or a policer's
burst absorbs a short overload). A tester-limited trial never counts as a pass.

With a latency bound the bounded rate is a search of its own after the
NDR's, below it (the bound adds a condition to the NDR's): when the NDR's
own full-length trial kept the bound, that is the bounded rate with no
further trial.
"""
from rfc2544.search.outcome import CountingMeasure, SearchResult


def _bisect(passes, lower, upper, verified, resolution, duration):
    """Narrow (lower, upper]; `verified` says whether `lower` passed already."""
    while (upper - lower) / upper > resolution:
        load = (lower + upper) / 2
        if passes(duration, load):
            lower, verified = load, True
        else:
            upper = load
    return lower, upper, verified


def find(measure, min_load, max_load, resolution, goal, search_duration, final_duration,
         bound=None, max_load_fails=False):
    """Highest load passing `goal` (and `bound`, a LatencyBound) and the
    lowest failing one (None/None). `max_load_fails`: a full-length trial
    at `max_load` already failed, so the search starts below it (short
    trials first all the same: a full-length one confirms what they pass)."""
    def passes(duration, load):
        return measure(duration, load, goal_loss_ratio=goal).passed(goal, bound)

    duration = search_duration
    if max_load_fails:
        lower, upper, verified = _bisect(passes, min_load, max_load, False, resolution, duration)
    elif passes(duration, max_load):
        lower, upper, verified = max_load, None, True
    else:
        lower, upper, verified = _bisect(passes, min_load, max_load, False, resolution, duration)
    while True:
        if not verified:
            if not passes(duration, lower):
                return None, lower      # even the minimum load fails
        if final_duration <= duration:
            return lower, upper         # search trials were already full length
        if passes(final_duration, lower):
            return lower, upper
        # the full-length trial failed: `lower` is an upper bound now, and
        # only full-length trials can be trusted from here on
        upper, duration = lower, final_duration
        if (upper - min_load) / upper <= resolution:
            return None, upper
        lower, upper, verified = _bisect(passes, min_load, upper, False, resolution, duration)


def find_bounded(measure, ndr, ndr_upper, bound, min_load, resolution, search_duration, final_duration):
    """The highest load without loss within `bound`, and the lowest seen
    failing it: the NDR when its last full-length trial kept the bound
    (the outcomes so far are `measure.outcomes`), else a search below it."""
    if ndr is None:
        return None, ndr_upper
    at_ndr = [o for o in measure.outcomes if o.load_fps == ndr and o.duration_s >= final_duration]
    if at_ndr and at_ndr[-1].passed(0.0, bound):
        return ndr, ndr_upper
    if (ndr - min_load) / ndr <= resolution:
        return None, ndr
    return find(measure, min_load, ndr, resolution, 0.0, search_duration, final_duration,
                bound=bound, max_load_fails=bool(at_ndr))


def search(measure, *, min_load, max_load, resolution, search_duration, final_duration,
           pdr_loss_ratio=None, latency_bound=None, **_ignored):
    """NDR (0 % loss), then the latency-bounded rate below it and the PDR
    with bisections of their own when asked."""
    counted = CountingMeasure(measure)
    ndr, ndr_upper = find(counted, min_load, max_load, resolution, 0.0, search_duration, final_duration)
    result = SearchResult("bisection", ndr_fps=ndr, ndr_upper_fps=ndr_upper, resolution=resolution)
    if latency_bound is not None:
        result.latency_bound = latency_bound
        result.bounded_fps, result.bounded_upper_fps = find_bounded(
            counted, ndr, ndr_upper, latency_bound, min_load, resolution, search_duration, final_duration)
    if pdr_loss_ratio:
        start = ndr if ndr is not None else min_load
        pdr, pdr_upper = find(counted, start, max_load, resolution, pdr_loss_ratio,
                              search_duration, final_duration)
        result.pdr_fps, result.pdr_upper_fps, result.pdr_loss_ratio = pdr, pdr_upper, pdr_loss_ratio
    return counted.fill(result)
