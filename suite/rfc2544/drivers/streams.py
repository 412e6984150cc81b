"""From the inventory to per-stream generator settings (pure).

A stream's generator sends from its tx port to the tx port's `peer_mac` (the
DUT's ingress port), from the tx port's address to the rx port's address.
When several streams leave one port, each gets its own pktgen device
`PORT@N`. Bidirectional (profile `direction: bi`, RFC 2544 section 14):
every inventory stream is also sent back, from its rx port to its tx port,
unless the inventory lists that reverse stream itself.

A stream of N generators (the tx port's `generators`, or a run's override)
is N plans here, one per pktgen device: each on its own kpktgend thread,
with its own share of the stream's frames and rate and its own stream id,
so that each has a sequence space of its own by construction (two devices
sending one id would interleave two sequence spaces and read as 50 %
duplicates). The receiver counts each id exactly; the stream's counts are
their sums (StreamPlan.stream groups them).
"""
from dataclasses import dataclass, replace
from typing import Dict, List, Optional, Tuple

from rfc2544.errors import BadInput

from rfc2544 import wire
from rfc2544.drivers import pktgen, validate
from rfc2544.wire import Tags

MAX_GENERATORS = 64     # per stream: one per kpktgend thread (CPU) and TX queue


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
    tags: Tags = Tags()             # the stream's (inventory.Stream)
    sizes: Tuple[int, ...] = ()     # its own frame sizes (inventory.Stream); (): the trial's
    dscp: Optional[int] = None      # its IP DSCP (inventory.Stream); None: not written
    stream: int = 0                 # the stream this generator is part of (its index)
    generator: int = 0              # this one's number in the stream, 0..generators-1
    generators: int = 1             # the stream's generators

    @property
    def ends(self):
        """The stream's label: where it goes from and to."""
        return f"{self.tx_host}:{self.tx_port}->{self.rx_host}:{self.rx_port}"

    @property
    def tx_ifname(self):
        """The interface it sends from (its device is IF or IF@N)."""
        return self.device.partition("@")[0]

    @property
    def port_slot(self):
        """Its number among the generators of its port, every stream's (the
        N of IF@N; 0 for IF alone)."""
        return int(self.device.partition("@")[2] or 0)

    @property
    def label(self):
        """This generator's label (the stream's, with one generator)."""
        if self.generators == 1:
            return self.ends
        return f"{self.ends} generator {self.generator + 1}/{self.generators}"

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
                           tags=s.tags.reversed())
                   for s in streams)
        streams += [r for r in reverse if r not in streams]
    return streams


def generators_of(inventory, stream, override=None):
    """How many generators send `stream`: the run's override, else its tx
    port's `generators`."""
    if override is not None:
        return validate.uint(override, "generators per stream", 1, MAX_GENERATORS)
    return inventory.hosts[stream.tx_host].ports[stream.tx_port].generators


def plan_streams(inventory, bidirectional=False, generators=None) -> List[StreamPlan]:
    """One plan per generator of every stream (module docstring);
    `generators`: the run's generators per stream, else each tx port's."""
    if not inventory.streams:
        raise BadInput(f"{inventory.path}: all.vars.rfc2544_streams lists no stream")
    streams = stream_ends(inventory, bidirectional)
    counts = [generators_of(inventory, s, generators) for s in streams]
    per_port: Dict[tuple, int] = {}
    for s, n in zip(streams, counts):
        per_port[(s.tx_host, s.tx_port)] = per_port.get((s.tx_host, s.tx_port), 0) + n
    used: Dict[tuple, int] = {}
    plans = []
    for i, (s, n_gen) in enumerate(zip(streams, counts)):
        tx = inventory.hosts[s.tx_host].ports[s.tx_port]
        rx = inventory.hosts[s.rx_host].ports[s.rx_port]
        where = f"{s.tx_host}:{s.tx_port}"
        if not tx.peer_mac:
            raise BadInput(f"{inventory.path}: {where}: peer_mac is required on a port that sends "
                           "(the DUT ingress MAC)")
        key = (s.tx_host, s.tx_port)
        for g in range(n_gen):
            n = used.get(key, 0)
            used[key] = n + 1
            device = validate.ifname(tx.name) if per_port[key] == 1 else validate.pgdev(f"{tx.name}@{n}")
            plans.append(StreamPlan(
                index=len(plans), tx_host=s.tx_host, tx_port=s.tx_port, rx_host=s.rx_host, rx_port=s.rx_port,
                device=device, dst_mac=validate.mac(tx.peer_mac), tx_mac=validate.mac(tx.mac),
                src4=validate.ipv4(tx.ipv4) if tx.ipv4 else None,
                dst4=validate.ipv4(rx.ipv4) if rx.ipv4 else None,
                src6=validate.ipv6(tx.ipv6) if tx.ipv6 else None,
                dst6=validate.ipv6(rx.ipv6) if rx.ipv6 else None,
                stream=i, generator=g, generators=n_gen,
                tags=s.tags, sizes=tuple(s.sizes), dscp=s.dscp,
            ))
    return plans


