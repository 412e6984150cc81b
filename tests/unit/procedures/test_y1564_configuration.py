"""The Y.1564 service configuration test (procedures/y1564_configuration.py)
through the runner against the simulated DUT's per-class policers
(SIMULATED: rfc2544/sim/services.py; the lab test runs the real module):
each service's steps, their verdicts and the rule that failed, the
results file and the report."""
import json

import pytest

from rfc2544.reports.render import render_html
from rfc2544.results.load import load_results
from rfc2544.sim.dut import SimDUT
from rfc2544.y1564 import services as svc

from helpers_run import profile, resume, sim_inventory, start
from schema_check import schema_errors

SAC = {"flr_pct": 0.1, "ftd_ms": 10, "fdv_ms": 5, "avail_pct": 99.9}


def services():
    return svc.parse({"defaults": {"sac": SAC}, "services": [
        {"name": "voice", "frame_size": 128, "vlan": 100, "pcp": 5, "dscp": 46, "cir_mbps": 10},
        {"name": "video", "frame_size": 1518, "vlan": 200, "cir_mbps": 40, "eir_mbps": 20},
        {"name": "data", "emix": "abceg", "vlan": 300, "cir_mbps": 50, "eir_mbps": 50, "colour_mode": "aware_dei"},
        # the DUT's policer sits below this service's CIR
        {"name": "starved", "frame_size": 512, "vlan": 400, "cir_mbps": 20},
    ]}, "services.yml")


POLICERS = {("vlan", 100, 5): 10.0, ("vlan", 200, 0): 60.0, ("vlan", 300, 0): 100.0, ("vlan", 400, 0): 15.0}


def y1564_profile(**settings):
    return profile(tests=["y1564_configuration"],
                   y1564_configuration={"step_s": 2, "cir_steps_pct": [50, 80, 100], **settings})


def run(tmp_path, sim=None, **settings):
    sim = sim or SimDUT(inventory=sim_inventory(), policers=POLICERS)
    runner, results = start(tmp_path / "run", sim, y1564_profile(**settings), services=services())
    runner.run()
    return json.loads(results.path.read_text()), results, sim


def test_each_service_s_steps_are_judged_and_the_failed_rule_named(tmp_path):
    data, results, sim = run(tmp_path)
    by_name = {e["service"]: e for e in data["y1564_configuration"]}
    assert list(by_name) == ["voice", "video", "data", "starved"]
    assert [s["service"] for s in data["plan"]] == ["voice", "video", "data", "starved"]
    voice, video, data_svc, starved = by_name.values()
    assert [s["label"] for s in voice["steps"]] == ["CIR 50 %", "CIR 80 %", "CIR 100 %", "Policing"]
    assert voice["verdict"] == "pass" and voice["frame_size"] == 128
    # the policing step of a colour-blind service: received held at CIR + EIR
    policing = video["steps"][-1]
    assert policing["offered_mbps"] == pytest.approx(40 + 20 * 1.25)
    assert policing["ir_mbps"] == pytest.approx(60, rel=0.01) and policing["verdict"] == "pass"
    assert video["verdict"] == "pass"
    # colour-aware: the yellow frames the DUT drops above CIR + EIR do not count against green
    aware = {s["label"]: s for s in data_svc["steps"]}
    assert aware["Policing"]["yellow_mbps"] == pytest.approx(62.5) and aware["Policing"]["verdict"] == "pass"
    assert data_svc["frame_size"] == 0 and data_svc["verdict"] == "pass"
    # the policer below CIR: the first CIR step above it fails, by FLR
    steps = {s["label"]: s for s in starved["steps"]}
    assert steps["CIR 50 %"]["verdict"] == "pass"
    assert steps["CIR 80 %"]["verdict"] == "fail" and [f["rule"] for f in steps["CIR 80 %"]["failed"]] == ["FLR"]
    assert [f["rule"] for f in steps["Policing"]["failed"]] == ["IR"]       # held below CIR x (1 - FLR)
    assert starved["verdict"] == "fail" and starved["failed_rules"] == ["FLR", "IR"]
    assert sim.streams is None                      # the inventory's streams again after each service
    assert schema_errors(data) == []
    # the trials sent each stream at its own rate: a colour-aware step's shares are green : yellow
    shares = [t["spec"].get("shares") for t in data["trials"] if t["unit"].endswith("/data")]
    assert shares[-1] and shares[-1][0] / shares[-1][1] == pytest.approx(50 / 62.5, rel=0.01)
    html = render_html(load_results(results.path))
    assert "Service activation (ITU-T Y.1564)" in html and "64 / 128 / 256 / 1024 / 1518 B" in html
    assert "FLR: lost" in html and html.count('id="fig-service-') >= 4


