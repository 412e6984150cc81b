"""The results store: every finished run, kept for trends.

    STORE/runs/<run id>/results.json    the run's results, byte for byte
    STORE/index.sqlite                  one row per run, one per figure

Append-only: a run is copied in under a temporary name and renamed into
place (atomic), then indexed in one SQLite transaction. Two pipelines
appending at once are serialised by SQLite's lock; neither loses its run.
A crash between the rename and the index leaves a stored but unindexed run,
which the next `add` of the same run (or `rebuild`) indexes. The run id is
the start time plus a hash of the file: adding the same run twice is a no-op.

What makes two runs comparable is split in two. The series key says which
figure it is (DUT, profile, test, metric, frame size, IP version); the
conditions say what else could move it that is not the DUT: the tester's
kernel, the generator and receiver, the link speed, the fidelity and
whether the tester limited the figure. A change of conditions splits a
series in the trend; a change of the DUT (its kernel too) is what a trend
is for and does not.
"""
import hashlib
import json
import os
import re
import shutil
import sqlite3
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from rfc2544.errors import BadInput
from rfc2544.results.load import load_results

ENV = "RFC2544_STORE"
INDEX = "index.sqlite"
BUSY_TIMEOUT_S = 120
# (section, metric: the section row's field, better): the figures a trend follows
METRICS = (
    ("throughput", "ndr_fps", "higher"),
    ("throughput", "pdr_fps", "higher"),
    ("latency", "median_ns", "lower"),
    ("latency", "p999_ns", "lower"),
)
SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY, started TEXT NOT NULL, finished TEXT, added TEXT NOT NULL,
    dut TEXT NOT NULL, profile TEXT NOT NULL, dut_kernel TEXT, source TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS figures (
    run_id TEXT NOT NULL REFERENCES runs(run_id), dut TEXT NOT NULL, profile TEXT NOT NULL,
    test TEXT NOT NULL, metric TEXT NOT NULL, frame_size INTEGER NOT NULL, ip_version INTEGER NOT NULL,
    better TEXT NOT NULL, value REAL NOT NULL, conditions TEXT NOT NULL,
    PRIMARY KEY (run_id, test, metric, frame_size, ip_version));
