"""The results file (docs/results-schema.md): versioned JSON, rewritten
atomically after every trial, readable by `--resume`, exportable to CSV.

Every record carries its `unit` ("test/ipv4/64"): the step of the plan it
belongs to. A resumed run skips units marked done and replays the recorded
trials of a unit that was cut short, so the searches retrace their steps
without sending traffic again.
"""
import json
import os
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from rfc2544 import __version__
from rfc2544.results.deviations import as_written
from rfc2544.errors import BadInput
from rfc2544.model import theoretical_max_fps
from rfc2544.results.records import (SCHEMA, SCHEMA_MINOR, SCHEMA_VERSION, PlanStep, ResultsDocument,
                                    TrialRecord)
from rfc2544.results.reader import FILENAME, read_results
from rfc2544.results.summaries import summary_type
from rfc2544.results.records import sections

__all__ = ["Results", "SCHEMA", "SCHEMA_VERSION", "SCHEMA_MINOR", "sections", "FILENAME", "trial_from_record",
           "unit_key", "verdict"]


def now_iso():
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def unit_key(test, ip_version, frame_size, flows=1):
    """test/ipvV/size, and /Nflows for more than one flow per stream."""
    return f"{test}/ipv{ip_version}/{frame_size}" + (f"/{flows}flows" if flows != 1 else "")


def verdict(result):
    if getattr(result, "tester_starved", False):
        return "tester-starved"
    if result.tester_bursty:
        return "tester-bursty"
    if result.tester_limited:
        return "tester-limited"
    if result.aborted_early:
        return "aborted"
    return "pass" if result.lost_frames == 0 else "fail"


