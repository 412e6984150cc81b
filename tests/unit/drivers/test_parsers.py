"""Parsers against REAL output captured in the lab.

tests/data/captured/*.txt were written by tests/data/captured/capture.py on
the lab's tester VM (Debian 12, 6.1.0-50-amd64, QEMU TCG): `intree-*` with
the in-tree pktgen, `module-*` with our rfc2544_pktgen. The pgrx tests that
have no capture yet use the documented example (docs/pgrx-receiver.md, the
format contract), marked as such.
"""
from pathlib import Path

import pytest

from rfc2544.drivers import counters, pgrx, pktgen, probe
from rfc2544.drivers.facts import parse_facts
from rfc2544.errors import InfraError

CAPTURED = Path(__file__).resolve().parents[2] / "data" / "captured"


def captured(name):
    return (CAPTURED / name).read_text()


def test_intree_device_configured():
    st = pktgen.parse_device(captured("intree-device-configured.txt"))
    assert st.params["count"] == "2000"
    assert st.params["min_pkt_size"] == "60" and st.params["max_pkt_size"] == "60"
    assert st.params["delay"] == "1000000"          # ratep 1000
    assert st.params["dst_mac"] == "02:00:00:18:00:02"
    assert st.params["src_mac"] == "02:00:00:18:00:01"
    assert st.params["dst_min"] == "198.19.0.1" and st.params["src_max"] == "198.18.0.1"
    assert st.params["ifname"] == "tx0"
    assert st.flags == []
    assert st.pkts_sofar == 0 and st.errors == 0
    assert st.result_text == "OK: Clearing counters."
    assert st.result_ok and not st.finished


def test_intree_device_running():
    st = pktgen.parse_device(captured("intree-device-running.txt"))
    assert st.result_text == "Starting"
    assert not st.finished
    assert 0 < st.pkts_sofar < 2000


def test_intree_device_finished():
    st = pktgen.parse_device(captured("intree-device-finished.txt"))
    assert st.finished
    run = st.run
    assert run.packets == 2000 and st.pkts_sofar == 2000
    assert run.usec == 2001560 and run.c_usec == 252209 and run.d_usec == 1749351
    assert run.pkt_bytes == 60 and run.frags == 0 and run.errors == 0
    assert run.pps == 999 and run.bps == 479520
    assert run.elapsed_s == pytest.approx(2.00156)
    assert st.current["started"].endswith("us") and st.current["stopped"].endswith("us")


def test_kmod_tx_dropped_parsed():
    """rfc2544_pktgen appends tx_dropped (frames its own driver dropped) to
    the Current and Result lines; the in-tree format has neither."""
    text = ("Params: count 300  min_pkt_size: 64  max_pkt_size: 64\n"
            "Current:\n     pkts-sofar: 250  errors: 50  tx_dropped: 50\n"
            "Result: OK: 60000(c60000+d0) usec, 250 (64byte,0frags)\n"
            "  4166pps 2Mb/sec (2132992bps) errors: 50  tx_dropped: 50\n")
    st = pktgen.parse_device(text)
    assert st.tx_dropped == 50 and st.errors == 50 and st.pkts_sofar == 250
    assert st.run.tx_dropped == 50 and st.run.errors == 50 and st.run.packets == 250
    intree = pktgen.parse_device(captured("intree-device-finished.txt"))
    assert intree.tx_dropped is None and intree.run.tx_dropped == 0


def test_intree_device_ipv6():
    st = pktgen.parse_device(captured("intree-device-ipv6.txt"))
    assert st.flags == ["IPV6"]
    assert st.params["saddr"] == "2001:2::1" and st.params["daddr"] == "2001:2:0:1::1"
    assert st.params["min_saddr"] == "::"       # '::' is a value, not a key
    assert st.current["cur_daddr"] == "2001:2:0:1::1"
    assert st.result_text == "OK: rate=1000"


