"""The frame the generator puts on the wire, and the smallest one it can.

Both generators (rfc2544_pktgen, pktgen-kmod/packet.c pg_build_skb, and the
in-tree pktgen) build Ethernet / [tags] / IPv4 or IPv6 / UDP / a 16-byte
test header (rfcpg.h PG_HDR_LEN: magic, sequence number, timestamp) / zero
padding. When the size asked cannot hold the headers and the test header,
they do not refuse it: they pad the payload up to the test header and send
a longer frame. At 64 B over IPv6 that is 82 B on the wire. A run must
state, and compute its rates from, the frame it sends, so it asks for that
size itself (`wire_frame_size`) and declares the difference.

Sizes here count the FCS, as RFC 2544 frame sizes do. Pure: no I/O.
"""
ETHERNET_HEADER = 14        # destination, source, EtherType
VLAN_TAG = 4                # one 802.1Q / 802.1ad tag (the suite sends none yet)
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
