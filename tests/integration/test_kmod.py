"""rfc2544_pktgen in the lab's real 6.1 kernel: loading, the command
language (accepted/rejected like upstream, with the documented stricter
cases), exact TX counts, ratep accuracy, and the receiver counting exactly
what crosses the DUT, over IPv4 and IPv6.

Topology (lab "single"): tx0 -> [netns dut: dut0 -> forward -> dut1] -> rx0.
"""
import errno
import time

import pytest

from rfc2544.lab.flow_counter import FlowCounter
from host_load import STALL_MS
from kmod_helpers import (PG, REMOTE_KO, kmod, kernel_problems, parse_device,  # noqa: F401
                               parse_pgrx, setup_stream)

pytestmark = pytest.mark.lab

E = errno


def test_load_creates_files_and_threads(kmod):
    listing = kmod.sh(f"ls {PG}").split()
    ncpu = int(kmod.sh("nproc"))
    assert {"pgctrl", "pgrx"} <= set(listing)
    assert sorted(x for x in listing if x.startswith("kpktgend_")) == \
        sorted(f"kpktgend_{i}" for i in range(ncpu))
    # root-only files
    modes = kmod.sh(f"stat -c '%a %n' {PG}/*").split("\n")
    assert all(m.startswith("600 ") for m in modes if m), modes
    # one thread per CPU in each namespace (root + dut)
    assert int(kmod.sh("ps -e -o comm= | grep -c '^kpktgend_'")) == 2 * ncpu
    # per-namespace: the DUT namespace has its own tree
    assert "pgrx" in kmod.dut(f"ls {PG}")
    assert "Version:" in kmod.read("pgctrl")


def test_intree_pktgen_clash(kmod):
    kmod.dmesg_mark("clash")
    status, _, _ = kmod.run("modprobe pktgen", check=False)
    assert status != 0, "the in-tree pktgen must not load while ours owns /proc/net/pktgen"
    assert "refusing to load the in-tree pktgen" in kmod.dmesg_since("clash")
    kmod.unload()
    try:
        kmod.sh("modprobe pktgen")
        status, _, err = kmod.run(f"insmod {REMOTE_KO}", check=False)
        assert status != 0 and "busy" in err.lower()
        assert "owned by the in-tree pktgen" in kmod.dmesg_since("clash")
    finally:
        kmod.sh("rmmod pktgen 2>/dev/null; true")
        kmod.load()
    assert kernel_problems(kmod.dmesg_since("clash")) == []


