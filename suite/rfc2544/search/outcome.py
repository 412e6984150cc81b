"""What a search sees of a trial (Outcome) and what it returns
(SearchResult); CountingMeasure adds up the trials a search ran;
LatencyBound (in model.py, which the results layer reads too) is the
latency goal a search may have beside its loss goals."""
from dataclasses import dataclass, field
from typing import List, Optional

from rfc2544.model import BOUND_PERCENTILES, LatencyBound  # noqa: F401 (the search's API)


@dataclass
class Outcome:
    """One trial as a search sees it."""
    duration_s: float           # intended trial duration
    load_fps: float             # intended load
    loss_ratio: float           # lost / sent (for an aborted trial: so far, already above the goal)
    tester_limited: bool = False  # the tester could not offer the load: never a pass
    aborted: bool = False
    traffic_s: float = 0.0      # traffic actually sent
    saved_s: float = 0.0        # traffic-seconds early abort saved
    intended_frames: int = 0
    tx_frames: int = 0
    rx_frames: int = 0
    tester_bursty: bool = False  # also tester_limited: the loss is the generator's micro-bursts
    longest_gap_s: float = 0.0   # the generator's longest departure gap in the trial (0: not recorded)
    # per stream (tx port, rx port): (frames sent, frames lost); empty when the receiver cannot attribute
    streams: dict = field(default_factory=dict)
    # the trial's latency, LatencyStats field -> ns (median_ns, p99_ns,
    # p999_ns, max_ns); None when the trial did not measure it
    latency_ns: Optional[dict] = None

    def passed(self, goal_loss_ratio, bound=None):
        """Passes the loss goal (and, given a LatencyBound, that bound too)."""
        if self.tester_limited or self.aborted or self.loss_ratio > goal_loss_ratio:
            return False
        return bound is None or not bound.exceeded(self)


@dataclass
class SearchResult:
    method: str                         # bisection | mlr
    ndr_fps: Optional[float]            # highest load with loss <= 0 (None: even min load lost frames)
    pdr_fps: Optional[float] = None     # highest load with loss <= pdr_loss_ratio (when searched)
    pdr_loss_ratio: Optional[float] = None
    ndr_upper_fps: Optional[float] = None   # lowest load seen to fail the NDR goal
    pdr_upper_fps: Optional[float] = None
    # the highest load without loss and within the latency bound (when the
    # search had one), and the lowest seen to fail that goal
    latency_bound: Optional[LatencyBound] = None
    bounded_fps: Optional[float] = None
    bounded_upper_fps: Optional[float] = None
    resolution: float = 0.0             # relative width the search stopped at (goal)
    trials: int = 0
    traffic_s: float = 0.0
    saved_s: float = 0.0
    outcomes: List[Outcome] = field(default_factory=list)


class CountingMeasure:
    """Wraps a measure function to count trials, traffic and savings."""

    def __init__(self, measure):
        self._measure = measure
        self.outcomes = []

    def __call__(self, duration_s, load_fps, goal_loss_ratio=None):
        outcome = self._measure(duration_s, load_fps, goal_loss_ratio=goal_loss_ratio)
        self.outcomes.append(outcome)
        return outcome

    def fill(self, result):
        result.trials = len(self.outcomes)
        result.traffic_s = sum(o.traffic_s for o in self.outcomes)
        result.saved_s = sum(o.saved_s for o in self.outcomes)
        result.outcomes = list(self.outcomes)
        return result
