"""Shared by the runner/procedure unit tests: a run against the simulated
DUT (rfc2544.sim.dut) with a profile built from overrides."""
import copy

from rfc2544.config import profiles
from rfc2544.cli.display import Display
from rfc2544.results.file import Results
from rfc2544.procedures.runner import Runner, build_plan


def profile(**over):
    raw = copy.deepcopy(dict(profiles.load("quick")))
    for key, value in over.items():
        if isinstance(value, dict):
            raw[key] = {**raw[key], **value}
        else:
            raw[key] = value
    return profiles.validate(raw, "test")


def start(directory, sim, prof, **kw):
    results = Results.create(directory, prof, build_plan(prof), profiles.deviation_records(prof), {})
    return Runner(sim, prof, results, Display(quiet=True), **kw), results


def resume(directory, sim, **kw):
    results = Results.load(directory)
    prof = profiles.validate(results.data["profile"], "resume")
    return Runner(sim, prof, results, Display(quiet=True), **kw), results
