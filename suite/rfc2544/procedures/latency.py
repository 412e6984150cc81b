"""RFC 2544 26.2 Latency at the throughput rate, with RFC 8219's typical
(median) and worst-case (99.9th percentile) latency and delay variation;
also, with the profile's `latency.loads_pct`, at fractions of the
throughput (a plan step per load, each its own row).

Each repetition is one trial with timestamped frames; the receiver
timestamps every test frame (not one tagged frame), so each trial gives
thousands of samples. Reported: the average over repetitions of each
trial's min/mean/median/p99.9/max (RFC 2544 asks for the average of the
repetitions), and the worst p99.9 and max seen.
"""
import statistics

from rfc2544.model import TrialSpec
from rfc2544.procedures import Skip, needs_throughput, trial_overhead_s

# `latency.loads_pct` 0: a minimal load, as FD.io CSIT measures latency at
# "0 % of the PDR". Light enough that no queue forms in any forwarder, dense
# enough for RFC 8219's 500 samples in a one-second trial; the throughput
# itself when that is lower.
MINIMAL_LOAD_FPS = 1000.0


def load_at(throughput_fps, pct):
    """Frames/s of a latency trial at `pct` % of the throughput (0: the minimal load)."""
    if pct == 0:
        return min(MINIMAL_LOAD_FPS, throughput_fps)
    # pct / 100 first: at 100 % the load is the throughput itself, to the bit
    # (x * 100 / 100 is not x for every x: 3676.9964919557397 came back 1 ulp off)
    return throughput_fps * (pct / 100)


def run(ctx, frame_size, ipv6):
    if not ctx.full_fidelity():
        raise Skip(f"the receiver ({ctx.receiver_name()}) gives no latency")
    tp = needs_throughput(ctx, frame_size, ipv6)
    pct = ctx.step.get("throughput_pct", 100.0)     # the plan step's load (runner.build_plan)
    load = load_at(tp["ndr_fps"], pct)
    where = f"{frame_size} B" + ("" if pct == 100 else f" at {pct:g} % of the throughput")
    p = ctx.profile.model.latency
    stats, lossy = [], 0
    for _ in range(p.repetitions):
        r = ctx.run_trial(TrialSpec(frame_size=frame_size, load_fps=load, duration_s=p.duration_s,
                                    ipv6=ipv6, latency=True, test="latency"))
        if r.lost_frames:
            lossy += 1
        if r.latency and r.latency.samples:
            stats.append(r.latency)
    if not stats:
        raise Skip("the receiver returned no latency samples")

    def avg(key):
        values = [getattr(s, key) for s in stats if getattr(s, key) is not None]
        return statistics.fmean(values) if values else None

    entry = {
        "frame_size": frame_size, "load_fps": load, "throughput_pct": pct, "definition": ctx.latency_definition(),
        "repetitions": len(stats), "samples": sum(s.samples for s in stats),
        "min_ns": min(s.min_ns for s in stats), "mean_ns": avg("mean_ns"),
        "median_ns": avg("median_ns"), "p999_ns": avg("p999_ns"), "max_ns": max(s.max_ns for s in stats),
        "worst_p999_ns": max((s.p999_ns for s in stats if s.p999_ns is not None), default=None),
        "stddev_ns": avg("stddev_ns"), "pdv_mean_ns": avg("pdv_mean_ns"),
        "pdv_max_ns": max((s.pdv_max_ns for s in stats if s.pdv_max_ns is not None), default=None),
        "trials_with_loss": lossy,
    }
    if entry["samples"] < 500:
        ctx.note(f"latency at {where} from {entry['samples']} samples, RFC 8219 asks at least 500",
                 code="latency_samples", section="RFC 8219 7.2", asked="500", used=str(entry["samples"]))
    if lossy:
        ctx.note(f"{lossy} latency trial(s) at {where} lost frames"
                 + (" at the throughput rate" if pct == 100 else ""),
                 code="latency_loss", section="RFC 2544 26.2", used=f"{lossy} trial(s) with loss")
    return entry


def estimate_s(m):
    """Rough seconds of one step (the progress display's ETA)."""
    return m.latency.repetitions * (m.latency.duration_s + trial_overhead_s(m))
