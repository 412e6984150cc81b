"""The receiver (pgrx) against impairments the DUT applies with netem on its
egress port dut1: loss, reordering, duplication and delay, IPv4 and IPv6.
Every test removes its qdisc again."""
import contextlib
import errno
import re
import time

import pytest

from rfc2544.drivers import vlan as vlan_devices
from rfc2544.lab.flow_counter import backlog_drops
from kmod_helpers import (PG, add_vlan_stack, dut_vlan, kmod, parse_device, parse_pgrx,  # noqa: F401
                               setup_stream)

pytestmark = pytest.mark.lab

FAMILIES = pytest.mark.parametrize("ipv6", [False, True], ids=["ipv4", "ipv6"])


@contextlib.contextmanager
def netem(vm, spec):
    # a long queue: a burst after a stalled vCPU must not overflow netem
    vm.dut(f"tc qdisc replace dev dut1 root netem limit 100000 {spec}")
    try:
        yield
    finally:
        vm.dut("tc qdisc del dev dut1 root", check=False)


TESTER_DROP_ATTEMPTS = 3


def run(vm, count, ratep, ipv6, spec, settle=0.5):
    """One counted run through the netem DUT. A TCG vCPU stall makes the
    generator catch up back to back, and veth then drops what the DUT's
    backlog cannot take (NET_XMIT_DROP: the module's tx_dropped). Such a run
    is tester-limited, as the suite would call it, and says nothing about the
    receiver: it is run again, up to TESTER_DROP_ATTEMPTS times (a CI run lost
    3184 of 10000 frames this way)."""
    for _ in range(TESTER_DROP_ATTEMPTS):
        setup_stream(vm, count, ratep=ratep, ipv6=ipv6)
        with netem(vm, spec):
            vm.start()
            time.sleep(settle)        # packets still queued in netem
        dev = parse_device(vm.read("tx0"))
        rx = parse_pgrx(vm.read("pgrx"))
        assert dev["sofar"] + dev["tx_dropped"] == count, dev
        if dev["tx_dropped"] <= 0.001 * count:
            break
    assert dev["tx_dropped"] <= 0.001 * count, f"tester-limited in every attempt: {dev}"
    [stream] = rx["streams"]
    return dev, rx, stream


@FAMILIES
def test_loss_is_tx_minus_rx(kmod, ipv6):
    count = 20000
    dev, rx, st = run(kmod, count, 10000, ipv6, "loss 1%")
    received = st["packets"] - st["dup"] - st["old"]
    assert rx["total"]["packets"] == st["packets"]
    # netem took ~1 %; a stalled TCG vCPU can make the path drop more
    assert count - received >= 0.005 * count
    tail = count - st["seq_max"]                       # lost after the last arrival
    assert st["lost"] + tail == count - received
    assert st["ooo"] == 0 and st["dup"] == 0 and accounted(st, count)


def accounted(st, count):
    """Every sent sequence number is received once, lost, or after the last
    arrival (tail): the receiver's books balance exactly."""
    unique = st["packets"] - st["dup"] - st["old"]
    return unique + st["lost"] + (count - st["seq_max"]) == count


@FAMILIES
def test_reorder_is_counted(kmod, ipv6):
    count = 10000
    dev, rx, st = run(kmod, count, 5000, ipv6, "delay 4ms reorder 25% 50%", settle=1.0)
    assert st["ooo"] > 0.05 * count                    # many arrive late...
    assert st["dup"] == 0 and st["old"] == 0
    assert accounted(st, count)
    # ...and are not lost: only a stalled TCG path may drop a few
    assert st["lost"] < 0.02 * count and st["packets"] > 0.98 * count


@FAMILIES
def test_duplicates_are_counted(kmod, ipv6):
    count = 20000
    dev, rx, st = run(kmod, count, 10000, ipv6, "duplicate 1%")
    assert 0.003 * count < st["dup"] < 0.03 * count
    assert st["ooo"] == 0 and st["old"] == 0
    assert accounted(st, count)
    assert st["packets"] - st["dup"] > 0.98 * count


