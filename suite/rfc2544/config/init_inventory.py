"""`rfc2544 init FILE --tester ... --dut ...`: an inventory from the hosts.

Connects to the tester and the DUT with the suite's verified SSH (SSHHost),
reads `ip -j link`, `ip -j addr` and `ip -j neigh` (inside the DUT's netns
when given) and writes a commented inventory: the test ports with their MACs
and addresses, peer_mac where a neighbour table knows it. Roles of the
tester's ports and the streams are left for the user, marked CHOOSE.
"""
import json
import re
from pathlib import Path

from rfc2544.drivers import validate
from rfc2544.errors import BadInput, InfraError
from rfc2544.drivers.ssh import SSHHost, quote

# [USER@]HOST[:PORT], HOST a name, an IPv4 address or a [bracketed] IPv6 one.
TARGET_RE = re.compile(r"^(?:(?P<user>[A-Za-z_][A-Za-z0-9_.-]{0,31})@)?"
                       r"(?P<host>[A-Za-z0-9][A-Za-z0-9.-]{0,252}|\[[0-9A-Fa-f:.]+\])"
                       r"(?::(?P<port>[0-9]{1,5}))?$")
ROLE_PLACEHOLDER = "CHOOSE"
BAD_NEIGH_STATES = {"FAILED", "INCOMPLETE"}


def parse_target(value, option):
    """(user, host, port) of `[USER@]HOST[:PORT]`; BadInput otherwise."""
    match = TARGET_RE.fullmatch(value or "")
    port = int(match.group("port") or 22) if match else 0
    if not match or not 0 < port < 65536:
        raise BadInput(f"{option} {value!r} is not [USER@]HOST[:PORT]")
    return match.group("user") or "root", match.group("host").strip("[]"), port


def check_known(host, port, known_hosts, option):
    """Refuse before connecting when known_hosts has no key for the host:
    the suite never trusts a key on first use."""
    import paramiko
    keys = paramiko.HostKeys()
    try:
        keys.load(str(known_hosts))
    except OSError as exc:
        raise InfraError(f"{option}: cannot read known_hosts {known_hosts}: {exc.strerror}")
    name = host if port == 22 else f"[{host}]:{port}"
    if keys.lookup(name) is None:
        raise InfraError(f"{option}: {name} has no host key in {known_hosts}: ssh to it once "
                         f"(checking the fingerprint) or pass --known-hosts FILE")


def connect_host(name, host, port, user, key_file, known_hosts):
    check_known(host, port, known_hosts, f"--{name}")
    return SSHHost.connect(name, host, port, user, key_file, known_hosts)


def _ip_json(session, netns, what):
    prefix = f"ip netns exec {quote(validate.netns(netns))} " if netns else ""
    _, out, _ = session.run(f"{prefix}ip -j {what}")
    try:
        return json.loads(out or "[]")
    except ValueError:
        raise InfraError(f"{session.name}: 'ip -j {what}' did not print JSON (iproute2 too old?)")


def management_address(session):
    """The host's address of this SSH connection (sshd's SSH_CONNECTION):
    the interface holding it carries management traffic, never tests."""
    _, out, _ = session.run("echo \"$SSH_CONNECTION\"", check=False)
    fields = out.split()
    return fields[2] if len(fields) == 4 else None


def _addresses(addr_entry):
    """(ipv4, ipv6, all local addresses) of one `ip -j addr` entry; only
    global addresses become the port's (link-local ones are per link)."""
    ipv4 = ipv6 = None
    local = set()
    for info in addr_entry.get("addr_info", []):
        local.add(info.get("local"))
        if info.get("scope") != "global":
            continue
        text = f"{info['local']}/{info['prefixlen']}"
        if info.get("family") == "inet" and ipv4 is None:
            ipv4 = text
        elif info.get("family") == "inet6" and ipv6 is None:
            ipv6 = text
    return ipv4, ipv6, local


