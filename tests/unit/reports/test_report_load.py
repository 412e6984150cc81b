"""Reading results files: the known good ones load; bad ones give one clear line.
The known files come from a simulated run (tests/data/results/generate.py)."""
import json
import shutil

import pytest

from rfc2544.errors import BadInput
from rfc2544.results.load import load_results

from known_results import DATA, gen, raw, sizes


def test_complete_file_loads_with_every_section():
    r = load_results(DATA / "complete.json")
    profile = gen.profiles.load(str(gen.PROFILE))
    assert r["complete"] is True
    assert sizes(r, "throughput") == profile["frame_sizes"]
    assert all(r[s] for s in profile["tests"])
    assert len(r["trials"]) == len(raw("complete.json")["trials"]) > 0
    assert r["source"].endswith("complete.json")


def test_partial_file_loads_and_says_incomplete():
    r = load_results(DATA / "partial.json")
    assert r["complete"] is False
    assert r["finished"] is None
    # cut during the trial INTERRUPT_AT_TRIAL, in throughput at the largest size
    assert len(r["trials"]) == gen.INTERRUPT_AT_TRIAL - 1
    assert sizes(r, "throughput") == gen.profiles.load(str(gen.PROFILE))["frame_sizes"][:-1]
    assert r["latency"] == [] and r["interruptions"][0]["trials_kept"] == len(r["trials"])


def test_run_directory_means_its_results_json(tmp_path):
    shutil.copy(DATA / "complete.json", tmp_path / "results.json")
    assert load_results(tmp_path)["source"] == str(tmp_path / "results.json")


@pytest.mark.parametrize("name, expected", [
    ("corrupt.json", "corrupt.json: corrupt results file: invalid JSON at line"),
    ("unknown-version.json", "unknown-version.json: results schema version 99 is not supported "
                             "(this rfc2544 reads versions 1, 2)"),
    ("no-such.json", "no-such.json: no such results file"),
])
def test_bad_files_are_one_clear_line(name, expected):
    with pytest.raises(BadInput) as exc:
        load_results(DATA / name)
    message = str(exc.value)
    assert expected in message
    assert "\n" not in message


def _write(tmp_path, data):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    return path


Y1564_STEP = {"label": "CIR 100 %", "kind": "cir", "offered_mbps": 10.0, "ir_mbps": 10.0, "flr_pct": 0.0,
              "verdict": "pass", "failed": []}
Y1564_ENTRY = {"frame_size": 512, "service": "a", "cir_mbps": 10.0, "eir_mbps": 0.0, "colour_mode": "blind",
               "steps": [Y1564_STEP], "verdict": "pass", "failed_rules": [], "ip_version": 4, "unit": "u"}


def test_a_y1564_entry_loads_and_a_negative_corrected_buffer_too(tmp_path):
    data = _complete()
    data["y1564_configuration"] = [Y1564_ENTRY]
    data["back_to_back"][0]["corrected_buffer_s"] = -0.002    # the DUT forwards faster than the rate sent
    loaded = load_results(_write(tmp_path, data))
    assert loaded["y1564_configuration"][0]["steps"][0]["ir_mbps"] == 10.0


def _complete():
    return json.loads((DATA / "complete.json").read_text())


