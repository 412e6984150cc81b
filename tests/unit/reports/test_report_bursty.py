"""The report's bursty traffic section (RFC 2544 section 21, results.json
`bursty`, schema_minor 4): a document with the section validates against the
schema and renders its rows, figure and largest passing burst; a file written
before the section existed still loads and renders without it."""
import copy
import json

import pytest

from rfc2544.errors import BadInput
from rfc2544.reports import checks, fmt, plots, summary
from rfc2544.results.load import load_results
from rfc2544.reports.render import render_html, write_reports

from helpers_run import profile, start
from known_results import raw
from schema_check import assert_valid, schema_errors
from test_report_render import visible_text

STEADY = 48_000.0


def burst(size, ndr, trials=7, traffic_s=12.5):
    """One burst size's row, its figures derived as procedures/bursty.py derives them."""
    return {"frames_per_burst": size, "fps": ndr or 0.0, "ndr_fps": ndr,
            "ndr_upper_fps": ndr * 1.01 if ndr else 1000.0,
            "bursts_per_s": ndr / size if ndr else None,
            "burst_interval_us": size / ndr * 1e6 if ndr else None,
            "pct_of_throughput": ndr * 100 / STEADY if ndr else None,
            "trials": trials, "traffic_s": traffic_s}


def entry(frame_size, bursts, largest, **extra):
    return {"frame_size": frame_size, "bursts": bursts, "largest_passing_burst": largest,
            "throughput_fps": STEADY, "max_load_fps": 100_000.0, "max_load_source": "profile",
            "search": "bisection", "resolution_pct": 1.0, "ip_version": 4,
            "unit": f"bursty/ipv4/{frame_size}", **extra}


def without_bursty():
    """The known complete file (a simulated run) as written before the bursty
    test existed (schema_minor 3): no section, no profile entry, no steps."""
    data = raw("complete.json")
    data.pop("bursty", None)
    data["profile"].pop("bursty", None)
    data["profile"]["tests"] = [t for t in data["profile"]["tests"] if t != "bursty"]
    data["plan"] = [p for p in data["plan"] if p["test"] != "bursty"]
    data["trials"] = [t for t in data["trials"] if t["test"] != "bursty"]
    data["schema_minor"] = min(data.get("schema_minor", 0), 3)
    return data


def bursty_document():
    """The same file with a bursty test added as a schema_minor 4 writer
    records it: profile, plan, a trial and the section."""
    data = without_bursty()
    data["schema_minor"] = 4
    data["profile"]["tests"] = data["profile"]["tests"] + ["bursty"]
    data["profile"]["bursty"] = {"burst_sizes": [16, 64, 256, 1024]}
    data["plan"] += [{"unit": "bursty/ipv4/64", "ip_version": 4, "frame_size": 64, "test": "bursty", "state": "done"},
                     {"unit": "bursty/ipv4/1518/4flows", "ip_version": 4, "frame_size": 1518, "flows": 4,
                      "test": "bursty", "state": "done"}]
    trial = copy.deepcopy(data["trials"][-1])
    trial.update(id=len(data["trials"]) + 1, unit="bursty/ipv4/64", test="bursty", frame_size=64)
    trial["spec"].update(frame_size=64, test="bursty", frames_per_burst=256)
    data["trials"].append(trial)
    data["bursty"] = [
        # 64 B: bursts up to 256 frames pass (slower with 256), 1024 never
        entry(64, [burst(16, 47_500.0), burst(64, 46_000.0), burst(256, 31_250.0), burst(1024, None)], 256),
        # 1518 B, 4 flows: even the smallest burst loses frames
        entry(1518, [burst(16, None), burst(64, None)], None, flows=4, throughput_fps=None),
    ]
    return data


@pytest.fixture(scope="module")
def document():
    return bursty_document()


@pytest.fixture(scope="module")
def rendered(document, tmp_path_factory):
    path = tmp_path_factory.mktemp("bursty") / "results.json"
    path.write_text(json.dumps(document))
    html = render_html(load_results(path))
    return html, visible_text(html)


def test_the_document_matches_the_published_schema(document):
    assert_valid(document, "bursty document")


def test_the_schema_holds_the_bursty_section_to_its_fields(document):
    doc = copy.deepcopy(document)
    doc["bursty"][0]["bursts"][0]["ndr"] = doc["bursty"][0]["bursts"][0].pop("ndr_fps")
    doc["bursty"][0]["largest_passing_burst"] = "256"
    doc["profile"]["bursty"]["burst_sizes"] = [1, 64]
    doc["trials"][-1]["spec"]["frames_per_burst"] = 1        # steady traffic: omitted, never 1
    errors = schema_errors(doc)
    for where in ("bursty.0.bursts.0", "bursty.0.largest_passing_burst", "profile.bursty.burst_sizes.0",
                  f"trials.{len(doc['trials']) - 1}.spec.frames_per_burst"):
        assert any(e.startswith(where + ":") for e in errors), (where, errors)


