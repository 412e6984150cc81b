"""Read and check a results.json (docs/results-schema.md, version 1) for the
report and compare: the file is read by results_file.read_results, the one
loader --resume uses too; here the fields the report shows are type-checked.

Anything wrong becomes one BadInput line naming the file: the CLI prints it
and exits 2. Missing optional fields are left missing: the templates show a
dash, so a partial file from a run cut short still renders.
"""
import dataclasses
import json
import typing
from numbers import Real

from rfc2544 import catalog
from rfc2544 import wire
from rfc2544.errors import BadInput
from rfc2544.model import BOUND_PERCENTILES
from rfc2544.results.reader import SCHEMA, SUPPORTED_VERSIONS, read_results, resolve
from rfc2544.results.summaries import summary_type

__all__ = ["load_results", "resolve", "SCHEMA", "SUPPORTED_VERSIONS"]
# The lists a results file holds: its trials and each test's entries. One a
# file does not have (older files: no `bursty`, before
# schema_minor 4) loads as an empty list, like a test that was not run.


def lists():
    """The lists a results file holds: its trials, then each test's entries (catalog.py)."""
    return ("trials",) + catalog.names()


# Per list: field -> expected kind. A test's entries are checked against its
# summary type's fields (results/summaries.py, `entry_fields`); the trials
# against TRIAL_FIELDS. Required: `id` and `frame_size` of a trial, a test's
# `Summary.REQUIRED` (its frame size and headline figure); other fields may
# be absent or null.
NUM, INT, STR, BOOL, LIST, DICT = "number", "integer", "string", "boolean", "list", "object"
TRIAL_FIELDS = {"id": INT, "test": STR, "frame_size": INT, "load_fps": NUM, "load_pct": NUM,
                "duration_s": NUM, "traffic_s": NUM, "tx_frames": INT, "rx_frames": INT,
                "lost_frames": INT, "loss_ratio": NUM, "achieved_fps": NUM, "verdict": STR,
                "aborted_early": BOOL, "saved_traffic_s": NUM, "started": STR, "latency": DICT,
                "notes": LIST}
TRIAL_REQUIRED = ("id", "frame_size")
_KINDS = {float: NUM, int: INT, str: STR, bool: BOOL, list: LIST, dict: DICT}


def _kind(annotation):
    """The loader's kind of a summary field's annotation (Optional[X] is
    X's), or None for one it does not check."""
    origin = typing.get_origin(annotation)
    if origin is typing.Union:
        return _kind(next(a for a in typing.get_args(annotation) if a is not type(None)))
    return _KINDS.get(origin or annotation)


def entry_fields(section):
    """(field -> kind, required fields, fields that may be negative) of a
    list of a results file."""
    if section == "trials":
        return TRIAL_FIELDS, TRIAL_REQUIRED, ()
    summary = summary_type(section)
    hints = typing.get_type_hints(summary)
    kinds = {f.name: _kind(hints[f.name]) for f in dataclasses.fields(summary)}
    return {k: v for k, v in kinds.items() if v is not None}, summary.REQUIRED, summary.SIGNED


# Rates, counts and durations: a negative one is corrupt, not a figure to
# compare (latency may be negative across two unsynchronised clocks).
NON_NEGATIVE = ("fps", "mbps", "_frames", "frames", "_s", "trials", "repetitions", "samples")
POINT_FIELDS = {"load_pct": NUM, "load_fps": NUM, "loss_pct": NUM}
BURST_FIELDS = {"frames_per_burst": INT, "fps": NUM, "ndr_fps": NUM, "ndr_upper_fps": NUM, "bursts_per_s": NUM,
                "burst_interval_us": NUM, "pct_of_throughput": NUM, "trials": INT, "traffic_s": NUM}
# Records inside the fields above that the report, compare and the store read.
BOUND_FIELDS = {"percentile": STR, "us": NUM, "text": STR, "extension": STR, "search": STR}
CLOCK_FIELDS = {"shared": BOOL, "error_ns": NUM, "text": STR, "hosts": DICT}
STREAM_FIELDS = {"tx": STR, "rx": STR, "generators": INT}
TOP_FIELDS = {"complete": BOOL, "started": STR, "finished": STR, "tool": DICT, "profile": DICT,
              "plan": LIST, "deviations": LIST, "conditions": DICT, "notes": LIST, "services": LIST}
