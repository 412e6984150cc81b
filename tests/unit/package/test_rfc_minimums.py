"""RFC 2544's minimums are written once (rfc2544/rfc_minimums.py, issue
57 item 2): the profile's defaults meet them, a profile one unit below
each is a deviation naming it, and the report's checks hold the same
numbers."""
import pytest

from rfc2544 import rfc_minimums as rfc
from rfc2544.config import profiles
from rfc2544.reports import checks


def _load(tmp_path, text):
    path = tmp_path / "p.yml"
    path.write_text(text)
    return profiles.load(str(path))


def test_the_defaults_are_the_minimums_and_no_deviation(tmp_path):
    p = _load(tmp_path, "name: all\ntests: [throughput, latency, frame_loss, back_to_back, system_recovery]\n")
    m = p.model
    assert tuple(m.frame_sizes) == rfc.FRAME_SIZES and m.trial_duration_s == rfc.FINAL_TRIAL_S
    assert {k: getattr(m.waits, k) for k, _, _ in rfc.WAITS} == {k: s for k, s, _ in rfc.WAITS}
    assert (m.latency.duration_s, m.latency.repetitions) == (rfc.LATENCY_TRIAL_S, rfc.LATENCY_REPETITIONS)
    assert (m.back_to_back.burst_s, m.back_to_back.depletion_s, m.back_to_back.repetitions) == (
        rfc.B2B_BURST_S, rfc.B2B_DEPLETION_S, rfc.B2B_TRIALS)
    assert m.frame_loss.step_pct == rfc.LOSS_STEP_PCT and m.system_recovery.overload_s == rfc.RECOVERY_OVERLOAD_S
    assert m.system_recovery.overload_pct == pytest.approx(rfc.RECOVERY_OVERLOAD * 100)
    assert profiles.deviations(p) == []


@pytest.mark.parametrize("section, key, value, code", [
    (None, "trial_duration_s", rfc.FINAL_TRIAL_S - 1, "final_trial"),
    ("latency", "duration_s", rfc.LATENCY_TRIAL_S - 1, "latency_duration"),
    ("latency", "repetitions", rfc.LATENCY_REPETITIONS - 1, "latency_repetitions"),
    ("frame_loss", "step_pct", rfc.LOSS_STEP_PCT + 1, "loss_step"),
    ("back_to_back", "burst_s", rfc.B2B_BURST_S - 1, "b2b_burst"),
    ("back_to_back", "repetitions", rfc.B2B_TRIALS - 1, "b2b_trials"),
    ("system_recovery", "overload_s", rfc.RECOVERY_OVERLOAD_S - 1, "recovery_overload_s"),
    ("waits", "settle_s", 4, "wait_settle"),
])
def test_one_unit_past_a_minimum_is_a_deviation(tmp_path, section, key, value, code):
    tests = "[throughput, latency, frame_loss, back_to_back, system_recovery]"
    body = f"{key}: {value}\n" if section is None else f"{section}: {{{key}: {value}}}\n"
    devs = profiles.deviation_records(_load(tmp_path, f"name: x\ntests: {tests}\n" + body))
    assert [d.code for d in devs] == [code]


def test_the_reports_checks_read_the_same_minimums():
    assert checks.RFC_FRAME_SIZES == rfc.FRAME_SIZES and checks.FINAL_TRIAL_S == rfc.FINAL_TRIAL_S
    assert (checks.LATENCY_TRIAL_S, checks.LATENCY_REPETITIONS, checks.B2B_TRIALS) == (
        rfc.LATENCY_TRIAL_S, rfc.LATENCY_REPETITIONS, rfc.B2B_TRIALS)
