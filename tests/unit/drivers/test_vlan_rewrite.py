"""DUTs that change the tags on the way (issue 31 item 6's limit): the
inventory's `rx_vlan` / `rx_svlan` say which tags the frames arrive with
where the DUT pops, pushes or translates them. The receiver then counts
the length that arrives, watches the tags that arrive, and the reverse of
a bidirectional run swaps them. Trials run against the simulated host
(pktgen_sim.py, SIMULATED: its DUT changes every frame's length by
`rx_size_change`); the real kernel path is in test_tester_module_lab.py."""
import json
from pathlib import Path

import pytest

from pktgen_sim import SimKernel
from schema_check import schema_errors
from sim_session import SimSession
from rfc2544.config import inventory, profiles
from rfc2544.drivers import streams, vlan
from rfc2544.engine.tester import SSHTester
from rfc2544.errors import BadInput
from rfc2544.model import TrialSpec

from test_bidirectional import INVENTORY
from test_tester_sim import FAST


def load(tmp_path, *streams):
    """The simulated tester's inventory, whose rx0 may send too (the reverse streams)."""
    path = tmp_path / "inv.yml"
    path.write_text(INVENTORY.format(streams="\n".join(f"      - {s}" for s in streams),
                                     rx_peer='peer_mac: "52:54:00:00:00:04"'))
    return inventory.load(path)


def one(tmp_path, fields):
    return load(tmp_path, f'{{tx: "tester:tx0", rx: "tester:rx0", {fields}}}').streams[0]


@pytest.mark.parametrize("fields, arrives, described", [
    ("vlan: 100, rx_vlan: 200", (200, None), "VLAN 100, received VLAN 200"),          # translated
    ("vlan: 100, rx_vlan: none", (None, None), "VLAN 100, received untagged"),        # popped
    ("vlan: 100, rx_vlan: 0", (None, None), "VLAN 100, received untagged"),
    ("rx_vlan: 300", (300, None), "untagged, received VLAN 300"),                      # pushed
    ("vlan: 100, svlan: 200, rx_svlan: none", (100, None), "QinQ 200/100, received VLAN 100"),
    ("vlan: 100, rx_svlan: 200", (100, 200), "VLAN 100, received QinQ 200/100"),
    ("vlan: 100, rx_vlan: 100", (100, None), "VLAN 100"),                             # as sent: no change
])
def test_the_inventory_says_which_tags_arrive(tmp_path, fields, arrives, described):
    s = one(tmp_path, fields)
    assert s.tags.arriving() == arrives and s.tags.text == described
    assert s.tags.rewritten == (described != "VLAN 100")


@pytest.mark.parametrize("fields, message", [
    ("vlan: 100, rx_vlan: 4095", "rx_vlan: must be a VLAN id, 1 to 4094, or 'none'"),
    ("vlan: 100, rx_vlan: 'pop'", "rx_vlan: must be a VLAN id"),
    ("vlan: 100, rx_vlan: true", "rx_vlan: must be a VLAN id"),
    ("vlan: 100, svlan: 200, rx_vlan: none", "cannot arrive with an outer .* give rx_svlan too"),
])
def test_bad_arrival_tags_are_refused_with_where_they_are(tmp_path, fields, message):
    with pytest.raises(BadInput, match=message):
        one(tmp_path, fields)


def test_the_reverse_of_a_changed_stream_swaps_the_tags(tmp_path):
    inv = load(tmp_path, '{tx: "tester:tx0", rx: "tester:rx0", vlan: 100, vlan_pcp: 5, rx_vlan: none}',
               '{tx: "tester:tx1", rx: "tester:rx0", vlan: 100, vlan_pcp: 3, rx_vlan: 200}')
    reverse = streams.stream_ends(inv, bidirectional=True)[2:]
    # popped one way: sent untagged (no PCP without its tag), pushed back to 100;
    # translated: sent on 200 (its PCP kept), translated back to 100
    assert [(r.tx_port, r.rx_port, r.tags.vlan, r.tags.vlan_pcp, r.tags.arriving()) for r in reverse] == [
        ("rx0", "tx0", None, None, (100, None)), ("rx0", "tx1", 200, 3, (100, None))]
    # only the tag that changes is written (no outer tag to remove)
    assert [(r.tags.rx_vlan, r.tags.rx_svlan) for r in reverse] == [(100, None), (100, None)]
    plans = streams.plan_streams(inv, bidirectional=True)
    # the receiving port of each stream gets the stack of the tags that arrive
    assert vlan.receiving_stacks(plans) == {"tester": [("rx0", 200, None), ("tx0", 100, None),
                                                       ("tx1", 100, None)]}


def test_the_length_that_arrives_counts_the_tags_the_dut_changed(tmp_path):
    popped = streams.plan_streams(load(tmp_path, '{tx: "tester:tx0", rx: "tester:rx0", vlan: 100, rx_vlan: none}'))
    assert streams.arriving_frame_size(popped, "tester", 128) == 124
    # 66 B tagged, popped: 62 B, which a NIC pads to 64 B and a veth does not
    assert streams.arriving_frame_size(popped, "tester", 66) is None
    pushed = streams.plan_streams(load(tmp_path, '{tx: "tester:tx0", rx: "tester:rx0", rx_vlan: 300}'))
    assert streams.arriving_frame_size(pushed, "tester", 64) == 68
    kept = streams.plan_streams(load(tmp_path, '{tx: "tester:tx0", rx: "tester:rx0", vlan: 100}'))
    assert streams.arriving_frame_size(kept, "tester", 66) == 66
    # both directions into one host: one pops, the other pushes: no one length
    both = streams.plan_streams(load(tmp_path, '{tx: "tester:tx0", rx: "tester:rx0", vlan: 100, rx_vlan: none}'),
                             bidirectional=True)
    assert streams.arriving_frame_size(both, "tester", 128) is None


