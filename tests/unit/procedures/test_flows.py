"""Flows per stream (issue 31 item 2, first part): the profile's `flows`,
each count its own plan steps, the generator's UDP source port stepping
over them, and every result naming them. Whole runs use the simulated DUT
(rfc2544.sim.dut, no network) with `cores`: an RSS/RPS DUT whose flows each
land on one core, so one flow measures one core of it. The SSH tester runs
against the simulated host (pktgen_sim.py), whose device files answer in
the real text format."""
import json
import re

import pytest

from pktgen_sim import SimKernel
from sim_session import SimSession
from rfc2544.cli.plan import plan_document, plan_text
from rfc2544.config import profiles
from rfc2544.drivers import pktgen
from rfc2544.engine.tester import SSHTester
from rfc2544.errors import BadInput
from rfc2544.model import TrialSpec
from rfc2544.procedures.runner import build_plan
from rfc2544.reports import compare as compare_mod
from rfc2544.results.load import load_results
from rfc2544.reports.render import render_html
from rfc2544.reports.summary import throughput_rows
from rfc2544.results.store import figures_of
from rfc2544.sim import dut as simdut

from helpers_run import profile, resume, start
from schema_check import assert_valid
from test_tester_sim import FAST, make_inventory


def test_one_flow_per_stream_is_the_default_and_changes_nothing():
    prof = profile(tests=["throughput"], frame_sizes=[64])
    assert prof.model.flows == [1]
    assert build_plan(prof) == [{"unit": "throughput/ipv4/64", "test": "throughput", "frame_size": 64,
                                 "ip_version": 4, "state": "pending"}]


@pytest.mark.parametrize("flows,message", [
    ([1, 0], "0 is not a flow count per stream"),
    ([65527], "65527 is not a flow count per stream (a whole number in 1..65526)"),
    ([2.5], "2.5 is not a flow count"),
    ([True], "True is not a flow count"),
    ([], "must be a non-empty list of flow counts"),
    ([256, 256], "has duplicates"),
    ("many", "must be a non-empty list"),
])
def test_bad_flow_counts_are_refused_with_the_field_named(flows, message):
    with pytest.raises(BadInput) as exc:
        profiles.validate({"flows": flows}, "my.yml")
    assert str(exc.value).startswith("my.yml: flows: ") and message in str(exc.value)


def test_the_profiles_bound_is_the_generators():
    assert profiles.MAX_FLOWS_PER_STREAM == pktgen.MAX_FLOWS - pktgen.DeviceConfig.udp_src
    assert profiles.validate({"flows": 256}).model.flows == [256]


def test_each_flow_count_is_steps_of_its_own_and_plan_shows_them():
    """RFC 2544 section 12: one flow first, then many."""
    prof = profile(tests=["throughput", "latency"], frame_sizes=[64, 1518], flows=[1, 256])
    steps = build_plan(prof)
    assert [(s["test"], s["frame_size"], s.get("flows")) for s in steps] == [
        ("throughput", 64, None), ("throughput", 1518, None), ("latency", 64, None), ("latency", 1518, None),
        ("throughput", 64, 256), ("throughput", 1518, 256), ("latency", 64, 256), ("latency", 1518, 256)]
    assert steps[4]["unit"] == "throughput/ipv4/64/256flows"
    assert len({s["unit"] for s in steps}) == len(steps)
    text = plan_text(plan_document(prof))
    assert "1518  v4  (256 flows per stream)" in text
    assert re.search(r"\n  flows +\[1, 256\]\n", text)