# (command, expected errno or 0). Upstream behaviour from the kselftest
# proc_net_pktgen.c; "stricter" marks documented deliberate differences.
REPORTED = "reported"   # accepted, Result names the problem (upstream's kselftest)
DEVICE_CASES = [
    ("count 100", 0), ("min_pkt_size 0", 0), ("min_pkt_size 1", 0),
    ("min_pkt_size 100", 0), ("min_pkt_size=1001", 0), ("min_pkt_size =2002", 0),
    ("min_pkt_size= 3003", 0), ("min_pkt_size = 4004", 0), ("max_pkt_size 200", 0),
    ("pkt_size 300", 0), ("imix_weights 0,7 576,4 1500,1", 0),
    ("imix_weights " + " ".join(f"{100 + i},{i}" for i in range(1, 21)), 0),
    ("imix_weights " + " ".join(f"{100 + i},{i}" for i in range(1, 22)), E.E2BIG),
    # no entry, or a size without a weight: -EINVAL (the kselftest of
    # kernels newer than 6.1; not "accepted and reported" like min_pkt_size)
    ("imix_weights", E.EINVAL), ("imix_weights ", E.EINVAL), ("imix_weights 0", E.EINVAL),
    ("imix_weights 0,", E.EINVAL), ("imix_weights 64,1 1500", E.EINVAL),
    ("pkt_size 64", 0),
    ("debug 1", 0), ("debug 0", 0), ("frags 100", 0), ("frags 0", 0),
    ("delay 100", 0), ("delay 2147483647", 0), ("delay 0", 0),
    ("rate 0", E.EINVAL), ("rate 100", 0), ("rate 300M", 0),
    ("ratep 0", E.EINVAL), ("ratep 200", 0),
    ("udp_src_min 1", 0), ("udp_dst_min 2", 0), ("udp_src_max 3", 0), ("udp_dst_max 4", 0),
    ("clone_skb 1", E.EOPNOTSUPP),          # veth lacks IFF_TX_SKB_SHARING
    ("clone_skb 0", 0), ("count 100", 0), ("src_mac_count 100", 0),
    ("dst_mac_count 100", 0), ("burst 0", 0), ("burst 2", E.EOPNOTSUPP), ("node 100", 0),
    # ours (module 1.2): distinct frames per burst, on veth too
    ("burst_frames 64", 0), ("burst_frames 65536", 0), ("burst_frames 65537", E.EINVAL),
    ("burst_frames -1", E.EINVAL), ("burst_frames 0", 0),
    ("dst_stride 256", 0), ("dst_stride 16777216", 0), ("dst_stride 16777217", E.EINVAL),
    ("dst_stride x", E.EINVAL), ("dst_stride 1", 0),
    # ours (module 1.3): the stream id in the test header
    ("stream_id 65535", 0), ("stream_id 65536", E.EINVAL), ("stream_id -1", E.EINVAL),
    ("stream_id 7x", E.EINVAL), ("stream_id 0", 0),
    # ours (module 1.7): the first frame held after the start
    ("start_offset 1000000000", 0), ("start_offset 1000000001", E.EINVAL), ("start_offset -1", E.EINVAL),
    ("start_offset 5x", E.EINVAL), ("start_offset 0", 0),
    ("xmit_mode start_xmit", 0), ("xmit_mode netif_receive", 0),
    ("xmit_mode queue_xmit", 0), ("xmit_mode start_xmit", 0),
    ("flag UDPCSUM", 0), ("flag !UDPCSUM", 0), ("flag NODE", 0), ("flag !NODE_ALLOC", 0),
    ("dst_min 101.102.103.104", 0), ("dst 101.102.103.104", 0),
    ("dst_max 201.202.203.204", 0), ("src_min 101.102.103.104", 0),
    ("src_max 201.202.203.204", 0),
    ("dst6 2001:db38:1234:0000:0000:0000:0000:0000", 0),
    ("dst6_min 2001:db8:1234:0000:0000:0000:0000:0000", 0),
    ("dst6_max 2001:db8:1234:0000:0000:0000:0000:0000", 0),
    ("src6 2001:db38:1234:0000:0000:0000:0000:0000", 0), ("flag !IPV6", 0),
    ("dst_mac 01:02:03:04:05:06", 0), ("src_mac 11:12:13:14:15:16", 0),
    ("clear_counters", 0), ("flows 100", 0), ("flowlen 100", 0),
    ("queue_map_min 1", 0), ("queue_map_max 2", 0),
    ("mpls 00000001", 0), ("mpls 00000001,000000f2", 0),
    ("mpls " + ",".join(f"00000f{i:02x}" for i in range(16)), 0),
    ("mpls " + ",".join(f"00000f{i:02x}" for i in range(17)), E.E2BIG), ("mpls 0", 0),
    ("vlan_id 1", 0), ("vlan_p 1", 0), ("vlan_cfi 1", 0), ("vlan_id 4096", 0),
    ("svlan_id 1", 0), ("svlan_p 1", 0), ("svlan_cfi 1", 0), ("svlan_id 4096", 0),
    ("tos 0", 0), ("tos 0f", 0), ("tos 0ff", 0), ("traffic_class f0", 0),
    ("skb_priority 999", 0), ("flows 0", 0), ("queue_map_max 0", 0), ("queue_map_min 0", 0),
    ("forsurewrongcommand", E.EINVAL),
    # accepted and reported in Result, as upstream's kselftest expects
    # (REPORTED: the write succeeds, Result is an error naming the problem)
    ("min_pkt_size", REPORTED), ("min_pkt_size ", REPORTED), ("xmit_mode nonsense", REPORTED),
    ("flag nonsense", REPORTED),
    # stricter than upstream (which accepts the write and reports in Result)
    ("count 12x", E.EINVAL), ("dst 300.1.2.3", E.EINVAL),
    ("spi 100", 0),                        # accepted (upstream), unused without IPsec
]


