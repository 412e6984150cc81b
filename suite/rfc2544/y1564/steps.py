"""The service configuration test's steps (Y.1564 8.1), each service
alone: the CIR step load, the EIR step, the traffic policing step and the
optional burst steps, with what each offers. `rules.judge` says whether a
step passed.

Colour-blind services send every frame unmarked (DEI 0, the service's
DSCP): the DUT colours them by its own meters. Colour-aware services send
their committed part green and their excess part yellow (DEI 1, or the
service's yellow DSCP), so the DUT and the verdict can tell them apart.
"""
from dataclasses import dataclass

CIR, EIR, POLICING, CBS, EBS = "cir", "eir", "policing", "cbs", "ebs"
# below this share of the CIR an EIR is small: the policing step overshoots by a share of the CIR instead
SMALL_EIR_SHARE = 0.2
OVERSHOOT_SHARE = 0.25      # Y.1564: the policing step offers CIR + EIR + 25 % (of EIR, or of CIR where EIR is small)


@dataclass(frozen=True)
class Step:
    service: str
    kind: str                   # cir | eir | policing | cbs | ebs
    label: str                  # as the report prints it: "CIR 25 %", "EIR", "Policing", "CBS burst"
    green_mbps: float           # offered unmarked (colour-blind) or green (colour-aware), layer 2
    yellow_mbps: float          # offered yellow (colour-aware only)
    duration_s: float
    burst_bytes: int = 0        # cbs, ebs: bytes per burst at line rate, the bursts spaced to the mean rate
    capped: bool = False        # the line could not carry what the step asks: offered at the line's rate

    @property
    def offered_mbps(self):
        return self.green_mbps + self.yellow_mbps


def overshoot_mbps(service):
    """What the policing step offers above CIR + EIR."""
    if service.eir_mbps >= SMALL_EIR_SHARE * service.cir_mbps:
        return OVERSHOOT_SHARE * service.eir_mbps
    return OVERSHOOT_SHARE * service.cir_mbps


def configuration_steps(service, cir_steps_pct=(25, 50, 75, 100), step_s=60.0, eir_step=True, policing_step=True,
                        burst_steps=False, l2_line_mbps=None):
    """The steps of one service, in the order they run. `l2_line_mbps`:
    the layer-2 rate the service's line carries at its frame size (None:
    unknown); a step asking more is offered that and marked `capped`."""
    cir, eir, aware = service.cir_mbps, service.eir_mbps, service.colour_mode != "blind"

    def step(kind, label, green, yellow=0.0, burst=0):
        capped = l2_line_mbps is not None and green + yellow > l2_line_mbps * (1 + 1e-9)
        if capped:
            scale = l2_line_mbps / (green + yellow)
            green, yellow = green * scale, yellow * scale
        return Step(service.name, kind, label, green, yellow, float(step_s), burst, capped)

    steps = [step(CIR, f"CIR {pct:g} %", cir * pct / 100) for pct in cir_steps_pct]
    if eir_step and eir > 0:
        steps.append(step(EIR, "EIR", cir, eir) if aware else step(EIR, "EIR", cir + eir))
    if policing_step:
        over = overshoot_mbps(service)
        steps.append(step(POLICING, "Policing", cir, eir + over) if aware else
                     step(POLICING, "Policing", cir + eir + over))
    if burst_steps and service.cbs_bytes > 0:
        steps.append(step(CBS, "CBS burst", cir, burst=service.cbs_bytes))
    if burst_steps and eir > 0 and service.ebs_bytes > 0:
        steps.append(step(EBS, "EBS burst", cir + eir, burst=service.cbs_bytes + service.ebs_bytes))
    return steps


def configuration_plan(services, settle_s=0.0, **settings):
    """Every service's steps, one service after another, and the time
    they take with `settle_s` between steps."""
    steps = [s for service in services for s in configuration_steps(service, **settings)]
    return steps, sum(s.duration_s + settle_s for s in steps)