def test_the_generator_steps_the_udp_source_port_over_the_flows():
    def cfg(flows):
        return pktgen.DeviceConfig(device="tx0", count=10, dst_mac="02:00:00:00:00:01", src_ip="198.18.0.1",
                                   dst_ip="198.19.0.1", pkt_size=60, flows=flows)
    ports = [c for c in cfg(256).commands() if c.startswith("udp_")]
    # a port range leaves its max out (upstream and rfc2544_pktgen): 9..264
    assert ports == ["udp_src_min 9", "udp_src_max 265", "udp_dst_min 9", "udp_dst_max 9"]
    assert [c for c in cfg(1).commands() if c.startswith("udp_src")] == ["udp_src_min 9", "udp_src_max 9"]
    assert pktgen.expected_params(cfg(256))["udp_src_max"] == "265"
    with pytest.raises(BadInput, match="flows per stream must be between 1 and 65526, not 65527"):
        cfg(65527).commands()


def test_an_ssh_trial_of_many_flows_writes_the_range_and_verifies_it(tmp_path):
    kernel = SimKernel()
    tester = SSHTester(make_inventory(tmp_path), waits=FAST, sessions={"tester": SimSession("tester", kernel)},
                       clock=kernel.clock)
    r = tester.run_trial(TrialSpec(frame_size=64, load_fps=2000, duration_s=0.2, flows=64))
    assert r.tx_frames == r.rx_frames == 400, r.notes
    writes = kernel.devices["tx0"].writes
    assert "udp_src_max 73" in writes
    before = len(writes)
    r = tester.run_trial(TrialSpec(frame_size=64, load_fps=2000, duration_s=0.2))
    assert r.tx_frames == r.rx_frames == 400, r.notes
    # back to one flow: the port range is among the changed commands written, and the read-back verifies
    assert "udp_src_max 9" in writes[before:] and "udp_src_min 9" not in writes[before:]
    assert tester.engine.control_counts["mismatches"] == 0 and tester.engine.control_counts["unverifiable"] == 0


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    # 4 cores of 100,000 frames/s each: one flow finds one core
    sim = simdut.SimDUT(capacity_fps=400_000, cores=4)
    prof = profile(tests=["throughput", "latency"], frame_sizes=[64], link_mbps=1000.0, flows=[1, 256],
                   latency={"repetitions": 1},
                   search={"max_load_fps": 600_000.0, "method": "bisection", "pdr_loss_pct": None})
    runner, results = start(tmp_path_factory.mktemp("flows") / "run", sim, prof)
    runner.run()
    return results, sim


def test_one_flow_measures_one_core_and_256_flows_all_of_them(run):
    results, _ = run
    data = results.data
    ndr = {r.get("flows", 1): r["ndr_fps"] for r in data["throughput"]}
    assert ndr[1] == pytest.approx(100_000, rel=0.01) and ndr[256] == pytest.approx(400_000, rel=0.01)
    assert {r["unit"]: r.get("flows") for r in data["throughput"]} == {
        "throughput/ipv4/64": None, "throughput/ipv4/64/256flows": 256}
    # every trial of a step has its flows, and latency runs at its own step's throughput
    for t in data["trials"]:
        assert t["spec"].get("flows", 1) == (256 if t["unit"].endswith("256flows") else 1), t["unit"]
    lat = {r.get("flows", 1): r["load_fps"] for r in data["latency"]}
    assert lat[256] == pytest.approx(ndr[256]) and lat[1] == pytest.approx(ndr[1])
    assert data["schema_minor"] >= 2
    assert_valid(json.loads(results.path.read_text()), "flows run")


def test_report_compare_and_store_keep_the_flow_counts_apart(run, tmp_path):
    results, _ = run
    loaded = load_results(results.path)
    rows = throughput_rows(loaded)
    assert [r["label"] for r in rows] == ["64 B", "64 B, 256 flows"]
    assert "64 B, 256 flows" in render_html(loaded)
    figures = [(f["test"], f["metric"]) for f in figures_of(loaded)]
    assert ("throughput", "ndr_fps") in figures and ("throughput, 256 flows", "ndr_fps") in figures
    assert len(figures) == len(set(figures))
    out = compare_mod.compare(loaded, loaded, 5.0)
    labels = {r["label"] for r in out["rows"] if r["metric"] == "throughput_ndr"} or \
        {r["label"] for r in out["rows"]}
    assert "64 B, 256 flows" in labels and "64 B" in labels


