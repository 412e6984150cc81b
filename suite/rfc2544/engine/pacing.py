"""How evenly the tester sent, and when that, not the DUT, explains a loss.

The generator (rfc2544_pktgen) records each frame's departure: the gap
from the frame before, in a histogram, micro-bursts, runs of frames each
sent less than half the nominal gap after the one before (a vCPU stall, an
interrupt storm, `burst N`: then the generator sends its debt back to back),
and what a token-bucket policer at the nominal rate makes of them: the
bucket it needs, and the frames it drops with buckets of 1, 2, 4 .. frames.

The tester-bursty rule. The DUT's loss is the default: a failed trial is
put on the tester's micro-bursts only where even spacing at the same rate
could not have lost those frames, given what the unit's trials (test, IP
version, frame size) showed the DUT absorb and lose (DutEvidence). With M
the trial's longest micro-burst, n its micro-bursts, C its close frames
(each sent less than half the nominal gap after the one before), L the
frames it lost, and A the longest micro-burst of a passed trial in the unit
(0 if none), all of these hold:
  1. M >= 2 and M > A: the DUT was never seen to absorb a burst that long;
  2. L <= min(C, k * (M - A)), k = min(n, (C + n) // (A + 1)): a buffer
     that held A frames loses at most M - A of a burst of M, and only the
     bursts longer than A lose any; there are at most k of them, since
     the n bursts hold C + n frames in all. Loss beyond that is spread over
     the trial: the DUT's capacity, not the bursts (with A = 0, this is
     L <= C, the frames that came too close);
  or, for frames sent ahead of the rate in runs each too short to
  overflow a buffer but coming before it drains (catch-ups after short
  stalls), the same of a token-bucket policer at the trial's own rate
  (departures.h; a policer or a buffer at a higher rate drops no more).
  With Q the bucket it needs to pass every frame of the trial and B the
  largest a passed trial of the unit needed (0: none recorded one, and
  this part says nothing):
  1b. B >= 1 and Q > B;
  2b. L <= the frames that policer drops with a bucket of T frames, T the
     smallest of 1, 2, 4 .. 32768 at least B: even a bucket larger than
     the DUT was seen to fill drops that many (a bucket rounded down would
     name the DUT's own loss: CI saw 14 frames lost at 13 % over a DUT's
     rate explained by a 16-frame bucket where passed trials needed 27).
  And for both:
  3. no trial of the unit at this rate or below lost 10 frames or more
     with neither a burst longer than A nor a bucket needed over B: the DUT
     already loses at such a rate when its frames come as evenly as it
     absorbs them;
  4. the same load's attempt just before was not tester-bursty with about
     the same loss (repeats_loss: within 20 %, at least 10 frames each): a
     DUT that cannot carry the rate loses the same again, bursts lose what
     the bursts happen to be. The search spends no more retries there: the
     loss is the DUT's.
The throughput row's flag (the NDR set by the tester's bursts) judges the
last failed trial at the upper bound, the search's final word there, again
with the whole unit's evidence, so it does not depend on the order in which
the search met the others.
The in-tree pktgen records no departures. Where the inventory names a
calibration link (two tester ports cabled to each other), the spacing of a
failed trial is estimated there: the same generator sends at the trial's
rate and frame size, the receiving port's kernel timestamps the arrivals,
and spacing_of_arrivals turns their gaps into a Spacing whose source says
"calibration link" (calibration_link.py). Its close frames and policed
drops are scaled to the trial's frames sent. The estimate shows how
the generator paces at that rate, not the trial's own stalls: the report
says which source it used.
Passed trials get no estimate, so with it A and B are 0.

A tester that stalls in every trial defeats rule 2: passed trials absorb
catch-up bursts as long as the failed ones'. The trial's longest departure
gap still shows the stall: when a failed trial at the NDR's upper bound
stopped sending for over TESTER_STALL_S (procedures/throughput.py), the row
carries `tester_stall_s` and the run says the NDR may be low.

The search treats a tester-bursty trial like a tester-limited one: retried,
and never taken as a pass.
"""
import math
from dataclasses import dataclass, replace
from fractions import Fraction

from rfc2544.drivers import pgrx as pgrx_mod
from rfc2544.engine import catch_ups
from rfc2544.engine.catch_ups import POLICED_BUCKETS
from rfc2544.model import SOURCE_GENERATOR, SOURCE_LINK, Spacing

# The trials whose loss the rule may put on the tester: steady rates that
# should pass (system recovery overloads on purpose, reset makes an outage,
# back-to-back bursts at the maximum rate).
STEADY_TESTS = ("throughput", "latency", "frame_loss")
# pgrx's percentiles over merged histograms (the same bucket geometry)
_Q = {"p50_gap_ns": 0.5, "p99_gap_ns": 0.99, "p999_gap_ns": 0.999}


