"""RFC 2544 section 11's broadcast and management frames (issue 31 item 5):
the profile's `modifiers`, the devices that send them, a trial with them on
the simulated host (pktgen_sim.py, simulated: its receiver sees every
device's frames, as behind a DUT that floods broadcasts), the results and
the report. The lab test is test_tester_module_lab.py's."""
import json
from pathlib import Path

import pytest

from pktgen_sim import SimKernel
from sim_session import SimSession
from rfc2544.config import inventory, profiles
from rfc2544.config.profile_model import Modifiers
from rfc2544.drivers import modifiers
from rfc2544.engine.tester import SSHTester
from rfc2544.errors import BadInput
from rfc2544.model import TrialSpec

from test_tester_sim import FAST, INVENTORY

RESULTS = Path(__file__).parents[2] / "data" / "results" / "complete.json"
ON = Modifiers(broadcast_pct=1.0, management_fps=1.0)
STREAM = '{tx: "tester:tx0", rx: "tester:rx0"}'


def load(tmp_path, peer_ipv4=True, stream=STREAM):
    text = INVENTORY.format(streams=f"      - {stream}")
    if peer_ipv4:
        text = text.replace('peer_mac: "52:54:00:00:00:02"}', 'peer_mac: "52:54:00:00:00:02", peer_ipv4: 198.18.0.2}')
    path = tmp_path / "inv.yml"
    path.write_text(text)
    return inventory.load(path)


def test_the_profile_takes_a_broadcast_share_and_a_management_rate():
    assert profiles.validate({}).model.modifiers == Modifiers(0.0, 0.0)
    assert modifiers.enabled(profiles.validate({}).model.modifiers) == []
    p = profiles.validate({"modifiers": {"broadcast_pct": 1, "management_fps": 1}})
    assert p.model.modifiers == ON and modifiers.enabled(ON) == ["broadcast", "management"]
    for bad, words in (({"broadcast_pct": 11}, "modifiers.broadcast_pct: must be a percentage"),
                       ({"broadcast_pct": -1}, "0..10"), ({"management_fps": "1"}, "modifiers.management_fps"),
                       ({"management_fps": True}, "frames per second"), ({"multicast_pct": 1}, "unknown field")):
        with pytest.raises(BadInput, match=words):
            profiles.validate({"modifiers": bad})


def test_each_sending_port_gets_a_broadcast_and_a_management_device(tmp_path):
    inv = load(tmp_path, stream='{tx: "tester:tx0", rx: "tester:rx0", vlan: 100}')
    tester = SSHTester(inv, waits=FAST, modifiers=ON, sessions={"tester": SimSession("tester", SimKernel())})
    bc, mg = tester.modifiers
    assert (bc.kind, bc.device, bc.dst_mac, bc.dst4) == ("broadcast", "tx0@9990", "ff:ff:ff:ff:ff:ff", "255.255.255.255")
    assert (mg.kind, mg.device, mg.dst_mac, mg.dst4) == ("management", "tx0@9991", "52:54:00:00:00:02", "198.18.0.2")
    assert bc.tags.vlan == mg.tags.vlan == 100            # the port's service circuit
    spec = TrialSpec(frame_size=64, load_fps=1000, duration_s=1)
    cmds = modifiers.device_config(mg, spec, 2, 1, 60, None).commands()
    assert "udp_dst_min 161" in cmds and "stream_id 65534" in cmds and "dst_mac 52:54:00:00:00:02" in cmds
    assert "stream_id 65535" in modifiers.device_config(bc, spec, 10, 10, 60, None).commands()


def test_management_frames_need_the_duts_address(tmp_path):
    tester = SSHTester(load(tmp_path, peer_ipv4=False), waits=FAST, modifiers=Modifiers(0.0, 1.0),
                       sessions={"tester": SimSession("tester", SimKernel(pgrx_version=6, module_version="1.4"))})
    with pytest.raises(BadInput, match=r"management frames from tester:tx0 need peer_ipv4 \(the DUT's address"):
        tester.run_trial(TrialSpec(frame_size=64, load_fps=1000, duration_s=0.2))


def test_the_frames_fit_in_the_trial():
    mod = modifiers.ModifierPlan("broadcast", "tester", "tx0", "tx0@9990", (0, 1), "ff:ff:ff:ff:ff:ff",
                                 "198.18.0.1", "255.255.255.255", None, None)
    # 1 % of both streams' frames, spread over the sending time (the rate rounded up)
    assert modifiers.planned_frames(mod, ON, [6000, 4000], 2.0) == (100, 50)
    assert modifiers.planned_frames(mod, ON, [30, 20], 2.0) == (1, 1)                  # never none
    assert modifiers.planned_frames(mod, ON, [3000, 3000], 0.0) == (60, None)          # a burst: as fast
    mgmt = modifiers.ModifierPlan("management", "tester", "tx0", "tx0@9991", (0,), "52:54:00:00:00:02",
                                  "198.18.0.1", "198.18.0.2", None, None)
    assert modifiers.planned_frames(mgmt, ON, [100], 2.5) == (3, 1)                     # at 0, 1 and 2 s
    assert modifiers.planned_frames(mgmt, Modifiers(1.0, 2.5), [100], 0.2) == (1, 3)


