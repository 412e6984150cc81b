"""The figures a report shows: derived values, completeness, RFC checks, formatting.
The known files are a simulated run (tests/data/results/generate.py): expected
figures come from the simulated DUT's capacity and the files' own records."""
import copy

import pytest

from rfc2544.reports import checks, fmt, summary
from rfc2544.results.load import load_results

from known_results import DATA, gen, planned_sizes


@pytest.fixture(scope="module")
def complete():
    return load_results(DATA / "complete.json")


@pytest.fixture(scope="module")
def partial():
    return load_results(DATA / "partial.json")


def test_theoretical_maximum_matches_rfc_figures():
    # RFC 2544 appendix / methodology: 14,880,952 fps at 64 B on 10 GbE; 1,488,095 on 1 GbE.
    assert summary.link_max_fps(64, 10000) == pytest.approx(14_880_952.4, abs=0.1)
    assert summary.link_max_fps(1518, 1000) == pytest.approx(81_274.4, abs=0.1)
    assert summary.link_max_fps(0, 1000) is None        # IMIX: no single frame size
    assert summary.link_max_fps(64, None) is None


def test_throughput_rows_of_the_known_file(complete):
    rows = {r["frame_size"]: r for r in summary.throughput_rows(complete)}
    r64 = rows[64]
    capacity = gen.DUT_CAPACITY_FPS[64]
    resolution = complete["profile"]["search"]["resolution_pct"] / 100
    # the search lands within its resolution (of the maximum load) below the DUT's capacity
    assert capacity - gen.TESTER_CEILING_FPS * resolution <= r64["fps"] <= capacity
    assert r64["mbps"] == pytest.approx(r64["fps"] * 64 * 8 / 1e6)
    assert r64["pct_of_max"] == pytest.approx(r64["fps"] / summary.link_max_fps(64, gen.LINK_MBPS) * 100)
    # 128 B: the DUT forwards more than the tester can send
    assert rows[128]["fps"] == pytest.approx(gen.TESTER_CEILING_FPS)
    assert rows[128]["tester_bound"] is True and rows[64]["tester_bound"] is False
    assert rows[1518]["pct_of_max"] == pytest.approx(100.0)


def test_percent_of_max_is_recomputed_not_trusted(complete):
    # A writer storing a ratio (0.55) instead of a percentage must not change the report.
    data = copy.deepcopy(complete)
    for t in data["throughput"]:
        t["pct_of_max"] = t["pct_of_max"] / 100
        del t["mbps"], t["line_mbps"]
    rows = {r["frame_size"]: r for r in summary.throughput_rows(data)}
    fps = complete["throughput"][0]["fps"]
    assert complete["throughput"][0]["frame_size"] == 64
    assert rows[64]["pct_of_max"] == pytest.approx(fps / summary.link_max_fps(64, gen.LINK_MBPS) * 100)
    assert rows[64]["mbps"] == pytest.approx(fps * 64 * 8 / 1e6)
    assert rows[64]["line_mbps"] == pytest.approx(fps * 84 * 8 / 1e6)


def test_headline_quotes_smallest_frame_with_protocol_and_link(complete):
    h = summary.headline(complete)
    assert h["row"]["frame_size"] == 64
    assert h["protocol"] == "IPv4"
    assert h["link"] == "1 Gbit/s Ethernet"


def test_trial_load_percent_from_load_and_link(complete):
    rows = summary.trial_rows(complete)
    first = rows[0]
    line_64 = summary.link_max_fps(64, gen.LINK_MBPS)
    # the search starts at the maximum load: the tester's calibrated ceiling at 64 B
    assert first["load_pct"] == pytest.approx(gen.TESTER_CEILING_FPS / line_64 * 100, abs=0.001)
    assert rows[1]["load_pct"] == pytest.approx(complete["trials"][1]["load_fps"] / line_64 * 100, abs=0.001)
    assert first["loss_pct"] == pytest.approx(first["lost_frames"] * 100 / first["tx_frames"])
    # The date shows on the first trial and when it changes (this run passes midnight).
    dated = [(r["id"], r["started_text"]) for r in rows if len(r["started_text"]) > 8]
    first_after_midnight = next(t for t in complete["trials"] if t["started"].startswith("2026-11-22"))
    assert dated == [(1, gen.START.strftime("%Y-%m-%d %H:%M:%S")),
                     (first_after_midnight["id"], first_after_midnight["started"][:19].replace("T", " "))]
    assert rows[1]["started_text"] == rows[1]["started"][11:19]
    totals = summary.trial_totals(complete)
    assert totals["count"] == len(complete["trials"])
    assert sum(totals["by_verdict"].values()) == len(complete["trials"])


