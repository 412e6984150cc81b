"""The per-test summary entries of results.json (one section per RFC 2544
test), as dataclasses; see docs/results-schema.md for what each figure means.

Dataclasses for the reason given in records.py. Field order is the order the
procedures have always written (then ip_version and unit, which the runner
adds), so `to_dict` gives the same JSON object.
"""
from dataclasses import asdict, dataclass
from typing import List, Optional

from rfc2544 import catalog


class Summary:
    REQUIRED = ("frame_size",)      # what the loader requires of an entry: its size, and its headline figure
    SIGNED = ()                     # rates, counts and times the loader lets be negative
    # Every entry's `frame_size` is the size sent, with FCS. Where the
    # profile asked a size the headers do not fit in, the entry also carries
    # `requested_frame_size` (written only then; rfc2544/wire.py).

    @classmethod
    def from_dict(cls, d):
        """Every key must be a field (TypeError otherwise): a typo in a
        procedure's summary fails where it is written, not in the report."""
        return cls(**d)

    def to_dict(self):
        d = requested_after_frame_size(asdict(self))
        if d.get("flows") is None:
            d.pop("flows", None)
        return d


def requested_after_frame_size(d):
    """The entry with `requested_frame_size` next to `frame_size`, or
    without it when the size sent is the size asked."""
    requested = d.pop("requested_frame_size", None)
    if requested is None:
        return d
    out = {}
    for key, value in d.items():
        out[key] = value
        if key == "frame_size":
            out["requested_frame_size"] = requested
    return out


@dataclass
class ThroughputSummary(Summary):
    REQUIRED = ("frame_size", "fps")
    frame_size: int
    fps: float                      # the NDR, 0 when not even min_load_fps passed
    min_load_fps: float
    mbps: Optional[float]
    line_mbps: Optional[float]
    pct_of_max: Optional[float]     # percent of the theoretical maximum
    theoretical_max_fps: Optional[float]
    max_load_fps: float
    max_load_source: str
    tester_bound: bool
    tester_ceiling_fps: Optional[float]
    search: str                     # bisection | mlr
    ndr_fps: Optional[float]
    ndr_upper_fps: Optional[float]
    pdr_fps: Optional[float]
    pdr_upper_fps: Optional[float]
    pdr_loss_ratio: Optional[float]
    resolution_pct: float
    trials: int
    traffic_s: float
    saved_traffic_s: float
    at_max_load: bool
    ip_version: int = 4
    unit: str = ""
    requested_frame_size: Optional[int] = None
    flows: Optional[int] = None     # flows per stream, written when more than one
    # the upper bound failed on the generator's micro-bursts (pacing.py); written only when true
    tester_bursty: bool = False
    # the tester's longest departure gap in the upper bound's failed trials, when
    # one was a stall (procedures/throughput.py); written only when set
    tester_stall_s: Optional[float] = None
    # several streams (bidirectional): each one's part of the NDR ({tx, rx,
    # fps, limiting}) and the streams that lost frames at the upper bound
    # ("tx->rx"); written only with several streams
    directions: Optional[List[dict]] = None
    limited_by: Optional[List[str]] = None
    # with the profile's search.latency_bound (minor 10; written only then):
    # the bound ({percentile, us, text, extension, search}), the highest
    # load without loss within it and the lowest seen failing it, and the
    # latency at the bound's percentile in the trials that decided it and the NDR
    latency_bound: Optional[dict] = None
    bounded_fps: Optional[float] = None
    bounded_upper_fps: Optional[float] = None
    bounded_mbps: Optional[float] = None
    bounded_pct_of_max: Optional[float] = None
    bounded_latency_ns: Optional[float] = None
    ndr_latency_ns: Optional[float] = None

    BOUNDED_KEYS = ("bounded_fps", "bounded_upper_fps", "bounded_mbps", "bounded_pct_of_max",
                    "bounded_latency_ns", "ndr_latency_ns")

    def to_dict(self):
        d = super().to_dict()
        if not d["tester_bursty"]:
            del d["tester_bursty"]
        for key in ("tester_stall_s", "directions", "limited_by", "latency_bound"):
            if d[key] is None:
                del d[key]
        if "latency_bound" not in d:
            for key in self.BOUNDED_KEYS:
                del d[key]
        return d


