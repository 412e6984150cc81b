"""SSHTester with OUR module in the real lab: rfc2544_pktgen generator and
its pgrx receiver (full fidelity: per-stream loss by sequence number,
latency with percentiles). The module is built on the host against the lab
kernel's headers (kmod_helpers.build_ko_for), copied in, loaded for this
file's tests and unloaded afterwards (DUT cap removed too).
"""
import math
import re

import pytest

from host_load import until_clean
from kmod_helpers import MODULE, KmodVM, build_ko_for, dut_vlan
from test_tester_lab import QUICK, tlab  # noqa: F401  (fixture: the lab to use)

from rfc2544.config import inventory
from rfc2544 import wire
from rfc2544.wire import UNTAGGED, Tags
from rfc2544.model import PROGRESS_KEYS, TrialSpec
from rfc2544.drivers.ssh import put_file
from rfc2544.engine.tester import SSHTester

pytestmark = pytest.mark.lab

REMOTE = "/root/rfc2544_pktgen_tester.ko"
# test_the_calibration_link_sees_what_the_module_recorded: a gap this long
# in a 1.5 s paced run means a held vCPU (idle lab host: 4.6-16.6 ms at
# 3000 fps, 0.3-7.5 ms at 12000, in 5 runs; CI's held vCPUs: 23-200 ms).
LINK_STALL_MS = 20


@pytest.fixture(scope="module")
def module_loaded(tlab):  # noqa: F811
    ko = build_ko_for(tlab)
    host = tlab.connect("tester")
    put_file(host, ko, REMOTE)
    host.run(f"echo stop > /proc/net/pktgen/pgctrl 2>/dev/null; rmmod pktgen 2>/dev/null; "
             f"lsmod | grep -q '^{MODULE} ' && rmmod {MODULE}; insmod {REMOTE}", check=True)
    yield
    host.run(f"echo stop > /proc/net/pktgen/pgctrl 2>/dev/null; rmmod {MODULE}; rm -f {REMOTE}", check=False)
    host.close()


@pytest.fixture
def tester(tlab, module_loaded):  # noqa: F811
    t = SSHTester(inventory.load(tlab.inventory_path), waits=QUICK, poll_interval_s=0.3)
    yield t
    t.stop_all()
    t.close()


def test_pgrx_counts_every_frame_per_stream(tester):
    r = tester.run_trial(TrialSpec(frame_size=64, load_fps=2000, duration_s=1.0))
    assert tester.generator_name == "rfc2544_pktgen" and tester.receiver_name == "pgrx"
    assert tester.full_fidelity
    assert r.tx_frames == r.intended_frames == 2000
    assert r.rx_frames == 2000, r.notes
    (s,) = r.streams
    assert (s.tx_frames, s.rx_frames, s.lost, s.out_of_order, s.duplicates) == (2000, 2000, 0, 0, 0)


def test_streams_are_counted_by_their_stream_id(tlab, tester):  # noqa: F811
    """Module 1.3 on the tester: the suite gives the stream id 1, declares
    `sid:1` to pgrx, and pgrx counts the stream by it (issue 31 item 2)."""
    r = tester.run_trial(TrialSpec(frame_size=64, load_fps=2000, duration_s=1.0, flows=16))
    assert tester.detect()["stream_ids"]
    assert (r.tx_frames, r.rx_frames, r.lost_frames) == (2000, 2000, 0), r.notes
    host = tlab.connect("tester")
    try:
        rx = host.run("cat /proc/net/pktgen/pgrx")[1]
        device = host.run("cat /proc/net/pktgen/tx0")[1]
    finally:
        host.close()
    assert "declared=1 " in rx and "\nstream sid=1 packets=2000 " in rx, rx[:600]
    assert "stream_id: 1" in device, device


@pytest.mark.parametrize("ipv6", [False, True])
def test_latency_with_percentiles(tester, ipv6):
    r = tester.run_trial(TrialSpec(frame_size=128, load_fps=1000, duration_s=1.0, latency=True, ipv6=ipv6))
    assert r.rx_frames == r.tx_frames == 1000, r.notes
    lat = r.latency
    assert lat is not None and lat.samples == 1000          # >= 500 per RFC 8219
    assert 0 < lat.min_ns <= lat.median_ns <= lat.p999_ns <= lat.max_ns
    assert lat.min_ns <= lat.mean_ns <= lat.max_ns
    assert lat.pdv_mean_ns is not None and lat.stddev_ns >= 0


def test_capped_dut_loss_by_sequence_and_early_abort(tlab, tester):  # noqa: F811
    samples = []
    tlab.cap_dut(500)
    try:
        full = tester.run_trial(TrialSpec(frame_size=64, load_fps=2000, duration_s=1.0))
        aborted = tester.run_trial(TrialSpec(frame_size=64, load_fps=2000, duration_s=5.0, abort_loss_ratio=0.0),
                                   progress=samples.append)
    finally:
        tlab.uncap_dut()
    assert full.tx_frames == 2000 and 0.5 < full.loss_ratio < 0.9
    assert full.streams[0].lost == full.tx_frames - full.rx_frames   # gaps + tail, by sequence number
    assert aborted.aborted_early and aborted.traffic_s < 2.5
    assert aborted.saved_traffic_s == pytest.approx(5.0 - aborted.traffic_s)
    assert samples and all(k in samples[0] for k in PROGRESS_KEYS)
    assert samples[-1]["lost_frames"] > 0 and samples[-1]["seq_max"] > 0


def test_conditions_name_the_module(tester):
    c = tester.conditions()
    assert c["generator"] == "rfc2544_pktgen" and c["fidelity"] == "full"
    assert c["hosts"]["tester"]["module_version"]
    assert "bit-forwarding" in c["latency_definition"]


