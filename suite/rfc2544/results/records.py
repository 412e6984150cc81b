"""results.json as typed records (docs/results-schema.md, docs/results.schema.json).

Dataclasses rather than a validation library: no new runtime dependency, and
the suite already models trials with dataclasses (model.py). Each record has
`from_dict` (a key it does not know, or a missing required one, raises
TypeError) and `to_dict` (the JSON object, keys in the order the writer has
always used, so files stay byte-for-byte comparable). results.py writes
through them; the document on disk is still plain JSON.
"""
from dataclasses import asdict, dataclass, field
from typing import Dict, List, Optional, Union

from rfc2544.model import HookRun, LatencyStats, Spacing, StreamCounts, TrialResult, TrialSpec
from rfc2544 import catalog
from rfc2544.results.summaries import Summary, requested_after_frame_size, summary_type

SCHEMA = "rfc2544-results"
SCHEMA_VERSION = 2
# Additions a version-2 reader may ignore: 1 = frame sizes are the size
# sent, with requested_frame_size where the size asked differs; latency rows
# per load (throughput_pct). 2 = `flows` per stream on plan steps, trial specs
# and summary entries, written when more than one (its steps are units of their
# own: unit_key). Files without `schema_minor` (minor 0, and runs resumed
# from them) state the size asked: results/load.py reads them as sent.
# 3 = `direction` (uni | bi) in the profile and the conditions, and per-stream
# `directions` and `limited_by` on throughput entries with several streams.
# 4 = the `bursty` section (RFC 2544 section 21) and `frames_per_burst` on
# trial specs, written when more than one.
# 5 = `vlan` and `svlan` on tagged conditions.streams (frame sizes count the tags).
# 6 = the profile's `modifiers` (RFC 2544 section 11: broadcast and management
# frames), `modifiers` in the conditions and `modifier_frames` on trials, when on.
# 7 = `flow_spread: src_addresses` (profile, trial specs), and `vlan_pcp`,
# `vlan_dei`, `svlan_pcp`, `svlan_dei` on conditions.streams that set them.
# 8 = `rx_vlan` and `rx_svlan` on conditions.streams whose tags the DUT changes
# (the tags the frames arrive with; 0: none).
# 9 = `generators` on conditions.streams sent by more than one generator, and
# on their trial `streams` each generator's counts (model.StreamCounts).
# 10 = the profile's `search.latency_bound` and, with it, `latency_bound`,
# `bounded_fps` and the fields beside it on throughput entries; `p99_ns` in
# a trial's latency; `conditions.latency_clock` (one-way latency's clock error).
# 11 = `conditions.calibration_bound`: per frame size, which side (sender or
# receiver) bounds the calibrated ceiling.
# 12 = `bucket_needed` and `bucket_drops` in a trial's `spacing` (a
# policer at the trial's rate: model.Spacing).
# 13 = a trial's `host_path` and `tester_starved`, `conditions.cpus` and
# `conditions.generator_cpus` (where the generators send).
# 14 = `held_ns` in a trial's `host_path` (the path's longest hold, from
# arrivals timed against departures, where a DUT runs on a tester host).
# 15 = ITU-T Y.1564: the `y1564_configuration` section, the run's `services`,
# `service` on plan steps, the profile's `y1564_configuration`, and
# `shares` on trial specs whose streams were sent at rates of their own.
SCHEMA_MINOR = 15


def sections():
    """The tests' sections of a results file, in the table's order (catalog.py)."""
    return catalog.names()


def _plain(record, omit_when=None):
    """asdict, minus the optional keys whose value says "absent"."""
    out = asdict(record)
    for key, absent in (omit_when or {}).items():
        if out.get(key) == absent:
            del out[key]
    return out