@FAMILIES
def test_delay_2ms_mean_latency(kmod, ipv6):
    """netem delay 2ms on the DUT.

    Always asserted: the smallest latency is 2.0-2.2 ms (netem never
    delivers early; the bare path adds tens of microseconds), and the
    receiver's mean equals a reference computed outside the module, the
    mean of (capture timestamp - header timestamp) over a nanosecond tcpdump
    capture of the same packets on rx0 (both use the kernel's receive
    timestamp: the test asks pgrx for `timestamp stack`), within 1 % + 50 us.
    Then the spec's "mean 2 ms within 10 %": under TCG on a loaded host,
    netem's release timer and the vCPU can run late by tens of ms, so when
    the *reference* itself shows netem delivering outside 10 %, the test is
    marked xfail with the measured figures instead of blaming the receiver.
    """
    count = 2000
    setup_stream(kmod, count, ratep=1000, ipv6=ipv6)
    kmod.pg("pgrx", "timestamp stack", "rx_reset")
    proto = "ip6" if ipv6 else "ip"
    # The reference must hold every packet: tcpdump under TCG can take over a
    # second to attach, so wait for its "listening" line, and let it stop by
    # itself after `count` packets rather than killing it at a guessed time.
    kmod.sh("rm -f /tmp/kmodlat.pcap /tmp/kmodlat.err; "
            f"(tcpdump -i rx0 -n -s 128 -B 16384 -c {count} --time-stamp-precision=nano "
            f"-w /tmp/kmodlat.pcap '{proto} and udp dst port 9' >/dev/null 2>/tmp/kmodlat.err &); "
            "for i in $(seq 300); do grep -q listening /tmp/kmodlat.err && exit 0; sleep 0.1; done; "
            "cat /tmp/kmodlat.err; exit 1")
    try:
        with netem(kmod, "delay 2ms"):
            kmod.start()
            kmod.sh("for i in $(seq 300); do pgrep -x tcpdump >/dev/null || exit 0; sleep 0.1; done; "
                    "exit 0")
    finally:
        kmod.sh("pkill -INT -x tcpdump; sleep 0.5; true")
    capture_log = kmod.sh("cat /tmp/kmodlat.err")
    ref = kmod.agent({"op": "pcap_latency", "path": "/tmp/kmodlat.pcap"})
    rx = parse_pgrx(kmod.read("pgrx"))
    kmod.pg("pgrx", "timestamp hook")
    lat, pct = rx["stat"]["latency"], rx["percentile"]
    [st] = rx["streams"]
    assert lat["n"] == st["packets"] == count
    assert 2.0e6 <= lat["min"] <= 2.2e6
    assert sum(c for _, _, c in rx["hist"]) == lat["n"]
    assert lat["min"] <= pct["p50"] <= pct["p99"] <= pct["p999"] <= lat["max"]
    assert rx["stat"]["jitter"]["n"] == count - 1
    assert ref["n"] == count, (ref, capture_log)
    assert lat["mean"] == pytest.approx(ref["mean"], rel=0.01, abs=50e3)
    figures = (f"mean {lat['mean'] / 1e6:.3f} ms, p50 {pct['p50'] / 1e6:.3f} ms, "
               f"p99 {pct['p99'] / 1e6:.3f} ms, max {lat['max'] / 1e6:.1f} ms; "
               f"capture reference mean {ref['mean'] / 1e6:.3f} ms")
    if abs(ref["mean"] - 2e6) > 0.2e6:
        pytest.xfail(f"netem/TCG delivered outside 2 ms +-10 % ({figures})")
    assert lat["mean"] == pytest.approx(2e6, rel=0.10), figures


def test_counter_and_basic_levels(kmod):
    setup_stream(kmod, 2000, ratep=5000)
    kmod.pg("pgrx", "statistics counter")
    kmod.start()
    rx = parse_pgrx(kmod.read("pgrx"))
    assert rx["header"]["statistics"] == "counter"
    assert rx["total"]["packets"] == 2000 and rx["total"]["first_ns"] == 0
    assert rx["streams"] == [] and rx["stat"]["latency"]["n"] == 0
    kmod.pg("pgrx", "statistics basic")          # resets
    assert parse_pgrx(kmod.read("pgrx"))["total"]["packets"] == 0
    kmod.start()
    rx = parse_pgrx(kmod.read("pgrx"))
    [st] = rx["streams"]
    assert st["packets"] == 2000 and st["lost"] == 0 and rx["stat"]["latency"]["n"] == 0
    assert rx["total"]["first_ns"] > 0
    kmod.pg("pgrx", "statistics time")


