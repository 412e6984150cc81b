"""The results store (rfc2544.results.store, `rfc2544 store`): runs are the known
simulated file cut down to one frame size (known_results.synthetic_run),
written to tmp_path; the store is a real directory and SQLite file."""
import json
import sqlite3
import subprocess
import sys

import pytest

from rfc2544 import cli
from rfc2544.errors import BadInput
from rfc2544.results.store import INDEX, Store

from known_results import DATA, synthetic_run


def started(i):
    return f"2026-11-{1 + i // 24:02d}T{i % 24:02d}:00:00Z"


def main(*args):
    with pytest.raises(SystemExit) as exc:
        cli.main(list(map(str, args)))
    return exc.value.code


def test_add_copies_and_indexes_a_run_once(tmp_path):
    run = synthetic_run(tmp_path / "r1", started(0), 10_000, median_ns=150_000)
    with Store(tmp_path / "store") as st:
        run_id, new = st.add(run)
        assert new and run_id.startswith("20261101T000000Z-")
        assert (tmp_path / "store" / "runs" / run_id / "results.json").read_bytes() == \
            (run / "results.json").read_bytes()
        assert st.add(run) == (run_id, False)            # the same run again: a no-op
        figures = st.figures()
        assert sorted((f["test"], f["metric"], f["value"]) for f in figures) == [
            ("latency", "median_ns", 150_000.0), ("latency", "p999_ns", 180_000.0),
            ("throughput", "ndr_fps", 10_000.0)]
        assert figures[0]["dut"] == "dut" and figures[0]["profile"] == json.loads(
            (run / "results.json").read_text())["profile"]["name"]
        assert figures[0]["conditions"]["tester_kernel"] == "6.1.0-50-amd64"
        assert st.check() == []


@pytest.mark.parametrize("name, message", [
    ("corrupt.json", "corrupt results file"),
    ("partial.json", "incomplete run"),
    ("unknown-version.json", "not supported"),
])
def test_bad_runs_are_refused_and_nothing_is_kept(tmp_path, name, message):
    with Store(tmp_path / "store") as st:
        with pytest.raises(BadInput, match=message):
            st.add(DATA / name)
        assert st.runs() == [] and st.figures() == []
        assert list((tmp_path / "store" / "runs").iterdir()) == []


