"""Throughput under a latency bound (issue 46 item 1): the goal's
classification, both searches against a simulated buffering DUT
(rfc2544.sim.dut: no network; its queue adds its delay to each frame's
latency), MLRsearch with both goals over one set of trials, the profile's
field and the results file's rows."""
import copy
import json
import math

import pytest

from rfc2544.config import profiles
from rfc2544.errors import BadInput
from rfc2544.procedures.measure import make_measure
from rfc2544.reports import compare as compare_mod
from rfc2544.reports.render import render_html
from rfc2544.results.load import load_results
from rfc2544.results.store import figures_of
from rfc2544.results.trend import series_title
from rfc2544.search import LatencyBound, Outcome, search
from rfc2544.search import mlr
from rfc2544.sim import dut as simdut

from helpers_run import profile, start
from schema_check import assert_valid

RES = 0.005
CAPACITY = 500_000.0


def outcome(loss_ratio=0.0, p999_us=None, aborted=False):
    lat = None if p999_us is None else {"median_ns": 10_000.0, "p99_ns": 20_000.0,
                                         "p999_ns": p999_us * 1000, "max_ns": p999_us * 2000}
    return Outcome(duration_s=10.0, load_fps=1000.0, loss_ratio=loss_ratio, aborted=aborted,
                   intended_frames=10_000, tx_frames=10_000,
                   rx_frames=round(10_000 * (1 - loss_ratio)), latency_ns=lat)


def test_a_trial_passes_the_bounded_goal_only_lossless_and_within_the_bound():
    bound = LatencyBound("99.9", 5000.0)
    lossless_over = outcome(p999_us=6000)
    assert lossless_over.passed(0.0) and not lossless_over.passed(0.0, bound)
    lossy_under = outcome(loss_ratio=0.001, p999_us=100)
    assert not lossy_under.passed(0.0) and not lossy_under.passed(0.0, bound)
    assert lossy_under.passed(0.005) and not lossy_under.passed(0.0, bound)
    assert outcome(p999_us=5000).passed(0.0, bound)            # at the bound is within it
    # no latency to judge: not shown within the bound, so not within it
    assert outcome().passed(0.0) and not outcome().passed(0.0, bound)
    assert not outcome(p999_us=1, aborted=True).passed(0.0, bound)
    # NaN compares false with the bound: it shows nothing, so it is not within it
    assert not outcome(p999_us=math.nan).passed(0.0, bound)
    # the percentile named is the one judged: max is 2 x p99.9 here
    assert not outcome(p999_us=3000).passed(0.0, LatencyBound("max", 5000.0))
    assert outcome(p999_us=3000).passed(0.0, LatencyBound("99", 21.0))


def test_the_bound_says_what_it_is():
    assert LatencyBound("99.9", 5000.0).text == "p99.9 latency <= 5000 us"
    assert LatencyBound("max", 30.0).text == "maximum latency <= 30 us"
    assert LatencyBound.from_profile({"percentile": "50", "us": 12.5}) == LatencyBound("50", 12.5)
    assert LatencyBound.from_profile(None) is None


def test_the_profile_field_is_validated_with_its_name():
    assert profiles.validate({}).model.search.latency_bound is None
    got = profiles.validate({"search": {"latency_bound": {"percentile": 99.9, "us": 5000}}})
    assert got.model.search.latency_bound == {"percentile": "99.9", "us": 5000.0}
    assert profiles.validate({"search": {"latency_bound": {"percentile": "max", "us": 30}}}) \
        .model.search.latency_bound["percentile"] == "max"
    for bad, words in [({"percentile": 95, "us": 10}, "percentile must be one of 50, 99, 99.9, max"),
                       ({"percentile": "99", "us": math.nan}, "us must be a number of microseconds"),
                       ({"percentile": "99", "us": -1}, "us must be"),
                       ({"percentile": "99", "us": True}, "us must be"),
                       ({"percentile": "99", "us": 10 ** 400}, "us must be"),          # not an OverflowError
                       ({"percentile": 10 ** 400, "us": 5}, "percentile must be one of"),
                       ({"percentile": 99.90000001, "us": 5}, "percentile must be one of"),
                       ({"percentile": "99"}, "must be a mapping"),
                       ({"percentile": "99", "us": 5, "p": 1}, "must be a mapping"),
                       ("5ms", "must be a mapping")]:
        with pytest.raises(BadInput) as exc:
            profiles.validate({"search": {"latency_bound": bad}}, "my.yml")
        assert str(exc.value).startswith("my.yml: search.latency_bound: ") and words in str(exc.value), exc.value


def buffering(buffer_frames):
    """A DUT forwarding CAPACITY with a FIFO of `buffer_frames` (0: none)."""
    return simdut.SimDUT(capacity_fps=CAPACITY, buffer_frames=buffer_frames, latency_ns=20_000.0)


def bounded_search(method, sim, bound, early_abort=False):
    measure = make_measure(sim.run_trial, 64, early_abort=early_abort, latency=True)
    return search(method, measure, min_load=10_000.0, max_load=1_000_000.0, resolution=RES,
                  search_duration=1.0, final_duration=10.0, latency_bound=bound)


