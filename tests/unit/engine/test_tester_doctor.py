"""doctor() against SIMULATED sessions (canned command output, no SSH)."""
from test_tester_sim import make_inventory

from rfc2544.engine.doctor import doctor, parse_host, parse_routes

GOOD = """gen module
gen pgctrl Packet Generator for packet performance testing. Version: 2.75
clock yes
port tx0 up 1 52:54:00:00:00:01
port tx1 up 1 52:54:00:00:00:05
port rx0 up 1 52:54:00:00:00:03
"""
DUT = """clock yes
port dut0 up 1 52:54:00:00:00:02
"""


class Canned:
    def __init__(self, text, peer=""):
        self.text, self.peer, self.commands = text, peer, []

    def run(self, command, timeout=None, check=False):
        self.commands.append(command)
        if "ip neigh" in command:
            return 0, self.peer, ""
        return 0, self.text, ""


def as_dict(results):
    return {check: (ok, detail) for check, ok, detail in results}


def test_all_good(tmp_path):
    inv = make_inventory(tmp_path)
    r = as_dict(doctor(inv, sessions={"tester": Canned(GOOD), "dut": Canned(DUT)}))
    assert r["generator tester"][0] and "rfc2544_pktgen" in r["generator tester"][1]
    assert r["link tester:tx0"][0] and r["mac tester:rx0"][0] and r["mac dut:dut0"][0]
    # tx0 has no peer_ipv4 in this inventory: its peer is found among the DUT's ports
    assert r["peer of tester:tx0"] == (True, "peer_mac 52:54:00:00:00:02 is dut:dut0")
    assert r["clock sync"][0]


def test_problems_are_reported(tmp_path):
    inv = make_inventory(tmp_path)
    bad = GOOD.replace("gen module\n", "").replace("gen pgctrl", "x").replace(
        "port rx0 up 1 52:54:00:00:00:03", "port rx0 down 0 52:54:00:00:00:99")
    r = as_dict(doctor(inv, sessions={"tester": Canned(bad), "dut": Canned("port dut0 missing - -\n")}))
    assert r["generator tester"][0] is False
    assert r["link tester:rx0"][0] is False
    assert r["mac tester:rx0"] == (False, "52:54:00:00:00:99, inventory says 52:54:00:00:00:03")
    assert r["port dut:dut0"][0] is False
    assert r["peer of tester:tx0"][0] is False


def test_peer_checked_by_ping_when_peer_ip_known(tmp_path):
    inv = make_inventory(tmp_path)
    inv.hosts["tester"].ports["tx0"].peer_ipv4 = "198.18.0.2"
    tester = Canned(GOOD, peer="52:54:00:00:00:02\n")
    r = as_dict(doctor(inv, sessions={"tester": tester, "dut": Canned(DUT)}))
    assert r["peer of tester:tx0"] == (True, "198.18.0.2 is at 52:54:00:00:00:02")
    assert any("ping -c 1 -W 1 -I tx0 198.18.0.2" in c for c in tester.commands)
    tester.peer = "52:54:00:00:00:77\n"
    r = as_dict(doctor(inv, sessions={"tester": tester, "dut": Canned(DUT)}))
    assert r["peer of tester:tx0"][0] is False


def test_unreachable_host(tmp_path):
    inv = make_inventory(tmp_path)
    inv.hosts["dut"].address = "127.0.0.1"
    inv.hosts["dut"].port = 1          # nothing listens there
    r = as_dict(doctor(inv, sessions={"tester": Canned(GOOD)}, connect_timeout=2))
    assert r["ssh dut"][0] is False


def test_parse_host():
    f = parse_host("gen loadable\nclock no\nchrony Normal\nport tx0 unknown 1 AA:BB:CC:DD:EE:FF\n")
    assert f["loadable"] and not f["module"] and f["chrony"] == "Normal"
    assert f["ports"]["tx0"] == {"operstate": "unknown", "carrier": "1", "mac": "aa:bb:cc:dd:ee:ff"}