# Y.1564: a configuration step's row (procedures/y1564_configuration.py) and a service's record
SERVICE_STEP_FIELDS = {"label": STR, "kind": STR, "offered_mbps": NUM, "green_mbps": NUM, "yellow_mbps": NUM,
                       "duration_s": NUM, "sent_mbps": NUM, "ir_mbps": NUM, "flr_pct": NUM, "tx_frames": INT,
                       "rx_frames": INT, "ftd_ms": NUM, "ftd_min_ms": NUM, "ftd_max_ms": NUM, "fdv_ms": NUM,
                       "out_of_order": INT, "verdict": STR, "failed": LIST, "capped": BOOL}
SERVICE_FIELDS = {"name": STR, "sizes": LIST, "cir_mbps": NUM, "eir_mbps": NUM, "colour_mode": STR, "sac": DICT}


def _is(kind, value):
    if value is None:
        return True
    if kind == NUM:
        return isinstance(value, Real) and not isinstance(value, bool)
    if kind == INT:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, {STR: str, BOOL: bool, LIST: list, DICT: dict}[kind])


def _check_fields(where, obj, fields, required=(), signed=()):
    if not isinstance(obj, dict):
        raise ValueError(f"{where}: expected an object")
    for name in required:
        if obj.get(name) is None:
            raise ValueError(f"{where}.{name}: missing")
    for name, kind in fields.items():
        if name in obj and not _is(kind, obj[name]):
            raise ValueError(f"{where}.{name}: expected {'an' if kind[0] in 'aeiou' else 'a'} {kind}, "
                             f"got {json.dumps(obj[name])[:40]}")
        if name in obj and kind in (NUM, INT) and name.endswith(NON_NEGATIVE) and name not in signed \
                and (obj[name] or 0) < 0:
            raise ValueError(f"{where}.{name}: a rate or count cannot be negative, got {obj[name]}")


def load_results(path):
    """Return the results as a dict with every section present (lists may be empty)."""
    path, data = read_results(path)
    try:
        _check(data)
    except ValueError as exc:
        raise BadInput(f"{path}: malformed results: {exc}") from None
    data = dict(data)
    for key in lists() + ("plan", "deviations", "notes"):
        if data.get(key) is None:
            data[key] = []
    for key in ("profile", "conditions", "tool"):
        if data.get(key) is None:
            data[key] = {}
    data["complete"] = bool(data.get("complete"))
    data["source"] = str(path)
    if not data.get("schema_minor"):
        data = sizes_as_sent(data)
    return data


# Figures a writer computed from the frame size: recomputed by the report
# (reports/summary.py) from the size sent when they are left out.
SIZE_DERIVED = ("theoretical_max_fps", "mbps", "line_mbps", "pct_of_max", "load_pct")


def sizes_as_sent(data):
    """A file written before sizes were stated as sent (no `schema_minor`)
    states, at IPv6 64 B, the size asked for frames the generator padded to
    82 B (rfc2544/wire.py; both generators pad alike). Its entries are
    shown at the size sent, with `requested_frame_size`, and the figures
    derived from the size are left to be recomputed; a deviation says so.
    IMIX entries are left as written."""
    default_ip = (data.get("conditions") or {}).get("ip_version") or 4
    raised = set()

    def as_sent(entry):
        size = entry.get("frame_size")
        if not isinstance(entry, dict) or not size or entry.get("requested_frame_size"):
            return entry
        ip = entry.get("ip_version") or default_ip
        sent = wire.wire_frame_size(size, ip == 6)
        if sent == size:
            return entry
        raised.add((ip, size, sent))
        out = {k: v for k, v in entry.items() if k not in SIZE_DERIVED}
        return {**out, "frame_size": sent, "requested_frame_size": size}

    data = dict(data)
    for key in lists() + ("plan",):
        data[key] = [as_sent(e) for e in data[key]]
    for ip, size, sent in sorted(raised):
        data["deviations"] = list(data["deviations"]) + [{
            "code": "frame_size_raised", "section": "RFC 5180 5.1.1", "asked": f"{size} B", "used": f"{sent} B",
            "text": f"IPv{ip}: {size} B frames cannot hold the headers; the generator sent {sent} B frames, "
                    f"and this file (written before sizes were stated as sent) said {size} B: shown here "
                    f"as {sent} B, with rates recomputed for {sent} B"}]
    return data


