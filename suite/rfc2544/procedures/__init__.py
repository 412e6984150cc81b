"""The RFC 2544 tests (section 26), one module each.

Every procedure is `run(ctx, frame_size, ipv6) -> dict` (its summary entry
for the results file) and sees only the runner's context (`ctx`): trials
through `ctx.run_trial(spec)` or a search's `ctx.measure(...)`, the profile,
throughput results of earlier steps. `Skip` says why a step cannot run.
"""
from rfc2544 import catalog


class Skip(Exception):
    """The step cannot run here (the reason goes into the results)."""


def procedure(test):
    """The run() of test `test`'s module (catalog.py names it)."""
    return catalog.resolve(catalog.entry(test).procedure).run


def trial_overhead_s(m):
    """Seconds a trial takes beyond its traffic (waits and control round
    trips) under the profile model `m`: the time estimates' unit."""
    w = m.waits
    return w.learning_s + w.residual_s + w.settle_s + 1.0


def needs_throughput(ctx, frame_size, ipv6):
    entry = ctx.throughput(frame_size, ipv6)
    if entry is None or not entry.get("ndr_fps"):
        raise Skip("needs a throughput (NDR) result for this frame size, and there is none")
    return entry