def test_a_failed_service_makes_the_run_miss_its_thresholds(tmp_path):
    from rfc2544.procedures.runner import check_thresholds
    data, results, _ = run(tmp_path)
    misses = check_thresholds(data, y1564_profile())
    assert misses == ["Y.1564 service starved failed its configuration test: FLR, IR (step CIR 80 %)"]


def test_a_stopped_configuration_test_resumes_at_the_service_it_stopped_in(tmp_path):
    sim = SimDUT(inventory=sim_inventory(), policers=POLICERS, fail_at={6: KeyboardInterrupt()})
    runner, results = start(tmp_path / "run", sim, y1564_profile(), services=services())
    with pytest.raises(KeyboardInterrupt):
        runner.run()
    partial = json.loads(results.path.read_text())
    assert [e["service"] for e in partial["y1564_configuration"]] == ["voice"]
    fresh = SimDUT(inventory=sim_inventory(), policers=POLICERS)
    runner, results = resume(tmp_path / "run", fresh)
    runner.run()
    done = json.loads(results.path.read_text())
    assert [e["service"] for e in done["y1564_configuration"]] == ["voice", "video", "data", "starved"]
    # voice done, video's first step replayed from the journal: the rest are sent
    assert fresh.trials_run == sum(len(e["steps"]) for e in done["y1564_configuration"]) - 4 - 1


def test_a_step_the_tester_cannot_send_is_tester_limited_not_a_dut_failure(tmp_path):
    # 1000 frames/s: video's 1518 B steps above 12 Mbit/s cannot be sent
    sim = SimDUT(inventory=sim_inventory(), policers=POLICERS, tester_ceiling_fps=1000)
    data, _, _ = run(tmp_path, sim)
    video = next(e for e in data["y1564_configuration"] if e["service"] == "video")
    verdicts = {s["label"]: s["verdict"] for s in video["steps"]}
    assert verdicts["CIR 50 %"] == "tester-limited" and "fail" not in verdicts.values(), video["steps"]
    assert video["verdict"] == "tester-limited" and video["failed_rules"] == []


class NoStreamIds(SimDUT):
    counts_streams_apart = False


def test_a_colour_aware_service_needs_streams_counted_apart(tmp_path):
    data, _, _ = run(tmp_path, NoStreamIds(inventory=sim_inventory(), policers=POLICERS))
    step = next(s for s in data["plan"] if s["service"] == "data")
    assert step["state"] == "skipped" and "counted apart by stream id" in step["note"]
    assert [e["service"] for e in data["y1564_configuration"]] == ["voice", "video", "starved"]


def test_colour_aware_delays_timed_with_yellow_frames_are_shown_not_judged(tmp_path):
    data, _, _ = run(tmp_path)
    aware = next(e for e in data["y1564_configuration"] if e["service"] == "data")
    judged = {s["label"]: s["delay_judged"] for s in aware["steps"]}
    assert judged == {"CIR 50 %": True, "CIR 80 %": True, "CIR 100 %": True, "EIR": False, "Policing": False}