class RoutingDut(Canned):
    """The DUT's canned facts, and `ip route get` answered from `routes`
    ({address: device}; an address left out has no route)."""

    def __init__(self, routes):
        super().__init__(DUT)
        self.routes = routes

    def run(self, command, timeout=None, check=False):
        if "route get" not in command:
            return super().run(command, timeout, check)
        self.commands.append(command)
        asked = [line.split()[2] for line in command.splitlines() if line.startswith("route get ")]
        # `ip -o route get` lines as the kernel prints them; no route: no line (stderr)
        return 0, "".join(f"{a} via 198.19.0.1 dev {self.routes[a]} src 198.19.0.2 uid 0 \\    cache \n"
                          for a in asked if a in self.routes), ""


def routed(networks, skip=()):
    return {f"198.19.{k}.1": "dut1" for k in range(networks) if k not in skip}


def test_the_duts_routes_to_256_networks_are_checked_only_when_asked(tmp_path):
    inv = make_inventory(tmp_path)
    dut = RoutingDut(routed(256))
    r = as_dict(doctor(inv, sessions={"tester": Canned(GOOD), "dut": dut}))
    assert not [c for c in r if c.startswith("routes to")] and not any("route get" in c for c in dut.commands)
    r = as_dict(doctor(inv, sessions={"tester": Canned(GOOD), "dut": dut}, networks=256))
    assert r["routes to 256 networks tester:tx0->tester:rx0"] == (
        True, "dut routes 198.19.0.1 .. 198.19.255.1 (256 /24s) out of dut1")


def test_a_dut_missing_routes_is_named_with_the_networks(tmp_path):
    inv = make_inventory(tmp_path)
    r = as_dict(doctor(inv, sessions={"tester": Canned(GOOD), "dut": RoutingDut(routed(256, skip=(7, 200)))},
                       networks=256))
    ok, detail = r["routes to 256 networks tester:tx0->tester:rx0"]
    assert not ok and detail == "2 of 256 networks not routed out of dut:dut1 like 198.19.0.1: 198.19.7.1, 198.19.200.1"
    wrong = {**routed(256), "198.19.9.1": "dut0"}     # routed back toward the tester's tx side
    r = as_dict(doctor(inv, sessions={"tester": Canned(GOOD), "dut": RoutingDut(wrong)}, networks=256))
    assert "198.19.9.1" in r["routes to 256 networks tester:tx0->tester:rx0"][1]
    r = as_dict(doctor(inv, sessions={"tester": Canned(GOOD), "dut": RoutingDut({})}, networks=2))
    assert r["routes to 2 networks tester:tx0->tester:rx0"] == (
        False, "dut has no route to the stream's own destination 198.19.0.1")


def test_route_lines_are_read_as_ip_prints_them():
    from rfc2544.engine.doctor import parse_routes
    text = ("local 198.19.0.2 dev lo src 198.19.0.2 uid 0 \\    cache <local> \n"
            "198.19.0.1 dev dut1 src 198.19.0.2 uid 0 \\    cache \n"
            "198.19.5.1 via 198.19.0.1 dev dut1 src 198.19.0.2 uid 0 \\    cache \n")
    assert parse_routes(text) == {"198.19.0.2": "lo", "198.19.0.1": "dut1", "198.19.5.1": "dut1"}


