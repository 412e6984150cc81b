"""RFC 2544 26.1 Throughput: the NDR (and the PDR when asked) by the
profile's search, classic bisection or MLRsearch; with the profile's
`search.latency_bound`, also the highest rate without loss within that
bound (an extension: RFC 2544 and RFC 9971 define no latency goal)."""
import math

from rfc2544.model import TESTER_BOUND_MARGIN
from rfc2544.procedures import Skip, trial_overhead_s
from rfc2544.search import LatencyBound, search
from rfc2544.search.mlr import fits_bound_encoding

# A departure gap this long is the tester stopping (a stalled host or VM),
# not pacing: idle TCG labs show gaps of up to 20 ms, a stalled one 700 ms.
TESTER_STALL_S = 0.1


EXTENSION = "an extension of RFC 2544 and RFC 9971, which define no latency goal"
BOUNDED_SEARCH = {"bisection": "a bisection of its own, below the NDR, after the NDR's search",
                  "mlr": "a goal of the same MLRsearch pass, over the same trials as the NDR"}


def run(ctx, frame_size, ipv6):
    s = ctx.profile.model.search
    bound = LatencyBound.from_profile(s.latency_bound)
    if bound is not None and not ctx.full_fidelity():
        raise Skip(f"search.latency_bound needs latency, which the receiver ({ctx.receiver_name()}) does not give")
    max_load, source = ctx.max_load(frame_size, ipv6)
    if bound is not None and s.method == "mlr" and not mlr_fits(max_load, ctx.profile.model, s):
        raise Skip(f"search.latency_bound with MLRsearch needs trials of fewer than 1e11 frames "
                   f"({max_load:.0f} fps for the longest trial is more): shorten the trials or use bisection")
    pdr = s.pdr_loss_pct / 100 if s.pdr_loss_pct else None
    measure = ctx.measure(frame_size, ipv6, early_abort=s.early_abort, latency=bound is not None)
    result = search(
        s.method, measure,
        min_load=max_load * s.min_load_pct / 100, max_load=max_load,
        resolution=s.resolution_pct / 100,
        search_duration=s.initial_duration_s, final_duration=ctx.profile.model.trial_duration_s,
        pdr_loss_ratio=pdr, duration_sum=s.duration_sum_s, exceed_ratio=s.exceed_ratio,
        latency_bound=bound)
    note_wrong_aborts(ctx, measure, f"{frame_size} B")
    entry = summarize(ctx, frame_size, ipv6, result, max_load, source, max_load * s.min_load_pct / 100)
    if bound is not None:
        entry.update(bounded_entry(ctx, frame_size, result, bound))
    return entry


def mlr_fits(max_load, model, s):
    """MLRsearch's encoding of the bound holds for this profile's trials."""
    return fits_bound_encoding(max_load, max(model.trial_duration_s, s.duration_sum_s or 0))


def bounded_entry(ctx, frame_size, result, bound):
    """The latency-bounded rate's fields of a throughput entry, and the
    run's note when the DUT reached its NDR by queueing."""
    rate = result.bounded_fps
    theo = ctx.line_fps(frame_size)
    bits = (frame_size or ctx.imix_mean_size()) * 8
    fields = {
        "latency_bound": {"percentile": bound.percentile, "us": bound.us, "text": bound.text,
                          "extension": EXTENSION, "search": BOUNDED_SEARCH[result.method]},
        "bounded_fps": rate, "bounded_upper_fps": result.bounded_upper_fps,
        "bounded_mbps": rate * bits / 1e6 if rate else None,
        "bounded_pct_of_max": rate * 100 / theo if rate and theo else None,
        "bounded_latency_ns": deciding_latency(result.outcomes, rate, bound, bound),
        "ndr_latency_ns": deciding_latency(result.outcomes, result.ndr_fps, bound),
    }
    clock = getattr(ctx, "latency_clock", lambda: None)()
    if clock and not clock.get("shared") and (clock.get("error_ns") is None
                                               or clock["error_ns"] >= bound.us * 1000):
        ctx.note(f"throughput at {frame_size} B: the latency bound ({bound.text}) is judged on latency "
                 f"across two hosts' clocks, whose error is {clock.get('text')}: the bounded rate is not "
                 "trustworthy", code="latency_bound_clock")
    ndr = result.ndr_fps
    if ndr and (rate is None or rate < ndr * (1 - result.resolution)):
        at = fields["ndr_latency_ns"]
        ctx.note(f"throughput at {frame_size} B: the NDR ({ndr:.0f} fps) is above the rate within the "
                 f"{bound.text} bound ({'none passed' if rate is None else f'{rate:.0f} fps'})"
                 + (f"; at the NDR the latency was {at / 1000:.0f} us" if at is not None else "")
                 + ": the DUT held the excess in its queue", code="latency_bound_below_ndr")
    return fields


