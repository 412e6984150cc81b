"""Rate searches for the throughput test (RFC 2544 26.1, RFC 9971).

A search sees only `measure(duration_s, load_fps, goal_loss_ratio=None) ->
Outcome`: it knows nothing about testers, SSH or the results file. The goal
is passed so that the measuring side may stop a trial early once its loss
provably breaks that goal (early abort). A search given a `latency_bound`
(search.outcome.LatencyBound) also finds the highest load that passes
without loss and within the bound: a goal of its own, beside the NDR.
"""
from rfc2544.search.outcome import CountingMeasure, LatencyBound, Outcome, SearchResult  # noqa: F401 (the API)


def search(method, measure, **kwargs):
    """Dispatch to `bisection.search` or `mlr.search`."""
    if method == "bisection":
        from rfc2544.search.bisection import search as run
    elif method == "mlr":
        from rfc2544.search.mlr import search as run
    else:
        raise ValueError(f"unknown search method {method!r}")
    return run(measure, **kwargs)
