"""A trial's rate schedule: the segments the generators send, in order.

A plain trial is one segment (frames or duration at one rate). System
recovery (RFC 2544 26.5) is two: the overload, then a lower rate, sent
without stopping the generators (one continuous sequence-number space).
The trial engine runs any number of segments the same way, so a rate change
is data here rather than a special case in the traffic loop.
"""
import math
from dataclasses import dataclass
from typing import List, Optional, Tuple

from rfc2544.errors import BadInput

from rfc2544.drivers.streams import split_evenly, split_weighted


@dataclass(frozen=True)
class Segment:
    """One stretch at one rate: `frames` (all streams together) or
    `duration_s` at `load_fps`. load_fps None or 0: as fast as possible."""

    load_fps: Optional[float]
    duration_s: Optional[float] = None
    frames: Optional[int] = None
    shares: Optional[Tuple[int, ...]] = None    # each stream's weight (TrialSpec.shares); None: even


def segments_of(spec) -> List[Segment]:
    """The segments a TrialSpec asks for (the spec is checked already)."""
    if spec.burst_frames is not None:
        first = Segment(spec.load_fps, frames=spec.burst_frames, shares=spec.shares)
    else:
        first = Segment(spec.load_fps, duration_s=spec.duration_s, shares=spec.shares)
    if spec.recovery_load_fps is None:
        return [first]
    return [first, Segment(spec.recovery_load_fps, duration_s=spec.recovery_duration_s, shares=spec.shares)]


def _split(segment, shape):
    """-> (frames per plan, frames/s per plan or None each). `shape`: the
    generators of each stream; a stream's share (an even split over the
    streams, or by the segment's shares) is split evenly again over its
    generators."""
    n = len(shape)
    shares = segment.shares
    if shares is not None and (len(shares) != n or min(shares) < 1):
        raise BadInput(f"{n} streams need {n} shares of at least 1 (got {list(shares)})")

    def split(total):
        return split_evenly(total, n) if shares is None else split_weighted(total, shares)
    if segment.frames is not None:
        per_stream = split(segment.frames)
    else:
        # at least a frame for every generator, the smallest share's too
        least = max(shape) * (n if shares is None else math.ceil(sum(shares) / min(shares)))
        per_stream = split(max(round(segment.load_fps * segment.duration_s), least))
    counts = [c for total, g in zip(per_stream, shape) for c in split_evenly(total, g)]
    if any(c < 1 for c in counts):
        over = f"{n} streams" if len(counts) == n else f"the {len(counts)} generators of {n} streams"
        raise BadInput(f"{segment.frames or 0} frames cannot be split over {over}")
    if segment.load_fps and segment.load_fps > 0:
        # whole frames/s (the module's ratep) that add up to the stream's rate
        if shares is None:
            stream_rates = [max(int(round(segment.load_fps / n)), 1)] * n
        else:
            stream_rates = [max(int(round(segment.load_fps * s / sum(shares))), 1) for s in shares]
        if min(stream_rates) < max(shape):
            raise BadInput(f"{segment.load_fps:g} frames/s over {n} stream(s) is {min(stream_rates)} frames/s a "
                           f"stream: under 1 frame/s for each of its {max(shape)} generators (use fewer generators)")
        rates = [r for per_stream, g in zip(stream_rates, shape) for r in split_evenly(per_stream, g)]
    else:
        rates = [None] * len(counts)
    return counts, rates


def shape_of(plans_or_n):
    """The generators of each stream, from a count of one-generator streams
    or from plans (drivers/streams.py: a plan per generator)."""
    if isinstance(plans_or_n, int):
        return (1,) * plans_or_n
    shape = {}
    for p in plans_or_n:
        shape[p.stream] = p.generators
    return tuple(shape[k] for k in sorted(shape))


