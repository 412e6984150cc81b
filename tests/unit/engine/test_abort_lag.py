"""Early abort's "certainly lost" against a buffering DUT (issue 46 item
2), on TrafficWatch's estimate alone: the live counters are simulated (a
history of frames sent, a count received), no tester runs."""
from rfc2544.engine.tester import Waits
from rfc2544.engine.traffic_watch import TrafficWatch
from rfc2544.engine.trial_engine import TrialSettings

RATE = 1000.0       # frames/s sent


def estimate(queue_s, residual_s, abort_lag_s=1.0, now=5.0, gap_lost=0):
    """The estimate at `now` of a trial whose frames each arrive `queue_s`
    after they were sent (a FIFO holding that much), polled every 0.5 s."""
    watch = object.__new__(TrafficWatch)
    watch.settings = TrialSettings(Waits(residual_s=residual_s), abort_lag_s=abort_lag_s)
    watch.history = [(t / 2, t / 2 * RATE) for t in range(int(now * 2) + 1)]
    received = max(now - queue_s, 0.0) * RATE
    return watch._loss_estimate({"gap_lost": gap_lost, "rx_frames": received}, now)


def test_frames_queued_less_than_the_residual_wait_are_not_lost():
    # 1.5 s in the DUT's queue: the final read, 2 s after the end, counts them all
    assert estimate(queue_s=1.5, residual_s=2.0) == 0
    # the same queue with a 0.5 s residual wait: the final counts lose them too
    assert estimate(queue_s=1.5, residual_s=0.5) == 500


def test_frames_later_than_the_residual_wait_are_lost_and_gaps_always_are():
    assert estimate(queue_s=3.0, residual_s=2.0) == 1000
    assert estimate(queue_s=0.0, residual_s=2.0, gap_lost=7) == 7
    # a DUT forwarding nothing is still caught, the residual wait later
    assert estimate(queue_s=99.0, residual_s=2.0) == 3000