def spacing_of(devices, rates, streams=None):
    """Spacing of one trial from the generators' device states (None when no
    generator reports departures: the in-tree pktgen). `rates`: each
    device's frames/s (None: unpaced), for the nominal gap; `streams`: the
    stream each one sends a share of (None: each its own), whose policer
    judges them merged (catch_ups.py)."""
    streams = list(range(len(devices))) if streams is None else streams
    # an unpaced generator (no rate) times no frame: nothing to say about spacing
    timed = [(d.departures, r, k) for d, r, k in zip(devices, rates, streams)
             if d is not None and d.departures and d.departures.get("frames")]
    parts = [(dep, r) for dep, r, _ in timed]
    if not parts:
        return None
    merged = {}
    for dep, _ in parts:
        for low, high, count in dep.get("gap_hist_ns", []):
            merged[(low, high)] = merged.get((low, high), 0) + count
    buckets = [pgrx_mod.HistBucket(lo, hi, c) for (lo, hi), c in sorted(merged.items())]
    frames = sum(dep["frames"] for dep, _ in parts)     # > 0: parts hold timed frames only
    nominal = [1e9 / r for _, r in parts if r]
    nominal_gap = min(nominal) if len(nominal) == len(parts) else None
    lo = min(dep.get("min_gap_ns", 0) for dep, _ in parts)
    hi = max(dep.get("max_gap_ns", 0) for dep, _ in parts)
    mean = sum(dep.get("mean_gap_ns", 0) * dep["frames"] for dep, _ in parts) / frames
    return Spacing(
        source=SOURCE_GENERATOR, frames=frames, nominal_gap_ns=nominal_gap, min_gap_ns=float(lo),
        mean_gap_ns=float(mean), max_gap_ns=float(hi),
        **{k: pgrx_mod.percentile_from_hist(buckets, q, lo, hi) for k, q in _Q.items()},
        micro_bursts=sum(dep.get("micro_bursts", 0) for dep, _ in parts),
        longest_micro_burst=max(dep.get("longest_micro_burst", 0) for dep, _ in parts),
        close_frames=close_frames(buckets, nominal_gap),
        hist=[[b.low, b.high, b.count] for b in buckets],
        **_policed(timed))


def _policed(timed):
    """bucket_needed and bucket_drops of [(departures, rate, stream)]: each
    stream's policer over its generators merged (catch_ups.merge; a module
    that records no catch-ups: each generator's own, at its share of the
    rate), then the worst bucket of the streams and their drops summed;
    unknown if one generator did not say."""
    if not all("bucket_needed" in dep for dep, _, _ in timed):
        return {"bucket_needed": None, "bucket_drops": _summed(
            pair for dep, _, _ in timed for pair in dep.get("bucket_drops", []))}
    needed, drops = 0, []
    for key in dict.fromkeys(k for _, _, k in timed):
        mine = [dep for dep, _, k in timed if k == key]
        merged = catch_ups.merge(mine, [r for _, r, k in timed if k == key]) if len(mine) > 1 else None
        if merged is None:
            merged = (max(dep["bucket_needed"] for dep in mine),
                      [pair for dep in mine for pair in dep.get("bucket_drops", [])])
        needed = max(needed, merged[0])
        drops += merged[1]
    return {"bucket_needed": needed, "bucket_drops": _summed(drops)}


def _summed(pairs):
    """[(key, count)] -> [[key, total]] by key."""
    out = {}
    for key, count in pairs:
        out[key] = out.get(key, 0) + count
    return [[k, n] for k, n in sorted(out.items())]


def policing(times_ns, nominal_ns):
    """What a token-bucket policer at one frame per `nominal_ns` makes of
    frames leaving at `times_ns` (sorted), as departures.h records it: the
    bucket it needs to pass them all (frames, rounded up) and [[bucket,
    dropped]] for buckets of 1, 2, 4 .. frames, full at the start."""
    last, queued, deepest = times_ns[0], 0, 0
    sizes = [nominal_ns * (1 << i) for i in range(POLICED_BUCKETS)]
    tokens = list(sizes)
    drops = [0] * POLICED_BUCKETS
    for t in times_ns:
        elapsed, last = t - last, t
        queued = max(queued - elapsed, 0) + nominal_ns
        deepest = max(deepest, queued)
        for i in range(POLICED_BUCKETS):
            tokens[i] = min(tokens[i] + elapsed, sizes[i])
            if tokens[i] >= nominal_ns:
                tokens[i] -= nominal_ns
            else:
                drops[i] += 1
    return math.ceil(deepest / nominal_ns), [[1 << i, n] for i, n in enumerate(drops) if n]