def _check(results, cases, label):
    bad = []
    for (cmd, want), r in zip(cases, results):
        got = 0 if r["ret"] >= 0 else -r["ret"]
        if want == REPORTED:
            if r["ret"] < 0 or r["result"].startswith("OK") or \
                    cmd.split()[0].lower() not in r["result"].lower():
                bad.append(f"{label} {cmd!r}: expected accepted and reported, got "
                           f"{r['ret']} ({r['result']!r})")
        elif got != want:
            bad.append(f"{label} {cmd!r}: expected {errno.errorcode.get(want, 0)}, got "
                       f"{errno.errorcode.get(got, got)} ({r['result']})")
        elif want == 0 and not r["result"].startswith("OK"):
            bad.append(f"{label} {cmd!r}: accepted but Result is {r['result']!r}")
        elif want and r["result"].startswith("OK"):
            bad.append(f"{label} {cmd!r}: rejected but Result is {r['result']!r}")
    assert bad == []


def test_device_commands_accepted_or_rejected(kmod):
    kmod.pg("kpktgend_0", "rem_device_all", "add_device tx0")
    dev = f"{PG}/tx0"
    # with a trailing NUL and without, as the kselftest does
    res = kmod.writes([(dev, c + "\0") for c, _ in DEVICE_CASES])
    _check(res, DEVICE_CASES, "NUL-terminated")
    res = kmod.writes([(dev, c) for c, _ in DEVICE_CASES])
    _check(res, DEVICE_CASES, "bare")
    text = kmod.read("tx0")
    assert "Params: count 100  min_pkt_size: 64  max_pkt_size: 64" in text
    assert "     src_mac: 11:12:13:14:15:16 dst_mac: 01:02:03:04:05:06" in text
    assert "     tos: 0xff" in text and "     traffic_class: 0xf0" in text
    assert kmod.writes([(dev, b"")])[0]["ret"] == -E.EINVAL
    kmod.pg("kpktgend_0", "rem_device_all")


def test_thread_and_ctrl_commands(kmod):
    thr = f"{PG}/kpktgend_0"
    kmod.sh("ip link add kmt0 type veth peer name kmt1")   # created down
    kmod.sh("ip link add kmtun0 type ipip local 198.18.0.1 remote 198.51.100.1 && "
            "ip link set kmtun0 up")
    try:
        cases = [
            ("rem_device_all", 0), ("add_device lo@0", 0), ("add_device lo@0", E.EBUSY),
            ("add_device tx0", 0), ("add_device tx0", E.EBUSY), ("add_device tx0@7", 0),
            ("add_device nosuchdev", E.ENODEV), ("add_device kmt0", E.ENETDOWN),
            ("add_device kmtun0", E.EINVAL), ("add_device", E.EINVAL),
            ("add_device " + "x" * 40, E.EINVAL), ("forsureawrongcommand", E.EINVAL),
            ("max_before_softirq", 0), ("max_before_softirq 10000", 0),
            ("max_before_soft", E.EINVAL), ("rem_device_all", 0),
        ]
        _check(kmod.writes([(thr, c + "\n") for c, _ in cases]), cases, "thread")
        # every prefix of a wrong word, including the empty write, is -EINVAL
        word = "forsureawrongcommand"
        res = kmod.writes([(thr, word[:i]) for i in range(len(word) + 1)])
        assert all(r["ret"] == -E.EINVAL for r in res), res
    finally:
        kmod.sh("ip link del kmt0; ip link del kmtun0; true")

    ctrl = f"{PG}/pgctrl"
    wrong = "0123456789" * 13
    res = kmod.writes([(ctrl, wrong[:i]) for i in range(len(wrong) + 1)])
    assert all(r["ret"] == -E.EINVAL for r in res)
    # 6.1 strips the last byte of every pgctrl write; we strip only trailing
    # whitespace/NUL, so `echo stop` and a bare `stop` both work.
    cases = [("stop", 0), ("stop\n", 0), ("stop\0", 0), ("reset", 0), ("reset\n", 0),
             ("start", 0), ("start\0", 0), ("sto", E.EINVAL), ("stop now", E.EINVAL)]
    _check(kmod.writes([(ctrl, c) for c, _ in cases]), cases, "pgctrl")