def test_action_pass_lets_packets_through(kmod):
    """With `action pass` the counted packets reach the stack: the UDP
    layer sees them (port 9 closed: its NoPorts counter rises)."""
    def noports():
        out = kmod.sh("nstat -az UdpNoPorts | awk '/UdpNoPorts/ {print $2}'")
        return int(out.strip() or 0)

    setup_stream(kmod, 1000, ratep=5000)
    before = noports()
    kmod.start()
    assert noports() == before                   # dropped by the receiver
    kmod.pg("pgrx", "action pass")
    try:
        kmod.start()
        assert noports() - before == 1000
        assert parse_pgrx(kmod.read("pgrx"))["total"]["packets"] == 2000
    finally:
        kmod.pg("pgrx", "action drop")


def test_upstream_header_is_decoded(kmod):
    """flag UPSTREAM_HDR sends upstream's microsecond header; the receiver
    decodes both formats."""
    setup_stream(kmod, 2000, ratep=5000, extra=["flag UPSTREAM_HDR"])
    kmod.start()
    rx = parse_pgrx(kmod.read("pgrx"))
    [st] = rx["streams"]
    assert st["packets"] == 2000 and st["lost"] == 0
    lat = rx["stat"]["latency"]
    assert lat["n"] + lat["skipped"] == 2000 and lat["n"] > 1900
    kmod.pg("tx0", "flag !UPSTREAM_HDR")


def test_suite_parsers_read_the_real_output(kmod):
    """The suite's drivers parse the module's real output (contract check)."""
    from rfc2544.drivers import pgrx as pgrx_driver
    from rfc2544.drivers import pktgen as pktgen_driver

    setup_stream(kmod, 3000, ratep=5000)
    kmod.start()
    state = pgrx_driver.parse(kmod.read("pgrx"))
    assert state.total_packets == 3000 and state.enabled and state.dev == "rx0"
    assert len(state.streams) == 1 and state.streams[0].packets == 3000
    assert sum(b.count for b in state.hist) == 3000
    dev = pktgen_driver.parse_device(kmod.read("tx0"))
    assert dev.run is not None
    assert dev.run.packets == 3000 and dev.run.pkt_bytes == 64 and dev.run.errors == 0
    thread = pktgen_driver.parse_thread(kmod.read("kpktgend_0"))
    assert thread.stopped == ["tx0"] and thread.running == []
    banner, version = pktgen_driver.parse_banner(kmod.read("pgctrl"))
    assert version == "2.75"


# One stream over both vCPUs: RPS on rx0 steers by flow hash, and the
# generator steps its UDP source port over 256 flows (issue 31), so the
# stream's packets are counted by the hooks of two CPUs at once, each in its
# own per-CPU state (docs/pgrx-receiver.md, "Per CPU"), merged when read.
#
#   tx0 --veth--> [dut0 DUT netns dut1: netem] --veth--> rx0 (RPS cpus 0,1)
SPREAD = {"loss": "loss 2%", "duplicate": "duplicate 2%", "reorder": "delay 2ms reorder 25% 50%"}


def _qdisc_sent_dropped(vm):
    out = vm.dut("tc -s qdisc show dev dut1")
    m = re.search(r"Sent \d+ bytes (\d+) pkt \(dropped (\d+)", out)
    return int(m.group(1)), int(m.group(2))


