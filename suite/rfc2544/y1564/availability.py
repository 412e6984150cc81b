"""Availability after MEF 10.3 (8.8.4), over the performance test's 1 s
intervals, and the figures a service's bins add up to.

An interval is high-loss when its frame loss ratio exceeds the threshold
C (frames sent in it that did not arrive; an interval that sent nothing
is not high-loss). The service becomes unavailable at the first of `n`
consecutive high-loss intervals, and available again at the first of `n`
consecutive intervals that are not: so a loss of at least n seconds
counts exactly its high-loss seconds as unavailable, and a shorter one
counts none. A change needs all n intervals: in the last n - 1 seconds of
a test the state can only stay as it was. FLR over the test counts the
available intervals only, as MEF 10.3 does.
"""
from dataclasses import dataclass
from typing import List


@dataclass(frozen=True)
class AvailabilityRule:
    window: int = 10            # n: consecutive 1 s intervals that change the state
    loss_pct: float = 50.0      # C: an interval's FLR above this makes it high-loss


def high_loss(sent, received, loss_pct):
    """Per interval: did it lose more than `loss_pct` % of the frames it sent?"""
    return [s > 0 and 100.0 * max(s - r, 0) / s > loss_pct for s, r in zip(sent, received)]


def available(flags, window) -> List[bool]:
    """Per interval: available (True) or not, from its high-loss flags."""
    n, out, state = len(flags), [], True
    high = [0]
    for f in flags:
        high.append(high[-1] + f)       # high-loss intervals before each index
    for k in range(n):
        if k + window <= n:
            in_window = high[k + window] - high[k]
            if state and in_window == window:
                state = False
            elif not state and in_window == 0:
                state = True
        out.append(state)
    return out


@dataclass(frozen=True)
class ServicePerformance:
    seconds: int
    available_s: int
    avail_pct: float
    flr_pct: float              # over the available intervals
    sent: int
    lost: int                   # in the available intervals


def summarize(sent, received, rule):
    """A service's availability and FLR from its per-second sent and received counts."""
    state = available(high_loss(sent, received, rule.loss_pct), rule.window)
    up = [k for k, a in enumerate(state) if a]
    sent_up = sum(sent[k] for k in up)
    lost_up = sum(max(sent[k] - received[k], 0) for k in up)
    seconds = len(state)
    return ServicePerformance(seconds=seconds, available_s=len(up),
                              avail_pct=100.0 * len(up) / seconds if seconds else 0.0,
                              flr_pct=100.0 * lost_up / sent_up if sent_up else 0.0,
                              sent=sent_up, lost=lost_up)
