"""From the inventory to per-stream generator settings (pure).

A stream's generator sends from its tx port to the tx port's `peer_mac` (the
DUT's ingress port), from the tx port's address to the rx port's address.
When several streams leave one port, each gets its own pktgen device
`PORT@N`. Bidirectional (profile `direction: bi`, RFC 2544 section 14):
every inventory stream is also sent back, from its rx port to its tx port,
unless the inventory lists that reverse stream itself.
"""
from dataclasses import dataclass, replace
from typing import Dict, List, Optional

from rfc2544.errors import BadInput

from rfc2544.drivers import frame, pktgen, validate, vlan


@dataclass
class StreamPlan:
    index: int
    tx_host: str
    tx_port: str
    rx_host: str
    rx_port: str
    device: str            # pktgen device name on tx_host
    dst_mac: str
    tx_mac: str
    src4: Optional[str]
    dst4: Optional[str]
    src6: Optional[str]
    dst6: Optional[str]
    vlan: Optional[int] = None      # 802.1Q tag (inventory.Stream)
    svlan: Optional[int] = None     # 802.1ad outer tag (QinQ)
    vlan_pcp: Optional[int] = None  # each tag's PCP and DEI (vlan.TAG_FIELDS)
    vlan_dei: Optional[int] = None
    svlan_pcp: Optional[int] = None
    svlan_dei: Optional[int] = None
    rx_vlan: Optional[int] = None   # the tags at the receiving port where the DUT
    rx_svlan: Optional[int] = None  # changes them (vlan.ARRIVAL_FIELDS)

    @property
    def tags(self):
        return (self.vlan is not None) + (self.svlan is not None)

    @property
    def label(self):
        return f"{self.tx_host}:{self.tx_port}->{self.rx_host}:{self.rx_port}"

    def src(self, ipv6):
        return self.src6 if ipv6 else self.src4

    def dst(self, ipv6):
        return self.dst6 if ipv6 else self.dst4

    @property
    def stream_id(self):
        """The id its frames carry when the testers have stream ids (1..)."""
        return self.index + 1

    def rx_key(self, ipv6, by_id):
        """How pgrx names the stream: `sid:N` when its frames carry stream id
        N (`by_id`), else its source address."""
        return f"sid:{self.stream_id}" if by_id else self.src(ipv6)


def stream_ends(inventory, bidirectional=False):
    """Every stream to send (the inventory's Stream records): the
    inventory's, then (bidirectional) each one's reverse that it does not
    list itself."""
    streams = list(inventory.streams)
    if bidirectional:
        reverse = (replace(s, tx_host=s.rx_host, tx_port=s.rx_port, rx_host=s.tx_host, rx_port=s.tx_port,
                           **reverse_tags(s))
                   for s in streams)
        streams += [r for r in reverse if r not in streams]
    return streams


def reverse_tags(s):
    """The tag fields of s's reverse stream: the same tags where the DUT
    keeps them; where it changes them, the reverse is sent with the tags s
    arrives with and arrives with those s is sent with (a DUT that pops
    VLAN 100 one way pushes it the other). A priority bit stays with its
    tag while the reverse sends that tag."""
    if not vlan.rewritten(s):
        return {}
    out = {}
    for tag, sent in zip(("vlan", "svlan"), vlan.arriving(s)):
        back = getattr(s, tag)      # what the reverse arrives with
        out[tag] = sent
        out[f"rx_{tag}"] = None if back == sent else (vlan.UNTAGGED if back is None else back)
        for bit in ("pcp", "dei"):
            out[f"{tag}_{bit}"] = getattr(s, f"{tag}_{bit}") if sent is not None else None
    return out


def plan_streams(inventory, bidirectional=False) -> List[StreamPlan]:
    if not inventory.streams:
        raise BadInput(f"{inventory.path}: all.vars.rfc2544_streams lists no stream")
    streams = stream_ends(inventory, bidirectional)
    per_port: Dict[tuple, int] = {}
    for s in streams:
        per_port[(s.tx_host, s.tx_port)] = per_port.get((s.tx_host, s.tx_port), 0) + 1
    used: Dict[tuple, int] = {}
    plans = []
    for i, s in enumerate(streams):
        tx = inventory.hosts[s.tx_host].ports[s.tx_port]
        rx = inventory.hosts[s.rx_host].ports[s.rx_port]
        where = f"{s.tx_host}:{s.tx_port}"
        if not tx.peer_mac:
            raise BadInput(f"{inventory.path}: {where}: peer_mac is required on a port that sends "
                           "(the DUT ingress MAC)")
        key = (s.tx_host, s.tx_port)
        n = used.get(key, 0)
        used[key] = n + 1
        device = validate.ifname(tx.name) if per_port[key] == 1 else validate.pgdev(f"{tx.name}@{n}")
        plans.append(StreamPlan(
            index=i, tx_host=s.tx_host, tx_port=s.tx_port, rx_host=s.rx_host, rx_port=s.rx_port,
            device=device, dst_mac=validate.mac(tx.peer_mac), tx_mac=validate.mac(tx.mac),
            src4=validate.ipv4(tx.ipv4) if tx.ipv4 else None,
            dst4=validate.ipv4(rx.ipv4) if rx.ipv4 else None,
            src6=validate.ipv6(tx.ipv6) if tx.ipv6 else None,
            dst6=validate.ipv6(rx.ipv6) if rx.ipv6 else None,
            **vlan.tag_fields(s),
        ))
    return plans


