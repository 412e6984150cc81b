"""A configuration step's verdict (Y.1564 8.1.2): which rule failed, by
name, with the figures that broke it.

- IR: in the EIR, policing and EBS steps the received information rate
  must lie between CIR x (1 - FLR) (the committed part got through) and
  (CIR + EIR) x (1 + M) (the DUT held the excess to the profile; M, a
  setting, allows for its meters' bursts).
- FLR, FTD, FDV: the frames inside the contract meet the service's SAC. In
  the CIR and CBS steps every frame is inside it; in the other steps of a
  colour-aware service the green frames are, and yellow ones are judged
  by IR only (their delays, timed with the yellow frames', are not
  judged: `delay_judged`). A colour-blind service's EIR and policing steps are judged
  by IR only: the tester cannot tell which of its frames the DUT coloured
  green.

FTD is the mean one-way delay of the judged frames; FDV is the delay at
the profile's FDV percentile minus the least delay (Y.1563's two-point
variation against the minimum), both in ms.
"""
from dataclasses import dataclass
from typing import Optional

from rfc2544.y1564.steps import CBS, CIR


@dataclass(frozen=True)
class StepCounts:
    """What one step measured, per colour: green (all frames of a
    colour-blind service) and yellow (colour-aware only)."""
    duration_s: float
    green_tx: int
    green_rx: int
    yellow_tx: int = 0
    yellow_rx: int = 0
    ftd_ms: Optional[float] = None      # judged frames' mean one-way delay
    fdv_ms: Optional[float] = None
    out_of_order: int = 0

    def flr_pct(self):
        """The judged frames' loss, in % (0 when none were sent)."""
        return 100.0 * max(self.green_tx - self.green_rx, 0) / self.green_tx if self.green_tx else 0.0


@dataclass(frozen=True)
class Failure:
    rule: str       # IR | FLR | FTD | FDV | AVAIL
    text: str
    low: bool = False   # IR: below its least (a tester that could not send explains it)


def received_mbps(counts, service):
    """The received information rate (layer 2) over the step."""
    frames = counts.green_rx + counts.yellow_rx
    return frames * service.mean_frame_bytes * 8 / counts.duration_s / 1e6 if counts.duration_s > 0 else 0.0


def ir_bounds(service, m_factor_pct):
    """(least, most) received information rate an EIR or policing step allows."""
    low = service.cir_mbps * (1 - service.sac.flr_pct / 100)
    high = (service.cir_mbps + service.eir_mbps) * (1 + m_factor_pct / 100)
    return low, high


def judge(step, service, counts, m_factor_pct=5.0, delay_judged=True):
    """The rules `step` of `service` broke with `counts` (an empty list: it
    passed). `delay_judged` False: the delays were measured over more than
    the judged frames (green and yellow together), so FTD and FDV are not
    judged."""
    failed = []
    sac = service.sac
    if step.kind not in (CIR, CBS):
        low, high = ir_bounds(service, m_factor_pct)
        ir = received_mbps(counts, service)
        if ir < low * (1 - 1e-9):
            failed.append(Failure("IR", f"received {ir:.4g} Mbit/s, below CIR x (1 - FLR) = {low:.4g}", low=True))
        elif ir > high * (1 + 1e-9):
            failed.append(Failure("IR", f"received {ir:.4g} Mbit/s, above (CIR + EIR) x (1 + M) = {high:.4g}"))
        if service.colour_mode == "blind":
            return failed
    flr = counts.flr_pct()
    if flr > sac.flr_pct:
        failed.append(Failure("FLR", f"lost {flr:.4g} % of its frames, above the SAC's {sac.flr_pct:g} %"))
    if not delay_judged:
        return failed
    if counts.ftd_ms is not None and counts.ftd_ms > sac.ftd_ms:
        failed.append(Failure("FTD", f"mean delay {counts.ftd_ms:.4g} ms, above the SAC's {sac.ftd_ms:g} ms"))
    if counts.fdv_ms is not None and counts.fdv_ms > sac.fdv_ms:
        failed.append(Failure("FDV", f"delay variation {counts.fdv_ms:.4g} ms, above the SAC's {sac.fdv_ms:g} ms"))
    return failed


def fdv_ns(stats, percentile_field):
    """FDV of a LatencyStats: the delay at `percentile_field` (a
    model.BOUND_PERCENTILES value) less the least delay; None without samples."""
    high = getattr(stats, percentile_field, None) if stats is not None else None
    if high is None or stats.samples == 0:
        return None
    return max(high - stats.min_ns, 0.0)
