"""RFC 2544 26.4 Back-to-back frames, as updated by RFC 9004.

Only frame sizes whose throughput is below the maximum rate are tested (at
line rate nothing is buffered). Each repetition finds, by bisection on the
burst length, the longest burst at the maximum rate that loses nothing;
every trial starts idle: at least `depletion_s` (RFC 9004: 2 s) after the
previous trial's traffic, whatever the profile's shorter waits.
Reported: N, average/min/max/stddev of the burst lengths, the implied buffer
time (average / maximum rate, RFC 9004) and a corrected buffer time that
removes what the DUT forwarded during the burst: avg * (1 - T/R) / R frames'
worth at the maximum rate R with measured throughput T.
"""
import math
import statistics

from rfc2544.model import TrialSpec
from rfc2544.procedures import Skip, needs_throughput, trial_overhead_s

AT_LINE_RATE = 0.99     # throughput this close to the max rate counts as line rate


def longest_burst(ctx, frame_size, ipv6, rate, max_frames, resolution):
    retries = ctx.profile.model.search.tester_limited_retries

    def passes(n):
        # every burst starts idle: the DUT has had `depletion_s` to empty its
        # buffer (or refill its token bucket) after the previous trial
        spec = TrialSpec(frame_size=frame_size, load_fps=rate, duration_s=n / rate,
                         ipv6=ipv6, burst_frames=n, test="back_to_back",
                         idle_s=ctx.profile.model.back_to_back.depletion_s)
        for _ in range(retries + 1):
            r = ctx.run_trial(spec)
            if r.lost_frames:
                return False        # lost even if sent slower than asked: a fail either way
            if not r.tester_limited:
                return True
        # all frames arrived, but slower than the burst rate: that proves nothing
        raise Skip(f"the tester could not send a {n}-frame burst at {rate:.0f} fps")

    if passes(max_frames):
        return max_frames, True
    lower, upper = 0, max_frames
    while upper - lower > max(1, math.floor(upper * resolution)):
        mid = (lower + upper) // 2
        if passes(mid):
            lower = mid
        else:
            upper = mid
    return lower, False


def run(ctx, frame_size, ipv6):
    tp = needs_throughput(ctx, frame_size, ipv6)
    rate, source = ctx.burst_rate(frame_size, ipv6)
    throughput = tp["ndr_fps"]
    if throughput >= AT_LINE_RATE * rate:
        raise Skip(f"throughput {throughput:.0f} fps is at the maximum rate {rate:.0f} fps: "
                   "nothing is buffered (RFC 9004 tests only sizes below it)")
    if not source.startswith("line rate"):
        ctx.note(f"back-to-back bursts at {frame_size} B are sent at {rate:.0f} fps ({source}), "
                 "not at line rate as RFC 9004 asks",
                 code="b2b_rate", section="RFC 9004", asked="line rate", used=f"{rate:.0f} fps")
    p = ctx.profile.model.back_to_back
    max_frames = max(2, round(rate * p.burst_s))
    lengths, capped = [], 0
    for _ in range(p.repetitions):
        n, whole = longest_burst(ctx, frame_size, ipv6, rate, max_frames, p.resolution_pct / 100)
        lengths.append(n)
        capped += whole
    avg = statistics.fmean(lengths)
    if capped:
        ctx.note(f"back-to-back at {frame_size} B: {capped} repetition(s) forwarded the whole "
                 f"{max_frames}-frame burst; the buffer is at least that long",
                 code="b2b_at_cap", section="RFC 9004", used=f"{max_frames} frames")
    return {
        "frame_size": frame_size, "trials": len(lengths), "lengths": lengths,
        "avg_frames": avg, "min_frames": min(lengths), "max_frames": max(lengths),
        "stddev_frames": statistics.pstdev(lengths) if len(lengths) > 1 else 0.0,
        "implied_buffer_s": avg / rate,
        "corrected_buffer_s": avg * (1 - throughput / rate) / rate,
        "throughput_fps": throughput, "max_rate_fps": rate, "max_rate_source": source,
        "burst_cap_frames": max_frames, "bursts_at_cap": capped,
        "resolution_pct": p.resolution_pct,
    }


def estimate_s(m):
    """Rough seconds of one step (the progress display's ETA)."""
    p = m.back_to_back
    return p.repetitions * (math.log2(100 / p.resolution_pct) + 1) * (p.burst_s + trial_overhead_s(m))
