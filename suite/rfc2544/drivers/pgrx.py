"""The module's receiver, /proc/net/pktgen/pgrx.

Commands and a parser for its `display script` format, versions 1 to 6,
exactly as documented in docs/pgrx-receiver.md ("pgrx script format"):
record words with fixed key=value fields. Version 2 is version 1 plus one
`invalid` record (test frames not believed, by class); version 3 adds the
frame length counted (`pkt_size=` in the header) and `wrong_size=` (frames
of another length) to `invalid`; version 4 lets `dev=` and `ifindex=` list
several devices, comma-separated (`rx DEV [DEV ...]`); version 5 (module
1.2) adds `declared=` (streams the controller declared with `streams`) and
`foreign=` (frames of any other source, counted nowhere else) to the
header; version 6 (module 1.3) writes a stream counted by the stream id its
frames carry as `stream sid=N ...` (read here as the stream `sid:N`, the
name `streams` declares it by). The parser is strict:
an unknown version, a missing key or a malformed number is an error, not a
guess.
"""
import math
import re
from fractions import Fraction
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from rfc2544.errors import InfraError

from rfc2544.drivers import validate
from rfc2544.drivers.pktgen import MAX_STREAM_ID
from rfc2544.drivers.script import PROC_PKTGEN, Batch

PGRX = f"{PROC_PKTGEN}/pgrx"
LEVELS = ("counter", "basic", "time")
FORMAT_VERSION = 6
FORMAT_VERSIONS = (1, 2, 3, 4, 5, 6)    # read; 1 has no `invalid` record, 3 adds pkt_size and wrong_size,
                                        # 4 lists several devices, 5 declared streams and foreign frames,
                                        # 6 streams by stream id
PKT_SIZE_VERSION = 3          # the first format whose module takes `pkt_size N`
MAX_DEVICES = 4               # devices one pgrx watches (module 1.1, format v4)
MULTI_DEVICE_MODULE = (1, 1)  # the first module version whose `rx` takes several devices
DECLARE_VERSION = 5           # the first format whose module takes `streams ADDR[,ADDR...]`
STREAM_ID_VERSION = 6         # the first whose streams may be `sid=N` (declared as `sid:N`)
MAX_DECLARED = 64             # streams one `streams` write declares at most
FCS = 4                       # pkt_size counts the frame without it
U64_OVERFLOW = 2**64 - 1

_KEYS = {
    "pgrx": ("version", "enabled", "dev", "ifindex", "statistics", "action", "streams", "streams_dropped"),
    "cpu": ("id", "packets", "bytes", "first_ns", "last_ns"),
    "total": ("id", "packets", "bytes", "first_ns", "last_ns"),
    "stream": ("src", "packets", "bytes", "seq_max", "lost", "ooo", "dup", "old"),
    "stat": ("name", "n", "skipped", "min", "max", "mean", "var", "sum", "sumsq"),
    "percentile": ("name", "n", "p50", "p90", "p99", "p999", "p9999"),
    "hist": ("name", "low", "high", "count"),
    "invalid": ("bad_len", "bad_csum", "bad_ts", "seq_jump"),     # v2
}
# what version 3 changed: the header's frame length, the frames of another length
_KEYS_V3 = {
    "pgrx": ("version", "enabled", "dev", "ifindex", "statistics", "action", "pkt_size", "streams",
             "streams_dropped"),
    "invalid": _KEYS["invalid"] + ("wrong_size",),
}
# what version 5 added: the declared streams and the frames of no declared stream
_KEYS_V5 = {"pgrx": _KEYS_V3["pgrx"] + ("declared", "foreign")}
# a v6 stream counted by its id
_KEYS_SID = {"stream": ("sid",) + _KEYS["stream"][1:]}
_TEXT_KEYS = {"dev", "ifindex", "statistics", "action", "src", "name", "id", "mean"}
_SID_RE = re.compile(r"^sid:([1-9][0-9]{0,4})$")
_LIST_RE = re.compile(r"^(-|[^,\s]+(,[^,\s]+)*)$")


