"""What a pktgen device or thread file says (our rfc2544_pktgen module and
the in-tree pktgen print the same): Params / Current / Departures / Result
of a device, a thread's device lists, the pgctrl banner
(pktgen-interface.md section B). Pure: no I/O; drivers/pktgen.py
re-exports these."""
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional


@dataclass
class RunResult:
    """The device's `Result: OK: ...` after a run."""

    usec: int              # elapsed sending time
    c_usec: int
    d_usec: int
    packets: int
    pkt_bytes: int
    frags: int
    pps: int
    mbps: int
    bps: int
    errors: int
    # rfc2544_pktgen only: frames our own driver/qdisc dropped (in errors,
    # not in packets); > 0 means the tester limited the trial, not the DUT
    tx_dropped: int = 0

    @property
    def elapsed_s(self):
        return self.usec / 1e6


@dataclass
class DeviceState:
    params: Dict[str, str] = field(default_factory=dict)
    flags: List[str] = field(default_factory=list)
    current: Dict[str, str] = field(default_factory=dict)
    result_text: str = ""
    run: Optional[RunResult] = None
    # rfc2544_pktgen's departure spacing (None with the in-tree pktgen):
    # the `Departures:` fields as ints, and "gap_hist_ns" as [(low, high, count)]
    departures: Optional[Dict[str, object]] = None

    @property
    def pkts_sofar(self):
        return _int(self.current.get("pkts-sofar"))

    @property
    def errors(self):
        return _int(self.current.get("errors"))

    @property
    def tx_dropped(self):
        """rfc2544_pktgen's driver/qdisc drops (None with the in-tree pktgen)."""
        return _int(self.current.get("tx_dropped"))

    @property
    def finished(self):
        return self.run is not None

    @property
    def elapsed_s(self):
        """Sending time: the Result line's, else Current's stopped - started
        (any later write replaces the Result line; Current keeps the times,
        and while running `stopped` is the present)."""
        if self.run is not None and self.run.usec > 0:
            return self.run.elapsed_s
        started, stopped = _int(self.current.get("started")), _int(self.current.get("stopped"))
        if started and stopped and stopped >= started:
            return (stopped - started) / 1e6
        return None

    @property
    def result_ok(self):
        return self.result_text.startswith("OK:")


_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*:$")
_RUN_RE = re.compile(
    r"OK:\s*(\d+)\(c(\d+)\+d(\d+)\)\s*usec,\s*(\d+)\s*\((\d+)byte,(\d+)frags\)\s*"
    r"(\d+)pps\s+(\d+)Mb/sec\s+\((\d+)bps\)\s+errors:\s*(\d+)"
    r"(?:\s+tx_dropped:\s*(\d+))?"
)


def _int(value):
    if value is None:
        return None
    m = re.match(r"^(\d+)", value)
    return int(m.group(1)) if m else None


def _pairs(text):
    """'k1: v1  k2: v2 words' -> {k1: 'v1', k2: 'v2 words'}; empty values kept."""
    out, key, words = {}, None, []
    for token in text.split():
        if _KEY_RE.match(token):
            if key is not None:
                out[key] = " ".join(words)
            key, words = token[:-1], []
        elif key is not None:
            words.append(token)
    if key is not None:
        out[key] = " ".join(words)
    return out


def parse_device(text) -> DeviceState:
    """Parse a pktgen device file (pure; unknown lines are ignored)."""
    state = DeviceState()
    section = None
    result_lines = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith("Params:"):
            section = "params"
            rest = line[len("Params:"):].strip()
            m = re.match(r"count\s+(\d+)\s*(.*)$", rest)
            if m:
                state.params["count"] = m.group(1)
                rest = m.group(2)
            state.params.update(_pairs(rest))
        elif line.startswith("Current:"):
            section = "current"
            state.current.update(_pairs(line[len("Current:"):]))
        elif line.startswith("Departures:"):
            section = "departures"
            state.departures = _departure_fields(line[len("Departures:"):], {})
        elif line.startswith("Result:"):
            section = "result"
            result_lines.append(line[len("Result:"):].strip())
        elif section == "departures":
            _departure_fields(line, state.departures)
        elif section == "result":
            result_lines.append(line)
        elif section == "params" and line.startswith("Flags:"):
            state.flags = line[len("Flags:"):].split()
        elif section == "params" and line.startswith("svlan_id:"):
            # the outer tag's line names its priority and DEI like the
            # inner one's (upstream): keep them apart as svlan_p/svlan_cfi
            state.params.update({("s" + k if k in ("vlan_p", "vlan_cfi") else k): v
                                 for k, v in _pairs(line).items()})
        elif section == "params":
            state.params.update(_pairs(line))
        elif section == "current":
            state.current.update(_pairs(line))
    state.result_text = " ".join(result_lines)
    m = _RUN_RE.search(state.result_text)
    if m:
        state.run = RunResult(*(int(g or 0) for g in m.groups()))
    return state


_HIST_RE = re.compile(r"^(\d+)-(\d+):(\d+)$")
_DROPS_RE = re.compile(r"^(\d+):(\d+)$")
_CATCH_UP_RE = re.compile(r"^(\d+)-(\d+):(\d+)$")


def _departure_fields(text, into):
    """A line of the Departures section: `key: N` pairs, the gap histogram,
    the policers' drops (bucket_drops: bucket frames:frames dropped), or
    the catch-ups (catch_ups: how many, then the largest as
    start_ns-end_ns:frames)."""
    if text.startswith("gap_hist_ns:"):
        into["gap_hist_ns"] = [tuple(int(g) for g in m.groups()) for m in map(_HIST_RE.match, text.split()[1:]) if m]
        return into
    if text.startswith("catch_ups:"):
        words = text.split()
        into["catch_up_count"] = _int(words[1]) if len(words) > 1 else None
        into["catch_ups"] = [tuple(int(g) for g in m.groups()) for m in map(_CATCH_UP_RE.match, words[2:]) if m]
        return into
    if text.startswith("bucket_drops:"):
        into["bucket_drops"] = [tuple(int(g) for g in m.groups()) for m in map(_DROPS_RE.match, text.split()[1:]) if m]
        return into
    for key, value in _pairs(text).items():
        number = _int(value)
        if number is not None:
            into[key] = number
    return into


@dataclass
class ThreadState:
    running: List[str]
    stopped: List[str]
    result: str


def parse_thread(text) -> ThreadState:
    """Parse a kpktgend_N file: 'Running: a b', 'Stopped: c', 'Result: ...'."""
    running, stopped, result = [], [], ""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("Running:"):
            running = [w for w in line[len("Running:"):].split()]
        elif line.startswith("Stopped:"):
            stopped = [w for w in line[len("Stopped:"):].split()]
        elif line.startswith("Result:"):
            result = line[len("Result:"):].strip()
    return ThreadState(running, stopped, result)


def parse_banner(text):
    """pgctrl's banner -> (banner line, version string or None)."""
    first = next((l.strip() for l in text.splitlines() if l.strip()), "")
    m = re.search(r"[Vv]ersion:?\s*([0-9][0-9A-Za-z.+_-]*)", first)
    return first, (m.group(1) if m else None)