def test_rate_change_without_stopping(tlab, tester):  # noqa: F811
    """System recovery's trial: overload, then a lower rate in the same run."""
    tlab.cap_dut(1000)
    samples = []

    def attempt():
        samples.clear()
        return tester.run_trial(TrialSpec(frame_size=64, load_fps=3000, duration_s=1.0, recovery_load_fps=500,
                                          recovery_duration_s=1.5), progress=samples.append)
    def held_back(r):
        # A loaded host can hold the change back until the generator has sent
        # every frame at the first rate (CI: twice in 2 runs), or starve the
        # generator so that it falls behind and catches up in bursts: the
        # trial says so itself (its notes; tester_limited, from its own stall
        # record), and such an attempt proves nothing about the change.
        return (next((n for n in r.notes if "rate change did not happen" in n), None)
                or ("tester-limited: " + "; ".join(r.notes) if r.tester_limited else None))

    try:
        r, spoiled = until_clean(attempt, held_back)
    finally:
        tlab.uncap_dut()
    # the checks hold on a clean attempt, or the test fails saying why none was
    assert not held_back(r), f"every attempt was spoiled by the host: {spoiled}"
    assert r.intended_frames == r.tx_frames == 3000 + 750
    assert any(n.startswith("rate changed to 500 frames/s") for n in r.notes), (spoiled, r.notes)
    rates = [s["load_fps"] for s in samples]
    assert rates[0] == 3000 and sorted(rates, reverse=True) == rates, (rates, r.notes)
    assert r.lost_frames > 0
    assert rates[-1] == 500, (rates, r.notes)
    # loss only while overloaded: the lost count stops growing after the change
    late = [s["lost_frames"] for s in samples if s["elapsed_s"] > 2.0]
    assert late and late[-1] - late[0] <= 50


def test_diff_writes_verified_on_the_real_read_out(tlab, tester):  # noqa: F811
    """Issue 12: after the first trial only changed commands are written,
    the module's read-out verifies (IPv4, IPv6, frame size changes: no
    mismatch, nothing unverifiable); a value written behind the tester's
    back is caught on the next trial's read-back, counted, and the devices
    are re-added and rewritten (the stray value is gone); one start shell
    serves all trials."""
    c = tester.engine.control_counts
    for fps, size, v6 in ((1000, 64, False), (800, 64, False), (800, 128, False), (1000, 128, True),
                          (800, 64, False)):
        r = tester.run_trial(TrialSpec(frame_size=size, load_fps=fps, duration_s=0.3, ipv6=v6))
        assert r.tx_frames == r.rx_frames == r.intended_frames, r.notes
    assert (c["mismatches"], c["unverifiable"], c["full_writes"]) == (0, 0, 1), c
    host = tlab.connect("tester")
    try:
        dev = f"/proc/net/pktgen/{tester.plans[0].device}"
        host.run(f"echo 'queue_map_max 1' > {dev}; echo 'vlan_id 7' > {dev}", check=True)
        r = tester.run_trial(TrialSpec(frame_size=64, load_fps=800, duration_s=0.3))
        assert r.tx_frames == r.rx_frames == r.intended_frames, r.notes
        assert c["mismatches"] == 1 and c["full_writes"] == 2, c
        assert "vlan_id" in tester.engine.mismatch_detail or "queue_map_max" in tester.engine.mismatch_detail
        text = host.run(f"cat {dev}", check=True)[1]
        assert "vlan_id" not in text and "queue_map_max: 0" in text
    finally:
        host.close()
    spares = list(tester.transport._spare_starts.values())
    assert len(spares) == 1 and spares[0].loop and not spares[0].done()


def test_calibrate_measures_pacing_below_the_ceiling(tester):
    """`calibrate`'s pacing fidelity on the real generator: every step
    measured with departure data, the rate kept at the lower steps, the
    alternative settings tried and the module's own settings restored."""
    from rfc2544.engine.calibrate import PACING_STEPS, calibrate, pacing_fidelity
    before = tester.module_parameters()
    assert set(before) == {"spin_ns", "catchup_pct", "max_lag_ns"}
    ceilings = calibrate(tester.inventory, [64], 1.0, tester=tester)
    out = pacing_fidelity(tester, ceilings, duration=1.0)
    print(out)
    assert [r["step"] for r in out["rows"]] == list(PACING_STEPS)
    assert all(r["longest_micro_burst"] is not None and r["p999_over_nominal"] >= 1 for r in out["rows"])
    # the lowest step keeps its rate within 5 % (CI's loaded host once sent 97.3 %: kept_rate's 99 % is too tight here)
    assert out["rows"][0]["achieved_fps"] >= 0.95 * out["rows"][0]["fps"], out["rows"][0]
    assert len(out["settings"]) == 3 and sum(s["best"] for s in out["settings"]) == 1
    assert tester.module_parameters() == before