class Results:
    def __init__(self, directory, data):
        self.dir = Path(directory)
        self.path = self.dir / FILENAME
        self.data = data

    # -- creating and loading ----------------------------------------------
    @classmethod
    def create(cls, directory, profile, plan, deviations, conditions, services=None):
        directory = Path(directory)
        if (directory / FILENAME).exists():
            raise BadInput(f"{directory}: already holds a {FILENAME}; use --resume {directory} or another --out")
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise BadInput(f"{directory}: cannot create the output directory: {exc.strerror}")
        document = ResultsDocument(
            started=now_iso(), tool={"name": "rfc2544", "version": __version__}, profile=dict(profile),
            plan=[PlanStep.from_dict(step) for step in plan], deviations=[as_written(d) for d in deviations],
            conditions=conditions, services=services)
        data = document.to_dict()
        results = cls(directory, data)
        results.save()
        return results

    @classmethod
    def load(cls, directory):
        """For --resume: the one loader (results_file), then what a replay needs."""
        path, data = read_results(directory)
        for key in ("plan", "trials", "profile"):
            if key not in data:
                raise BadInput(f"{path}: results file has no '{key}'")
        data.setdefault("interruptions", [])
        for s in sections():
            data.setdefault(s, [])
        return cls(path.parent, data)

    # -- writing -------------------------------------------------------------
    def save(self):
        """Write atomically: a temp file in the same directory, fsync, rename."""
        fd, tmp = tempfile.mkstemp(prefix=".results-", suffix=".tmp", dir=self.dir)
        try:
            # mkstemp's file is 0600: the mode a new file gets, as the reports beside it have
            os.fchmod(fd, 0o666 & ~_umask())
            with os.fdopen(fd, "w") as f:
                json.dump(self.data, f, indent=1, default=_json_default)
                f.write("\n")
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise

    def add_trial(self, unit, result, link_mbps=None):
        spec = result.spec
        load_pct = (spec.load_fps * 100 / theoretical_max_fps(spec.frame_size, link_mbps)
                    if link_mbps and spec.frame_size else None)
        record = TrialRecord.from_result(len(self.data["trials"]) + 1, unit, result, verdict(result),
                                         load_pct)
        step = next((s for s in self.data["plan"] if s.get("unit") == unit), {})
        if step.get("frame_size") == spec.frame_size:      # a trial of the step's size (all of them today)
            record.requested_frame_size = step.get("requested_frame_size")
        record = record.to_dict()
        self.data["trials"].append(record)
        self.save()
        return record

    def set_summary(self, section, unit, entry):
        # through the section's dataclass: a key it does not know is a
        # TypeError here, in the run, not a silent gap in the report
        entry = summary_type(section).from_dict(dict(entry, unit=unit)).to_dict()
        rows = [r for r in self.data[section] if r.get("unit") != unit]
        rows.append(entry)
        self.data[section] = rows

    def set_unit_state(self, unit, state, note=None):
        for step in self.data["plan"]:
            if step["unit"] == unit:
                step["state"] = state
                if note:
                    step["note"] = note
        self.save()

    def note_interruption(self, reason):
        self.data["interruptions"].append({"at": now_iso(), "reason": reason,
                                           "trials_kept": len(self.data["trials"])})
        self.save()

    def mark_complete(self):
        self.data["complete"] = True
        self.data["finished"] = now_iso()
        self.save()

    # -- reading -------------------------------------------------------------
    @property
    def complete(self):
        return bool(self.data.get("complete"))

    def unit_state(self, unit):
        for step in self.data["plan"]:
            if step["unit"] == unit:
                return step.get("state", "pending")
        return None

    def summary(self, section, unit):
        for row in self.data[section]:
            if row.get("unit") == unit:
                return row
        return None

    def recorded_trials(self, unit):
        """Finished trials of `unit` (not superseded), as TrialResults, in order."""
        try:
            return [trial_from_record(r) for r in self.data["trials"]
                    if r.get("unit") == unit and not r.get("superseded")]
        except (TypeError, KeyError, AttributeError) as exc:
            raise BadInput(f"{self.path}: a recorded trial of {unit} cannot be replayed ({exc})") from None

    def supersede_from(self, unit, index):
        """Recorded trials of `unit` from `index` on no longer match what the
        procedure asks for: keep them in the file but stop counting them."""
        rows = [r for r in self.data["trials"] if r.get("unit") == unit and not r.get("superseded")]
        for r in rows[index:]:
            r["superseded"] = True
        self.save()

    def to_csv(self, path=None):
        """Trials (and throughput summaries) as CSV files via pandas."""
        import pandas as pd
        path = Path(path) if path else self.dir / "trials.csv"
        cols = ["id", "unit", "test", "frame_size", "requested_frame_size", "ip_version", "load_fps", "load_pct",
                "duration_s", "traffic_s", "tx_frames", "rx_frames", "lost_frames", "loss_ratio", "achieved_fps",
                "verdict", "aborted_early", "saved_traffic_s", "started"]
        # what a trial sent besides its size and load: flows per stream, frames per burst
        spec_cols = {"flows": 1, "frames_per_burst": 1}
        rows = [{c: t.get(c) for c in cols} | {k: (t.get("spec") or {}).get(k) or d for k, d in spec_cols.items()}
                | _latency_cols(t.get("latency")) for t in self.data["trials"]]
        table = pd.DataFrame(rows, columns=cols + list(spec_cols) + list(_latency_cols(None)))
        # a size, or empty where the size sent is the size asked (not 64.0 beside NaN)
        table["requested_frame_size"] = table["requested_frame_size"].astype("Int64")
        table.to_csv(path, index=False)
        written = [path]
        if self.data["throughput"]:
            tp = path.with_name("throughput.csv")
            # both of the tester's marks as columns in every file (a summary
            # leaves tester_bursty out where false)
            rows = [{"tester_bound": False, "tester_bursty": False, **t} for t in self.data["throughput"]]
            pd.DataFrame(rows).to_csv(tp, index=False)
            written.append(tp)
        if self.data.get("bursty"):
            # RFC 2544 section 21: a row per frame size and burst size
            bp = path.with_name("bursty.csv")
            rows = [{"frame_size": e["frame_size"], **b, "largest_passing_burst": e.get("largest_passing_burst"),
                     "throughput_fps": e.get("throughput_fps")}
                    for e in self.data["bursty"] for b in e.get("bursts") or []]
            pd.DataFrame(rows).to_csv(bp, index=False)
            written.append(bp)
        return written


def _latency_cols(lat):
    keys = ("min_ns", "median_ns", "mean_ns", "p999_ns", "max_ns")
    return {f"latency_{k}": (lat or {}).get(k) for k in keys}


def _json_default(obj):
    if isinstance(obj, float):
        return obj
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def trial_from_record(record):
    return TrialRecord.from_dict(record).to_result()


def _umask():
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