def _neighbours(neigh):
    """{dev: {"macs": {mac...}, "ipv4": addr, "ipv6": addr}} of usable entries."""
    by_dev = {}
    for entry in neigh:
        mac = entry.get("lladdr")
        if not mac or BAD_NEIGH_STATES.intersection(entry.get("state", [])):
            continue
        peer = by_dev.setdefault(entry.get("dev"), {"macs": set(), "ipv4": None, "ipv6": None})
        peer["macs"].add(mac.lower())
        family = "ipv6" if ":" in entry.get("dst", "") else "ipv4"
        if not entry["dst"].startswith("fe80:") and peer[family] is None:
            peer[family] = entry["dst"]
    return by_dev


def discover(session, netns=None, mgmt=None):
    """Ports of one host: a list of dicts (name, mac, ipv4, ipv6, up,
    peer_mac, peer_ipv4, peer_ipv6, skip: why it is no test port or None)."""
    links = _ip_json(session, netns, "link")
    addrs = {a.get("ifname"): a for a in _ip_json(session, netns, "addr")}
    neigh = _neighbours(_ip_json(session, netns, "neigh"))
    ports = []
    for link in links:
        name = link.get("ifname", "")
        ipv4, ipv6, local = _addresses(addrs.get(name, {}))
        peer = neigh.get(name, {"macs": set(), "ipv4": None, "ipv6": None})
        port = {"name": name, "mac": (link.get("address") or "").lower(), "ipv4": ipv4, "ipv6": ipv6,
                "up": link.get("operstate") == "UP" or "LOWER_UP" in link.get("flags", []),
                "peer_mac": next(iter(peer["macs"])) if len(peer["macs"]) == 1 else None,
                "peer_ipv4": peer["ipv4"], "peer_ipv6": peer["ipv6"], "peers": len(peer["macs"])}
        port["skip"] = _skip_reason(link, port, local, mgmt)
        ports.append(port)
    # two ports joined to each other on this host (a veth pair here, in this
    # namespace): a calibration link, never a path through the DUT
    by_name = {link.get("ifname"): link for link in links}
    for port in ports:
        peer = by_name.get(by_name[port["name"]].get("link"))
        if (port["skip"] is None and peer is not None and peer.get("link") == port["name"]
                and "link_netnsid" not in by_name[port["name"]]):
            port["joined_to"] = peer["ifname"]
            port["skip"] = f"joined to {peer['ifname']} on this host: a calibration link, not a test port"
    return ports


def _skip_reason(link, port, local, mgmt):
    if link.get("link_type") == "loopback" or "LOOPBACK" in link.get("flags", []):
        return "loopback"
    if mgmt and mgmt in local:
        return f"carries this SSH connection ({mgmt}): management, not a test port"
    if link.get("link_type") != "ether" or not validate.MAC_RE.fullmatch(port["mac"]):
        return f"not an Ethernet port (link type {link.get('link_type')})"
    problem = validate.ifname_problem(port["name"])
    if problem:
        return f"name not usable by the suite ({problem})"
    return None


def _q(value):
    """A YAML double-quoted scalar (JSON's string syntax is YAML's)."""
    return json.dumps(str(value))


def _port_lines(port, role, macs_elsewhere):
    state = "up" if port["up"] else "DOWN: cable it or 'ip link set dev ... up' before a run"
    if role == ROLE_PLACEHOLDER:
        role_note = "  # CHOOSE: tx (sends) or rx (receives through the DUT)"
    else:
        role_note = ""
    lines = [f"            - name: {_q(port['name'])}    # link {state}",
             f"              role: {role}{role_note}",
             f"              mac: {_q(port['mac'])}"]
    lines += [f"              {key}: {_q(port[key])}" for key in ("ipv4", "ipv6") if port[key]]
    if port["peer_mac"]:
        whose = macs_elsewhere.get(port["peer_mac"])
        note = whose or "from the neighbour table"
        lines.append(f"              peer_mac: {_q(port['peer_mac'])}    # {note}")
    elif port["peers"] > 1:
        lines.append("              # peer_mac: several neighbours on this port: set the one across the cable")
    else:
        lines.append("              # peer_mac: unknown (no neighbour entry): set the MAC across the cable")
    lines += [f"              {key}: {_q(port[key])}" for key in ("peer_ipv4", "peer_ipv6") if port[key]]
    return lines