@pytest.mark.parametrize("early_abort", [False, True])
@pytest.mark.parametrize("method", ["bisection", "mlr"])
def test_a_deep_queue_passes_the_ndr_above_capacity_but_not_the_bound(method, early_abort):
    # a FIFO of 1 s of frames: a 10 s trial at 1.09 x capacity loses nothing
    r = bounded_search(method, buffering(CAPACITY), LatencyBound("max", 5000.0), early_abort)
    assert r.ndr_fps > CAPACITY * 1.05, r.ndr_fps
    # 5 ms of queue over 10 s: at most 0.05 % above capacity, within one step of it
    assert CAPACITY * (1 - RES) * (1 - 1e-3) <= r.bounded_fps <= CAPACITY * 1.001, r.bounded_fps
    assert r.bounded_upper_fps is not None and r.bounded_upper_fps > r.bounded_fps
    assert r.latency_bound == LatencyBound("max", 5000.0)
    # the bounded rate's deciding trial kept the bound, a full-length one
    deciding = [o for o in r.outcomes if o.load_fps == r.bounded_fps and o.duration_s == 10.0]
    assert deciding and deciding[-1].passed(0.0, r.latency_bound)


@pytest.mark.parametrize("method", ["bisection", "mlr"])
def test_without_the_deep_queue_both_rates_agree_within_one_step(method):
    r = bounded_search(method, buffering(0), LatencyBound("99.9", 5000.0))
    assert r.ndr_fps == pytest.approx(r.bounded_fps, rel=RES)
    assert CAPACITY * (1 - RES) * (1 - 1e-3) <= r.bounded_fps <= CAPACITY * 1.001


def test_bisection_takes_the_ndr_when_its_own_trial_kept_the_bound():
    sim = buffering(0)
    plain = search("bisection", make_measure(sim.run_trial, 64, latency=True), min_load=10_000.0,
                   max_load=1_000_000.0, resolution=RES, search_duration=1.0, final_duration=10.0)
    bounded = bounded_search("bisection", buffering(0), LatencyBound("99.9", 5000.0))
    assert bounded.bounded_fps == bounded.ndr_fps == plain.ndr_fps
    assert bounded.trials == plain.trials          # not one trial more


def test_mlrsearch_finds_both_goals_over_one_set_of_trials():
    bound = LatencyBound("max", 5000.0)
    both = bounded_search("mlr", buffering(CAPACITY), bound)
    measure = make_measure(buffering(CAPACITY).run_trial, 64, latency=True)
    plain = search("mlr", measure, min_load=10_000.0, max_load=1_000_000.0, resolution=RES,
                   search_duration=1.0, final_duration=10.0)
    # one pass: the NDR is the same as without the bound, and the trials
    # that found it found the bounded rate too (fewer than two searches)
    assert both.ndr_fps == pytest.approx(plain.ndr_fps, rel=RES)
    assert both.trials < 2 * plain.trials
    over = [o for o in both.outcomes if o.tx_frames == o.rx_frames and bound.exceeded(o)]
    assert over, "no trial was lossless but over the bound: the test proves nothing"


def test_mlr_refuses_trials_too_large_for_its_encoding():
    measure = make_measure(buffering(0).run_trial, 64, latency=True)
    with pytest.raises(ValueError, match="1e11 frames"):
        search("mlr", measure, min_load=1e6, max_load=1.5e8, resolution=RES, search_duration=1.0,
               final_duration=1000.0, latency_bound=LatencyBound("max", 5.0))
    assert mlr.OVER_BOUND_COUNT * mlr.NDR_RATIO_WITH_BOUND > 1    # one frame in it is below the NDR ratio


@pytest.mark.parametrize("method", ["bisection", "mlr"])
def test_a_run_writes_both_rates_labelled_and_notes_the_queue(method, tmp_path):
    sim = buffering(CAPACITY)
    prof = profile(tests=["throughput"], frame_sizes=[64], trial_duration_s=10.0,
                   search={"method": method, "max_load_fps": 1_000_000.0, "initial_duration_s": 1.0,
                           "resolution_pct": 0.5, "pdr_loss_pct": None,
                           "latency_bound": {"percentile": "max", "us": 5000}})
    runner, results = start(tmp_path / "run", sim, prof)
    runner.run()
    data = json.loads(results.path.read_text())
    assert_valid(data, "latency bound run")
    row = data["throughput"][0]
    assert row["latency_bound"]["text"] == "maximum latency <= 5000 us"
    assert "extension of RFC 2544 and RFC 9971" in row["latency_bound"]["extension"]
    assert row["bounded_fps"] < row["ndr_fps"] == row["fps"]
    assert row["bounded_latency_ns"] <= 5e6 < row["ndr_latency_ns"]
    assert data["schema_minor"] >= 10
    codes = [d["code"] for d in data["deviations"]]
    assert "latency_bound_below_ndr" in codes and "latency_bound" in codes
    # every trial of the search recorded latency (the receiver's level that does)
    assert all(t["spec"]["latency"] and t["latency"] for t in data["trials"] if t["test"] == "throughput")


