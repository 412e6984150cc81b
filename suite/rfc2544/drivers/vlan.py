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

Pure: builds shell commands, every value validated.
"""
import zlib
from collections.abc import Mapping
from typing import List, Optional, Tuple

from rfc2544.drivers import validate
from rfc2544.errors import BadInput

PREFIXES = ("rfv", "rfs")     # 802.1Q (inner) and 802.1ad (outer) devices
# A stream's tags as every layer carries them (inventory.Stream, StreamPlan,
# ModifierPlan, pktgen.DeviceConfig): the ids, and each tag's priority code
# point (802.1p, 0..7) and drop eligible indicator (0 or 1); None: not set
# (untagged; a PCP or DEI not written is 0).
PRIORITY_FIELDS = ("vlan_pcp", "vlan_dei", "svlan_pcp", "svlan_dei")
TAG_FIELDS = ("vlan", "svlan") + PRIORITY_FIELDS
PRIORITY_RANGES = {"pcp": (0, 7), "dei": (0, 1)}
VLAN_IDS = (1, 4094)        # 0 is priority-only, 4095 reserved (802.1Q); the generator drops a tag above
# net.ipv6.conf.<port>.* set to 0 on every test port, the lab's too
# (lab/topology.py): no router solicitations, autoconf or DAD frames that a
# receiver would count and a DUT would answer
QUIET_IPV6 = ("accept_ra", "autoconf", "dad_transmits", "router_solicitations", "accept_dad")


# The tags a stream's frames carry when they reach the receiving port, where
# the DUT changes them (pops, pushes or translates; inventory `rx_vlan`,
# `rx_svlan`): None is "as sent", UNTAGGED "the DUT removed it", else the id.
ARRIVAL_FIELDS = ("rx_vlan", "rx_svlan")
UNTAGGED = 0


def tag_fields(obj) -> dict:
    """obj's TAG_FIELDS and ARRIVAL_FIELDS, to copy a stream's tags to the
    next layer."""
    return {k: getattr(obj, k, None) for k in TAG_FIELDS + ARRIVAL_FIELDS}


def sent_fields(obj) -> dict:
    """obj's TAG_FIELDS only: what a generator writes."""
    return {k: getattr(obj, k) for k in TAG_FIELDS}


def _field(obj, name):
    """A tag field of a stream-like object, or of a mapping (results.json's
    conditions.streams entries); None where it has none."""
    return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)


def arriving(obj) -> Tuple[Optional[int], Optional[int]]:
    """(vlan, svlan) of obj's frames at the receiving port: the sent tags
    where the DUT keeps them. obj: anything with the TAG_FIELDS and
    ARRIVAL_FIELDS as attributes, or a mapping of them."""
    out = []
    for tag in ("vlan", "svlan"):
        override = _field(obj, f"rx_{tag}")
        out.append(_field(obj, tag) if override is None else (None if override == UNTAGGED else override))
    return out[0], out[1]


def rewritten(obj) -> bool:
    """Whether the DUT changes obj's tags on the way."""
    return arriving(obj) != (_field(obj, "vlan"), _field(obj, "svlan"))


def arriving_tags(obj) -> int:
    """Tags per frame at the receiving port: 0, 1 or 2."""
    return sum(t is not None for t in arriving(obj))


def _stack_text(vlan, svlan, prio=lambda tag: ""):
    """'untagged', 'VLAN 100' or 'QinQ 200/100', each tag followed by prio(tag)."""
    if vlan is None:
        return "untagged"
    if svlan is None:
        return f"VLAN {vlan}{prio('vlan')}"
    return f"QinQ {svlan}{prio('svlan')}/{vlan}{prio('vlan')}"


def describe(obj) -> str:
    """'VLAN 100' or 'QinQ 200/100', with ' PCP 5 DEI 1' (per tag, outer
    first) when set, and ', received VLAN 200' (or 'untagged') where the DUT
    changes the tags: the report's and the messages' wording; '' for an
    untagged stream the DUT leaves so. obj: anything with the TAG_FIELDS as
    attributes, or a mapping of them (results.json's conditions.streams
    entries)."""
    def prio(tag):
        pcp, dei = _field(obj, f"{tag}_pcp"), _field(obj, f"{tag}_dei")
        return (f" PCP {pcp}" if pcp is not None else "") + (f" DEI {dei}" if dei is not None else "")
    vlan, svlan = _field(obj, "vlan"), _field(obj, "svlan")
    sent = _stack_text(vlan, svlan, prio)
    if not rewritten(obj):
        return "" if vlan is None else sent
    return f"{sent}, received {_stack_text(*arriving(obj))}"


def generator_commands(cfg) -> List[str]:
    """A pktgen device's tag writes for cfg (a DeviceConfig), validated:
    the inner tag first (the generator sends svlan only under it), each
    tag's vlan_p/vlan_cfi after it (the in-tree pktgen takes them only
    then)."""
    if cfg.svlan is not None and cfg.vlan is None:
        raise BadInput("an outer VLAN tag (svlan) needs the inner one (vlan)")
    cmds = []
    for tag, what in (("vlan", "VLAN id"), ("svlan", "outer VLAN id")):
        tag_id = getattr(cfg, tag)
        if tag_id is not None:
            cmds.append(f"{tag}_id {validate.uint(tag_id, what, *VLAN_IDS)}")
        for field, word in (("pcp", "p"), ("dei", "cfi")):
            value = getattr(cfg, f"{tag}_{field}")
            if value is None:
                continue
            if tag_id is None:
                raise BadInput(f"a {field.upper()} needs its tag: {tag}_{field} without {tag}")
            cmds.append(f"{tag}_{word} {validate.uint(value, f'{tag} {field.upper()}', *PRIORITY_RANGES[field])}")
    return cmds


def readback(cfg) -> dict:
    """What the device file shows for cfg's tags (pktgen.parse_device names
    the outer tag's bits svlan_p/svlan_cfi)."""
    exp = {}
    for tag in ("vlan", "svlan"):
        if getattr(cfg, tag) is not None:
            exp[f"{tag}_id"] = str(getattr(cfg, tag))
        for field, word in (("pcp", "p"), ("dei", "cfi")):
            if getattr(cfg, f"{tag}_{field}") is not None:
                exp[f"{tag}_{word}"] = str(getattr(cfg, f"{tag}_{field}"))
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
        rx_vlan, rx_svlan = arriving(p)
        if rx_vlan is not None:
            out.setdefault(p.rx_host, set()).add((p.rx_port, rx_vlan, rx_svlan))
    return {h: sorted(v, key=lambda t: (t[0], t[1], t[2] or 0)) for h, v in out.items()}