def enable_batch(devs, level="basic", batch=None):
    """Enable counting on `devs` (a device or a list of up to MAX_DEVICES;
    resets), script display, drop counted packets."""
    if level not in LEVELS:
        raise ValueError(f"statistics level must be one of {LEVELS}")
    devs = [devs] if isinstance(devs, str) else list(devs)
    if not 1 <= len(devs) <= MAX_DEVICES:
        raise ValueError(f"pgrx watches 1 to {MAX_DEVICES} devices, not {len(devs)}")
    batch = batch if batch is not None else Batch()
    return (batch.write(PGRX, "rx " + " ".join(validate.ifname(d) for d in devs))
            .write(PGRX, "display script")
            .write(PGRX, "action drop")
            .write(PGRX, f"statistics {level}"))


def reset_batch(level=None, batch=None):
    """Zero the counters (and switch statistics level first, which also resets)."""
    batch = batch if batch is not None else Batch()
    if level is not None:
        if level not in LEVELS:
            raise ValueError(f"statistics level must be one of {LEVELS}")
        batch.write(PGRX, f"statistics {level}")
    return batch.write(PGRX, "rx_reset")


def counted_length(frame_size):
    """pgrx's `pkt_size` for frames of `frame_size` bytes on the wire (with
    FCS), as its header reads back; 0 (any length) for None."""
    size = 0 if frame_size is None else int(frame_size) - FCS
    if size and not 60 <= size <= 14 + 65535:
        raise ValueError(f"frame size {frame_size} B cannot be counted by pgrx")
    return size


def pkt_size_batch(size, batch=None):
    """Count only frames of `size` bytes as counted_length() gives it.
    Format v3 modules only (PKT_SIZE_VERSION)."""
    batch = batch if batch is not None else Batch()
    return batch.write(PGRX, f"pkt_size {int(size)}")


def stream_key(item):
    """A declared stream as pgrx names it: `sid:N` (a stream id, 1..65535;
    format v6 modules) or a source address; ValueError otherwise."""
    m = _SID_RE.match(item)
    if m:
        if int(m.group(1)) > MAX_STREAM_ID:
            raise ValueError(f"stream id {m.group(1)} is above {MAX_STREAM_ID}")
        return item
    return validate.ipv6(item, "stream source") if ":" in item else validate.ipv4(item, "stream source")


def declare_batch(streams, batch=None):
    """Declare the trial's streams (format v5 modules, DECLARE_VERSION), each
    by its source address or, from format v6, as `sid:N` by the stream id
    its frames carry: each new session starts with exactly these, and frames
    of any other stream count as foreign. An empty list: every source (or
    id) is a stream (`streams any`)."""
    batch = batch if batch is not None else Batch()
    streams = list(dict.fromkeys(streams))
    if len(streams) > MAX_DECLARED:
        raise ValueError(f"pgrx takes at most {MAX_DECLARED} declared streams, not {len(streams)}")
    return batch.write(PGRX, "streams " + (",".join(stream_key(s) for s in streams) or "any"))


def disable_batch(batch=None):
    batch = batch if batch is not None else Batch()
    return batch.write(PGRX, "rx_disable")


@dataclass
class RxStream:
    src: str            # its source address, or `sid:N` for a stream counted by its id (v6)
    packets: int
    bytes: int
    seq_max: int
    lost: int
    ooo: int
    dup: int
    old: int

    @property
    def unique(self):
        """Distinct test frames received."""
        return max(self.packets - self.dup - self.old, 0)


@dataclass
class RxStat:
    name: str
    n: int
    skipped: int
    min: int
    max: int
    mean: float
    var: int
    sum: int
    sumsq: int

    @property
    def stddev(self):
        return math.sqrt(self.var)


@dataclass
class HistBucket:
    low: int
    high: int
    count: int


@dataclass
class RxInvalid:
    """Test frames not believed (format v2; all 0 when read from v1)."""
    bad_len: int = 0        # UDP length short of the test header or past the IP end: not counted
    bad_csum: int = 0       # UDP checksum wrong: not counted
    bad_ts: int = 0         # timestamp outside the sane window: counted, no latency sample
    seq_jump: int = 0       # far-ahead sequence never confirmed: not in its stream's packets
    wrong_size: int = 0     # another length than pkt_size (v3): not counted, so lost

    @property
    def total(self):
        return self.bad_len + self.bad_csum + self.bad_ts + self.seq_jump + self.wrong_size


