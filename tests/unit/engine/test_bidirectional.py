"""Bidirectional traffic (issue 31 item 1, RFC 2544 section 14): a tester
port that sends and receives, the profile's `direction: bi`, pgrx watching
several devices (module 1.1, script format v4), and results that say each
direction's part and which one limits.

Whole runs use the simulated DUT (rfc2544.sim.dut, no network) with a
reverse direction slower than the forward one; the SSH tester runs against
the simulated host (pktgen_sim.py), whose files answer in the real text
formats."""
import json
import textwrap

import pytest

from pktgen_sim import SimKernel
from sim_session import SimSession
from rfc2544.config import inventory, profiles
from rfc2544.drivers import pgrx, probe
from rfc2544.drivers.streams import plan_streams
from rfc2544.engine.detection import max_rx_devices
from rfc2544.engine.tester import SSHTester
from rfc2544.errors import BadInput
from rfc2544.model import TrialSpec
from rfc2544.results.load import load_results
from rfc2544.reports.render import render_html
from rfc2544.reports.summary import throughput_rows
from rfc2544.sim import dut as simdut

from helpers_run import profile, start
from schema_check import assert_valid
from test_tester_sim import FAST, INVENTORY as TESTER_INVENTORY

# the simulated host's inventory, its rx port given a peer (the DUT's dut1) so that it may send
RX0 = 'ipv6: "2001:2:0:100::1/64"}}'
assert RX0 in TESTER_INVENTORY
INVENTORY = TESTER_INVENTORY.replace(RX0, RX0[:-2] + ", {rx_peer}}}")


def make_inventory(tmp_path, streams=(("tester:tx0", "tester:rx0"),), rx_peer='peer_mac: "52:54:00:00:00:04"'):
    lines = "\n".join(f'      - {{tx: "{a}", rx: "{b}"}}' for a, b in streams)
    path = tmp_path / "inv.yml"
    path.write_text(INVENTORY.format(streams=lines, rx_peer=rx_peer))
    return inventory.load(path)


# ---- pgrx: several devices, format v4 ----------------------------------------

V4 = textwrap.dedent("""\
    pgrx version=4 enabled=1 dev=rx0,tx0 ifindex=5,4 statistics=basic action=drop pkt_size=60 streams=2 streams_dropped=0
    cpu id=0 packets=30 bytes=1800 first_ns=1 last_ns=2
    total id=all packets=30 bytes=1800 first_ns=1 last_ns=2
    stream src=198.18.0.1 packets=20 bytes=1200 seq_max=20 lost=0 ooo=0 dup=0 old=0
    stream src=198.19.0.1 packets=10 bytes=600 seq_max=12 lost=2 ooo=0 dup=0 old=0
    invalid bad_len=0 bad_csum=0 bad_ts=0 seq_jump=0 wrong_size=0
    stat name=latency n=0 skipped=0 min=0 max=0 mean=0.000 var=0 sum=0 sumsq=0
    stat name=interarrival n=0 skipped=0 min=0 max=0 mean=0.000 var=0 sum=0 sumsq=0
    stat name=jitter n=0 skipped=0 min=0 max=0 mean=0.000 var=0 sum=0 sumsq=0
    percentile name=latency n=0 p50=0 p90=0 p99=0 p999=0 p9999=0
    end
    Result: OK: rx=rx0
    """)


def test_format_v4_lists_the_watched_devices_and_counts_each_direction():
    st = pgrx.parse(V4)
    assert st.version == 4 and st.devs == ["rx0", "tx0"] and st.ifindex == "5,4"
    assert st.stream("198.18.0.1").unique == 20 and st.stream("198.19.0.1").lost == 2
    assert pgrx.parse(V4.replace("dev=rx0,tx0 ifindex=5,4", "dev=- ifindex=0")).devs == []


@pytest.mark.parametrize("bad,message", [
    ("dev=rx0,,tx0", "is not a device list"),
    ("dev=rx0, ifindex", "fields"),
    ("ifindex=5,x", "is not a list of numbers"),
])
def test_a_malformed_device_list_is_an_error_not_a_guess(bad, message):
    text = V4.replace("dev=rx0,tx0", bad) if bad.startswith("dev") else V4.replace("ifindex=5,4", bad)
    with pytest.raises(pgrx.PgrxFormatError, match=message):
        pgrx.parse(text)