def test_intree_thread_and_banner():
    th = pktgen.parse_thread(captured("intree-kpktgend_0.txt"))
    assert th.stopped == ["tx0"] and th.running == []
    assert th.result == "OK: add_device=tx0"
    banner, version = pktgen.parse_banner(captured("intree-pgctrl.txt"))
    assert banner.startswith("Packet Generator") and version == "2.75"


def test_device_parser_ignores_unknown_lines():
    st = pktgen.parse_device("Params: count 5  min_pkt_size: 60\n     new_thing: 7\nweird line\nResult: Idle\n")
    assert st.params == {"count": "5", "min_pkt_size": "60", "new_thing": "7"}
    assert st.result_text == "Idle" and not st.finished and st.pkts_sofar is None


README_EXAMPLE = """pgrx version=6 enabled=1 dev=rx0 ifindex=5 statistics=time action=drop pkt_size=60 streams=1 streams_dropped=0 declared=1 foreign=7
cpu id=0 packets=9901 bytes=633664 first_ns=1732233600000000000 last_ns=1732233600990000000
cpu id=1 packets=0 bytes=0 first_ns=0 last_ns=0
total id=all packets=9901 bytes=633664 first_ns=1732233600000000000 last_ns=1732233600990000000
stream src=198.18.0.1 packets=9901 bytes=633664 seq_max=10000 lost=99 ooo=0 dup=0 old=0
invalid bad_len=3 bad_csum=2 bad_ts=1 seq_jump=4 wrong_size=5
stat name=latency n=9901 skipped=0 min=1980000 max=2150000 mean=2003411.250 var=120033 sum=19835775086 sumsq=39740000000000000
stat name=interarrival n=9900 skipped=0 min=90000 max=210000 mean=100000.101 var=4000 sum=990001000 sumsq=99000000000000
stat name=jitter n=9900 skipped=0 min=0 max=30000 mean=1200.000 var=900 sum=11880000 sumsq=23000000000
percentile name=latency n=9901 p50=2002944 p90=2011136 p99=2043904 p999=2117632 p9999=2150000
hist name=latency low=1978368 high=1986559 count=3
end
Result: OK: statistics=time
"""


def test_pgrx_readme_example():
    """The documented example (docs/pgrx-receiver.md, format contract v6)."""
    st = pgrx.parse(README_EXAMPLE)
    assert st.version == 6 and st.enabled and st.dev == "rx0" and st.statistics == "time" and st.pkt_size == 60
    assert (st.declared, st.foreign) == (1, 7)
    assert st.devs == ["rx0"] and pgrx.parse(V4_EXAMPLE.replace("version=4", "version=3")).version == 3
    v4 = pgrx.parse(V4_EXAMPLE)
    assert v4.version == 4 and (v4.declared, v4.foreign) == (0, 0) and v4.total_packets == st.total_packets
    assert (st.invalid.bad_len, st.invalid.bad_csum, st.invalid.bad_ts, st.invalid.seq_jump,
            st.invalid.wrong_size) == (3, 2, 1, 4, 5)
    assert st.invalid.total == 15
    assert st.total_packets == 9901 and len(st.cpus) == 2
    s = st.stream("198.18.0.1")
    assert s.unique == 9901 and s.lost == 99 and s.seq_max == 10000
    lat = st.stats["latency"]
    assert lat.n == 9901 and lat.mean == pytest.approx(2003411.25) and lat.stddev == pytest.approx(346.45, abs=0.01)
    assert st.percentiles["latency"]["p999"] == 2117632
    assert st.hist[0].count == 3
    assert st.result == "OK: statistics=time"
    assert not st.is_zero


V4_EXAMPLE = README_EXAMPLE.replace("version=6", "version=4").replace(" declared=1 foreign=7", "")
V2_EXAMPLE = V4_EXAMPLE.replace("version=4", "version=2").replace(" pkt_size=60", "").replace(
    " wrong_size=5", "")
V1_EXAMPLE = V2_EXAMPLE.replace("version=2", "version=1").replace(
    "invalid bad_len=3 bad_csum=2 bad_ts=1 seq_jump=4\n", "")


