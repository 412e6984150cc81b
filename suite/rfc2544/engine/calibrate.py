"""`calibrate`: the tester's own sending ceiling, without a DUT forwarding.

Decision: every tx port of the inventory sends as fast as the generator can
(pktgen `delay 0`) for `duration` seconds per frame size, all ports at once
as in a trial, with the frames addressed to the tx port's OWN MAC. The DUT
port receiving them drops them at layer 2 (a router ignores frames not for
its MAC; a learning switch does not send a frame back out of the port it
came in on), so nothing is forwarded and no cabling changes: what is
measured is the generator host's ceiling, summed over streams. The
receiver's cost is not included (pgrx counts at the netfilter hook; on the
QEMU lab it shares the same CPUs as the DUT namespace). A result near this
ceiling is the tester's limit, not the DUT's.
"""
from rfc2544.errors import BadInput
from rfc2544.engine.pacing import SOURCE_GENERATOR, SOURCE_LINK


def calibrate(inventory, frame_sizes, duration=2.0, *, tester=None, ipv6=False, progress=None):
    """Return {frame_size: frames/s} the tester sends at most (all streams).

    `inventory`: a loaded rfc2544.config.inventory.Inventory. `frame_sizes`:
    Ethernet frame sizes with FCS (0 = IMIX). `tester`: an SSHTester to reuse
    (default: a new one, closed at the end). `progress(frame_size, fps)` is
    called after each size."""
    from rfc2544.engine.tester import SSHTester

    try:
        duration = float(duration)
    except (TypeError, ValueError):
        raise BadInput(f"calibration duration must be a number of seconds, not {duration!r}")
    if not 0.1 <= duration <= 600:
        raise BadInput(f"calibration duration must be within 0.1..600 s, not {duration}")
    sizes = list(frame_sizes)
    if not sizes:
        raise BadInput("calibration needs at least one frame size")
    own = tester is None
    tester = tester or SSHTester(inventory, waits={"learning_frames": 0})
    try:
        out = {}
        for size in sizes:
            frames, elapsed = tester.send_at_max_rate(size, duration, ipv6=ipv6)
            out[size] = frames / elapsed if elapsed > 0 else 0.0
            if progress is not None:
                progress(size, out[size])
        return out
    finally:
        if own:
            tester.close()


# A receiver that counted less than this share of what was sent to it on the
# calibration link bounds the tester (what it missed is more than the
# 0.1 % a loss-free trial could hide in rounding).
RECEIVER_KEPT_UP = 0.999
BOUND_RECEIVER, BOUND_SENDER = "receiver", "sender"


def receive_ceiling(tester, ceilings, duration=2.0, progress=None):
    """The receiving side beside the sending side: per frame size, a trial
    on the inventory's calibration link (a tester port cabled to another
    of the same host) offered a tx port's share of that size's send
    ceiling (the ceiling sums the run's tx ports; the link is one port),
    counted by the receiver as a run's rx ports are. Where the receiver
    counted at least RECEIVER_KEPT_UP of what was sent, the sender bounds
    the tester at that size; else the receiver does (bounded_ceilings).
    Returns [{"frame_size", "ports", "offered_fps", "sent_frames",
    "received_frames", "sent_fps", "received_fps", "received_share",
    "bound"}], or None without a calibration link."""
    if not tester.has_calibration_link:
        return None
    ports = len({(p.tx_host, p.tx_port) for p in getattr(tester, "plans", ())}) or 1
    rows = []
    for size, ceiling in sorted(ceilings.items()):
        trial = tester.count_on_link(size, ceiling / ports, duration)
        share = trial.rx_frames / trial.tx_frames if trial.tx_frames else 0.0
        seconds = trial.traffic_s or duration
        rows.append({"frame_size": size, "ports": ports, "offered_fps": round(ceiling / ports),
                     "sent_frames": trial.tx_frames,
                     "received_frames": trial.rx_frames, "sent_fps": trial.achieved_fps,
                     "received_fps": trial.rx_frames / seconds if seconds > 0 else 0.0,
                     "received_share": share,
                     "bound": BOUND_SENDER if share >= RECEIVER_KEPT_UP else BOUND_RECEIVER})
        if progress is not None:
            progress(rows[-1])
    return rows


def bounded_ceilings(send, receive):
    """{size: fps} of the send ceilings, lowered where the receiver bounds
    the tester (receive_ceiling's rows) by the share it counted: the link
    measured one port's share of the ceiling, whatever the run's ports and
    generators, so its share, not its rate, carries over to the whole."""
    out = dict(send)
    for row in receive or ():
        key = next((k for k in out if str(k) == str(row["frame_size"])), None)
        if key is not None and row["bound"] == BOUND_RECEIVER:
            out[key] = out[key] * min(1.0, float(row["received_share"]))
    return out