def test_enable_names_every_device_in_one_write_and_refuses_too_many():
    b = pgrx.enable_batch(["rx0", "tx0"], "basic")
    assert ("write", pgrx.PGRX, "rx rx0 tx0") in [tuple(op[:3]) for op in b.ops]
    with pytest.raises(ValueError, match="1 to 4 devices, not 5"):
        pgrx.enable_batch([f"p{i}" for i in range(5)])
    with pytest.raises(BadInput):
        pgrx.enable_batch(["rx0", "tx0;reboot"])


@pytest.mark.parametrize("modver,watches", [("1.1", 4), ("1.12", 4), ("2.0", 4), ("1.0", 1), (None, 1), ("x", 1)])
def test_only_a_module_of_1_1_or_later_is_asked_to_watch_several(modver, watches):
    assert max_rx_devices(probe.HostProbe(pgrx=True, module_version=modver)) == watches


# ---- inventory, profile, plans ----------------------------------------------

def test_the_reverse_stream_sends_from_the_rx_port_to_the_tx_port(tmp_path):
    inv = make_inventory(tmp_path)
    uni, bi = plan_streams(inv), plan_streams(inv, bidirectional=True)
    assert [p.label for p in uni] == ["tester:tx0->tester:rx0"]
    assert [p.label for p in bi] == ["tester:tx0->tester:rx0", "tester:rx0->tester:tx0"]
    back = bi[1]
    assert (back.device, back.dst_mac, back.src4, back.dst4, back.src6, back.dst6) == (
        "rx0", "52:54:00:00:00:04", "198.19.0.1", "198.18.0.1", "2001:2:0:100::1", "2001:2::1")


def test_an_inventory_may_list_the_reverse_stream_itself(tmp_path):
    inv = make_inventory(tmp_path, streams=(("tester:tx0", "tester:rx0"), ("tester:rx0", "tester:tx0")))
    # both directions listed: `direction: bi` adds nothing
    assert [p.label for p in plan_streams(inv, bidirectional=True)] == [p.label for p in plan_streams(inv)]


def test_a_port_that_sends_needs_the_dut_mac(tmp_path):
    inv = make_inventory(tmp_path, rx_peer="ipv4: 198.19.0.1/24")
    with pytest.raises(BadInput, match="tester:rx0: peer_mac is required on a port that sends"):
        plan_streams(inv, bidirectional=True)


@pytest.mark.parametrize("streams,message", [
    ((("tester:tx0", "dut:dut0"),), "is not a tester port"),
    ((("tester:tx0", "tester:tx0"),), "sends to itself"),
    ((("tester:tx0", "tester:rx0"), ("tester:tx0", "tester:rx0")), "twice"),
])
def test_streams_the_inventory_cannot_mean_are_refused(tmp_path, streams, message):
    with pytest.raises(BadInput, match=message):
        make_inventory(tmp_path, streams=streams)


def test_direction_defaults_to_uni_and_a_typo_is_refused():
    assert profiles.validate({}).model.direction == "uni"
    assert profiles.validate({"direction": "bi"}).model.direction == "bi"
    with pytest.raises(BadInput, match="my.yml: direction: must be one of uni, bi"):
        profiles.validate({"direction": "both"}, "my.yml")


# ---- SSH tester against the simulated host ----------------------------------

def ssh_tester(tmp_path, kernel, **kw):
    return SSHTester(make_inventory(tmp_path), waits=FAST, sessions={"tester": SimSession("tester", kernel)},
                     clock=kernel.clock, **kw)


def test_a_bidirectional_trial_sends_both_ways_and_counts_each_direction(tmp_path):
    # the reverse direction loses every 50th frame, the forward none
    kernel = SimKernel(device_loss_every={"rx0": 50})
    tester = ssh_tester(tmp_path, kernel, bidirectional=True)
    r = tester.run_trial(TrialSpec(frame_size=64, load_fps=4000, duration_s=0.25))
    assert tester.receiver_name == "pgrx" and tester.tx_port_count == 2
    # one write names both ports: pgrx watches the port each direction arrives on
    assert ("/proc/net/pktgen/pgrx", "rx rx0 tx0") in kernel.log
    # the load is the sum: half of it each way
    assert "ratep 2000" in kernel.devices["tx0"].writes and "ratep 2000" in kernel.devices["rx0"].writes
    assert "src_min 198.19.0.1" in kernel.devices["rx0"].writes and "dst_min 198.18.0.1" in kernel.devices["rx0"].writes
    by = {(s.tx_port, s.rx_port): s for s in r.streams}
    fwd, back = by[("tester:tx0", "tester:rx0")], by[("tester:rx0", "tester:tx0")]
    assert (fwd.tx_frames, fwd.rx_frames, fwd.lost) == (500, 500, 0)
    assert (back.tx_frames, back.rx_frames, back.lost) == (500, 490, 10)
    assert r.tx_frames == 1000 and r.lost_frames == 10