def stream_groups(plans):
    """The plans of each stream, in stream order: [[gen 0, gen 1, ...], ...]."""
    groups: Dict[int, List[StreamPlan]] = {}
    for p in plans:
        groups.setdefault(p.stream, []).append(p)
    return [groups[k] for k in sorted(groups)]


def tx_queue_of(plan, tx_queues):
    """The TX queue plan's generator sends on (queue_map_min = max), or
    None (the driver picks, as for one generator, or a port of one queue).
    The generators of N > 1 streams take their port's queues in turn (its
    port_slot modulo the queues: two streams of 4 on 8 queues use 0-3 and
    4-7; 4 on 2 queues share them by two), `tx_queues`: (host, interface)
    -> queues, from sysfs."""
    if plan.generators == 1:
        return None
    have = tx_queues.get((plan.tx_host, plan.tx_ifname), 1)
    return plan.port_slot % have if have > 1 else None


def frame_tags(plans):
    """The VLAN tags a run's frame sizes count: the most any stream sends.
    Every stream sends the same size, so a size too small for the most
    tagged stream's headers is raised for all (rfc2544/wire.py)."""
    return max((p.tags.count for p in plans), default=0)


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
    size = frame_size + changes.pop() * wire.VLAN_TAG
    return size if size >= wire.ETHERNET_MIN_FRAME else None


def arrival_changes(plans, host):
    """{tags arriving - tags sent} over the streams into `host`."""
    return {p.tags.arriving_count - p.tags.count for p in plans if p.rx_host == host}


def check_addresses(plans, ipv6):
    family = "ipv6" if ipv6 else "ipv4"
    for p in plans:
        if not p.src(ipv6):
            raise BadInput(f"stream {p.ends}: tx port {p.tx_port} has no {family} address")
        if not p.dst(ipv6):
            raise BadInput(f"stream {p.ends}: rx port {p.rx_port} has no {family} address")


START_BASE_NS = 1_000_000   # every generator of a stream held this long: its thread has picked the start up


def start_offset_of(plan, rate):
    """ns after the start at which plan's generator sends its first frame:
    generator g of N, at `rate` frames/s each, START_BASE_NS and g/N of
    the gap, so the stream's frames interleave evenly (the base: however
    late each thread picks the start up within it, they share one epoch).
    None for one generator (nothing written); 0 for a rate as fast as
    possible (nothing to interleave)."""
    if plan.generators == 1:
        return None
    if not rate:
        return 0
    return min(START_BASE_NS + round(plan.generator * 1e9 / rate / plan.generators), 10**9)


def check_generators(plans, threads):
    """Refuse a stream with more generators than its tx host has kpktgend
    threads (`threads`: host -> thread numbers): each needs a CPU of its own."""
    for group in stream_groups(plans):
        p = group[0]
        have = len(threads.get(p.tx_host, ()))
        if p.generators > have:
            raise BadInput(f"stream {p.ends}: {p.generators} generators, but {p.tx_host} has {have} kpktgend "
                           f"threads (one per CPU): at most {have} generators per stream there")


def shared_queue_notes(plans, tx_queues):
    """What to declare where the generators of a port's N > 1 streams
    outnumber its TX queues: some then share a queue, serialised on its
    lock (tx_queue_of)."""
    ports: Dict[tuple, List[StreamPlan]] = {}
    for p in plans:
        if p.generators > 1:
            ports.setdefault((p.tx_host, p.tx_ifname), []).append(p)
    notes = []
    for (host, ifname), group in ports.items():
        have = tx_queues.get((host, ifname), 1)
        if have < len(group):
            streams = sorted({p.ends for p in group})
            notes.append(f"{host}:{ifname} has {have} TX queue(s) for the {len(group)} generators of "
                         f"stream{'s' if len(streams) > 1 else ''} {', '.join(streams)}: they share "
                         f"{'a queue' if have == 1 else 'queues'} (a queue's lock serialises its generators)")
    return notes


