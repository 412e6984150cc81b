"""Validation of every value that reaches a remote shell or a /proc write.

Values are checked against strict shapes here and quoted again when the
script is built (defence in depth): a name or value that does not match is
BadInput, never a write.
"""
import ipaddress
import re

from rfc2544.errors import BadInput

# Linux refuses '/', ':' and whitespace in netdev names; pktgen uses '@' as the
# device@tag separator, so a plain interface name here has none of those.
IFNAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,14}$")
# A pktgen device file name: IF or IF@TAG (whole name <= 15 chars).
PGDEV_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,14}(@[0-9]{1,4})?$")
MAC_RE = re.compile(r"^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$")
NETNS_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")

U32_MAX = 2**32 - 1
U64_MAX = 2**64 - 1


def ifname(value, what="interface name"):
    value = str(value)
    if not IFNAME_RE.fullmatch(value):
        raise BadInput(f"{what} {value!r} is not a valid interface name")
    return value


def pgdev(value):
    value = str(value)
    if not PGDEV_RE.fullmatch(value) or len(value) > 15:
        raise BadInput(f"pktgen device {value!r} is not IF or IF@N of at most 15 characters")
    return value


def mac(value, what="MAC address"):
    value = str(value)
    if not MAC_RE.fullmatch(value):
        raise BadInput(f"{what} {value!r} is not a MAC address")
    return value.lower()


def netns(value):
    value = str(value)
    if not NETNS_RE.fullmatch(value):
        raise BadInput(f"network namespace {value!r} is not a valid name")
    return value


def ipv4(value, what="IPv4 address"):
    """An IPv4 address; 'a.b.c.d/nn' is accepted and the prefix dropped."""
    try:
        return str(ipaddress.IPv4Interface(str(value)).ip)
    except ValueError:
        raise BadInput(f"{what} {value!r} is not an IPv4 address")


def ipv6(value, what="IPv6 address"):
    try:
        return ipaddress.IPv6Interface(str(value)).ip.compressed
    except ValueError:
        raise BadInput(f"{what} {value!r} is not an IPv6 address")


def uint(value, what, low=0, high=U64_MAX):
    """A whole number within [low, high]; bools and non-integral floats refused."""
    if isinstance(value, bool):
        raise BadInput(f"{what} must be a whole number, not {value!r}")
    if isinstance(value, float):
        if not value.is_integer():
            raise BadInput(f"{what} must be a whole number, not {value!r}")
        value = int(value)
    if isinstance(value, str):
        if not re.fullmatch(r"[0-9]{1,20}", value):
            raise BadInput(f"{what} must be a whole number, not {value!r}")
        value = int(value)
    if not isinstance(value, int):
        raise BadInput(f"{what} must be a whole number, not {value!r}")
    if not low <= value <= high:
        raise BadInput(f"{what} must be between {low} and {high}, not {value}")
    return value