def test_mixed_ip_versions_are_labelled():
    data = load_results(DATA / "complete.json")
    v6 = copy.deepcopy(data["throughput"][0])
    v6.update(ip_version=6, fps=700000.0)
    data["throughput"].append(v6)
    labels = [r["label"] for r in summary.throughput_rows(data)]
    assert labels[0] == "64 B IPv4" and labels[-1] == "64 B IPv6"


def test_complete_run_has_no_missing_tests(complete):
    status = checks.completeness(complete)
    assert status["complete"] and status["missing"] == []
    # back-to-back and system recovery where throughput is the maximum load: nothing to buffer or overload
    skipped = [p for p in complete["plan"] if p["state"] == "skipped"]
    assert {(p["test"], p["frame_size"]) for p in skipped} == {
        (test, size) for test in ("back_to_back", "system_recovery") for size in (128, 1518)}
    assert len(status["skipped"]) == len(skipped)
    assert sum("RFC 9004" in s for s in status["skipped"]) == 2
    assert status["finished"] == status["planned"] - len(skipped)


def test_partial_run_lists_what_is_missing(partial):
    status = checks.completeness(partial)
    assert not status["complete"]
    assert status["finished"] == len(planned_sizes(partial, "throughput")) == 2
    assert status["missing"][0] == "Throughput (26.1): 1518 B"        # cut during 1518 B
    assert any(m.startswith("Latency (26.2): 64 B") for m in status["missing"])
    assert status["last_trial"] == partial["trials"][-1]
    assert status["interruptions"][0]["reason"] == "interrupted by the user (Ctrl-C)"


def detected_text(results):
    return "\n".join(text for _, text in checks.detected_deviations(results))


def test_detected_deviations_of_the_known_file(complete):
    text = detected_text(complete)
    p = complete["profile"]
    assert f"{p['latency']['repetitions']} repetitions, fewer than the 20 of RFC 2544 section 26.2" in text
    assert f"back-to-back at 64 B: {p['back_to_back']['repetitions']} trials, fewer than the 50" in text
    assert "throughput at 128 B is tester-bound" in text
    assert not [t for t in complete["trials"] if t["verdict"] == "tester-limited"]
    assert "could not be sent at the intended load" not in text
    assert f"lasted {p['trial_duration_s']:g} s, shorter than the 60 s final trial" in text
    assert "26.3" not in text                # frame loss followed the procedure


def test_detected_deviations_catch_short_trials_and_bad_frame_loss(complete):
    data = copy.deepcopy(complete)
    for t in data["trials"]:
        if t["test"] in ("throughput", "latency"):
            t["duration_s"] = 5.0
    data["frame_loss"][0]["points"] = [{"load_pct": 80.0, "loss_pct": 12.0}, {"load_pct": 50.0, "loss_pct": 0.0}]
    data["conditions"]["fidelity"] = "lower"
    data["conditions"]["receiver"] = "interface counters"
    data["plan"] = [p for p in data["plan"] if p["frame_size"] != 128]
    data["throughput"] = [t for t in data["throughput"] if t["frame_size"] != 128]
    data["system_recovery"][0]["overload_fps"] = data["throughput"][0]["fps"] * 1.5
    text = detected_text(data)
    assert "longest passing trial lasted 5 s, shorter than the 60 s final trial of RFC 2544 section 24" in text
    assert "latency trials of 5 s, shorter than the 120 s" in text
    assert "frame loss at 64 B started at 80 % of the maximum rate, not 100 %" in text
    assert "stepped by up to 30 %" in text
    assert "did not end on two successive trials without loss" in text
    assert "lower-fidelity measurement: the receiver is interface counters" in text
    assert "frame sizes 128, 256, 512, 1024, 1280 B of RFC 2544 section 9.1 not tested" in text
    assert "overload at 150 % of throughput, not 110 %" in text


