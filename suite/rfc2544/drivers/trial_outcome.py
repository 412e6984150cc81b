"""Turning final readings into a TrialResult (pure functions).

Offered vs sent: a trial whose generators did not reach the intended rate
(below `rate_tolerance` of it), sent fewer frames than asked without being
stopped, had frames dropped by the tester's own driver or qdisc
(rfc2544_pktgen's tx_dropped), or had to be stopped at the deadline is
`tester_limited`: the shortfall is the tester's, never the DUT's loss.
"""
import math
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from rfc2544.model import LatencyStats, StreamCounts, TrialResult

from rfc2544.drivers import pgrx as pgrx_mod


@dataclass
class StreamReading:
    plan: object                  # StreamPlan
    count: int                    # frames asked of its device
    rate: Optional[int]           # frames/s asked (None: as fast as possible)
    device: object                # pktgen.DeviceState after the run
    rx_frames: Optional[int]      # unique test frames received (None: not attributable)
    lost: Optional[int] = None
    ooo: Optional[int] = None
    dup: Optional[int] = None
    expected_s: Optional[float] = None   # planned sending time when not one rate (rate change)


@dataclass
class ReceiverTotals:
    rx_frames: int                # all test frames counted by the receivers
    notes: List[str] = field(default_factory=list)


def tx_frames_of(device):
    if device.run is not None:
        return device.run.packets
    return device.pkts_sofar or 0


def _tx_dropped(device):
    if device.run is not None and device.run.tx_dropped:
        return device.run.tx_dropped
    return device.tx_dropped or 0


def judge(spec, readings: List[StreamReading], totals: ReceiverTotals, *, started, wall_traffic_s,
          aborted=False, deadline_hit=False, rate_tolerance=0.99, latency=None, notes=()):
    notes = list(notes) + list(totals.notes)
    tx = sum(tx_frames_of(r.device) for r in readings)
    intended = sum(r.count for r in readings)
    elapsed = [r.device.elapsed_s for r in readings if r.device.elapsed_s]
    traffic_s = max(elapsed) if len(elapsed) == len(readings) else wall_traffic_s
    if len(elapsed) != len(readings):
        notes.append("a generator reported no sending time; traffic time taken from the controller's clock")
    limited = False
    for r in readings:
        sent = tx_frames_of(r.device)
        label = r.plan.label
        dropped = _tx_dropped(r.device)
        if dropped:
            # never on the wire, so not in tx_frames: the tester's shortfall
            limited = True
            notes.append(f"{label}: the tester's own driver dropped {dropped} frames (not sent; not DUT loss)")
        elif r.device.errors:
            notes.append(f"{label}: generator counted {r.device.errors} transmit errors")
        if not aborted and not deadline_hit and sent < r.count:
            limited = True
            notes.append(f"{label}: generator sent {sent} of {r.count} frames")
        took = r.device.elapsed_s
        if r.expected_s is not None and took:
            if not aborted and took > r.expected_s / rate_tolerance + 0.02:
                limited = True
                notes.append(f"{label}: sending took {took:.3f} s, planned {r.expected_s:.3f} s")
        elif r.rate and took and sent > 1:
            # pktgen's elapsed time spans the sends from the first to the last
            # frame: (sent - 1) gaps at the intended rate; a stopped run also
            # counts the unfinished gap after its last frame.
            gaps = sent if (aborted or deadline_hit) else sent - 1
            achieved = gaps / took
            if achieved < rate_tolerance * r.rate:
                limited = True
                notes.append(f"{label}: generator reached {achieved:.0f} of {r.rate} frames/s")
    if deadline_hit:
        limited = True
        notes.append("the generators overran the trial deadline and were stopped")
    achieved_fps = tx / traffic_s if traffic_s > 0 else 0.0
    planned_s = spec.duration_s
    saved = max(planned_s - traffic_s, 0.0) if aborted else 0.0
    streams = stream_counts(readings)
    if totals.rx_frames > tx:
        notes.append(f"receivers counted {totals.rx_frames - tx} frames more than were sent")
    return TrialResult(
        spec=spec, tx_frames=tx, rx_frames=totals.rx_frames, intended_frames=intended,
        achieved_fps=achieved_fps, traffic_s=traffic_s, tester_limited=limited,
        aborted_early=aborted, saved_traffic_s=saved, started=started, latency=latency,
        streams=streams, notes=notes)


