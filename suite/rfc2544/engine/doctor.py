"""`doctor`: are the inventory's hosts ready for a run?

doctor(inventory) -> [(check, ok, detail), ...], one entry per check:
SSH reachable with a verified host key; a generator available (our module or
the in-tree pktgen); every port present, up and with the inventory's MAC;
tx ports' peers answering with the inventory's peer MAC; clocks synchronised
when a stream is sent and received on different hosts (latency across hosts
needs it); with `networks` > 1, the DUT's routes for a stream's destination
networks (profile flow_spread: dst_networks); each tester port's queues, NUMA
node and IRQ CPUs (each TX queue's own IRQ), with the CPUs and TX queues its
streams' generators would use and the CPUs that count what it receives.
Nothing is changed on the hosts except the neighbour entry a ping to a peer
creates.
"""
import ipaddress
import json
import re
from dataclasses import replace

from rfc2544.errors import Rfc2544Error
from rfc2544.drivers.ssh import SSHHost, quote

from rfc2544.drivers import pktgen, validate
from rfc2544.drivers.clock import CLOCK_SCRIPT, format_error, pair_error, parse_clock
from rfc2544.drivers.probe import QUEUE_SCRIPT, parse_probe
from rfc2544.drivers.streams import stream_ends
from rfc2544.drivers.session import HostSession
from rfc2544.engine.doctor_queues import HASH_FAMILIES, queue_checks

HOST_SCRIPT = r"""p=/proc/net/pktgen
[ -e $p/pgrx ] && echo "gen module"
[ -e $p/pgctrl ] && echo "gen pgctrl $(head -n1 $p/pgctrl)"
modprobe -n pktgen >/dev/null 2>&1 && echo "gen loadable"
echo "clock $(timedatectl show -p NTPSynchronized --value 2>/dev/null || echo unknown)"
command -v chronyc >/dev/null 2>&1 && echo "chrony $(chronyc -n tracking 2>/dev/null | sed -n 's/^Leap status *: *//p')"
for f in $p/kpktgend_*; do [ -e "$f" ] && echo "thread ${f##*_}"; done
"""


def _port_script(ports):
    lines = []
    for name in ports:
        q = quote(validate.ifname(name))
        d = f"/sys/class/net/{q}"
        lines.append(f'echo "port {name} $(cat {d}/operstate 2>/dev/null || echo missing) '
                     f'$(cat {d}/carrier 2>/dev/null || echo -) '
                     f'$(cat {d}/address 2>/dev/null || echo -)"')
        # the fields its RSS hashes UDP over IPv4 and IPv6 on (ethtool's
        # lines after the first, joined; nothing where the driver offers no RSS)
        for family in HASH_FAMILIES:
            lines.append(f'echo "rxhash {family} {name} $(ethtool -n {q} rx-flow-hash {family} 2>/dev/null | '
                         f"tail -n +2 | sed '/^$/d' | paste -sd ';')\"")
    return "\n".join(lines)




def _peer_script(port, peer_ip):
    ifq, ipq = quote(validate.ifname(port)), quote(peer_ip)
    ping = "ping -6" if ":" in peer_ip else "ping"
    return (f"{ping} -c 1 -W 1 -I {ifq} {ipq} >/dev/null 2>&1; "
            f"ip neigh show {ipq} dev {ifq} | sed -n 's/.*lladdr \\([0-9a-f:]*\\).*/\\1/p' | head -n1")


def parse_host(text):
    """Pure: the host script's output -> dict ("probe": its queues, IRQs,
    NUMA nodes and threads as drivers.probe parses them)."""
    facts = {"module": False, "pgctrl": None, "loadable": False, "clock": "unknown", "chrony": None, "ports": {},
             "rx_hash": {}}
    for line in text.splitlines():
        word, _, rest = line.partition(" ")
        if word == "gen":
            kind, _, banner = rest.partition(" ")
            if kind == "module":
                facts["module"] = True
            elif kind == "pgctrl":
                facts["pgctrl"] = banner.strip()
            elif kind == "loadable":
                facts["loadable"] = True
        elif word == "clock":
            facts["clock"] = rest.strip() or "unknown"
        elif word == "chrony":
            facts["chrony"] = rest.strip() or None
        elif word == "rxhash":
            family, _, rest = rest.partition(" ")
            name, _, fields = rest.partition(" ")
            if family in HASH_FAMILIES:
                facts["rx_hash"].setdefault(name, {})[family] = [f.strip() for f in fields.split(";") if f.strip()]
        elif word == "port":
            parts = rest.split()
            if len(parts) == 4:
                name, state, carrier, mac = parts
                facts["ports"][name] = {"operstate": state, "carrier": carrier, "mac": mac.lower()}
    facts["clock_state"] = parse_clock(text)    # the bound a run states (drivers/clock.py)
    facts["probe"] = parse_probe(text)
    return facts


