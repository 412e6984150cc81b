"""`rfc2544 compare OLD NEW`: the gate for pipelines. The known files are a
simulated run (tests/data/results/generate.py)."""
import copy
import json
import xml.etree.ElementTree as ET

import pytest

from rfc2544 import cli
from rfc2544.errors import BadInput
from rfc2544.reports import fmt
from rfc2544.reports.compare import METRICS, compare, parse_threshold, text_table
from rfc2544.results.load import load_results

from known_results import DATA, raw, row, sizes

COMPLETE = DATA / "complete.json"
LATENCY_FIGURES = 5     # latency figures compared per frame size: min, mean, median, 99.9th, max


def variant(tmp_path, name, change):
    """complete.json with `change(data)` applied, written as tmp_path/name."""
    data = json.loads(COMPLETE.read_text())
    change(data)
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def scale(section, size, field, factor):
    def change(data):
        entry = next(e for e in data[section] if e["frame_size"] == size)
        entry[field] *= factor
    return change


def run_cli(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        cli.main(["compare", *map(str, args)])
    out, err = capsys.readouterr()
    return exc.value.code, out, err


@pytest.mark.parametrize("text, value", [("5%", 5.0), ("5", 5.0), (" 2.5 % ", 2.5), ("0%", 0.0)])
def test_threshold_parsing(text, value):
    assert parse_threshold(text) == value


@pytest.mark.parametrize("text", ["x", "-1%", "100%", "nan", ""])
def test_bad_threshold_is_bad_input(text):
    with pytest.raises(BadInput, match="--max-regression"):
        parse_threshold(text)


def test_same_run_has_no_change():
    r = load_results(COMPLETE)
    result = compare(r, r, 5.0)
    assert result["failures"] == []
    assert {row["status"] for row in result["rows"]} == {"ok"}
    data = raw("complete.json")
    # throughput and five latency figures per frame size
    assert len(result["rows"]) == len(data["throughput"]) + LATENCY_FIGURES * len(data["latency"])


def test_throughput_drop_past_threshold_regresses(tmp_path):
    old = load_results(COMPLETE)
    new = load_results(variant(tmp_path, "new.json", scale("throughput", 64, "fps", 0.92)))
    result = compare(old, new, 5.0)
    [failure] = result["failures"]
    assert (failure["metric"], failure["frame_size"], failure["status"]) == ("throughput (frames/s)", 64, "regression")
    assert failure["change_pct"] == pytest.approx(-8.0)
    # The same drop within a 10 % allowance passes.
    assert compare(old, new, 10.0)["failures"] == []


def test_latency_rise_regresses_but_max_is_not_gated(tmp_path):
    def change(data):
        scale("latency", 64, "p999_ns", 1.2)(data)
        scale("latency", 128, "max_ns", 3.0)(data)
        scale("latency", 1518, "median_ns", 0.5)(data)   # better: fine
    result = compare(load_results(COMPLETE), load_results(variant(tmp_path, "new.json", change)), 5.0)
    assert [(f["metric"], f["frame_size"]) for f in result["failures"]] == [("latency 99.9th (µs)", 64)]
    statuses = {(r["metric"], r["frame_size"]): r["status"] for r in result["rows"]}
    assert statuses[("latency max (µs)", 128)] == "worse (not gated)"
    assert statuses[("latency median (µs)", 1518)] == "better"


def test_measurement_missing_in_new_fails_the_gate():
    result = compare(load_results(COMPLETE), load_results(DATA / "partial.json"), 5.0)
    missing = {(f["metric"], f["frame_size"]) for f in result["failures"]}
    unmeasured = set(sizes(raw("complete.json"), "throughput")) - set(sizes(raw("partial.json"), "throughput"))
    assert unmeasured == {1518}
    assert ("throughput (frames/s)", 1518) in missing
    assert ("latency mean (µs)", 64) in missing
    assert all(f["status"] == "missing" for f in result["failures"])
    assert "NEW is an incomplete run" in result["notes"]


def test_condition_differences_are_noted(tmp_path):
    def change(data):
        data["conditions"]["link_speed_mbps"] = 10000
        data["conditions"]["hosts"]["dut"]["kernel"] = "6.12.0-1-amd64"
    result = compare(load_results(COMPLETE), load_results(variant(tmp_path, "new.json", change)), 5.0)
    assert "link speed mbps differs: 1000 (OLD) vs 10000 (NEW)" in result["notes"]
    assert any(n.startswith("kernels differ") for n in result["notes"])


def test_text_table_lines_up():
    r = load_results(COMPLETE)
    table = text_table(compare(r, r, 5.0)).splitlines()
    assert table[0].split() == ["frame", "metric", "OLD", "NEW", "change", "verdict"]
    fps = fmt.fps(row(raw("complete.json"), "throughput", 64)["fps"])
    assert table[2].split()[:5] == ["64", "B", "throughput", "(frames/s)", fps]
    assert len({len(line) for line in table[:3]}) <= 2


def test_cli_exit_0_without_regression(capsys):
    code, out, err = run_cli(capsys, COMPLETE, COMPLETE)
    assert code == 0, err
    assert "no regression past 5 %" in out


def test_cli_exit_1_on_regression_with_junit_and_html(capsys, tmp_path):
    new = variant(tmp_path, "new.json", scale("throughput", 128, "fps", 0.5))
    junit, html = tmp_path / "junit.xml", tmp_path / "cmp" / "compare.html"
    code, out, err = run_cli(capsys, COMPLETE, new, "--max-regression", "5%", "--junit", junit, "--html", html)
    assert code == 1
    assert err.count("\n") == 1 and err.startswith("rfc2544: ")
    assert "throughput (frames/s) at 128 B -50.0 %" in err
    assert "REGRESSION" in out
    suite = ET.parse(junit).getroot().find("testsuite")
    data = raw("complete.json")
    # one test case per gated figure (compare.METRICS): throughput and three latency figures per size
    gated = sum(len(data[section]) for section, _, _, is_gated in METRICS.values() if is_gated)
    assert gated == len(data["throughput"]) + 3 * len(data["latency"])
    assert suite.get("tests") == str(gated)
    assert suite.get("failures") == "1"
    failed = [c for c in suite.iter("testcase") if c.find("failure") is not None]
    assert [c.get("name") for c in failed] == ["throughput (frames/s) at 128 B"]
    page = html.read_text()
    assert "REGRESSION (1)" in page and page.count("<svg") == 1 and "<script" not in page


def test_cli_bad_input_exit_2(capsys, tmp_path):
    code, out, err = run_cli(capsys, COMPLETE, DATA / "unknown-version.json")
    assert code == 2 and "schema version 99 is not supported" in err and err.count("\n") == 1
    code, out, err = run_cli(capsys, DATA / "corrupt.json", COMPLETE)
    assert code == 2 and "corrupt results file" in err
    code, out, err = run_cli(capsys, COMPLETE, COMPLETE, "--max-regression", "lots")
    assert code == 2 and "is not a percentage" in err
    empty = variant(tmp_path, "empty.json", lambda d: d.update(throughput=[], latency=[]))
    code, out, err = run_cli(capsys, COMPLETE, empty)        # a NEW with nothing to compare is unusable
    assert code == 2 and "no frame size measured in both runs" in err
    code, out, err = run_cli(capsys, empty, empty)
    assert code == 2 and "nothing to compare" in err


def test_cli_junit_unwritable_is_bad_input(capsys, tmp_path):
    code, out, err = run_cli(capsys, COMPLETE, COMPLETE, "--junit", tmp_path / "no" / "dir" / "j.xml")
    assert code == 2 and "--junit" in err and "cannot write" in err


def test_new_frame_size_is_skipped_in_junit(capsys, tmp_path):
    def change(data):
        extra = copy.deepcopy(data["throughput"][0])
        extra["frame_size"] = 9000
        data["throughput"].append(extra)
    junit = tmp_path / "j.xml"
    code, out, err = run_cli(capsys, COMPLETE, variant(tmp_path, "new.json", change), "--junit", junit)
    assert code == 0, err
    skipped = [c for c in ET.parse(junit).getroot().iter("testcase") if c.find("skipped") is not None]
    assert [c.get("name") for c in skipped] == ["throughput (frames/s) at 9000 B"]


@pytest.mark.parametrize("text, words", [
    ("NaN", "NaN is not a number"),
    ("Infinity", "Infinity is not a number"),
    ("-Infinity", "-Infinity is not a number"),
    ("1e999", "1e999 is out of range for a number"),
])
def test_a_non_finite_rate_is_bad_input_not_a_pass(capsys, tmp_path, text, words):
    """Python's json reads NaN as a float, and NaN compares false with any
    threshold: compare printed 'nan +nan % ok' and exited 0."""
    data = json.loads(COMPLETE.read_text())
    data["throughput"][0]["fps"] = "@@"
    path = tmp_path / "nan.json"
    path.write_text(json.dumps(data).replace('"@@"', text))
    for old, new in ((COMPLETE, path), (path, COMPLETE)):
        code, out, err = run_cli(capsys, old, new)
        assert code == 2, (out, err)
        assert err.count("\n") == 1 and str(path) in err and words in err, err
        assert "Traceback" not in err and out == ""


def test_a_negative_rate_is_bad_input(capsys, tmp_path):
    negative = variant(tmp_path, "negative.json", scale("throughput", 64, "fps", -1))
    code, out, err = run_cli(capsys, COMPLETE, negative)
    assert code == 2 and "throughput[0].fps: a rate or count cannot be negative" in err, err
    assert err.count("\n") == 1 and out == ""


def test_rows_follow_the_frame_sizes_in_order_imix_last():
    """Per metric, rows go by IP version, flows, then size as a number
    (a set of keys alone gave 128, 1518, 64); IMIX (size 0) comes last."""
    r = copy.deepcopy(load_results(COMPLETE))
    imix = copy.deepcopy(r["throughput"][0])
    imix["frame_size"] = 0
    r["throughput"] = [imix] + list(reversed(r["throughput"]))
    sizes_shown = [row["label"] for row in compare(r, r, 5.0)["rows"] if row["metric"] == "throughput (frames/s)"]
    numbers = [int(s.split()[0]) for s in sizes_shown[:-1]]
    assert numbers == sorted(numbers) and len(numbers) > 1 and "imix" in sizes_shown[-1].lower()