def test_pgrx_format_v2_still_parses():
    """A module of format v2 (before pkt_size): no frame length known, no
    frames of another length counted."""
    st = pgrx.parse(V2_EXAMPLE)
    assert st.version == 2 and st.pkt_size is None and st.invalid.wrong_size == 0 and st.invalid.total == 10


def test_pgrx_format_v1_still_parses():
    """A module of format v1 (before the `invalid` record): same figures,
    no invalid frames known."""
    st = pgrx.parse(V1_EXAMPLE)
    assert st.version == 1 and st.total_packets == 9901 and st.stream("198.18.0.1").lost == 99
    assert st.invalid.total == 0


@pytest.mark.parametrize("broken,match", [
    (README_EXAMPLE.replace("version=6", "version=7"), "version 7"),
    (README_EXAMPLE.replace(" foreign=7", ""), "fields"),
    (V4_EXAMPLE.replace("streams_dropped=0", "streams_dropped=0 declared=0 foreign=0"), "fields"),
    (README_EXAMPLE.replace("invalid bad_len=3 bad_csum=2 bad_ts=1 seq_jump=4 wrong_size=5\n", ""),
     "without its 'invalid'"),
    (README_EXAMPLE.replace(" wrong_size=5", ""), "fields"),
    (README_EXAMPLE.replace(" pkt_size=60", ""), "fields"),
    (V2_EXAMPLE.replace(" seq_jump=4", " seq_jump=4 wrong_size=0"), "fields"),
    (README_EXAMPLE.replace("version=6 ", "enabled=1 version=6 "), "'version=' first"),
    (V1_EXAMPLE.replace("end\n", "invalid bad_len=0 bad_csum=0 bad_ts=0 seq_jump=0\nend\n"), "in format v1"),
    (README_EXAMPLE.replace("end\n", ""), "without 'end'"),
    (README_EXAMPLE.replace(" ooo=0", ""), "fields"),
    (README_EXAMPLE.replace("lost=99", "lost=-1"), "unsigned"),
    (README_EXAMPLE.replace("streams=1", "streams=2"), "2 streams"),
    (README_EXAMPLE.replace("cpu id=1", "gpu id=1"), "unknown record"),
    ("", "no 'pgrx' header"),
])
def test_pgrx_rejects_what_is_not_its_format(broken, match):
    with pytest.raises(InfraError, match=match):
        pgrx.parse(broken)


def test_hist_percentiles_merge():
    b = [pgrx.HistBucket(10, 10, 500), pgrx.HistBucket(20, 21, 499), pgrx.HistBucket(1000, 1007, 1)]
    assert pgrx.percentile_from_hist(b, 0.5) == 10
    assert pgrx.percentile_from_hist(b, 0.999) == 20.5       # rank 999 of 1000
    assert pgrx.percentile_from_hist(b, 1.0) == 1003.5
    assert pgrx.percentile_from_hist(b, 1.0, hi=1002) == 1002
    assert pgrx.percentile_from_hist([], 0.5) is None


def test_counters_snapshot_delta():
    files = {"/sys/class/net/rx0/statistics/rx_packets": "1500", "/sys/class/net/rx0/statistics/rx_bytes": "96000"}
    a = counters.parse_reads(files, ["rx0"])
    b = counters.parse_reads({**files, "/sys/class/net/rx0/statistics/rx_packets": "2500"}, ["rx0"])
    assert b.delta(a) == {"rx0": {"rx_packets": 1000, "rx_bytes": 0}}
    with pytest.raises(InfraError):
        counters.parse_reads({"/sys/class/net/rx0/statistics/rx_packets": "x"}, ["rx0"])
    with pytest.raises(InfraError):
        counters.parse_reads({}, ["rx0"])


def test_probe_parse():
    pr = probe.parse_probe("pgctrl Packet Generator for packet performance testing. Version: 2.75\n"
                           "thread 1\nthread 0\n")
    assert pr.pgctrl and not pr.pgrx and pr.threads == [0, 1] and pr.version == "2.75"


