"""`rfc2544 init FILE --tester ... --dut ...` (rfc2544.config.init_inventory): the
ports read from `ip -j` over SSH become a commented inventory that loads once
the user has chosen the tester ports' roles and the streams."""
import json
from pathlib import Path

import pytest
import yaml

from rfc2544 import cli
from rfc2544.config import init_inventory
from rfc2544.config import inventory

DATA = Path(__file__).resolve().parents[2] / "data" / "ipjson"
SSH_CONNECTION = {"tester": "192.0.2.99 50022 192.0.2.10 22", "dut": "192.0.2.99 50023 192.0.2.20 2222"}


class FakeSession:
    """SSHHost's run() over the hand-written `ip -j` files of one host."""

    def __init__(self, name):
        self.name = name
        self.commands = []

    def run(self, command, check=True):
        self.commands.append(command)
        if command == 'echo "$SSH_CONNECTION"':
            return 0, SSH_CONNECTION[self.name] + "\n", ""
        what = command.rsplit("ip -j ", 1)[1]
        return 0, (DATA / f"{self.name}-{what}.json").read_text(), ""

    def close(self):
        pass


@pytest.fixture
def sessions(monkeypatch):
    made = {}

    def connect(name, host, port, user, key_file, known_hosts):
        made[name] = FakeSession(name)
        made[name].target = (user, host, port, key_file, known_hosts)
        return made[name]
    monkeypatch.setattr(init_inventory, "connect_host", connect)
    return made


def run_init(*args):
    with pytest.raises(SystemExit) as exc:
        cli.main(["init", *args])
    return exc.value.code


def ports_of(data, group, host):
    return {p["name"]: p for p in data["all"]["children"][group]["hosts"][host]["rfc2544_ports"]}


def test_init_discovers_ports_macs_addresses_and_peers(tmp_path, sessions, capsys):
    target = tmp_path / "lab.yml"
    assert run_init(str(target), "--tester", "root@192.0.2.10", "--dut", "admin@192.0.2.20:2222",
                    "--key", "/keys/lab", "--known-hosts", "/keys/known") == 0
    assert sessions["dut"].target == ("admin", "192.0.2.20", 2222, "/keys/lab", "/keys/known")
    text = target.read_text()
    data = yaml.safe_load(text)
    tester = ports_of(data, "testers", "tester")
    dut = ports_of(data, "duts", "dut")
    # loopback and the interfaces holding the SSH connection's address are no test ports
    assert set(tester) == {"enp1s0f0", "enp1s0f1", "enp1s0f2"}
    assert set(dut) == {"ens1f0", "ens1f1"}
    assert tester["enp1s0f0"] == {"name": "enp1s0f0", "role": "CHOOSE", "mac": "3c:fd:fe:a0:00:10",
                                  "ipv4": "198.18.0.1/24", "ipv6": "2001:2::1/64",
                                  "peer_mac": "b4:96:91:00:00:20",
                                  "peer_ipv4": "198.18.0.2", "peer_ipv6": "2001:2::2"}
    assert tester["enp1s0f1"]["peer_mac"] == "b4:96:91:00:00:21"
    assert "peer_mac" not in tester["enp1s0f2"] and "ipv4" not in tester["enp1s0f2"]
    assert dut["ens1f0"] == {"name": "ens1f0", "role": "dut", "mac": "b4:96:91:00:00:20",
                             "ipv4": "198.18.0.2/24", "ipv6": "2001:2::2/64",
                             "peer_mac": "3c:fd:fe:a0:00:10", "peer_ipv4": "198.18.0.1"}
    # a link-local neighbour gives the MAC but no peer address
    assert dut["ens1f1"]["peer_mac"] == "3c:fd:fe:a0:00:11" and "peer_ipv6" not in dut["ens1f1"]
    hosts = data["all"]["children"]
    assert hosts["duts"]["hosts"]["dut"]["ansible_port"] == 2222
    assert hosts["duts"]["hosts"]["dut"]["ansible_user"] == "admin"
    assert hosts["testers"]["hosts"]["tester"]["rfc2544_known_hosts"] == "/keys/known"
    for comment in ("# enp0s31f6: left out, carries this SSH connection (192.0.2.10): management",
                    "# eno1: left out, carries this SSH connection (192.0.2.20)", "# lo: left out, loopback",
                    "name: \"enp1s0f2\"    # link DOWN", "name: \"enp1s0f0\"    # link up",
                    "role: CHOOSE  # CHOOSE: tx (sends) or rx", "peer_mac: \"b4:96:91:00:00:20\"    # the DUT's ens1f0",
                    "peer_mac: \"3c:fd:fe:a0:00:11\"    # the tester's enp1s0f1",
                    "# peer_mac: unknown (no neighbour entry)", "#   - tx: tester:enp1s0f0",
                    "#     rx: tester:enp1s0f1"):
        assert comment in text
    assert capsys.readouterr().out.startswith(f"wrote {target}: choose the tester ports' roles")

    # the user's edit: roles and a stream; the unused port removed
    tester_host = hosts["testers"]["hosts"]["tester"]
    tester_host["rfc2544_ports"] = [dict(tester["enp1s0f0"], role="tx"), dict(tester["enp1s0f1"], role="rx")]
    data["all"]["vars"] = {"rfc2544_streams": [{"tx": "tester:enp1s0f0", "rx": "tester:enp1s0f1"}]}
    target.write_text(yaml.safe_dump(data))
    loaded = inventory.load(target)
    assert loaded.hosts["tester"].ports["enp1s0f0"].peer_mac == "b4:96:91:00:00:20"
    assert loaded.hosts["dut"].port == 2222 and loaded.hosts["dut"].key_file == "/keys/lab"
    assert [(s.tx_port, s.rx_port) for s in loaded.streams] == [("enp1s0f0", "enp1s0f1")]