@dataclass
class PlanStep:
    unit: str                   # "test/ipv4/64"
    test: str
    frame_size: int             # 0 = IMIX
    ip_version: int
    state: str = "pending"      # pending | done | skipped
    note: Optional[str] = None  # why a step was skipped
    # the size the profile asked, when the headers do not fit in it and
    # `frame_size` is the smallest that holds them (rfc2544/wire.py)
    requested_frame_size: Optional[int] = None
    throughput_pct: Optional[float] = None   # latency at another load than the throughput's: the load in %
    flows: Optional[int] = None              # flows per stream, when more than one
    service: Optional[str] = None            # a Y.1564 test's step: its service's name

    @classmethod
    def from_dict(cls, d):
        return cls(**d)

    def to_dict(self):
        return requested_after_frame_size(_plain(self, {"note": None, "throughput_pct": None, "flows": None,
                                                         "service": None}))


@dataclass
class Interruption:
    at: str
    reason: str
    trials_kept: int

    @classmethod
    def from_dict(cls, d):
        return cls(**d)

    def to_dict(self):
        return asdict(self)


@dataclass
class TrialRecord:
    """One trial as recorded: the TrialResult's counts, derived figures, and
    its spec so that --resume can replay it."""

    id: int
    unit: str
    test: str
    frame_size: int
    ip_version: int
    load_fps: float
    load_pct: Optional[float]
    duration_s: float
    traffic_s: float
    tx_frames: int
    rx_frames: int
    intended_frames: int
    lost_frames: int
    loss_ratio: float
    achieved_fps: float
    verdict: str                # pass | fail | tester-limited | aborted
    tester_limited: bool
    aborted_early: bool
    saved_traffic_s: float
    started: str
    latency: Optional[LatencyStats]
    streams: List[StreamCounts]
    notes: List[str]
    spec: TrialSpec
    hooks: List[HookRun] = field(default_factory=list)     # absent in files written before hooks
    samples: Optional[List[dict]] = None                   # system recovery only
    superseded: bool = False
    spacing: Optional[Spacing] = None       # the generator's departure spacing (rfc2544_pktgen only)
    tester_bursty: bool = False             # pacing.py's rule: the loss is the generator's micro-bursts
    host_path: Optional[Dict[str, dict]] = None   # tester hosts' packet path counters; schema_minor 13
    tester_starved: bool = False            # starved.py's rule: the tester's own path dropped frames
    requested_frame_size: Optional[int] = None   # the size asked, when `frame_size` (sent) differs
    modifier_frames: Dict[str, int] = field(default_factory=dict)   # section 11's frames sent; schema_minor 6

    KEY_ORDER = ("latency", "streams", "notes", "hooks", "spec", "samples", "superseded", "spacing")

    @classmethod
    def from_result(cls, record_id, unit, result, verdict, load_pct):
        spec = result.spec
        return cls(
            id=record_id, unit=unit, test=spec.test, frame_size=spec.frame_size,
            ip_version=6 if spec.ipv6 else 4, load_fps=spec.load_fps, load_pct=load_pct,
            duration_s=spec.duration_s, traffic_s=result.traffic_s, tx_frames=result.tx_frames,
            rx_frames=result.rx_frames, intended_frames=result.intended_frames,
            lost_frames=result.lost_frames, loss_ratio=result.loss_ratio,
            achieved_fps=result.achieved_fps, verdict=verdict, tester_limited=result.tester_limited,
            aborted_early=result.aborted_early, saved_traffic_s=result.saved_traffic_s,
            started=result.started, latency=result.latency, streams=list(result.streams),
            notes=list(result.notes), hooks=list(result.hooks), spec=spec, spacing=result.spacing,
            tester_bursty=result.tester_bursty, modifier_frames=dict(result.modifier_frames),
            host_path=getattr(result, "host_path", None), tester_starved=getattr(result, "tester_starved", False))

    @classmethod
    def from_dict(cls, d):
        d = dict(d)
        lat = d.pop("latency", None)
        spacing = d.pop("spacing", None)
        return cls(latency=LatencyStats(**lat) if lat else None,
                   spacing=Spacing(**spacing) if spacing else None,
                   streams=[StreamCounts(**s) for s in d.pop("streams", [])],
                   hooks=[HookRun(**h) for h in d.pop("hooks", [])],
                   spec=TrialSpec(**d.pop("spec")), notes=list(d.pop("notes", [])), **d)

    def to_dict(self):
        out = requested_after_frame_size(_plain(self, {"samples": None, "superseded": False,
                                                       "spacing": None, "tester_bursty": False,
                                                       "modifier_frames": {}, "host_path": None,
                                                       "tester_starved": False}))
        for key, default in (("flows", 1), ("frames_per_burst", 1), ("flow_spread", "udp_ports"), ("shares", None)):
            if out["spec"].get(key) == default:    # the spec as it always was
                del out["spec"][key]
        for stream in out["streams"]:
            if stream.get("generators") is None:   # one generator: the stream as it always was
                stream.pop("generators", None)
        # hooks sit between notes and spec, as the writer has always put them
        tail = {k: out.pop(k) for k in self.KEY_ORDER if k in out}
        out.update(tail)
        return out

    def to_result(self):
        """The TrialResult a resumed run replays."""
        return TrialResult(
            spec=self.spec, tx_frames=self.tx_frames, rx_frames=self.rx_frames,
            intended_frames=self.intended_frames, achieved_fps=self.achieved_fps,
            traffic_s=self.traffic_s, tester_limited=self.tester_limited,
            aborted_early=self.aborted_early, saved_traffic_s=self.saved_traffic_s,
            started=self.started, latency=self.latency, streams=list(self.streams),
            notes=list(self.notes), hooks=list(self.hooks), spacing=self.spacing,
            tester_bursty=self.tester_bursty, modifier_frames=dict(self.modifier_frames),
            host_path=self.host_path, tester_starved=self.tester_starved)


