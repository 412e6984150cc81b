"""The project's inventory schema (an Ansible YAML inventory).

Hosts are grouped by role (`testers`, `duts`). Per host: how to reach it by
SSH and its test ports. `rfc2544_streams` (group `all` vars) says which tester
port sends to which. `lab up` writes exactly this; inventory/README.md
documents it with an example for a physical two-box lab.
"""
import ipaddress
import os
import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Dict, List, Optional, Tuple


from rfc2544.drivers.streams import MAX_GENERATORS
from rfc2544.drivers.validate import ifname_problem
from rfc2544 import input_files
from rfc2544.errors import BadInput
from rfc2544.wire import PRIORITY_RANGES, UNTAGGED, VLAN_IDS, Tags

MAC_RE = re.compile(r"^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$")
ROLES = ("tx", "rx", "dut")
STREAM_KEYS = ("tx", "rx") + tuple(f.name for f in fields(Tags))


@dataclass
class Port:
    name: str                       # interface name on its host (<= 15 chars)
    role: str                       # tx | rx | dut
    mac: str
    ipv4: Optional[str] = None      # address/prefix, e.g. 198.18.0.1/24
    ipv6: Optional[str] = None
    peer_mac: Optional[str] = None  # MAC of the port at the other end of the link
    peer_ipv4: Optional[str] = None
    peer_ipv6: Optional[str] = None
    speed_mbps: Optional[int] = None  # nominal link speed, for the theoretical maximum
    # generators per stream that leaves this port: each its own pktgen
    # device on its own kpktgend thread (CPU) and, where the port has that
    # many, its own TX queue; the stream stays one stream (drivers/streams.py)
    generators: int = 1


@dataclass
class Host:
    name: str
    group: str                      # testers | duts
    address: str
    port: int = 22
    user: str = "root"
    key_file: Optional[str] = None
    known_hosts: Optional[str] = None
    netns: Optional[str] = None     # a DUT living in a namespace of its host
    reset_cmd: Optional[str] = None
    # per-trial DUT commands: {"pre": [...], "post": [...]} (drivers/hooks.py)
    trial_hooks: Dict[str, List[str]] = field(default_factory=dict)
    ports: Dict[str, Port] = field(default_factory=dict)
    # two of a tester's own ports cabled to each other, outside the test
    # ports: (tx, rx) interface names (calibration_link.py)
    calibration_link: Optional[Tuple[str, str]] = None


@dataclass
class Stream:
    tx_host: str
    tx_port: str
    rx_host: str
    rx_port: str
    # VLAN tags of every frame (QinQ, priority bits, what the DUT changes):
    # untagged by default. The reverse stream of `direction: bi` keeps them.
    tags: Tags = Tags()
    # A stream of its own traffic (a Y.1564 service's; never from the
    # inventory file): its frame sizes with FCS, each frame's drawn in equal
    # shares (() = the trial's size), and its IP DSCP (None: not written)
    sizes: Tuple[int, ...] = ()
    dscp: Optional[int] = None


@dataclass
class Inventory:
    path: Path
    hosts: Dict[str, Host]
    streams: List[Stream]
    vars: dict

    @property
    def testers(self):
        return [h for h in self.hosts.values() if h.group == "testers"]

    @property
    def duts(self):
        return [h for h in self.hosts.values() if h.group == "duts"]


def _fail(path, where, msg):
    raise BadInput(f"{path}: {where}: {msg}")


def _shown(value, limit=60):
    """A bad value as one short line: a message must not span lines or
    carry a whole expanded structure."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _mapping(path, where, value):
    """`value` as a mapping; absent or null is an empty one."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        _fail(path, where, f"must be a mapping (got a {type(value).__name__}: {_shown(value)})")
    return value


def _sequence(path, where, value):
    """`value` as a list; absent or null is an empty one."""
    if value is None:
        return []
    if not isinstance(value, list):
        _fail(path, where, f"must be a list (got a {type(value).__name__}: {_shown(value)})")
    return value