def test_the_duts_ipv6_routes_are_checked_with_ipv6(tmp_path):
    """`--networks 256 --ipv6`: the same interface id in the rx port's /64
    and the next 255 (module 1.5's IPv6 destination networks)."""
    inv = make_inventory(tmp_path)
    v6 = {f"2001:2:0:{0x100 + k:x}::1": "dut1" for k in range(256) if k != 0x4e}
    dut = RoutingDut({**routed(256), **v6})
    r = as_dict(doctor(inv, sessions={"tester": Canned(GOOD), "dut": dut}, networks=256))
    assert "routes to 256 IPv6 networks tester:tx0->tester:rx0" not in r       # asked for IPv4 only
    r = as_dict(doctor(inv, sessions={"tester": Canned(GOOD), "dut": dut}, networks=256, ipv6=True))
    assert r["routes to 256 networks tester:tx0->tester:rx0"][0]
    assert r["routes to 256 IPv6 networks tester:tx0->tester:rx0"] == (
        False, "1 of 256 networks not routed out of dut:dut1 like 2001:2:0:100::1: 2001:2:0:14e::1")
    assert "ip -force -6 -o -batch" in dut.commands[-1] and "route get 2001:2:0:1ff::1" in dut.commands[-1]
    assert parse_routes("2001:2:0:14e::1 from :: via 2001:2:0:100::1 dev dut1 proto static src 2001:2:0:100::2 "
                        "metric 1024 pref medium\n") == {"2001:2:0:14e::1": "dut1"}


def test_ipv6_without_networks_is_a_usage_error():
    from click.testing import CliRunner
    from rfc2544.cli.doctor import doctor as doctor_cmd
    r = CliRunner().invoke(doctor_cmd, ["--ipv6"])
    assert r.exit_code == 2 and "give --networks N or --sources N (N > 1) with it" in r.output and "Traceback" not in r.output


QUEUES = """thread 0
thread 1
queues tx0 4 4 0
irq tx0 41 0 tx0-TxRx-0
irq tx0 42 1 tx0-TxRx-1
irq tx0 43 0 tx0
queues rx0 1 1 -1
rps rx0 rx-0 00000003
queues tx1 1 1 -1
"""


def test_queues_cpus_and_generators_are_named(tmp_path):
    """Each tester port's queues, NUMA node and IRQ CPUs; each stream's
    generators with the CPU and queue they would use; the receiving port's
    counting CPUs; a stream with more generators than TX queues fails."""
    inv = make_inventory(tmp_path)
    inv.hosts["tester"].ports["tx0"].generators = 2
    r = as_dict(doctor(inv, sessions={"tester": Canned(GOOD + QUEUES), "dut": Canned(DUT)}))
    ok, detail = r["queues tester:tx0"]
    assert ok and detail.startswith("4 TX, 4 RX queues; NUMA node 0; IRQ CPUs 0,1; RPS CPUs off; "
                                    "TX queue IRQs 0 on CPU 0, 1 on CPU 1;"), detail
    assert "2 generator(s): tx0@0 on CPU 0 queue 0, tx0@1 on CPU 1 queue 1" in detail, detail
    ok, detail = r["queues tester:rx0"]
    assert ok and "NUMA node none" in detail and "counted on CPU(s) 0,1" in detail, detail
    two = make_inventory(tmp_path, streams=(("tester:tx1", "tester:rx0"),))
    two.hosts["tester"].ports["tx1"].generators = 2
    r = as_dict(doctor(two, sessions={"tester": Canned(GOOD + QUEUES), "dut": Canned(DUT)}))
    ok, detail = r["queues tester:tx1"]
    assert not ok and "only 1 TX queue(s): they would share one" in detail, detail