def test_the_calibration_link_sees_what_the_module_recorded(tester):
    """The calibration link's estimate (calibration_link.py: tcpdump's
    arrival times on cal1) against the module's own departure records of
    the same frames sent on cal0: one measurement, two sources. The link is
    what a generator without departure records is judged by, so it must
    agree with the records where both exist: every frame, the same longest
    micro-burst (+-2 frames, or 15 % of a longer one), close frames within 2 % of the frames, and
    the link's p99.9 gap where the records put it, within 20 % below, 30 %
    above and 0.02 % of rank. A link that batched its arrivals (NAPI, interrupt coalescing)
    would make most frames close.
    Why those margins: the two clocks are read at different points of the
    same transmit call, and an interrupt between them on a TCG vCPU makes
    one arrival late. Its two gaps change by as much either way, but far
    more gaps lie just above half the nominal gap than just below it, so
    the link counts more close frames than were recorded: 12 to 28 % more,
    up to 1.4 % of the frames, in 15 runs on an idle lab host (as many with
    the host-timed runs before as with the counted ones). The records'
    percentiles are bucket midpoints (buckets a few % wide), and p99.9 of
    18000 gaps is the 18th longest: where the tail is steep, one gap more
    or less beyond it moves it by a quarter (CI: 584 us on the link, 468 us
    in the records; an idle host: 246 us, 178-198 us). A loaded host spoils
    an attempt in ways no margin covers (CI: a longest micro-burst of 279
    frames on the link, 153 in the records, at 12,000 fps: 23 ms of
    arrivals held back): a rate that disagrees is measured again, up to 3
    times (host_load.py), only if the run itself shows a held vCPU, a gap
    of LINK_STALL_MS or more between two departures or two arrivals. A
    disagreement without one fails at once."""
    from rfc2544.engine.calibration_link import LinkPacing
    from rfc2544.lab.topology import CALIBRATION_LINK
    host = tester.inventory.hosts["tester"]
    host.calibration_link = CALIBRATION_LINK       # wired in the lab, left out of its inventory
    link = LinkPacing(tester, host)
    recorded = []
    send = link._link().send_paced

    def send_and_keep(*args, **kw):
        out = send(*args, **kw)
        recorded.append(out[2])
        return out
    link._link().send_paced = send_and_keep
    for fps in (3000, 12000):
        def attempt():
            _, _, arrivals = link.measure(64, fps, 1.5)
            return arrivals, recorded[-1]

        def held_back(out):
            # measured again only when a vCPU was seen held back, never
            # because the comparison itself failed
            reason, stall = link_disagrees(fps, *out), stalled(*out)
            return reason and stall and f"{reason}; {stall}"
        (arrivals, departures), spoiled = until_clean(attempt, held_back)
        print(fps, "arrivals", arrivals, "departures", departures, "spoiled attempts", spoiled)
        assert (arrivals.source, departures.source) == ("calibration link", "generator")
        assert not link_disagrees(fps, arrivals, departures), spoiled
    # the trials' devices come back after the link's
    r = tester.run_trial(TrialSpec(frame_size=64, load_fps=2000, duration_s=1.0))
    assert r.tx_frames == r.rx_frames == 2000, r.notes


def test_calibrate_counts_the_receiver_on_the_calibration_link(tester):
    """`calibrate`'s receive ceiling on the lab's cal0 -> cal1 veth pair:
    a tx port's share of the 64 B send ceiling offered on the link,
    counted by pgrx on cal1.
    Every frame counted crossed the link (cal1's own rx counter grew by at
    least as many), no more were counted than sent, the side named is the
    one the interfaces' own counters say (pgrx counted less than 99.9 % of
    what left cal0: the receiver; else the sender), and the
    trials' devices come back afterwards. Which side bounds is not
    asserted: on veth the receive runs on the sending vCPU, and TCG
    decides how fast either is."""
    from rfc2544.engine.calibrate import calibrate, receive_ceiling
    from rfc2544.lab.topology import CALIBRATION_LINK
    host = tester.inventory.hosts["tester"]
    saved = host.calibration_link
    host.calibration_link = CALIBRATION_LINK       # wired in the lab, left out of its inventory
    stats = ("cat /sys/class/net/cal0/statistics/tx_packets /sys/class/net/cal1/statistics/rx_packets")
    try:
        ceilings = calibrate(tester.inventory, [64], 1.0, tester=tester)
        before = [int(v) for v in tester.session("tester").run(stats, check=True)[1].split()]
        rows = receive_ceiling(tester, ceilings, duration=1.0)
        after = [int(v) for v in tester.session("tester").run(stats, check=True)[1].split()]
    finally:
        host.calibration_link = saved
    print(ceilings, rows, before, after)
    (row,) = rows
    sent, received = row["sent_fps"], row["received_fps"]
    ports = len({(p.tx_host, p.tx_port) for p in tester.plans})
    assert row["frame_size"] == 64 and row["ports"] == ports and row["offered_fps"] == round(ceilings[64] / ports)
    assert 0 < received <= sent * 1.0001 and row["received_frames"] <= row["sent_frames"]
    cal0_tx, cal1_rx = after[0] - before[0], after[1] - before[1]
    assert cal0_tx >= row["sent_frames"] and cal1_rx >= row["received_frames"] > 0, (cal0_tx, cal1_rx)
    # the witness is the link's own counter, not the row's share: what left
    # cal0 (its tx counter; the generator's count where cal0 also sent others)
    left = min(cal0_tx, row["sent_frames"])
    assert row["bound"] == ("receiver" if row["received_frames"] < 0.999 * left else "sender"), \
        (row, cal0_tx, cal1_rx)
    r = tester.run_trial(TrialSpec(frame_size=64, load_fps=2000, duration_s=1.0))
    assert r.tx_frames == r.rx_frames == 2000, r.notes


def link_disagrees(fps, arrivals, departures):
    """Why the link's arrivals disagree with the module's departure
    records of the same frames (test_the_calibration_link_sees_what_the_module_recorded),
    or None."""
    # (a loaded CI host sent 92 % of 12000 fps: the frame count is the point, not the rate)
    if not arrivals.frames == departures.frames > 1.0 * fps:
        return f"frames: {arrivals.frames} on the link, {departures.frames} recorded"
    # One late arrival inside a burst splits it: the official CI saw 76
    # frames on the link for 86 recorded (12,000 fps, a loaded host).
    if abs(arrivals.longest_micro_burst - departures.longest_micro_burst) > max(
            2, 0.15 * departures.longest_micro_burst):
        return (f"longest micro-burst: {arrivals.longest_micro_burst} on the link, "
                f"{departures.longest_micro_burst} recorded")
    if abs(arrivals.close_frames - departures.close_frames) > 0.02 * departures.frames:
        return f"close frames: {arrivals.close_frames} on the link, {departures.close_frames} recorded"
    low, high = gap_at(departures.hist, 0.9988)[0], gap_at(departures.hist, 0.9992)[1]
    # 30 % above: an idle lab host measured 246 us on the link, 178-198 us recorded, no stall
    if not 0.8 * low <= arrivals.p999_gap_ns <= 1.3 * high:
        return f"p99.9 gap: {arrivals.p999_gap_ns} ns on the link, recorded between {low} and {high} ns"
    return None