@dataclass
class PgrxState:
    version: int
    enabled: bool
    dev: str                            # v4: "a,b" for several devices
    ifindex: str                        # as dev: "5" or "5,7"
    statistics: str
    action: str
    streams_dropped: int
    pkt_size: Optional[int] = None      # the frame length counted, 0 any; None: format v1/v2
    declared: int = 0                   # streams declared (v5; 0: every source or id is a stream)
    foreign: int = 0                    # test frames of undeclared streams (v5): in no stream, no total
    cpus: List[dict] = field(default_factory=list)
    total_packets: int = 0
    total_bytes: int = 0
    first_ns: int = 0
    last_ns: int = 0
    streams: List[RxStream] = field(default_factory=list)
    stats: Dict[str, RxStat] = field(default_factory=dict)
    percentiles: Dict[str, Dict[str, int]] = field(default_factory=dict)
    hist: List[HistBucket] = field(default_factory=list)
    invalid: RxInvalid = field(default_factory=RxInvalid)
    result: str = ""

    def stream(self, key):
        """The stream of a source address, or of `sid:N`; None if not seen."""
        return next((s for s in self.streams if s.src == key), None)

    @property
    def devs(self):
        """The watched devices, in the order `rx` named them ([] for none)."""
        return [] if self.dev == "-" else self.dev.split(",")

    @property
    def is_zero(self):
        """Nothing counted: declared streams are listed from the start, empty."""
        return (self.total_packets == 0 and all(s.packets == 0 for s in self.streams)
                and self.streams_dropped == 0 and self.foreign == 0)


class PgrxFormatError(InfraError):
    pass


def _fields(word, rest, lineno, version):
    keys = _KEYS[word]
    if version >= 3:
        keys = _KEYS_V3.get(word, keys)
    if version >= 5:
        keys = _KEYS_V5.get(word, keys)
    if version >= STREAM_ID_VERSION and rest.startswith("sid="):
        keys = _KEYS_SID.get(word, keys)
    tokens = rest.split(" ") if rest else []
    if len(tokens) != len(keys):
        raise PgrxFormatError(f"pgrx line {lineno}: '{word}' has {len(tokens)} fields, expected {len(keys)}")
    out = {}
    for key, token in zip(keys, tokens):
        k, sep, value = token.partition("=")
        if k != key or not sep:
            raise PgrxFormatError(f"pgrx line {lineno}: expected '{key}=' in '{word}', got '{token}'")
        if key in _TEXT_KEYS:
            if key == "mean":
                try:
                    out[key] = float(value)
                except ValueError:
                    raise PgrxFormatError(f"pgrx line {lineno}: mean={value!r} is not a number")
            elif key in ("dev", "ifindex") and not _LIST_RE.match(value):
                raise PgrxFormatError(f"pgrx line {lineno}: {key}={value!r} is not a device list")
            elif key == "ifindex" and not all(v.isdigit() for v in value.split(",")):
                raise PgrxFormatError(f"pgrx line {lineno}: ifindex={value!r} is not a list of numbers")
            else:
                out[key] = value
        else:
            if not value.isdigit():
                raise PgrxFormatError(f"pgrx line {lineno}: {key}={value!r} is not an unsigned integer")
            out[key] = int(value)
    return out


def _header_version(rest, lineno):
    """The header's version= (its first field), which decides its other keys."""
    key, _, value = rest.partition(" ")[0].partition("=")
    if key != "version" or not value.isdigit():
        raise PgrxFormatError(f"pgrx line {lineno}: expected 'version=' first in 'pgrx', got {rest[:40]!r}")
    return int(value)