def test_pgrx_commands(kmod):
    rx = f"{PG}/pgrx"
    cases = [
        ("rx rx0", 0), ("rx nosuchdev", E.ENODEV), ("rx", E.EINVAL), ("rx a b", E.ENODEV),
        # several devices (module 1.1): each must exist, once; at most 4
        ("rx rx0 tx0", 0), ("rx rx0 rx0", E.EINVAL), ("rx rx0 nosuchdev", E.ENODEV),
        ("rx rx0 tx0 lo rx0", E.EINVAL), ("rx rx0 tx0 lo a b", E.E2BIG),
        ("statistics counter", 0), ("statistics basic", 0), ("statistics time", 0),
        ("statistics basic6", E.EINVAL), ("display script", 0), ("display human", 0),
        ("display html", E.EINVAL), ("action pass", 0), ("action drop", 0),
        ("action accept", E.EINVAL), ("rx_reset", 0), ("rx_reset now", E.EINVAL),
        ("rx_disable", 0), ("frobnicate", E.EINVAL),
    ]
    _check(kmod.writes([(rx, c + "\n") for c, _ in cases]), cases, "pgrx")
    assert kmod.writes([(rx, b"")])[0]["ret"] == -E.EINVAL


@pytest.mark.parametrize("count", [1, 1000, 12345])
def test_exact_tx_count(kmod, count):
    """count N hands exactly N frames to veth. Unlimited, veth may drop some
    (the DUT's backlog full: NET_XMIT_DROP): those are the module's
    tx_dropped and veth's, never sent, and the split is exact both ways."""
    kmod.dmesg_mark(f"count{count}")
    setup_stream(kmod, count)            # no rate limit: as fast as it goes
    stats = "/sys/class/net/tx0/statistics"

    def veth():
        return [int(x) for x in kmod.sh(f"cat {stats}/tx_packets {stats}/tx_dropped").split()]
    before = veth()
    kmod.start()
    dev = parse_device(kmod.read("tx0"))
    sent, dropped = (a - b for a, b in zip(veth(), before))
    assert dev["sofar"] + dev["tx_dropped"] == count and dev["seq_num"] == count + 1
    assert (dev["sofar"], dev["tx_dropped"]) == (sent, dropped)
    assert dev["errors"] == dev["tx_dropped"] and dev["packets"] == dev["sofar"]
    assert kernel_problems(kmod.dmesg_since(f"count{count}")) == []


RATES = [500, 2000, 5000, 10000, 15000]   # pps; headroom below the TCG tester ceiling (~22 kpps on a loaded host) lets the schedule catch up after a vCPU stall


def _rate_attempt(kmod, ratep):
    """One 4 s run at `ratep`: (generator pps, receiver pps, evidence of a
    stalled tester: its veth's drops, its longest departure gap, the
    receiver's longest gap between arrivals)."""
    count = 4 * ratep
    setup_stream(kmod, count, ratep=ratep)
    kmod.start()
    dev = parse_device(kmod.read("tx0"))
    rx = parse_pgrx(kmod.read("pgrx"))
    assert dev["sofar"] + dev["tx_dropped"] == count, dev
    achieved = (count - 1) / (dev["usec"] / 1e6)      # gaps between first and last
    tot = rx["total"]
    [st] = rx["streams"]
    span = (tot["last_ns"] - tot["first_ns"]) / 1e9
    # sequence numbers sent between the first and last arrival (robust to
    # packets the stalled TCG path dropped in between)
    assert st["seq_max"] > 0.9 * count
    stalls = {"tx_dropped": dev["tx_dropped"], "departure gap ms": (dev["max_gap_ns"] or 0) / 1e6,
              "arrival gap ms": rx["stat"]["interarrival"]["max"] / 1e6}
    return achieved, (st["seq_max"] - 1) / span, stalls


RATE_ATTEMPTS = 3
# Gaps shorter than STALL_MS cannot explain a miss: the generator catches up
# on debts under max_lag_ns (1 s), so only the run's last gap stretches it,
# by at most 50 ms of 4 s (1.25 %).


