"""RFC 2544 26.1 Throughput: the NDR (and the PDR when asked) by the
profile's search, classic bisection or MLRsearch."""
from rfc2544.search import search

TESTER_BOUND_MARGIN = 0.05     # within 5 % of the tester's own ceiling
# A departure gap this long is the tester stopping (a stalled host or VM),
# not pacing: idle TCG labs show gaps of up to 20 ms, a stalled one 700 ms.
TESTER_STALL_S = 0.1


def run(ctx, frame_size, ipv6):
    s = ctx.profile.model.search
    max_load, source = ctx.max_load(frame_size, ipv6)
    pdr = s.pdr_loss_pct / 100 if s.pdr_loss_pct else None
    result = search(
        s.method, ctx.measure(frame_size, ipv6, early_abort=s.early_abort),
        min_load=max_load * s.min_load_pct / 100, max_load=max_load,
        resolution=s.resolution_pct / 100,
        search_duration=s.initial_duration_s, final_duration=ctx.profile.model.trial_duration_s,
        pdr_loss_ratio=pdr, duration_sum=s.duration_sum_s, exceed_ratio=s.exceed_ratio)
    return summarize(ctx, frame_size, ipv6, result, max_load, source, max_load * s.min_load_pct / 100)


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