def _synced(facts):
    return facts["clock"] == "yes" or (facts["chrony"] or "").lower() == "normal"


def doctor(inventory, *, sessions=None, connect_timeout=10.0, networks=1, ipv6=False, sources=1,
           bidirectional=False, generators=None, every_cpu=False):
    """Check every host of `inventory`; returns [(check, ok, detail)].

    `sessions`: host name -> session with `.run(cmd)` (tests only).
    `networks`: check that the DUT routes this many destination /24s per
    stream (RFC 2544 section 12) like the stream's own destination;
    `ipv6`: the destination /64s too (flow_spread dst_networks over IPv6).
    `sources`: check that the DUT routes this many source addresses per
    stream (flow_spread src_addresses) back out of the stream's ingress.
    `bidirectional`: every check covers the reverse streams too (profile
    direction: bi; streams.stream_ends), whose rx ports send."""
    inventory = replace(inventory, streams=stream_ends(inventory, bidirectional))
    results = []
    sessions = dict(sessions or {})
    connections = {}
    facts = {}
    try:
        for name, host in sorted(inventory.hosts.items()):
            where = f"{host.user}@{host.address}:{host.port}"
            if name not in sessions:
                key = (host.address, host.port, host.user)
                try:
                    if key not in connections:
                        connections[key] = SSHHost.connect(name, host.address, host.port, host.user,
                                                           host.key_file, host.known_hosts, timeout=connect_timeout)
                    sessions[name] = HostSession(connections[key], host.netns)
                except Rfc2544Error as exc:
                    results.append((f"ssh {name}", False, str(exc)))
                    continue
                results.append((f"ssh {name}", True, f"{where}, host key verified against {host.known_hosts}"))
            try:
                script = (HOST_SCRIPT + "\n" + CLOCK_SCRIPT + '\necho "@end"\n' + _port_script(sorted(host.ports))
                          + "\n" + QUEUE_SCRIPT)
                facts[name] = parse_host(sessions[name].run(script, timeout=30)[1])
            except Rfc2544Error as exc:
                results.append((f"commands on {name}", False, str(exc)))
                continue
            results += _host_checks(inventory, name, host, facts[name])
        results += _peer_checks(inventory, sessions, facts)
        results += _clock_checks(inventory, facts)
        if networks > 1:
            results += _route_checks(inventory, sessions, facts, networks)
            if ipv6:
                results += _route_checks(inventory, sessions, facts, networks, ipv6=True)
        if sources > 1:
            results += _source_checks(inventory, sessions, facts, sources)
            if ipv6:
                results += _source_checks(inventory, sessions, facts, sources, ipv6=True)
        results += _vlan_checks(inventory, sessions, facts)
        results += queue_checks(inventory, facts, generators, every_cpu)
    finally:
        for c in connections.values():
            c.close()
    return results