def test_facts_parse():
    text = ("kernel 6.1.0-50-amd64\ncpu QEMU TCG CPU version 2.5+\ncpus 2\ngovernor powersave\n"
            "irqbalance active\n@nic tx0\ndriver: veth\nversion: 1.0\nfirmware-version: \n"
            "speed: 10000\nmtu: 1500\ntxqueuelen: 1000\n@nic eth1\nsysfs-driver: e1000e\nspeed: -1\n")
    f = parse_facts(text)
    assert f["kernel"] == "6.1.0-50-amd64" and f["cpus"] == 2
    assert f["nics"][0] == {"name": "tx0", "driver": "veth", "firmware": "", "speed_mbps": 10000,
                            "driver_version": "1.0", "mtu": 1500, "txqueuelen": 1000}
    assert f["nics"][1]["driver"] == "e1000e" and f["nics"][1]["speed_mbps"] is None
    assert any("governor" in h for h in f["hints"]) and any("irqbalance" in h for h in f["hints"])


# ---- our module (rfc2544_pktgen 1.0), same capture script ----

def test_module_device_files_parse_like_the_intree_ones():
    st = pktgen.parse_device(captured("module-device-finished.txt"))
    assert st.finished and st.run.packets == 2000 and st.pkts_sofar == 2000
    assert st.run.elapsed_s == pytest.approx(1.999309)
    running = pktgen.parse_device(captured("module-device-running.txt"))
    assert running.result_text == "Starting" and 0 < running.pkts_sofar < 2000
    v6 = pktgen.parse_device(captured("module-device-ipv6.txt"))
    assert v6.flags == ["IPV6"] and v6.result_text == "OK: ratep=1000"
    banner, version = pktgen.parse_banner(captured("module-pgctrl.txt"))
    assert "rfc2544_pktgen 1.0" in banner and version == "2.75"


def test_module_pgrx_capture():
    st = pgrx.parse(captured("module-pgrx-script.txt"))
    assert st.enabled and st.dev == "rx0" and st.statistics == "time" and st.action == "drop"
    assert st.total_packets == 2000 and sum(c["packets"] for c in st.cpus) == 2000
    s = st.stream("198.18.0.1")
    assert (s.packets, s.seq_max, s.lost, s.ooo, s.dup, s.unique) == (2000, 2000, 0, 0, 0, 2000)
    lat = st.stats["latency"]
    assert lat.n == 2000 and lat.min <= lat.mean <= lat.max
    assert lat.mean == pytest.approx(lat.sum / lat.n, abs=0.001)
    assert sum(b.count for b in st.hist) == lat.n
    assert st.result == "OK: statistics=time"


def test_hist_percentiles_agree_with_the_modules_own():
    """Our histogram percentile (used to merge receivers) reproduces the
    module's percentile line on real data."""
    st = pgrx.parse(captured("module-pgrx-script.txt"))
    lat = st.stats["latency"]
    for key, q in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p999", 0.999), ("p9999", 0.9999)):
        ours = pgrx.percentile_from_hist(st.hist, q, lat.min, lat.max)
        assert int(ours) == st.percentiles["latency"][key], key


def test_sending_time_survives_a_later_write():
    """A write after the run replaces the Result line (the IPv6 capture was
    read after `ratep`); Current's started/stopped still give the time."""
    st = pktgen.parse_device(captured("intree-device-ipv6.txt"))
    assert st.run is None
    done = pktgen.parse_device(captured("intree-device-finished.txt"))
    assert st.elapsed_s == pytest.approx(done.elapsed_s, abs=1e-5)   # Result rounds to whole us
    running = pktgen.parse_device(captured("intree-device-running.txt"))
    assert 0 < running.elapsed_s < done.elapsed_s          # while running: up to now
    assert pktgen.parse_device(captured("intree-device-configured.txt")).elapsed_s is None
