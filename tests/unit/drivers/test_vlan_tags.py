"""VLAN and QinQ tags per stream (issue 31 item 6): the inventory's `vlan`
and `svlan`, the generator's vlan_id/svlan_id, frame sizes that count the
tags, and the VLAN devices that let pgrx see a tagged stream. The trials run
against the simulated host (pktgen_sim.py, simulated); the module's
receiving of tagged frames is checked in the lab (test_kmod_rx.py)."""
import pytest

from pktgen_sim import SimKernel
from sim_session import SimSession
from rfc2544.config import inventory, profiles
from rfc2544 import wire
from rfc2544.wire import Tags
from rfc2544.drivers import pktgen, streams, vlan
from rfc2544.engine.tester import SSHTester
from rfc2544.errors import BadInput
from rfc2544.model import TrialSpec
from rfc2544.procedures.runner import build_plan

from test_tester_sim import FAST, INVENTORY


def load(tmp_path, *streams):
    path = tmp_path / "inv.yml"
    path.write_text(INVENTORY.format(streams="\n".join(f"      - {s}" for s in streams)))
    return inventory.load(path)


def test_the_inventory_takes_a_tag_or_two_per_stream(tmp_path):
    inv = load(tmp_path, '{tx: "tester:tx0", rx: "tester:rx0", vlan: 100}',
               '{tx: "tester:tx1", rx: "tester:rx0", vlan: 100, svlan: 200}')
    assert [(s.tags.vlan, s.tags.svlan, s.tags.count) for s in inv.streams] == [(100, None, 1), (100, 200, 2)]
    # the reverse stream of direction: bi keeps its tags
    reverse = streams.stream_ends(inv, bidirectional=True)[2:]
    assert [(s.tx_port, s.rx_port, s.tags.vlan, s.tags.svlan) for s in reverse] == [
        ("rx0", "tx0", 100, None), ("rx0", "tx1", 100, 200)]
    plans = streams.plan_streams(inv)
    assert [(p.tags.vlan, p.tags.svlan, p.tags.count) for p in plans] == [(100, None, 1), (100, 200, 2)]
    assert streams.frame_tags(plans) == 2 and streams.frame_tags(plans[:1]) == 1


@pytest.mark.parametrize("fields, message", [
    ("vlan: 0", "must be a VLAN id, 1 to 4094, not 0"),
    ("vlan: 4095", "must be a VLAN id, 1 to 4094, not 4095"),
    ("vlan: '100'", "must be a VLAN id, 1 to 4094, not '100'"),
    ("vlan: true", "must be a VLAN id"),
    ("svlan: 200", r"svlan: an outer \(802.1ad\) tag needs the inner one: give 'vlan' too"),
    ("vlan_id: 100", r"rfc2544_streams\[0\].vlan_id: unknown field \(known: tx, rx, vlan, svlan, vlan_pcp, vlan_dei, svlan_pcp, svlan_dei, rx_vlan, rx_svlan\)"),
])
def test_bad_tags_are_refused_with_where_they_are(tmp_path, fields, message):
    with pytest.raises(BadInput, match=message):
        load(tmp_path, f'{{tx: "tester:tx0", rx: "tester:rx0", {fields}}}')


def test_the_generator_writes_the_inner_tag_first_and_verifies_both():
    cfg = pktgen.DeviceConfig(device="tx0", count=10, dst_mac="52:54:00:00:00:02", src_ip="198.18.0.1",
                              dst_ip="198.19.0.1", pkt_size=66, tags=Tags(vlan=100, svlan=200))
    cmds = cfg.commands()
    assert cmds.index("vlan_id 100") < cmds.index("svlan_id 200") < cmds.index("clear_counters")
    exp = pktgen.expected_params(cfg)
    assert (exp["vlan_id"], exp["svlan_id"]) == ("100", "200")
    untagged = pktgen.DeviceConfig(device="tx0", count=10, dst_mac="52:54:00:00:00:02", src_ip="198.18.0.1",
                                   dst_ip="198.19.0.1", pkt_size=60)
    assert not [c for c in untagged.commands() if "vlan" in c] and "vlan_id" not in pktgen.expected_params(untagged)
    with pytest.raises(BadInput, match="needs the inner one"):
        pktgen.DeviceConfig(device="tx0", count=10, dst_mac="52:54:00:00:00:02", src_ip="198.18.0.1",
                            dst_ip="198.19.0.1", pkt_size=60, tags=Tags(svlan=200)).commands()
    with pytest.raises(BadInput, match="VLAN id"):
        pktgen.DeviceConfig(device="tx0", count=10, dst_mac="52:54:00:00:00:02", src_ip="198.18.0.1",
                            dst_ip="198.19.0.1", pkt_size=60, tags=Tags(vlan=4095)).commands()


def test_sizes_too_small_for_the_tags_are_raised_and_declared():
    prof = profiles.validate({**dict(profiles.load("quick")), "frame_sizes": [64, 68, 128, "imix"],
                              "ip_versions": [4, 6]}, "test")
    plan_sizes = {(s["ip_version"], s["frame_size"], s.get("requested_frame_size"))
                  for s in build_plan(prof, tags=1) if s["test"] == "throughput"}
    # IPv4 with one tag needs 66 B (14 + 4 + 20 + 8 + 16 + FCS), IPv6 86 B; 68 B holds the tag
    assert {(4, 66, 64), (4, 68, None), (4, 128, None), (6, 86, 64), (6, 128, None)} <= plan_sizes
    assert (4, 64, None) not in plan_sizes
    qinq = {(s["ip_version"], s["frame_size"]) for s in build_plan(prof, tags=2) if s["test"] == "throughput"}
    assert (4, 70) in qinq and (6, 90) in qinq
    texts = [d.text for d in profiles.deviation_records(prof, tags=1) if d.code == "frame_size_raised"]
    assert any(t.startswith("IPv4: 64 B cannot hold the Ethernet, its VLAN tag, IPv4") and "66 B" in t
               for t in texts), texts
    qinq_texts = [d.text for d in profiles.deviation_records(prof, tags=2) if d.code == "frame_size_raised"]
    assert any("its two VLAN tags (QinQ)" in t and "70 B" in t for t in qinq_texts), qinq_texts
    # the IMIX's 64 B frames are sent as 66 B with a tag
    assert pktgen.imix_pkt_sizes(False, 1)[0] == (62, 7) and wire.imix_mean_size(False, 1) > wire.imix_mean_size()