def stalled(arrivals, departures):
    """Evidence that the host held a vCPU back, apart from what the link and
    the records disagree on: a gap of LINK_STALL_MS or more between two
    departures or two arrivals (the reason), or None."""
    worst = max(arrivals.max_gap_ns, departures.max_gap_ns) / 1e6
    if worst >= LINK_STALL_MS:
        return (f"a gap of {worst:.1f} ms (departures {departures.max_gap_ns / 1e6:.1f}, "
                f"arrivals {arrivals.max_gap_ns / 1e6:.1f})")
    return None


def gap_at(hist, q):
    """The bucket [low, high] of a Spacing's histogram ([[low, high, count],
    ...]) that holds its gap at quantile `q` (the same rank rule as the
    Spacing's own percentiles)."""
    buckets = sorted(hist)
    rank = max(1, math.ceil(q * sum(c for _, _, c in buckets)))
    seen = 0
    for low, high, count in buckets:
        seen += count
        if seen >= rank:
            return low, high
    raise AssertionError(f"no gap at quantile {q} in {hist}")


def test_compare_in_tree_refuses_a_module_that_could_not_be_loaded_again(tester):
    """`calibrate --compare-in-tree` with our module loaded by insmod from
    /root, not installed: the swap is refused before anything is unloaded
    (test_ansible_lab.py compares with the module the playbooks installed)."""
    from rfc2544.engine.calibrate import in_tree_pacing
    from rfc2544.errors import InfraError
    from rfc2544.lab.topology import CALIBRATION_LINK
    tester.inventory.hosts["tester"].calibration_link = CALIBRATION_LINK
    with pytest.raises(InfraError, match="not installed under /lib/modules"):
        in_tree_pacing(tester, {64: 8000.0}, duration=0.5)
    assert tester.generator_name == "rfc2544_pktgen"


def route_check(inv, ipv6=False, bidirectional=False):
    """doctor's check of the DUT's routes to 256 networks (/24s, or /64s)
    for the lab's stream (and its reverse: a list of both checks)."""
    from rfc2544.engine.doctor import doctor
    prefix = "routes to 256 IPv6 networks" if ipv6 else "routes to 256 networks"
    checks = [(name, ok, detail) for name, ok, detail in doctor(inv, networks=256, ipv6=ipv6,
                                                                 bidirectional=bidirectional)
              if name.startswith(prefix)]
    if bidirectional:
        return checks
    (check,) = [(ok, detail) for _, ok, detail in checks]
    return check


@pytest.mark.parametrize("ipv6", [False, True], ids=["ipv4", "ipv6"])
def test_256_destination_networks_are_routed_by_the_dut(tlab, module_loaded, ipv6):  # noqa: F811
    """RFC 2544 section 12 (issue 31 item 2): a stream of 256 flows spread
    over destination networks sends each frame to the rx port's host part
    in a random one of 198.19.0.0/24 .. 198.19.255.0/24, or over IPv6 of
    2001:2:0:100::/64 .. 2001:2:0:1ff::/64 (module 1.5); the lab DUT routes
    all 256 toward rx0 (topology.network_routes), so nothing is lost and
    pgrx counts the stream exactly. With one of the 255 routes taken away,
    the frames to that network are lost, about 1/256 of them: the
    destinations did vary, and doctor --networks 256 (--ipv6) names it.
    The reverse stream's 256 networks (tx0's, 2001:2::/64 .. 2001:2:0:ff::/64)
    are routed too: doctor --bidirectional passes both directions.

      tester: tx0 ==veth== dut0 [netns dut: 198.19.K.0/24, 2001:2:0:K::/64 via rx0] dut1 ==veth== rx0
    """
    host = tlab.connect("tester")
    inv = inventory.load(tlab.inventory_path)
    tester = SSHTester(inv, waits=QUICK, poll_interval_s=0.3)
    size = 86 if ipv6 else 64
    spec = TrialSpec(frame_size=size, load_fps=2000, duration_s=2, flows=256, flow_spread="dst_networks", ipv6=ipv6)
    net, via = ("2001:2:0:14e::/64", "2001:2:0:100::1") if ipv6 else ("198.19.77.0/24", "198.19.0.1")
    checks = {}
    try:
        r = tester.run_trial(spec)
        assert (r.tx_frames, r.rx_frames, r.lost_frames) == (4000, 4000, 0), r.notes
        if ipv6:
            device = host.run("cat /proc/net/pktgen/tx0")[1]
            assert "max_daddr: 2001:2:0:1ff::1" in device and "IPDST_RND" in device, device
        checks["all routed"] = route_check(inv, ipv6)
        # both ways (direction: bi): each tester port's 256 networks are its own
        both = route_check(inv, ipv6, bidirectional=True)
        assert [name.rsplit(" ", 1)[-1] for name, _, _ in both] == \
            ["tester:tx0->tester:rx0", "tester:rx0->tester:tx0"] and all(ok for _, ok, _ in both), both
        host.run(tlab.dut_cmd(f"ip route del {net}"), check=True)
        try:
            checks["one missing"] = route_check(inv, ipv6)
            r = tester.run_trial(spec)
        finally:
            host.run(tlab.dut_cmd(f"ip route add {net} via {via} dev dut1"), check=True)
        print(f"one network unrouted: {r.lost_frames} of {r.tx_frames} lost; doctor: {checks}")
        assert r.tx_frames == 4000 and 1 <= r.lost_frames <= 5 * 4000 / 256, r.notes
        # doctor --networks 256 (--ipv6) saw the routes, then named the missing one
        assert checks["all routed"][0] and "out of dut1" in checks["all routed"][1], checks
        missing = "2001:2:0:14e::1" if ipv6 else "198.19.77.1"
        assert not checks["one missing"][0] and missing in checks["one missing"][1], checks
    finally:
        tester.stop_all()
        tester.close()
        host.close()


# What the DUT's ingress sees of the QinQ stream's bits: the outer tag's
# PCP by flower (the kernel moves the outer tag out of the frame; tc then
# classifies by the outer tag's protocol), the inner TCI whole by u32 at the
# network header (the inner tag once the outer is out): PCP 5, DEI 1, VID
# 100 = 0xb064. The first continues to the second.
WIRE_FILTERS = ("protocol 802.1ad pref 1 flower vlan_id 200 vlan_prio 3 vlan_ethtype 802.1q "
                "cvlan_id 100 cvlan_prio 5 action continue",
                "protocol 802.1ad pref 2 u32 match u16 0xb064 0xffff at 0 action pass")


