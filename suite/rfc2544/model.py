"""Data passed between the trial drivers, the searches/tests and the results.

A `Tester` runs one trial (RFC 2544 section 23: learning frames, waits, the
traffic, the residual wait) and returns a `TrialResult`. Searches never see a
Tester: they see `measure(duration, load)` built on top of it.
"""
import math
from dataclasses import asdict, dataclass, field
from typing import Dict, List, Optional, Protocol, Tuple

ETHERNET_OVERHEAD = 20  # preamble 8 + inter-frame gap 12 bytes, per frame


def theoretical_max_fps(frame_size, link_mbps):
    """Frames/s at line rate on Ethernet for a frame of `frame_size` bytes (with FCS)."""
    return link_mbps * 1e6 / ((frame_size + ETHERNET_OVERHEAD) * 8)


@dataclass
class TrialSpec:
    frame_size: int             # Ethernet frame size incl. FCS (64..1518); 0 = IMIX
    load_fps: float             # intended frames/s, summed over all streams
    duration_s: float           # traffic time
    ipv6: bool = False
    learning: bool = True       # send learning frames + wait before the trial
    latency: bool = False       # collect latency statistics (nanosecond header)
    abort_loss_ratio: Optional[float] = None  # stop early once loss provably exceeds this
    burst_frames: Optional[int] = None        # back-to-back: send exactly this many at max rate
    # Start idle: at least this long after the previous trial's traffic ended
    # (RFC 9004 buffer depletion before a burst). None: the profile's waits only.
    idle_s: Optional[float] = None
    test: str = "throughput"    # which RFC test asked for it (for the log)
    # System recovery (26.5): after `duration_s` at `load_fps`, change the rate
    # to `recovery_load_fps` for `recovery_duration_s` without stopping the
    # generator (one continuous sequence-number space). None: a plain trial.
    recovery_load_fps: Optional[float] = None
    recovery_duration_s: float = 0.0
    # Flows per stream (RFC 2544 section 12's second step, or a DUT with
    # RSS/RPS): UDP source ports that vary per frame (pktgen.DeviceConfig).
    flows: int = 1
    # What the flows vary: "udp_ports" (source ports), "dst_networks" (the
    # destination address over `flows` /24 networks, RFC 2544 section 12) or
    # "src_addresses" (`flows` consecutive IPv4 sources, pktgen.DeviceConfig).
    flow_spread: str = "udp_ports"
    # Bursty traffic (RFC 2544 section 21): frames leave in bursts of this
    # many back to back, the bursts spaced so the mean rate is load_fps
    # (the module's burst_frames). 1: evenly spaced.
    frames_per_burst: int = 1
    # Each stream's share of load_fps and of the frames, in the tester's
    # stream order (whole-number weights: a Y.1564 service's streams are
    # sent at their own rates). None: an even split.
    shares: Optional[Tuple[int, ...]] = None


@dataclass
class LatencyStats:
    samples: int
    min_ns: float
    mean_ns: float
    max_ns: float
    median_ns: Optional[float] = None
    p999_ns: Optional[float] = None
    stddev_ns: Optional[float] = None
    pdv_mean_ns: Optional[float] = None   # mean |latency difference| of consecutive frames
    pdv_max_ns: Optional[float] = None
    p99_ns: Optional[float] = None        # (schema minor 10: a latency bound may name it)


# The latency percentiles a bound may name: profile word -> LatencyStats field
BOUND_PERCENTILES = {"50": "median_ns", "99": "p99_ns", "99.9": "p999_ns", "max": "max_ns"}


@dataclass(frozen=True)
class LatencyBound:
    """A trial passes the bounded goal only without loss and with its
    latency at `percentile` (a BOUND_PERCENTILES key) at most `us`
    microseconds. An extension of RFC 2544 and RFC 9971 (neither defines a
    latency goal), as TRex's max_latency and Spirent's latency threshold are."""
    percentile: str
    us: float

    @classmethod
    def from_profile(cls, value):
        """From the validated profile's `search.latency_bound` (None: no bound)."""
        return None if value is None else cls(str(value["percentile"]), float(value["us"]))

    @property
    def field(self):
        return BOUND_PERCENTILES[self.percentile]

    @property
    def text(self):
        """"p99.9 latency <= 5000 us" (the results file's and the report's words)."""
        which = "maximum" if self.percentile == "max" else f"p{self.percentile}"
        # exact (a series key in compare and the store): 5000.0 -> "5000", 12.5 -> "12.5"
        return f"{which} latency <= {format(self.us, '.15g')} us"

    def exceeded(self, outcome):
        """True when the trial's latency breaks the bound, or it gave no
        latency to judge (a rate that cannot be shown within the bound is
        not within it)."""
        value = (outcome.latency_ns or {}).get(self.field)
        # NaN compares false with every bound: it shows nothing, so it is over
        return value is None or not math.isfinite(value) or value > self.us * 1000.0


# Facts that results, reports and the tester share (each layer reads them here):
GENERATOR_INTREE = "pktgen (in-tree)"       # conditions.generator of the kernel's own pktgen
SOURCE_GENERATOR = "generator"              # Spacing.source: rfc2544_pktgen's departure times
SOURCE_LINK = "calibration link"            # Spacing.source: arrivals on the tester's own link (an estimate)
TESTER_BOUND_MARGIN = 0.05                  # an NDR within 5 % of the tester's own ceiling is tester-bound