class RateSchedule:
    """Segments split over the streams' generators: frames[k][i] and
    rates[k][i] are segment k of plan i (`streams`: a count of
    one-generator streams, or the plans). Each device is configured with
    its total count and the first rate; later rates are written while it
    sends, to every generator."""

    def __init__(self, segments, streams):
        if not segments:
            raise BadInput("a trial needs at least one segment")
        if any(not s.load_fps or s.load_fps < 0 for s in segments[:-1]):
            # a change is aimed from the sending rate: as fast as possible has none
            raise BadInput("a rate change cannot follow a burst (a segment without a rate)")
        self.segments = list(segments)
        shape = shape_of(streams)
        split = [_split(s, shape) for s in self.segments]
        self.frames = [c for c, _ in split]
        self.rates = [r for _, r in split]

    @classmethod
    def of_spec(cls, spec, streams):
        return cls(segments_of(spec), streams)

    @property
    def changes(self):
        """How many rate changes happen while sending."""
        return len(self.segments) - 1

    def totals(self):
        """Frames per stream over all segments (the device counts)."""
        return [sum(col) for col in zip(*self.frames)]

    def first_rates(self):
        return list(self.rates[0])

    def boundary(self, k):
        """Frames per stream sent before segment k starts."""
        return [sum(col) for col in zip(*self.frames[:k])]

    def planned_s(self):
        """Planned sending time of the slowest stream (first to last frame)."""
        return max(self._stream_time(i, self.boundary_points(i)) for i in range(len(self.frames[0])))

    def boundary_points(self, i, actual=None):
        """Frame counts of stream i at each change: `actual` (one per change,
        None where unknown) where given, else the plan."""
        points = []
        for k in range(1, len(self.segments)):
            got = actual[k - 1] if actual and k - 1 < len(actual) else None
            points.append(got if got is not None else self.boundary(k)[i])
        return points

    def _stream_time(self, i, points):
        total = self.totals()[i]
        edges = [1] + list(points) + [total]   # the first frame goes at t = 0
        seconds = 0.0
        for k, rate in enumerate(r[i] for r in self.rates):
            if rate:
                seconds += (edges[k + 1] - edges[k]) / rate
        return seconds

    def expected_s(self, actual_points=None):
        """Per stream: the planned sending time, judged against the actual
        change points (actual_points[i]: frames at each change). None each
        for a one-segment trial (the rate check applies instead)."""
        n = len(self.frames[0])
        if not self.changes:
            return [None] * n
        return [self._stream_time(i, self.boundary_points(i, (actual_points or [None] * n)[i]))
                for i in range(n)]


@dataclass
class RateChange:
    """A rate change as it happened: the segment it started, the frames each
    stream had sent when the new rate was written (None: unreadable) and
    when, in seconds after the traffic started."""

    segment: int
    frames: List[Optional[int]]
    at_s: float


def rate_change_notes(schedule, changes):
    """Notes on the planned rate changes against `changes` (segment index ->
    RateChange). -> (notes, missed): missed when a change did not happen or
    landed far from its plan, so the planned profile was not offered."""
    notes, missed = [], False
    for k in range(1, len(schedule.segments)):
        done = changes.get(k)
        if done is None:
            notes.append("the planned rate change did not happen (traffic ended first)")
            missed = True
            continue
        planned, segment_end = schedule.boundary(k), schedule.boundary(k + 1)
        if any((f or 0) >= c for f, c in zip(done.frames, segment_end)):
            notes.append("the rate change came after the last frame: the generator ran ahead of "
                         "the plan (no second rate was offered)")
            missed = True
        elif any(abs((f or 0) - a) > 0.05 * a for f, a in zip(done.frames, planned)):
            notes.append("the rate changed more than 5 % of the overload frames away from the plan "
                         "(the generator fell behind or ran ahead)")
            missed = True
        notes.append(f"rate changed to {schedule.segments[k].load_fps:g} frames/s {done.at_s:.3f} s after "
                     f"the start, after {sum(f or 0 for f in done.frames)} frames "
                     f"(planned {sum(planned)})")
    return notes, missed


def actual_points(schedule, changes):
    """Per stream: the frames it had sent at each change (None: not known)."""
    n = len(schedule.frames[0])
    return [[changes[k].frames[i] if k in changes else None for k in range(1, len(schedule.segments))]
            for i in range(n)]
