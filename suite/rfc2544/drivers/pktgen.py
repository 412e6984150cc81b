"""The pktgen generator: our rfc2544_pktgen module or the in-tree pktgen.

Both speak the same /proc/net/pktgen command language, so one driver serves
both. This module builds validated device commands, the batches that set up
devices and configure a trial, the command that starts traffic, and what a
configured device must read back; the device files' parser
(pktgen_state.py) is re-exported here. Everything here is pure: no I/O.
"""
import ipaddress
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from rfc2544.errors import BadInput

from rfc2544 import wire
from rfc2544.wire import Tags
from rfc2544.drivers import validate, vlan
from rfc2544.drivers.script import PROC_PKTGEN, Batch
# the device and thread files, parsed (re-exported: callers use pktgen.*)
from rfc2544.drivers.pktgen_state import (  # noqa: F401 (the API)
    RunResult, DeviceState, parse_device, ThreadState, parse_thread, parse_banner)

PGCTRL = f"{PROC_PKTGEN}/pgctrl"
MIN_PKT_SIZE = 42          # pktgen raises anything smaller to 42
MAX_PKT_SIZE = 9600 - 4    # jumbo frames at most
FCS_BYTES = 4
MAX_BURST_FRAMES = 65536    # the module's burst_frames bound
MAX_STREAM_ID = 65535       # the module's stream_id bound (0: none)
MAX_TX_QUEUE = 65535        # queue_map_min/max are 16 bits
MAX_DST_NETWORKS = 65536    # /24 networks a stream's destination spans at most
MAX_FLOWS = 65535           # the highest udp_src_max: flows take the ports below it
KNOWN_FLAGS = frozenset({
    "IPV6", "IPSRC_RND", "IPDST_RND", "TXSIZE_RND", "UDPSRC_RND", "UDPDST_RND",
    "UDPCSUM", "NO_TIMESTAMP", "MPLS_RND", "QUEUE_MAP_RND", "QUEUE_MAP_CPU",
    "FLOW_SEQ", "IPSEC", "MACSRC_RND", "MACDST_RND", "VID_RND", "SVID_RND", "NODE",
})
# Simple IMIX (7:4:1 of 64, 576 and 1518-byte frames), sizes without FCS.
SIMPLE_IMIX = tuple((size - FCS_BYTES, weight) for size, weight in wire.SIMPLE_IMIX)


def device_path(device):
    return f"{PROC_PKTGEN}/{validate.pgdev(device)}"


def thread_path(thread):
    return f"{PROC_PKTGEN}/kpktgend_{validate.uint(thread, 'pktgen thread', 0, 4095)}"


def imix_pkt_sizes(ipv6, tags=0):
    """The simple IMIX as `imix_weights` pairs, each size one the headers
    (with `tags` VLAN tags) fit in (wire.imix_mix): what the generator
    would pad to anyway."""
    return tuple((size - FCS_BYTES, weight) for size, weight in wire.imix_mix(ipv6, tags))


def source_range(src_ip, n):
    """(first, last) IPv4 source of a stream of `n` source-address flows
    from a port of address src_ip: src_ip itself for one, else the n
    consecutive addresses from src_ip + 256 (the same host part a /24 up:
    not the port's own link, where the DUT's own address is)."""
    if n == 1:
        return src_ip, src_ip
    first = int(ipaddress.IPv4Address(src_ip)) + 256
    last = first + n - 1
    if last > 0xFFFFFFFF:
        raise BadInput(f"{n} source addresses after {src_ip} pass 255.255.255.255")
    return str(ipaddress.IPv4Address(first)), str(ipaddress.IPv4Address(last))


def source_range6(src_ip, n):
    """(first, last) IPv6 source of a stream of `n` source-address flows:
    src_ip itself for one, else the n consecutive addresses from src_ip's
    interface id in the next /64 (as source_range: not the port's own link;
    the module varies the one 32-bit word in which first and last differ,
    so the range may not carry out of the last word)."""
    src = ipaddress.IPv6Address(src_ip)
    if n == 1:
        return src.compressed, src.compressed
    first = int(src) + (1 << 64)
    if (first & 0xFFFFFFFF) + n - 1 > 0xFFFFFFFF or first >> 128:
        raise BadInput(f"{n} source addresses after {src_ip} pass the end of a 32-bit word of the address")
    return ipaddress.IPv6Address(first).compressed, ipaddress.IPv6Address(first + n - 1).compressed


