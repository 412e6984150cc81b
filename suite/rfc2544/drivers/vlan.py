"""VLAN devices that let pgrx see a tagged stream on a tester's receiving port.

A tagged frame reaches IP (and pgrx's hook) only through a VLAN device of
its tag on the port: without one the kernel marks it for another host and
drops it before the hook. pgrx (module 1.4) watches the port and counts
frames of VLAN devices stacked on it, with their tags in the length. So the
suite gives a receiving port one device per tag stack it receives: an
802.1Q device, on an 802.1ad device for QinQ. Their names are the suite's
own (`rfv`/`rfs` + 8 hex digits of the port and ids: interface names have
15 characters at most), so they are found again and removed, and never
taken for a user's device. The devices stay quiet (no IPv6 router
solicitations, DAD or autoconf), as the lab's test ports do.

Pure: builds shell commands, every value validated. A stream's tags and
their rules (what arrives, what the reverse stream sends) are
rfc2544.wire.Tags.
"""
import zlib
from typing import List, Optional, Tuple

from rfc2544.drivers import validate
from rfc2544.errors import BadInput
from rfc2544.wire import PRIORITY_RANGES, VLAN_IDS, Tags

PREFIXES = ("rfv", "rfs")     # 802.1Q (inner) and 802.1ad (outer) devices
# net.ipv6.conf.<port>.* set to 0 on every test port, the lab's too
# (lab/topology.py): no router solicitations, autoconf or DAD frames that a
# receiver would count and a DUT would answer
QUIET_IPV6 = ("accept_ra", "autoconf", "dad_transmits", "router_solicitations", "accept_dad")


def generator_commands(tags: Tags) -> List[str]:
    """A pktgen device's writes for its tags, validated: the inner tag
    first (the generator sends svlan only under it), each tag's
    vlan_p/vlan_cfi after it (the in-tree pktgen takes them only then)."""
    if tags.svlan is not None and tags.vlan is None:
        raise BadInput("an outer VLAN tag (svlan) needs the inner one (vlan)")
    cmds = []
    for tag, what in (("vlan", "VLAN id"), ("svlan", "outer VLAN id")):
        tag_id = getattr(tags, tag)
        if tag_id is not None:
            cmds.append(f"{tag}_id {validate.uint(tag_id, what, *VLAN_IDS)}")
        for field, word in (("pcp", "p"), ("dei", "cfi")):
            value = getattr(tags, f"{tag}_{field}")
            if value is None:
                continue
            if tag_id is None:
                raise BadInput(f"a {field.upper()} needs its tag: {tag}_{field} without {tag}")
            cmds.append(f"{tag}_{word} {validate.uint(value, f'{tag} {field.upper()}', *PRIORITY_RANGES[field])}")
    return cmds


def readback(tags: Tags) -> dict:
    """What the device file shows for these tags (pktgen.parse_device names
    the outer tag's bits svlan_p/svlan_cfi)."""
    exp = {}
    for tag in ("vlan", "svlan"):
        if getattr(tags, tag) is not None:
            exp[f"{tag}_id"] = str(getattr(tags, tag))
        for field, word in (("pcp", "p"), ("dei", "cfi")):
            if getattr(tags, f"{tag}_{field}") is not None:
                exp[f"{tag}_{word}"] = str(getattr(tags, f"{tag}_{field}"))
    return exp


def _name(prefix, *parts):
    return f"{prefix}{zlib.crc32(':'.join(map(str, parts)).encode()):08x}"


def devices(port, vlan, svlan=None, dotted=False) -> List[Tuple[str, str, str, int]]:
    """The stack for (port, tags), lowest first: (name, link, proto, id).
    `dotted`: the names people give them (PORT.VLAN, PORT.SVLAN and
    PORT.SVLAN.VLAN: a DUT's, the lab tests'), not the suite's own."""
    port = validate.ifname(port)
    vlan = validate.uint(vlan, "VLAN id", *VLAN_IDS)
    if svlan is None:
        return [(f"{port}.{vlan}" if dotted else _name("rfv", port, vlan), port, "802.1Q", vlan)]
    svlan = validate.uint(svlan, "outer VLAN id", *VLAN_IDS)
    outer = f"{port}.{svlan}" if dotted else _name("rfs", port, svlan)
    inner = f"{outer}.{vlan}" if dotted else _name("rfv", port, svlan, vlan)
    return [(outer, port, "802.1ad", svlan), (validate.ifname(inner), outer, "802.1Q", vlan)]


def add_command(port, vlan, svlan: Optional[int] = None) -> str:
    """Create (unless there) and bring up the stack; one shell command."""
    steps = []
    for name, link, proto, vid in devices(port, vlan, svlan):
        quiet = "; ".join(f"sysctl -qw net.ipv6.conf.{name}.{key}=0" for key in QUIET_IPV6)
        steps.append(f"{{ ip link show dev {name} >/dev/null 2>&1 || {{ "
                     f"ip link add link {link} name {name} type vlan proto {proto} id {vid} && "
                     f"{{ {quiet}; true; }}; }}; }} && ip link set dev {name} up")
    return " && ".join(steps)


def remove_command(port, vlan, svlan: Optional[int] = None) -> str:
    """Remove the stack (what is there of it); never fails."""
    return "; ".join(f"ip link del dev {name} 2>/dev/null" for name, *_ in reversed(devices(port, vlan, svlan))) \
        + "; true"


def receiving_stacks(plans):
    """{rx host: sorted (port, vlan, svlan)} of the streams that arrive
    tagged (with the tags they arrive with)."""
    out = {}
    for p in plans:
        rx_vlan, rx_svlan = p.tags.arriving()
        if rx_vlan is not None:
            out.setdefault(p.rx_host, set()).add((p.rx_port, rx_vlan, rx_svlan))
    return {h: sorted(v, key=lambda t: (t[0], t[1], t[2] or 0)) for h, v in out.items()}