CREATE INDEX IF NOT EXISTS figures_series ON figures (dut, profile, test, metric, frame_size, ip_version);
"""


def store_path(given=None):
    """--store DIR, else $RFC2544_STORE, else None (no store)."""
    value = given or os.environ.get(ENV)
    return Path(value).expanduser() if value else None


class Store:
    def __init__(self, path):
        self.path = Path(path)
        self.runs_dir = self.path / "runs"
        try:
            self.runs_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise BadInput(f"store {self.path}: cannot create it: {exc.strerror or exc}") from None
        self._db = None

    # -- the index --------------------------------------------------------
    def _connect(self):
        if self._db is None:
            try:
                db = sqlite3.connect(self.path / INDEX, timeout=BUSY_TIMEOUT_S, isolation_level=None)
                db.row_factory = sqlite3.Row
                db.execute("PRAGMA foreign_keys = ON")
                db.execute("BEGIN IMMEDIATE")
                for statement in filter(str.strip, SCHEMA.split(";")):
                    db.execute(statement)
                db.execute("COMMIT")
                foreign = _foreign_tables(db)
            except sqlite3.DatabaseError as exc:
                raise BadInput(f"store {self.path}: {INDEX} is not a usable SQLite index ({exc}); "
                               "move it aside and run 'rfc2544 store rebuild'") from None
            if foreign:
                db.close()
                raise BadInput(f"store {self.path}: {INDEX} is not this tool's index (its {', '.join(foreign)} "
                               "table has other columns); move it aside and run 'rfc2544 store rebuild'")
            self._db = db
        return self._db

    def close(self):
        if self._db is not None:
            self._db.close()
            self._db = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- adding runs ------------------------------------------------------
    def add(self, run):
        """Copy the run (a run directory or its results.json) into the store
        and index it. Returns (run_id, True if new). A run that is not a
        complete results file is refused with BadInput and nothing is kept."""
        results = load_results(run)
        source = Path(results["source"])
        if not results["complete"]:
            raise BadInput(f"{source}: an incomplete run (interrupted, or still running): not stored; "
                           f"finish it with 'rfc2544 run --resume {source.parent}'")
        figures = list(figures_of(results))
        if not figures:
            raise BadInput(f"{source}: no throughput or latency figure to follow: not stored")
        data = source.read_bytes()
        run_id = run_id_of(results, data)
        target = self.runs_dir / run_id
        self._connect()             # an unusable index refuses the run before it is copied
        placed = not (target / "results.json").is_file()
        if placed:
            self._place(target, data)
        try:
            added = self._index(run_id, results, figures, str(source.resolve()))
        except BadInput:
            if placed:              # a refused add leaves the store as it was
                shutil.rmtree(target, ignore_errors=True)
            raise
        return run_id, added

    def _place(self, target, data):
        """results.json into runs/<id>/ by rename: readers see all or nothing."""
        incoming = Path(tempfile.mkdtemp(prefix=".incoming-", dir=self.runs_dir))
        try:
            with open(incoming / "results.json", "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            try:
                os.rename(incoming, target)
            except OSError:
                if not (target / "results.json").is_file():   # not a concurrent add of the same run
                    raise
        except OSError as exc:
            raise BadInput(f"store {self.path}: cannot write {target.name}: {exc.strerror or exc}") from None
        finally:
            shutil.rmtree(incoming, ignore_errors=True)

    def _index(self, run_id, results, figures, source):
        db = self._connect()
        dut, profile = identity(results)
        try:
            db.execute("BEGIN IMMEDIATE")
            cur = db.execute("INSERT OR IGNORE INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                             (run_id, results.get("started") or "", results.get("finished"),
                              datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                              dut, profile, dut_kernel(results), source))
            added = cur.rowcount == 1
            if added:
                db.executemany("INSERT INTO figures VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                               [(run_id, dut, profile, f["test"], f["metric"], f["frame_size"], f["ip_version"],
                                 f["better"], f["value"], json.dumps(f["conditions"], sort_keys=True))
                                for f in figures])
            db.execute("COMMIT")
        except sqlite3.DatabaseError as exc:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise BadInput(f"store {self.path}: cannot index {run_id}: {exc}") from None
        return added

    def rebuild(self):
        """Index every stored run the index lacks (after a crash, or a lost
        index). Returns the ids indexed."""
        indexed = {r["run_id"] for r in self._connect().execute("SELECT run_id FROM runs")}
        done = []
        for directory in sorted(self.runs_dir.iterdir()):
            if directory.name.startswith(".") or directory.name in indexed:
                continue
            results = load_results(directory)
            self._index(directory.name, results, list(figures_of(results)), str(directory / "results.json"))
            done.append(directory.name)
        return done

    # -- reading ----------------------------------------------------------
    def runs(self):
        rows = self._connect().execute("SELECT * FROM runs ORDER BY started, run_id").fetchall()
        return [dict(r) for r in rows]

    def figures(self):
        """Every figure, with its run's start time, oldest run first."""
        rows = self._connect().execute(
            "SELECT f.*, r.started, r.dut_kernel FROM figures f JOIN runs r USING (run_id) "
            "ORDER BY r.started, f.run_id").fetchall()
        return [{**dict(r), "conditions": json.loads(r["conditions"])} for r in rows]

    def check(self):
        """Problems with the store, as sentences (none: consistent)."""
        db = self._connect()
        problems = [f"index: {row[0]}" for row in db.execute("PRAGMA integrity_check") if row[0] != "ok"]
        indexed = {r["run_id"] for r in db.execute("SELECT run_id FROM runs")}
        stored = {d.name for d in self.runs_dir.iterdir() if not d.name.startswith(".")}
        problems += [f"{i}: indexed but not stored" for i in sorted(indexed - stored)]
        problems += [f"{i}: stored but not indexed ('rfc2544 store rebuild' indexes it)" for i in sorted(stored - indexed)]
        for leftover in sorted(d.name for d in self.runs_dir.iterdir() if d.name.startswith(".incoming-")):
            problems.append(f"{leftover}: an add that did not finish (safe to remove)")
        for run_id in sorted(stored):       # each stored file still loads (a truncated one does not)
            try:
                load_results(self.runs_dir / run_id)
            except BadInput as exc:
                problems.append(f"{run_id}: the stored run no longer loads: {exc}")
        return problems


def _foreign_tables(db):
    """The tables of SCHEMA whose columns in `db` are not SCHEMA's (an index
    some other tool wrote under the same name)."""
    expected = {"runs": ["run_id", "started", "finished", "added", "dut", "profile", "dut_kernel", "source"],
                "figures": ["run_id", "dut", "profile", "test", "metric", "frame_size", "ip_version", "better",
                            "value", "conditions"]}
    return [table for table, columns in expected.items()
            if [row[1] for row in db.execute(f"PRAGMA table_info({table})")] != columns]


def run_id_of(results, data):
    started = re.sub(r"[^0-9TZ]", "", results.get("started") or "") or time.strftime("%Y%m%dT%H%M%SZ")
    return f"{started}-{hashlib.sha256(data).hexdigest()[:12]}"


def identity(results):
    """(DUT, profile) of a run: the DUT hosts' inventory names, the profile's name."""
    hosts = (results["conditions"].get("hosts") or {})
    duts = sorted(name for name, h in hosts.items() if isinstance(h, dict) and h.get("role") == "dut")
    return ",".join(duts) or "dut", results["profile"].get("name") or "unnamed"


def _role_hosts(results, role):
    hosts = results["conditions"].get("hosts") or {}
    return [h for _, h in sorted(hosts.items()) if isinstance(h, dict) and h.get("role") == role]


def dut_kernel(results):
    kernels = sorted({h.get("kernel") for h in _role_hosts(results, "dut") if h.get("kernel")})
    return ",".join(kernels) or None