def test_a_half_written_file_is_refused(tmp_path):
    run = synthetic_run(tmp_path / "r1", started(0), 10_000)
    text = (run / "results.json").read_text()
    (run / "results.json").write_text(text[: len(text) // 2])
    with Store(tmp_path / "store") as st, pytest.raises(BadInput, match="corrupt results file: invalid JSON"):
        st.add(run)


def test_a_run_stored_but_not_indexed_is_found_and_rebuilt(tmp_path):
    """A crash between the rename and the index: check names it, rebuild indexes it."""
    run = synthetic_run(tmp_path / "r1", started(0), 10_000)
    with Store(tmp_path / "store") as st:
        run_id, _ = st.add(run)
    db = sqlite3.connect(tmp_path / "store" / INDEX)
    db.execute("DELETE FROM figures")
    db.execute("DELETE FROM runs")
    db.commit()
    db.close()
    with Store(tmp_path / "store") as st:
        assert st.check() == [f"{run_id}: stored but not indexed ('rfc2544 store rebuild' indexes it)"]
        assert st.rebuild() == [run_id]
        assert st.check() == [] and len(st.figures()) == 1


def test_a_broken_index_is_a_clear_error(tmp_path):
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / INDEX).write_text("not sqlite " * 100)
    with pytest.raises(BadInput, match="not a usable SQLite index"):
        Store(tmp_path / "store").runs()


def test_two_processes_appending_at_once_lose_nothing(tmp_path):
    """Two `rfc2544 store add` processes, ten runs each, started together
    against one new store: all twenty runs indexed, the store consistent."""
    batches = [[synthetic_run(tmp_path / f"p{p}" / f"r{i}", started(p * 10 + i), 10_000 + p * 100 + i)
                for i in range(10)] for p in range(2)]
    store = tmp_path / "store"
    procs = [subprocess.Popen([sys.executable, "-m", "rfc2544", "store", "add", "--store", str(store),
                               *map(str, batch)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for batch in batches]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    with Store(store) as st:
        assert len(st.runs()) == 20
        assert sorted(f["value"] for f in st.figures()) == sorted(10_000 + p * 100 + i
                                                                  for p in range(2) for i in range(10))
        assert st.check() == []


def test_store_add_cli_imports_a_tree_and_reports_refusals(tmp_path, capsys):
    """One command imports a results/ tree; a refused run is named, the others are added, exit 2."""
    for i in range(3):
        synthetic_run(tmp_path / "results" / f"run{i}", started(i), 10_000 + i)
    (tmp_path / "results" / "broken").mkdir()
    (tmp_path / "results" / "broken" / "results.json").write_text("{")
    assert main("store", "add", "--store", tmp_path / "store", tmp_path / "results") == 2
    out, err = capsys.readouterr()
    assert "3 added, 0 already stored, 1 refused" in out
    assert "refused:" in err and "broken" in err and "Traceback" not in err
    assert main("store", "check", "--store", tmp_path / "store") == 0
    assert "consistent, 3 runs" in capsys.readouterr().out


def test_no_store_given_is_bad_input(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("RFC2544_STORE", raising=False)
    assert main("trend") == 2
    assert "pass --store DIR or set RFC2544_STORE" in capsys.readouterr().err
    assert main("trend", "--store", tmp_path / "nothing") == 2
    assert "not a results store" in capsys.readouterr().err


def _tree(path):
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


def test_a_foreign_index_is_refused_before_anything_is_copied(tmp_path, capsys):
    """Another tool's index.sqlite with a `runs` table of its own: `runs()`
    raised sqlite3.OperationalError (a traceback, exit 1)."""
    store = tmp_path / "store"
    (store / "runs").mkdir(parents=True)
    with sqlite3.connect(store / INDEX) as db:
        db.execute("CREATE TABLE runs (id INTEGER PRIMARY KEY, name TEXT)")
    before = _tree(store)
    run = synthetic_run(tmp_path / "r1", started(0), 10_000)
    for args in (("store", "add", run, "--store", store), ("store", "list", "--store", store),
                 ("trend", "--store", store, "--out", tmp_path / "trend")):
        assert main(*args) == 2, args
        err = capsys.readouterr().err
        assert "is not this tool's index (its runs table has other columns)" in err and "Traceback" not in err, err
        # `store add` reports each run it was given, then one summary line
        assert err.count("\n") == (2 if args[1] == "add" else 1), err
    assert _tree(store) == before and not (tmp_path / "trend").exists()


def test_an_add_whose_index_fails_leaves_the_store_as_it_was(tmp_path, monkeypatch):
    """Simulated: the index refuses the run after it was copied (a lock held
    past the busy timeout, a full disk): the copy is taken back."""
    store = tmp_path / "store"
    with Store(store) as st:
        st.add(synthetic_run(tmp_path / "r0", started(0), 10_000))
    before = _tree(store)

    def refuse(self, *args):
        raise BadInput(f"store {self.path}: cannot index: database is locked")

    monkeypatch.setattr(Store, "_index", refuse)
    with Store(store) as st, pytest.raises(BadInput, match="database is locked"):
        st.add(synthetic_run(tmp_path / "r1", started(1), 11_000))
    assert _tree(store) == before


def test_check_names_a_stored_run_that_no_longer_loads(tmp_path, capsys):
    store = tmp_path / "store"
    with Store(store) as st:
        run_id, _ = st.add(synthetic_run(tmp_path / "r0", started(0), 10_000))
        assert st.check() == []
    stored = store / "runs" / run_id / "results.json"
    stored.write_bytes(stored.read_bytes()[:200])      # truncated
    assert main("store", "check", "--store", store) == 2
    err = capsys.readouterr()
    assert f"{run_id}: the stored run no longer loads" in err.out + err.err, err