PACING_STEPS = (0.25, 0.5, 0.75, 0.9)       # of the measured ceiling
# settings tried at the highest step, each restored afterwards
PACING_ALTERNATIVES = (("spin_ns", lambda v: v * 3), ("catchup_pct", lambda v: 10 if v == 0 else 0))


def pacing_fidelity(tester, ceilings, duration=2.0, progress=None):
    """How evenly the generator paces below its ceiling, as MoonGen measures
    rate control: per frame size and rate step (PACING_STEPS of the
    ceiling), the gaps' p99.9 against the nominal gap and the longest
    micro-burst. Then, at the step of the smallest size where the current
    settings paced worst, alternatives to the module's pacing settings
    (PACING_ALTERNATIVES, set and restored), so it can say which sends most
    evenly while keeping the rate.
    A generator that records no departures (the in-tree pktgen) is
    measured on the inventory's calibration link instead (arrival times;
    no settings to compare).
    Returns {"rows": [...], "settings": [...], "generator": name, "source":
    "generator" or "calibration link"} or None when neither is there."""
    params = tester.module_parameters()
    on_link = not params
    if on_link and not tester.has_calibration_link:
        return None
    rows = _step_rows(tester.send_on_link if on_link else tester.send_paced, ceilings, duration, params, progress)
    if on_link:
        return {"generator": tester.generator_name, "source": SOURCE_LINK, "rows": rows, "settings": []}
    # the settings compared where the current ones paced worst (smallest frame size)
    worst = max((r for r in rows if r["frame_size"] == min(ceilings)),
                key=lambda r: (r["longest_micro_burst"] or 0, r["p999_over_nominal"] or 0))
    settings = [worst]
    for name, change in PACING_ALTERNATIVES:
        value = change(params[name])
        try:
            tester.set_module_parameter(name, value)
            settings.append(_pacing_row(tester.send_paced, worst["frame_size"], worst["fps"], duration,
                                        step=worst["step"],
                                        settings={**params, name: value}))
        finally:
            tester.set_module_parameter(name, params[name])
        if progress is not None:
            progress(settings[-1])
    kept = [s for s in settings if s["kept_rate"]] or settings
    best = min(kept, key=lambda s: (s["longest_micro_burst"], s["p999_over_nominal"] or 0))
    for s in settings:
        s["best"] = s is best
    return {"generator": tester.generator_name, "source": SOURCE_GENERATOR, "rows": rows, "settings": settings}


def in_tree_pacing(tester, ceilings, duration=2.0, progress=None):
    """The in-tree pktgen's pacing beside our module's: with rfc2544_pktgen
    swapped out for it (SSHTester.in_tree_generator, then back), the same
    rate steps of the module's ceilings measured on the calibration link.
    Returns pacing_fidelity's dict for the in-tree generator."""
    if not tester.has_calibration_link:
        raise BadInput("comparing with the in-tree pktgen needs a calibration link in the inventory "
                       "(rfc2544_calibration_link: the in-tree pktgen records no departures)")
    with tester.in_tree_generator():
        rows = _step_rows(tester.send_on_link, ceilings, duration, {}, progress)
        return {"generator": tester.generator_name, "source": SOURCE_LINK, "rows": rows, "settings": []}


def _step_rows(send, ceilings, duration, settings, progress):
    """One _pacing_row per frame size and PACING_STEPS of its ceiling."""
    rows = []
    for size, ceiling in sorted(ceilings.items()):
        for step in PACING_STEPS:
            rows.append(_pacing_row(send, size, ceiling * step, duration, step=step, settings=settings))
            if progress is not None:
                progress(rows[-1])
    return rows


def _pacing_row(send, size, fps, duration, step, settings):
    frames, elapsed, spacing = send(size, fps, duration)
    achieved = frames / elapsed if elapsed else 0.0
    nominal = spacing.nominal_gap_ns if spacing else None
    return {"frame_size": size, "step": step, "fps": round(fps), "achieved_fps": achieved,
            "kept_rate": achieved >= 0.99 * fps, "settings": dict(settings),
            "p999_over_nominal": spacing.p999_gap_ns / nominal if spacing and nominal and spacing.p999_gap_ns else None,
            "longest_micro_burst": spacing.longest_micro_burst if spacing else None,
            "micro_bursts": spacing.micro_bursts if spacing else None,
            "close_frames": spacing.close_frames if spacing else None}