def test_a_resumed_run_keeps_the_flows(run, tmp_path):
    results, _ = run
    sim = simdut.SimDUT(capacity_fps=400_000, cores=4, fail_at={})
    prof = profiles.validate(results.data["profile"], "again")
    one_flow_trials = sum(1 for t in results.data["trials"] if not t["unit"].endswith("256flows"))
    sim.fail_at[one_flow_trials + 3] = KeyboardInterrupt()
    runner, _ = start(tmp_path / "run", sim, prof)
    with pytest.raises(KeyboardInterrupt):
        runner.run()
    runner2, again = resume(tmp_path / "run", simdut.SimDUT(capacity_fps=400_000, cores=4))
    runner2.run()
    assert [r.get("flows") for r in again.data["throughput"]] == [r.get("flows") for r in results.data["throughput"]]
    assert [r["ndr_fps"] for r in again.data["throughput"]] == [r["ndr_fps"] for r in results.data["throughput"]]


# ---- flows as destination networks (RFC 2544 section 12) ---------------------

def test_destination_networks_span_as_many_24s_drawn_per_frame():
    def cfg(networks, **kw):
        return pktgen.DeviceConfig(device="tx0", count=10, dst_mac="02:00:00:00:00:01", src_ip="198.18.0.1",
                                   dst_ip="198.19.0.1", pkt_size=60, dst_networks=networks, **kw)
    cmds = cfg(256).commands()
    # 198.19.K.1 for K drawn in 0..255: every 256th address of the range
    assert {"dst_min 198.19.0.1", "dst_max 198.19.255.1", "dst_stride 256", "flag IPDST_RND"} <= set(cmds)
    assert "udp_src_max 9" in cmds         # the ports stay: only the destination varies
    one = cfg(1).commands()
    assert {"dst_max 198.19.0.1", "dst_stride 1", "flag !IPDST_RND"} <= set(one)
    # a generator without dst_stride is told nothing of it
    assert not [c for c in cfg(None).commands() if "dst_stride" in c or "IPDST_RND" in c]
    assert pktgen.expected_params(cfg(256))["dst_max"] == "198.19.255.1"
    assert pktgen.expected_params(cfg(256))["dst_stride"] == "256" and pktgen.expected_params(cfg(1))["dst_stride"] == ""
    # IPv6 (module 1.5): the same interface id in 256 /64s, drawn per frame
    v6 = pktgen.DeviceConfig(device="tx0", count=10, dst_mac="02:00:00:00:00:01", src_ip="2001:2::1",
                             dst_ip="2001:2:0:100::1", pkt_size=78, ipv6=True, dst_networks=256)
    assert {"dst6 2001:2:0:100::1", "dst6_min 2001:2:0:100::1", "dst6_max 2001:2:0:1ff::1",
            "flag IPDST_RND"} <= set(v6.commands())
    assert not [c for c in v6.commands() if c.startswith(("dst_min", "dst_stride"))]
    assert pktgen.expected_params(v6)["max_daddr"] == "2001:2:0:1ff::1"
    one6 = pktgen.DeviceConfig(device="tx0", count=10, dst_mac="02:00:00:00:00:01", src_ip="2001:2::1",
                               dst_ip="2001:2:0:100::1", pkt_size=78, ipv6=True, dst_networks=1).commands()
    assert {"dst6_max 2001:2:0:100::1", "flag !IPDST_RND"} <= set(one6)
    with pytest.raises(BadInput, match="pass the end of its /32"):
        pktgen.DeviceConfig(device="tx0", count=10, dst_mac="02:00:00:00:00:01", src_ip="2001:2::1",
                            dst_ip="2001:2:ffff:ffff::1", pkt_size=78, ipv6=True, dst_networks=2).commands()
    with pytest.raises(BadInput, match="pass 255.255.255.255"):
        pktgen.DeviceConfig(device="tx0", count=10, dst_mac="02:00:00:00:00:01", src_ip="198.18.0.1",
                            dst_ip="255.255.1.1", pkt_size=60, dst_networks=512).commands()