# The rfc2544_* variables this tool reads; any other rfc2544_* name is a
# typo that would otherwise be ignored (Ansible's own and other roles'
# variables are none of its business).
# The shipped playbooks' own (rfc2544.yml, teardown.yml) may be set anywhere.
PLAYBOOK_VARS = ("rfc2544_cli", "rfc2544_gate", "rfc2544_inventory", "rfc2544_kmod_teardown_state",
                 "rfc2544_out_dir", "rfc2544_profile", "rfc2544_report_formats", "rfc2544_store_dir",
                 "rfc2544_threshold_file", "rfc2544_verdict")
HOST_VARS = ("rfc2544_ports", "rfc2544_known_hosts", "rfc2544_netns", "rfc2544_reset_cmd",
             "rfc2544_trial_hooks", "rfc2544_calibration_link") + PLAYBOOK_VARS
GROUP_VARS = ("rfc2544_streams", "rfc2544_lab", "rfc2544_lab_topology") + PLAYBOOK_VARS


def _known_vars(path, where, variables, known):
    for key in variables:
        if isinstance(key, str) and key.startswith("rfc2544_") and key not in known:
            _fail(path, f"{where}.{key}", f"unknown rfc2544 variable (known here: {', '.join(known)})")


def _port(path, where, raw):
    if not isinstance(raw, dict):
        _fail(path, where, "must be a mapping")
    known = set(Port.__dataclass_fields__)
    for key in raw:
        if key not in known:
            _fail(path, f"{where}.{key}", f"unknown field (known: {', '.join(sorted(known))})")
    for key in ("name", "role", "mac"):
        if not raw.get(key):
            _fail(path, f"{where}.{key}", "is required")
    problem = ifname_problem(raw["name"])
    if problem:
        _fail(path, f"{where}.name", f"'{raw['name']}' is not a valid interface name ({problem})")
    if raw["role"] not in ROLES:
        _fail(path, f"{where}.role", f"must be one of {', '.join(ROLES)}")
    for key in ("mac", "peer_mac"):
        if raw.get(key) is not None and not MAC_RE.fullmatch(str(raw[key])):
            _fail(path, f"{where}.{key}", f"'{raw[key]}' is not a MAC address")
    for key in ("ipv4", "ipv6"):
        if raw.get(key) is not None:
            try:
                ipaddress.ip_interface(str(raw[key]))
            except ValueError:
                _fail(path, f"{where}.{key}", f"'{raw[key]}' is not an address/prefix")
    for key in ("peer_ipv4", "peer_ipv6"):
        if raw.get(key) is not None:
            try:
                ipaddress.ip_address(str(raw[key]))
            except ValueError:
                _fail(path, f"{where}.{key}", f"'{raw[key]}' is not an address")
    for key in ("speed_mbps", "generators"):
        if raw.get(key) is not None and (type(raw[key]) is not int or raw[key] <= 0):
            _fail(path, f"{where}.{key}", "must be a positive integer")
    if raw.get("generators") is not None and raw["generators"] > MAX_GENERATORS:
        _fail(path, f"{where}.generators", f"at most {MAX_GENERATORS} (one per CPU and TX queue)")
    numbers = ("speed_mbps", "generators")
    return Port(**{k: (str(v) if isinstance(v, (str, int)) and k not in numbers else v) for k, v in raw.items()
                   if not (k == "generators" and v is None)})


def _trial_hooks(path, where, group, raw):
    """`rfc2544_trial_hooks`: {pre: [cmd, ...], post: [cmd, ...]} on a DUT
    host. The commands are the user's own shell for their DUT and run as
    given; only their shape is checked here."""
    where = f"{where}.rfc2544_trial_hooks"
    if raw is None:
        return {}
    if group != "duts":
        _fail(path, where, "trial hooks run on DUT hosts only (put them on a host under 'duts')")
    if not isinstance(raw, dict):
        _fail(path, where, "must be a mapping with 'pre' and/or 'post' lists of commands")
    hooks = {}
    for phase, commands in raw.items():
        if phase not in ("pre", "post"):
            _fail(path, f"{where}.{phase}", "unknown (known: post, pre)")
        if commands is None:
            commands = []
        if not isinstance(commands, list):
            _fail(path, f"{where}.{phase}", "must be a list of shell commands")
        for i, command in enumerate(commands):
            if not isinstance(command, str) or not command.strip():
                _fail(path, f"{where}.{phase}[{i}]", f"must be a non-empty command string, not {command!r}")
        hooks[phase] = list(commands)
    return hooks


