"""The RFC 2544 tests (section 26), one module each.

Every procedure is `run(ctx, frame_size, ipv6) -> dict` (its summary entry
for the results file) and sees only the runner's context (`ctx`): trials
through `ctx.run_trial(spec)` or a search's `ctx.measure(...)`, the profile,
throughput results of earlier steps. `Skip` says why a step cannot run.
"""
import importlib

# results section / test name -> module
MODULES = {
    "throughput": "rfc2544.procedures.throughput",
    "latency": "rfc2544.procedures.latency",
    "frame_loss": "rfc2544.procedures.frame_loss",
    "back_to_back": "rfc2544.procedures.back_to_back",
    "bursty": "rfc2544.procedures.bursty",
    "system_recovery": "rfc2544.procedures.recovery",
    "reset": "rfc2544.procedures.reset",
}
NEEDS_THROUGHPUT = ("latency", "back_to_back", "system_recovery", "reset")


class Skip(Exception):
    """The step cannot run here (the reason goes into the results)."""


def procedure(test):
    return importlib.import_module(MODULES[test]).run


def needs_throughput(ctx, frame_size, ipv6):
    entry = ctx.throughput(frame_size, ipv6)
    if entry is None or not entry.get("ndr_fps"):
        raise Skip("needs a throughput (NDR) result for this frame size, and there is none")
    return entry
