"""The frame on the wire is the frame in the report (issue 31 item 3).

The minimum sizes are checked against the module's own source (packet.c's
header geometry, rfcpg.h's PG_HDR_LEN), not only against constants of the
suite. Whole runs use the simulated DUT (rfc2544.sim.dut): no network; the
simulated DUT's capacity is in Mbit/s on the wire, so its NDR in frames/s
depends on the size the tester really sends."""
import json
import re
from pathlib import Path

import pytest

from rfc2544.cli.plan import plan_document, plan_text
from rfc2544.config import profiles
from rfc2544 import wire
from rfc2544.wire import Tags
from rfc2544.drivers import pktgen
from rfc2544.drivers.streams import device_configs
from rfc2544.model import TrialSpec, theoretical_max_fps
from rfc2544.procedures.runner import build_plan
from rfc2544.results.load import load_results
from rfc2544.reports.summary import throughput_rows
from rfc2544.sim import dut as simdut

from helpers_run import profile, start
from schema_check import assert_valid

KMOD = Path(__file__).resolve().parents[3] / "pktgen-kmod"
LINK = 1000.0


def test_the_minimum_sizes_follow_the_modules_header_geometry():
    header = re.search(r"#define\s+PG_HDR_LEN\s+(\d+)", (KMOD / "rfcpg.h").read_text())
    assert int(header.group(1)) == wire.TEST_HEADER
    source = (KMOD / "packet.c").read_text()
    # the geometry the module builds: Ethernet + tags + L3 + UDP, then at least the test header
    # (read loosely: the names of pg_build_skb's geometry step, not its layout)
    assert re.search(r"hdrlen = ETH_HLEN \+ tags \+ (pk->)?l3len \+ sizeof\(struct udphdr\);", source)
    assert re.search(r"if \((pk->)?datalen < PG_HDR_LEN\)", source)
    assert "ipv6 ? sizeof(struct ipv6hdr) : sizeof(struct iphdr)" in source
    assert (wire.min_frame_size(False), wire.min_frame_size(True)) == (64, 82)
    assert wire.ETHERNET_HEADER + wire.IPV4_HEADER + wire.UDP_HEADER + wire.TEST_HEADER + wire.FCS == 62
    assert wire.min_frame_size(True, tags=1) == 86 and wire.min_frame_size(True, tags=2) == 90
    assert wire.min_frame_size(False, tags=2) == 70
    assert [wire.wire_frame_size(s, True) for s in (0, 64, 78, 82, 128)] == [0, 82, 82, 82, 128]
    assert [wire.wire_frame_size(s, False) for s in (64, 128)] == [64, 128]


def test_the_generator_is_asked_for_the_size_sent():
    """With the size sent in the spec, pkt_size holds every header: the module pads nothing."""
    plan = type("P", (), {"device": "tx0", "dst_mac": "02:00:00:00:00:02", "src": lambda s, v: "2001:2::1",
                          "dst": lambda s, v: "2001:2::2", "tags": Tags(), "generators": 1, "sizes": (),
                          "dscp": None})()
    cfg, = device_configs([plan], TrialSpec(frame_size=82, load_fps=1000, duration_s=1, ipv6=True), [10], [1000])
    assert cfg.pkt_size == 78 == wire.min_frame_size(True) - wire.FCS
    imix, = device_configs([plan], TrialSpec(frame_size=0, load_fps=1000, duration_s=1, ipv6=True), [10], [1000])
    assert imix.imix == ((78, 7), (572, 4), (1514, 1))
    assert pktgen.imix_pkt_sizes(False) == pktgen.SIMPLE_IMIX == ((60, 7), (572, 4), (1514, 1))