def run_conditions(results):
    """What the tester side of a run was: a change of any of these splits a series."""
    c = results["conditions"]
    testers = _role_hosts(results, "tester")
    # generators per stream move the tester's ceiling; named only where
    # more than one sends a stream, so a store's older runs stay comparable
    generators = [s.get("generators", 1) for s in c.get("streams") or []]
    several = {"generators": ",".join(map(str, generators))} if any(g > 1 for g in generators) else {}
    return {
        "tester_kernel": ",".join(sorted({h.get("kernel") or "?" for h in testers})) or None,
        "generator": " ".join(filter(None, [c.get("generator"), *sorted(
            {h.get("module_version") for h in testers if h.get("module_version")})])) or None,
        "receiver": c.get("receiver"),
        "fidelity": c.get("fidelity"),
        "link_speed_mbps": c.get("link_speed_mbps"),
        **several,
    }


def figures_of(results):
    """The run's figures that a trend follows (complete rows only)."""
    base = run_conditions(results)
    default_ip = results["conditions"].get("ip_version") or 4
    # the tester's marks on a row: tester-bound, and (only where true, so a
    # store's older runs stay comparable) an NDR set by the tester's bursts
    marks = {(r.get("ip_version") or default_ip, r.get("flows") or 1, r["frame_size"]):
             {"tester_limited": bool(r.get("tester_bound")), **({"tester_bursty": True} if r.get("tester_bursty") else {})}
             for r in results["throughput"]}
    for section, metric, better in METRICS:
        for row in results[section]:
            if row.get("throughput_pct") not in (None, 100):   # latency at another load: not followed
                continue
            value = row.get(metric)
            if value is None or isinstance(value, bool) or value <= 0:
                continue
            ip, flows = row.get("ip_version") or default_ip, row.get("flows") or 1
            # more flows per stream: a series of its own, named in the test
            # (the index keys a series by test, metric, size and IP version)
            test = section if flows == 1 else f"{section}, {flows} flows"
            yield {"test": test, "metric": metric, "frame_size": row["frame_size"], "ip_version": ip,
                   "better": better, "value": float(value),
                   "conditions": {**base, **marks.get((ip, flows, row["frame_size"]), {"tester_limited": False})}}
    # the rate within a latency bound (an extension): a series per bound,
    # named in the test, since rates under different bounds are not one figure
    for row in results["throughput"]:
        bound, value = row.get("latency_bound"), row.get("bounded_fps")
        if not bound or value is None or isinstance(value, bool) or value <= 0:
            continue
        ip, flows = row.get("ip_version") or default_ip, row.get("flows") or 1
        test = f"throughput within {bound['text']}" + (f", {flows} flows" if flows != 1 else "")
        yield {"test": test, "metric": "bounded_fps", "frame_size": row["frame_size"], "ip_version": ip,
               "better": "higher", "value": float(value),
               "conditions": {**base, **marks.get((ip, flows, row["frame_size"]), {"tester_limited": False})}}
    # RFC 2544 section 21: a series per burst size (in the test's name),
    # the rate found; a burst size no rate passed gives no figure
    for entry in results.get("bursty") or []:
        ip, flows = entry.get("ip_version") or default_ip, entry.get("flows") or 1
        for burst in entry.get("bursts") or []:
            value = burst.get("fps")
            if value is None or isinstance(value, bool) or value <= 0:
                continue
            test = f"bursty, {burst['frames_per_burst']} frames per burst" + (f", {flows} flows" if flows != 1 else "")
            yield {"test": test, "metric": "fps", "frame_size": entry["frame_size"], "ip_version": ip,
                   "better": "higher", "value": float(value), "conditions": {**base, "tester_limited": False}}
    yield from _service_figures(results, base, default_ip)


# ITU-T Y.1564: per service and CIR step, the rate received and the mean delay
SERVICE_METRICS = (("ir_mbps", "higher"), ("ftd_ms", "lower"))


def _service_figures(results, base, default_ip):
    """A series per service and CIR step (named in the test): what the
    service got inside its contract."""
    for entry in results.get("y1564_configuration") or []:
        ip = entry.get("ip_version") or default_ip
        for step in entry.get("steps") or []:
            if step.get("kind") != "cir":
                continue
            for metric, better in SERVICE_METRICS:
                value = step.get(metric)
                if value is None or isinstance(value, bool) or value <= 0:
                    continue
                yield {"test": f"Y.1564 {entry['service']}, {step['label']}", "metric": metric,
                       "frame_size": entry["frame_size"], "ip_version": ip, "better": better, "value": float(value),
                       "conditions": {**base, "tester_limited": step.get("verdict") == "tester-limited"}}


def find_runs(paths):
    """The run directories under `paths` (a results.json, a run directory, or
    a tree of them), each once, in path order."""
    found = []
    for path in map(Path, paths):
        if path.is_file():
            found.append(path)
        elif (path / "results.json").is_file():
            found.append(path / "results.json")
        elif path.is_dir():
            found += sorted(p for p in path.rglob("results.json") if p.is_file())
        else:
            raise BadInput(f"{path}: no such file or directory")
    return list(dict.fromkeys(found))