def pkt_size_for_frame(frame_size):
    """pktgen's pkt_size for an Ethernet frame size that includes the FCS."""
    frame_size = validate.uint(frame_size, "frame size", MIN_PKT_SIZE + FCS_BYTES, MAX_PKT_SIZE + FCS_BYTES)
    return frame_size - FCS_BYTES


@dataclass
class DeviceConfig:
    """What one pktgen device sends in one run."""

    device: str                       # pktgen device name: IF or IF@N
    count: int                        # frames; 0 would mean forever and is refused
    dst_mac: str
    src_ip: str
    dst_ip: str
    ipv6: bool = False
    pkt_size: Optional[int] = None    # without FCS; None with imix
    imix: Optional[Sequence[Tuple[int, int]]] = None  # (pkt_size, weight) pairs
    ratep: Optional[int] = None       # frames/s; None = as fast as possible (delay 0)
    udp_src: int = 9
    udp_dst: int = 9
    flags: Tuple[str, ...] = ()       # extra pktgen flags (validated against KNOWN_FLAGS)
    # Flows of the stream: its frames take the UDP source ports udp_src ..
    # udp_src + flows - 1 in turn (the generator steps the port per frame),
    # so a DUT's RSS/RPS hash spreads them; the stream stays one stream at
    # the receiver (pgrx keys it by its stream id, or else its source).
    flows: int = 1
    # Frames per burst (rfc2544_pktgen 1.2's burst_frames: distinct frames
    # back to back, bursts spaced for the mean rate); None: not written (a
    # generator without it; the device then keeps its default, 1).
    frames_per_burst: Optional[int] = None
    # Destination /24 networks (RFC 2544 section 12): each frame goes to
    # dst_ip + k * 256 for a k drawn in 0..N-1 (IPDST_RND over the range
    # with rfc2544_pktgen 1.2's dst_stride 256): the same host part in N
    # consecutive /24s, the stream's own destination the first. IPv4. None:
    # dst_stride is not written (a generator without it: one destination).
    dst_networks: Optional[int] = None
    # Source-address flows: each frame's source steps through N consecutive
    # addresses starting at src_ip + 256 (the same host part a /24 up:
    # addresses the DUT routes back toward the tx port, not the tx port's
    # own link, where the DUT's own address is); over IPv6 from src_ip's
    # interface id in the next /64 (rfc2544_pktgen 1.6's src6_min/src6_max).
    # None: src_ip only (over IPv6 no range is written).
    src_addresses: Optional[int] = None
    # The stream id in every test header (rfc2544_pktgen 1.3's stream_id,
    # 1..65535): pgrx counts the stream by it, whatever its addresses. None:
    # not written (the device keeps no id; the source address identifies it).
    stream_id: Optional[int] = None
    # VLAN tags (802.1Q `vlan_id`; QinQ adds the 802.1ad `svlan_id` outside
    # it), each with its PCP and DEI (drivers/vlan.py writes them; arrival
    # fields are not the generator's). The generator's pkt_size counts
    # them. A field not set is not written (a fresh device sends untagged,
    # PCP and DEI 0).
    tags: Tags = Tags()
    # The TX queue it sends on (queue_map_min = queue_map_max): one of a
    # stream's several generators, each on a queue of its own. None: not
    # written (a fresh device's 0; the driver's own pick).
    queue: Optional[int] = None
    # ns after the start its first frame waits for (module 1.7's
    # start_offset): a stream's generators staggered. None: not written.
    start_offset_ns: Optional[int] = None
    # The IP header's TOS byte (IPv4 `tos`) or traffic class (IPv6
    # `traffic_class`): a DSCP in its upper six bits. None: not written
    # (a fresh device sends 0).
    tos: Optional[int] = None

    @property
    def dst_max(self):
        """dst_max for `dst_networks` networks: the same host part in the last."""
        last = int(ipaddress.IPv4Address(self.dst_ip)) + ((self.dst_networks or 1) - 1) * 256
        if last > int(ipaddress.IPv4Address("255.255.255.255")):
            raise BadInput(f"{self.dst_networks} destination networks from {self.dst_ip} pass 255.255.255.255")
        return str(ipaddress.IPv4Address(last))

    @property
    def src_range(self):
        """(src_min, src_max) of the IPv4 source range (source_range)."""
        return source_range(self.src_ip, self.src_addresses or 1)

    @property
    def src6_range(self):
        """(src6_min, src6_max) of the IPv6 source range (source_range6)."""
        return source_range6(self.src_ip, self.src_addresses or 1)

    @property
    def dst6_max(self):
        """dst6_max for `dst_networks` IPv6 networks: the same interface id
        in the last /64 (the module varies the address's second 32-bit word,
        module 1.5); the networks must not carry past the /32."""
        dst = int(ipaddress.IPv6Address(self.dst_ip))
        if ((dst >> 64) & 0xffffffff) + (self.dst_networks or 1) - 1 > 0xffffffff:
            raise BadInput(f"{self.dst_networks} destination networks from {self.dst_ip} pass the end of its /32")
        return ipaddress.IPv6Address(dst + (((self.dst_networks or 1) - 1) << 64)).compressed

    @property
    def udp_src_max(self):
        """udp_src_max for `flows` ports: a port range leaves its max out
        (upstream, and rfc2544_pktgen since issue 31)."""
        return self.udp_src if self.flows == 1 else self.udp_src + self.flows

    def commands(self) -> List[str]:
        """The device-file writes, in order, every value validated."""
        validate.pgdev(self.device)
        cmds = []
        count = validate.uint(self.count, "frame count", 1, validate.U64_MAX)
        if self.imix:
            if self.pkt_size is not None:
                raise BadInput("give either a frame size or an IMIX, not both")
            if not 1 <= len(self.imix) <= 20:
                raise BadInput("an IMIX has 1 to 20 entries")
            parts = []
            for size, weight in self.imix:
                size = validate.uint(size, "IMIX frame size", MIN_PKT_SIZE, MAX_PKT_SIZE)
                weight = validate.uint(weight, "IMIX weight", 1, 10**6)
                parts.append(f"{size},{weight}")
            cmds.append("imix_weights " + " ".join(parts))
        else:
            size = validate.uint(self.pkt_size, "pkt_size", MIN_PKT_SIZE, MAX_PKT_SIZE)
            cmds.append(f"pkt_size {size}")  # sets min and max too
        cmds.append(f"count {count}")
        cmds.append("clone_skb 0")
        if self.ratep is None:
            cmds.append("delay 0")
        else:
            cmds.append(f"ratep {validate.uint(self.ratep, 'rate (frames/s)', 1, 10**9)}")
        cmds.append(f"dst_mac {validate.mac(self.dst_mac, 'destination MAC')}")
        if self.src_addresses is not None:
            validate.uint(self.src_addresses, "source addresses", 1, MAX_FLOWS)
        if self.ipv6:
            cmds += [f"src6 {validate.ipv6(self.src_ip, 'source IPv6')}",
                     f"dst6 {validate.ipv6(self.dst_ip, 'destination IPv6')}",
                     "flag IPV6"]
            if self.dst_networks is not None:
                # one /64 each, the same interface id (module 1.5 varies the
                # one word in which min and max differ); min = max: one address
                networks = validate.uint(self.dst_networks, "destination networks", 1, MAX_DST_NETWORKS)
                cmds += [f"dst6_min {ipaddress.IPv6Address(self.dst_ip).compressed}", f"dst6_max {self.dst6_max}",
                         "flag IPDST_RND" if networks > 1 else "flag !IPDST_RND"]
            if self.src_addresses is not None:
                # stepped in turn, as over IPv4; min = max: no range, src6 alone
                src_min, src_max = self.src6_range
                cmds += [f"src6_min {src_min}", f"src6_max {src_max}"]
        else:
            validate.ipv4(self.src_ip, "source IPv4")
            dst = validate.ipv4(self.dst_ip, "destination IPv4")
            src_min, src_max = self.src_range
            # stepped in turn (a fresh device's default): every source its share
            cmds += ["flag !IPV6", f"src_min {src_min}", f"src_max {src_max}",
                     f"dst_min {dst}", f"dst_max {self.dst_max}"]
            if self.dst_networks is not None:
                networks = validate.uint(self.dst_networks, "destination networks", 1, MAX_DST_NETWORKS)
                cmds += [f"dst_stride {256 if networks > 1 else 1}",
                         "flag IPDST_RND" if networks > 1 else "flag !IPDST_RND"]
        validate.uint(self.flows, "flows per stream", 1, MAX_FLOWS - self.udp_src)
        for name, value in (("udp_src_min", self.udp_src), ("udp_src_max", self.udp_src_max),
                            ("udp_dst_min", self.udp_dst), ("udp_dst_max", self.udp_dst)):
            cmds.append(f"{name} {validate.uint(value, name, 0, 65535)}")
        for flag in self.flags:
            bare = flag[1:] if flag.startswith("!") else flag
            if bare not in KNOWN_FLAGS:
                raise BadInput(f"unknown pktgen flag {flag!r}")
            cmds.append(f"flag {flag}")
        if self.frames_per_burst is not None:
            cmds.append(f"burst_frames {validate.uint(self.frames_per_burst, 'frames per burst', 1, MAX_BURST_FRAMES)}")
        if self.stream_id is not None:
            cmds.append(f"stream_id {validate.uint(self.stream_id, 'stream id', 0, MAX_STREAM_ID)}")
        cmds += vlan.generator_commands(self.tags)
        if self.queue is not None:
            q = validate.uint(self.queue, "TX queue", 0, MAX_TX_QUEUE)
            cmds += [f"queue_map_min {q}", f"queue_map_max {q}"]
        if self.start_offset_ns is not None:
            cmds.append(f"start_offset {validate.uint(self.start_offset_ns, 'start offset (ns)', 0, 10**9)}")
        if self.tos is not None:
            cmds.append(f"{tos_key(self.ipv6)} {validate.uint(self.tos, 'TOS byte', 0, 255):02x}")
        cmds.append("clear_counters")
        return cmds