def test_a_run_without_the_bound_writes_no_bounded_fields(tmp_path):
    prof = profile(tests=["throughput"], frame_sizes=[64],
                   search={"max_load_fps": 1_000_000.0, "pdr_loss_pct": None})
    runner, results = start(tmp_path / "run", buffering(0), prof)
    runner.run()
    row = json.loads(results.path.read_text())["throughput"][0]
    assert not {k for k in row if k.startswith("bounded") or k.endswith("latency_ns")} and "latency_bound" not in row


@pytest.fixture(scope="module")
def bounded_run(tmp_path_factory):
    """A whole run against the buffering DUT, with a latency test at two
    loads (so the latency-versus-load figure is drawn)."""
    prof = profile(tests=["throughput", "latency"], frame_sizes=[64, 512], trial_duration_s=10.0,
                   latency={"loads_pct": [100, 50], "repetitions": 1, "duration_s": 1.0},
                   search={"method": "bisection", "max_load_fps": 1_000_000.0, "initial_duration_s": 1.0,
                           "resolution_pct": 0.5, "pdr_loss_pct": None,
                           "latency_bound": {"percentile": "99.9", "us": 5000}})
    runner, results = start(tmp_path_factory.mktemp("bounded") / "run", buffering(CAPACITY), prof)
    runner.run()
    return load_results(results.path)


def test_the_report_shows_both_rates_and_draws_the_bound(bounded_run):
    page = render_html(bounded_run)
    assert "Within the latency bound (frames/s)" in page and "p99.9 latency &lt;= 5000 us" in page
    assert "DUT queued to its NDR" in page and "extension of RFC 2544 and RFC 9971" in page
    row = bounded_run["throughput"][0]
    assert f"{row['bounded_fps']:,.0f}" in page and f"{row['fps']:,.0f}" in page
    assert "within the latency bound (p99.9 latency &lt;= 5000 us)" in page     # the throughput figure's legend
    assert "latency bound (p99.9 &lt;= 5000 µs)" in page                       # the latency figure's line


def test_compare_store_and_trend_follow_the_bounded_rate_per_bound(bounded_run):
    worse = copy.deepcopy(bounded_run)
    at_64 = next(r for r in worse["throughput"] if r["frame_size"] == 64)
    before = at_64["bounded_fps"]
    at_64["bounded_fps"] *= 0.8
    result = compare_mod.compare(bounded_run, worse, 5.0)
    rows = {r["frame_size"]: r for r in result["rows"]
            if r["metric"] == "throughput within p99.9 latency <= 5000 us (frames/s)"}
    assert {size: r["status"] for size, r in rows.items()} == {64: "regression", 512: "ok"}
    assert rows[64]["old"] == before
    # another bound is another figure: the old one is missing from the new run
    other = copy.deepcopy(bounded_run)
    for r in other["throughput"]:
        r["latency_bound"] = {**r["latency_bound"], "us": 50.0, "text": "p99.9 latency <= 50 us"}
    statuses = {(r["metric"], r["status"]) for r in compare_mod.compare(bounded_run, other, 5.0)["rows"]}
    assert ("throughput within p99.9 latency <= 5000 us (frames/s)", "missing") in statuses
    assert ("throughput within p99.9 latency <= 50 us (frames/s)", "new") in statuses
    figures = [f for f in figures_of(bounded_run) if f["metric"] == "bounded_fps"]
    assert {(f["test"], f["frame_size"]) for f in figures} == \
        {("throughput within p99.9 latency <= 5000 us", 64), ("throughput within p99.9 latency <= 5000 us", 512)}
    assert series_title({**figures[0], "dut": "d", "profile": "p"}).startswith(
        "throughput within p99.9 latency <= 5000 us (frames/s) 64 B")


def test_a_bound_judged_across_unsynchronised_clocks_is_named(tmp_path):
    prof = profile(tests=["throughput"], frame_sizes=[64],
                   search={"max_load_fps": 1_000_000.0, "pdr_loss_pct": None,
                           "latency_bound": {"percentile": "50", "us": 100}})
    runner, results = start(tmp_path / "run", buffering(0), prof)
    results.data["conditions"]["latency_clock"] = {"shared": False, "error_ns": None,
                                                   "text": "unbounded: clocks not synchronised"}
    runner.run()
    devs = {d["code"]: d["text"] for d in json.loads(results.path.read_text())["deviations"]}
    assert "unbounded: clocks not synchronised" in devs["latency_bound_clock"]


def test_mlr_with_a_bound_refuses_trials_too_long_for_it_by_name(tmp_path):
    prof = profile(tests=["throughput"], frame_sizes=[64], trial_duration_s=1000.0,
                   search={"method": "mlr", "max_load_fps": 1.5e8, "pdr_loss_pct": None,
                           "latency_bound": {"percentile": "max", "us": 5}})
    runner, results = start(tmp_path / "run", buffering(0), prof)
    runner.run()
    step = json.loads(results.path.read_text())["plan"][0]
    assert step["state"] == "skipped" and "fewer than 1e11 frames" in step["note"]