def vlan_check(inv):
    """doctor's check of the DUT's VLAN devices for the lab's stream."""
    from rfc2544.engine.doctor import doctor
    (check,) = [(ok, detail) for name, ok, detail in doctor(inv) if name.startswith("VLAN tags at the DUT")]
    return check


def filter_hits(text):
    """Packets each of `tc -s -j filter show`'s filters passed, by pref."""
    import json
    hits = {}
    for f in json.loads(text):
        for a in f.get("options", {}).get("actions", []):
            hits[f["pref"]] = a["stats"]["packets"]
    return hits


def test_a_qinq_stream_is_sent_and_counted_with_its_tags(tlab, module_loaded):  # noqa: F811
    """A stream with `vlan: 100, svlan: 200` (issue 31 item 6), the inner
    tag's PCP 5 and DEI 1 and the outer's PCP 3: the frames leave tagged
    with those bits (counted by filters on the DUT's ingress), the DUT
    forwards them between its QinQ devices, and the suite's trial counts
    every one at the size it states, 64 B asked sent as 70 B (pgrx checks
    the length, tags included, through the VLAN devices the run adds on rx0
    and removes at close).

      tester: tx0 =[200/100]= dut0.200.100 [netns dut] dut1.200.100 =[200/100]= rx0 (rfs/rfv devices)
    """
    host = tlab.connect("tester")
    inv = inventory.load(tlab.inventory_path)
    s = inv.streams[0]
    s.tags = Tags(vlan=100, svlan=200, vlan_pcp=5, vlan_dei=1, svlan_pcp=3)
    tester = SSHTester(inv, waits=QUICK, poll_interval_s=0.3)
    try:
        before = vlan_check(inv)
        with dut_vlan(KmodVM(tlab, host, None), 100, svlan=200):
            during = vlan_check(inv)
            host.run(tlab.dut_cmd("tc qdisc add dev dut0 clsact"), check=True)
            for f in WIRE_FILTERS:
                host.run(tlab.dut_cmd(f"tc filter add dev dut0 ingress {f}"), check=True)
            size = wire.wire_frame_size(64, False, tester.frame_tags)
            r = tester.run_trial(TrialSpec(frame_size=size, load_fps=1000, duration_s=2))
            hits = filter_hits(host.run(tlab.dut_cmd("tc -s -j filter show dev dut0 ingress"))[1])
            rx = host.run("cat /proc/net/pktgen/pgrx")[1]
            device = host.run("cat /proc/net/pktgen/tx0")[1]
            made = host.run("ip -o link show | grep -oE ' rf[sv][0-9a-f]{8}@' || true")[1].split()
            tester.close()
            left = host.run("ip -o link show | grep -cE ' rf[sv][0-9a-f]{8}@' || true")[1].strip()
        assert size == 70 and tester.stream_labels[0]["svlan"] == 200
        assert tester.stream_labels[0]["vlan_pcp"] == 5
        # doctor reads the DUT's VLAN devices: none before, the QinQ stack during
        assert before == (False, "dut has no 802.1Q device of VLAN 100 on an 802.1ad device of VLAN 200 on dut0: "
                                 "it drops the stream's tagged frames (inventory/README.md, VLAN and QinQ tags)")
        assert during == (True, "dut takes the tags on dut0.200.100"), during
        assert (r.tx_frames, r.rx_frames, r.lost_frames) == (2000, 2000, 0), r.notes
        # the learning run's frame is the stream's too
        assert hits[1] >= 2000 and hits[1] == hits[2], hits
        assert "pkt_size=66 " in rx and " packets=2000 " in rx and "wrong_size=0" in rx, rx[:800]
        assert "vlan_id: 100  vlan_p: 5  vlan_cfi: 1" in device, device
        assert "svlan_id: 200  vlan_p: 3  vlan_cfi: 0" in device and "min_pkt_size: 66" in device, device
        # rx0's 802.1ad device and the 802.1Q one on it: only through them do
        # the frames reach pgrx, so all 2000 came in with both tags
        assert len(made) == 2, made
        assert left == "0", "the run's VLAN devices were not removed at close"
    finally:
        host.run(tlab.dut_cmd("tc qdisc del dev dut0 clsact"), check=False)
        tester.stop_all()
        tester.close()
        host.close()


def test_a_dut_that_pops_or_translates_the_tag_is_counted_at_what_arrives(tlab, module_loaded):  # noqa: F811
    """The DUT changes the tags (inventory `rx_vlan`): a router that takes
    the stream in on VLAN 100 and routes it out untagged (pop), then out on
    VLAN 200 (translate). The suite's trials count every frame at the length
    that arrives (128 B sent tagged: 124 B arrive popped, pgrx's pkt_size
    120 without FCS) and watch rx0 through the VLAN device of the tag that
    arrives, none for the popped frames.

      tester: tx0 =[100]= dut0.100 [netns dut] dut1 (or dut1.200) =[none (200)]= rx0
    """
    host = tlab.connect("tester")
    vm = KmodVM(tlab, host, None)
    seen = {}
    try:
        for out, rx_vlan in (((), "none"), ((200,), 200)):
            inv = inventory.load(tlab.inventory_path)
            s = inv.streams[0]
            s.tags = Tags(vlan=100, rx_vlan=UNTAGGED if rx_vlan == "none" else rx_vlan)
            tester = SSHTester(inv, waits=QUICK, poll_interval_s=0.3)
            try:
                with dut_vlan(vm, 100, out=out):
                    r = tester.run_trial(TrialSpec(frame_size=128, load_fps=1000, duration_s=2))
                    rx = host.run("cat /proc/net/pktgen/pgrx")[1]
                    made = host.run("ip -o link show | grep -oE ' rfv[0-9a-f]{8}@' || true")[1].split()
                    seen[rx_vlan] = (r, rx, made, dict(tester.stream_labels[0]))
            finally:
                tester.stop_all()
                tester.close()
        popped, translated = seen["none"], seen[200]
        assert (popped[0].tx_frames, popped[0].rx_frames, popped[0].lost_frames) == (2000, 2000, 0), popped[0].notes
        assert "pkt_size=120 " in popped[1] and " packets=2000 " in popped[1] and "wrong_size=0" in popped[1], \
            popped[1][:800]
        assert popped[2] == [] and popped[3]["rx_vlan"] == 0
        r = translated[0]
        assert (r.tx_frames, r.rx_frames, r.lost_frames) == (2000, 2000, 0), r.notes
        assert "pkt_size=124 " in translated[1] and " packets=2000 " in translated[1], translated[1][:800]
        # rx0's 802.1Q device of VLAN 200: only through it do the frames reach pgrx
        assert len(translated[2]) == 1 and translated[3]["rx_vlan"] == 200, translated
    finally:
        host.close()