def test_the_plan_sends_the_smallest_size_that_holds_the_headers_and_declares_it():
    prof = profile(tests=["throughput", "latency", "reset"], frame_sizes=[64, 128, "imix"], ip_versions=[4, 6])
    steps = build_plan(prof)
    v6 = [(s["test"], s["frame_size"], s.get("requested_frame_size")) for s in steps if s["ip_version"] == 6]
    assert v6 == [("throughput", 82, 64), ("throughput", 128, None), ("throughput", 0, None),
                  ("latency", 82, 64), ("latency", 128, None), ("latency", 0, None), ("reset", 82, 64)]
    assert all("requested_frame_size" not in s for s in steps if s["ip_version"] == 4)
    assert {s["unit"] for s in steps} >= {"throughput/ipv6/82", "throughput/ipv4/64"}
    devs = {d.code: d for d in profiles.deviation_records(prof)}
    raised = devs["frame_size_raised"]
    assert (raised.asked, raised.used) == ("64 B", "82 B") and raised.text.startswith("IPv6:")
    assert "82 B" in raised.text and "16-byte test header" in raised.text
    assert devs["imix_raised"].used == "7:4:1 of 82/576/1518"
    document = plan_document(prof)
    assert "frame_size_raised" in [d["code"] for d in document["deviations"]]
    text = plan_text(document)
    assert "82  v6  (64 B asked: the headers need 82 B)" in text
    assert "IPv6: 64 B cannot hold" in text


def test_sizes_asked_that_come_out_the_same_are_one_step():
    steps = build_plan(profile(tests=["throughput"], frame_sizes=[64, 78, 82, 128], ip_versions=[6]))
    assert [(s["frame_size"], s.get("requested_frame_size")) for s in steps] == [(82, None), (128, None)]
    raised = {d.code: d for d in profiles.deviation_records(
        profile(tests=["throughput"], frame_sizes=[64, 78, 82, 128], ip_versions=[6]))}["frame_size_raised"]
    assert raised.asked == "64 B, 78 B"


@pytest.fixture(scope="module")
def ipv6_run(tmp_path_factory):
    """IPv6 at 64 B asked against a DUT that forwards 1 Gbit/s on the wire:
    its NDR is 82-byte line rate, 1,225,490 frames/s, not 64-byte line rate."""
    sim = simdut.SimDUT(capacity_mbps=LINK)
    prof = profile(tests=["throughput", "latency"], frame_sizes=[64], ip_versions=[4, 6], link_mbps=LINK,
                   search={"method": "bisection", "resolution_pct": 0.5, "pdr_loss_pct": None})
    runner, results = start(tmp_path_factory.mktemp("v6") / "run", sim, prof)
    runner.run()
    return sim, results


def test_every_trial_is_sent_and_stated_at_the_size_on_the_wire(ipv6_run):
    sim, results = ipv6_run
    assert {size for size, ipv6 in sim.frames_sent if ipv6} == {82}
    assert {size for size, ipv6 in sim.frames_sent if not ipv6} == {64}
    for t in results.data["trials"]:
        if t["ip_version"] == 6:
            assert (t["frame_size"], t["requested_frame_size"], t["spec"]["frame_size"]) == (82, 64, 82)
            assert t["load_pct"] == pytest.approx(t["load_fps"] * 100 / theoretical_max_fps(82, LINK))
        else:
            assert t["frame_size"] == 64 and "requested_frame_size" not in t


def test_the_trials_csv_has_both_sizes(ipv6_run):
    import csv
    _, results = ipv6_run
    path, *_ = results.to_csv(results.dir / "trials-test.csv")
    rows = list(csv.DictReader(path.open()))
    v6 = [r for r in rows if r["ip_version"] == "6"]
    assert v6 and all((r["frame_size"], r["requested_frame_size"]) == ("82", "64") for r in v6)
    assert all(r["requested_frame_size"] == "" for r in rows if r["ip_version"] == "4")