def deciding_latency(outcomes, load, bound, passing=None):
    """The latency at the bound's percentile in the last longest trial at
    `load` that passed (without loss, and within `passing` when given: with
    an exceed ratio a failed trial may sit beside the deciding one), in ns;
    None without one."""
    if not load:
        return None
    at = [o for o in outcomes if abs(o.load_fps - load) <= load * 1e-9 and o.passed(0.0, passing)]
    if not at:
        return None
    longest = max(o.duration_s for o in at)
    last = [o for o in at if o.duration_s == longest][-1]
    return (last.latency_ns or {}).get(bound.field)


def note_wrong_aborts(ctx, measure, what):
    """The run's deviation for the trials early abort stopped wrongly
    (procedures/measure.py: each was run again in full)."""
    wrong = getattr(measure, "wrong_aborts", [])
    if wrong:
        ctx.note(f"early abort at {what} stopped {len(wrong)} trial(s) whose final counts showed no loss "
                 f"beyond the goal (frames queued in the DUT, counted lost while it ran: at "
                 f"{', '.join(f'{load:.0f}' for load in wrong)} fps); each was run again in full and that "
                 "trial decided", code="early_abort_wrong")


def summarize(ctx, frame_size, ipv6, result, max_load, source, min_load):
    ndr = result.ndr_fps
    theo = ctx.line_fps(frame_size)     # of every sending port: bidirectional counts both
    ceiling = ctx.ceiling(frame_size, ipv6)
    # Two claims, two flags. Tester-bound: the NDR is within the margin of
    # the tester's own ceiling, or the search's upper bound, the lowest load
    # that did not pass, failed because the tester could not send it
    # (tester-limited trials far above a DUT-lossy upper bound, the probe or
    # the search's first loads, say nothing about the DUT). Set by the
    # tester's bursts: the upper bound's failures are, judged with the whole
    # unit's trials, the generator's micro-bursts (pacing.py).
    upper = result.ndr_upper_fps
    at_upper = [o for o in result.outcomes if upper is not None and abs(o.load_fps - upper) <= upper * 0.001]
    upper_unsent = any(o.tester_limited and not o.tester_bursty for o in at_upper)
    near_ceiling = bool(ndr and ceiling and ndr >= ceiling * (1 - TESTER_BOUND_MARGIN))
    bursty = bool(at_upper) and ctx.upper_bound_bursty(at_upper[0].load_fps)
    # The upper bound's failures came with the tester stopping: pass or fail
    # may then say where the stall fell, not what the DUT carries.
    stalls = [o for o in at_upper if (o.aborted or o.loss_ratio > 0) and o.longest_gap_s >= TESTER_STALL_S]
    bits = (frame_size or ctx.imix_mean_size()) * 8
    entry = {
        # fps 0: not even the minimum load passed (ndr_fps stays null)
        "frame_size": frame_size, "fps": ndr or 0.0, "min_load_fps": min_load,
        "mbps": ndr * bits / 1e6 if ndr else None,
        "line_mbps": ndr * ((frame_size or ctx.imix_mean_size()) + 20) * 8 / 1e6 if ndr else None,
        "pct_of_max": ndr * 100 / theo if ndr and theo else None,     # percent
        "theoretical_max_fps": theo, "max_load_fps": max_load, "max_load_source": source,
        "tester_bound": near_ceiling or upper_unsent,
        "tester_ceiling_fps": ceiling,
        # the upper bound failed on the generator's micro-bursts, retries included:
        # the tester could not space its frames evenly enough to measure the DUT there
        "tester_bursty": bursty,
        "tester_stall_s": max(o.longest_gap_s for o in stalls) if stalls else None,
        "search": result.method, "ndr_fps": ndr, "ndr_upper_fps": result.ndr_upper_fps,
        "pdr_fps": result.pdr_fps, "pdr_upper_fps": result.pdr_upper_fps,
        "pdr_loss_ratio": result.pdr_loss_ratio,
        "resolution_pct": result.resolution * 100, "trials": result.trials,
        "traffic_s": result.traffic_s, "saved_traffic_s": result.saved_s,
        "at_max_load": bool(ndr and ndr >= max_load),
    }
    directions, limited_by = per_stream(ndr, result.outcomes, at_upper)
    if directions:
        entry["directions"] = directions
        entry["limited_by"] = limited_by
    if stalls:
        worst = max(stalls, key=lambda o: o.longest_gap_s)
        ctx.note(f"throughput at {frame_size} B: the tester stopped sending for up to "
                 f"{worst.longest_gap_s * 1000:.0f} ms in the failed trials at the NDR's upper bound "
                 f"({worst.longest_gap_s * worst.load_fps:.0f} frames owed at {worst.load_fps:.0f} fps, sent late): "
                 "their loss may be the tester's, so the NDR may be low", code="tester_stalled")
    if near_ceiling:
        ctx.note(f"throughput at {frame_size} B is tester-bound: within {TESTER_BOUND_MARGIN:.0%} of what "
                 "the tester itself can send, so it measures the tester, not the DUT",
                 code="tester_bound")
    elif upper_unsent:
        ctx.note(f"throughput at {frame_size} B is tester-bound: the tester could not send the load at the NDR's "
                 f"upper bound ({upper:.0f} fps), so the DUT may be faster than shown", code="tester_bound")
    if bursty:
        ctx.note(f"throughput at {frame_size} B is set by the tester's bursts: the trials at the NDR's upper "
                 f"bound ({upper:.0f} fps) failed on the generator's micro-bursts, retries included, so the NDR "
                 "is a lower bound set by the tester", code="tester_bursty_ndr")
    return entry


