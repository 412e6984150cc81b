"""The published schema (docs/results.schema.json) against results.json files
the real writer produces over the simulated DUT: complete, interrupted,
resumed, with per-trial hooks; and it is strict enough to catch a typo."""
import copy
import dataclasses
import json

import pytest

from rfc2544.config import profiles
from rfc2544.sim import dut as simdut
from rfc2544.results.deviations import Deviation
from rfc2544.model import HookRun, LatencyStats, StreamCounts, TrialSpec
from rfc2544.results.file import Results, sections

from rfc2544 import catalog
from rfc2544.y1564.services import parse as parse_services

from helpers_run import profile, resume, sim_inventory, start
from schema_check import SCHEMA_PATH, schema_errors

ALL_TESTS = list(catalog.names())
# a Y.1564 service beside the RFC 2544 tests, policed below its CIR + EIR (sim/services.py)
SERVICES = parse_services({"services": [{"name": "video", "frame_size": 512, "vlan": 200, "cir_mbps": 5,
                                         "eir_mbps": 2, "colour_mode": "aware_dei",
                                         "sac": {"flr_pct": 0.1, "ftd_ms": 10, "fdv_ms": 5, "avail_pct": 99}}]})
SIM = dict(capacity_fps=50_000, buffer_frames=2000, recovery_s=0.3, reset_s=0.5, inventory=sim_inventory(),
           policers={("vlan", 200, 0): 6.0})


class HookedSim(simdut.SimDUT):
    """SimDUT whose trials carry the records of a pre and a post hook, one failing."""

    def run_trial(self, spec, progress=None):
        result = super().run_trial(spec, progress)
        result.hooks = [HookRun("dut", "pre", "nstat -n", 0),
                        HookRun("dut", "post", "nstat", None, "", "connection lost")]
        return result


def all_tests_profile():
    return profile(tests=ALL_TESTS, frame_sizes=[64, "imix"], link_mbps=100.0,
                   y1564_configuration={"step_s": 1, "cir_steps_pct": [50, 100]})


def run_to_end(directory, sim):
    runner, results = start(directory, sim, all_tests_profile(), dut_reset=sim.reset_dut, services=SERVICES)
    runner.run()
    return json.loads(results.path.read_text())


@pytest.fixture(scope="module")
def complete(tmp_path_factory):
    return run_to_end(tmp_path_factory.mktemp("complete") / "run", HookedSim(**SIM))


def test_a_complete_run_of_every_test_matches_the_schema(complete):
    assert complete["complete"] is True
    assert all(complete[s] for s in sections()), "every section has an entry"
    assert any(t["hooks"] for t in complete["trials"]) and any(t.get("samples") for t in complete["trials"])
    assert schema_errors(complete) == []


def test_an_interrupted_then_resumed_run_matches_the_schema(tmp_path):
    sim = simdut.SimDUT(**SIM, fail_at={25: KeyboardInterrupt()})
    runner, results = start(tmp_path / "run", sim, all_tests_profile(), dut_reset=sim.reset_dut, services=SERVICES)
    with pytest.raises(KeyboardInterrupt):
        runner.run()
    partial = json.loads(results.path.read_text())
    assert partial["complete"] is False and partial["interruptions"]
    assert schema_errors(partial) == []
    fresh = simdut.SimDUT(**SIM)
    runner, results = resume(tmp_path / "run", fresh, dut_reset=fresh.reset_dut)
    runner.run()
    resumed = json.loads(results.path.read_text())
    assert resumed["complete"] is True and len(resumed["interruptions"]) == 1
    assert schema_errors(resumed) == []


def test_a_skipped_step_and_a_superseded_trial_match_the_schema(tmp_path, complete):
    doc = copy.deepcopy(complete)
    doc["plan"][-1].update(state="skipped", note="the inventory gives no rfc2544_reset_cmd for the DUT")
    doc["trials"][0]["superseded"] = True
    assert schema_errors(doc) == []


@pytest.mark.parametrize("where, typo", [
    (("trials", 0), ("lost_frames", "lost_frame")),
    (("trials", 0, "spec"), ("load_fps", "load_fsp")),
    (("trials", 0, "hooks", 0), ("exit_status", "exitstatus")),
    (("throughput", 0), ("ndr_fps", "nrd_fps")),
    (("frame_loss", 0, "points", 0), ("loss_pct", "los_pct")),
    (("profile", "search"), ("resolution_pct", "resolution")),
    (("plan", 0), ("state", "status")),
    (("conditions",), ("generator", "generater")),
    ((), ("interruptions", "interuptions")),
])
def test_a_misspelled_key_is_an_error(complete, where, typo):
    doc = copy.deepcopy(complete)
    doc["conditions"] = {"generator": "simulated generator"}
    obj = doc
    for step in where:
        obj = obj[step]
    right, wrong = typo
    obj[wrong] = obj.pop(right)
    errors = schema_errors(doc)
    assert any(wrong in e for e in errors), errors


def test_a_wrong_type_or_value_is_an_error(complete):
    doc = copy.deepcopy(complete)
    doc["trials"][0]["verdict"] = "passed"
    doc["throughput"][0]["fps"] = "48000"
    assert len(schema_errors(doc)) == 2


def test_the_schema_names_every_field_of_the_model_and_the_profile():
    defs = json.loads(SCHEMA_PATH.read_text())["$defs"]
    for name, cls in (("trial_spec", TrialSpec), ("latency_stats", LatencyStats),
                      ("stream_counts", StreamCounts), ("hook_run", HookRun)):
        assert set(defs[name]["properties"]) == {f.name for f in dataclasses.fields(cls)}, name
    record = defs["deviation"]["anyOf"][0]
    assert set(record["properties"]) == {f.name for f in dataclasses.fields(Deviation)}
    prof = defs["profile"]["properties"]
    assert set(prof) == set(profiles.SCHEMA[None]) | {s for s in profiles.schema() if s}
    for section, fields in profiles.schema().items():
        if section:
            assert set(prof[section]["properties"]) == set(fields), section


def test_every_results_save_in_the_unit_tests_is_validated(tmp_path):
    p = profiles.load("quick")
    results = Results.create(tmp_path / "run", p, [], [], {})
    results.data["trials"].append({"id": 1, "bogus": True})
    with pytest.raises(AssertionError, match="bogus"):
        results.save()
