"""Results file: atomic writes, validation on load, replay records, CSV."""
import json
import os

import pytest

from rfc2544.config import profiles
from rfc2544.sim import dut as simdut
from rfc2544.errors import BadInput
from rfc2544.model import TrialSpec
from rfc2544.results.file import Results, trial_from_record
from rfc2544.procedures.runner import build_plan


def new(tmp_path):
    p = profiles.load("quick")
    return Results.create(tmp_path / "run", p, build_plan(p), profiles.deviations(p), {"generator": "sim"})


def a_trial(load=1000.0, latency=False):
    sim = simdut.SimDUT(capacity_fps=1500)
    return sim.run_trial(TrialSpec(frame_size=64, load_fps=load, duration_s=1.0, latency=latency))


def test_create_writes_an_incomplete_file(tmp_path):
    r = new(tmp_path)
    data = json.loads(r.path.read_text())
    assert data["schema"] == "rfc2544-results" and data["schema_version"] == 2
    assert data["complete"] is False and data["finished"] is None
    assert data["plan"][0]["unit"] == "throughput/ipv4/64"
    assert data["deviations"]


def test_refuses_to_overwrite(tmp_path):
    new(tmp_path)
    with pytest.raises(BadInput, match="--resume"):
        new(tmp_path)


def test_every_trial_is_on_disk_and_round_trips(tmp_path):
    r = new(tmp_path)
    t = a_trial(latency=True)
    r.add_trial("throughput/ipv4/64", t)
    on_disk = Results.load(r.dir)
    rec = on_disk.data["trials"][0]
    assert rec["verdict"] == "pass" and rec["unit"] == "throughput/ipv4/64"
    back = trial_from_record(rec)
    assert back == t
    assert on_disk.recorded_trials("throughput/ipv4/64") == [t]


def test_atomic_write_keeps_the_old_file_on_failure(tmp_path, monkeypatch):
    r = new(tmp_path)
    r.add_trial("throughput/ipv4/64", a_trial())
    before = r.path.read_bytes()

    def broken_dump(obj, f, **kw):
        f.write('{"schema": "rfc2544-results", "trials": [')     # half a file...
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(json, "dump", broken_dump)
    with pytest.raises(OSError):
        r.add_trial("throughput/ipv4/64", a_trial(2000.0))
    monkeypatch.undo()
    assert r.path.read_bytes() == before            # the previous complete file survives
    assert [f for f in os.listdir(r.dir) if f.endswith(".tmp")] == []
    assert len(Results.load(r.dir).data["trials"]) == 1


def test_partial_and_complete(tmp_path):
    r = new(tmp_path)
    r.set_unit_state("throughput/ipv4/64", "done")
    loaded = Results.load(r.dir)
    assert not loaded.complete
    assert loaded.unit_state("throughput/ipv4/64") == "done"
    assert loaded.unit_state("throughput/ipv4/1518") == "pending"
    loaded.mark_complete()
    again = Results.load(r.dir)
    assert again.complete and again.data["finished"]


@pytest.mark.parametrize("content,message", [
    ("{not json", "invalid JSON"),
    ('{"schema": "something-else"}', "not an rfc2544 results file"),
    ('{"schema": "rfc2544-results", "schema_version": 99}', "schema version 99"),
])
def test_bad_files_are_rejected_in_one_line(tmp_path, content, message):
    (tmp_path / "results.json").write_text(content)
    with pytest.raises(BadInput, match=message) as exc:
        Results.load(tmp_path)
    assert "\n" not in str(exc.value)


def test_supersede_stops_replay(tmp_path):
    r = new(tmp_path)
    for load in (1000.0, 2000.0, 3000.0):
        r.add_trial("u", a_trial(load))
    r.supersede_from("u", 1)
    assert [t.spec.load_fps for t in Results.load(r.dir).recorded_trials("u")] == [1000.0]


def throughput_entry(**figures):
    """A whole throughput summary (the writer stores nothing less)."""
    from rfc2544.results.summaries import ThroughputSummary
    keys = [f for f in ThroughputSummary.__dataclass_fields__ if f not in ("ip_version", "unit")]
    return {**dict.fromkeys(keys), "frame_size": 64, "fps": 0.0, **figures}


def test_csv_export(tmp_path):
    import pandas as pd
    r = new(tmp_path)
    r.add_trial("throughput/ipv4/64", a_trial(1000.0))
    r.add_trial("throughput/ipv4/64", a_trial(2000.0))
    r.set_summary("throughput", "throughput/ipv4/64", throughput_entry(ndr_fps=1500.0))
    written = r.to_csv()
    trials = pd.read_csv(written[0])
    assert list(trials["load_fps"]) == [1000.0, 2000.0]
    assert list(trials["verdict"]) == ["pass", "fail"]
    assert pd.read_csv(written[1])["ndr_fps"][0] == 1500.0


def test_the_file_gets_the_mode_of_a_new_file_on_every_save(tmp_path):
    """mkstemp's 0600 made results.json unreadable to the group where the
    reports beside it were 0644 (and --resume rewrote it so)."""
    old = os.umask(0o022)
    try:
        r = new(tmp_path)
        assert os.stat(r.path).st_mode & 0o777 == 0o644
        r.add_trial("throughput/ipv4/64", a_trial())
        r.save()
        assert os.stat(Results.load(r.dir).path).st_mode & 0o777 == 0o644
    finally:
        os.umask(old)