@dataclass
class LatencySummary(Summary):
    frame_size: int
    load_fps: float
    definition: str
    repetitions: int
    samples: int
    min_ns: float
    mean_ns: Optional[float]
    median_ns: Optional[float]
    p999_ns: Optional[float]
    max_ns: float
    worst_p999_ns: Optional[float]
    stddev_ns: Optional[float]
    pdv_mean_ns: Optional[float]
    pdv_max_ns: Optional[float]
    trials_with_loss: int
    ip_version: int = 4
    unit: str = ""
    requested_frame_size: Optional[int] = None
    flows: Optional[int] = None     # flows per stream, written when more than one
    # the load in % of the throughput (NDR): 100 as RFC 2544 26.2 asks, 0 a
    # minimal load (procedures/latency.py); absent in older files (100)
    throughput_pct: Optional[float] = None


@dataclass
class FrameLossPoint:
    load_pct: float
    load_fps: float
    loss_pct: float
    tester_limited: bool
    achieved_fps: float


@dataclass
class FrameLossSummary(Summary):
    REQUIRED = ("frame_size", "points")
    frame_size: int
    max_rate_fps: float
    max_rate_source: str
    step_pct: float
    duration_s: float
    points: List[FrameLossPoint]
    two_clean_trials: bool
    ip_version: int = 4
    unit: str = ""
    requested_frame_size: Optional[int] = None
    flows: Optional[int] = None     # flows per stream, written when more than one

    @classmethod
    def from_dict(cls, d):
        return cls(**dict(d, points=[FrameLossPoint(**p) for p in d["points"]]))


@dataclass
class BackToBackSummary(Summary):
    SIGNED = ("corrected_buffer_s",)    # below zero where the DUT forwards faster than the rate it is sent
    frame_size: int
    trials: int
    lengths: List[int]
    avg_frames: float
    min_frames: int
    max_frames: int
    stddev_frames: float
    implied_buffer_s: float
    corrected_buffer_s: float
    throughput_fps: float
    max_rate_fps: float
    max_rate_source: str
    burst_cap_frames: int
    bursts_at_cap: int
    resolution_pct: float
    ip_version: int = 4
    unit: str = ""
    requested_frame_size: Optional[int] = None
    flows: Optional[int] = None     # flows per stream, written when more than one


@dataclass
class BurstySummary(Summary):
    """RFC 2544 section 21: throughput with bursty traffic. Per burst size,
    the highest mean rate (bursts of that many frames back to back, at the
    generator's minimum gap, the gap between bursts searched) with no loss."""
    REQUIRED = ("frame_size", "bursts")
    frame_size: int
    bursts: List[dict]                  # per burst size: BURST_ROW_KEYS (procedures/bursty.py)
    largest_passing_burst: Optional[int]    # the largest burst size with an NDR (None: none passed)
    throughput_fps: Optional[float]     # the steady NDR of the same size, when measured
    max_load_fps: float
    max_load_source: str
    search: str
    resolution_pct: float
    ip_version: int = 4
    unit: str = ""
    requested_frame_size: Optional[int] = None
    flows: Optional[int] = None     # flows per stream, written when more than one


@dataclass
class SystemRecoverySummary(Summary):
    frame_size: int
    overload_fps: float
    recovery_fps: float
    overload_s: float
    recovery_period_s: float
    repetitions: int
    recovery_time_s: float
    recovery_times_s: List[float]
    recovery_time_bounds_s: List[List[float]]      # [low, high] per repetition
    method: str
    ip_version: int = 4
    unit: str = ""
    requested_frame_size: Optional[int] = None
    flows: Optional[int] = None     # flows per stream, written when more than one


@dataclass
class ResetSummary(Summary):
    frame_size: int
    load_fps: float
    repetitions: int
    reset_time_s: float
    reset_times_s: List[float]
    method: str
    ip_version: int = 4
    unit: str = ""
    requested_frame_size: Optional[int] = None
    flows: Optional[int] = None     # flows per stream, written when more than one


@dataclass
class ServiceConfigurationSummary(Summary):
    """ITU-T Y.1564 8.1: one service's configuration test. Per step (rows of
    procedures/y1564_configuration.py): what was offered and received, FLR,
    FTD, FDV, frames out of order, its verdict and the rules it failed."""
    REQUIRED = ("frame_size", "service", "cir_mbps", "steps")
    frame_size: int                     # the service's size sent; 0: an EMIX (its sizes: `services`)
    service: str
    cir_mbps: float
    eir_mbps: float
    colour_mode: str
    steps: List[dict]
    verdict: str                        # pass | fail | tester-limited
    failed_rules: List[str]             # IR, FLR, FTD, FDV: every rule a step failed
    ip_version: int = 4
    unit: str = ""
    requested_frame_size: Optional[int] = None
    flows: Optional[int] = None


def summary_type(section):
    """The entry type of results.json section `section` (catalog.py names it)."""
    return catalog.resolve(catalog.entry(section).summary)