def test_destination_networks_over_ipv6_need_module_1_5():
    assert profiles.validate({"flow_spread": "dst_networks", "flows": [1, 256]}).model.flow_spread == "dst_networks"
    assert profiles.validate({"flow_spread": "dst_networks", "ip_versions": [4, 6]}).model.ip_versions == [4, 6]
    with pytest.raises(BadInput, match="flow_spread: must be one of udp_ports, dst_networks"):
        profiles.validate({"flow_spread": "dst_ports"}, "my.yml")


def test_an_ssh_trial_over_256_networks_writes_the_range_and_the_flag_and_verifies_them(tmp_path):
    kernel = SimKernel(module_version="1.2")
    tester = SSHTester(make_inventory(tmp_path), waits=FAST, sessions={"tester": SimSession("tester", kernel)},
                       clock=kernel.clock)
    r = tester.run_trial(TrialSpec(frame_size=64, load_fps=2000, duration_s=0.2, flows=256,
                                   flow_spread="dst_networks"))
    assert r.tx_frames == r.rx_frames == 400, r.notes
    writes = kernel.devices["tx0"].writes
    assert {"flag IPDST_RND", "dst_stride 256"} <= set(writes)
    assert [w for w in writes if w.startswith("dst_max")][-1] == "dst_max 198.19.255.1"
    before = len(writes)
    r = tester.run_trial(TrialSpec(frame_size=64, load_fps=2000, duration_s=0.2))
    assert r.tx_frames == r.rx_frames == 400, r.notes
    assert {"dst_max 198.19.0.1", "flag !IPDST_RND", "dst_stride 1"} <= set(writes[before:])
    assert tester.engine.control_counts["mismatches"] == 0 and tester.engine.control_counts["unverifiable"] == 0


def test_an_older_generator_is_refused_destination_networks(tmp_path):
    kernel = SimKernel()            # module 1.1: no dst_stride
    tester = SSHTester(make_inventory(tmp_path), waits=FAST, sessions={"tester": SimSession("tester", kernel)},
                       clock=kernel.clock)
    with pytest.raises(BadInput, match="destination networks need the rfc2544_pktgen module 1.2"):
        tester.run_trial(TrialSpec(frame_size=64, load_fps=2000, duration_s=0.2, flows=256,
                                   flow_spread="dst_networks"))
    tester.run_trial(TrialSpec(frame_size=64, load_fps=2000, duration_s=0.2))
    assert not [w for w in kernel.devices["tx0"].writes if "dst_stride" in w or "IPDST_RND" in w]


def test_a_run_over_destination_networks_says_so(tmp_path):
    sim = simdut.SimDUT(capacity_fps=400_000, cores=4)
    prof = profile(tests=["throughput"], frame_sizes=[64], link_mbps=1000.0, flows=[1, 256],
                   flow_spread="dst_networks",
                   search={"max_load_fps": 600_000.0, "method": "bisection", "pdr_loss_pct": None})
    runner, results = start(tmp_path / "run", sim, prof)
    runner.run()
    spreads = {t["spec"].get("flow_spread") for t in results.data["trials"] if t["unit"].endswith("256flows")}
    assert spreads == {"dst_networks"}
    assert all("flow_spread" not in t["spec"] for t in results.data["trials"] if not t["unit"].endswith("256flows"))
    assert [r["label"] for r in throughput_rows(load_results(results.path))] == ["64 B", "64 B, 256 networks"]
    assert_valid(json.loads(results.path.read_text()), "networks run")