@dataclass
class ResultsDocument:
    """The whole results.json. `profile` and `conditions` stay mappings: the
    profile is validated by profiles.validate (typed view: profile_model),
    the host facts are whatever the hosts reported."""

    started: str
    profile: dict
    plan: List[PlanStep]
    deviations: List[Union[dict, str]]     # deviations.Deviation dicts; sentences in older files
    conditions: dict
    tool: dict = field(default_factory=lambda: {"name": "rfc2544", "version": ""})
    schema: str = SCHEMA
    schema_version: int = SCHEMA_VERSION
    schema_minor: int = SCHEMA_MINOR
    complete: bool = False
    finished: Optional[str] = None
    interruptions: List[Interruption] = field(default_factory=list)
    trials: List[TrialRecord] = field(default_factory=list)
    sections: Dict[str, List[Summary]] = field(default_factory=lambda: {s: [] for s in sections()})
    probes: Optional[Dict[str, float]] = None      # written only once a probe trial ran
    services: Optional[List[dict]] = None          # Y.1564 services (y1564/services.to_record); only then

    @classmethod
    def from_dict(cls, d):
        d = dict(d)
        d.setdefault("schema_minor", 0)          # written before minors: 0
        entries = {s: [summary_type(s).from_dict(e) for e in d.pop(s, [])] for s in sections()}
        return cls(plan=[PlanStep.from_dict(p) for p in d.pop("plan")],
                   interruptions=[Interruption.from_dict(i) for i in d.pop("interruptions", [])],
                   trials=[TrialRecord.from_dict(t) for t in d.pop("trials", [])],
                   deviations=list(d.pop("deviations", [])), sections=entries, **d)

    def to_dict(self):
        out = {"schema": self.schema, "schema_version": self.schema_version,
               **({"schema_minor": self.schema_minor} if self.schema_minor else {}), "complete": self.complete,
               "started": self.started, "finished": self.finished, "tool": dict(self.tool),
               "profile": dict(self.profile), "plan": [p.to_dict() for p in self.plan],
               "deviations": list(self.deviations), "conditions": self.conditions,
               "interruptions": [i.to_dict() for i in self.interruptions],
               "trials": [t.to_dict() for t in self.trials],
               **{s: [e.to_dict() for e in self.sections.get(s, [])] for s in sections()}}
        if self.services is not None:      # before probes: create writes it, a probe's trial adds probes
            out["services"] = [dict(s) for s in self.services]
        if self.probes is not None:
            out["probes"] = dict(self.probes)
        return out