def test_every_rate_is_computed_from_the_size_sent(ipv6_run):
    _, results = ipv6_run
    rows = {r["ip_version"]: r for r in results.data["throughput"]}
    v6, v4 = rows[6], rows[4]
    line82 = LINK * 1e6 / ((82 + 20) * 8)
    assert v6["frame_size"] == 82 and v6["requested_frame_size"] == 64
    assert v6["theoretical_max_fps"] == pytest.approx(line82)
    assert v6["ndr_fps"] == pytest.approx(line82, rel=0.01)       # the DUT carries 82-byte line rate
    assert v6["pct_of_max"] == pytest.approx(v6["ndr_fps"] * 100 / line82) and v6["pct_of_max"] > 99
    assert v6["mbps"] == pytest.approx(v6["ndr_fps"] * 82 * 8 / 1e6)
    assert v6["line_mbps"] == pytest.approx(v6["ndr_fps"] * 102 * 8 / 1e6) and v6["line_mbps"] <= LINK
    assert v4["frame_size"] == 64 and "requested_frame_size" not in v4
    assert v4["theoretical_max_fps"] == pytest.approx(LINK * 1e6 / (84 * 8))
    lat = {r["ip_version"]: r for r in results.data["latency"]}
    assert (lat[6]["frame_size"], lat[6]["requested_frame_size"]) == (82, 64)
    assert results.data["schema_minor"] >= 1
    # a module-scoped run is saved before conftest's per-test schema check is in place: check here
    assert_valid(json.loads(results.path.read_text()), "IPv6 run")
    assert "frame_size_raised" in [d["code"] for d in results.data["deviations"]]


def test_the_report_shows_the_size_on_the_wire(ipv6_run):
    _, results = ipv6_run
    data = load_results(results.path)
    rows = {r["ip_version"]: r for r in throughput_rows(data)}
    assert rows[6]["label"] == "82 B (64 B asked) IPv6"
    assert rows[6]["pct_of_max"] > 99
    from rfc2544.reports.render import render_html
    page = render_html(data)
    assert "82 B (64 B asked) IPv6" in page and "sent as 82 B frames" in page
    # the report's own check counts the size asked: 64 B was tested, 82 B is no odd size
    from rfc2544.reports import checks
    found = dict(checks.detected_deviations(data))
    assert "frame_sizes_odd" not in found
    assert found["frame_sizes_missing"].startswith("frame sizes 128, 256,")     # 64 B counts as tested


def test_an_older_file_is_shown_at_the_size_the_generator_sent(ipv6_run, tmp_path):
    """A file from before schema_minor 1 said 64 B for the 82 B frames sent:
    the report shows 82 B, recomputes its rates and says why."""
    _, results = ipv6_run
    old = json.loads(results.path.read_text())
    del old["schema_minor"]
    old["conditions"]["link_speed_mbps"] = LINK      # what `rfc2544 run` records (the helper records none)
    for section in ("plan", "trials", "throughput", "latency"):
        for entry in old[section]:
            if entry.get("requested_frame_size"):
                entry["frame_size"] = entry.pop("requested_frame_size")
    for row in old["throughput"]:
        if row["ip_version"] == 6:      # what the old writer computed: 64-byte figures
            row["theoretical_max_fps"] = theoretical_max_fps(64, LINK)
            row["pct_of_max"] = row["fps"] * 100 / row["theoretical_max_fps"]
    path = tmp_path / "results.json"
    path.write_text(json.dumps(old))
    data = load_results(path)
    rows = {r["ip_version"]: r for r in throughput_rows(data)}
    assert (rows[6]["frame_size"], rows[6]["requested_frame_size"]) == (82, 64)
    assert rows[6]["pct_of_max"] > 99 and rows[6]["theoretical_max_fps"] == pytest.approx(LINK * 1e6 / 816)
    assert rows[4]["frame_size"] == 64 and not rows[4].get("requested_frame_size")
    assert any(d.get("code") == "frame_size_raised" and "this file" in d["text"] for d in data["deviations"])


def test_the_progress_line_names_the_size_sent_and_the_size_asked(tmp_path):
    """`rfc2544 run`'s step line: the size on the wire first, the one asked beside it."""
    import io
    from rfc2544.cli.display import Display
    out = io.StringIO()
    display = Display(stream=out, live=False)
    display._profile = profile(tests=["throughput"], frame_sizes=[64], ip_versions=[6])
    display.step({"test": "throughput", "frame_size": 82, "requested_frame_size": 64, "ip_version": 6})
    display.step({"test": "throughput", "frame_size": 64, "ip_version": 4})
    assert out.getvalue().splitlines() == ["== throughput 82 B (64 B asked) IPv6", "== throughput 64 B IPv4"]
