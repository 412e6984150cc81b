"""The configuration test's steps and their rules (rfc2544/y1564/steps.py,
rules.py): what each step offers, and the rule each verdict names."""
import pytest

from rfc2544.model import LatencyStats
from rfc2544.y1564 import rules, services, steps
from rfc2544.y1564.rules import StepCounts

SAC = {"flr_pct": 0.1, "ftd_ms": 10, "fdv_ms": 5, "avail_pct": 99.9}


def service(**fields):
    entry = {"name": "data", "frame_size": 1000, "cir_mbps": 100, "vlan": 10, **fields}
    return services.parse({"defaults": {"sac": SAC}, "services": [entry]})[0]


def offered(step_list):
    return [(s.kind, s.label, round(s.green_mbps, 6), round(s.yellow_mbps, 6)) for s in step_list]


def test_a_colour_blind_service_s_steps():
    got = steps.configuration_steps(service(eir_mbps=50, cbs_bytes=10000, ebs_bytes=5000), burst_steps=True)
    assert offered(got) == [("cir", "CIR 25 %", 25, 0), ("cir", "CIR 50 %", 50, 0), ("cir", "CIR 75 %", 75, 0),
                            ("cir", "CIR 100 %", 100, 0), ("eir", "EIR", 150, 0),
                            ("policing", "Policing", 162.5, 0),         # CIR + 1.25 x EIR
                            ("cbs", "CBS burst", 100, 0), ("ebs", "EBS burst", 150, 0)]
    assert [s.burst_bytes for s in got[-2:]] == [10000, 15000]
    assert all(s.duration_s == 60 for s in got)


def test_a_colour_aware_service_sends_its_excess_yellow():
    got = steps.configuration_steps(service(eir_mbps=50, colour_mode="aware_dei"), cir_steps_pct=(100,))
    assert offered(got) == [("cir", "CIR 100 %", 100, 0), ("eir", "EIR", 100, 50), ("policing", "Policing", 100, 62.5)]


def test_a_small_eir_overshoots_by_a_quarter_of_the_cir():
    # EIR below 20 % of CIR: CIR + EIR + 0.25 x CIR
    assert offered(steps.configuration_steps(service(eir_mbps=19), cir_steps_pct=()))[-1][2] == 144
    assert offered(steps.configuration_steps(service(eir_mbps=20), cir_steps_pct=()))[-1][2] == 125
    got = steps.configuration_steps(service(), cir_steps_pct=(50,), step_s=5)
    assert offered(got) == [("cir", "CIR 50 %", 50, 0), ("policing", "Policing", 125, 0)]   # no EIR: no EIR step
    assert steps.configuration_steps(service(eir_mbps=5, cbs_bytes=1), burst_steps=False, policing_step=False,
                                     eir_step=False, cir_steps_pct=()) == []


def test_a_step_the_line_cannot_carry_is_capped_and_says_so():
    got = steps.configuration_steps(service(eir_mbps=40, colour_mode="aware_dei"), cir_steps_pct=(100,),
                                    l2_line_mbps=140)
    assert [s.capped for s in got] == [False, False, True]
    assert got[-1].offered_mbps == pytest.approx(140) and got[-1].green_mbps / got[-1].yellow_mbps == \
        pytest.approx(100 / 50)


def test_the_plan_of_sixteen_services_and_its_time():
    many = services.parse({"defaults": {"sac": SAC, "frame_size": 512, "cir_mbps": 10, "eir_mbps": 5},
                           "services": [{"name": f"s{i}", "vlan": i + 1} for i in range(16)]})
    plan, seconds = steps.configuration_plan(many, settle_s=2, step_s=10)
    assert len(plan) == 16 * 6 and [p.service for p in plan[:6]] == ["s0"] * 6
    assert seconds == 16 * 6 * 12


def counts(tx=100000, rx=100000, **kw):
    return StepCounts(duration_s=10, green_tx=tx, green_rx=rx, **kw)


@pytest.mark.parametrize("kw, failed", [
    ({}, []),
    ({"rx": 99900}, []),                                         # 0.1 %: at the SAC
    ({"rx": 99899}, ["FLR"]),
    ({"ftd_ms": 10.0, "fdv_ms": 5.0}, []),
    ({"ftd_ms": 10.01}, ["FTD"]),
    ({"fdv_ms": 5.01, "rx": 0}, ["FLR", "FDV"]),
])
def test_a_cir_step_is_judged_by_the_sac(kw, failed):
    step = steps.configuration_steps(service(), cir_steps_pct=(100,))[0]
    assert [f.rule for f in rules.judge(step, service(), counts(**kw))] == failed


def mbps_frames(mbps, seconds=10, frame=1000):
    return round(mbps * 1e6 * seconds / (frame * 8))


@pytest.mark.parametrize("received_mbps, failed", [
    (150, []), (157.5, []),          # up to (CIR + EIR) x 1.05
    (158, ["IR"]),                   # the DUT let the excess through
    (99.9, []), (99.8, ["IR"]),      # CIR x (1 - FLR) = 99.9
])
def test_a_colour_blind_policing_step_is_judged_by_ir_only(received_mbps, failed):
    s = service(eir_mbps=50)
    step = steps.configuration_steps(s, cir_steps_pct=())[-1]
    got = rules.judge(step, s, counts(tx=mbps_frames(162.5), rx=mbps_frames(received_mbps), ftd_ms=99), 5.0)
    assert [f.rule for f in got] == failed
    if failed:
        assert "Mbit/s" in got[0].text


def test_a_colour_aware_step_judges_green_frames_by_the_sac_and_yellow_by_ir():
    s = service(eir_mbps=50, colour_mode="aware_dei")
    step = steps.configuration_steps(s, cir_steps_pct=())[-1]
    green = mbps_frames(100)
    # every yellow frame beyond the profile dropped: no SAC failure
    ok = StepCounts(10, green, green, yellow_tx=mbps_frames(62.5), yellow_rx=mbps_frames(50), ftd_ms=1, fdv_ms=1)
    assert rules.judge(step, s, ok) == []
    lost_green = StepCounts(10, green, green - 200, yellow_tx=mbps_frames(62.5), yellow_rx=mbps_frames(50))
    assert [f.rule for f in rules.judge(step, s, lost_green)] == ["FLR"]
    leaked = StepCounts(10, green, green, yellow_tx=mbps_frames(62.5), yellow_rx=mbps_frames(62.5))
    assert [f.rule for f in rules.judge(step, s, leaked, m_factor_pct=0)] == ["IR"]


def test_fdv_is_the_percentile_less_the_least_delay():
    stats = LatencyStats(samples=10, min_ns=1000, mean_ns=1500, max_ns=9000, p999_ns=4000, p99_ns=3000)
    assert rules.fdv_ns(stats, "p999_ns") == 3000 and rules.fdv_ns(stats, "max_ns") == 8000
    assert rules.fdv_ns(None, "p999_ns") is None
    assert rules.fdv_ns(LatencyStats(samples=0, min_ns=0, mean_ns=0, max_ns=0), "max_ns") is None
