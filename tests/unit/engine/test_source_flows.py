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

from pktgen_sim import SimKernel
from sim_session import SimSession
from rfc2544.config import profiles
from rfc2544.drivers import pktgen, streams
from rfc2544.engine.doctor import doctor
from rfc2544.engine.tester import SSHTester
from rfc2544.errors import BadInput
from rfc2544.model import TrialSpec

from test_tester_doctor import GOOD, Canned, RoutingDut, as_dict
from test_tester_sim import FAST, make_inventory

SPEC = TrialSpec(frame_size=64, load_fps=2000, duration_s=0.2, flows=256, flow_spread="src_addresses")
SPEC6 = TrialSpec(frame_size=86, load_fps=2000, duration_s=0.2, ipv6=True, flows=256, flow_spread="src_addresses")


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
    plans = streams.plan_streams(make_inventory(tmp_path))
    cfg, = streams.device_configs(plans, SPEC, [400], [2000], extended=True, stream_ids=True)
    assert (cfg.src_addresses, cfg.flows, cfg.src_range) == (256, 1, ("198.18.1.1", "198.18.2.0"))
    with pytest.raises(BadInput, match="source-address flows need the rfc2544_pktgen module 1.3"):
        streams.device_configs(plans, SPEC, [400], [2000], extended=True, stream_ids=False)
    with pytest.raises(BadInput, match="IPv6 source-address flows need the rfc2544_pktgen module 1.6"):
        streams.device_configs(plans, SPEC6, [400], [2000], stream_ids=True)
    prof = profiles.validate({**dict(profiles.load("quick")), "flow_spread": "src_addresses"}, "test")
    assert prof.model.flow_spread == "src_addresses"
    with pytest.raises(BadInput, match="flow_spread"):
        profiles.validate({**dict(profiles.load("quick")), "flow_spread": "src_ports"}, "test")


def sim_tester(tmp_path, module_version):
    """(simulated kernel with pgrx and `module_version`, an SSHTester on it)."""
    kernel = SimKernel(pgrx_version=6, module_version=module_version)
    return kernel, SSHTester(make_inventory(tmp_path), waits=FAST,
                             sessions={"tester": SimSession("tester", kernel)}, clock=kernel.clock)


def test_a_trial_of_256_sources_is_one_stream_counted_exactly(tmp_path):
    kernel, tester = sim_tester(tmp_path, "1.4")
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
    results = json.loads((Path(__file__).parents[2] / "data" / "results" / "complete.json").read_text())
    results["profile"]["flow_spread"] = "src_addresses"
    assert labeller(results)({"frame_size": 64, "flows": 256}).endswith(", 256 sources")


def test_ipv6_sources_step_through_the_next_64_with_module_1_6(tmp_path):
    """Module 1.6's src6_min/src6_max: N consecutive sources from the tx
    port's interface id in the next /64 (2001:2:0:1::1 .. for 2001:2::1),
    which a DUT routing the port's 256 /64s back sends back. With one source
    the range is still written (min = max: none), so no device keeps the
    range of an earlier run; before 1.6 nothing is written."""
    cfg = pktgen.DeviceConfig(device="tx0", count=10, dst_mac="52:54:00:00:00:02", src_ip="2001:2::1",
                              dst_ip="2001:2:0:100::1", pkt_size=82, ipv6=True, src_addresses=256)
    cmds = cfg.commands()
    assert "src6_min 2001:2:0:1::1" in cmds and "src6_max 2001:2:0:1::100" in cmds and "src6 2001:2::1" in cmds
    exp = pktgen.expected_params(cfg)
    assert (exp["saddr"], exp["min_saddr"], exp["max_saddr"]) == ("2001:2::1", "2001:2:0:1::1", "2001:2:0:1::100")
    assert pktgen.source_range6("2001:2::1", 1) == ("2001:2::1", "2001:2::1")
    with pytest.raises(BadInput, match="pass the end of a 32-bit word"):
        pktgen.source_range6("2001:2::ffff:ff00", 300)
    plans = streams.plan_streams(make_inventory(tmp_path))
    cfg, = streams.device_configs(plans, SPEC6, [400], [2000], stream_ids=True, ipv6_sources=True)
    assert (cfg.src_addresses, cfg.flows) == (256, 1)
    one = TrialSpec(frame_size=86, load_fps=2000, duration_s=0.2, ipv6=True)
    cfg, = streams.device_configs(plans, one, [400], [2000], stream_ids=True, ipv6_sources=True)
    assert cfg.src_addresses == 1 and {"src6_min 2001:2::1", "src6_max 2001:2::1"} <= set(cfg.commands())
    cfg, = streams.device_configs(plans, one, [400], [2000], stream_ids=True)
    assert cfg.src_addresses is None and not [c for c in cfg.commands() if c.startswith("src6_m")]


def test_a_trial_of_256_ipv6_sources_is_one_stream_counted_exactly(tmp_path):
    """Simulated host (pktgen_sim: module 1.6 takes src6_min/src6_max)."""
    kernel, tester = sim_tester(tmp_path, "1.6")
    r = tester.run_trial(SPEC6)
    assert (r.tx_frames, r.rx_frames, r.lost_frames, r.foreign_frames) == (400, 400, 0, 0), r.notes
    writes = kernel.devices["tx0"].writes
    assert "src6_min 2001:2:0:1::1" in writes and "src6_max 2001:2:0:1::100" in writes, writes
    tester.close()
    kernel, tester = sim_tester(tmp_path, "1.5")
    with pytest.raises(BadInput, match="module 1.6"):
        tester.run_trial(SPEC6)
    tester.close()


def test_doctor_asks_the_dut_for_the_ipv6_sources_with_ipv6(tmp_path):
    inv = make_inventory(tmp_path)
    back = {str(ipaddress.IPv4Address("198.18.1.1") + k): "dut0" for k in range(256)}
    back6 = {(ipaddress.IPv6Address("2001:2:0:1::1") + k).compressed: "dut0" for k in range(256) if k != 9}
    r = as_dict(doctor(inv, sessions={"tester": Canned(GOOD), "dut": RoutingDut({**back, **back6})},
                       sources=256, ipv6=True))
    assert r["routes back to 256 sources tester:tx0->tester:rx0"][0]
    assert r["routes back to 256 IPv6 sources tester:tx0->tester:rx0"] == (
        False, "1 of 256 sources not routed back out of dut:dut0, where the stream comes in: 2001:2:0:1::a")