def setup_batch(threads_for_devices: Dict[str, int]) -> Batch:
    """Stop, forget every device, then add ours to their threads.

    Forgetting waits for the in-tree pktgen's thread (100 ms or more), so
    this runs once per session (and after a stop_all), not per trial.
    """
    batch = Batch().write(PGCTRL, "stop").forget_devices()
    for device, thread in threads_for_devices.items():
        batch.write(thread_path(thread), f"add_device {validate.pgdev(device)}")
    return batch


def stop_batch() -> Batch:
    return Batch().write(PGCTRL, "stop")


def start_command():
    """Shell command for a single-use start channel: waits for a 'start'
    line on stdin, then makes the blocking write; the end of the run is the
    shell's exit. Closing stdin (or any line but 'start') ends it without
    traffic. The suite's start channel is a persistent shell instead
    (session.StartShell); this form is kept for comparison
    (bench/control_overhead.py's `before`)."""
    return f'read go && [ "$go" = start ] && echo start > {PGCTRL}'


# ---------------------------------------------------------------- verified diff writes
# Params keys that show the addresses, per mode (IPv4, IPv6): only the
# current mode's are printed.
ADDRESS_KEYS = {
    False: frozenset({"dst_min", "dst_max", "src_min", "src_max"}),
    True: frozenset({"saddr", "min_saddr", "max_saddr", "daddr", "min_daddr", "max_daddr"}),
}
ALWAYS_WRITTEN = frozenset({"clear_counters"})


