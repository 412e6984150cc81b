"""ITU-T Y.1564 8.1, the service configuration test: each service alone,
step by step (y1564/steps.py: CIR step load, EIR, traffic policing,
bursts), each step one trial of the service's streams at the step's
rates, judged by y1564/rules.py. The entry keeps every step's figures
and verdict, and the rules that failed.

Rates count the frames as sent: a size too small for the headers and the
service's tag is sent at the smallest that holds them (rfc2544/wire.py).
The receiver times frames per port, not per stream: a colour-aware
service's EIR and policing steps time green and yellow frames together,
so their FTD and FDV are shown, not judged (y1564/rules.py).
"""
import math
from dataclasses import replace

from rfc2544 import wire
from rfc2544.model import BOUND_PERCENTILES, TrialSpec
from rfc2544.procedures import Skip, trial_overhead_s
from rfc2544.procedures.service_streams import base_stream, line_mbps_of, streams_of
from rfc2544.y1564 import rules
from rfc2544.y1564 import steps as steps_mod
from rfc2544.y1564.services import l2_capacity_mbps

TEST = "y1564_configuration"


def run(ctx, frame_size, ipv6):
    asked = ctx.service()
    s = ctx.profile.model.y1564_configuration
    inventory = ctx.inventory()
    green, yellow = streams_of(asked, inventory)
    service = replace(asked, sizes=tuple(wire.wire_frame_size(n, ipv6, green.tags.count) for n in asked.sizes))
    tx = base_stream(asked, inventory)
    line = ctx.profile.model.link_mbps or line_mbps_of(inventory)(f"{tx.tx_host}:{tx.tx_port}") or ctx.link_mbps()
    plan = steps_mod.configuration_steps(
        service, cir_steps_pct=s.cir_steps_pct, step_s=s.step_s, eir_step=s.eir_step,
        policing_step=s.policing_step, burst_steps=s.burst_steps,
        l2_line_mbps=l2_capacity_mbps(line, service.mean_frame_bytes) if line else None)
    if not plan:
        raise Skip("the profile's y1564_configuration asks for no step (no CIR step, no EIR or policing step)")
    if not ctx.full_fidelity():
        raise Skip(f"needs the rfc2544_pktgen receiver (pgrx): per-stream loss and one-way delay; "
                   f"this run counts with {ctx.receiver_name()}")
    if any(step.yellow_mbps for step in plan) and not ctx.counts_streams_apart():
        raise Skip("a colour-aware service's green and yellow frames are counted apart by stream id: needs "
                   "rfc2544_pktgen 1.3 or later on every tester host (run 'rfc2544 setup')")
    rows = []
    try:
        for step in plan:
            rows.append(_step(ctx, service, step, (green, yellow), frame_size, ipv6, s))
    finally:
        ctx.use_streams(None)
    failed = sorted({f["rule"] for row in rows for f in row["failed"]})
    limited = any(row["verdict"] == "tester-limited" for row in rows)
    return {"frame_size": frame_size, "service": service.name, "cir_mbps": service.cir_mbps,
            "eir_mbps": service.eir_mbps, "colour_mode": service.colour_mode, "steps": rows,
            "verdict": "fail" if failed else "tester-limited" if limited else "pass", "failed_rules": failed}


def _step(ctx, service, step, streams, frame_size, ipv6, settings):
    green, yellow = streams
    two = step.yellow_mbps > 0
    ctx.use_streams([replace(green, sizes=service.sizes)] + ([replace(yellow, sizes=service.sizes)] if two else []))
    green_fps, yellow_fps = service.fps(step.green_mbps), service.fps(step.yellow_mbps)
    shares = (max(round(green_fps), 1), max(round(yellow_fps), 1)) if two else None
    burst = math.ceil(step.burst_bytes / service.mean_frame_bytes) if step.burst_bytes else 1
    spec = TrialSpec(frame_size=frame_size, load_fps=green_fps + yellow_fps, duration_s=step.duration_s,
                     ipv6=ipv6, latency=True, test=TEST, shares=shares, frames_per_burst=max(burst, 1))
    r = ctx.run_trial(spec)
    by_stream = r.streams or []
    g = by_stream[0] if by_stream else None
    y = by_stream[1] if two and len(by_stream) > 1 else None
    lat = r.latency if r.latency is not None and r.latency.samples else None
    fdv = rules.fdv_ns(lat, BOUND_PERCENTILES[settings.fdv_percentile])
    counts = rules.StepCounts(
        duration_s=r.traffic_s or step.duration_s,
        green_tx=g.tx_frames if g else r.tx_frames, green_rx=g.rx_frames if g else r.rx_frames,
        yellow_tx=y.tx_frames if y else 0, yellow_rx=y.rx_frames if y else 0,
        ftd_ms=lat.mean_ns / 1e6 if lat else None, fdv_ms=fdv / 1e6 if fdv is not None else None,
        out_of_order=sum(c.out_of_order or 0 for c in by_stream))
    failures = rules.judge(step, service, counts, settings.m_factor_pct, delay_judged=not two)
    if r.tester_limited:
        # the tester sent less than the step asks: a received rate short of it is not the DUT's
        failures = [f for f in failures if not (f.rule == "IR" and f.low)]
    verdict = "fail" if failures else "tester-limited" if r.tester_limited else "pass"
    bits = service.mean_frame_bytes * 8
    return {"label": step.label, "kind": step.kind, "offered_mbps": step.offered_mbps,
            "green_mbps": step.green_mbps, "yellow_mbps": step.yellow_mbps, "duration_s": step.duration_s,
            "burst_bytes": step.burst_bytes, "capped": step.capped,
            "sent_mbps": r.tx_frames * bits / counts.duration_s / 1e6 if counts.duration_s else None,
            "ir_mbps": rules.received_mbps(counts, service), "flr_pct": counts.flr_pct(),
            "tx_frames": r.tx_frames, "rx_frames": r.rx_frames,
            "ftd_ms": counts.ftd_ms, "ftd_min_ms": lat.min_ns / 1e6 if lat else None,
            "ftd_max_ms": lat.max_ns / 1e6 if lat else None, "fdv_ms": counts.fdv_ms,
            "delay_judged": not two, "out_of_order": counts.out_of_order, "verdict": verdict,
            "failed": [{"rule": f.rule, "text": f.text} for f in failures]}


def estimate_s(m):
    """One service's steps (its EIR and policing steps counted)."""
    s = m.y1564_configuration
    steps = len(s.cir_steps_pct) + s.eir_step + s.policing_step + 2 * s.burst_steps
    return steps * (s.step_s + trial_overhead_s(m))
