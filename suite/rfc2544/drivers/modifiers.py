"""RFC 2544 section 11's frame modifiers, as generator devices (pure).

Beside a trial's test streams, each tester port that sends may carry:
  broadcast   (11.2) frames to the hardware broadcast address, a share of
              the frames its streams send (the profile's broadcast_pct),
              spread over the trial;
  management  (11.3) frames to the DUT's own address on that link (the
              tx port's peer address), management_fps a second, to UDP
              port 161 (SNMP's): a query the DUT's control plane receives.
              The payload is the generator's test header, not an SNMP
              request: a DUT without an agent answers ICMP port unreachable.
Each is a pktgen device of its own on the port (`PORT@9990`, `PORT@9991`)
whose frames carry a stream id no trial declares, so a receiver that sees
one (a DUT that floods broadcasts) counts it as foreign, never as the test
stream's. The devices take part in every run of the generator: outside a
trial (learning, calibration) they send one frame each, since a pktgen
device cannot be told to send none.
"""
from dataclasses import dataclass
from typing import List, Optional

from rfc2544.errors import BadInput

from rfc2544.drivers import pktgen, validate
from rfc2544.wire import Tags

BROADCAST, MANAGEMENT = "broadcast", "management"
BROADCAST_MAC = "ff:ff:ff:ff:ff:ff"
BROADCAST_IP = {False: "255.255.255.255", True: "ff02::1"}   # IPv6 has no broadcast: all nodes
MANAGEMENT_UDP_PORT = 161
# pktgen device tags above any stream's PORT@N, and stream ids no trial declares
DEVICE_TAG = {BROADCAST: 9990, MANAGEMENT: 9991}
STREAM_ID = {BROADCAST: pktgen.MAX_STREAM_ID, MANAGEMENT: pktgen.MAX_STREAM_ID - 1}


@dataclass(frozen=True)
class ModifierPlan:
    kind: str               # broadcast | management
    tx_host: str
    tx_port: str
    device: str             # pktgen device on tx_host
    streams: tuple          # indexes of the StreamPlans leaving this port (broadcast: its share of theirs)
    dst_mac: str
    src4: Optional[str]
    dst4: Optional[str]
    src6: Optional[str]
    dst6: Optional[str]
    tags: Tags = Tags()             # the port's first stream's, as sent

    def addresses(self, ipv6, where="frames"):
        src, dst = (self.src6, self.dst6) if ipv6 else (self.src4, self.dst4)
        if not src or not dst:
            family = "peer_ipv6" if ipv6 else "peer_ipv4"
            what = (f"{family} (the DUT's address on that link)" if self.kind == MANAGEMENT and not dst
                    else f"an IPv{6 if ipv6 else 4} address")
            raise BadInput(f"{self.kind} {where} from {self.tx_host}:{self.tx_port} need {what} in the inventory")
        return src, dst


def enabled(settings):
    """The kinds the profile's `modifiers` section switches on."""
    return [k for k, v in ((BROADCAST, settings.broadcast_pct), (MANAGEMENT, settings.management_fps)) if v]


def plan_modifiers(inventory, plans, settings) -> List[ModifierPlan]:
    """One device per enabled kind per tx port, in the order of the ports'
    first streams; a port's modifier frames carry its first stream's tags."""
    kinds = enabled(settings)
    out = []
    ports = {}
    for p in plans:
        ports.setdefault((p.tx_host, p.tx_port), []).append(p)
    for (host, port_name), streams in ports.items():
        port = inventory.hosts[host].ports[port_name]
        first = streams[0]
        for kind in kinds:
            mgmt = kind == MANAGEMENT
            out.append(ModifierPlan(
                kind=kind, tx_host=host, tx_port=port_name,
                device=validate.pgdev(f"{port.name}@{DEVICE_TAG[kind]}"),
                streams=tuple(p.index for p in streams),
                dst_mac=first.dst_mac if mgmt else BROADCAST_MAC,
                src4=first.src4, src6=first.src6,
                dst4=(validate.ipv4(port.peer_ipv4) if port.peer_ipv4 else None) if mgmt else BROADCAST_IP[False],
                dst6=(validate.ipv6(port.peer_ipv6) if port.peer_ipv6 else None) if mgmt else BROADCAST_IP[True],
                tags=first.tags.sent()))
    return out


def planned_frames(mod, settings, stream_frames, sending_s):
    """(frames, frames/s) `mod` sends in a trial whose streams send
    `stream_frames` (per stream index) over `sending_s`: at least one frame,
    and all of them within the trial's sending time. A trial sent as fast
    as possible (sending_s 0: a back-to-back burst) gets its broadcast share
    as fast as possible too (rate None) and one management frame."""
    if mod.kind == BROADCAST:
        frames = max(int(round(sum(stream_frames[i] for i in mod.streams) * settings.broadcast_pct / 100)), 1)
        if sending_s <= 0:
            return frames, None
        rate = frames / sending_s
    else:
        rate = settings.management_fps
        frames = int(max(sending_s, 0) * rate) + 1     # the first at once, the last by the streams' last
    # a whole rate at least the one asked: the last frame leaves before the streams' last
    return frames, max(int(-(-rate // 1)), 1)


def device_config(mod, spec, frames, rate, pkt_size, imix, stream_ids=True):
    """The DeviceConfig of `mod` for one run; `pkt_size`/`imix`: the test
    streams' (management frames are the streams' smallest size)."""
    src, dst = mod.addresses(spec.ipv6)
    if mod.kind == MANAGEMENT and imix:
        pkt_size, imix = min(size for size, _ in imix), None
    return pktgen.DeviceConfig(
        device=mod.device, count=frames, dst_mac=mod.dst_mac, src_ip=src, dst_ip=dst, ipv6=spec.ipv6,
        pkt_size=pkt_size, imix=imix, ratep=rate,
        udp_dst=MANAGEMENT_UDP_PORT if mod.kind == MANAGEMENT else 9,
        stream_id=STREAM_ID[mod.kind] if stream_ids else None, tags=mod.tags)