def test_a_module_older_than_1_1_keeps_one_direction_per_pgrx_and_says_so(tmp_path):
    kernel = SimKernel(pgrx_version=3)
    tester = ssh_tester(tmp_path, kernel, bidirectional=True)
    r = tester.run_trial(TrialSpec(frame_size=64, load_fps=4000, duration_s=0.25))
    assert tester.receiver_name == "interface counters"
    assert any("receives on more ports than its pgrx watches: tester (2 ports, its pgrx watches 1)" in n
               and "run 'rfc2544 setup'" in n for n in r.notes), r.notes


# ---- whole runs against the simulated DUT ------------------------------------

@pytest.fixture(scope="module")
def run(tmp_path_factory):
    # forward 300,000 frames/s, reverse 100,000: the reverse direction limits
    # the aggregate to 200,000 (100,000 each way)
    sim = simdut.SimDUT(capacity_fps=300_000, reverse_capacity_fps=100_000)
    prof = profile(tests=["throughput"], frame_sizes=[64], link_mbps=1000.0, direction="bi",
                   search={"max_load_fps": 600_000.0, "method": "bisection", "pdr_loss_pct": None})
    runner, results = start(tmp_path_factory.mktemp("bidir") / "run", sim, prof)
    runner.run()
    return results


def test_throughput_is_the_aggregate_with_each_direction_and_the_limiting_one_named(run):
    (entry,) = run.data["throughput"]
    # the search's resolution is 5 %: the NDR brackets 2 x the reverse direction's 100,000
    assert 0.95 * 200_000 <= entry["ndr_fps"] <= 200_000 < entry["ndr_upper_fps"]
    fwd, back = sorted(entry["directions"], key=lambda d: d["tx"])[::-1]
    assert (fwd["tx"], fwd["rx"], back["tx"], back["rx"]) == ("sim:tx0", "sim:rx0", "sim:rx0", "sim:tx0")
    assert fwd["fps"] == pytest.approx(entry["ndr_fps"] / 2) and back["fps"] == pytest.approx(entry["ndr_fps"] / 2)
    assert entry["limited_by"] == ["sim:rx0->sim:tx0"] and back["limiting"] and not fwd["limiting"]
    # line rate is both ports': 2 x 1,488,095 frames/s at 64 B on 1 Gbit/s
    assert entry["theoretical_max_fps"] == pytest.approx(2 * 1_488_095, rel=1e-4)
    assert run.data["profile"]["direction"] == "bi"
    assert_valid(json.loads(run.path.read_text()), "bidirectional run")


def test_the_report_shows_each_direction_and_marks_the_one_that_limits(run):
    loaded = load_results(run.path)
    (row,) = throughput_rows(loaded)
    assert len(row["directions"]) == 2
    html = render_html(loaded)
    assert "Per direction" in html and "sim:rx0 &rarr; sim:tx0" in html
    assert html.count('<span class="badge v-bound">limits</span>') == 1


def test_one_direction_writes_no_direction_fields(tmp_path):
    sim = simdut.SimDUT(capacity_fps=100_000)
    prof = profile(tests=["throughput"], frame_sizes=[64], link_mbps=1000.0,
                   search={"max_load_fps": 300_000.0, "method": "bisection", "pdr_loss_pct": None})
    runner, results = start(tmp_path / "run", sim, prof)
    runner.run()
    (entry,) = results.data["throughput"]
    assert "directions" not in entry and "limited_by" not in entry
    assert "Per direction" not in render_html(load_results(results.path))


def test_the_conditions_list_the_streams_sent_both_ways(tmp_path):
    from rfc2544.engine.assemble import conditions_for
    inv = make_inventory(tmp_path)
    tester = ssh_tester(tmp_path, SimKernel(), bidirectional=True)
    tester.conditions = lambda: {"hosts": {}}       # host facts: another test's concern
    c = conditions_for(tester, inv, profile(direction="bi"), 1000.0, None)
    assert c["direction"] == "bi"
    assert c["streams"] == [{"tx": "tester:tx0", "rx": "tester:rx0"}, {"tx": "tester:rx0", "rx": "tester:tx0"}]
