"""Source-address flows through the real lab DUT (issue 31 item 2), with our
module: a stream of 256 sources is one stream at pgrx, the DUT's ingress
sees every source, and `doctor --sources 256` reads the DUT's routes back.

  tester: tx0 ==veth== dut0 [netns dut: routes 198.18.1.0/24 .. back via tx0] dut1 ==veth== rx0
"""
import pytest

from test_tester_lab import QUICK, tlab  # noqa: F401  (fixture: the lab to use)
from test_tester_module_lab import filter_hits, module_loaded  # noqa: F401  (module_loaded: a fixture)

from rfc2544.config import inventory
from rfc2544.engine.doctor import doctor
from rfc2544.engine.tester import SSHTester
from rfc2544.model import TrialSpec

pytestmark = pytest.mark.lab

# sources 198.18.1.1 .. 198.18.2.0 (tx0 is 198.18.0.1): the /24 takes 255
# of every 256 frames, the last address the 256th
SOURCE_FILTERS = ("protocol ip pref 1 flower src_ip 198.18.1.0/24 action pass",
                  "protocol ip pref 2 flower src_ip 198.18.2.0/32 action pass")


def source_check(inv):
    (check,) = [(ok, detail) for name, ok, detail in doctor(inv, sources=256) if name.startswith("routes back")]
    return check


def test_256_source_addresses_are_one_stream_through_the_dut(tlab, module_loaded):  # noqa: F811
    host = tlab.connect("tester")
    inv = inventory.load(tlab.inventory_path)
    tester = SSHTester(inv, waits=QUICK, poll_interval_s=0.3)
    try:
        host.run(tlab.dut_cmd("tc qdisc add dev dut0 clsact"), check=True)
        for f in SOURCE_FILTERS:
            host.run(tlab.dut_cmd(f"tc filter add dev dut0 ingress {f}"), check=True)
        r = tester.run_trial(TrialSpec(frame_size=64, load_fps=1000, duration_s=2.0, flows=256,
                                       flow_spread="src_addresses"))
        hits = filter_hits(host.run(tlab.dut_cmd("tc -s -j filter show dev dut0 ingress"))[1])
        assert (r.tx_frames, r.rx_frames, r.lost_frames, r.foreign_frames) == (2000, 2000, 0, 0), r.notes
        assert len(r.streams) == 1
        # 2000 frames through 256 sources in turn: 7 from the last one; the
        # learning run's frame comes from the first
        assert hits[2] == 7 and hits[1] >= 1993, hits
        assert source_check(inv) == (True, "dut routes 198.18.1.1 .. 198.18.2.0 back out of dut0")
        host.run(tlab.dut_cmd("ip route del 198.18.2.0/24"), check=True)
        try:
            ok, detail = source_check(inv)
        finally:
            host.run(tlab.dut_cmd("ip route add 198.18.2.0/24 via 198.18.0.1 dev dut0"), check=True)
        assert not ok and detail.startswith("1 of 256 sources not routed back out of dut:dut0") \
            and detail.endswith(": 198.18.2.0"), detail
    finally:
        host.run(tlab.dut_cmd("tc qdisc del dev dut0 clsact"), check=False)
        tester.stop_all()
        tester.close()
        host.close()
