"""Bob Jenkins' lookup3 hash as the kernel's jhash() computes it
(include/linux/jhash.h: JHASH_INITVAL 0xdeadbeef, 12-byte rounds, the tail
read little-endian on x86), written from the algorithm's description, to
pick addresses that share a hash chain of pgrx's stream table for a given
seed: what an outsider who knew a constant seed would send."""
import ipaddress

M = 0xffffffff
BUCKETS = 2048          # PG_STREAM_BUCKETS, rx.c


def _rol(x, k):
    return ((x << k) | (x >> (32 - k))) & M


def _mix(a, b, c):
    a = (a - c) & M; a ^= _rol(c, 4); c = (c + b) & M          # noqa: E702
    b = (b - a) & M; b ^= _rol(a, 6); a = (a + c) & M          # noqa: E702
    c = (c - b) & M; c ^= _rol(b, 8); b = (b + a) & M          # noqa: E702
    a = (a - c) & M; a ^= _rol(c, 16); c = (c + b) & M         # noqa: E702
    b = (b - a) & M; b ^= _rol(a, 19); a = (a + c) & M         # noqa: E702
    c = (c - b) & M; c ^= _rol(b, 4); b = (b + a) & M          # noqa: E702
    return a, b, c


def _final(a, b, c):
    c ^= b; c = (c - _rol(b, 14)) & M       # noqa: E702
    a ^= c; a = (a - _rol(c, 11)) & M       # noqa: E702
    b ^= a; b = (b - _rol(a, 25)) & M       # noqa: E702
    c ^= b; c = (c - _rol(b, 16)) & M       # noqa: E702
    a ^= c; a = (a - _rol(c, 4)) & M        # noqa: E702
    b ^= a; b = (b - _rol(a, 14)) & M       # noqa: E702
    c ^= b; c = (c - _rol(b, 24)) & M       # noqa: E702
    return a, b, c


def jhash(key: bytes, initval: int) -> int:
    n = len(key)
    a = b = c = (0xdeadbeef + n + initval) & M
    while n > 12:
        a = (a + int.from_bytes(key[0:4], "little")) & M
        b = (b + int.from_bytes(key[4:8], "little")) & M
        c = (c + int.from_bytes(key[8:12], "little")) & M
        a, b, c = _mix(a, b, c)
        key, n = key[12:], n - 12
    if n == 0:
        return c
    tail = key + bytes(12 - n)
    a = (a + int.from_bytes(tail[0:4], "little")) & M
    b = (b + int.from_bytes(tail[4:8], "little")) & M
    c = (c + int.from_bytes(tail[8:12], "little")) & M
    return _final(a, b, c)[2]


def bucket(src: str, seed: int) -> int:
    """The stream table's chain of `src` (IPv4 as v4-mapped, as rx.c keys it)."""
    addr = ipaddress.ip_address(src)
    if addr.version == 4:
        addr = ipaddress.IPv6Address(f"::ffff:{addr}")
    return jhash(addr.packed, seed) % BUCKETS


def colliding_ipv4(n, seed=0):
    """`n` IPv4 sources in 100.64.0.0/10 that share one chain under `seed`,
    the chain of the first of them."""
    out, target, i = [], None, 0
    while len(out) < n:
        i += 1
        src = f"100.{64 + (i >> 16 & 63)}.{i >> 8 & 255}.{i & 255}"
        h = bucket(src, seed)
        if target is None:
            target = h
        if h == target:
            out.append(src)
    return out
