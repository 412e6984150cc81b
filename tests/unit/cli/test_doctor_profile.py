"""`doctor` checks what a run needs: the reverse streams of `direction: bi`
(their rx ports send, so they need a peer_mac, and the DUT routes back),
and with `-p PROFILE` the profile's networks, sources, IPv6 and direction.
Canned hosts and a stand-in for the engine (simulated): no SSH."""
import pytest

from rfc2544 import cli
from rfc2544.config import profiles
from rfc2544.engine.doctor import doctor

from test_tester_doctor import GOOD, Canned, RoutingDut, as_dict
from test_tester_sim import make_inventory


def main(*args):
    with pytest.raises(SystemExit) as exc:
        cli.main(list(args))
    return exc.value.code


def test_bidirectional_checks_the_reverse_streams_too(tmp_path):
    inv = make_inventory(tmp_path)
    sessions = {"tester": Canned(GOOD), "dut": RoutingDut({})}
    forward = as_dict(doctor(inv, sessions=dict(sessions)))
    assert "peer of tester:rx0" not in forward
    both = as_dict(doctor(inv, sessions=dict(sessions), bidirectional=True))
    # the simulated inventory's rx0 has no peer_mac: a reverse stream cannot be sent
    assert both["peer of tester:rx0"] == (False, "no peer_mac: a port that sends needs the DUT's MAC on its link "
                                                 "(with direction bi the rx ports send too)")
    assert both["peer of tester:tx0"] == forward["peer of tester:tx0"]


def test_a_profile_sets_what_doctor_checks(tmp_path, monkeypatch):
    import rfc2544.engine.doctor as doc
    asked = {}

    def stand_in(inventory, **kw):
        asked.update(kw)
        return [("ssh t", True, "ok")]
    monkeypatch.setattr(doc, "doctor", stand_in)
    inv = make_inventory(tmp_path).path
    prof = tmp_path / "p.yml"
    prof.write_text("name: p\nflows: [1, 256]\nflow_spread: dst_networks\nip_versions: [4, 6]\ndirection: bi\n")
    assert main("doctor", "-i", str(inv), "-p", str(prof)) == 0
    assert asked == {"networks": 256, "ipv6": True, "sources": 1, "bidirectional": True,
                     "generators": None, "every_cpu": False}
    prof.write_text("name: p\nflows: [64]\nflow_spread: src_addresses\n")
    assert main("doctor", "-i", str(inv), "-p", str(prof), "--networks", "4") == 0
    assert asked == {"networks": 4, "ipv6": False, "sources": 64, "bidirectional": False,
                     "generators": None, "every_cpu": False}
    assert main("doctor", "-i", str(inv), "-p", str(tmp_path / "none.yml")) == 2


def test_profile_needs_reads_the_built_in_profiles():
    from rfc2544.cli.doctor import profile_needs
    assert profile_needs(profiles.load("quick")) == (1, False, 1, False)


class VlanDut(Canned):
    """The DUT's canned facts, and `ip -d -j link show` answered with
    these VLAN devices: (name, link, protocol, id)."""

    def __init__(self, vlans):
        from test_tester_doctor import DUT
        super().__init__(DUT)
        self.vlans = vlans

    def run(self, command, timeout=None, check=False):
        if command.startswith("ip -d -j link show"):
            import json
            self.commands.append(command)
            links = [{"ifname": "dut0", "linkinfo": {"info_kind": "veth"}}] + [
                {"ifname": n, "link": link, "linkinfo": {"info_kind": "vlan", "info_data": {"protocol": p, "id": i}}}
                for n, link, p, i in self.vlans]
            return 0, json.dumps(links), ""
        return super().run(command, timeout, check)


def tagged_inventory(tmp_path, fields):
    from test_vlan_priority import load
    return load(tmp_path, f'{{tx: "tester:tx0", rx: "tester:rx0", {fields}}}')


def test_doctor_says_when_the_dut_cannot_take_a_streams_tags(tmp_path):
    inv = tagged_inventory(tmp_path, "vlan: 100")
    label = "VLAN tags at the DUT tester:tx0->tester:rx0"
    dut = VlanDut([("dut0.100", "dut0", "802.1Q", 100)])
    r = as_dict(doctor(inv, sessions={"tester": Canned(GOOD), "dut": dut}))
    assert r[label] == (True, "dut takes the tags on dut0.100") and dut.commands[-1] == "ip -d -j link show"
    r = as_dict(doctor(inv, sessions={"tester": Canned(GOOD), "dut": VlanDut([("dut0.200", "dut0", "802.1Q", 200)])}))
    assert r[label] == (False, "dut has no 802.1Q device of VLAN 100 on dut0: it drops the stream's tagged "
                               "frames (inventory/README.md, VLAN and QinQ tags)")
    qinq = tagged_inventory(tmp_path, "vlan: 100, svlan: 200")
    stack = [("dut0.200", "dut0", "802.1ad", 200), ("dut0.200.100", "dut0.200", "802.1Q", 100)]
    r = as_dict(doctor(qinq, sessions={"tester": Canned(GOOD), "dut": VlanDut(stack)}))
    assert r[label] == (True, "dut takes the tags on dut0.200.100")
    r = as_dict(doctor(qinq, sessions={"tester": Canned(GOOD), "dut": VlanDut(stack[1:])}))
    assert not r[label][0] and "on an 802.1ad device of VLAN 200 on dut0" in r[label][1]
    # untagged streams: no such check, no such command
    dut = VlanDut([])
    assert not [c for c in as_dict(doctor(make_inventory(tmp_path), sessions={"tester": Canned(GOOD), "dut": dut}))
                if "VLAN" in c] and not [c for c in dut.commands if "link show" in c]


def test_a_stream_whose_dut_is_unknown_is_named_by_the_route_and_source_checks(tmp_path):
    """The reverse stream leaves rx0, which names no peer: the route and
    source checks say the DUT is unknown instead of asking a host."""
    from rfc2544.engine.doctor import NO_DUT
    inv = make_inventory(tmp_path)
    sessions = {"tester": Canned(GOOD), "dut": RoutingDut({})}
    both = as_dict(doctor(inv, sessions=sessions, bidirectional=True, networks=4, sources=4))
    assert both["routes to 4 networks tester:rx0->tester:tx0"] == (False, NO_DUT)
    assert both["routes back to 4 sources tester:rx0->tester:tx0"] == (False, NO_DUT)
    assert both["routes to 4 networks tester:tx0->tester:rx0"][1] != NO_DUT