def _host_checks(inventory, name, host, f):
    out = []
    tx_host = any(s.tx_host == name for s in inventory.streams)
    rx_host = any(s.rx_host == name for s in inventory.streams)
    if tx_host:
        if f["module"]:
            out.append((f"generator {name}", True, f"rfc2544_pktgen loaded ({f['pgctrl'] or 'no banner'}), receiver pgrx"))
        elif f["pgctrl"]:
            out.append((f"generator {name}", True, f"in-tree pktgen loaded ({f['pgctrl']}); "
                        "receiver: interface counters (lower fidelity)"))
        elif f["loadable"]:
            out.append((f"generator {name}", True, "in-tree pktgen not loaded but loadable (modprobe pktgen); "
                        "receiver: interface counters (lower fidelity)"))
        else:
            out.append((f"generator {name}", False, "neither rfc2544_pktgen nor the in-tree pktgen is available"))
    if rx_host and not tx_host:
        out.append((f"receiver {name}", True, "pgrx" if f["module"] else "interface counters (lower fidelity)"))
    for pname, port in sorted(host.ports.items()):
        got = f["ports"].get(pname)
        label = f"{name}:{pname}"
        if got is None or got["operstate"] == "missing":
            out.append((f"port {label}", False, "no such interface" + (f" in netns {host.netns}" if host.netns else "")))
            continue
        up = got["operstate"] == "up" or (got["operstate"] == "unknown" and got["carrier"] == "1")
        out.append((f"link {label}", up, f"operstate {got['operstate']}, carrier {got['carrier']}"))
        ok = got["mac"] == port.mac.lower()
        out.append((f"mac {label}", ok, f"{got['mac']}" + ("" if ok else f", inventory says {port.mac.lower()}")))
    return out


def port_owners(inventory):
    """{MAC: (host, port)} of every inventory port: whose a peer MAC is."""
    return {port.mac.lower(): (hname, pname)
            for hname, host in inventory.hosts.items() for pname, port in host.ports.items()}


NO_DUT = ("the DUT is not in the inventory or did not answer (the tx port's "
          "peer_mac names no port of a reachable host)")


def _dut_of(inventory, owners, stream):
    """(host, port) where `stream` enters the DUT: the owner of its tx
    port's peer MAC (owners: port_owners), or (None, None)."""
    tx_port = inventory.hosts[stream.tx_host].ports[stream.tx_port]
    return owners.get((tx_port.peer_mac or "").lower(), (None, None))


def _peer_checks(inventory, sessions, facts):
    out = []
    dut_macs = port_owners(inventory)
    for s in inventory.streams:
        host = inventory.hosts[s.tx_host]
        port = host.ports[s.tx_port]
        label = f"peer of {s.tx_host}:{s.tx_port}"
        if s.tx_host not in facts:
            continue
        if not port.peer_mac:
            out.append((label, False, "no peer_mac: a port that sends needs the DUT's MAC on its link "
                                      "(with direction bi the rx ports send too)"))
            continue
        want = port.peer_mac.lower()
        if port.peer_ipv4 or port.peer_ipv6:
            peer_ip = validate.ipv4(port.peer_ipv4) if port.peer_ipv4 else validate.ipv6(port.peer_ipv6)
            try:
                got = sessions[s.tx_host].run(_peer_script(s.tx_port, peer_ip), timeout=15)[1].strip().lower()
            except Rfc2544Error as exc:
                out.append((label, False, str(exc)))
                continue
            if not got:
                out.append((label, False, f"{peer_ip} did not answer on {s.tx_port} (no neighbour entry)"))
            else:
                out.append((label, got == want, f"{peer_ip} is at {got}" + ("" if got == want else f", inventory peer_mac {want}")))
        elif want in dut_macs:
            owner = dut_macs[want]
            seen = facts.get(owner[0], {}).get("ports", {}).get(owner[1])
            ok = seen is not None and seen["mac"] == want and seen["operstate"] == "up"
            out.append((label, ok, f"peer_mac {want} is {owner[0]}:{owner[1]}" + ("" if ok else " (not up or MAC differs)")))
    return out


def _clock_checks(inventory, facts):
    cross = sorted({(s.tx_host, s.rx_host) for s in inventory.streams if s.tx_host != s.rx_host})
    if not cross:
        return [("clock sync", True, "not needed: every stream is sent and received on the same host")]
    out = []
    for tx, rx in cross:
        states = {h: facts.get(h) for h in (tx, rx)}
        missing = [h for h, f in states.items() if f is None]
        if missing:
            out.append((f"clock sync {tx}->{rx}", False, f"could not read {', '.join(missing)}"))
            continue
        ok = all(_synced(f) for f in states.values())
        detail = ", ".join(f"{h}: NTPSynchronized={f['clock']}" + (f", chrony leap {f['chrony']}" if f["chrony"] else "")
                           for h, f in states.items())
        error = pair_error([f["clock_state"] for f in states.values() if "clock_state" in f])
        detail += f"; latency error bound {'unbounded' if error is None else '± ' + format_error(error)}"
        out.append((f"clock sync {tx}->{rx}", ok, detail + ("" if ok else ": cross-host latency will be wrong")))
    return out


