"""What rfc2544_pktgen puts on the wire, checked in a capture on the DUT's
ingress port dut0 (tcpdump, decoded in the guest): addresses, ports and MACs
stepping or random within their ranges, VLAN/S-VLAN/MPLS tags, IPv6, TOS,
checksums, frame sizes (fixed, imix, page fragments), the test header, flows,
and the other transmit modes (queue_xmit, netif_receive, clone_skb/burst on a
device that allows shared skbs)."""
import collections
import ipaddress
from shlex import quote

import pytest

from kmod_helpers import (PG, kmod, parse_device, parse_pgrx,  # noqa: F401
                               setup_stream)

pytestmark = pytest.mark.lab

MAGIC_NS, MAGIC_UPSTREAM = 0x25449e55, 0xbe9be955


def send(vm, count, *cmds, ratep=2000, capture=True):
    """tx0 -> dut0, captured on dut0; returns (device dict, packets)."""
    vm.pg("kpktgend_0", "rem_device_all", "add_device tx0")
    vm.pg("tx0", f"count {count}", "pkt_size 64", f"dst_mac {vm.mac('dut0', netns=True)}",
          "dst 198.19.0.1", "src_min 198.18.0.1", f"ratep {ratep}", *cmds)
    if not capture:
        vm.start()
        return parse_device(vm.read("tx0")), []
    pkts = [p for p in vm.start_captured() if p.get("magic") in (MAGIC_NS, MAGIC_UPSTREAM)]
    return parse_device(vm.read("tx0")), pkts


def test_ipv4_defaults_and_header(kmod):
    dev, pkts = send(kmod, 50, "tos 28")
    assert dev["sofar"] == 50 and len(pkts) == 50
    assert [p["seq"] for p in pkts] == list(range(1, 51))
    ids = [p["id"] for p in pkts]
    assert all(b == (a + 1) % 65536 for a, b in zip(ids, ids[1:]))
    for p in pkts:
        assert p["len"] == 64 and p["ip"] == 4 and p["ttl"] == 32 and p["tos"] == 0x28
        assert p["ip_ok"] and p["sport"] == 9 and p["dport"] == 9 and p["ucsum"] == 0
        assert p["ulen"] == 64 - 14 - 20 and p["magic"] == MAGIC_NS and p["pad_zero"]
        assert p["src_mac"] == kmod.mac("tx0") and p["dst_mac"] == kmod.mac("dut0", netns=True)
    ts = [(p["ts_hi"] << 32) | p["ts_lo"] for p in pkts]
    # 49 gaps of 0.5 ms; a stalled vCPU shifts some (late, then caught up)
    assert ts == sorted(ts) and 0.01e9 < ts[-1] - ts[0] < 0.5e9


def test_upstream_header_and_no_timestamp(kmod):
    _, pkts = send(kmod, 10, "flag UPSTREAM_HDR")
    assert {p["magic"] for p in pkts} == {MAGIC_UPSTREAM}
    assert all(p["ts_hi"] > 1.6e9 and p["ts_lo"] < 1000000 for p in pkts)   # sec, usec
    _, pkts = send(kmod, 10, "flag NO_TIMESTAMP")
    assert all(p["ts_hi"] == 0 and p["ts_lo"] == 0 for p in pkts)


def test_ranges_step_and_random(kmod):
    _, pkts = send(kmod, 60, "src_min 198.18.0.10", "src_max 198.18.0.12",
                   "dst_min 198.19.0.1", "dst_max 198.19.0.200", "flag IPDST_RND",
                   "udp_src_min 1000", "udp_src_max 1002", "udp_dst_min 5000",
                   "udp_dst_max 5999", "flag UDPDST_RND")
    assert [p["src"] for p in pkts[:6]] == ["198.18.0.10", "198.18.0.11", "198.18.0.12"] * 2
    # a port range leaves its max out, as upstream's does (addresses keep theirs)
    assert [p["sport"] for p in pkts[:4]] == [1000, 1001, 1000, 1001]
    dsts = [int(ipaddress.ip_address(p["dst"])) for p in pkts]
    lo, hi = int(ipaddress.ip_address("198.19.0.1")), int(ipaddress.ip_address("198.19.0.200"))
    assert all(lo <= d <= hi for d in dsts) and len(set(dsts)) > 20
    assert all(5000 <= p["dport"] < 5999 for p in pkts) and len({p["dport"] for p in pkts}) > 20


