"""Each VLAN tag's priority code point and drop eligible indicator (issue 31
item 6): the inventory's vlan_pcp/vlan_dei/svlan_pcp/svlan_dei, the
generator's vlan_p/vlan_cfi/svlan_p/svlan_cfi written after their tag and
read back, the results' conditions and the report. Trials run against the
simulated host (pktgen_sim.py, simulated); the lab checks the bits on the
wire (test_tester_module_lab.py, the QinQ stream)."""
import json
from pathlib import Path

import pytest

from pktgen_sim import SimKernel
from sim_session import SimSession
from rfc2544.config import inventory
from rfc2544 import wire
from rfc2544.wire import Tags
from rfc2544.drivers import pktgen, streams
from rfc2544.engine.tester import SSHTester
from rfc2544.errors import BadInput
from rfc2544.model import TrialSpec

from test_tester_sim import FAST, INVENTORY

QINQ = '{tx: "tester:tx0", rx: "tester:rx0", vlan: 100, svlan: 200, vlan_pcp: 5, vlan_dei: 1, svlan_pcp: 3}'


def load(tmp_path, *streams):
    path = tmp_path / "inv.yml"
    path.write_text(INVENTORY.format(streams="\n".join(f"      - {s}" for s in streams)))
    return inventory.load(path)


def config(**tags):
    return pktgen.DeviceConfig(device="tx0", count=10, dst_mac="52:54:00:00:00:02", src_ip="198.18.0.1",
                               dst_ip="198.19.0.1", pkt_size=66, tags=Tags(**tags))


def test_the_inventory_takes_each_tags_bits_and_every_layer_keeps_them(tmp_path):
    inv = load(tmp_path, QINQ, '{tx: "tester:tx1", rx: "tester:rx0", vlan: 300}')
    s = inv.streams[0]
    assert s.tags == Tags(vlan=100, svlan=200, vlan_pcp=5, vlan_dei=1, svlan_pcp=3)
    assert inv.streams[1].tags.vlan_pcp is None
    plans = streams.plan_streams(inv)
    assert plans[0].tags == s.tags
    reverse = streams.stream_ends(inv, bidirectional=True)[2]
    assert (reverse.tx_port, reverse.tags) == ("rx0", s.tags)   # kept
    assert plans[0].tags.text == "QinQ 200 PCP 3/100 PCP 5 DEI 1"
    assert plans[1].tags.text == "VLAN 300" and streams.plan_streams(load(
        tmp_path, '{tx: "tester:tx0", rx: "tester:rx0"}'))[0].tags.text == ""
    # a results.json entry's fields, and back
    assert Tags.of(plans[0].tags.as_entry()) == plans[0].tags and Tags.of({}) == Tags()


@pytest.mark.parametrize("fields, message", [
    ("vlan: 100, vlan_pcp: 8", r"rfc2544_streams\[0\].vlan_pcp: must be 0 to 7, not 8"),
    ("vlan: 100, vlan_dei: 2", r"vlan_dei: must be 0 to 1, not 2"),
    ("vlan: 100, vlan_pcp: true", "vlan_pcp: must be 0 to 7, not True"),
    ("vlan: 100, vlan_pcp: '5'", "vlan_pcp: must be 0 to 7, not '5'"),
    ("vlan_pcp: 5", r"vlan_pcp: a PCP needs the tag it is part of: give 'vlan' too"),
    ("vlan: 100, svlan_dei: 1", r"svlan_dei: a DEI needs the tag it is part of: give 'svlan' too"),
])
def test_bad_bits_are_refused_with_where_they_are(tmp_path, fields, message):
    with pytest.raises(BadInput, match=message):
        load(tmp_path, f'{{tx: "tester:tx0", rx: "tester:rx0", {fields}}}')