def _calibration_link(path, where, group, raw, ports):
    if raw is None:
        return None
    where = f"{where}.rfc2544_calibration_link"
    if group != "testers":
        _fail(path, where, "a calibration link joins two ports of a tester host (put it on a host under 'testers')")
    if not isinstance(raw, dict) or set(raw) != {"tx", "rx"}:
        _fail(path, where, "must be a mapping with exactly 'tx: PORT' and 'rx: PORT' (interface names)")
    for key in ("tx", "rx"):
        name = str(raw[key])
        problem = ifname_problem(name)
        if problem:
            _fail(path, f"{where}.{key}", f"'{name}' is not a valid interface name ({problem})")
        if name in ports:
            _fail(path, f"{where}.{key}", f"'{name}' is a test port; the calibration link needs two other ports")
    if str(raw["tx"]) == str(raw["rx"]):
        _fail(path, where, "tx and rx must be two different ports")
    return str(raw["tx"]), str(raw["rx"])


def load(path) -> Inventory:
    path = Path(path)
    data = input_files.load_yaml(path, "inventory")
    if not isinstance(data, dict) or not isinstance(data.get("all"), dict):
        _fail(path, "all", "the inventory must have a top-level 'all' group")
    top = data["all"]
    top_vars = _mapping(path, "all.vars", top.get("vars"))
    children = _mapping(path, "all.children", top.get("children"))
    _known_vars(path, "all.vars", top_vars, GROUP_VARS)
    hosts = {}
    for group in ("testers", "duts"):
        members = _mapping(path, f"all.children.{group}.hosts",
                           _mapping(path, f"all.children.{group}", children.get(group)).get("hosts"))
        for name, hv in members.items():
            where = f"{group}.{name}"
            hv = _mapping(path, where, hv)
            _known_vars(path, where, hv, HOST_VARS)
            if name in hosts:
                _fail(path, where, "host is in both testers and duts")
            ports = {}
            for i, raw in enumerate(_sequence(path, f"{where}.rfc2544_ports", hv.get("rfc2544_ports"))):
                p = _port(path, f"{where}.rfc2544_ports[{i}]", raw)
                if p.name in ports:
                    _fail(path, f"{where}.rfc2544_ports[{i}].name", f"duplicate port '{p.name}'")
                ports[p.name] = p
            port = hv.get("ansible_port", 22)
            if isinstance(port, str) and port.isdigit():
                port = int(port)
            if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
                _fail(path, f"{where}.ansible_port", f"must be a TCP port, 1 to 65535 (got {_shown(port)})")
            hosts[name] = Host(
                name=name, group=group,
                address=str(hv.get("ansible_host", name)), port=port,
                user=str(hv.get("ansible_user", "root")),
                key_file=_expand(hv.get("ansible_ssh_private_key_file")),
                known_hosts=_expand(hv.get("rfc2544_known_hosts", "~/.ssh/known_hosts")),
                netns=hv.get("rfc2544_netns"), reset_cmd=hv.get("rfc2544_reset_cmd"),
                trial_hooks=_trial_hooks(path, where, group, hv.get("rfc2544_trial_hooks")),
                ports=ports,
                calibration_link=_calibration_link(path, where, group, hv.get("rfc2544_calibration_link"), ports),
            )
    if not any(h.group == "testers" for h in hosts.values()):
        _fail(path, "all.children.testers", "at least one tester host is required")
    streams = []
    for i, raw in enumerate(_sequence(path, "all.vars.rfc2544_streams", top_vars.get("rfc2544_streams"))):
        where = f"all.vars.rfc2544_streams[{i}]"
        if not isinstance(raw, dict) or "tx" not in raw or "rx" not in raw:
            _fail(path, where, "needs 'tx: HOST:PORT' and 'rx: HOST:PORT'")
        for key in raw:
            if key not in STREAM_KEYS:
                _fail(path, f"{where}.{key}", f"unknown field (known: {', '.join(STREAM_KEYS)})")
        ends = []
        for key in ("tx", "rx"):
            host, _, port = str(raw[key]).partition(":")
            if host not in hosts or port not in hosts[host].ports:
                _fail(path, f"{where}.{key}", f"'{raw[key]}' names no port in the inventory")
            # a tester port may send and receive: the reverse stream of a
            # bidirectional test sends from the port whose role is rx
            if hosts[host].group != "testers" or hosts[host].ports[port].role not in ("tx", "rx"):
                _fail(path, f"{where}.{key}", f"port '{raw[key]}' is not a tester port (role tx or rx)")
            ends += [host, port]
        if ends[:2] == ends[2:]:
            _fail(path, where, f"sends to itself: tx and rx are both '{raw['tx']}'")
        tags = _tags(path, where, raw)
        if any(s.tx_host == ends[0] and s.tx_port == ends[1] and s.rx_host == ends[2] and s.rx_port == ends[3]
               for s in streams):
            _fail(path, where, f"lists the stream {raw['tx']} -> {raw['rx']} twice")
        streams.append(Stream(*ends, tags=tags))
    return Inventory(path=path, hosts=hosts, streams=streams, vars=top_vars)


