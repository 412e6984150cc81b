"""Typed records of results.json (rfc2544.results.records, summaries, profile_model):
the writer goes through them and they give back the same JSON."""
import json

import pytest

from rfc2544.config import profiles
from rfc2544.sim import dut as simdut
from rfc2544.errors import BadInput
from rfc2544.config.profile_model import ProfileModel
from rfc2544.results.records import ResultsDocument, TrialRecord
from rfc2544.results.file import Results

from helpers_run import profile, start
from test_results_schema import SIM, HookedSim, run_to_end


def test_a_real_results_file_round_trips_through_the_records_unchanged(tmp_path):
    doc = run_to_end(tmp_path / "run", HookedSim(**SIM))
    typed = ResultsDocument.from_dict(doc)
    assert typed.sections["reset"][0].reset_time_s > 0
    assert typed.trials[0].spec.frame_size == 64 and typed.trials[-1].hooks[1].exit_status is None
    # same keys, same order: files written before and after compare equal
    assert json.dumps(typed.to_dict()) == json.dumps(doc)


def test_a_recorded_trial_replays_as_the_trial_it_was(tmp_path):
    sim = simdut.SimDUT(**SIM)
    runner, results = start(tmp_path / "run", sim, profile(tests=["throughput"], frame_sizes=[64]))
    runner.run()
    record = results.data["trials"][2]
    assert TrialRecord.from_dict(record).to_dict() == record
    assert results.recorded_trials(record["unit"])[2].tx_frames == record["tx_frames"]


def test_a_summary_with_an_unknown_key_is_refused_where_it_is_written(tmp_path):
    p = profiles.load("quick")
    results = Results.create(tmp_path / "run", p, [], [], {})
    with pytest.raises(TypeError, match="nrd_fps"):
        results.set_summary("throughput", "throughput/ipv4/64", {"frame_size": 64, "nrd_fps": 1.0})


def test_a_broken_trial_record_is_one_line_naming_the_file_on_resume(tmp_path):
    sim = simdut.SimDUT(**SIM)
    runner, results = start(tmp_path / "run", sim, profile(tests=["throughput"], frame_sizes=[64]))
    runner.run()
    del results.data["trials"][0]["spec"]["load_fps"]
    with pytest.raises(BadInput, match=r"results\.json: a recorded trial of throughput/ipv4/64"):
        results.recorded_trials("throughput/ipv4/64")


@pytest.mark.parametrize("name", profiles.builtin_names())
def test_every_builtin_profile_has_a_typed_view_with_the_same_values(name):
    p = profiles.load(name)
    assert p.model.to_dict() == dict(p)
    assert p.model.search.method == p["search"]["method"]
    assert p.model.latency.repetitions == p["latency"]["repetitions"]


def test_the_typed_profile_refuses_a_field_it_does_not_know():
    raw = dict(profiles.load("quick"))
    raw["search"] = dict(raw["search"], trial_s=1.0)
    with pytest.raises(TypeError, match="trial_s"):
        ProfileModel.from_dict(raw)