def test_failed_trials_without_spacing_from_the_in_tree_generator_are_said(complete):
    """(a results file edited in place) The in-tree pktgen and no
    calibration link: a failed throughput trial has no spacing, so a loss
    from the tester's catch-up bursts counted as the DUT's (CI: NDR 9 % low
    after 1 s stalls). The report says so; a trial the link estimated, or
    another generator's file, adds nothing."""
    from rfc2544.engine.detection import GENERATOR_INTREE
    data = copy.deepcopy(complete)
    failed = [t for t in data["trials"] if t["test"] == "throughput" and t["verdict"] == "fail"]
    assert failed and not any(t.get("spacing") for t in failed)
    assert "cannot be told from DUT loss" not in detected_text(data)     # the simulated generator
    data["conditions"]["generator"] = GENERATOR_INTREE
    text = detected_text(data)
    assert (f"{len(failed)} failed throughput trial(s) at 64 B have no departure spacing (the generator records "
            f"none and no calibration link estimated it): a loss from the tester's own micro-bursts cannot be told "
            f"from DUT loss there, so the NDR may be low") in text
    assert checks.undeclared(checks.detected_deviations(data), data["deviations"]) == \
        [t for _, t in checks.detected_deviations(data) if "departure spacing" in t]
    for t in failed:
        t["spacing"] = {"source": "calibration link", "longest_micro_burst": 1, "close_frames": 0}
    assert "departure spacing" not in detected_text(data)


def test_formatting():
    assert fmt.fps(1488095.238) == "1,488,095"
    assert fmt.fps(None) == fmt.DASH
    assert fmt.pct(55.078) == "55.1" and fmt.pct(0.336) == "0.336" and fmt.pct(100.0) == "100.0"
    assert fmt.pct(99.97) == "99.97"
    assert fmt.us(13672) == "13.7"
    assert fmt.ms(0.0027548) == "2.75"
    assert fmt.duration(6100) == "1 h 41 min 40 s"
    assert fmt.text(True) == "yes" and fmt.text([1, 2]) == "1, 2" and fmt.text("") == fmt.DASH


def test_declared_deviations_are_not_repeated(complete):
    found = checks.detected_deviations(complete)
    # The run declared every departure found in its data (the profile's and the tester-bound row).
    assert found and checks.undeclared(found, complete["deviations"]) == []
    without_tester_bound = [d for d in complete["deviations"] if d["code"] != "tester_bound"]
    assert [text for _, text in found if "tester-bound" in text] == \
        checks.undeclared(found, without_tester_bound)
    # A declaration in other words about another subject does not hide a finding.
    assert checks.undeclared([("loss_step", "frame loss stepped by 20 %")],
                             ["latency trials last 2 s, RFC 2544 26.2 asks at least 120 s"]) \
        == ["frame loss stepped by 20 %"]
    assert checks.undeclared([("latency_repetitions", "x")], ["latency trials of 120 s"]) == ["x"]


def test_recovery_and_reset_figure_shows_each_repetition_and_its_bounds():
    """Simulated rows (the shape of results.json's system_recovery and reset
    entries): one point per repetition, error bars from the bounds."""
    from rfc2544.reports import plots
    rec = [{"label": "64 B", "recovery_times_s": [1.446, 1.2], "recovery_time_bounds_s": [[1.17, 1.73], [1.0, 1.4]],
            "recovery_time_s": 1.323}]
    res = [{"label": "64 B", "reset_times_s": [0.505], "reset_time_s": 0.505}]
    svg = plots.recovery_reset_svg(rec, res)
    assert svg.startswith("<svg") and "fig-recovery-title" in svg
    assert "recovery 64 B" in svg and "reset 64 B" in svg and "repetition" in svg
    assert plots.recovery_reset_svg([], []) is None