def spacing_of_arrivals(times_ns, rate_fps):
    """Spacing of frames from their arrival times on a calibration link (the
    receiving port's kernel timestamps, in ns, in arrival order) sent at
    `rate_fps`; None for fewer than two frames. Exact percentiles; the
    histogram has log2 buckets (its shape is for the report's figure)."""
    times = sorted(int(t) for t in times_ns)
    if len(times) < 2:
        return None
    gaps = [b - a for a, b in zip(times, times[1:])]
    nominal = 1e9 / rate_fps if rate_fps else None
    half = nominal / 2 if nominal else None
    bursts, longest, run, close = 0, 0, 1, 0
    for gap in gaps:
        if half is not None and gap < half:
            run, close = run + 1, close + 1
            continue
        if run > 1:
            bursts, longest = bursts + 1, max(longest, run)
        run = 1
    if run > 1:
        bursts, longest = bursts + 1, max(longest, run)
    ordered = sorted(gaps)
    needed, drops = policing(times, nominal) if nominal else (None, [])
    hist = {}
    for gap in gaps:
        low = 0 if gap == 0 else 1 << (gap.bit_length() - 1)
        hist[low] = hist.get(low, 0) + 1
    return Spacing(
        source=SOURCE_LINK, frames=len(times), nominal_gap_ns=nominal, min_gap_ns=float(ordered[0]),
        mean_gap_ns=(times[-1] - times[0]) / len(gaps), max_gap_ns=float(ordered[-1]),
        **{k: float(ordered[max(1, math.ceil(Fraction(str(q)) * len(ordered))) - 1]) for k, q in _Q.items()},
        micro_bursts=bursts, longest_micro_burst=longest,
        close_frames=close,
        hist=[[low, max(2 * low - 1, 0), count] for low, count in sorted(hist.items())],
        bucket_needed=needed, bucket_drops=drops)


def scaled_to(spacing, frames):
    """An estimate measured over spacing.frames frames, its close frames and
    policed drops scaled to a trial of `frames` frames (the rest is a rate
    property)."""
    if spacing is None or not spacing.frames:
        return spacing
    scale = frames / spacing.frames
    return replace(spacing, close_frames=round(spacing.close_frames * scale),
                   bucket_drops=[[k, round(n * scale)] for k, n in spacing.bucket_drops])


def close_frames(buckets, nominal_gap_ns):
    """Frames sent less than half the nominal gap after the one before (by
    whole buckets: a bucket straddling the half counts only if below it)."""
    if not nominal_gap_ns:
        return 0
    half = nominal_gap_ns / 2
    return sum(b.count for b in buckets if b.high < half)


def may_be_bursty_spec(spec):
    """A trial of a steady rate: loss is the point of an overload, an outage
    or a burst at the maximum rate."""
    return spec.test in STEADY_TESTS and spec.recovery_load_fps is None and not spec.burst_frames


def may_be_bursty(result):
    """A failed trial of a steady rate the tester sent in full (or one the
    rule already named, judged again): one the rule may put on the tester's
    pacing."""
    # an aborted trial (early abort: its loss already broke the goal) is a failed one too
    sent_in_full = not result.tester_limited or getattr(result, "tester_bursty", False)
    return may_be_bursty_spec(result.spec) and sent_in_full and result.lost_frames > 0


@dataclass(frozen=True)
class DutEvidence:
    """What a unit's trials showed of the DUT: the longest micro-burst and
    the largest bucket needed (at the trial's rate) of a passed trial (the
    DUT absorbed them), and the lowest rate at which a trial lost FEW_FRAMES
    or more with neither beyond that (None: none; a trial without spacing
    data shows nothing either way)."""
    absorbed: int = 0
    lossy_even_fps: float = None
    absorbed_bucket: int = 0


def evidence_of(results):
    """DutEvidence from TrialResults of one unit."""
    passed = [r.spacing for r in results
              if r.spacing and r.lost_frames == 0 and not r.tester_limited and not r.aborted_early]
    absorbed = max((s.longest_micro_burst for s in passed), default=0)
    absorbed_bucket = max((s.bucket_needed or 0 for s in passed), default=0)
    evidence = DutEvidence(absorbed, None, absorbed_bucket)
    lossy = [r.spec.load_fps for r in results if may_be_bursty(r) and r.lost_frames >= FEW_FRAMES
             and r.spacing and not any(beyond_absorbed(r.spacing, evidence, even=True))]
    return replace(evidence, lossy_even_fps=min(lossy, default=None))