@pytest.mark.parametrize("ratep", RATES)
def test_ratep_accuracy(kmod, ratep):
    """Asked vs achieved rate over 4 s of traffic. Generator side (packets
    over the Result's start-to-stop time): within 3 %. Receiver side
    (arrival span vs sequence numbers): within 5 %.

    A miss is put on the host only with evidence of its own: the tester's
    veth dropped frames (CI saw 897 of 40000 in a catch-up burst), or a
    departure or arrival gap of STALL_MS or more. Such a run is tried
    again, up to RATE_ATTEMPTS times; a miss without that evidence fails
    at once, and so does too fast (never the environment's doing)."""
    tried = []
    for _ in range(RATE_ATTEMPTS):
        gen, recv, stalls = _rate_attempt(kmod, ratep)
        tried.append({"generator pps": round(gen, 1), "receiver pps": round(recv, 1), **stalls})
        assert gen <= ratep * 1.03 and recv <= ratep * 1.05, f"faster than asked: {tried}"
        if gen == pytest.approx(ratep, rel=0.03) and recv == pytest.approx(ratep, rel=0.05):
            break
        stalled = stalls["tx_dropped"] or max(stalls["departure gap ms"], stalls["arrival gap ms"]) >= STALL_MS
        assert stalled, f"{ratep} pps asked, missed with no stall to explain it: {tried}"
    else:
        pytest.fail(f"{ratep} pps asked; every attempt missed, each with a stall: {tried}")


@pytest.mark.parametrize("ipv6", [False, True], ids=["ipv4", "ipv6"])
def test_receiver_counts_exactly_what_crosses_the_dut(kmod, ipv6):
    count = 20000
    setup_stream(kmod, count, ratep=10000, ipv6=ipv6)
    src, dst = ("2001:2::1", "2001:2:0:100::1") if ipv6 else ("198.18.0.1", "198.19.0.1")
    with FlowCounter(kmod.host, "rx0", src, dst) as crossed:
        kmod.start()
        time.sleep(0.5)                  # let the last packets arrive
        n_crossed = crossed.count()
    rx = parse_pgrx(kmod.read("pgrx"))
    assert rx["header"]["enabled"] == "1" and rx["header"]["dev"] == "rx0"
    assert rx["total"]["packets"] == n_crossed
    assert sum(int(c["packets"]) for c in rx["cpus"]) == n_crossed
    assert n_crossed > 0.99 * count
    [stream] = rx["streams"]
    assert stream["src"] == src
    assert stream["packets"] == n_crossed and stream["dup"] == 0 and stream["old"] == 0
    # what did not cross is lost, by sequence number (tail loss aside)
    assert stream["lost"] + (count - stream["seq_max"]) == count - n_crossed
    assert rx["stat"]["latency"]["n"] == n_crossed
    assert rx["total"]["bytes"] == 64 * n_crossed if not ipv6 else \
        rx["total"]["bytes"] == 78 * n_crossed     # IPv6 minimum: 14+40+8+16


def test_only_counts_on_its_device(kmod):
    """Traffic into another device of the namespace is not counted (nor dropped)."""
    setup_stream(kmod, 2000, ratep=5000)
    kmod.pg("pgrx", "rx tx0")            # wrong device: nothing arrives on tx0
    kmod.start()
    rx = parse_pgrx(kmod.read("pgrx"))
    assert rx["total"]["packets"] == 0 and rx["streams"] == []


def departures_of(kmod, dev="tx0"):
    """The device file as the suite reads it (rfc2544.drivers.pktgen)."""
    from rfc2544.drivers import pktgen
    return pktgen.parse_device(kmod.read(dev))


def assert_policer_agrees(d):
    """The policer at the nominal rate (departures.h) holds together: a
    bucket smaller than the one needed drops frames, one as large drops
    none, and a larger bucket never drops more."""
    drops = dict(d["bucket_drops"])
    sizes = [1 << i for i in range(16)]
    assert d["bucket_needed"] >= 1, d
    assert [b for b in sizes if drops.get(b)] == [b for b in sizes if b < d["bucket_needed"]], d
    counts = [drops.get(b, 0) for b in sizes]
    assert counts == sorted(counts, reverse=True) and counts[0] <= d["frames"], d


