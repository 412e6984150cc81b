"""Classic RFC 2544 throughput search: binary search on the offered load.

Short search trials narrow [lower, upper] until (upper - lower) / upper is
within the resolution; the lower bound is then confirmed with one
full-length trial (RFC 2544 section 24: the final determination uses
full-length trials). A failed confirmation makes it the new upper bound and
the search goes on below it with full-length trials only: short trials have
just shown they pass loads a full trial does not (a buffer or a policer's
burst absorbs a short overload). A tester-limited trial never counts as a pass.
"""
from rfc2544.search.outcome import CountingMeasure, SearchResult


def _bisect(measure, lower, upper, verified, resolution, goal, duration):
    """Narrow (lower, upper]; `verified` says whether `lower` passed already."""
    while (upper - lower) / upper > resolution:
        load = (lower + upper) / 2
        if measure(duration, load, goal_loss_ratio=goal).passed(goal):
            lower, verified = load, True
        else:
            upper = load
    return lower, upper, verified


def find(measure, min_load, max_load, resolution, goal, search_duration, final_duration):
    """Highest load passing `goal` and the lowest failing one (None/None)."""
    duration = search_duration
    first = measure(duration, max_load, goal_loss_ratio=goal)
    if first.passed(goal):
        lower, upper, verified = max_load, None, True
    else:
        lower, upper, verified = _bisect(measure, min_load, max_load, False, resolution, goal, duration)
    while True:
        if not verified:
            if not measure(duration, lower, goal_loss_ratio=goal).passed(goal):
                return None, lower      # even the minimum load fails
        if final_duration <= duration:
            return lower, upper         # search trials were already full length
        if measure(final_duration, lower, goal_loss_ratio=goal).passed(goal):
            return lower, upper
        # the full-length trial failed: `lower` is an upper bound now, and
        # only full-length trials can be trusted from here on
        upper, duration = lower, final_duration
        if (upper - min_load) / upper <= resolution:
            return None, upper
        lower, upper, verified = _bisect(measure, min_load, upper, False, resolution, goal, duration)


def search(measure, *, min_load, max_load, resolution, search_duration, final_duration,
           pdr_loss_ratio=None, **_ignored):
    """NDR (0 % loss), then the PDR with a second bisection when asked."""
    counted = CountingMeasure(measure)
    ndr, ndr_upper = find(counted, min_load, max_load, resolution, 0.0, search_duration, final_duration)
    result = SearchResult("bisection", ndr_fps=ndr, ndr_upper_fps=ndr_upper, resolution=resolution)
    if pdr_loss_ratio:
        start = ndr if ndr is not None else min_load
        pdr, pdr_upper = find(counted, start, max_load, resolution, pdr_loss_ratio,
                              search_duration, final_duration)
        result.pdr_fps, result.pdr_upper_fps, result.pdr_loss_ratio = pdr, pdr_upper, pdr_loss_ratio
    return counted.fill(result)
