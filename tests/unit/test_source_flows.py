"""Source-address flows (issue 31 item 2: flows varying what the user
chooses): `flow_spread: src_addresses` steps a stream's IPv4 source through
N consecutive addresses a /24 above its tx port's, the stream still one
stream at pgrx (by its stream id), and `doctor --sources N` asks the DUT
how it routes them back. Trials run against the simulated host
(pktgen_sim.py) and doctor against a canned DUT (simulated); the lab sends
them through the real DUT (test_tester_module_lab.py)."""
import ipaddress
import json
from pathlib import Path

import pytest

from pktgen_sim import SimKernel, SimSession
from rfc2544.config import profiles
from rfc2544.drivers import pktgen, plan
from rfc2544.engine.doctor import doctor
from rfc2544.engine.tester import SSHTester
from rfc2544.errors import BadInput
from rfc2544.model import TrialSpec

from test_tester_doctor import GOOD, Canned, RoutingDut, as_dict
from test_tester_sim import FAST, make_inventory

SPEC = TrialSpec(frame_size=64, load_fps=2000, duration_s=0.2, flows=256, flow_spread="src_addresses")


def test_the_generator_steps_the_source_through_the_addresses_a_24_up():
    cfg = pktgen.DeviceConfig(device="tx0", count=10, dst_mac="52:54:00:00:00:02", src_ip="198.18.0.1",
                              dst_ip="198.19.0.1", pkt_size=60, src_addresses=256)
    cmds = cfg.commands()
    assert "src_min 198.18.1.1" in cmds and "src_max 198.18.2.0" in cmds and "flag IPSRC_RND" not in cmds
    exp = pktgen.expected_params(cfg)
    assert (exp["src_min"], exp["src_max"]) == ("198.18.1.1", "198.18.2.0")
    assert pktgen.source_range("198.18.0.1", 1) == ("198.18.0.1", "198.18.0.1")
    with pytest.raises(BadInput, match="pass 255.255.255.255"):
        pktgen.source_range("255.255.255.1", 300)


def test_the_plan_sends_one_udp_port_and_refuses_what_cannot_count_it(tmp_path):
    plans = plan.plan_streams(make_inventory(tmp_path))
    cfg, = plan.device_configs(plans, SPEC, [400], [2000], extended=True, stream_ids=True)
    assert (cfg.src_addresses, cfg.flows, cfg.src_range) == (256, 1, ("198.18.1.1", "198.18.2.0"))
    with pytest.raises(BadInput, match="source-address flows need the rfc2544_pktgen module 1.3"):
        plan.device_configs(plans, SPEC, [400], [2000], extended=True, stream_ids=False)
    with pytest.raises(BadInput, match="source-address flows are IPv4 only"):
        plan.device_configs(plans, TrialSpec(frame_size=86, load_fps=2000, duration_s=0.2, ipv6=True, flows=256,
                                             flow_spread="src_addresses"), [400], [2000], stream_ids=True)
    prof = profiles.validate({**dict(profiles.load("quick")), "flow_spread": "src_addresses"}, "test")
    assert prof.model.flow_spread == "src_addresses"
    with pytest.raises(BadInput, match="flow_spread"):
        profiles.validate({**dict(profiles.load("quick")), "flow_spread": "src_ports"}, "test")


def test_a_trial_of_256_sources_is_one_stream_counted_exactly(tmp_path):
    kernel = SimKernel(pgrx_version=6, module_version="1.4")
    tester = SSHTester(make_inventory(tmp_path), waits=FAST, sessions={"tester": SimSession("tester", kernel)},
                       clock=kernel.clock)
    r = tester.run_trial(SPEC)
    assert (r.tx_frames, r.rx_frames, r.lost_frames, r.foreign_frames) == (400, 400, 0, 0), r.notes
    assert len(r.streams) == 1
    writes = kernel.devices["tx0"].writes
    assert "src_min 198.18.1.1" in writes and "src_max 198.18.2.0" in writes and "udp_src_max 9" in writes
    tester.close()


def test_doctor_names_the_sources_the_dut_would_not_route_back(tmp_path):
    inv = make_inventory(tmp_path)
    back = {str(ipaddress.IPv4Address("198.18.1.1") + k): "dut0" for k in range(256)}
    r = as_dict(doctor(inv, sessions={"tester": Canned(GOOD), "dut": RoutingDut(back)}, sources=256))
    assert r["routes back to 256 sources tester:tx0->tester:rx0"] == (
        True, "dut routes 198.18.1.1 .. 198.18.2.0 back out of dut0")
    astray = {**back, "198.18.1.77": "dut1"}
    del astray["198.18.1.200"]
    r = as_dict(doctor(inv, sessions={"tester": Canned(GOOD), "dut": RoutingDut(astray)}, sources=256))
    assert r["routes back to 256 sources tester:tx0->tester:rx0"] == (
        False, "2 of 256 sources not routed back out of dut:dut0, where the stream comes in: "
               "198.18.1.77, 198.18.1.200")
    r = as_dict(doctor(inv, sessions={"tester": Canned(GOOD), "dut": RoutingDut(back)}))
    assert not [c for c in r if c.startswith("routes back")]


def test_the_report_names_the_flows_sources():
    from rfc2544.reports.summary import labeller
    results = json.loads((Path(__file__).parents[1] / "data" / "results" / "complete.json").read_text())
    results["profile"]["flow_spread"] = "src_addresses"
    assert labeller(results)({"frame_size": 64, "flows": 256}).endswith(", 256 sources")