@pytest.mark.parametrize("impairment", list(SPREAD))
def test_one_stream_spread_over_two_cpus_is_counted_exactly(kmod, impairment):
    count = 20000
    rps = "/sys/class/net/rx0/queues/rx-0/rps_cpus"
    kmod.sh(f"echo 3 > {rps}")
    try:
        for _ in range(TESTER_DROP_ATTEMPTS):
            setup_stream(kmod, count, ratep=5000, extra=["udp_src_min 1024", "udp_src_max 1280"])
            backlog = backlog_drops(kmod.host)
            with netem(kmod, SPREAD[impairment]):
                kmod.start()
                time.sleep(1.0)          # netem's queue drains
                sent, netem_dropped = _qdisc_sent_dropped(kmod)
            backlog = backlog_drops(kmod.host) - backlog
            dev = parse_device(kmod.read("tx0"))
            if dev["tx_dropped"] == 0 and backlog == 0:
                break
        rx = parse_pgrx(kmod.read("pgrx"))
    finally:
        kmod.sh(f"echo 0 > {rps}")
    assert dev["sofar"] == count and dev["tx_dropped"] == 0 and backlog == 0, (dev, backlog)
    per_cpu = [int(c["packets"]) for c in rx["cpus"]]
    assert sum(1 for p in per_cpu if p > 0.1 * count) >= 2, per_cpu    # really spread
    [st] = rx["streams"]
    duplicated = sent - (count - netem_dropped)     # netem's Sent counts each copy
    unique = st["packets"] - st["dup"] - st["old"]
    assert st["packets"] == rx["total"]["packets"] == sent
    assert st["dup"] == duplicated and st["old"] == 0
    assert unique == count - netem_dropped
    assert st["lost"] + (count - st["seq_max"]) == netem_dropped
    if impairment == "loss":
        assert netem_dropped > 0.01 * count
    elif impairment == "duplicate":
        assert duplicated > 0.01 * count
    else:
        assert st["ooo"] > 0.05 * count and netem_dropped == 0 and duplicated == 0


def test_timestamp_hook_is_the_default_and_stack_is_asked_for(kmod):
    """Arrival times are read in the hook unless `timestamp stack` is
    written (which turns on the kernel's receive timestamps, a global
    switch, while counting); both measure the bare path's latency."""
    setup_stream(kmod, 2000, ratep=2000)
    human = kmod.sh("cd /proc/net/pktgen && echo 'display human' > pgrx && cat pgrx; "
                    "echo 'display script' > pgrx")
    assert ", timestamp hook," in human, human
    for mode in ("stack", "hook"):
        res = kmod.writes([("/proc/net/pktgen/pgrx", f"timestamp {mode}"),
                           ("/proc/net/pktgen/pgrx", "rx_reset")])
        assert res[0]["ret"] > 0 and res[0]["result"] == f"OK: timestamp={mode}", res
        kmod.start()
        lat = parse_pgrx(kmod.read("pgrx"))["stat"]["latency"]
        assert lat["n"] == 2000 and 0 < lat["min"] <= lat["max"] < 1e9, (mode, lat)
    bad = kmod.writes([("/proc/net/pktgen/pgrx", "timestamp nic")])[0]
    assert bad["ret"] < 0 and "expected hook or stack" in bad["result"], bad