def readme_hooks(title):
    """The rfc2544_trial_hooks of inventory/README.md's example under
    `title`: the test runs the documented commands themselves."""
    import re
    from pathlib import Path

    import yaml
    text = (Path(__file__).parents[2] / "inventory" / "README.md").read_text()
    part = text[text.index(title):]
    block = re.search(r"```yaml\n(.*?)```", part, re.S).group(1)
    return yaml.safe_load(block.replace("rfc2544_trial_hooks:", "", 1)
                          if block.lstrip().startswith("rfc2544_trial_hooks:") else block)


def test_broadcast_and_management_frames_reach_the_dut_beside_the_stream(tlab, module_loaded):  # noqa: F811
    """The profile's modifiers (RFC 2544 11.2 and 11.3, issue 31 item 5),
    with the README's filter (11.4) and routing-update (11.1) hooks on the
    DUT, as documented (`eth1` is the lab DUT's dut0):

      tester tx0 ==> dut0 [netns dut: UDP to 255.255.255.255:9 -> UdpIgnoredMulti,
             tx0@9990 broadcast 1 %      to 198.18.0.2:161 -> UdpNoPorts;
             tx0@9991 management 1/s     25 flower filters, route churn] dut1 ==> rx0

    The DUT's own UDP counters see every modifier frame the generator
    reports (plus the one each device sends in the learning run); the
    stream passes the filters and loses nothing, and pgrx sees nothing
    foreign (a router forwards neither kind). The hooks ran, the filters
    and the churn were there at the trial's end, and are gone after it."""
    from rfc2544.config.profile_model import Modifiers
    host = tlab.connect("tester")
    inv = inventory.load(tlab.inventory_path)
    filters = {k: [c.replace("eth1", "dut0") for c in v] for k, v in readme_hooks("On a Linux\nDUT, filters").items()}
    churn = readme_hooks("Routing updates: a route")
    inv.hosts["dut"].trial_hooks = {
        "pre": filters["pre"] + churn["pre"],
        "post": ["tc filter show dev dut0 ingress | grep -c 'src_ip 203.0.113'",
                 "kill -0 $(cat /run/rfc2544-route-churn.pid)"] + churn["post"] + filters["post"]}
    tester = SSHTester(inv, waits=QUICK, poll_interval_s=0.3, modifiers=Modifiers(broadcast_pct=1.0, management_fps=1.0))
    nstat = "ip netns exec dut nstat -az UdpNoPorts UdpIgnoredMulti | awk '/^Udp/ {print $1, $2}'"
    try:
        before = dict(line.split() for line in host.run(nstat)[1].splitlines())
        r = tester.run_trial(TrialSpec(frame_size=64, load_fps=2000, duration_s=3.0))
        after = dict(line.split() for line in host.run(nstat)[1].splitlines())
        rx = host.run("cat /proc/net/pktgen/pgrx")[1]
        # [e]: the pattern must not match the shell that runs pgrep
        left = host.run("ip netns exec dut sh -c 'ls /run/rfc2544-route-churn.pid; tc filter show dev dut0 ingress; "
                        "pgrep -f \"ip route replac[e] 192.0.2.0/24\"'", check=False)
    finally:
        tester.stop_all()
        tester.close()
        host.run("ip netns exec dut sh -c 'pkill -f \"ip route replac[e] 192.0.2.0/24\"; "
                 "rm -f /run/rfc2544-route-churn.pid; tc qdisc del dev dut0 ingress 2>/dev/null'", check=False)
        host.close()
    assert (r.tx_frames, r.rx_frames, r.lost_frames) == (6000, 6000, 0), r.notes
    # 1 % of 6000 over the 3 s, and one a second from 0 s: 0, 1 and 2 s
    assert r.modifier_frames == {"broadcast": 60, "management": 3}, r.notes
    learning = 1 if QUICK["learning_frames"] else 0
    seen = {k: int(after[k]) - int(before[k]) for k in after}
    assert seen == {"UdpIgnoredMulti": 60 + learning, "UdpNoPorts": 3 + learning}, (seen, r.notes)
    assert "foreign=0" in rx, rx[:600]
    assert [h.exit_status for h in r.hooks] == [0] * 6, r.hooks
    assert r.hooks[2].stdout.strip() == "25", r.hooks[2]       # every filter was in place
    assert left[0] != 0 and not left[1].strip(), left            # churn stopped, filters gone


# Two generators send one stream (issue 44), each on its own kpktgend
# thread, TX queue and stream id; the DUT impairs it with netem:
#
#   tx0@0 (kpktgend_0, queue 0) --+
#                                 +--> tx0 --veth--> [dut0 DUT dut1: netem] --veth--> rx0: pgrx
#   tx0@1 (kpktgend_1, queue 1) --+
#
# netem's own counters are the reference: its drops are the stream's loss,
# its extra copies the stream's duplicates.
# One impairment per trial: netem also drops some of its own duplicates
# (the copy is enqueued again and meets the loss), which no receiver sees.
TWO_GENERATOR_CASES = {"loss": "loss 2%", "duplication": "duplicate 2%", "reordering": "delay 2ms reorder 25% 50%"}
TWO_GENERATOR_ATTEMPTS = 3