def per_stream(ndr, outcomes, at_upper):
    """With several streams (bidirectional, or several in the inventory):
    each stream's part of the NDR, from the frames each sent in the NDR's
    trial, and the streams that lost frames where the search failed (the
    upper bound's trials the tester sent in full): the direction that limits
    the result. ([], None) with one stream or no attribution."""
    ends = sorted({k for o in outcomes for k in o.streams})
    if len(ends) < 2:
        return [], None
    passed = [o for o in outcomes if ndr and abs(o.load_fps - ndr) <= ndr * 0.001
              and not o.tester_limited and not o.aborted and o.streams]
    at_ndr = passed[-1] if passed else None
    sent = sum(n for n, _ in at_ndr.streams.values()) if at_ndr else 0
    lossy = {k for o in at_upper if not o.tester_limited for k, (_, lost) in o.streams.items() if lost}
    directions = []
    for tx, rx in ends:
        share = at_ndr.streams.get((tx, rx), (0, 0))[0] / sent if sent else None
        directions.append({"tx": tx, "rx": rx, "fps": ndr * share if share is not None else None,
                           "limiting": (tx, rx) in lossy})
    return directions, sorted(f"{tx}->{rx}" for tx, rx in lossy) or None


def estimate_s(m):
    """Rough seconds of one step (the progress display's ETA)."""
    over, s, final = trial_overhead_s(m), m.search, m.trial_duration_s
    steps = math.log2(1 / (s.resolution_pct / 100)) + 2
    extra = (final + over) * (2 if s.method == "mlr" else 1) if final > s.initial_duration_s else 0
    return steps * (s.initial_duration_s + over) + extra