def test_vlan_device_names_are_short_stable_and_the_suites_own():
    one = vlan.devices("enp3s0f0np0", 100)
    assert one == vlan.devices("enp3s0f0np0", 100) and len(one) == 1
    qinq = vlan.devices("enp3s0f0np0", 100, 200)
    names = [n for n, *_ in one + qinq + vlan.devices("enp3s0f1np1", 100)]
    assert len(set(names)) == 4 and all(len(n) <= 15 and n[:3] in vlan.PREFIXES for n in names)
    (outer, link0, proto0, id0), (inner, link1, proto1, id1) = qinq
    assert (link0, proto0, id0, link1, proto1, id1) == ("enp3s0f0np0", "802.1ad", 200, outer, "802.1Q", 100)
    (outer, *_), (inner, *_) = vlan.devices("rx0", 100, 200)
    add = vlan.add_command("rx0", 100, 200)
    assert add.index(f"name {outer} type vlan proto 802.1ad id 200") < add.index(f"name {inner}")
    assert f"sysctl -qw net.ipv6.conf.{inner}.accept_ra=0" in add
    remove = vlan.remove_command("rx0", 100, 200)
    assert remove.index(inner) < remove.index(outer) and remove.endswith("true")
    with pytest.raises(BadInput):
        vlan.add_command("rx0; reboot", 100)


def tagged_tester(tmp_path, kernel, *streams):
    return SSHTester(load(tmp_path, *streams), waits=FAST, sessions={"tester": SimSession("tester", kernel)},
                     clock=kernel.clock)


def test_a_tagged_trial_sends_tags_counts_them_and_cleans_up(tmp_path):
    kernel = SimKernel(pgrx_version=6, module_version="1.4")
    tester = tagged_tester(tmp_path, kernel, '{tx: "tester:tx0", rx: "tester:rx0", vlan: 100, svlan: 200}')
    size = wire.wire_frame_size(64, False, tester.frame_tags)
    assert size == 70 and tester.stream_labels == [{"tx": "tester:tx0", "rx": "tester:rx0",
                                                    "vlan": 100, "svlan": 200}]
    r = tester.run_trial(TrialSpec(frame_size=size, load_fps=2000, duration_s=0.2))
    assert (r.tx_frames, r.rx_frames, r.lost_frames) == (400, 400, 0), r.notes
    assert tester.receiver_name == "pgrx"
    writes = kernel.devices["tx0"].writes
    assert "pkt_size 66" in writes and "vlan_id 100" in writes and "svlan_id 200" in writes
    assert ("/proc/net/pktgen/pgrx", "pkt_size 66") in kernel.log     # the tags are counted
    made = [c for c in kernel_commands(kernel) if "type vlan" in c]
    assert len(made) == 1 and "link rx0" in made[0]
    tester.run_trial(TrialSpec(frame_size=size, load_fps=2000, duration_s=0.2))
    assert len([c for c in kernel_commands(kernel) if "type vlan" in c]) == 1    # once a session
    tester.close()
    assert "ip link del dev" in kernel_commands(kernel)[-1]


def kernel_commands(kernel):
    return [cmd for where, cmd in kernel.log if where.startswith("run@")]


def test_an_older_pgrx_does_not_count_tagged_streams_so_counters_do(tmp_path):
    kernel = SimKernel(pgrx_version=6, module_version="1.3")
    tester = tagged_tester(tmp_path, kernel, '{tx: "tester:tx0", rx: "tester:rx0", vlan: 100}')
    assert tester.receiver_name == "interface counters"
    assert any("module 1.4 or later does" in n for n in tester.detect()["notes"])


def test_the_results_schema_takes_tagged_streams():
    import json
    from pathlib import Path
    from schema_check import schema_errors
    data = json.loads((Path(__file__).parents[2] / "data" / "results" / "complete.json").read_text())
    data["conditions"]["streams"] = [{"tx": "tester:tx0", "rx": "tester:rx0", "vlan": 100, "svlan": 200}]
    assert schema_errors(data) == []
    data["conditions"]["streams"][0]["vlan"] = 4095
    assert schema_errors(data)


def test_the_report_names_each_streams_tags(tmp_path):
    import json
    from pathlib import Path
    from rfc2544.results.load import load_results
    from rfc2544.reports.render import render_html
    data = json.loads((Path(__file__).parents[2] / "data" / "results" / "complete.json").read_text())
    data["conditions"]["streams"] = [{"tx": "tester:tx0", "rx": "tester:rx0", "vlan": 100, "svlan": 200},
                                     {"tx": "tester:tx1", "rx": "tester:rx0", "vlan": 300},
                                     {"tx": "tester:tx1", "rx": "tester:rx1"}]
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data))
    page = render_html(load_results(path))
    row = page[page.index("<th>Streams</th>"):]
    row = row[:row.index("</tr>")]
    assert "tester:tx0 &rarr; tester:rx0, QinQ 200/100<br>tester:tx1 &rarr; tester:rx0, VLAN 300<br>" \
           "tester:tx1 &rarr; tester:rx1</td>" in row, row
