"""The test model of the kernel's jhash() (tests/integration/jhash_model.py),
which the adversarial corpus uses to aim sources at one chain of pgrx's
stream table, against lookup3's published values (the kernel's jhash is
lookup3's hashlittle with the same initial value), and the chains it picks."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "integration"))

from jhash_model import BUCKETS, bucket, colliding_ipv4, jhash  # noqa: E402


@pytest.mark.parametrize("key,initval,value", [
    (b"", 0, 0xdeadbeef),
    (b"", 0xdeadbeef, 0xbd5b7dde),
    (b"Four score and seven years ago", 0, 0x17770551),
    (b"Four score and seven years ago", 1, 0xcd628161),
])
def test_lookup3_reference_values(key, initval, value):
    assert jhash(key, initval) == value


def test_colliding_sources_share_a_chain_under_their_seed_only():
    srcs = colliding_ipv4(9, seed=0)
    assert len(set(srcs)) == 9 and len({bucket(s, 0) for s in srcs}) == 1
    # under another seed they scatter: no chain holds more than a few
    other = [bucket(s, 0x2544) for s in srcs]
    assert max(other.count(h) for h in other) <= 2 and all(0 <= h < BUCKETS for h in other)