@pytest.mark.parametrize("mutate, expected", [
    (lambda d: d.update(schema="something-else"), "not an rfc2544 results file"),
    (lambda d: d.update(schema_version="1"), 'results schema version "1" is not supported'),
    (lambda d: d["throughput"][1].update(fps="fast"), 'throughput[1].fps: expected a number, got "fast"'),
    (lambda d: d["throughput"][0].pop("fps"), "throughput[0].fps: missing"),
    (lambda d: d.update(latency={"64": 1}), "latency: expected a list"),
    (lambda d: d["frame_loss"][0]["points"][2].update(loss_pct=None), "frame_loss[0].points[2].loss_pct: missing"),
    (lambda d: d["trials"][5].update(tx_frames=1.5), "trials[5].tx_frames: expected an integer"),
    (lambda d: d["conditions"].update(hosts=[]), "conditions.hosts: expected an object"),
    (lambda d: d.update(deviations=[3]), "deviations[0]: expected a string"),
    # the records inside fields that the report, compare and the store read
    (lambda d: d["throughput"][0].update(latency_bound={"percentile": "99.9", "us": 50}),
     "throughput[0].latency_bound.text: missing"),
    (lambda d: d["throughput"][0].update(latency_bound={"percentile": "99.9", "us": 50, "text": ["a"]}),
     'throughput[0].latency_bound.text: expected a string, got ["a"]'),
    (lambda d: d["throughput"][0].update(latency_bound={"percentile": "98", "us": 50, "text": "t"}),
     'throughput[0].latency_bound.percentile: one of 50, 99, 99.9, max, got "98"'),
    (lambda d: d["throughput"][0].update(latency_bound={"percentile": "max", "us": 0, "text": "t"}),
     "throughput[0].latency_bound.us: a bound above 0 microseconds, got 0"),
    (lambda d: d["profile"].update(search={"latency_bound": {"us": 5}}),
     "profile.search.latency_bound.percentile: missing"),
    (lambda d: d["profile"].update(search={"latency_bound": {"percentile": "99", "us": "5"}}),
     'profile.search.latency_bound.us: expected a number, got "5"'),
    (lambda d: d["conditions"].update(latency_clock="one host"), "conditions.latency_clock: expected an object"),
    (lambda d: d["conditions"].update(latency_clock={"shared": False, "error_ns": "1", "text": "t"}),
     'conditions.latency_clock.error_ns: expected a number, got "1"'),
    (lambda d: d["conditions"].update(streams=[{"tx": "a", "rx": "b", "generators": "3"}]),
     'conditions.streams[0].generators: expected an integer, got "3"'),
    (lambda d: d["conditions"].update(streams=["a->b"]), "conditions.streams[0]: expected an object"),
    # ITU-T Y.1564: a service's entry, its step rows and the run's services
    (lambda d: d.update(y1564_configuration=[dict(Y1564_ENTRY, steps=[1])]),
     "y1564_configuration[0].steps[0]: expected an object"),
    (lambda d: d.update(y1564_configuration=[dict(Y1564_ENTRY, steps=[dict(Y1564_STEP, ir_mbps="x")])]),
     'y1564_configuration[0].steps[0].ir_mbps: expected a number, got "x"'),
    (lambda d: d.update(y1564_configuration=[{k: v for k, v in Y1564_ENTRY.items() if k != "cir_mbps"}]),
     "y1564_configuration[0].cir_mbps: missing"),
    (lambda d: d.update(services=[{"name": "a", "sizes": 64, "cir_mbps": 1}]),
     "services[0].sizes: expected a list, got 64"),
])
def test_malformed_fields_name_the_field(tmp_path, mutate, expected):
    data = _complete()
    mutate(data)
    with pytest.raises(BadInput) as exc:
        load_results(_write(tmp_path, data))
    assert expected in str(exc.value)
    assert str(exc.value).startswith(str(tmp_path / "r.json"))


def test_not_json_text_and_not_an_object(tmp_path):
    path = tmp_path / "bin.json"
    path.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(BadInput, match="not UTF-8"):
        load_results(path)
    with pytest.raises(BadInput, match="not an rfc2544 results file"):
        load_results(_write(tmp_path, [1, 2, 3]))


def test_minimal_file_gets_empty_sections(tmp_path):
    r = load_results(_write(tmp_path, {"schema": "rfc2544-results", "schema_version": 1}))
    assert r["complete"] is False
    assert r["throughput"] == [] and r["plan"] == [] and r["conditions"] == {}


@pytest.mark.parametrize("name", ["corrupt.json", "unknown-version.json", "no-such.json"])
def test_resume_and_report_refuse_a_bad_file_with_the_same_line(tmp_path, name):
    # one loader (rfc2544.results.reader) behind --resume, report and compare
    from rfc2544.results.file import Results
    with pytest.raises(BadInput) as by_report:
        load_results(DATA / name)
    with pytest.raises(BadInput) as by_resume:
        Results.load(DATA / name)
    assert str(by_resume.value) == str(by_report.value)


def test_an_integer_past_a_float_is_refused_not_a_crash(tmp_path):
    """Every figure is shown, compared and plotted as a float: 10**400
    frames/s would raise OverflowError there."""
    path = _write(tmp_path, _complete())
    text = path.read_text().replace('"fps": ', '"fps": 1' + "0" * 400 + ', "was": ', 1)
    path.write_text(text)
    with pytest.raises(BadInput, match="corrupt results file: 1000000000.* is out of range for a number"):
        load_results(path)


def test_a_throughput_row_without_resolution_renders(tmp_path):
    """A bounded row whose search resolution is null (the loader allows it)
    renders instead of failing in the template's arithmetic."""
    from rfc2544.reports.render import render_html
    data = _complete()
    data["profile"]["search"] = {"latency_bound": {"percentile": "99.9", "us": 5000.0}}
    data["throughput"][0].update(latency_bound={"percentile": "99.9", "us": 5000.0, "text": "p99.9 latency <= 5000 us",
                                                "extension": "x", "search": "mlrsearch"},
                                 bounded_fps=500.0, ndr_fps=1000.0, resolution_pct=None)
    html = render_html(load_results(_write(tmp_path, data)))
    assert "DUT queued to its NDR" in html
