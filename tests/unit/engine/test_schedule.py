"""The rate schedule (suite/schedule.py): pure, no tester."""
import pytest

from rfc2544.errors import BadInput
from rfc2544.model import TrialSpec
from rfc2544.engine.schedule import RateChange, RateSchedule, Segment, actual_points, rate_change_notes, segments_of


def spec(**kw):
    base = dict(frame_size=64, load_fps=2000, duration_s=0.3)
    base.update(kw)
    return TrialSpec(**base)


def test_a_plain_trial_is_one_segment():
    s = RateSchedule.of_spec(spec(), 2)
    assert s.segments == [Segment(2000, duration_s=0.3)] and s.changes == 0
    assert s.totals() == [300, 300] and s.first_rates() == [1000, 1000]
    assert s.planned_s() == pytest.approx(299 / 1000)
    assert s.expected_s() == [None, None]      # one rate: the rate check judges it


def test_system_recovery_is_two_segments():
    s = RateSchedule.of_spec(spec(recovery_load_fps=500, recovery_duration_s=0.4), 1)
    assert [seg.load_fps for seg in s.segments] == [2000, 500] and s.changes == 1
    assert s.frames == [[600], [200]] and s.rates == [[2000], [500]]
    assert s.totals() == [800] and s.boundary(1) == [600] and s.boundary(2) == [800]
    assert s.planned_s() == pytest.approx(599 / 2000 + 200 / 500)
    # judged against where the change actually happened
    assert s.expected_s([[700]]) == [pytest.approx(699 / 2000 + 100 / 500)]
    assert s.expected_s([[None]]) == [pytest.approx(599 / 2000 + 200 / 500)]


def test_a_burst_has_no_rate_and_must_split():
    s = RateSchedule.of_spec(spec(load_fps=0, burst_frames=10), 2)
    assert s.totals() == [5, 5] and s.first_rates() == [None, None] and s.planned_s() == 0.0
    with pytest.raises(BadInput, match="3 frames cannot be split over 4 streams"):
        RateSchedule([Segment(None, frames=3)], 4)
    with pytest.raises(BadInput):
        RateSchedule([], 1)
    with pytest.raises(BadInput, match="cannot follow a burst"):
        RateSchedule([Segment(None, frames=10), Segment(100, duration_s=1)], 1)


def test_any_number_of_segments():
    s = RateSchedule([Segment(1000, duration_s=1), Segment(100, duration_s=1), Segment(500, frames=50)], 1)
    assert s.totals() == [1150] and s.boundary(2) == [1100] and s.changes == 2
    assert s.planned_s() == pytest.approx(999 / 1000 + 100 / 100 + 50 / 500)


def test_rate_change_notes():
    s = RateSchedule.of_spec(spec(recovery_load_fps=500, recovery_duration_s=0.4), 1)
    notes, missed = rate_change_notes(s, {1: RateChange(1, [601], 0.3)})
    assert not missed and notes == ["rate changed to 500 frames/s 0.300 s after the start, "
                                    "after 601 frames (planned 600)"]
    notes, missed = rate_change_notes(s, {})
    assert missed and notes == ["the planned rate change did not happen (traffic ended first)"]
    notes, missed = rate_change_notes(s, {1: RateChange(1, [800], 0.4)})
    assert missed and "came after the last frame" in notes[0]
    notes, missed = rate_change_notes(s, {1: RateChange(1, [700], 0.35)})
    assert missed and "more than 5 %" in notes[0]
    assert actual_points(s, {1: RateChange(1, [601], 0.3)}) == [[601]]


def test_segments_of_a_spec():
    assert segments_of(spec(burst_frames=7, load_fps=0)) == [Segment(0, frames=7)]