def test_the_receiving_port_s_hash_is_named(tmp_path):
    """A receiving port with RSS over 4 queues (simulated doctor output):
    the fields it hashes UDP on; hashing on addresses only warns that
    port-only flows share a queue; with the ports it does not."""
    inv = make_inventory(tmp_path)
    rss = QUEUES.replace("queues rx0 1 1 -1\nrps rx0 rx-0 00000003\n",
                         "queues rx0 4 4 0\nirq rx0 51 0 rx0-TxRx-0\nirq rx0 52 1 rx0-TxRx-1\n")
    l3 = "rxhash udp4 rx0 IP SA;IP DA\nrxhash udp6 rx0 IP SA;IP DA\n"
    r = as_dict(doctor(inv, sessions={"tester": Canned(GOOD + rss + l3), "dut": Canned(DUT)}))
    ok, detail = r["queues tester:rx0"]
    assert ok and ("counted on CPU(s) 0,1: RSS over 4 RX queues hashing UDP/IPv4 and IPv6 on IP SA, IP DA"
                   in detail), detail
    assert "IPv4 and IPv6 flows that differ only in UDP ports (flow_spread udp_ports) share one queue" in detail, detail
    assert "'ethtool -N rx0 rx-flow-hash udp4 sdfn' hashes the ports too, and the same for udp6" in detail, detail
    l4 = "L4 bytes 0 & 1 [TCP/UDP src port];L4 bytes 2 & 3 [TCP/UDP dst port]"
    r = as_dict(doctor(inv, sessions={"tester": Canned(GOOD + rss + f"rxhash udp4 rx0 IP SA;IP DA;{l4}\n"
                                                       f"rxhash udp6 rx0 IP SA;IP DA;{l4}\n"),
                                      "dut": Canned(DUT)}))
    ok, detail = r["queues tester:rx0"]
    assert "hashing UDP/IPv4 and IPv6 on IP SA, IP DA, L4 bytes 0 & 1" in detail and "share one queue" not in detail, detail
    # a driver that hashes the ports of IPv4 only: the IPv6 flows are named apart
    r = as_dict(doctor(inv, sessions={"tester": Canned(GOOD + rss + f"rxhash udp4 rx0 IP SA;IP DA;{l4}\n"
                                                       "rxhash udp6 rx0 IP SA;IP DA\n"),
                                      "dut": Canned(DUT)}))
    ok, detail = r["queues tester:rx0"]
    assert "hashing UDP/IPv4 on IP SA, IP DA, L4 bytes 0 & 1" in detail, detail
    assert "hashing UDP/IPv6 on IP SA, IP DA" in detail, detail
    assert "IPv6 flows that differ only in UDP ports" in detail and "IPv4 flows" not in detail, detail
    assert "'ethtool -N rx0 rx-flow-hash udp6 sdfn' hashes the ports too)" in detail, detail
    # one queue, no RPS: one CPU counts everything
    r = as_dict(doctor(inv, sessions={"tester": Canned(GOOD + QUEUES.replace("rps rx0 rx-0 00000003\n", "")),
                                      "dut": Canned(DUT)}))
    assert r["queues tester:rx0"][1].endswith("counted on one CPU: one RX queue, no RPS"), r["queues tester:rx0"]


def test_the_clock_check_states_the_bound_a_run_would(tmp_path):
    """Two hosts' doctor facts (simulated), each with chrony's tracking:
    the cross-host check names the sum of their bounds."""
    from rfc2544.engine.doctor import _clock_checks
    chrony = ("clock yes\n@chrony\n50484330,PHC0,1,1709727533.1,0.000100000,0.0,0.0,1.2,0.0,0.1,"
              "0.000200000,0.000300000,8.0,Normal\n@end\nport tx0 up 1 aa:bb:cc:dd:ee:ff\n")
    facts = {"a": parse_host(chrony), "b": parse_host(chrony)}
    assert facts["a"]["ports"]["tx0"]["operstate"] == "up"       # the clock lines leave the rest alone
    inv = type("Inv", (), {"streams": [type("S", (), {"tx_host": "a", "rx_host": "b"})()]})()
    ((check, ok, detail),) = _clock_checks(inv, facts)
    # each: 0.1 ms offset + 0.3 ms dispersion + 0.2 ms delay / 2 = 0.5 ms
    assert check == "clock sync a->b" and ok and detail.endswith("latency error bound ± 1 ms")
    facts["b"] = parse_host("clock no\n@chrony\n@end\n")
    assert "latency error bound unbounded: cross-host latency will be wrong" in _clock_checks(inv, facts)[0][2]
