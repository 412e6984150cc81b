"""`rfc2544 plan` (effective profile and plan, human and --json) and
`rfc2544 report --json` (the summary as JSON, no files written)."""
import json
import shutil
from pathlib import Path

import pytest

from rfc2544 import cli
from rfc2544.config import profiles
from rfc2544.procedures.runner import build_plan

DATA = Path(__file__).resolve().parents[2] / "data" / "results"


def main(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        cli.main(list(args))
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def test_plan_json_is_the_validated_profile_the_plan_and_the_deviations(capsys):
    code, out, err = main(capsys, "plan", "-p", "quick", "--json")
    assert code == 0 and err == ""
    doc = json.loads(out)
    quick = profiles.load("quick")
    assert doc["profile"] == json.loads(json.dumps(dict(quick)))
    assert doc["plan"] == build_plan(quick) and len(doc["plan"]) == 6
    assert [d["text"] for d in doc["deviations"]] == profiles.deviations(quick)


def test_plan_prints_a_table_of_the_steps_and_the_profile_fields(capsys):
    code, out, _ = main(capsys, "plan", "-p", "quick")
    assert code == 0
    assert "search.resolution_pct" in out and "plan (6 steps):" in out
    rows = [line.split() for line in out.splitlines() if line.strip()[:1].isdigit()]
    assert rows[0] == ["1", "throughput", "64", "v4"] and rows[-1] == ["6", "frame_loss", "1518", "v4"]


def test_plan_of_a_bad_profile_is_one_line_and_exit_2(capsys, tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text("search: {trial_s: 1}\n")
    code, out, err = main(capsys, "plan", "-p", str(bad))
    assert code == 2 and out == ""
    assert err.strip() == f"rfc2544: {bad}: search.trial_s: unknown field (known: " + \
        ", ".join(profiles.SCHEMA["search"]) + ")"


def test_report_json_prints_the_summary_and_writes_nothing(capsys, tmp_path):
    shutil.copy(DATA / "complete.json", tmp_path / "results.json")
    code, out, err = main(capsys, "report", str(tmp_path), "--json")
    assert code == 0 and err == ""
    doc = json.loads(out)
    source = json.loads((DATA / "complete.json").read_text())
    assert doc["complete"] is True and doc["throughput"] == source["throughput"]
    assert doc["deviations"] == source["deviations"] and "trials" not in doc
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.json"]


def test_report_json_of_a_corrupt_file_is_one_line_and_exit_2(capsys):
    code, out, err = main(capsys, "report", str(DATA / "corrupt.json"), "--json")
    assert code == 2 and out == "" and "corrupt results file" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("field, text", [("trial_duration_s", ".nan"), ("trial_duration_s", ".inf"),
                                         ("search", "{resolution_pct: .nan}"), ("waits", "{settle_s: .inf}"),
                                         ("search", "{max_load_fps: -.inf}")])
def test_a_non_finite_number_in_a_profile_is_one_line_and_exit_2(capsys, tmp_path, field, text):
    """YAML's .nan compares false with every range check: it passed them,
    and `plan --json` printed a bare NaN, which is not JSON."""
    bad = tmp_path / "bad.yml"
    bad.write_text(f"{field}: {text}\n")
    code, out, err = main(capsys, "plan", "-p", str(bad), "--json")
    assert code == 2 and out == "", out
    assert err.count("\n") == 1 and f"rfc2544: {bad}: {field}" in err and "must be" in err, err