def _host_lines(name, target, key_file, known_hosts, netns, ports, role, macs_elsewhere):
    user, host, port = target
    lines = [f"        {name}:", f"          ansible_host: {_q(host)}"]
    if port != 22:
        lines.append(f"          ansible_port: {port}")
    lines.append(f"          ansible_user: {_q(user)}")
    if key_file:
        lines.append(f"          ansible_ssh_private_key_file: {_q(key_file)}")
    lines += ["          # host keys are verified against this file",
              f"          rfc2544_known_hosts: {_q(known_hosts)}",
              f"          ansible_ssh_common_args: {_q(f'-o UserKnownHostsFile={known_hosts} -o StrictHostKeyChecking=yes')}"]
    if netns:
        lines.append(f"          rfc2544_netns: {_q(netns)}")
    joined = sorted(p["name"] for p in ports if p.get("joined_to"))
    if joined and role == ROLE_PLACEHOLDER:
        tx = joined[0]
        rx = next(p["joined_to"] for p in ports if p["name"] == tx)
        lines += ["          # two ports joined to each other: where the in-tree pktgen's pacing is measured",
                  f"          rfc2544_calibration_link: {{tx: {_q(tx)}, rx: {_q(rx)}}}"]
    lines.append("          rfc2544_ports:")
    for p in ports:
        if p["skip"]:
            lines.append(f"            # {p['name']}: left out, {p['skip']}")
        else:
            lines += _port_lines(p, role, macs_elsewhere)
    return lines


def render(tester, dut, key_file, known_hosts, netns, tester_ports, dut_ports):
    """The inventory text for the discovered ports (see module doc)."""
    macs = {"tester": {p["mac"]: p["name"] for p in tester_ports if not p["skip"]},
            "dut": {p["mac"]: p["name"] for p in dut_ports if not p["skip"]}}
    names = [p["name"] for p in tester_ports if not p["skip"]]
    example = (names + ["TX_PORT", "RX_PORT"])[:2] if len(names) < 2 else names[:2]
    lines = ["# Written by 'rfc2544 init' from the hosts' 'ip -j link/addr/neigh'.",
             "# To edit before use (inventory/README.md documents every field):",
             f"#  - each tester port's role: replace {ROLE_PLACEHOLDER} with tx or rx,",
             "#  - rfc2544_streams below: which tx port sends through the DUT to which rx port,",
             "#  - peer_mac where it is unknown: the MAC of the port across the cable",
             "#    (a tx port's peer_mac is the DUT ingress port's MAC: every frame goes to it),",
             "#  - remove ports that are not cabled for the test.",
             "# Then check it with 'rfc2544 doctor -i THIS_FILE'.",
             "all:", "  vars:",
             "    # CHOOSE: uncomment and name a tx and an rx port of the tester",
             "    # rfc2544_streams:",
             f"    #   - tx: tester:{example[0]}", f"    #     rx: tester:{example[1]}",
             "  children:", "    testers:", "      hosts:"]
    lines += _host_lines("tester", tester, key_file, known_hosts, None, tester_ports,
                         ROLE_PLACEHOLDER, {m: f"the DUT's {n}" for m, n in macs["dut"].items()})
    lines += ["    duts:", "      hosts:"]
    lines += _host_lines("dut", dut, key_file, known_hosts, netns, dut_ports,
                         "dut", {m: f"the tester's {n}" for m, n in macs["tester"].items()})
    return "\n".join(lines) + "\n"


def write_discovered(path, tester, dut, netns=None, key_file=None, known_hosts=None, force=False):
    """Discover both hosts' ports and write the inventory to `path`."""
    target = Path(path)
    if target.exists() and not force:
        raise BadInput(f"{target}: exists; not overwritten (pass --force, choose another path or remove it)")
    if netns is not None:
        validate.netns(netns)
    known_hosts = str(Path(known_hosts or "~/.ssh/known_hosts").expanduser())
    discovered = []
    for name, spec, ns in (("tester", tester, None), ("dut", dut, netns)):
        user, host, port = spec
        session = connect_host(name, host, port, user, key_file, known_hosts)
        try:
            discovered.append(discover(session, ns, management_address(session)))
        finally:
            session.close()
    text = render(tester, dut, key_file, known_hosts, netns, *discovered)
    try:
        target.write_text(text)
    except OSError as exc:
        raise BadInput(f"{target}: cannot write: {exc.strerror}")
    return discovered
