"""Deviations as records {code, section, asked, used, text}: written by the
profile check and the procedures, matched by code in the report, while
sentence-only deviations of older files still load and still match."""
import json

from rfc2544.config import profiles
from rfc2544.sim import dut as simdut
from rfc2544.results.deviations import Deviation
from rfc2544.reports import checks
from rfc2544.results.load import load_results

from helpers_run import profile, start


def test_the_profile_records_say_what_was_asked_and_used_with_the_same_sentences():
    p = profiles.load("quick")
    records = profiles.deviation_records(p)
    assert [r.text for r in records] == profiles.deviations(p)
    final = next(r for r in records if r.code == "final_trial")
    assert (final.section, final.asked, final.used) == ("RFC 2544 24", "60 s", "2 s")
    assert profiles.deviation_records(profiles.load("rfc2544")) == []


def test_a_run_writes_records_and_notes_found_while_running(tmp_path):
    sim = simdut.SimDUT(capacity_fps=50_000, tester_ceiling_fps=40_000)
    runner, results = start(tmp_path / "run", sim, profile(tests=["throughput"], frame_sizes=[64]))
    runner.run()
    written = json.loads(results.path.read_text())["deviations"]
    assert all(set(d) == {"code", "section", "asked", "used", "text"} for d in written)
    codes = [d["code"] for d in written]
    assert "final_trial" in codes and "max_load_ceiling" in codes
    assert len(codes) == len({d["text"] for d in written}), "each deviation once"


def found(topic):
    return [(topic, f"the report's own sentence for {topic}")]


def test_the_report_matches_a_declared_record_by_code_not_by_wording():
    declared = [Deviation("final_trial", "RFC 2544 24", "60 s", "2 s", "trials were short").to_dict()]
    assert checks.undeclared(found("final_trial"), declared) == []
    assert checks.undeclared(found("latency_repetitions"), declared) == [found("latency_repetitions")[0][1]]


def test_a_sentence_only_deviation_of_an_older_file_still_covers_its_topic():
    declared = ["trial duration 2 s is shorter than the 60 s of RFC 2544 section 24"]
    assert checks.undeclared(found("final_trial"), declared) == []
    assert checks.undeclared(found("b2b_trials"), declared) == [found("b2b_trials")[0][1]]


def test_the_report_loads_records_and_sentences(tmp_path):
    sim = simdut.SimDUT(capacity_fps=50_000)
    runner, results = start(tmp_path / "run", sim, profile(tests=["throughput"], frame_sizes=[64]))
    runner.run()
    data = json.loads(results.path.read_text())
    data["deviations"].append("a sentence from an older writer")
    path = tmp_path / "mixed.json"
    path.write_text(json.dumps(data))
    loaded = load_results(path)
    assert loaded["deviations"][-1] == "a sentence from an older writer"
    assert loaded["deviations"][0]["code"] == "final_trial"