def test_one_receiver_counts_both_directions_each_exactly(kmod):
    """Bidirectional traffic (issue 31 item 1): tx0 and rx0 each send and
    each receive; one pgrx watches both (`rx rx0 tx0`, module 1.1) and keeps
    the directions apart as streams of their sources. netem loses 1 % only
    on the DUT's egress toward rx0, so the forward direction loses and the
    reverse one does not.

        tester                     dut (netns)
          tx0  ---------------->  dut0 --\\
               <----------------       \\ routes both ways
          rx0  <----------------  dut1 --/  netem loss 1 % toward rx0
               ---------------->
    """
    count = 5000
    for _ in range(TESTER_DROP_ATTEMPTS):
        setup_stream(kmod, count, ratep=3000)
        kmod.pg("kpktgend_1", "rem_device_all", "add_device rx0")
        kmod.pg("rx0", f"count {count}", "pkt_size 64", f"dst_mac {kmod.mac('dut1', netns=True)}",
                "dst 198.18.0.1", "src_min 198.19.0.1", "ratep 3000")
        kmod.pg("pgrx", "statistics basic", "rx rx0 tx0")
        with netem(kmod, "loss 1%"):
            kmod.start()
            time.sleep(0.5)
        devs = {d: parse_device(kmod.read(d)) for d in ("tx0", "rx0")}
        if all(d["tx_dropped"] == 0 for d in devs.values()):
            break
    kmod.pg("kpktgend_1", "rem_device_all")
    assert all(d["tx_dropped"] == 0 and d["sofar"] == count for d in devs.values()), devs
    text = kmod.read("pgrx")
    rx = parse_pgrx(text)
    assert text.startswith("pgrx version=6 enabled=1 dev=rx0,tx0 ifindex="), text.splitlines()[0]
    streams = {s["src"]: s for s in rx["streams"]}
    assert set(streams) == {"198.18.0.1", "198.19.0.1"}, streams
    fwd, back = streams["198.18.0.1"], streams["198.19.0.1"]
    # reverse: every frame, none lost; forward: what netem took, counted as lost
    assert (back["packets"], back["lost"], back["seq_max"]) == (count, 0, count), back
    tail = count - fwd["seq_max"]
    assert fwd["packets"] + fwd["lost"] + tail == count and fwd["lost"] + tail >= 0.004 * count, fwd
    assert rx["total"]["packets"] == fwd["packets"] + back["packets"]
    # the human display names both devices
    kmod.pg("pgrx", "display human")
    assert re.search(r"^RECEIVER enabled: dev rx0, tx0 \(ifindex \d+, \d+\)", kmod.read("pgrx"), re.M)
    kmod.pg("pgrx", "display script", "rx rx0")


def send_beside_an_intruder(kmod, count, intruder, declare, tx_extra, intruder_extra):
    """tx0 sends `count` frames (`tx_extra`), tx0@1 on the other thread
    `intruder` frames (`intruder_extra`), both into the DUT toward rx0,
    after pgrx is told `streams declare`; retried while the tester's own
    driver dropped any."""
    for _ in range(TESTER_DROP_ATTEMPTS):
        setup_stream(kmod, count, ratep=3000, extra=tx_extra)
        kmod.pg("kpktgend_1", "rem_device_all", "add_device tx0@1")
        kmod.pg("tx0@1", f"count {intruder}", "pkt_size 64", f"dst_mac {kmod.mac('dut0', netns=True)}",
                "dst 198.19.0.1", "ratep 1200", *intruder_extra)
        kmod.pg("pgrx", f"streams {declare}")
        kmod.start()
        time.sleep(0.5)
        devs = {d: parse_device(kmod.read(d)) for d in ("tx0", "tx0@1")}
        if all(d["tx_dropped"] == 0 for d in devs.values()):
            break
    assert all(d["tx_dropped"] == 0 for d in devs.values()), devs
    assert devs["tx0"]["sofar"] == count and devs["tx0@1"]["sofar"] == intruder, devs