def check_declared(host, streams, limit):
    """The streams `host`'s receiver is told of (sorted), or BadInput past
    `limit` (pgrx.MAX_DECLARED): each generator of a stream is a stream of
    its own there (its own stream id)."""
    if len(streams) > limit:
        raise BadInput(f"{host} receives {len(streams)} streams counting each generator apart (streams x "
                       f"generators); its receiver (pgrx) is told of at most {limit}: send fewer streams or "
                       "generators")
    return tuple(sorted(streams))


def generator_share(plan, total):
    """Plan's share of a stream's `total` (split_evenly over its generators)."""
    return split_evenly(total, plan.generators)[plan.generator]


def split_evenly(total, parts):
    """Split an integer total into `parts` integers differing by at most 1."""
    base, extra = divmod(int(total), parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def device_configs(plans, spec, count_per_stream, rate_per_stream, dst_mac_override=None,
                   extended=False, stream_ids=False, ipv6_networks=False, ipv6_sources=False,
                   tx_queues=None, start_offsets=False):
    """DeviceConfig per stream for one run (trial, learning or calibration).
    `extended`: the generator is rfc2544_pktgen 1.2 or later, whose
    burst_frames and dst_stride are then written on every run (a device
    keeps them), else never (and a spec that needs them is refused).
    `stream_ids`: every tester host has rfc2544_pktgen 1.3 or later: each
    stream's frames carry its id (StreamPlan.stream_id). `ipv6_networks`:
    every tester host has 1.5 or later, whose IPv6 ranges span /64 networks.
    `ipv6_sources`: every tester host has 1.6 or later (an IPv6 source
    range): its range is written on every IPv6 run (one address for one
    source), so a device keeps no range from an earlier run. `tx_queues`:
    (host, port) -> TX queues, for the queue of each of a stream's several
    generators (tx_queue_of). `start_offsets`: every tester has module 1.7's
    start_offset, and a stream's generators are staggered by a share of
    the gap each (start_offset_of). Counts and rates are per plan."""
    if any(p.generators > 1 for p in plans) and not stream_ids:
        raise BadInput("several generators per stream need the rfc2544_pktgen module 1.3 or later on every tester "
                       "host, generator and receiver (each generator's stream id keeps its sequence numbers "
                       "apart; interface counters could not tell a lost frame from a duplicate): run "
                       "'rfc2544 setup', or send with one generator per stream")
    if spec.frames_per_burst > 1 and any(p.generators > 1 for p in plans):
        raise BadInput("bursty traffic is sent by one generator per stream: several would send their bursts "
                       "interleaved, not the burst size asked (run it with --generators 1)")
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
        pkt_size, imix = _sizes_of(p, spec, tags)
        configs.append(pktgen.DeviceConfig(
            device=p.device, count=count,
            dst_mac=dst_mac_override(p) if dst_mac_override else p.dst_mac,
            src_ip=p.src(spec.ipv6), dst_ip=p.dst(spec.ipv6), ipv6=spec.ipv6,
            pkt_size=pkt_size, imix=imix, ratep=rate, tos=None if p.dscp is None else p.dscp << 2,
            flows=spec.flows if networks == 1 and sources == 1 else 1,
            dst_networks=networks if extended else None,
            src_addresses=sources if sources > 1 or (spec.ipv6 and ipv6_sources) else None,
            frames_per_burst=spec.frames_per_burst if extended else None,
            stream_id=p.stream_id if stream_ids else None,
            queue=tx_queue_of(p, tx_queues or {}),
            start_offset_ns=start_offset_of(p, rate) if start_offsets else None,
            tags=p.tags.sent(),
        ))
    return configs


def _sizes_of(plan, spec, tags):
    """(pkt_size, IMIX weights) of plan's device: its stream's own sizes
    (one: that size; several: each an equal share), else the trial's."""
    if plan.sizes:
        sent = [pktgen.pkt_size_for_frame(wire.wire_frame_size(s, spec.ipv6, tags)) for s in plan.sizes]
        if len(set(sent)) == 1:
            return sent[0], None
        return None, tuple((size, sent.count(size)) for size in sorted(set(sent)))
    if spec.frame_size == 0:
        return None, pktgen.imix_pkt_sizes(spec.ipv6, tags)
    return pktgen.pkt_size_for_frame(spec.frame_size), None


def split_weighted(total, weights):
    """Split an integer total in proportion to `weights` (integers that add
    up to it; the largest remainders take the spare units)."""
    whole = sum(weights)
    exact = [total * w / whole for w in weights]
    parts = [int(x) for x in exact]
    spare = int(total) - sum(parts)
    for i in sorted(range(len(exact)), key=lambda k: parts[k] - exact[k])[:spare]:
        parts[i] += 1
    return parts