def test_mac_counts(kmod):
    _, pkts = send(kmod, 8, "src_mac 02:00:00:00:00:fe", "src_mac_count 3",
                   "dst_mac_count 4", "flag MACDST_RND")
    assert [p["src_mac"] for p in pkts[:4]] == ["02:00:00:00:00:fe", "02:00:00:00:00:ff",
                                                "02:00:00:00:01:00", "02:00:00:00:00:fe"]
    base = int(kmod.mac("dut0", netns=True).replace(":", ""), 16)
    assert all(0 <= int(p["dst_mac"].replace(":", ""), 16) - base < 4 for p in pkts)


def test_vlan_svlan_mpls(kmod):
    _, pkts = send(kmod, 5, "svlan_id 22", "svlan_p 5", "vlan_id 77", "vlan_p 3",
                   "vlan_cfi 1", "mpls 0001000a,0002000a")
    for p in pkts:
        assert p["tags"] == [[0x88a8, (5 << 13) | 22], [0x8100, (3 << 13) | (1 << 12) | 77]]
        assert p["mpls"] == [0x0001000a, 0x0002000a | 0x100]      # bottom of stack set
        # 14 + 2 tags + 2 labels + 20 + 8 + the 16-byte header: above 64
        assert p["len"] == 74 and p["dst"] == "198.19.0.1"
    _, pkts = send(kmod, 3, "vlan_id 9999")                          # tags off again
    assert all(p["tags"] == [] and p["mpls"] == [] for p in pkts)


def test_ipv6_and_traffic_class(kmod):
    _, pkts = send(kmod, 10, "dst6 2001:2:0:100::1", "src6 2001:2::1", "traffic_class b8",
                   "pkt_size 100")
    for p in pkts:
        assert p["ip"] == 6 and p["tc"] == 0xb8 and p["ttl"] == 32
        assert p["src"] == "2001:2::1" and p["dst"] == "2001:2:0:100::1" and p["len"] == 100
    _, pkts = send(kmod, 10, "dst6_min 2001:2:0:100::10", "dst6_max 2001:2:0:100::12",
                   "src6 2001:2::1")
    assert [p["dst"] for p in pkts[:4]] == ["2001:2:0:100::10", "2001:2:0:100::11",
                                            "2001:2:0:100::12", "2001:2:0:100::10"]


def test_udp_checksum(kmod):
    for fam in (["dst 198.19.0.1"], ["dst6 2001:2:0:100::1", "src6 2001:2::1"]):
        _, pkts = send(kmod, 10, "flag UDPCSUM", "pkt_size 200", *fam)
        assert len(pkts) == 10 and all(p["ucsum"] and p["ucsum_ok"] for p in pkts), pkts[:1]


def test_sizes_stepping_imix_and_frags(kmod):
    _, pkts = send(kmod, 6, "min_pkt_size 64", "max_pkt_size 66")
    assert [p["len"] for p in pkts] == [64, 65, 66, 64, 65, 66]
    _, pkts = send(kmod, 1200, "imix_weights 64,7 576,4 1500,1", ratep=5000)
    sizes = collections.Counter(p["len"] for p in pkts)
    assert set(sizes) == {64, 576, 1500} and sum(sizes.values()) == 1200
    assert sizes[64] > sizes[576] > sizes[1500] > 40
    dev = kmod.read("tx0")
    assert "imix_size_counts: 64," in dev
    # payload in 4 page fragments: same frame on the wire, header intact
    setup_stream(kmod, 500, ratep=5000, size=1000, extra=["frags 4"])
    kmod.start()
    rx = parse_pgrx(kmod.read("pgrx"))
    assert rx["total"]["packets"] == 500 and rx["total"]["bytes"] == 500 * 1000
    assert rx["streams"][0]["lost"] == 0


def test_flows_keep_their_destination(kmod):
    _, pkts = send(kmod, 40, "dst_min 198.19.0.1", "dst_max 198.19.0.250", "flows 4",
                   "flowlen 5", "flag FLOW_SEQ")
    dsts = [p["dst"] for p in pkts]
    runs = [dsts[i:i + 5] for i in range(0, 40, 5)]
    assert all(len(set(r)) == 1 for r in runs)              # one destination per flow
    assert len({r[0] for r in runs}) == 8                    # each new flow a new address


def test_queue_xmit_mode(kmod):
    dev, pkts = send(kmod, 100, "xmit_mode queue_xmit")
    assert dev["sofar"] == 100 and len(pkts) == 100


