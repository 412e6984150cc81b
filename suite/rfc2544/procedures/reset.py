"""RFC 2544 26.6 Reset: stream at the throughput rate with the smallest
frame size, reset the DUT with the inventory's rfc2544_reset_cmd during the
trial; reset time = first frame after the reset minus last frame before it.

Estimated from counters: at a constant offered rate every missing frame is
1/rate seconds of outage, so reset time = lost frames / rate. The rate is
the one the generator achieved (tx frames / sending time): a generator that
falls behind (a loaded host, an emulated lab) sends fewer frames per second
of outage than asked, and dividing by the asked rate would shorten the
outage in proportion (lab: 3240 of 5000 fps achieved, a 0.53 s outage
reported as 0.34 s). It assumes the DUT loses nothing else during the trial
(it runs at the measured NDR) and that the generator's rate is even over
the trial.
"""
import statistics

from rfc2544.model import TrialSpec
from rfc2544.procedures import Skip, needs_throughput, trial_overhead_s


def run(ctx, frame_size, ipv6):
    if not ctx.can_reset_dut():
        raise Skip("the inventory gives no rfc2544_reset_cmd for the DUT")
    tp = needs_throughput(ctx, frame_size, ipv6)
    p = ctx.profile.model.reset
    load = tp["ndr_fps"]
    times = []
    for _ in range(p.repetitions):
        fired = []

        def progress(sample):
            if not fired and sample["elapsed_s"] >= p.reset_after_s:
                fired.append(sample["elapsed_s"])
                ctx.reset_dut()

        r = ctx.run_trial(TrialSpec(frame_size=frame_size, load_fps=load, duration_s=p.duration_s,
                                    ipv6=ipv6, test="reset", learning=True), progress=progress)
        if not fired and not ctx.last_replayed:
            raise Skip("the trial ended before the reset was due (reset.reset_after_s >= duration_s?)")
        times.append(outage_s(r.lost_frames, load, r.achieved_fps))
    return {"frame_size": frame_size, "load_fps": load, "repetitions": len(times),
            "reset_time_s": statistics.fmean(times), "reset_times_s": times,
            "method": "lost frames / achieved offered rate"}


def outage_s(lost_frames, load_fps, achieved_fps):
    """Seconds of outage that `lost_frames` stand for at the rate the
    generator achieved (the asked `load_fps` when it reports none)."""
    rate = achieved_fps if achieved_fps and achieved_fps > 0 else load_fps
    return lost_frames / rate


def estimate_s(m):
    """Rough seconds of one step (the progress display's ETA)."""
    return m.reset.repetitions * (m.reset.duration_s + trial_overhead_s(m))
