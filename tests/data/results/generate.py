#!/usr/bin/env python3
"""Write the known results files the report, compare and load tests read.

    python tests/data/results/generate.py     # rewrites the *.json beside it (rfc2544 installed, e.g. -e .)

SIMULATED, by the suite's own code path: profile.yml loaded by
rfc2544.config.profiles, rfc2544.procedures.runner.Runner and rfc2544.results.file.Results writing
results.json, against rfc2544.sim.dut.SimDUT (no network). What a real run
takes from the clock or the hosts is pinned (a simulated clock from START,
made-up host facts, a fixed inventory path), so the output is reproducible;
only tool.version follows the installed suite.

- complete.json          every planned test finished
- partial.json           the same run interrupted (Ctrl-C) during throughput at 1518 B
- corrupt.json           BROKEN on purpose: complete.json truncated mid-file
- unknown-version.json   BROKEN on purpose: complete.json claiming schema_version 99
"""
import json
import math
import sys
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace

from rfc2544.engine import assemble
from rfc2544.config import profiles
from rfc2544.results import file as results_mod
from rfc2544.cli.display import Display
from rfc2544.results.file import Results
from rfc2544.procedures.runner import Runner, build_plan
from rfc2544.sim.dut import SimDUT

HERE = Path(__file__).resolve().parent
PROFILE = HERE / "profile.yml"
START = datetime(2026, 11, 21, 23, 50, 0, tzinfo=timezone.utc)    # the run passes midnight
LINK_MBPS = 1000
# The simulated DUT forwards 600,000 frames/s of 64 B and anything the tester
# sends of larger frames; the tester cannot send more than 830,000 frames/s
# (below 1 GbE line rate at 64 and 128 B), so 128 B is tester-bound.
DUT_CAPACITY_FPS = {64: 600_000.0}
TESTER_CEILING_FPS = 830_000.0
DUT_BUFFER_FRAMES = 2_000
SIM = dict(buffer_frames=DUT_BUFFER_FRAMES, tester_ceiling_fps=TESTER_CEILING_FPS, recovery_s=1.5,
           reset_s=4.0, latency_ns=14_000.0, seed=2544)
INTERRUPT_AT_TRIAL = 27         # partial.json: Ctrl-C during this trial (throughput at 1518 B)
INVENTORY = "inventory/lab.yml"
HOSTS = {   # made-up facts of the two hosts, as the tester's conditions() would gather them
    "tester": {"role": "tester", "kernel": "6.1.0-50-amd64", "cpu": "Intel(R) Xeon(R) E-2236 CPU @ 3.40GHz",
               "module_version": "rfc2544_pktgen 0.1.0",
               "tuning": {"cpu_governor": "performance", "irqbalance": "stopped", "gro": "off"},
               "nics": [{"name": "tx0", "driver": "igb", "firmware": "1.63, 0x800009fa", "speed_mbps": 1000},
                        {"name": "rx0", "driver": "igb", "firmware": "1.63, 0x800009fa", "speed_mbps": 1000}]},
    "dut": {"role": "dut", "kernel": "6.1.0-50-amd64", "cpu": "Intel(R) Atom(TM) C3558 CPU @ 2.20GHz",
            "tuning": {"ip_forward": 1, "rp_filter": 0},
            "nics": [{"name": "dut0", "driver": "igb", "firmware": "1.63, 0x800009fa", "speed_mbps": 1000}]},
}


class SimClock:
    """Simulated wall time: moves only when a trial (with its waits) is over."""

    def __init__(self, start=START):
        self.t = start

    def now(self):
        return self.t

    def iso(self):
        return self.t.strftime("%Y-%m-%dT%H:%M:%SZ")

    def advance(self, seconds):
        self.t += timedelta(seconds=seconds)


class FixtureDUT(SimDUT):
    """SimDUT with a per-frame-size capacity, pinned host facts and a clock
    that each trial advances by its traffic time plus the profile's waits."""

    def __init__(self, clock, waits_s, **kw):
        super().__init__(clock=clock.now, **SIM, **kw)
        self.sim_clock = clock
        self.waits_s = waits_s

    def conditions(self):
        return {"hosts": HOSTS}

    def run_trial(self, spec, progress=None):
        self.capacity_fps = DUT_CAPACITY_FPS.get(spec.frame_size, math.inf)
        try:
            return super().run_trial(spec, progress)
        finally:
            self.sim_clock.advance(spec.duration_s + self.waits_s)


def simulated_run(directory, fail_at=None):
    """Run profile.yml against the simulated DUT into `directory`; the data."""
    profile = profiles.load(str(PROFILE))
    clock = SimClock()
    w = profile.model.waits
    dut = FixtureDUT(clock, w.learning_s + w.residual_s + w.settle_s, fail_at=fail_at)
    calibration = {str(size): TESTER_CEILING_FPS for size in profile["frame_sizes"]}
    inventory = SimpleNamespace(path=INVENTORY, streams=[
        SimpleNamespace(tx_host="tester", tx_port="tx0", rx_host="tester", rx_port="rx0")])
    conditions = assemble.conditions_for(dut, inventory, profile, LINK_MBPS, calibration)
    conditions["inventory"] = INVENTORY       # conditions_for makes it absolute: host dependent
    real_now = results_mod.now_iso
    results_mod.now_iso = clock.iso           # Results stamps started/finished/interruptions
    try:
        results = Results.create(directory, profile, build_plan(profile), profiles.deviation_records(profile),
                                 conditions)
        runner = Runner(dut, profile, results, Display(quiet=True), link_mbps=LINK_MBPS,
                        calibration=calibration, dut_reset=dut.reset_dut)
        try:
            runner.run()
        except KeyboardInterrupt:
            if not fail_at:
                raise
    finally:
        results_mod.now_iso = real_now
    return json.loads((Path(directory) / results_mod.FILENAME).read_text())


def documents():
    """file name -> text, for every file this script writes."""
    with tempfile.TemporaryDirectory() as tmp:
        complete = simulated_run(Path(tmp) / "complete")
        partial = simulated_run(Path(tmp) / "partial", fail_at={INTERRUPT_AT_TRIAL: KeyboardInterrupt()})
    text = json.dumps(complete, indent=1) + "\n"
    future = dict(complete, schema_version=99)
    return {"complete.json": text, "partial.json": json.dumps(partial, indent=1) + "\n",
            "corrupt.json": text[: len(text) * 2 // 5],
            "unknown-version.json": json.dumps(future, indent=1) + "\n"}


def main():
    for name, text in documents().items():
        (HERE / name).write_text(text)
        print(HERE / name)


if __name__ == "__main__":
    sys.exit(main())
