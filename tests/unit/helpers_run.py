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


def start(directory, sim, prof, services=None, **kw):
    """A runner of `prof` against `sim`; `services`: Y.1564 services (a
    y1564 test's; parsed, y1564/services.py), kept in the results as a run keeps them."""
    from rfc2544.y1564.services import to_record
    results = Results.create(directory, prof, build_plan(prof, services=services or ()),
                             profiles.deviation_records(prof), {},
                             services=[to_record(s) for s in services] if services else None)
    return Runner(sim, prof, results, Display(quiet=True), **kw), results


def sim_inventory(speed_mbps=1000):
    """A tester with a tx and an rx port and one stream between them, as
    the simulated DUT's Y.1564 streams ride on (no host is reached)."""
    from pathlib import Path
    from rfc2544.config.inventory import Host, Inventory, Port, Stream
    ports = {"tx0": Port("tx0", "tx", "02:00:00:00:00:01", "198.18.0.1/24", peer_mac="02:00:00:00:01:01",
                         speed_mbps=speed_mbps),
             "rx0": Port("rx0", "rx", "02:00:00:00:00:02", "198.19.0.1/24", peer_mac="02:00:00:00:01:02",
                         speed_mbps=speed_mbps)}
    tester = Host("sim", "testers", "127.0.0.1", ports=ports)
    return Inventory(Path("sim-inventory.yml"), {"sim": tester}, [Stream("sim", "tx0", "sim", "rx0")], {})


def resume(directory, sim, **kw):
    results = Results.load(directory)
    prof = profiles.validate(results.data["profile"], "resume")
    return Runner(sim, prof, results, Display(quiet=True), **kw), results
