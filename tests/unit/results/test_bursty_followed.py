"""Bursty traffic results (RFC 2544 section 21) followed where the other
figures are: `compare` gates the burst rate per frame size and burst size,
the store keeps a series per burst size for `trend`, the CSV export writes
bursty.csv and each trial's flows and frames per burst. Synthetic results
(complete.json with a bursty section added), no traffic."""
import json

import pandas as pd

from rfc2544.reports.compare import BURSTY_METRIC, compare, text_table
from rfc2544.results.load import load_results
from rfc2544.results.file import Results
from rfc2544.results.store import Store, figures_of

from known_results import DATA, synthetic_run


def bursty(fps16, fps1024=0.0):
    return [{"frame_size": 64, "bursts": [
        {"frames_per_burst": 16, "fps": fps16, "ndr_fps": fps16, "ndr_upper_fps": fps16 * 1.01,
         "bursts_per_s": fps16 / 16, "burst_interval_us": 16e6 / fps16, "pct_of_throughput": 98.1,
         "trials": 9, "traffic_s": 47.0},
        {"frames_per_burst": 1024, "fps": fps1024, "ndr_fps": fps1024 or None, "ndr_upper_fps": 500.0,
         "bursts_per_s": None, "burst_interval_us": None, "pct_of_throughput": None, "trials": 3,
         "traffic_s": 8.1}],
        "largest_passing_burst": 1024 if fps1024 else 16, "throughput_fps": 52000.0,
        "max_load_fps": 100000.0, "max_load_source": "profile", "search": "bisection", "resolution_pct": 1.0}]


def with_bursty(tmp_path, name, entries):
    data = json.loads((DATA / "complete.json").read_text())
    data["bursty"] = entries
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def test_compare_gates_the_burst_rate_per_burst_size(tmp_path):
    old = load_results(with_bursty(tmp_path, "old.json", bursty(51000.0, 800.0)))
    same = compare(old, old, 5.0)
    rows = [r for r in same["rows"] if r["metric"] == BURSTY_METRIC]
    assert [(r["label"], r["status"]) for r in rows] == [("64 B, bursts of 16", "ok"), ("64 B, bursts of 1024", "ok")]
    new = load_results(with_bursty(tmp_path, "new.json", bursty(45000.0, 0.0)))
    result = compare(old, new, 5.0)
    failed = {(r["label"], r["status"]) for r in result["failures"]}
    assert failed == {("64 B, bursts of 16", "regression"), ("64 B, bursts of 1024", "regression")}
    assert "64 B, bursts of 16" in text_table(result)
    # a run without bursty traffic results: the old run's burst rates are missing
    plain = load_results(DATA / "complete.json")
    assert {r["status"] for r in compare(old, plain, 5.0)["rows"] if r["metric"] == BURSTY_METRIC} == {"missing"}


def test_the_store_follows_a_series_per_burst_size(tmp_path):
    run = synthetic_run(tmp_path / "r1", "2026-11-01T00:00:00Z", 10_000)
    data = json.loads((run / "results.json").read_text())
    data["bursty"] = bursty(51000.0)
    (run / "results.json").write_text(json.dumps(data))
    followed = [(f["test"], f["metric"], f["value"]) for f in figures_of(load_results(run / "results.json"))]
    # the burst size no rate passed (1024: fps 0) gives no figure
    assert ("bursty, 16 frames per burst", "fps", 51000.0) in followed
    assert not [f for f in followed if "1024" in f[0]]
    with Store(tmp_path / "store") as st:
        st.add(run)
        assert ("bursty, 16 frames per burst", 51000.0) in [(f["test"], f["value"]) for f in st.figures()]


def test_the_csv_export_writes_bursty_csv_and_each_trials_burst_size(tmp_path):
    path = with_bursty(tmp_path, "results.json", bursty(51000.0))
    data = json.loads(path.read_text())
    data["trials"][0]["spec"]["frames_per_burst"] = 16
    path.write_text(json.dumps(data))
    written = Results.load(path).to_csv(tmp_path / "trials.csv")
    assert [p.name for p in written] == ["trials.csv", "throughput.csv", "bursty.csv"]
    trials = pd.read_csv(tmp_path / "trials.csv")
    assert trials["frames_per_burst"].iloc[0] == 16 and set(trials["frames_per_burst"].iloc[1:]) == {1}
    assert set(trials["flows"]) == {1}
    rows = pd.read_csv(tmp_path / "bursty.csv")
    assert list(rows["frames_per_burst"]) == [16, 1024] and list(rows["frame_size"]) == [64, 64]
    assert list(rows["fps"]) == [51000.0, 0.0] and set(rows["largest_passing_burst"]) == {16}