def _tags(path, where, raw):
    """A stream's Tags: QinQ's outer tag needs the inner one, a tag's PCP
    and DEI need the tag."""
    tags = {}
    for key in ("vlan", "svlan"):
        value = raw.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or not VLAN_IDS[0] <= value <= VLAN_IDS[1]):
            _fail(path, f"{where}.{key}", f"must be a VLAN id, {VLAN_IDS[0]} to {VLAN_IDS[1]}, not {value!r}")
        tags[key] = value
    if tags["svlan"] is not None and tags["vlan"] is None:
        _fail(path, f"{where}.svlan", "an outer (802.1ad) tag needs the inner one: give 'vlan' too (QinQ)")
    for tag in ("vlan", "svlan"):
        for bit, (low, high) in PRIORITY_RANGES.items():
            key = f"{tag}_{bit}"
            value = raw.get(key)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                _fail(path, f"{where}.{key}", f"must be {low} to {high}, not {value!r}")
            if tags[tag] is None:
                _fail(path, f"{where}.{key}", f"a {bit.upper()} needs the tag it is part of: give '{tag}' too")
            tags[key] = value
    rx_vlan, rx_svlan = _arrival(path, where, raw, tags["vlan"], tags["svlan"])
    return Tags(**tags, rx_vlan=rx_vlan, rx_svlan=rx_svlan)


def _arrival(path, where, raw, sent_vlan, sent_svlan):
    """[rx_vlan, rx_svlan]: each None (as sent), UNTAGGED (`none`: the DUT
    removes the tag) or the id the DUT puts there; both None when the tags
    arrive as sent."""
    out = []
    for key, sent in (("rx_vlan", sent_vlan), ("rx_svlan", sent_svlan)):
        value = raw.get(key)
        if (isinstance(value, str) and value.strip().lower() == "none") or (type(value) is int and value == UNTAGGED):
            value = UNTAGGED
        elif value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                    or not VLAN_IDS[0] <= value <= VLAN_IDS[1]):
            _fail(path, f"{where}.{key}", f"must be a VLAN id, {VLAN_IDS[0]} to {VLAN_IDS[1]}, or 'none' "
                                          f"(the DUT removes the tag), not {value!r}")
        out.append(value)
    tags = Tags(vlan=sent_vlan, svlan=sent_svlan, rx_vlan=out[0], rx_svlan=out[1])
    rx_vlan, rx_svlan = tags.arriving()
    if rx_svlan is not None and rx_vlan is None:
        _fail(path, f"{where}.rx_vlan", "frames cannot arrive with an outer (802.1ad) tag and no inner one: "
                                        "give rx_svlan too ('none' where the DUT removes the outer tag)")
    return out if tags.rewritten else [None, None]


def _expand(value):
    return os.path.expanduser(str(value)) if value else None
