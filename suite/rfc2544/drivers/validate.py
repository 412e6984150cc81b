"""Validation of every value that reaches a remote shell or a /proc write.

Values are checked against strict shapes here and quoted again when the
script is built (defence in depth): a name or value that does not match is
BadInput, never a write.
"""
import ipaddress
import re

from rfc2544.errors import BadInput

# The one rule for interface names (inventory ports, pktgen and pgrx
# commands, /proc and /sys paths). The kernel's dev_valid_name()
# (net/core/dev.c) refuses an empty name, IFNAMSIZ (16) bytes or more, "." and
# "..", and any '/', ':' or isspace() byte (the kernel's ctype counts 0xa0 as
# space too). The tester adds: no '@' (pktgen and rfc2544_pktgen read
# "add_device IF@tag" and cut the interface name at the first '@'), and only
# letters, digits, '_', '.', '-', starting with a letter or digit, since names
# go into /proc writes with a strict character set and onto command lines.
IFNAMSIZ = 16
IFNAME_CHARS = r"[A-Za-z0-9][A-Za-z0-9_.-]*"
_KERNEL_REFUSED = frozenset(b"/: \t\n\v\f\r\xa0")
# A pktgen device file name: IF or IF@TAG; both pktgen modules keep the whole
# name in 32 bytes with its NUL (rfc2544_pktgen PG_NAME_LEN, pktgen odevname).
PGDEV_MAX = 31
PGDEV_RE = re.compile(r"^(" + IFNAME_CHARS + r")(?:@[0-9]{1,4})?$")
MAC_RE = re.compile(r"^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$")
NETNS_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")

U32_MAX = 2**32 - 1
U64_MAX = 2**64 - 1


def ifname_problem(value):
    """Why `value` cannot be an interface name here, or None when it can."""
    raw = str(value).encode("utf-8", "surrogateescape")
    if not raw:
        return "is empty"
    if len(raw) >= IFNAMSIZ:
        return f"is {len(raw)} bytes, Linux allows at most {IFNAMSIZ - 1}"
    if raw in (b".", b".."):
        return "is reserved by Linux"
    if _KERNEL_REFUSED.intersection(raw):
        return "has a character Linux refuses in interface names ('/', ':' or whitespace)"
    if b"@" in raw:
        return "has '@', which pktgen reads as the IF@tag separator"
    if not re.fullmatch(IFNAME_CHARS, str(value)):
        return "may hold only letters, digits, '_', '.' and '-', and must start with a letter or digit"
    return None


def ifname(value, what="interface name"):
    value = str(value)
    problem = ifname_problem(value)
    if problem:
        raise BadInput(f"{what} {value!r} is not a valid interface name ({problem})")
    return value


def pgdev(value):
    value = str(value)
    match = PGDEV_RE.fullmatch(value)
    if not match or ifname_problem(match.group(1)) or len(value) > PGDEV_MAX:
        raise BadInput(f"pktgen device {value!r} is not IF or IF@N (an interface name, "
                       f"at most {PGDEV_MAX} characters in all)")
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
