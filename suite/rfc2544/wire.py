"""What a test frame is on the wire: its size, the smallest one the
generator can send, and a stream's VLAN tags (Tags). Pure, no I/O: every
layer may import it.

Both generators (rfc2544_pktgen, pktgen-kmod/packet.c pg_build_skb, and the
in-tree pktgen) build Ethernet / [tags] / IPv4 or IPv6 / UDP / a 16-byte
test header (rfcpg.h PG_HDR_LEN: magic, sequence number, timestamp) / zero
padding. When the size asked cannot hold the headers and the test header,
they do not refuse it: they pad the payload up to the test header and send
a longer frame. At 64 B over IPv6 that is 82 B on the wire. A run must
state, and compute its rates from, the frame it sends, so it asks for that
size itself (`wire_frame_size`) and declares the difference.

Sizes here count the FCS, as RFC 2544 frame sizes do.
"""
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Optional, Tuple

ETHERNET_HEADER = 14        # destination, source, EtherType
VLAN_TAG = 4                # one 802.1Q / 802.1ad tag
IPV4_HEADER = 20            # no options
IPV6_HEADER = 40            # no extension headers
UDP_HEADER = 8
TEST_HEADER = 16            # rfcpg.h PG_HDR_LEN, the upstream pktgen header's size too
FCS = 4
ETHERNET_MIN_FRAME = 64     # shorter frames are padded to this by the NIC

# The simple IMIX as asked: 7:4:1 of 64, 576 and 1518-byte frames.
SIMPLE_IMIX = ((64, 7), (576, 4), (1518, 1))


def min_frame_size(ipv6, tags=0):
    """The smallest frame (with FCS) that holds the headers and the test
    header, for IPv4 or IPv6 and `tags` VLAN tags: 62 B (IPv4; the NIC pads
    it to 64), 82 B (IPv6), 4 B more per tag."""
    l3 = IPV6_HEADER if ipv6 else IPV4_HEADER
    frame = ETHERNET_HEADER + tags * VLAN_TAG + l3 + UDP_HEADER + TEST_HEADER + FCS
    return max(frame, ETHERNET_MIN_FRAME)


def wire_frame_size(frame_size, ipv6, tags=0):
    """The frame size sent for a requested `frame_size` (with FCS): the size
    itself, or the smallest that holds the headers when it is too small.
    0 (IMIX) stays 0: its sizes are `imix_mix`."""
    if not frame_size:
        return frame_size
    return max(frame_size, min_frame_size(ipv6, tags))


def imix_mix(ipv6, tags=0):
    """The simple IMIX as sent: (frame size with FCS, weight) pairs."""
    return tuple((wire_frame_size(size, ipv6, tags), weight) for size, weight in SIMPLE_IMIX)


def imix_mean_size(ipv6=False, tags=0):
    """The IMIX's mean frame size on the wire (with FCS)."""
    mix = imix_mix(ipv6, tags)
    return sum(s * w for s, w in mix) / sum(w for _, w in mix)


VLAN_IDS = (1, 4094)        # 0 is priority-only, 4095 reserved (802.1Q); the generator drops a tag above
PRIORITY_RANGES = {"pcp": (0, 7), "dei": (0, 1)}    # 802.1p priority code point, drop eligible indicator
UNTAGGED = 0                # Tags.rx_vlan / rx_svlan: the DUT removes that tag