def overflow_bound(spacing, absorbed):
    """The most frames the micro-bursts of `spacing` can have overflowed a
    buffer that held `absorbed` frames (rule 2 above)."""
    s = spacing
    n = max(s.micro_bursts, 1)
    k = min(n, (s.close_frames + n) // (absorbed + 1))
    return min(s.close_frames, k * max(s.longest_micro_burst - absorbed, 0))


def policed_bound(spacing, absorbed_bucket):
    """The frames a policer at the trial's rate drops of `spacing` with the
    smallest recorded bucket (1, 2, 4 .. 32768) of at least
    `absorbed_bucket` frames (rule 2b above); 0 below one frame or beyond
    the records."""
    bucket = policed_bucket(absorbed_bucket) if absorbed_bucket >= 1 else None
    return dict((k, n) for k, n in spacing.bucket_drops).get(bucket, 0) if bucket else 0


def policed_bucket(frames):
    """The smallest bucket a policer record holds (1, 2, 4 .. 2^15) of at
    least `frames` (>= 1) frames; None beyond them."""
    bucket = 1 << max(frames - 1, 0).bit_length()
    return bucket if bucket <= 1 << (POLICED_BUCKETS - 1) else None


def beyond_absorbed(spacing, evidence, even=False):
    """(burst, bucket): whether `spacing`'s longest micro-burst, and the
    bucket it needs, exceed what passed trials showed absorbed (rules 1,
    1b). `even` (rule 3's test of even spacing): a micro-burst counts
    beyond A however short, as before the bucket was recorded."""
    longest = spacing.longest_micro_burst
    burst = longest > evidence.absorbed and (even or longest >= 2)
    bucket = evidence.absorbed_bucket >= 1 and (spacing.bucket_needed or 0) > evidence.absorbed_bucket
    return burst, bucket


# Losses of fewer frames than this say nothing of the DUT: one burst
# overflows a few frames as readily as another, and a TCG lab loses a frame
# now and then at any rate (CI: 5 then 3 frames lost at the small-bucket
# DUT's upper bound, both the tester's; 1 frame lost far below its rate).
FEW_FRAMES = 10


def repeats_loss(previous, result, named="tester_bursty"):
    """`result` repeats `previous`, an attempt at the same load and
    duration named so (`named`: tester_bursty, or starved.py's
    tester_starved), with about the same loss: within 20 %, each of at
    least FEW_FRAMES frames."""
    if previous is None or not getattr(previous, named, False):
        return False
    same = (previous.spec.load_fps == result.spec.load_fps
            and previous.spec.duration_s == result.spec.duration_s)
    a, b = previous.lost_frames, result.lost_frames
    return same and min(a, b) >= FEW_FRAMES and abs(a - b) <= 0.2 * max(a, b)


def bursty_reason(result, evidence):
    """Why `result` (a TrialResult) is tester-bursty, or None (the rule
    above, 1 to 3); `evidence`: the DutEvidence of its unit's other trials."""
    s = result.spacing
    if s is None or not may_be_bursty(result):
        return None
    if evidence.lossy_even_fps is not None and result.spec.load_fps >= evidence.lossy_even_fps:
        return None
    burst, bucket = beyond_absorbed(s, evidence)
    absorbed, lost = evidence.absorbed, result.lost_frames
    sent = ("the generator sent" if s.source == SOURCE_GENERATOR else
            "on the calibration link, at this rate and frame size, the generator sends")
    overflow = overflow_bound(s, absorbed)
    if burst and lost <= overflow:
        return (f"tester-bursty: {sent} micro-bursts of up to {s.longest_micro_burst} frames "
                f"({s.close_frames} frames less than half the nominal {s.nominal_gap_ns / 1000:.1f} us gap after "
                f"the one before), which can overflow up to {overflow} frames of a buffer that "
                f"held the longest micro-burst a passed trial showed the DUT absorbing ({absorbed} frames): "
                f"enough to explain the {lost} frames lost")
    policed = policed_bound(s, evidence.absorbed_bucket)
    if bucket and lost <= policed:
        return (f"tester-bursty: {sent} frames ahead of the trial's rate (micro-bursts of up to "
                f"{s.longest_micro_burst} frames, coming before a bucket refills): a policer at that rate needs a "
                f"bucket of {s.bucket_needed} frames to pass them all, where passed trials showed the DUT absorbing "
                f"{evidence.absorbed_bucket}, and drops {policed} frames with a bucket of "
                f"{policed_bucket(evidence.absorbed_bucket)}: enough to explain the {lost} frames lost")
    return None
