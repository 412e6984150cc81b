"""Source-address flows through the real lab DUT (issue 31 item 2), with our
module: a stream of 256 sources is one stream at pgrx, the DUT's ingress
sees every source, and `doctor --sources 256` reads the DUT's routes back.
Over IPv4 and (module 1.6's src6_min/src6_max) over IPv6.

  tester: tx0 ==veth== dut0 [netns dut: routes 198.18.1.0/24 .., 2001:2:0:1::/64 .. back via tx0] dut1 ==veth== rx0
"""
import pytest

from test_tester_lab import QUICK, tlab  # noqa: F401  (fixture: the lab to use)
from test_tester_module_lab import filter_hits, module_loaded  # noqa: F401  (module_loaded: a fixture)

from rfc2544.config import inventory
from rfc2544.engine.doctor import doctor
from rfc2544.engine.tester import SSHTester
from rfc2544.model import TrialSpec

pytestmark = pytest.mark.lab

# sources 198.18.1.1 .. 198.18.2.0 (tx0 is 198.18.0.1), or 2001:2:0:1::1 ..
# 2001:2:0:1::100 (tx0 is 2001:2::1): the first filter takes 255 of every
# 256 frames, the second the last address's
SOURCE_FILTERS = {
    False: ("protocol ip pref 1 flower src_ip 198.18.1.0/24 action pass",
            "protocol ip pref 2 flower src_ip 198.18.2.0/32 action pass"),
    True: ("protocol ipv6 pref 1 flower src_ip 2001:2:0:1::/120 action pass",
           "protocol ipv6 pref 2 flower src_ip 2001:2:0:1::100/128 action pass"),
}
# (the range doctor names, the route taken away, how many sources it routed back, the last source)
ROUTES = {False: ("198.18.1.1 .. 198.18.2.0", "198.18.2.0/24 via 198.18.0.1", 1, "198.18.2.0"),
          True: ("2001:2:0:1::1 .. 2001:2:0:1::100", "2001:2:0:1::/64 via 2001:2::1", 256, "2001:2:0:1::100")}


def source_check(inv, ipv6):
    (check,) = [(ok, detail) for name, ok, detail in doctor(inv, sources=256, ipv6=ipv6)
                if name.startswith("routes back to 256 IPv6" if ipv6 else "routes back to 256 sources")]
    return check


@pytest.mark.parametrize("ipv6", [False, True], ids=["ipv4", "ipv6"])
def test_256_source_addresses_are_one_stream_through_the_dut(tlab, module_loaded, ipv6):  # noqa: F811
    host = tlab.connect("tester")
    inv = inventory.load(tlab.inventory_path)
    tester = SSHTester(inv, waits=QUICK, poll_interval_s=0.3)
    shown, route, unrouted, last = ROUTES[ipv6]
    try:
        host.run(tlab.dut_cmd("tc qdisc add dev dut0 clsact"), check=True)
        for f in SOURCE_FILTERS[ipv6]:
            host.run(tlab.dut_cmd(f"tc filter add dev dut0 ingress {f}"), check=True)
        r = tester.run_trial(TrialSpec(frame_size=86 if ipv6 else 64, load_fps=1000, duration_s=2.0, flows=256,
                                       flow_spread="src_addresses", ipv6=ipv6))
        hits = filter_hits(host.run(tlab.dut_cmd("tc -s -j filter show dev dut0 ingress"))[1])
        assert (r.tx_frames, r.rx_frames, r.lost_frames, r.foreign_frames) == (2000, 2000, 0, 0), r.notes
        assert len(r.streams) == 1
        # 2000 frames through 256 sources in turn: 7 from the last one; the
        # learning run's frame comes from the first
        assert hits[2] == 7 and hits[1] >= 1993, hits
        assert source_check(inv, ipv6) == (True, f"dut routes {shown} back out of dut0")
        host.run(tlab.dut_cmd(f"ip route del {route.split()[0]}"), check=True)
        try:
            ok, detail = source_check(inv, ipv6)
        finally:
            host.run(tlab.dut_cmd(f"ip route add {route} dev dut0"), check=True)
        assert not ok and detail.startswith(f"{unrouted} of 256 sources not routed back out of dut:dut0") \
            and (ipv6 or detail.endswith(f": {last}")), detail
    finally:
        host.run(tlab.dut_cmd("tc qdisc del dev dut0 clsact"), check=False)
        tester.stop_all()
        tester.close()
        host.close()