def _route_script(addresses, ipv6=False):
    """How the host routes each address: one `ip -batch` process (a
    process per address took over 60 s for 256 on a loaded TCG lab);
    -force goes on past an address with no route."""
    check = validate.ipv6 if ipv6 else validate.ipv4
    return (f"ip -force -{6 if ipv6 else 4} -o -batch - <<'EOF'\n"
            + "".join(f"route get {check(a)}\n" for a in addresses) + "EOF")


_ROUTE_RE = re.compile(r"^(?:[a-z]+ )?(\d+\.\d+\.\d+\.\d+|[0-9a-fA-F:]*:[0-9a-fA-F:.]*)(?=\s).*? dev (\S+)")


def parse_routes(text):
    """Pure: `ip -o route get` lines -> {address: device}; an address
    with no route has no line (its error went to stderr)."""
    out = {}
    for line in text.splitlines():
        m = _ROUTE_RE.match(line.strip())
        if m:
            out[m.group(1)] = m.group(2)
    return out


def _route_checks(inventory, sessions, facts, networks, ipv6=False):
    """Each stream's `networks` destination networks (its rx port's address
    and the same host part in the next networks - 1 /24s, or over IPv6 the
    same interface id in the next /64s) must leave the DUT (the owner of
    the tx port's peer MAC) the way the stream's own destination does."""
    owners = port_owners(inventory)
    family, size, step, top = (("IPv6", "/64s", 1 << 64, (1 << 128) - 1) if ipv6
                               else ("IPv4", "/24s", 256, 0xFFFFFFFF))
    address = ipaddress.IPv6Address if ipv6 else ipaddress.IPv4Address
    out = []
    for s in inventory.streams:
        label = (f"routes to {networks} {'IPv6 ' if ipv6 else ''}networks "
                 f"{s.tx_host}:{s.tx_port}->{s.rx_host}:{s.rx_port}")
        dut, _ = _dut_of(inventory, owners, s)
        rx = inventory.hosts[s.rx_host].ports[s.rx_port]
        rx_ip = rx.ipv6 if ipv6 else rx.ipv4
        if dut is None or dut not in facts:
            out.append((label, False, NO_DUT))
            continue
        if not rx_ip:
            out.append((label, False, f"{s.rx_host}:{s.rx_port} has no {family} address"))
            continue
        first = int(address((validate.ipv6 if ipv6 else validate.ipv4)(rx_ip)))
        addresses = [address(first + k * step).compressed for k in range(networks) if first + k * step <= top]
        try:
            routes = parse_routes(sessions[dut].run(_route_script(addresses, ipv6), timeout=60)[1])
        except Rfc2544Error as exc:
            out.append((label, False, str(exc)))
            continue
        way = routes.get(addresses[0])
        astray = [a for a in addresses if routes.get(a) != way]
        if way is None:
            out.append((label, False, f"{dut} has no route to the stream's own destination {addresses[0]}"))
        elif astray:
            out.append((label, False, f"{len(astray)} of {networks} networks not routed out of {dut}:{way} like "
                                      f"{addresses[0]}: {', '.join(astray[:4])}{' ...' if len(astray) > 4 else ''}"))
        else:
            out.append((label, True, f"{dut} routes {addresses[0]} .. {addresses[-1]} ({networks} {size}) out of {way}"))
    return out