def _check(data):
    _check_fields("results", data, TOP_FIELDS)
    for section in lists():
        entries = data.get(section)
        if entries is None:
            continue
        if not isinstance(entries, list):
            raise ValueError(f"{section}: expected a list")
        kinds, required, signed = entry_fields(section)
        for i, entry in enumerate(entries):
            _check_fields(f"{section}[{i}]", entry, kinds, required, signed)
            if section == "frame_loss":
                for j, point in enumerate(entry["points"]):
                    _check_fields(f"frame_loss[{i}].points[{j}]", point, POINT_FIELDS, ("load_pct", "loss_pct"))
            if section == "bursty":
                for j, burst in enumerate(entry["bursts"]):
                    _check_fields(f"bursty[{i}].bursts[{j}]", burst, BURST_FIELDS, ("frames_per_burst",))
            if section == "y1564_configuration":
                for j, step in enumerate(entry["steps"]):
                    _check_fields(f"y1564_configuration[{i}].steps[{j}]", step, SERVICE_STEP_FIELDS,
                                  ("label", "offered_mbps", "ir_mbps", "flr_pct", "verdict"))
            if section == "throughput" and entry.get("latency_bound") is not None:
                _check_bound(f"throughput[{i}].latency_bound", entry["latency_bound"], ("percentile", "us", "text"))
    for i, service in enumerate(data.get("services") or []):
        _check_fields(f"services[{i}]", service, SERVICE_FIELDS, ("name", "sizes", "cir_mbps"))
    for i, item in enumerate(data.get("plan") or []):
        _check_fields(f"plan[{i}]", item, {"test": STR, "frame_size": INT}, ("test",))
    for i, deviation in enumerate(data.get("deviations") or []):
        # a record {code, section, asked, used, text}, or a sentence (older files)
        text = deviation.get("text") if isinstance(deviation, dict) else deviation
        if not isinstance(text, str):
            raise ValueError(f"deviations[{i}]: expected a string or a record with a text")
    conditions = data.get("conditions") or {}
    _check_fields("conditions", conditions, {"link_speed_mbps": NUM, "ip_version": INT, "hosts": DICT,
                                             "streams": LIST, "calibration": DICT, "calibration_bound": DICT,
                                             "generator": STR,
                                             "receiver": STR, "fidelity": STR, "latency_definition": STR,
                                             "direction": STR, "generators": INT})
    if conditions.get("latency_clock") is not None:
        _check_fields("conditions.latency_clock", conditions["latency_clock"], CLOCK_FIELDS, ("shared", "text"))
    for i, stream in enumerate(conditions.get("streams") or []):
        _check_fields(f"conditions.streams[{i}]", stream, STREAM_FIELDS)
        if (stream.get("generators") or 1) < 1:
            raise ValueError(f"conditions.streams[{i}].generators: at least 1, got {stream['generators']}")
    search = (data.get("profile") or {}).get("search")
    if search is not None:
        _check_fields("profile.search", search, {"latency_bound": DICT})
        if search.get("latency_bound") is not None:
            _check_bound("profile.search.latency_bound", search["latency_bound"], ("percentile", "us"))
    for name, host in (conditions.get("hosts") or {}).items():
        _check_fields(f"conditions.hosts.{name}", host, {"nics": LIST, "tuning": DICT, "kernel": STR})
    for size, fps in (conditions.get("calibration") or {}).items():
        if not _is(NUM, fps):
            raise ValueError(f"conditions.calibration.{size}: expected a number")


def _check_bound(where, bound, required):
    """A latency bound's record: a known percentile and a positive bound."""
    _check_fields(where, bound, BOUND_FIELDS, required)
    if bound["percentile"] not in BOUND_PERCENTILES:
        raise ValueError(f"{where}.percentile: one of {', '.join(BOUND_PERCENTILES)}, "
                         f"got {json.dumps(bound['percentile'])[:40]}")
    if not bound["us"] > 0:
        raise ValueError(f"{where}.us: a bound above 0 microseconds, got {bound['us']}")