def _netem_sent_dropped(tlab):  # noqa: F811
    host = tlab.connect("tester")
    try:
        out = host.run(tlab.dut_cmd("tc -s qdisc show dev dut1"))[1]
    finally:
        host.close()
    m = re.search(r"Sent \d+ bytes (\d+) pkt \(dropped (\d+)", out)
    return int(m.group(1)), int(m.group(2))


def _softnet_drops(tlab):  # noqa: F811
    host = tlab.connect("tester")
    try:
        text = host.run("cat /proc/net/softnet_stat")[1]
    finally:
        host.close()
    return sum(int(line.split()[1], 16) for line in text.splitlines() if line.strip())


def test_a_stream_of_two_generators_through_netem_is_counted_exactly(tlab, module_loaded):  # noqa: F811
    inv = inventory.load(tlab.inventory_path)
    spec = TrialSpec(frame_size=64, load_fps=3000, duration_s=2.0)
    seen = {}
    # no learning frames: netem's counters would count them too
    # every CPU asked for: each generator on a thread of its own (the default leaves CPU 1 to the DUT)
    with SSHTester(inv, waits={**QUICK, "learning_frames": 0}, generators=2, every_cpu=True) as t:
        for case, impairment in TWO_GENERATOR_CASES.items():
            for _ in range(TWO_GENERATOR_ATTEMPTS):
                backlog = _softnet_drops(tlab)
                host = tlab.connect("tester")
                try:
                    host.run(tlab.dut_cmd(f"tc qdisc replace dev dut1 root netem limit 100000 {impairment}"))
                    r = t.run_trial(spec)
                    sent, dropped = _netem_sent_dropped(tlab)
                    devices = {g: host.run(f"cat /proc/net/pktgen/tx0@{g}")[1] for g in (0, 1)}
                    threads = {n: host.run(f"cat /proc/net/pktgen/kpktgend_{n}")[1] for n in (0, 1)}
                finally:
                    host.run(tlab.dut_cmd("tc qdisc del dev dut1 root"), check=False)
                    host.close()
                # a stalled vCPU can overflow the tester's own backlog: not netem's doing
                if not r.tester_limited and _softnet_drops(tlab) == backlog:
                    break
            seen[case] = (r, sent, dropped, devices, threads)
    assert t.stream_labels == [{"tx": "tester:tx0", "rx": "tester:rx0", "generators": 2,
                                "cpus": [0, 1], "tx_queues": [0, 1]}]
    for case, (r, sent, dropped, devices, threads) in seen.items():
        assert not r.tester_limited, (case, r.notes)
        assert r.tx_frames == 6000, (case, r.notes)
        stream, = r.streams
        assert [g["tx_frames"] for g in stream.generators] == [3000, 3000], case
        # each generator on its own thread and TX queue, with its own stream id
        for g in (0, 1):
            assert f"stream_id: {g + 1}" in devices[g] and f"cur_queue_map: {g}" in devices[g], devices[g]
        # held 1 ms, then staggered by half the 1/1500 s gap (module 1.7)
        assert "start_offset: 1000000" in devices[0] and "start_offset: 1333333" in devices[1], devices
        assert all(("tx0@0" in threads[n]) != ("tx0@1" in threads[n]) for n in (0, 1)), threads
        duplicated = sent - (6000 - dropped)          # netem's Sent counts each copy
        assert stream.lost == dropped, (case, stream, dropped)
        assert stream.duplicates == duplicated, (case, stream, sent)
        assert stream.rx_frames == 6000 - dropped, case
        for g in stream.generators:        # the receiver's unique and lost agree per generator
            assert g["rx_frames"] == g["tx_frames"] - g["lost"], (case, g)
        if case == "loss":
            assert dropped > 0.005 * 6000 and duplicated == 0, (dropped, duplicated)
        elif case == "duplication":
            assert duplicated > 0.005 * 6000 and dropped == 0, (dropped, duplicated)
        else:
            assert dropped == 0 and duplicated == 0 and stream.duplicates == 0
            assert stream.out_of_order > 0.05 * 6000, stream


# ITU-T Y.1564 through the lab DUT: four services in VLAN 100 told apart by
# their PCP and DSCP, each policed on the DUT's ingress at its own
# CIR + EIR (packets/s: tc counts frames without FCS and tag). `data` is
# colour-aware: its yellow frames (DEI 1) are policed apart, at its EIR.
# `starved`'s policer sits below its CIR. Buckets of 0.1 s absorb the TCG
# tester's stalls and let 3.3 % more through over a 3 s step, within M
# (5 %); each policing step offers 12.5 % or more above CIR + EIR.
Y1564_SAC = {"flr_pct": 0.5, "ftd_ms": 50, "fdv_ms": 40, "avail_pct": 99}
Y1564_SERVICES = [
    {"name": "voice", "frame_size": 128, "pcp": 5, "dscp": 46, "cir_mbps": 1.0},
    {"name": "video", "frame_size": 1024, "pcp": 4, "dscp": 34, "cir_mbps": 2.0, "eir_mbps": 4.0},
    {"name": "data", "frame_size": 512, "pcp": 2, "dscp": 18, "cir_mbps": 2.0, "eir_mbps": 2.0,
     "colour_mode": "aware_dei"},
    {"name": "starved", "frame_size": 256, "pcp": 1, "dscp": 10, "cir_mbps": 2.0},
]
# (name, flower match or None for data's yellow, Mbit/s the DUT lets through, frame size)
Y1564_POLICERS = [("data-yellow", None, 2.0, 512), ("voice", "vlan_prio 5 vlan_ethtype ip ip_tos 0xb8/0xfc", 1.0, 128),
                  ("video", "vlan_prio 4 vlan_ethtype ip ip_tos 0x88/0xfc", 6.0, 1024),
                  ("data", "vlan_prio 2 vlan_ethtype ip ip_tos 0x48/0xfc", 2.0, 512),
                  ("starved", "vlan_prio 1 vlan_ethtype ip ip_tos 0x28/0xfc", 1.5, 256)]