def frame_tags(plans):
    """The VLAN tags a run's frame sizes count: the most any stream sends.
    Every stream sends the same size, so a size too small for the most
    tagged stream's headers is raised for all (drivers/frame.py)."""
    return max((p.tags for p in plans), default=0)


def arriving_frame_size(plans, host, frame_size):
    """The size (with FCS) the frames of `host`'s streams have when they
    reach it, sent at `frame_size` (every stream sends one size): that size,
    4 B less per tag the DUT removes and more per tag it adds. None where
    it cannot be told: streams into `host` that arrive with different tag
    changes, or frames the change makes shorter than Ethernet's 64 B (a NIC
    pads them, a veth does not)."""
    changes = arrival_changes(plans, host)
    if len(changes) != 1:
        return None
    size = frame_size + changes.pop() * frame.VLAN_TAG
    return size if size >= frame.ETHERNET_MIN_FRAME else None


def arrival_changes(plans, host):
    """{tags arriving - tags sent} over the streams into `host`."""
    return {vlan.arriving_tags(p) - p.tags for p in plans if p.rx_host == host}


def check_addresses(plans, ipv6):
    family = "ipv6" if ipv6 else "ipv4"
    for p in plans:
        if not p.src(ipv6):
            raise BadInput(f"stream {p.label}: tx port {p.tx_port} has no {family} address")
        if not p.dst(ipv6):
            raise BadInput(f"stream {p.label}: rx port {p.rx_port} has no {family} address")


def split_evenly(total, parts):
    """Split an integer total into `parts` integers differing by at most 1."""
    base, extra = divmod(int(total), parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def device_configs(plans, spec, count_per_stream, rate_per_stream, dst_mac_override=None,
                   extended=False, stream_ids=False, ipv6_networks=False, ipv6_sources=False):
    """DeviceConfig per stream for one run (trial, learning or calibration).
    `extended`: the generator is rfc2544_pktgen 1.2 or later, whose
    burst_frames and dst_stride are then written on every run (a device
    keeps them), else never (and a spec that needs them is refused).
    `stream_ids`: every tester host has rfc2544_pktgen 1.3 or later: each
    stream's frames carry its id (StreamPlan.stream_id). `ipv6_networks`:
    every tester host has 1.5 or later, whose IPv6 ranges span /64 networks.
    `ipv6_sources`: every tester host has 1.6 or later (an IPv6 source
    range): its range is written on every IPv6 run (one address for one
    source), so a device keeps no range from an earlier run."""
    if spec.frames_per_burst > 1 and not extended:
        raise BadInput("bursty traffic needs the rfc2544_pktgen module 1.2 or later on every tester host "
                       "(its burst_frames): run 'rfc2544 setup'")
    networks = spec.flows if spec.flow_spread == "dst_networks" else 1
    if networks > 1 and not extended:
        raise BadInput("destination networks need the rfc2544_pktgen module 1.2 or later on every tester host "
                       "(its dst_stride): run 'rfc2544 setup'")
    if networks > 1 and spec.ipv6 and not ipv6_networks:
        raise BadInput("IPv6 destination networks need the rfc2544_pktgen module 1.5 or later on every tester "
                       "host (its IPv6 ranges over /64 networks): run 'rfc2544 setup'")
    sources = spec.flows if spec.flow_spread == "src_addresses" else 1
    if sources > 1 and spec.ipv6 and not ipv6_sources:
        raise BadInput("IPv6 source-address flows need the rfc2544_pktgen module 1.6 or later on every tester "
                       "host (its src6_min/src6_max; upstream varies no IPv6 source): run 'rfc2544 setup', "
                       "or use flow_spread udp_ports or dst_networks")
    if sources > 1 and not stream_ids:
        raise BadInput("source-address flows need the rfc2544_pktgen module 1.3 or later on every tester host "
                       "(its stream ids keep a stream one stream whatever its source): run 'rfc2544 setup'")
    configs = []
    tags = frame_tags(plans)
    for p, count, rate in zip(plans, count_per_stream, rate_per_stream):
        imix = pktgen.imix_pkt_sizes(spec.ipv6, tags) if spec.frame_size == 0 else None
        configs.append(pktgen.DeviceConfig(
            device=p.device, count=count,
            dst_mac=dst_mac_override(p) if dst_mac_override else p.dst_mac,
            src_ip=p.src(spec.ipv6), dst_ip=p.dst(spec.ipv6), ipv6=spec.ipv6,
            pkt_size=None if imix else pktgen.pkt_size_for_frame(spec.frame_size),
            imix=imix, ratep=rate,
            flows=spec.flows if networks == 1 and sources == 1 else 1,
            dst_networks=networks if extended else None,
            src_addresses=sources if sources > 1 or (spec.ipv6 and ipv6_sources) else None,
            frames_per_burst=spec.frames_per_burst if extended else None,
            stream_id=p.stream_id if stream_ids else None,
            **vlan.sent_fields(p),
        ))
    return configs
