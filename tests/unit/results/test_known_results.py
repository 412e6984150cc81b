"""The known results files (tests/data/results) are what generate.py writes
now: a SIMULATED run of the suite's own runner and results writer against
rfc2544.sim.dut. Regenerate with `python tests/data/results/generate.py`."""
import json

import pytest

from rfc2544.config import profiles
from rfc2544.results.file import Results
from schema_check import assert_valid

from known_results import DATA, gen, raw


@pytest.fixture(scope="module")
def generated():
    return gen.documents()


def without_tool_version(text):
    """The document minus tool.version: that follows the installed suite, not the run."""
    data = json.loads(text)
    data["tool"].pop("version")
    return data


@pytest.mark.parametrize("name", ["complete.json", "partial.json", "unknown-version.json"])
def test_committed_file_is_what_the_generator_writes(generated, name):
    assert without_tool_version(generated[name]) == without_tool_version((DATA / name).read_text()), \
        f"{name} is stale: run python tests/data/results/generate.py"


def test_corrupt_file_is_a_truncated_complete_file(generated):
    committed = (DATA / "corrupt.json").read_text()
    assert (DATA / "complete.json").read_text().startswith(committed)
    assert len(committed) == len(generated["corrupt.json"]) > 1000
    with pytest.raises(json.JSONDecodeError):
        json.loads(committed)


@pytest.mark.parametrize("name", ["complete.json", "partial.json"])
def test_known_files_match_the_published_schema(name):
    assert_valid(raw(name), name)


@pytest.mark.parametrize("name", ["complete.json", "partial.json"])
def test_known_files_profile_is_accepted_by_the_suite(name):
    # what --resume does with it: the stored profile validates as it stands
    stored = raw(name)["profile"]
    assert dict(profiles.validate(stored, name)) == stored
    assert stored == dict(profiles.load(str(gen.PROFILE)))


def test_partial_file_resumes_to_the_complete_file(tmp_path):
    """Resuming partial.json against the same simulated DUT finishes the plan
    with the trials and summaries of the uninterrupted run."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "results.json").write_text((DATA / "partial.json").read_text())
    results = Results.load(run_dir)
    assert not results.complete
    complete = raw("complete.json")
    kept = len(results.data["trials"])
    clock = gen.SimClock()
    dut = gen.FixtureDUT(clock, 0.0)
    gen.Runner(dut, profiles.validate(results.data["profile"], "resume"), results, gen.Display(quiet=True),
               link_mbps=gen.LINK_MBPS, calibration=complete["conditions"]["calibration"],
               dut_reset=dut.reset_dut).run()
    final = Results.load(run_dir).data
    assert final["complete"] and dut.trials_run == len(complete["trials"]) - kept
    for section in ("throughput", "frame_loss", "back_to_back"):
        assert [r["frame_size"] for r in final[section]] == [r["frame_size"] for r in complete[section]]
    assert [t["load_fps"] for t in final["trials"]] == [t["load_fps"] for t in complete["trials"]]