def test_frames_of_undeclared_streams_are_foreign_and_change_no_loss(kmod):
    """Declared streams (issue 31 item 2, module 1.2): `streams 198.18.0.1`
    before traffic; an intruder on the same port from another source
    (198.18.0.99, tx0@1 on the other thread) is counted as foreign only:
    the genuine stream is exact, the totals hold its frames alone, and no
    stream is made for the intruder. `streams any` brings the old rule back
    (every source a stream), a new `rx` forgets the declaration, and a bad
    list changes nothing.

        tester tx0   (198.18.0.1, declared)  --\
        tester tx0@1 (198.18.0.99, intruder) ---> dut0 [dut] dut1 --> rx0 (pgrx)
    """
    count, intruder = 3000, 1200
    send_beside_an_intruder(kmod, count, intruder, "198.18.0.1", (),
                            ("src_min 198.18.0.99", "src_max 198.18.0.99"))
    rx = parse_pgrx(kmod.read("pgrx"))
    head = rx["header"]
    assert (head["version"], head["declared"], head["foreign"]) == ("6", "1", str(intruder)), head
    (genuine,) = rx["streams"]
    assert genuine["src"] == "198.18.0.1" and (genuine["packets"], genuine["lost"]) == (count, 0), genuine
    assert rx["total"]["packets"] == count and head["streams_dropped"] == "0", rx["total"]
    # an rx_reset keeps the declaration: the declared stream is there, empty
    kmod.pg("pgrx", "rx_reset")
    rx = parse_pgrx(kmod.read("pgrx"))
    assert [(s["src"], s["packets"]) for s in rx["streams"]] == [("198.18.0.1", 0)]
    assert (rx["header"]["declared"], rx["header"]["foreign"]) == ("1", "0")
    # bad lists are refused whole, the declaration stays
    bad = ["streams 198.18.0", "streams 198.18.0.1,198.18.0.1", "streams 198.18.0.1,",
           "streams " + ",".join(f"198.18.1.{i}" for i in range(1, 66)), "streams"]
    res = kmod.writes([(f"{PG}/pgrx", c) for c in bad])
    assert [r["ret"] for r in res] == [-errno.EINVAL, -errno.EINVAL, -errno.EINVAL, -errno.E2BIG,
                                       -errno.EINVAL], res
    assert parse_pgrx(kmod.read("pgrx"))["header"]["declared"] == "1"
    # any source a stream again: the intruder is a stream of its own
    kmod.pg("pgrx", "streams any")
    kmod.pg("kpktgend_0", "rem_device_all")
    kmod.start()
    kmod.pg("kpktgend_1", "rem_device_all")
    rx = parse_pgrx(kmod.read("pgrx"))
    assert [(s["src"], s["packets"]) for s in rx["streams"]] == [("198.18.0.99", intruder)], rx["streams"]
    assert (rx["header"]["declared"], rx["header"]["foreign"]) == ("0", "0")
    # a new `rx` forgets a declaration
    kmod.pg("pgrx", "streams 198.18.0.1,2001:2::1", "rx rx0")
    assert parse_pgrx(kmod.read("pgrx"))["header"]["declared"] == "0"


def test_a_stream_id_counts_a_stream_of_many_sources_as_one(kmod):
    """Stream ids (issue 31 item 2, module 1.3): tx0 sends stream 7 from 100
    source addresses drawn per frame; tx0@1 sends stream 9 from one of those
    same sources. Declared `streams sid:7`: stream 7 is one stream, exact,
    with a believable latency (the header's 48-bit time restored on
    arrival), and stream 9 is foreign although its source is one of 7's.
    Undeclared (`streams any`), stream 9 is a stream of its own, by id.

        tester tx0   (sid 7, 198.18.0.100-199)  --\
        tester tx0@1 (sid 9, 198.18.0.150)      ---> dut0 [dut] dut1 --> rx0 (pgrx)
    """
    count, intruder = 3000, 1200
    send_beside_an_intruder(kmod, count, intruder, "sid:7",
                            ("stream_id 7", "src_min 198.18.0.100", "src_max 198.18.0.199", "flag IPSRC_RND"),
                            ("src_min 198.18.0.150", "src_max 198.18.0.150", "stream_id 9"))
    assert "stream_id: 7" in kmod.read("tx0")
    rx = parse_pgrx(kmod.read("pgrx"))
    head = rx["header"]
    assert (head["version"], head["declared"], head["foreign"]) == ("6", "1", str(intruder)), head
    (genuine,) = rx["streams"]
    assert (genuine.get("sid"), genuine["packets"], genuine["lost"], genuine["seq_max"]) == (7, count, 0, count), genuine
    assert rx["total"]["packets"] == count
    lat = rx["stat"]["latency"]
    # every frame a sample, none out of the sane window, each well under a second
    assert lat["n"] == count and rx["invalid"]["bad_ts"] == 0 and 0 < lat["max"] < 1e9, (lat, rx["invalid"])
    kmod.pg("pgrx", "display human")
    assert "  Stream id 7: packets 3000  lost 0" in kmod.read("pgrx")
    kmod.pg("pgrx", "display script")
    # undeclared: the intruder's id is its stream, whatever its source
    kmod.pg("pgrx", "streams any")
    kmod.pg("kpktgend_0", "rem_device_all")
    kmod.start()
    kmod.pg("kpktgend_1", "rem_device_all")
    rx = parse_pgrx(kmod.read("pgrx"))
    assert [(s.get("sid"), s["packets"]) for s in rx["streams"]] == [(9, intruder)], rx["streams"]
    # ids are 1..65535, each once
    bad = ["streams sid:0", "streams sid:65536", "streams sid:7,sid:7", "streams sid:", "streams sid=7"]
    res = kmod.writes([(f"{PG}/pgrx", c) for c in bad])
    assert [r["ret"] for r in res] == [-errno.EINVAL] * 5, res
    kmod.pg("pgrx", "streams sid:7,sid:9,198.18.0.1")
    assert parse_pgrx(kmod.read("pgrx"))["header"]["declared"] == "3"
    kmod.pg("pgrx", "rx rx0")


