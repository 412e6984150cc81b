"""Latency at several loads (issue 31 item 7): `latency.loads_pct`, each
load a plan step, a results row and a series in the report. Whole runs use
the simulated DUT (rfc2544.sim.dut: no network); its latency grows with
the load, as a queue's does."""
import json

import pytest

from rfc2544.cli.plan import plan_document, plan_text
from rfc2544.config import profiles
from rfc2544.errors import BadInput
from rfc2544.procedures.latency import MINIMAL_LOAD_FPS, load_at
from rfc2544.procedures.runner import build_plan
from rfc2544.reports import compare as compare_mod
from rfc2544.results.load import load_results
from rfc2544.reports.render import render_html
from rfc2544.reports.summary import latency_rows
from rfc2544.results.store import figures_of
from rfc2544.sim import dut as simdut

from helpers_run import profile, resume, start
from schema_check import assert_valid

LOADS = [100, 90, 50, 10, 0]


def test_the_default_is_latency_at_the_throughput_rate_as_before():
    prof = profile(tests=["throughput", "latency"], frame_sizes=[64])
    assert prof.model.latency.loads_pct == [100.0]
    latency = [s for s in build_plan(prof) if s["test"] == "latency"]
    assert latency == [{"unit": "latency/ipv4/64", "test": "latency", "frame_size": 64, "ip_version": 4,
                        "state": "pending"}]
    assert "latency_loads" not in [d.code for d in profiles.deviation_records(prof)]


@pytest.mark.parametrize("loads,message", [
    ([100, 120], "120 is not a load in % of the throughput"),
    ([-5], "-5 is not a load"),
    (["fifty"], "'fifty' is not a load"),
    ([True], "True is not a load"),
    ([], "must be a non-empty list of loads"),
    ([50, 50.0], "has duplicates"),
    ("all", "must be a non-empty list"),
])
def test_bad_loads_are_refused_with_the_field_named(loads, message):
    with pytest.raises(BadInput) as exc:
        profiles.validate({"latency": {"loads_pct": loads}}, "my.yml")
    assert str(exc.value).startswith("my.yml: latency.loads_pct: ") and message in str(exc.value)


def test_a_single_number_is_one_load():
    assert profiles.validate({"latency": {"loads_pct": 50}}).model.latency.loads_pct == [50.0]


def test_each_load_is_a_step_of_its_own_and_plan_shows_them():
    prof = profile(tests=["throughput", "latency"], frame_sizes=[64, 1518], latency={"loads_pct": LOADS})
    steps = [s for s in build_plan(prof) if s["test"] == "latency"]
    assert [(s["frame_size"], s.get("throughput_pct")) for s in steps] == \
        [(64, None), (64, 90.0), (64, 50.0), (64, 10.0), (64, 0.0),
         (1518, None), (1518, 90.0), (1518, 50.0), (1518, 10.0), (1518, 0.0)]
    assert len({s["unit"] for s in steps}) == len(steps)
    assert steps[0]["unit"] == "latency/ipv4/64" and steps[2]["unit"] == "latency/ipv4/64/50pct"
    text = plan_text(plan_document(prof))
    assert "latency.loads_pct" in text and "[100.0, 90.0, 50.0, 10.0, 0.0]" in text
    assert "1518  v4  (at 50 % of the throughput)" in text and "64  v4  (at a minimal load)" in text
    without_full = profile(tests=["throughput", "latency"], latency={"loads_pct": [50, 0]})
    dev = {d.code: d for d in profiles.deviation_records(without_full)}["latency_loads"]
    assert dev.section == "RFC 2544 26.2" and dev.used == "50 %, 0 %"