def test_a_trial_with_modifiers_counts_them_apart_from_the_streams(tmp_path):
    kernel = SimKernel(pgrx_version=6, module_version="1.4")
    tester = SSHTester(load(tmp_path), waits=FAST, modifiers=ON, sessions={"tester": SimSession("tester", kernel)},
                       clock=kernel.clock)
    r = tester.run_trial(TrialSpec(frame_size=64, load_fps=5000, duration_s=2.0))
    # the receiver saw the modifier frames too (the simulated DUT floods):
    # foreign, in no stream, no loss
    assert (r.tx_frames, r.rx_frames, r.lost_frames) == (10000, 10000, 0), r.notes
    assert r.modifier_frames == {"broadcast": 100, "management": 2} and r.foreign_frames == 102, r.notes
    assert not [n for n in r.notes if "frames:" in n]
    assert "the 102 foreign frames can be modifier frames (102 sent): a DUT that floods broadcasts passes them on" \
        in r.notes, r.notes
    bc, mg = kernel.devices["tx0@9990"], kernel.devices["tx0@9991"]
    assert "dst_mac ff:ff:ff:ff:ff:ff" in bc.writes and "count 100" in bc.writes and "ratep 51" in bc.writes     # 100 in 1.9998 s
    assert "udp_dst_min 161" in mg.writes and "count 2" in mg.writes and "ratep 1" in mg.writes
    assert "foreign=102" in kernel.read("/proc/net/pktgen/pgrx")
    # learning starts every device: the modifiers send one frame each then
    assert bc.writes.count("count 1") == 1 and mg.writes.count("count 1") == 1
    tester.close()


def test_modifiers_need_stream_ids(tmp_path):
    kernel = SimKernel(pgrx_version=6, module_version="1.2")
    tester = SSHTester(load(tmp_path), waits=FAST, modifiers=ON, sessions={"tester": SimSession("tester", kernel)},
                       clock=kernel.clock)
    with pytest.raises(BadInput, match="need the rfc2544_pktgen module 1.3 or later"):
        tester.run_trial(TrialSpec(frame_size=64, load_fps=1000, duration_s=0.2))


def test_results_and_report_name_the_modifiers(tmp_path):
    from schema_check import schema_errors
    from rfc2544.results.load import load_results
    from rfc2544.reports.render import render_html
    data = json.loads(RESULTS.read_text())
    data["profile"]["modifiers"] = {"broadcast_pct": 1.0, "management_fps": 1.0}
    data["conditions"]["modifiers"] = {"broadcast_pct": 1.0, "management_fps": 1.0,
                                       "devices": [{"kind": "broadcast", "tx": "tester:tx0", "device": "tx0@9990"}]}
    data["trials"][0]["modifier_frames"] = {"broadcast": 100, "management": 2}
    assert schema_errors(data) == []
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data))
    page = render_html(load_results(path))
    row = page[page.index("<th>Modifiers</th>"):]
    assert "broadcast frames, 1 % of the offered frames (RFC 2544 11.2); management frames, 1 a second" in row
    assert page.count("Every trial with modifiers:") >= 1
    data["trials"][0]["modifier_frames"] = {"multicast": 1}
    assert schema_errors(data)


def test_the_conditions_list_the_modifier_devices(tmp_path):
    from rfc2544.engine.assemble import conditions_for
    from schema_check import schema_errors
    kernel = SimKernel(pgrx_version=6, module_version="1.4")
    inv = load(tmp_path)
    profile = profiles.validate({"modifiers": {"broadcast_pct": 1, "management_fps": 1}})
    tester = SSHTester(inv, waits=FAST, modifiers=profile.model.modifiers,
                       sessions={"tester": SimSession("tester", kernel)}, clock=kernel.clock)
    cond = conditions_for(tester, inv, profile, 10000, None)
    assert cond["modifiers"] == {"broadcast_pct": 1.0, "management_fps": 1.0, "devices": [
        {"kind": "broadcast", "tx": "tester:tx0", "device": "tx0@9990"},
        {"kind": "management", "tx": "tester:tx0", "device": "tx0@9991"}]}
    data = json.loads(RESULTS.read_text())
    data["conditions"]["modifiers"] = cond["modifiers"]
    assert schema_errors(data) == []
    off = SSHTester(inv, waits=FAST, sessions={"tester": SimSession("tester", kernel)}, clock=kernel.clock)
    assert "modifiers" not in conditions_for(off, inv, profiles.validate({}), 10000, None)