def test_netif_receive_mode_counts_at_the_receiver(kmod):
    """netif_receive injects into rx0's receive path: our receiver counts them."""
    kmod.pg("kpktgend_0", "rem_device_all", "add_device rx0")
    kmod.pg("rx0", "count 1000", "xmit_mode netif_receive", f"dst_mac {kmod.mac('rx0')}",
            "dst 198.19.0.1", "src_min 198.19.0.99", "ratep 20000")
    kmod.pg("pgrx", "display script", "rx rx0")
    kmod.start()
    rx = parse_pgrx(kmod.read("pgrx"))
    assert parse_device(kmod.read("rx0"))["sofar"] == 1000
    assert rx["total"]["packets"] == 1000 and rx["streams"][0]["src"] == "198.19.0.99"
    kmod.pg("kpktgend_0", "rem_device_all")


def test_clone_skb_and_burst_on_a_sharing_device(kmod):
    """dummy keeps IFF_TX_SKB_SHARING: clone_skb and burst are accepted and
    every copy is counted by the device."""
    kmod.sh("ip link add kmdum0 type dummy && ip link set kmdum0 up")
    try:
        kmod.pg("kpktgend_1", "rem_device_all", "add_device kmdum0")
        for cmds in (["clone_skb 99"], ["burst 8"], ["clone_skb 10", "burst 4"]):
            before = int(kmod.sh("cat /sys/class/net/kmdum0/statistics/tx_packets"))
            kmod.pg("kmdum0", "count 10000", "dst 192.0.2.1", "clone_skb 0", "burst 1", *cmds)
            kmod.start()
            dev = parse_device(kmod.read("kmdum0"))
            sent = int(kmod.sh("cat /sys/class/net/kmdum0/statistics/tx_packets")) - before
            assert dev["sofar"] >= 10000 and sent == dev["sofar"], cmds
            assert dev["sofar"] < 10000 + 8
    finally:
        kmod.pg("kpktgend_1", "rem_device_all")
        kmod.sh("ip link del kmdum0")


def test_rate_change_and_pause_while_running(kmod):
    setup_stream(kmod, 0, ratep=1000)
    kmod.start_bg()
    try:
        kmod.sh("sleep 1")
        kmod.pg("tx0", "delay 2147483647")                   # pause
        kmod.sh("sleep 0.3")
        a = parse_device(kmod.read("tx0"))["sofar"]
        kmod.sh("sleep 1")
        b = parse_device(kmod.read("tx0"))["sofar"]
        assert a == b and a > 500                             # paused
        busy = kmod.writes([(f"{PG}/tx0", "pkt_size 100\n")])[0]
        assert busy["ret"] < 0 and "running" in busy["result"]
        # Resume at 5000/s and count from the write. Count and clock are
        # read by shell builtins back to back: a process spawn between them
        # (grep, then date) costs up to ~0.5 s on a loaded TCG host and
        # once made a 1 s window read 7508/s.
        probe = ("sofar() { local l; while IFS= read -r l; do case $l in *pkts-sofar:*) "
                 "l=${l#*pkts-sofar: }; echo \"${l%% *} $EPOCHREALTIME\"; return;; esac; done < "
                 f"{quote(PG + '/tx0')}; }}; "
                 f"t0=$EPOCHREALTIME; echo 'ratep 5000' > {quote(PG + '/tx0')} || exit 1; echo $t0; "
                 "sleep 0.5; sofar; sleep 2; sofar")
        t0, first, last = kmod.sh(f"bash -c {quote(probe)}").split("\n")[:3]
        (n1, t1), (n2, t2) = [(int(n), float(t)) for n, t in (first.split(), last.split())]
        # never ahead of the new schedule, counted from the write: a resume
        # must not catch up the paused time in a burst
        assert n2 - a <= 5000 * (t2 - float(t0)) + 2, (a, t0, first, last)
        # and the new rate applies while running (was 1000/s). Over 2 s the
        # generator catches up a stall of its vCPU, except one at the very
        # end: 2500/s leaves room for a 1 s stall there.
        rate = (n2 - n1) / (t2 - t1)
        print(f"paused at {a}; {n2 - a} sent {t2 - float(t0):.3f} s after ratep 5000; {rate:.0f}/s over the last 2 s")
        assert rate > 2500, (first, last)
    finally:
        kmod.stop()
    assert "Running: \n" in kmod.read("kpktgend_0")