@dataclass
class Spacing:
    """How evenly the generator sent a trial's frames (rfc2544_pktgen's own
    departure times, or an estimate from a calibration link's arrivals):
    gaps between consecutive frames, and micro-bursts, runs of frames each
    sent less than half the nominal gap after the one before, and what a
    policer at the nominal rate makes of them. Several streams are merged:
    counts summed, the worst burst and bucket kept."""
    source: str                           # "generator" or "calibration link" (pacing.py)
    frames: int                           # frames with a departure (or arrival) time
    nominal_gap_ns: Optional[float]       # 1e9 / the stream's rate (None: unpaced)
    min_gap_ns: float
    mean_gap_ns: float
    max_gap_ns: float
    p50_gap_ns: Optional[float]
    p99_gap_ns: Optional[float]
    p999_gap_ns: Optional[float]
    micro_bursts: int
    longest_micro_burst: int              # frames (0: none)
    close_frames: int                     # frames sent < half the nominal gap after the one before
    hist: List[List[int]] = field(default_factory=list)   # [low_ns, high_ns, count]
    # A token-bucket policer at the nominal rate: the bucket it needs to
    # pass every frame (the most frames sent ahead of the rate), and
    # [bucket, frames] for buckets of 1, 2, 4 .. frames: the frames it
    # drops with that bucket (None, []: not recorded, an older module)
    bucket_needed: Optional[int] = None
    bucket_drops: List[List[int]] = field(default_factory=list)


@dataclass
class StreamCounts:
    """One stream's counts; a stream of several generators has their sums
    here and each one's in `generators` (schema_minor 9)."""

    tx_port: str
    rx_port: str
    tx_frames: int
    rx_frames: int
    lost: Optional[int] = None
    out_of_order: Optional[int] = None
    duplicates: Optional[int] = None
    # per generator: {"generator", "tx_frames", "rx_frames", "lost",
    # "out_of_order", "duplicates", "achieved_fps"}; None: one generator
    generators: Optional[List[dict]] = None


@dataclass
class HookRun:
    """One per-trial hook command as it ran on a DUT host (inventory
    `rfc2544_trial_hooks`). A failing hook is recorded, never fatal."""

    host: str
    phase: str                  # pre (before the trial's configuration) | post (after its final read)
    command: str
    exit_status: Optional[int]  # None: it could not run (connection lost, timeout)
    stdout: str = ""            # truncated to HOOK_OUTPUT_LIMIT characters
    stderr: str = ""


HOOK_OUTPUT_LIMIT = 4096


@dataclass
class TrialResult:
    spec: TrialSpec
    tx_frames: int              # frames the generators report sent
    rx_frames: int              # test frames the receivers counted
    intended_frames: int        # load_fps * duration (what should have been sent)
    achieved_fps: float         # tx_frames / actual sending time
    traffic_s: float            # actual sending time (shorter when aborted)
    tester_limited: bool        # the tester could not send the intended load
    aborted_early: bool = False
    saved_traffic_s: float = 0.0
    started: str = ""           # ISO 8601 UTC
    latency: Optional[LatencyStats] = None
    streams: List[StreamCounts] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    hooks: List[HookRun] = field(default_factory=list)
    spacing: Optional[Spacing] = None
    tester_bursty: bool = False     # failed, and the generator's micro-bursts explain the loss (pacing.py)
    # tester host -> its packet path's counters during the trial (drivers/host_path.py)
    host_path: Optional[Dict[str, dict]] = None
    tester_starved: bool = False    # failed, and the tester's own packet path dropped frames (starved.py)
    modifier_frames: Dict[str, int] = field(default_factory=dict)  # broadcast/management frames sent (modifiers.py)
    foreign_frames: int = 0     # test frames of streams the trial does not declare (pgrx v5): no loss

    @property
    def lost_frames(self):
        return max(self.tx_frames - self.rx_frames, 0)

    @property
    def loss_ratio(self):
        return self.lost_frames / self.tx_frames if self.tx_frames else 0.0

    def to_dict(self):
        d = asdict(self)
        d["lost_frames"] = self.lost_frames
        d["loss_ratio"] = self.loss_ratio
        return d


PROGRESS_KEYS = ("elapsed_s", "load_fps", "tx_frames", "rx_frames", "lost_frames", "seq_max")


class Tester(Protocol):
    """What the RFC 2544 tests need from the traffic side."""

    generator_name: str         # e.g. "rfc2544_pktgen" or "pktgen (in-tree)"
    receiver_name: str          # e.g. "pgrx" or "interface counters"
    full_fidelity: bool         # False: interface counters, no per-stream loss/latency
    # Optional (read with getattr, default False): the tester honours
    # TrialSpec.recovery_load_fps (a rate change without stopping).
    supports_recovery: bool
    # Optional likewise: the tester honours TrialSpec.frames_per_burst.
    paced_bursts: bool

    def run_trial(self, spec: TrialSpec, progress=None) -> TrialResult:
        """Run one full trial; `progress(dict)` is called with live counters.

        Keys of the progress dict (PROGRESS_KEYS): elapsed_s (since traffic
        start), load_fps (rate being offered now), tx_frames, rx_frames,
        lost_frames (receiver's sequence-gap count; None without one),
        seq_max (highest sequence number received, in frames of the whole
        trial: a stream's number over its share of the rate; None without one).
        The system recovery and reset procedures estimate times from these
        samples, so the sampling interval bounds their resolution.
        """

    def stop_all(self) -> None:
        """Stop every generator on every host (Ctrl-C, errors); must not raise."""

    def conditions(self) -> dict:
        """Facts about hosts for the report: kernel, NICs, driver, module version, tuning."""