def test_init_runs_ip_inside_the_duts_netns(tmp_path, sessions):
    target = tmp_path / "lab.yml"
    assert run_init(str(target), "--tester", "192.0.2.10", "--dut", "192.0.2.10", "--dut-netns", "dut.1",
                    "--known-hosts", str(tmp_path / "kh")) == 0
    assert sessions["dut"].commands[1:] == ["ip netns exec dut.1 ip -j link", "ip netns exec dut.1 ip -j addr",
                                            "ip netns exec dut.1 ip -j neigh"]
    assert sessions["tester"].commands[1] == "ip -j link"
    assert yaml.safe_load(target.read_text())["all"]["children"]["duts"]["hosts"]["dut"]["rfc2544_netns"] == "dut.1"


@pytest.mark.parametrize("args, message", [
    (["--tester", "t;reboot", "--dut", "d"], "rfc2544: --tester 't;reboot' is not [USER@]HOST[:PORT]"),
    (["--tester", "t", "--dut", "d:99999"], "rfc2544: --dut 'd:99999' is not [USER@]HOST[:PORT]"),
    (["--tester", "t", "--dut", "d", "--dut-netns", "x; rm -rf /"],
     "rfc2544: network namespace 'x; rm -rf /' is not a valid name"),
    (["--tester", "t"], "rfc2544: init: --tester and --dut go together (and --dut-netns needs them)"),
])
def test_init_refuses_bad_targets_before_connecting(tmp_path, sessions, capsys, args, message):
    assert run_init(str(tmp_path / "lab.yml"), *args) == 2
    assert capsys.readouterr().err.strip() == message
    assert not sessions and not (tmp_path / "lab.yml").exists()


def test_init_refuses_to_overwrite_unless_forced(tmp_path, sessions, capsys):
    target = tmp_path / "lab.yml"
    target.write_text("mine\n")
    assert run_init(str(target), "--tester", "t", "--dut", "d") == 2
    assert capsys.readouterr().err.strip() == (f"rfc2544: {target}: exists; not overwritten "
                                               "(pass --force, choose another path or remove it)")
    assert target.read_text() == "mine\n" and not sessions
    assert run_init(str(target), "--tester", "t", "--dut", "d", "--force") == 0
    assert "rfc2544_ports" in target.read_text()


def test_init_refuses_a_host_missing_from_known_hosts(tmp_path, capsys):
    known = tmp_path / "known"
    known.write_text("other.example ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n")
    assert run_init(str(tmp_path / "lab.yml"), "--tester", "10.0.0.1:2200", "--dut", "d",
                    "--known-hosts", str(known)) == 3
    assert capsys.readouterr().err.strip() == (
        f"rfc2544: --tester: [10.0.0.1]:2200 has no host key in {known}: ssh to it once "
        "(checking the fingerprint) or pass --known-hosts FILE")


def test_init_proposes_two_ports_joined_to_each_other_as_the_calibration_link(tmp_path, sessions, monkeypatch):
    """A veth pair on the tester, both ends in its namespace (`ip -j link`
    names each end's peer in "link"): no test ports, but the calibration
    link, which loads; a veth whose peer is in another namespace stays a
    test port."""
    def veth(index, name, peer, mac, **extra):
        return {"ifindex": index, "link": peer, "ifname": name, "flags": ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"],
                "operstate": "UP", "link_type": "ether", "address": mac, **extra}
    links = json.loads((DATA / "tester-link.json").read_text()) + [
        veth(20, "cal0", "cal1", "02:00:00:ca:00:00"), veth(21, "cal1", "cal0", "02:00:00:ca:00:01"),
        veth(22, "vx0", "dut9", "02:00:00:ca:00:02", link_netnsid=0)]
    real_run = FakeSession.run

    def run(self, command, check=True):
        if self.name == "tester" and command.endswith("ip -j link"):
            return 0, json.dumps(links), ""
        return real_run(self, command, check)
    monkeypatch.setattr(FakeSession, "run", run)
    target = tmp_path / "lab.yml"
    assert run_init(str(target), "--tester", "root@192.0.2.10", "--dut", "admin@192.0.2.20:2222") == 0
    text = target.read_text()
    data = yaml.safe_load(text)
    tester = data["all"]["children"]["testers"]["hosts"]["tester"]
    assert "cal0" not in ports_of(data, "testers", "tester") and "vx0" in ports_of(data, "testers", "tester")
    assert tester["rfc2544_calibration_link"] == {"tx": "cal0", "rx": "cal1"}
    assert "# cal1: left out, joined to cal0 on this host: a calibration link" in text
    tester["rfc2544_ports"] = [dict(p, role="tx" if p["name"] == "enp1s0f0" else "rx") for p in tester["rfc2544_ports"]]
    data["all"]["vars"] = {"rfc2544_streams": [{"tx": "tester:enp1s0f0", "rx": "tester:enp1s0f1"}]}
    target.write_text(yaml.safe_dump(data))
    assert inventory.load(target).hosts["tester"].calibration_link == ("cal0", "cal1")