def tos_key(ipv6):
    """The device command (and read-out line) of the IP header's TOS byte."""
    return "traffic_class" if ipv6 else "tos"


def command_key(cmd):
    """What a device command sets: commands with the same key overwrite
    each other (`ratep` and `delay` both set the delay; `flag X` and
    `flag !X` the flag X)."""
    words = cmd.split()
    if words[0] == "flag":
        return "flag " + words[1].lstrip("!")
    return {"ratep": "delay", "rate": "delay"}.get(words[0], words[0])


def expected_params(cfg: "DeviceConfig"):
    """The Params values `cfg`'s commands leave in the device read-out
    (pktgen-interface.md B), or None for an IMIX (not modelled: always
    written in full)."""
    if cfg.imix:
        return None
    size = str(cfg.pkt_size)
    exp = {"count": str(cfg.count), "min_pkt_size": size, "max_pkt_size": size,
           "delay": "0" if cfg.ratep is None else str(10**9 // cfg.ratep), "clone_skb": "0",
           "dst_mac": cfg.dst_mac.lower(),
           "udp_src_min": str(cfg.udp_src), "udp_src_max": str(cfg.udp_src_max),
           "udp_dst_min": str(cfg.udp_dst), "udp_dst_max": str(cfg.udp_dst)}
    if cfg.frames_per_burst is not None:
        # shown only above 1: "" stands for the line's absence
        exp["burst_frames"] = str(cfg.frames_per_burst) if cfg.frames_per_burst > 1 else ""
    if cfg.dst_networks is not None and not cfg.ipv6:
        exp["dst_stride"] = "256" if cfg.dst_networks > 1 else ""
    if cfg.stream_id is not None:
        exp["stream_id"] = str(cfg.stream_id) if cfg.stream_id else ""
    exp.update(vlan.readback(cfg.tags))
    if cfg.queue is not None:
        exp["queue_map_min"] = exp["queue_map_max"] = str(cfg.queue)
    if cfg.start_offset_ns is not None:
        exp["start_offset"] = str(cfg.start_offset_ns) if cfg.start_offset_ns else ""
    if cfg.tos is not None:
        # shown only when not 0
        exp[tos_key(cfg.ipv6)] = f"0x{cfg.tos:02x}" if cfg.tos else ""
    if cfg.ipv6:
        exp["saddr"] = ipaddress.IPv6Address(cfg.src_ip).compressed
        exp["daddr"] = ipaddress.IPv6Address(cfg.dst_ip).compressed
        if cfg.dst_networks is not None:
            exp["min_daddr"], exp["max_daddr"] = exp["daddr"], cfg.dst6_max
        if cfg.src_addresses is not None:
            exp["min_saddr"], exp["max_saddr"] = cfg.src6_range
    else:
        exp.update(dst_min=cfg.dst_ip, dst_max=cfg.dst_max, src_min=cfg.src_range[0], src_max=cfg.src_range[1])
    return exp


def device_view(state: "DeviceState"):
    """A device's whole configuration as read back: every Params value and
    the flag set (the Current and Result sections are left out)."""
    view = dict(state.params)
    view["Flags"] = " ".join(sorted(state.flags))
    return view


def verify_device(cfg, state, reference=None):
    """Problems (strings) where the read-back `state` differs from what
    `cfg` sets, and, given the `reference` view of an earlier verified
    read-back, where any value `cfg` does not set has changed since (a
    value written behind our back). Empty: the device is exactly as
    intended."""
    exp = expected_params(cfg)
    if exp is None:
        return []
    view = device_view(state)
    problems = [f"{k}={view.get(k)!r} (expected {v!r})" for k, v in exp.items()
                if (view.get(k) or "").lower() != v.lower()]
    flags = set(state.flags)
    if ("IPV6" in flags) != bool(cfg.ipv6):
        problems.append(f"flag IPV6 {'set' if 'IPV6' in flags else 'clear'} (expected the other)")
    for flag in cfg.flags:
        if (flag.lstrip("!") in flags) == flag.startswith("!"):
            problems.append(f"flag {flag} not in effect")
    if cfg.dst_networks is not None and ("IPDST_RND" in flags) != (cfg.dst_networks > 1):
        problems.append(f"flag IPDST_RND {'set' if 'IPDST_RND' in flags else 'clear'} (expected the other)")
    if reference is not None:
        ref_flags = set(reference.get("Flags", "").split())
        skip = set(exp) | {"Flags"}
        if ("IPV6" in ref_flags) != bool(cfg.ipv6):
            skip |= ADDRESS_KEYS[False] | ADDRESS_KEYS[True]   # the other mode's lines
        for k in sorted((set(reference) | set(view)) - skip):
            if reference.get(k) != view.get(k):
                problems.append(f"{k}={view.get(k)!r} (was {reference.get(k)!r})")
        set_by_cfg = {"IPV6"} | ({"IPDST_RND"} if cfg.dst_networks is not None else set()) \
            | {f.lstrip("!") for f in cfg.flags}
        if (ref_flags - set_by_cfg) != (flags - set_by_cfg):
            problems.append(f"flags {' '.join(sorted(flags))} (were {' '.join(sorted(ref_flags))})")
    return problems
