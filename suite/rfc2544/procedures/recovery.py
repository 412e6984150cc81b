"""RFC 2544 26.5 System recovery: overload at 110 % of the throughput (or
the maximum rate if lower) for a while, then drop to 50 % without stopping;
the recovery time runs from the rate drop to the last lost frame.

How it is estimated from the counters we have: the tester samples the
receiver during the trial (PROGRESS_KEYS: lost_frames, seq_max). The
receiver counts a lost frame when a later sequence number arrives, so the
last sample interval in which `lost_frames` grew holds the last loss, and
that frame's sequence number lies between seq_max of the sample before and
seq_max of that sample. Sequence numbers map to send times exactly because
the schedule is known (overload_fps for overload_s, then recovery_fps).
The estimate is the midpoint of that interval, reported with its bounds;
its resolution is one sampling interval. Without sequence numbers (interface
counters) the sample times themselves are used: an upper bound that also
contains the receive delay.
"""
import statistics

from rfc2544.model import TrialSpec
from rfc2544.procedures import Skip, needs_throughput, trial_overhead_s


def send_time(seq, overload_fps, overload_s, recovery_fps):
    first_phase = overload_fps * overload_s
    if seq <= first_phase:
        return seq / overload_fps
    return overload_s + (seq - first_phase) / recovery_fps


def _lost(sample):
    """The receiver's sequence-gap loss count in a progress sample."""
    for key in ("lost_frames", "gap_lost"):
        if sample.get(key) is not None:
            return sample[key]
    return None


def estimate(samples, overload_fps, overload_s, recovery_fps):
    """(estimate_s, low_s, high_s) after the rate drop, or None when nothing was lost."""
    samples = [dict(s, lost_frames=_lost(s)) for s in samples]
    last = None
    for i in range(1, len(samples)):
        prev, cur = samples[i - 1], samples[i]
        if cur.get("lost_frames") is not None and cur["lost_frames"] > (prev.get("lost_frames") or 0):
            last = i
    if last is None:
        if samples and (samples[0].get("lost_frames") or 0) > 0:
            last = 0
        else:
            return None
    cur = samples[last]
    prev = samples[last - 1] if last > 0 else {"seq_max": 0, "elapsed_s": 0.0}
    if cur.get("seq_max") is not None and prev.get("seq_max") is not None:
        lo = send_time(prev["seq_max"], overload_fps, overload_s, recovery_fps) - overload_s
        hi = send_time(cur["seq_max"], overload_fps, overload_s, recovery_fps) - overload_s
    else:
        lo, hi = prev["elapsed_s"] - overload_s, cur["elapsed_s"] - overload_s
    lo, hi = max(lo, 0.0), max(hi, 0.0)
    return (lo + hi) / 2, lo, hi


def run(ctx, frame_size, ipv6):
    if not ctx.supports_recovery():
        raise Skip("the tester cannot change the rate without stopping (TrialSpec.recovery_load_fps)")
    tp = needs_throughput(ctx, frame_size, ipv6)
    p = ctx.profile.model.system_recovery
    throughput = tp["ndr_fps"]
    max_rate, _ = ctx.max_load(frame_size, ipv6)
    overload = min(throughput * p.overload_pct / 100, max_rate)
    recovery = throughput * p.recovery_pct / 100
    if overload <= throughput:
        raise Skip(f"throughput {throughput:.0f} fps is at the maximum rate: the DUT cannot be overloaded")
    times, bounds, no_loss = [], [], 0
    for _ in range(p.repetitions):
        r = ctx.run_trial(TrialSpec(frame_size=frame_size, load_fps=overload, duration_s=p.overload_s,
                                    ipv6=ipv6, test="system_recovery", recovery_load_fps=recovery,
                                    recovery_duration_s=p.recovery_s), keep_samples=True)
        est = estimate(ctx.last_samples, overload, p.overload_s, recovery)
        if r.tester_limited:
            raise Skip(f"the tester could not send the overload of {overload:.0f} fps")
        if est is None:
            no_loss += 1
            continue
        times.append(est[0])
        bounds.append([est[1], est[2]])
    if not times:
        raise Skip(f"no frame was lost at {overload:.0f} fps: the DUT was not overloaded")
    if no_loss:
        ctx.note(f"system recovery at {frame_size} B: {no_loss} repetition(s) lost nothing under overload",
                 code="recovery_no_loss", section="RFC 2544 26.5")
    return {"frame_size": frame_size, "overload_fps": overload, "recovery_fps": recovery,
            "overload_s": p.overload_s, "recovery_period_s": p.recovery_s,
            "repetitions": len(times), "recovery_time_s": statistics.fmean(times),
            "recovery_times_s": times, "recovery_time_bounds_s": bounds,
            "method": "last sequence gap in receiver samples"}


def estimate_s(m):
    """Rough seconds of one step (the progress display's ETA)."""
    p = m.system_recovery
    return p.repetitions * (p.overload_s + p.recovery_s + trial_overhead_s(m))
