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
    assert asked == {"networks": 256, "ipv6": True, "sources": 1, "bidirectional": True}
    prof.write_text("name: p\nflows: [64]\nflow_spread: src_addresses\n")
    assert main("doctor", "-i", str(inv), "-p", str(prof), "--networks", "4") == 0
    assert asked == {"networks": 4, "ipv6": False, "sources": 64, "bidirectional": False}
    assert main("doctor", "-i", str(inv), "-p", str(tmp_path / "none.yml")) == 2


def test_profile_needs_reads_the_built_in_profiles():
    from rfc2544.cli.doctor import profile_needs
    assert profile_needs(profiles.load("quick")) == (1, False, 1, False)