@dataclass(frozen=True)
class Tags:
    """A stream's VLAN tags, as every layer carries them (inventory.Stream,
    streams.StreamPlan, modifiers.ModifierPlan, pktgen.DeviceConfig): the
    802.1Q tag `vlan`, under an 802.1ad outer tag `svlan` for QinQ; each
    tag's priority code point (0..7) and drop eligible indicator (0, 1);
    None: not set (untagged; a PCP or DEI not written is 0). `rx_vlan`,
    `rx_svlan`: the tags at the receiving port where the DUT pops, pushes
    or translates them: None as sent, UNTAGGED removed, else the id."""
    vlan: Optional[int] = None
    svlan: Optional[int] = None
    vlan_pcp: Optional[int] = None
    vlan_dei: Optional[int] = None
    svlan_pcp: Optional[int] = None
    svlan_dei: Optional[int] = None
    rx_vlan: Optional[int] = None
    rx_svlan: Optional[int] = None

    @classmethod
    def of(cls, entry):
        """The tags of a mapping that may hold any of the fields (a
        results.json conditions.streams entry)."""
        if not isinstance(entry, Mapping):
            raise TypeError(f"Tags.of takes a mapping, not {type(entry).__name__}")
        return cls(**{f.name: entry.get(f.name) for f in fields(cls)})

    def as_entry(self) -> dict:
        """The fields that are set (a conditions.streams entry's)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}

    @property
    def count(self) -> int:
        """Tags per frame sent: 0, 1 or 2 (QinQ)."""
        return (self.vlan is not None) + (self.svlan is not None)

    def arriving(self) -> Tuple[Optional[int], Optional[int]]:
        """(vlan, svlan) of the frames at the receiving port: the sent tags
        where the DUT keeps them."""
        out = []
        for sent, override in ((self.vlan, self.rx_vlan), (self.svlan, self.rx_svlan)):
            out.append(sent if override is None else (None if override == UNTAGGED else override))
        return out[0], out[1]

    @property
    def arriving_count(self) -> int:
        """Tags per frame at the receiving port: 0, 1 or 2."""
        return sum(t is not None for t in self.arriving())

    @property
    def rewritten(self) -> bool:
        """Whether the DUT changes the tags on the way."""
        return self.arriving() != (self.vlan, self.svlan)

    def sent(self) -> "Tags":
        """Only what a generator writes (no arrival fields)."""
        return replace(self, rx_vlan=None, rx_svlan=None)

    def reversed(self) -> "Tags":
        """The reverse stream's tags: the same where the DUT keeps them;
        where it changes them, the reverse is sent with the tags these
        arrive with and arrives with those these are sent with (a DUT that
        pops VLAN 100 one way pushes it the other). A priority bit stays
        with its tag while the reverse sends that tag."""
        if not self.rewritten:
            return self
        out = {}
        for tag, sent in zip(("vlan", "svlan"), self.arriving()):
            back = getattr(self, tag)      # what the reverse arrives with
            out[tag] = sent
            out[f"rx_{tag}"] = None if back == sent else (UNTAGGED if back is None else back)
            for bit in ("pcp", "dei"):
                out[f"{tag}_{bit}"] = getattr(self, f"{tag}_{bit}") if sent is not None else None
        return Tags(**out)

    @property
    def text(self) -> str:
        """'VLAN 100' or 'QinQ 200/100', with ' PCP 5 DEI 1' (per tag, outer
        first) when set, and ', received VLAN 200' (or 'untagged') where the
        DUT changes the tags: the report's and the messages' wording; ''
        for an untagged stream the DUT leaves so."""
        def prio(tag):
            pcp, dei = getattr(self, f"{tag}_pcp"), getattr(self, f"{tag}_dei")
            return (f" PCP {pcp}" if pcp is not None else "") + (f" DEI {dei}" if dei is not None else "")
        sent = _stack_text(self.vlan, self.svlan, prio)
        if not self.rewritten:
            return "" if self.vlan is None else sent
        return f"{sent}, received {_stack_text(*self.arriving())}"


def _stack_text(vlan, svlan, prio=lambda tag: ""):
    """'untagged', 'VLAN 100' or 'QinQ 200/100', each tag followed by prio(tag)."""
    if vlan is None:
        return "untagged"
    if svlan is None:
        return f"VLAN {vlan}{prio('vlan')}"
    return f"QinQ {svlan}{prio('svlan')}/{vlan}{prio('vlan')}"