def test_the_section_shows_one_row_per_burst_size(rendered, document):
    html, _ = rendered
    section = visible_text(html[html.index('<section id="bursty">'):html.index('id="recovery"')])
    assert "Bursty traffic (RFC 2544 section 21)" in section
    assert 'href="#bursty"' in html
    for b in document["bursty"][0]["bursts"]:
        if b["ndr_fps"]:
            cells = (f"64 B {b['frames_per_burst']} {fmt.fps(b['ndr_fps'])} {fmt.pct(b['pct_of_throughput'])} "
                     f"{fmt.fps(b['bursts_per_s'])} {fmt.num(b['burst_interval_us'], 1)} {b['trials']}")
            assert cells in section, cells
    assert "64 B 1,024 none passed" in section
    assert "1518 B, 4 flows 16 none passed" in section
    # 256 frames at 31,250 frames/s: 122 bursts/s, one every 8,192 us, 65.1 % of the throughput
    assert "64 B 256 31,250 65.1 122 8,192.0 7" in section


def test_the_largest_passing_burst_is_stated(rendered):
    _, text = rendered
    assert "64 B: largest burst size that passed: 256 frames ; steady throughput 48,000 frames/s" in text
    assert ("1518 B, 4 flows: no burst size passed (even bursts of 16 frames lost frames at the lowest load); "
            "steady throughput not measured") in text


def test_the_figure_plots_each_frame_size_against_the_burst_size(rendered, tmp_path):
    html, _ = rendered
    assert html.count("<svg") == render_html(loaded(without_bursty(), tmp_path)).count("<svg") + 1
    figure = html[html.index('aria-labelledby="fig-bursty-title"'):]
    figure = figure[:figure.index("</svg>")]
    assert "frames per burst (log2)" in figure and "mean rate without loss (frames/s)" in figure
    for tick in (">16<", ">64<", ">256<", ">1024<"):
        assert tick in figure, tick
    assert "64 B, steady throughput" in figure             # the dashed reference, where measured
    assert "1518 B, 4 flows, steady throughput" not in figure
    assert "no rate passed" in figure


def test_the_figure_is_left_out_without_bursts():
    assert plots.bursty_svg([]) is None
    assert plots.bursty_svg([{"label": "64 B", "bursts": []}]) is None


def loaded(data, tmp_path):
    """`data` as the report reads it, through a file as always."""
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data))
    return load_results(path)


def test_rows_sort_burst_sizes_and_completeness_counts_the_steps(document, tmp_path):
    data = copy.deepcopy(document)
    data["bursty"][0]["bursts"].reverse()
    results = loaded(data, tmp_path)
    rows = summary.bursty_rows(results)
    assert [b["frames_per_burst"] for b in rows[0]["bursts"]] == [16, 64, 256, 1024]
    status = checks.completeness(results)
    assert status["missing"] == [] and status["finished"] == status["planned"] - len(status["skipped"])
    assert not any("Bursty" in s for s in status["skipped"])


def test_a_planned_bursty_step_without_a_result_says_so(document, tmp_path):
    data = copy.deepcopy(document)
    data["bursty"] = []
    data["plan"][-1]["state"] = "pending"
    data["complete"] = False
    html = render_html(loaded(data, tmp_path))
    text = visible_text(html)
    assert "Bursty traffic (section 21): 1518 B, 4 flows" in text          # the banner's missing list
    section = visible_text(html[html.index('<section id="bursty">'):html.index('id="recovery"')])
    assert "Planned, but no result" in section


def test_a_malformed_burst_row_names_the_field(document, tmp_path):
    data = copy.deepcopy(document)
    data["bursty"][0]["bursts"][1]["bursts_per_s"] = "many"
    with pytest.raises(BadInput, match=r"bursty\[0\]\.bursts\[1\]\.bursts_per_s: expected a number"):
        loaded(data, tmp_path)


def test_a_file_from_before_the_bursty_section_loads_and_renders(tmp_path):
    old = without_bursty()
    assert_valid(old, "minor 3 document")       # the section is an addition: older files still match
    path = tmp_path / "results.json"
    path.write_text(json.dumps(old))
    data = load_results(path)
    assert data["bursty"] == []
    [html_path] = write_reports(path, None, ("html",))
    html = html_path.read_text()
    text = visible_text(html)
    assert "Back-to-back frames (RFC 2544 26.4, RFC 9004)" in text and "Trial log" in text
    assert fmt.fps(old["throughput"][0]["fps"]) in text
    # a test that did not exist then is not offered as "not run"
    assert 'id="bursty"' not in html and "Bursty traffic" not in text


def test_a_bursty_run_of_the_suite_reports(tmp_path):
    """The contract both ways: the real runner against the simulated DUT
    with a policer's bucket; what it writes validates and renders."""
    from rfc2544.sim import dut as simdut
    sim = simdut.SimDUT(capacity_fps=50_000.0, bucket_frames=100)
    prof = profile(tests=["throughput", "bursty"], frame_sizes=[64], link_mbps=1000.0,
                   bursty={"burst_sizes": [32, 64, 256]},
                   search={"max_load_fps": 100_000.0, "method": "bisection", "pdr_loss_pct": None})
    runner, results = start(tmp_path / "run", sim, prof)
    runner.run()
    written = json.loads(results.path.read_text())
    assert_valid(written, "bursty run")
    [e] = written["bursty"]
    assert e["largest_passing_burst"] == 64
    [html_path] = write_reports(results.path, None, ("html",))
    html = html_path.read_text()
    text = visible_text(html)
    assert "Bursty traffic (RFC 2544 section 21)" in text
    assert "largest burst size that passed: 64 frames" in text
    for b in e["bursts"]:
        shown = fmt.fps(b["ndr_fps"]) if b["ndr_fps"] else "none passed"
        assert f"64 B {b['frames_per_burst']} {shown}" in text
    assert 'aria-labelledby="fig-bursty-title"' in html