@pytest.mark.parametrize("svlan,reorder_hdr", [(None, True), (200, True), (None, False), (200, False)],
                         ids=["vlan", "qinq", "vlan-reorder_hdr_off", "qinq-inner_reorder_hdr_off"])
def test_tagged_frames_are_counted_with_their_tags_through_vlan_devices(kmod, svlan, reorder_hdr):
    """Module 1.4: pgrx watches rx0 and counts the frames that come in
    through a VLAN device stacked on it, with the tags in their length, so
    `pkt_size` is the generator's (which counts the tags too). Without the
    tags in the length (pkt_size 4 B per tag shorter: what an untagged
    count would be) every frame is wrong_size. The first run sends the
    smallest frame that holds the tags and the headers. With reorder_hdr
    off on rx0's 802.1Q device the kernel leaves that tag in the link
    header: counted there, not a second time (QinQ: the outer tag is taken
    off, the inner kept, so both ways of counting meet in one frame).

      tx0 =[tags]= dut0.T [netns dut] dut1.T =[tags]= rx0 -> rx0.T (pgrx watches rx0)
    """
    tag_bytes = 4 * (1 if svlan is None else 2)
    size = 58 + tag_bytes                           # no FCS: 14 + tags + 20 + 8 + 16
    runs = ((size, size), (100, 100 - tag_bytes))   # (generator's pkt_size, pgrx's)
    tags = ["vlan_id 100"] + ([f"svlan_id {svlan}"] if svlan else [])
    count = 3000
    with dut_vlan(kmod, 100, svlan):
        try:
            add_vlan_stack(lambda cmd: kmod.sh(cmd), "rx0", 100, svlan, top_reorder_hdr=reorder_hdr)
            results = {}
            for sent, counted in runs:
                # 3000/s: a TCG vCPU stall then rarely bursts past the DUT's backlog (tx_dropped)
                setup_stream(kmod, count, ratep=3000, size=sent, extra=tags)
                kmod.pg("pgrx", f"pkt_size {counted}")
                kmod.start()
                time.sleep(0.5)
                results[sent] = parse_device(kmod.read("tx0")), parse_pgrx(kmod.read("pgrx"))
        finally:
            for name, *_ in reversed(vlan_devices.devices("rx0", 100, svlan, dotted=True)):
                kmod.sh(f"ip link del {name}", check=False)
    dev, rx = results[size]
    [st] = rx["streams"]
    print(f"sent {dev['sofar']} x {size} B: stream packets {st['packets']} lost {st['lost']} "
          f"bytes {st['bytes']} wrong_size {rx['invalid']['wrong_size']}")
    assert dev["sofar"] == count and dev["tx_dropped"] == 0, dev
    assert (st["packets"], st["lost"], st["seq_max"], rx["invalid"]["wrong_size"]) == (count, 0, count, 0), rx
    assert st["bytes"] == count * size, st              # bytes: the frame without FCS, tags in
    dev, rx = results[100]
    print(f"sent {dev['sofar']} x 100 B, pgrx pkt_size {100 - tag_bytes}: wrong_size "
          f"{rx['invalid']['wrong_size']} counted {rx['total']['packets']}")
    assert dev["sofar"] == count, dev
    assert rx["invalid"]["wrong_size"] == count and rx["total"]["packets"] == 0, rx