def test_the_generator_writes_each_tags_bits_after_it_and_reads_them_back():
    cfg = config(vlan=100, svlan=200, vlan_pcp=5, vlan_dei=1, svlan_pcp=3, svlan_dei=0)
    cmds = cfg.commands()
    order = ["vlan_id 100", "vlan_p 5", "vlan_cfi 1", "svlan_id 200", "svlan_p 3", "svlan_cfi 0"]
    assert [c for c in cmds if "vlan" in c] == order
    assert cmds.index("svlan_cfi 0") < cmds.index("clear_counters")
    exp = pktgen.expected_params(cfg)
    assert {k: exp[k] for k in ("vlan_p", "vlan_cfi", "svlan_p", "svlan_cfi")} == \
        {"vlan_p": "5", "vlan_cfi": "1", "svlan_p": "3", "svlan_cfi": "0"}
    assert "vlan_p" not in pktgen.expected_params(config(vlan=100))       # not set: not written
    # the device file names the outer tag's bits like the inner one's (upstream)
    state = pktgen.parse_device("Params: count 10  min_pkt_size: 66  max_pkt_size: 66\n"
                                "     vlan_id: 100  vlan_p: 5  vlan_cfi: 1\n"
                                "     svlan_id: 200  vlan_p: 3  vlan_cfi: 0\n")
    assert {k: state.params[k] for k in ("vlan_id", "vlan_p", "vlan_cfi", "svlan_id", "svlan_p", "svlan_cfi")} == \
        {"vlan_id": "100", "vlan_p": "5", "vlan_cfi": "1", "svlan_id": "200", "svlan_p": "3", "svlan_cfi": "0"}
    with pytest.raises(BadInput, match="needs its tag: svlan_pcp without svlan"):
        config(vlan=100, svlan_pcp=1).commands()
    with pytest.raises(BadInput, match="vlan PCP"):
        config(vlan=100, vlan_pcp=8).commands()


def test_a_trial_sends_the_bits_and_the_conditions_name_them(tmp_path):
    kernel = SimKernel(pgrx_version=6, module_version="1.4")
    tester = SSHTester(load(tmp_path, QINQ), waits=FAST, sessions={"tester": SimSession("tester", kernel)},
                       clock=kernel.clock)
    assert tester.stream_labels == [{"tx": "tester:tx0", "rx": "tester:rx0", "vlan": 100, "svlan": 200,
                                     "vlan_pcp": 5, "vlan_dei": 1, "svlan_pcp": 3}]
    size = wire.wire_frame_size(64, False, tester.frame_tags)
    r = tester.run_trial(TrialSpec(frame_size=size, load_fps=2000, duration_s=0.2))
    assert (r.tx_frames, r.rx_frames, r.lost_frames) == (400, 400, 0), r.notes
    writes = kernel.devices["tx0"].writes
    assert writes.index("vlan_id 100") < writes.index("vlan_p 5") < writes.index("svlan_id 200") \
        < writes.index("svlan_p 3")
    tester.close()


def test_the_schema_and_the_report_take_the_bits(tmp_path):
    from schema_check import schema_errors
    from rfc2544.results.load import load_results
    from rfc2544.reports.render import render_html
    data = json.loads((Path(__file__).parents[2] / "data" / "results" / "complete.json").read_text())
    data["conditions"]["streams"] = [{"tx": "tester:tx0", "rx": "tester:rx0", "vlan": 100, "svlan": 200,
                                      "vlan_pcp": 5, "vlan_dei": 1, "svlan_pcp": 3},
                                     {"tx": "tester:tx1", "rx": "tester:rx0", "vlan": 300, "vlan_pcp": 0}]
    assert schema_errors(data) == []
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data))
    page = render_html(load_results(path))
    row = page[page.index("<th>Streams</th>"):]
    row = row[:row.index("</tr>")]
    assert "QinQ 200 PCP 3/100 PCP 5 DEI 1<br>tester:tx1 &rarr; tester:rx0, VLAN 300 PCP 0</td>" in row, row
    data["conditions"]["streams"][0]["vlan_pcp"] = 8
    assert schema_errors(data)