def parse(text) -> PgrxState:
    """Parse pgrx's `display script` output (format versions 1 to 6). Pure."""
    state = None
    version = FORMAT_VERSION
    seen_end = False
    seen_invalid = False
    n_streams = None
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip("\n")
        if not line.strip():
            continue
        if line.startswith("Result:"):
            if state is not None:
                state.result = line[len("Result:"):].strip()
            continue
        word, _, rest = line.partition(" ")
        if seen_end:
            raise PgrxFormatError(f"pgrx line {lineno}: data after 'end'")
        if word == "end":
            if state is None:
                raise PgrxFormatError("pgrx: 'end' before the 'pgrx' header")
            seen_end = True
            continue
        if word not in _KEYS:
            raise PgrxFormatError(f"pgrx line {lineno}: unknown record '{word}' (display script format v{FORMAT_VERSION} expected)")
        if word == "invalid" and state is not None and state.version < 2:
            raise PgrxFormatError(f"pgrx line {lineno}: 'invalid' record in format v{state.version}")
        if word == "pgrx":
            version = _header_version(rest, lineno)
            if version not in FORMAT_VERSIONS:
                raise PgrxFormatError(f"pgrx: format version {version} is not supported "
                                      f"(this suite reads v{', v'.join(map(str, FORMAT_VERSIONS))})")
        f = _fields(word, rest, lineno, version if state is None else state.version)
        if word == "pgrx":
            state = PgrxState(version=f["version"], enabled=bool(f["enabled"]), dev=f["dev"],
                              ifindex=f["ifindex"], statistics=f["statistics"], action=f["action"],
                              streams_dropped=f["streams_dropped"], pkt_size=f.get("pkt_size"),
                              declared=f.get("declared", 0), foreign=f.get("foreign", 0))
            n_streams = f["streams"]
            continue
        if state is None:
            raise PgrxFormatError(f"pgrx line {lineno}: '{word}' before the 'pgrx' header (is 'display script' set?)")
        if word == "cpu":
            state.cpus.append(f)
        elif word == "total":
            state.total_packets, state.total_bytes = f["packets"], f["bytes"]
            state.first_ns, state.last_ns = f["first_ns"], f["last_ns"]
        elif word == "stream":
            if "sid" in f:
                sid = f.pop("sid")
                if not 1 <= sid <= MAX_STREAM_ID:
                    raise PgrxFormatError(f"pgrx line {lineno}: sid={sid} is not a stream id (1..{MAX_STREAM_ID})")
                f["src"] = f"sid:{sid}"
            state.streams.append(RxStream(**f))
        elif word == "stat":
            state.stats[f["name"]] = RxStat(**f)
        elif word == "percentile":
            state.percentiles[f.pop("name")] = f
        elif word == "hist":
            state.hist.append(HistBucket(f["low"], f["high"], f["count"]))
        elif word == "invalid":
            state.invalid = RxInvalid(**f)
            seen_invalid = True
    if state is None:
        raise PgrxFormatError("pgrx: no 'pgrx' header line (is 'display script' set?)")
    if not seen_end:
        raise PgrxFormatError("pgrx: output ends without 'end' (truncated read?)")
    if state.version >= 2 and not seen_invalid:
        raise PgrxFormatError(f"pgrx: format v{state.version} without its 'invalid' record")
    if n_streams is not None and n_streams != len(state.streams):
        raise PgrxFormatError(f"pgrx: header says {n_streams} streams, {len(state.streams)} stream lines follow")
    return state


def bucket_value(bucket: HistBucket):
    """A bucket's representative value: its midpoint (overflow: its low end)."""
    if bucket.high >= U64_OVERFLOW:
        return float(bucket.low)
    return (bucket.low + bucket.high) / 2


def percentile_from_hist(buckets, q, lo=None, hi=None) -> Optional[float]:
    """Nearest-rank q-quantile from histogram buckets (sorted by low), as the
    bucket midpoint clamped to [lo, hi]; None when empty. Used to merge the
    histograms of several receivers, where the per-receiver percentiles
    cannot simply be combined."""
    buckets = sorted(buckets, key=lambda b: b.low)
    n = sum(b.count for b in buckets)
    if n == 0:
        return None
    rank = max(1, math.ceil(Fraction(str(q)) * n))  # exact: 0.999*1000 is 999
    seen = 0
    for b in buckets:
        seen += b.count
        if seen >= rank:
            value = bucket_value(b)
            if lo is not None:
                value = max(value, lo)
            if hi is not None:
                value = min(value, hi)
            return value
    return None