def _source_checks(inventory, sessions, facts, sources, ipv6=False):
    """Each stream's `sources` source addresses (pktgen.source_range) must
    route back out of the DUT port the stream comes in on (the owner of the
    tx port's peer MAC): a DUT that filters by reverse path drops the
    frames of any other."""
    owners = port_owners(inventory)
    out = []
    for s in inventory.streams:
        label = (f"routes back to {sources} {'IPv6 ' if ipv6 else ''}sources "
                 f"{s.tx_host}:{s.tx_port}->{s.rx_host}:{s.rx_port}")
        tx_port = inventory.hosts[s.tx_host].ports[s.tx_port]
        dut, dut_port = _dut_of(inventory, owners, s)
        tx_ip = tx_port.ipv6 if ipv6 else tx_port.ipv4
        if dut is None or dut not in facts:
            out.append((label, False, NO_DUT))
            continue
        if not tx_ip:
            out.append((label, False, f"{s.tx_host}:{s.tx_port} has no {'IPv6' if ipv6 else 'IPv4'} address"))
            continue
        try:
            if ipv6:
                first, _ = pktgen.source_range6(validate.ipv6(tx_ip), sources)
                address = ipaddress.IPv6Address
            else:
                first, _ = pktgen.source_range(validate.ipv4(tx_ip), sources)
                address = ipaddress.IPv4Address
            start = int(address(first))
            addresses = [address(start + k).compressed for k in range(sources)]
            routes = parse_routes(sessions[dut].run(_route_script(addresses, ipv6), timeout=60)[1])
        except Rfc2544Error as exc:
            out.append((label, False, str(exc)))
            continue
        ingress = inventory.hosts[dut].ports[dut_port].name
        astray = [a for a in addresses if routes.get(a) != ingress]
        if astray:
            out.append((label, False, f"{len(astray)} of {sources} sources not routed back out of {dut}:{ingress}, "
                                      f"where the stream comes in: {', '.join(astray[:4])}"
                                      f"{' ...' if len(astray) > 4 else ''}"))
        else:
            out.append((label, True, f"{dut} routes {addresses[0]} .. {addresses[-1]} back out of {ingress}"))
    return out


def parse_vlan_devices(text):
    """Pure: `ip -d -j link show` -> {(link, protocol, id): name} of the
    host's VLAN devices, protocol in capitals ("802.1Q", "802.1AD")."""
    out = {}
    try:
        links = json.loads(text or "[]")
    except ValueError:
        return out
    for link in links if isinstance(links, list) else []:
        info = link.get("linkinfo") or {}
        data = info.get("info_data") or {}
        if info.get("info_kind") == "vlan" and link.get("link") and "id" in data:
            out[(link["link"], str(data.get("protocol", "802.1Q")).upper(), int(data["id"]))] = link.get("ifname")
    return out


def _vlan_checks(inventory, sessions, facts):
    """A tagged stream needs the DUT (the owner of the tx port's peer MAC)
    to take its tags on the port it comes in on: an 802.1Q device of its
    `vlan` there, on an 802.1ad device of its `svlan` for QinQ (a Linux
    DUT; a DUT that bridges tags is not a host of the inventory)."""
    owners = port_owners(inventory)
    tagged = [s for s in inventory.streams if s.tags.vlan is not None]
    out, devices = [], {}
    for s in tagged:
        dut, dut_port = _dut_of(inventory, owners, s)
        label = f"VLAN tags at the DUT {s.tx_host}:{s.tx_port}->{s.rx_host}:{s.rx_port}"
        if dut is None or dut not in facts:
            continue        # not a host of the inventory (or unreachable: said above)
        if dut not in devices:
            try:
                devices[dut] = parse_vlan_devices(sessions[dut].run("ip -d -j link show", timeout=30)[1])
            except Rfc2544Error as exc:
                out.append((label, False, str(exc)))
                continue
        ingress = inventory.hosts[dut].ports[dut_port].name
        have = devices[dut]
        if s.tags.svlan is None:
            name = have.get((ingress, "802.1Q", s.tags.vlan))
            want = f"802.1Q device of VLAN {s.tags.vlan} on {ingress}"
        else:
            outer = have.get((ingress, "802.1AD", s.tags.svlan))
            name = outer and have.get((outer, "802.1Q", s.tags.vlan))
            want = f"802.1Q device of VLAN {s.tags.vlan} on an 802.1ad device of VLAN {s.tags.svlan} on {ingress}"
        if name:
            out.append((label, True, f"{dut} takes the tags on {name}"))
        else:
            out.append((label, False, f"{dut} has no {want}: it drops the stream's tagged frames "
                                      "(inventory/README.md, VLAN and QinQ tags)"))
    return out
