"""Availability after MEF 10.3 over 1 s intervals (rfc2544/y1564/availability.py),
at the window's edges."""
import pytest

from rfc2544.y1564.availability import AvailabilityRule, available, high_loss, summarize


def flags(text):
    return [c == "x" for c in text]


def shown(state):
    return "".join("." if a else "U" for a in state)


@pytest.mark.parametrize("intervals, expected", [
    ("..........", ".........."),
    ("..xxxxxxxxx....", "..............."),              # 9 high-loss seconds: under the window of 10
    ("..xxxxxxxxxx..........", "..UUUUUUUUUU.........."),   # 10: exactly those seconds
    ("..xxxxxxxxxxxx..............", "..UUUUUUUUUUUU.............."),   # 12: 12
    # good seconds inside an outage shorter than the window do not end it
    ("xxxxxxxxxx...xxxxxxxxxx..........", "UUUUUUUUUUUUUUUUUUUUUUU.........."),
    ("xxxxxxxxxx", "UUUUUUUUUU"),                        # from the first second
    ("......xxxxx", "..........."),                      # at the end, shorter than a window: no change
    ("xxxxxxxxxx..", "UUUUUUUUUUUU"),                    # the last n - 1 seconds keep the state
])
def test_the_state_changes_at_the_first_of_n_consecutive_intervals(intervals, expected):
    assert shown(available(flags(intervals), 10)) == expected


def test_an_interval_is_high_loss_above_the_threshold_only():
    assert high_loss([100, 100, 100, 0], [50, 49, 100, 0], 50) == [False, True, False, False]


def test_a_twelve_second_outage_costs_twelve_seconds_and_flr_counts_available_time():
    sent = [1000] * 60
    received = [1000] * 20 + [0] * 12 + [1000] * 28
    received[40] = 990          # a loss in available time
    got = summarize(sent, received, AvailabilityRule(window=10, loss_pct=50))
    assert (got.seconds, got.available_s) == (60, 48)
    assert got.avail_pct == pytest.approx(80.0)
    assert got.lost == 10 and got.flr_pct == pytest.approx(100 * 10 / 48000)
    # a partial second at each edge: above C it is unavailable, at or below it is not
    received[19], received[32] = 400, 600
    assert summarize(sent, received, AvailabilityRule()).available_s == 47
    assert summarize([], [], AvailabilityRule()).avail_pct == 0.0