def test_where_the_length_cannot_be_told_the_run_declares_it(tmp_path):
    prof = profiles.validate({**dict(profiles.load("quick")), "frame_sizes": [64, 128], "ip_versions": [4]},
                             "test")
    popped = streams.plan_streams(load(tmp_path, '{tx: "tester:tx0", rx: "tester:rx0", vlan: 100, rx_vlan: none}'))
    devs = [d for d in profiles.deviation_records(prof, tags=1, plans=popped) if d.code == "rx_length_unchecked"]
    assert len(devs) == 1 and "at 66 B" in devs[0].text and "128" not in devs[0].text
    assert devs[0].section == "RFC 2544 10" and "shorter than 64 B" in devs[0].text
    both = streams.plan_streams(load(tmp_path, '{tx: "tester:tx0", rx: "tester:rx0", vlan: 100, rx_vlan: none}'),
                             bidirectional=True)
    devs = [d for d in profiles.deviation_records(prof, tags=1, plans=both) if d.code == "rx_length_unchecked"]
    assert len(devs) == 1 and "at 66 B, 128 B" in devs[0].text and "different changes" in devs[0].text
    kept = streams.plan_streams(load(tmp_path, '{tx: "tester:tx0", rx: "tester:rx0", vlan: 100}'))
    assert not [d for d in profiles.deviation_records(prof, tags=1, plans=kept) if d.code == "rx_length_unchecked"]


def make_tester(tmp_path, kernel, *streams):
    return SSHTester(load(tmp_path, *streams), waits=FAST, sessions={"tester": SimSession("tester", kernel)},
                     clock=kernel.clock)


def test_a_popped_stream_is_counted_at_the_length_that_arrives(tmp_path):
    # the simulated DUT takes 4 B (the tag) off every frame
    kernel = SimKernel(pgrx_version=6, module_version="1.4", rx_size_change=-4)
    tester = make_tester(tmp_path, kernel, '{tx: "tester:tx0", rx: "tester:rx0", vlan: 100, rx_vlan: none}')
    assert tester.stream_labels == [{"tx": "tester:tx0", "rx": "tester:rx0", "vlan": 100, "rx_vlan": 0}]
    r = tester.run_trial(TrialSpec(frame_size=128, load_fps=2000, duration_s=0.2))
    assert (r.tx_frames, r.rx_frames, r.lost_frames) == (400, 400, 0), r.notes
    assert "vlan_id 100" in kernel.devices["tx0"].writes and "pkt_size 124" in kernel.devices["tx0"].writes
    assert ("/proc/net/pktgen/pgrx", "pkt_size 120") in kernel.log      # 124 B arrive: 120 without FCS
    # the frames arrive untagged: no VLAN device on the receiving port
    assert not [cmd for where, cmd in kernel.log if where.startswith("run@") and "type vlan" in cmd]
    tester.close()


def test_the_schema_and_the_report_take_the_tags_that_arrive(tmp_path):
    from rfc2544.results.load import load_results
    from rfc2544.reports.render import render_html
    data = json.loads((Path(__file__).parents[2] / "data" / "results" / "complete.json").read_text())
    data["conditions"]["streams"] = [{"tx": "tester:tx0", "rx": "tester:rx0", "vlan": 100, "rx_vlan": 0},
                                     {"tx": "tester:tx1", "rx": "tester:rx0", "vlan": 100, "rx_vlan": 200},
                                     {"tx": "tester:rx0", "rx": "tester:tx0", "rx_vlan": 100}]
    assert schema_errors(data) == []
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data))
    page = render_html(load_results(path))
    assert "tester:tx0 &rarr; tester:rx0, VLAN 100, received untagged<br>" \
           "tester:tx1 &rarr; tester:rx0, VLAN 100, received VLAN 200<br>" \
           "tester:rx0 &rarr; tester:tx0, untagged, received VLAN 100</td>" in page
    data["conditions"]["streams"][0]["rx_vlan"] = 4095
    assert schema_errors(data)


def test_an_older_pgrx_counts_a_stream_that_arrives_untagged(tmp_path):
    # pgrx before 1.4 cannot count frames that come in through VLAN devices:
    # a stream the DUT pops arrives without any, so it still counts it
    popped = make_tester(tmp_path, SimKernel(pgrx_version=6, module_version="1.3"),
                         '{tx: "tester:tx0", rx: "tester:rx0", vlan: 100, rx_vlan: none}')
    assert popped.receiver_name == "pgrx"
    pushed = make_tester(tmp_path, SimKernel(pgrx_version=6, module_version="1.3"),
                         '{tx: "tester:tx0", rx: "tester:rx0", rx_vlan: 300}')
    assert pushed.receiver_name == "interface counters"
    assert any("arrive tagged are received on tester" in n for n in pushed.detect()["notes"])