def y1564_policers(vm, ingress):
    """The DUT's per-class policers on `ingress` (dut0: the tag is taken off
    into the frame's metadata before tc sees it)."""
    vm.dut(f"tc qdisc replace dev {ingress} clsact")
    for pref, (name, match, mbps, size) in enumerate(Y1564_POLICERS, 10):
        pps = round(mbps * 1e6 / (size * 8))
        police = f"action police pkts_rate {pps} pkts_burst {max(pps // 10, 10)} conform-exceed drop/ok"
        if match is None:       # yellow: the tag's DEI bit (0x1000) with VLAN 100
            vm.dut(f"tc filter add dev {ingress} ingress pref {pref} protocol 802.1q basic match "
                   f"'meta(vlan mask 0x1fff eq 0x1064)' {police}")
        else:
            vm.dut(f"tc filter add dev {ingress} ingress pref {pref} protocol 802.1q flower vlan_id 100 "
                   f"{match} {police}")


def police_hits(text):
    """pref -> frames its police action saw, from `tc -s filter show`."""
    hits, pref = {}, None
    for line in text.splitlines():
        m = re.search(r"\bpref (\d+)\b", line)
        if m:
            pref = int(m.group(1))
        m = re.search(r"Sent \d+ bytes (\d+) pkt", line)
        if m and pref is not None:
            hits[pref] = max(hits.get(pref, 0), int(m.group(1)))
    return hits


def test_y1564_services_are_judged_against_the_duts_class_policers(tlab, module_loaded, tmp_path):  # noqa: F811
    """Issue 58's configuration acceptance, the real module in the lab:
    every step of the three services inside their profiles passes, the
    policing steps see the received rate held at CIR + EIR, the colour-aware
    service's yellow frames the DUT drops do not count against its green
    SAC, and the service policed below its CIR fails the CIR step just above
    the policer by FLR. The frames leave with their PCP, DEI and DSCP.

      tester: tx0 =[100, PCP/DEI, DSCP]= dut0.100 [netns dut: tc police per class on dut0 ingress]
              dut1.100 =[100]= rx0
    """
    from rfc2544.cli.display import Display
    from rfc2544.config import profiles
    from rfc2544.procedures.runner import Runner, build_plan
    from rfc2544.results.file import Results
    from rfc2544.results.load import load_results
    from rfc2544.reports.render import render_html
    from rfc2544.y1564.services import parse, to_record
    services = parse({"defaults": {"sac": Y1564_SAC, "vlan": 100}, "services": Y1564_SERVICES})
    prof = profiles.validate({"name": "y1564-lab", "tests": ["y1564_configuration"], "frame_sizes": [64],
                              "waits": {"route_s": 0, "learning_s": 0.3, "residual_s": 0.5, "settle_s": 0.3},
                              "y1564_configuration": {"step_s": 3, "cir_steps_pct": [50, 80, 100],
                                                      "m_factor_pct": 5}})
    host = tlab.connect("tester")
    vm = KmodVM(tlab, host, None)
    tester = SSHTester(inventory.load(tlab.inventory_path), waits=QUICK, poll_interval_s=0.5)
    try:
        with dut_vlan(vm, 100):
            y1564_policers(vm, "dut0")
            results = Results.create(tmp_path / "run", prof, build_plan(prof, services=services), [], {},
                                     services=[to_record(s) for s in services])
            Runner(tester, prof, results, Display(quiet=True)).run()
            # text: iproute2's JSON for a basic filter's ematch is not valid JSON
            hits = police_hits(vm.dut("tc -s filter show dev dut0 ingress"))
    finally:
        vm.dut("tc qdisc del dev dut0 clsact", check=False)
        tester.stop_all()
        tester.close()
        host.close()
    # every class's filter matched: the frames left with their PCP, DSCP (and the yellow ones with DEI)
    assert all(hits.get(pref, 0) > 0 for pref in range(10, 10 + len(Y1564_POLICERS))), hits
    data = load_results(results.path)
    print("\n".join(f"{e['service']}: {s['label']} offered {s['offered_mbps']:.3f} ir {s['ir_mbps']:.3f} "
                    f"flr {s['flr_pct']:.3f} ftd {s['ftd_ms']} fdv {s['fdv_ms']} {s['verdict']} {s['failed']}"
                    for e in data["y1564_configuration"] for s in e["steps"]), hits)
    by_name = {e["service"]: e for e in data["y1564_configuration"]}
    steps = {name: {s["label"]: s for s in e["steps"]} for name, e in by_name.items()}
    for name in ("voice", "video", "data"):
        assert by_name[name]["verdict"] == "pass", (name, by_name[name]["steps"])
    # the policing steps: received held at CIR + EIR (within M), offered above it
    for name, cir_eir in (("voice", 1.0), ("video", 6.0), ("data", 4.0)):
        policing = steps[name]["Policing"]
        assert policing["offered_mbps"] >= cir_eir * 1.12
        assert cir_eir * 0.95 <= policing["ir_mbps"] <= cir_eir * 1.05, (name, policing)
    # colour-aware: the DUT dropped yellow frames (its yellow policer counted them), no green frame was lost
    aware = steps["data"]["Policing"]
    assert aware["yellow_mbps"] > 2.0 and aware["verdict"] == "pass" and hits.get(10, 0) > 0, (aware, hits)
    # the service policed at 1.5 Mbit/s under its CIR of 2: 50 % (1 Mbit/s) passes, 80 % (1.6) fails by FLR
    starved = steps["starved"]
    assert starved["CIR 50 %"]["verdict"] == "pass", starved["CIR 50 %"]
    assert starved["CIR 80 %"]["verdict"] == "fail" and [f["rule"] for f in starved["CIR 80 %"]["failed"]] == ["FLR"]
    assert by_name["starved"]["verdict"] == "fail" and "FLR" in by_name["starved"]["failed_rules"]
    html = render_html(data)
    assert "Service activation (ITU-T Y.1564)" in html and "FLR: lost" in html
