"""A Y.1564 service's own traffic through the real driver and engine
(SSHTester against the SIMULATED host of tests/unit/pktgen_sim.py): a
tester sends the streams `use_streams` gives it, each with its own frame
sizes, DSCP and tags, at its share of the trial's rate, counted apart,
then the inventory's streams again."""
from dataclasses import replace

import pytest

from rfc2544.config.inventory import Stream
from rfc2544.drivers import pktgen
from rfc2544.drivers.streams import split_weighted
from rfc2544.engine.schedule import RateSchedule
from rfc2544.errors import BadInput
from rfc2544.model import TrialSpec
from rfc2544.wire import Tags

from pktgen_sim import SimKernel
from test_tester_sim import make_tester, spec


def test_a_weighted_split_adds_up_and_keeps_the_proportions():
    assert split_weighted(100, [1, 3]) == [25, 75]
    assert sorted(split_weighted(10, [1, 1, 1])) == [3, 3, 4]
    assert sum(split_weighted(1_000_003, [7, 11, 13])) == 1_000_003


def test_a_trial_s_shares_set_each_stream_s_rate_and_frames():
    s = RateSchedule.of_spec(TrialSpec(frame_size=64, load_fps=3000, duration_s=2, shares=(1, 2)), 2)
    assert s.first_rates() == [1000, 2000] and s.totals() == [2000, 4000]
    with pytest.raises(BadInput, match="2 streams need 2 shares"):
        RateSchedule.of_spec(TrialSpec(frame_size=64, load_fps=3000, duration_s=2, shares=(1,)), 2)


def test_the_tos_byte_is_written_and_read_back_for_either_ip_version():
    cfg = pktgen.DeviceConfig("tx0", 10, "02:00:00:00:00:02", "198.18.0.1", "198.19.0.1", pkt_size=60, tos=46 << 2)
    assert "tos b8" in cfg.commands() and pktgen.expected_params(cfg)["tos"] == "0xb8"
    six = replace(cfg, ipv6=True, src_ip="2001:2::1", dst_ip="2001:2::2", tos=0)
    assert "traffic_class 00" in six.commands() and pktgen.expected_params(six)["traffic_class"] == ""
    with pytest.raises(BadInput):
        replace(cfg, tos=256).commands()


def test_a_service_s_streams_are_sent_at_their_own_rates_sizes_and_dscp(tmp_path):
    kernel = SimKernel(module_version="1.7", pgrx_version=6)
    tester, kernel, _ = make_tester(tmp_path, kernel)
    green = Stream("tester", "tx0", "tester", "rx0", tags=Tags(vlan=100, vlan_pcp=5), sizes=(128,), dscp=46)
    yellow = replace(green, tags=Tags(vlan=100, vlan_pcp=5, vlan_dei=1))
    tester.use_streams([green, yellow])
    assert [p.device for p in tester.plans] == ["tx0@0", "tx0@1"]
    r = tester.run_trial(spec(frame_size=128, load_fps=3000, shares=(2000, 1000)))
    assert [(c.tx_frames, c.rx_frames) for c in r.streams] == [(400, 400), (200, 200)]
    writes = kernel.devices["tx0@0"].writes
    assert "tos b8" in writes and "pkt_size 124" in writes and "ratep 2000" in writes
    assert "vlan_cfi 1" in kernel.devices["tx0@1"].writes and "ratep 1000" in kernel.devices["tx0@1"].writes
    tester.use_streams(None)
    assert [p.device for p in tester.plans] == ["tx0"]
    r = tester.run_trial(spec())
    # the inventory's device sends as before: added afresh, its TOS never written
    assert r.rx_frames == r.tx_frames == 400
    assert kernel.devices["tx0"].p["tos"] == 0 and not any(w.startswith("tos") for w in kernel.devices["tx0"].writes)
    assert "tx0@0" not in kernel.devices and "tx0@1" not in kernel.devices     # the service's are gone


def test_an_emix_stream_sends_its_sizes_in_equal_shares(tmp_path):
    tester, kernel, _ = make_tester(tmp_path, SimKernel(module_version="1.7", pgrx_version=6))
    tester.use_streams([Stream("tester", "tx0", "tester", "rx0", sizes=(64, 128, 1518, 1518), dscp=0)])
    r = tester.run_trial(spec(frame_size=0, load_fps=2000))
    assert r.rx_frames == r.tx_frames > 0
    assert "imix_weights 60,1 124,1 1514,2" in kernel.devices["tx0"].writes


def test_switching_streams_keeps_the_waits_and_detects_each_set_once(tmp_path, monkeypatch):
    from rfc2544.engine import tester as tester_mod
    calls = []
    real = tester_mod.detect_tools
    monkeypatch.setattr(tester_mod, "detect_tools", lambda *a, **k: calls.append(1) or real(*a, **k))
    tester, kernel, _ = make_tester(tmp_path, SimKernel(module_version="1.7", pgrx_version=6))
    service = [Stream("tester", "tx0", "tester", "rx0", sizes=(256,), dscp=10)]
    for _ in range(2):
        tester.run_trial(spec())
        ended = tester.engine._last_end
        tester.use_streams(service)
        assert tester.engine._last_end == ended          # the settle wait runs from the last trial
        tester.run_trial(spec(frame_size=256))
        tester.use_streams(None)
    assert len(calls) == 2                               # the inventory's streams once, the service's once
    assert tester.transport.tx_hosts == ["tester"]