def test_the_departure_histogram_counts_every_frame_sent(kmod):
    """3000 frames at 5000 pps: the histogram holds one gap per frame handed
    over (sent plus the tester's own drops), the nominal gap is the rate's,
    and the mean gap is it (the median moves with the host's load: CI saw it
    off by more than 5 % on a busy host)."""
    n = 3000
    setup_stream(kmod, n, ratep=5000)
    kmod.start()
    state = departures_of(kmod)
    d = state.departures
    assert d is not None, "no Departures section"
    handed = state.pkts_sofar + (state.tx_dropped or 0)
    assert handed == n
    assert d["frames"] == handed == sum(c for _, _, c in d["gap_hist_ns"]) and d["unpaced_frames"] == 0
    assert d["nominal_gap_ns"] == 200_000
    # The schedule is absolute: frame k is due at start + k * gap however
    # many stalls came before, so the first-to-last span is (n - 1) * gap
    # give or take the end frames' lateness: a stall or two, each at most
    # the longest gap (CI saw a stall at the end put the mean 2 % out). A
    # schedule relative to the previous frame would add up every late wake-up.
    slack = max(0.02 * (n - 1) * 200_000, 2 * d["max_gap_ns"])
    assert abs(d["mean_gap_ns"] - 200_000) * (n - 1) <= slack, d
    assert d["min_gap_ns"] <= d["p50_gap_ns"] <= d["p99_gap_ns"] <= d["max_gap_ns"]
    assert_policer_agrees(d)
    # counters cleared: the departures too
    kmod.pg("tx0", "clear_counters")
    assert departures_of(kmod).departures["frames"] == 0


def test_a_burst_16_run_shows_micro_bursts_of_16(kmod):
    """`burst 16` on a dummy device (veth cannot share skbs) at 1600 pps:
    every call hands 16 frames over at once, so 15 of every 16 frames leave
    0 ns after the one before and each call is a micro-burst of 16 frames
    (two calls a vCPU stall made back to back count as one of 32). A
    policer at the rate needs a bucket of 16 frames at least."""
    kmod.sh("ip link add kmdep0 type dummy && ip link set kmdep0 up")
    try:
        kmod.pg("kpktgend_0", "rem_device_all", "add_device kmdep0")
        kmod.pg("kmdep0", "count 640", "pkt_size 60", "ratep 1600", "burst 16", "dst 198.19.0.1",
                "dst_mac 02:00:00:00:00:01")
        kmod.start()
        state = departures_of(kmod, "kmdep0")
        d = state.departures
        assert state.pkts_sofar == d["frames"] == 640
        zero = sum(c for lo, hi, c in d["gap_hist_ns"] if hi == 0)
        assert zero == 640 * 15 // 16, d["gap_hist_ns"][:5]
        assert d["longest_micro_burst"] >= 16 and d["longest_micro_burst"] % 16 == 0, d
        assert 1 <= d["micro_bursts"] <= 40
        # a policer at 1600 pps needs a bucket of a burst at least, and one
        # of 8 frames drops at least the other 8 of each of the 40 bursts
        assert_policer_agrees(d)
        assert d["bucket_needed"] >= 16 and dict(d["bucket_drops"])[8] >= 40 * 8, d
    finally:
        kmod.pg("kpktgend_0", "rem_device_all")
        kmod.sh("ip link del kmdep0")


def test_unlimited_devices_on_one_thread_take_turns(kmod):
    """Two devices without a rate on one kpktgend thread both send while
    they run: the thread takes them in turn (1 ns of schedule a frame),
    where the first one listed used to send alone until its count ran
    out. Counted by frames, not by time: after any run each has sent a
    fair share of what both sent."""
    thread = "kpktgend_0"
    kmod.pg(thread, "rem_device_all")
    kmod.pg(thread, "add_device tx0@0", "add_device tx0@1")
    for dev in ("tx0@0", "tx0@1"):
        kmod.pg(dev, "count 0", "pkt_size 64", f"dst_mac {kmod.mac('dut0', netns=True)}",
                "dst 198.19.0.1", "src_min 198.18.0.1")
    try:
        kmod.start_bg()
        time.sleep(1.0)
    finally:
        kmod.stop()
    states = [parse_device(kmod.read(dev)) for dev in ("tx0@0", "tx0@1")]
    sent = [d["sofar"] + d["tx_dropped"] for d in states]
    kmod.pg(thread, "rem_device_all")
    assert min(sent) > 0.4 * sum(sent) > 0, sent