def test_the_load_is_a_fraction_of_the_throughput_and_0_a_minimal_load():
    assert load_at(400_000, 100) == 400_000 and load_at(400_000, 50) == 200_000
    # RFC 2544 26.2: at the throughput rate itself, to the bit (CI: an NDR of
    # 3676.9964919557397 fps came back as 3676.99649195574 through * 100 / 100)
    for ndr in (3676.9964919557397, 0.1 + 0.2, 1e6 / 3, 14_880_952.380952381):
        assert load_at(ndr, 100) == ndr
    assert load_at(400_000, 0) == MINIMAL_LOAD_FPS
    assert load_at(500, 0) == 500                       # never above the throughput


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    sim = simdut.SimDUT(capacity_fps=400_000, buffer_frames=200)
    prof = profile(tests=["throughput", "latency"], frame_sizes=[64, 1518], link_mbps=1000.0,
                   latency={"loads_pct": LOADS, "repetitions": 2},
                   search={"max_load_fps": 600_000.0, "method": "bisection", "pdr_loss_pct": None})
    runner, results = start(tmp_path_factory.mktemp("loads") / "run", sim, prof)
    runner.run()
    return results


def test_each_load_is_its_own_row_at_its_load(run):
    data = run.data
    ndr = {r["frame_size"]: r["ndr_fps"] for r in data["throughput"]}
    rows = [(r["frame_size"], r["throughput_pct"]) for r in data["latency"]]
    assert sorted(rows) == sorted((size, float(x)) for size in (64, 1518) for x in LOADS)
    for r in data["latency"]:
        assert r["load_fps"] == pytest.approx(load_at(ndr[r["frame_size"]], r["throughput_pct"]))
        trials = [t for t in data["trials"] if t["unit"] == r["unit"]]
        assert len(trials) == 2 and all(t["load_fps"] == pytest.approx(r["load_fps"]) for t in trials)
    at = {r["throughput_pct"]: r for r in data["latency"] if r["frame_size"] == 64}
    # the simulated DUT queues more near its capacity: the loads are really different trials
    assert at[0.0]["median_ns"] < at[50.0]["median_ns"] < at[100.0]["median_ns"]
    assert data["schema_minor"] >= 1
    # a module-scoped run is saved before conftest's per-test schema check is in place: check here
    assert_valid(json.loads(run.path.read_text()), "latency loads run")


def test_a_resumed_run_keeps_every_load(run, tmp_path):
    """Interrupted in the latency steps, resumed: the same rows as the uninterrupted run."""
    sim = simdut.SimDUT(capacity_fps=400_000, buffer_frames=200, fail_at={})
    prof = profiles.validate(run.data["profile"], "again")
    trials_before_latency = sum(1 for t in run.data["trials"] if t["test"] != "latency")
    sim.fail_at[trials_before_latency + 5] = KeyboardInterrupt()
    runner, results = start(tmp_path / "run", sim, prof)
    with pytest.raises(KeyboardInterrupt):
        runner.run()
    runner2, results2 = resume(tmp_path / "run", simdut.SimDUT(capacity_fps=400_000, buffer_frames=200))
    runner2.run()
    key = lambda d: sorted((r["unit"], round(r["load_fps"])) for r in d["latency"])   # noqa: E731
    assert key(results2.data) == key(run.data)


def test_the_report_shows_a_row_and_a_series_per_load(run):
    data = load_results(run.path)
    rows = latency_rows(data)
    assert [r["label"] for r in rows[:5]] == ["64 B", "64 B at 90 % of throughput", "64 B at 50 % of throughput",
                                              "64 B at 10 % of throughput", "64 B at a minimal load"]
    assert {r["series"] for r in rows} == {"64 B", "1518 B"}
    page = render_html(data)
    assert 'id="fig-latency-title"' in page and "64 B, median" in page and "1518 B, 99.9th percentile" in page
    assert "measured at 100 %, 90 %, 50 %, 10 %, a minimal load of the throughput" in page


def test_compare_and_trend_follow_the_latency_at_the_throughput_rate(run):
    data = load_results(run.path)
    result = compare_mod.compare(data, data, 5.0)
    latency = [r for r in result["rows"] if r["metric"] == "latency median (µs)"]
    full = {r["frame_size"]: r["median_ns"] for r in data["latency"] if r["throughput_pct"] == 100}
    assert {r["frame_size"]: r["old"] for r in latency} == full
    figures = [f for f in figures_of(data) if f["test"] == "latency" and f["metric"] == "median_ns"]
    assert sorted((f["frame_size"], f["value"]) for f in figures) == sorted(full.items())