def _sum(values):
    """The sum, or None when any is unknown."""
    values = list(values)
    return None if any(v is None for v in values) else sum(values)


def stream_counts(readings) -> List[StreamCounts]:
    """Per stream, its generators' readings added up (each generator has a
    sequence space of its own: its lost, reordered and duplicated frames
    are its own, and the stream's are their sums); streams the receiver
    could not attribute are left out."""
    groups: Dict[int, List[StreamReading]] = {}
    for r in readings:
        groups.setdefault(r.plan.stream, []).append(r)
    out = []
    for rs in (groups[k] for k in sorted(groups)):
        if any(r.rx_frames is None for r in rs):
            continue
        p = rs[0].plan
        gens = None
        if len(rs) > 1:
            gens = [{"generator": r.plan.generator, "tx_frames": tx_frames_of(r.device), "rx_frames": r.rx_frames,
                     "lost": r.lost, "out_of_order": r.ooo, "duplicates": r.dup,
                     "achieved_fps": _achieved(r)} for r in rs]
        out.append(StreamCounts(
            tx_port=f"{p.tx_host}:{p.tx_port}", rx_port=f"{p.rx_host}:{p.rx_port}",
            tx_frames=sum(tx_frames_of(r.device) for r in rs), rx_frames=sum(r.rx_frames for r in rs),
            lost=_sum(r.lost for r in rs), out_of_order=_sum(r.ooo for r in rs),
            duplicates=_sum(r.dup for r in rs), generators=gens))
    return out


def _achieved(reading):
    """Frames/s the generator sent at, from its own sending time, or None."""
    sent, took = tx_frames_of(reading.device), reading.device.elapsed_s
    return round((sent - 1) / took, 1) if took and sent > 1 else None


def latency_from_pgrx(states) -> Optional[LatencyStats]:
    """Merge the latency statistics of one or more pgrx receivers."""
    stats = [s.stats.get("latency") for s in states]
    stats = [s for s in stats if s is not None and s.n > 0]
    if not stats:
        return None
    n = sum(s.n for s in stats)
    total = sum(s.sum for s in stats)
    sumsq = sum(s.sumsq for s in stats)
    mean = total / n
    jit = [s.stats.get("jitter") for s in states]
    jit = [j for j in jit if j is not None and j.n > 0]
    if len(states) == 1:
        st = states[0]
        pct = st.percentiles.get("latency", {})
        median, p99, p999 = pct.get("p50"), pct.get("p99"), pct.get("p999")
        var = stats[0].var
    else:
        buckets = [b for s in states for b in s.hist]
        lo, hi = min(s.min for s in stats), max(s.max for s in stats)
        median = pgrx_mod.percentile_from_hist(buckets, 0.5, lo, hi)
        p99 = pgrx_mod.percentile_from_hist(buckets, 0.99, lo, hi)
        p999 = pgrx_mod.percentile_from_hist(buckets, 0.999, lo, hi)
        # exact integer sums: var = sumsq/n - mean^2, computed without float loss
        var = max((sumsq * n - total * total) // (n * n), 0)
    return LatencyStats(
        samples=n, min_ns=float(min(s.min for s in stats)), mean_ns=float(mean),
        max_ns=float(max(s.max for s in stats)),
        median_ns=float(median) if median is not None else None,
        p999_ns=float(p999) if p999 is not None else None,
        p99_ns=float(p99) if p99 is not None else None,
        stddev_ns=math.sqrt(var),
        pdv_mean_ns=(sum(j.sum for j in jit) / sum(j.n for j in jit)) if jit else None,
        pdv_max_ns=float(max(j.max for j in jit)) if jit else None,
    )