# ---------------------------------------------------------------- departure spacing figure
def spacing_row(trial_id, nominal, hist, which="at the NDR"):
    return {"test": "throughput", "label": "64 B", "which": which, "trial": {"id": trial_id},
            "spacing": {"nominal_gap_ns": nominal, "hist": hist}}


def test_the_gap_cdf_is_the_share_of_frames_by_gap_over_nominal():
    from rfc2544.reports import plots
    # 1000 ns nominal: 10 frames 0 ns after the one before (a micro-burst), 20 at 300-399 ns,
    # 960 at 1000-1099 ns, 10 after a 40 us pause
    hist = [[0, 0, 10], [300, 399, 20], [1000, 1099, 960], [40000, 40999, 10]]
    xs, ys = plots.gap_cdf({"nominal_gap_ns": 1000.0, "hist": hist})
    assert xs == sorted(xs) and ys == sorted(ys) and ys[-1] == 1.0 and ys[0] == 0.0
    assert xs[0] == plots.GAP_FLOOR                           # 0 ns gaps at the left edge
    below_half = max(y for x, y in zip(xs, ys) if x <= 0.5)
    assert below_half == pytest.approx(30 / 1000)             # the frames sent too close together
    # flat across gap ranges no frame fell in: no share is spread over 400..999 ns
    assert [y for x, y in zip(xs, ys) if 0.4 <= x <= 1.0] == [0.03, 0.03]
    assert plots.gap_cdf({"nominal_gap_ns": None, "hist": hist}) is None
    assert plots.gap_cdf({"nominal_gap_ns": 1000.0, "hist": []}) is None


def test_the_spacing_figure_draws_one_line_per_trial_and_the_half_gap_threshold():
    import matplotlib.pyplot as plt
    from rfc2544.reports import plots
    rows = [spacing_row(i, 1000.0 * (i + 1), [[0, 0, i], [1000 * (i + 1), 1000 * (i + 1) + 99, 100]])
            for i in range(1, 4)]
    fig, drawn, left_out = plots.gap_cdf_figure(rows)
    ax = fig.axes[0]
    assert (drawn, left_out) == (3, 0)
    labels = [line.get_label() for line in ax.get_lines()]
    assert labels == ["#1 throughput 64 B, at the NDR", "#2 throughput 64 B, at the NDR",
                      "#3 throughput 64 B, at the NDR", "half the nominal gap (micro-burst threshold)"]
    assert list(ax.get_lines()[-1].get_xdata()) == [0.5, 0.5]
    assert len({line.get_color() for line in ax.get_lines()[:3]}) == 3      # told apart
    assert ax.get_xscale() == "log" and ax.get_title(loc="left") == ""
    plt.close(fig)
    svg = plots.gap_distribution_svg(rows)
    assert svg.startswith("<svg") and "#3 throughput 64 B" in svg and "micro-burst threshold" in svg


def test_the_spacing_figure_leaves_out_trials_beyond_its_limit_and_says_so():
    import matplotlib.pyplot as plt
    from rfc2544.reports import plots
    n = plots.MAX_GAP_SERIES + 3
    rows = [spacing_row(i, 1000.0, [[1000, 1099, 100]]) for i in range(1, n + 1)]
    rows.append(spacing_row(99, None, [[1000, 1099, 100]]))     # no nominal gap: nothing to draw
    fig, drawn, left_out = plots.gap_cdf_figure(rows)
    assert (drawn, left_out) == (plots.MAX_GAP_SERIES, 3)
    assert len(fig.axes[0].get_lines()) == plots.MAX_GAP_SERIES + 1
    assert fig.axes[0].get_title(loc="left") == \
        f"{plots.MAX_GAP_SERIES} of {n} trials drawn; the other 3 are in the table above"
    plt.close(fig)
    assert plots.gap_cdf_figure([spacing_row(1, None, [])]) is None
    assert plots.gap_distribution_svg([]) is None
