"""ITU-T Y.1564 in `compare`, the store and trend: a service's figures at
each CIR step follow it from run to run, and a service that passed and
now fails is a regression. SIMULATED runs (rfc2544/sim/services.py)."""
import json

import pytest

from rfc2544.reports.compare import compare, text_table
from rfc2544.reports.junit import junit_tree
from rfc2544.reports.render import write_compare_html
from rfc2544.results.load import load_results
from rfc2544.results.store import Store, figures_of
from rfc2544.results.trend import series_title
from rfc2544.sim.dut import SimDUT
from rfc2544.y1564 import services as svc

from helpers_run import profile, sim_inventory, start

SERVICES = svc.parse({"defaults": {"sac": {"flr_pct": 0.1, "ftd_ms": 10, "fdv_ms": 5, "avail_pct": 99}},
                      "services": [{"name": "voice", "frame_size": 128, "vlan": 100, "pcp": 5, "cir_mbps": 10},
                                   {"name": "data", "emix": "abg", "vlan": 300, "cir_mbps": 20}]})


def run(directory, data_limit_mbps):
    sim = SimDUT(inventory=sim_inventory(), policers={("vlan", 100, 5): 10.0, ("vlan", 300, 0): data_limit_mbps})
    prof = profile(tests=["y1564_configuration"], y1564_configuration={"step_s": 2, "cir_steps_pct": [50, 100]})
    runner, results = start(directory, sim, prof, services=SERVICES)
    runner.run()
    return load_results(results.path)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("y1564")
    return run(base / "old", 20.0), run(base / "new", 15.0), base


def test_compare_follows_each_service_and_gates_a_failed_one(runs, tmp_path):
    old, new, _ = runs
    result = compare(old, new, 5.0)
    rows = {(r["metric"], r["label"]): r for r in result["rows"]}
    ir = rows[("Y.1564 received rate (Mbit/s)", "service data, CIR 100 %")]
    assert ir["old"] == pytest.approx(20, rel=0.01) and ir["new"] == pytest.approx(15, rel=0.01)
    assert ir["status"] == "regression"
    assert rows[("Y.1564 received rate (Mbit/s)", "service voice, CIR 100 %")]["status"] == "ok"
    verdict = rows[("Y.1564 verdict", "service data")]
    assert (verdict["old"], verdict["new"], verdict["status"]) == ("pass", "fail", "regression")
    assert {r["label"] for r in result["failures"]} == {"service data, CIR 100 %", "service data"}
    table = text_table(result)
    assert "service data, CIR 100 %" in table and "REGRESSION" in table and "pass" in table
    cases = [c.get("name") for c in junit_tree(result, "old", "new").iter("testcase")]
    assert "Y.1564 verdict at service data" in cases
    html = write_compare_html(result, old, new, tmp_path / "c.html").read_text()
    assert "service data, CIR 100 %" in html


def test_the_store_keeps_a_series_per_service_and_step(runs):
    old, new, base = runs
    figures = list(figures_of(old))
    ir = [f for f in figures if f["metric"] == "ir_mbps"]
    assert {f["test"] for f in ir} == {"Y.1564 voice, CIR 50 %", "Y.1564 voice, CIR 100 %",
                                        "Y.1564 data, CIR 50 %", "Y.1564 data, CIR 100 %"}
    data = next(f for f in ir if f["test"] == "Y.1564 data, CIR 100 %")
    assert data["frame_size"] == 0 and data["better"] == "higher" and data["value"] == pytest.approx(20, rel=0.01)
    title = series_title({**data, "dut": "dut", "profile": "p"})
    assert title.startswith("Y.1564 data, CIR 100 %: received rate (Mbit/s) EMIX IPv4")
    with Store(base / "store") as store:
        for r in (old, new):
            store.add(r["source"])
        stored = [f for f in store.figures() if f["metric"] == "ir_mbps" and f["test"] == "Y.1564 data, CIR 100 %"]
    assert sorted(round(f["value"]) for f in stored) == [15, 20]     # one series, both runs
