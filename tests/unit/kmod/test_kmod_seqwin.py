"""The receiver's sequence accounting (pktgen-kmod/seqwin.c), compiled on the
host in user space against a minimal shim of the kernel's bitmap helpers.

pgrx keeps one window per stream per CPU and merges them when read. Arrivals
are fed to the harness as (cpu, sequence) pairs in arrival order, and the
merged result is checked against a model that sees everything (sets, no
windows): distinct sequences received, duplicates (also of a sequence that
arrived on two CPUs), loss = sequences 1..max seen nowhere, out-of-order as
each CPU saw it, too-old packets. Streams spread over CPUs the way RSS/RPS
spread flows, and the worse case of packets sprayed over CPUs one by one.

Spoofed sequence numbers (issue 32 item 4): a frame far ahead of the highest
sequence (0xffffffff, a jump of 2^31 - 1) waits for a second frame to
confirm it and is otherwise counted in `jump`, never as loss; a jump of
-2^31 or a 0 is `old`; the 32-bit wrap extends to 64 bits. Every test runs
on a plain build and on one with -fsanitize=address,undefined.
"""
import random
import subprocess

import pytest

from kmod_userspace import SANITIZE, build

W = 4096        # PG_SEQ_WINDOW

SHIM = {
    "linux/types.h": """
#include <stdint.h>
#include <stdbool.h>
#include <stddef.h>
typedef uint64_t u64; typedef uint32_t u32; typedef int64_t s64; typedef int32_t s32;
""",
    "linux/kernel.h": """
#include <linux/types.h>
#define min(a, b) ((a) < (b) ? (a) : (b))
#define min_t(t, a, b) ((t)(a) < (t)(b) ? (t)(a) : (t)(b))
#define likely(x) (x)
#define unlikely(x) (x)
""",
    "linux/bitops.h": """
#include <linux/types.h>
#define BITS_PER_LONG 64
#define BITS_TO_LONGS(n) (((n) + BITS_PER_LONG - 1) / BITS_PER_LONG)
static inline void __set_bit(unsigned long nr, unsigned long *m)
{ m[nr / BITS_PER_LONG] |= 1UL << (nr % BITS_PER_LONG); }
static inline bool __test_and_set_bit(unsigned long nr, unsigned long *m)
{ bool old = m[nr / BITS_PER_LONG] >> (nr % BITS_PER_LONG) & 1; __set_bit(nr, m); return old; }
""",
    "linux/bitmap.h": """
#include <linux/bitops.h>
#include <string.h>
static inline void bitmap_set(unsigned long *m, unsigned int start, unsigned int n)
{ while (n--) __set_bit(start++, m); }
static inline void bitmap_clear(unsigned long *m, unsigned int start, unsigned int n)
{ for (; n--; start++) m[start / BITS_PER_LONG] &= ~(1UL << (start % BITS_PER_LONG)); }
static inline void bitmap_zero(unsigned long *m, unsigned int n)
{ memset(m, 0, BITS_TO_LONGS(n) * sizeof(long)); }
static inline void bitmap_copy(unsigned long *d, const unsigned long *s, unsigned int n)
{ memcpy(d, s, BITS_TO_LONGS(n) * sizeof(long)); }
static inline void bitmap_and(unsigned long *d, const unsigned long *a, const unsigned long *b, unsigned int n)
{ for (unsigned int i = 0; i < BITS_TO_LONGS(n); i++) d[i] = a[i] & b[i]; }
static inline void bitmap_or(unsigned long *d, const unsigned long *a, const unsigned long *b, unsigned int n)
{ for (unsigned int i = 0; i < BITS_TO_LONGS(n); i++) d[i] = a[i] | b[i]; }
static inline unsigned int bitmap_weight(const unsigned long *m, unsigned int n)
{ unsigned int w = 0; for (unsigned int i = 0; i < BITS_TO_LONGS(n); i++) w += __builtin_popcountl(m[i]); return w; }
""",
}

# stdin: "cpus", then "cpu seq" lines; stdout: each part, then the sum
HARNESS = r"""
#include <stdio.h>
#include <stdlib.h>
#include "seqwin.h"

int main(void)
{
    unsigned int cpus, cpu, i;
    unsigned long long seq;
    struct pg_seqwin *w;
    static struct pg_seqwin_sum sum;

    if (scanf("%u", &cpus) != 1)
        return 2;
    w = calloc(cpus, sizeof(*w));
    while (scanf("%u %llu", &cpu, &seq) == 2)
        pg_seqwin_add(&w[cpu], (u32)seq);
    pg_seqwin_sum_init(&sum);
    for (i = 0; i < cpus; i++) {
        printf("part %llu %llu %llu %llu %llu\n", (unsigned long long)w[i].n,
               (unsigned long long)w[i].seq_max, (unsigned long long)w[i].ooo,
               (unsigned long long)w[i].dup, (unsigned long long)w[i].old);
        pg_seqwin_sum_add(&sum, &w[i]);
    }
    printf("sum %llu %llu %llu %llu %llu %llu %llu\n", (unsigned long long)sum.n,
           (unsigned long long)sum.seq_max, (unsigned long long)sum.ooo,
           (unsigned long long)sum.dup, (unsigned long long)sum.old,
           (unsigned long long)pg_seqwin_sum_lost(&sum), (unsigned long long)sum.jump);
    free(w);
    return 0;
}
"""

KEYS = ("n", "seq_max", "ooo", "dup", "old")


@pytest.fixture(scope="module", params=["plain", "sanitized"])
def seqwin(tmp_path_factory, request):
    flags = SANITIZE if request.param == "sanitized" else ()
    binary = build(tmp_path_factory.mktemp("seqwin"), SHIM, HARNESS, ["seqwin.c"], "seqwin_test", flags)

    def run(cpus, arrivals):
        text = f"{cpus}\n" + "".join(f"{c} {s}\n" for c, s in arrivals)
        res = subprocess.run([str(binary)], input=text, capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, res.stderr
        lines = [line.split() for line in res.stdout.splitlines()]
        parts = [dict(zip(KEYS, map(int, f[1:]))) for f in lines if f[0] == "part"]
        [total] = [dict(zip(KEYS + ("lost", "jump"), map(int, f[1:]))) for f in lines if f[0] == "sum"]
        return parts, total
    return run


def model(cpus, arrivals):
    """What a receiver that sees every arrival with unbounded memory counts.
    Out-of-order is per CPU (a CPU's first sight of a sequence below the
    highest it has seen); 'old' needs a window, so scenarios keep every
    arrival within one window of its CPU's highest sequence."""
    seen, per_cpu_seen, per_cpu_max, ooo = set(), [set() for _ in range(cpus)], [None] * cpus, 0
    for c, s in arrivals:
        if per_cpu_max[c] is not None and s < per_cpu_max[c] and s not in per_cpu_seen[c]:
            ooo += 1
        per_cpu_max[c] = s if per_cpu_max[c] is None else max(per_cpu_max[c], s)
        per_cpu_seen[c].add(s)
        seen.add(s)
    top = max(s for _, s in arrivals)
    return {"n": len(arrivals), "seq_max": top, "dup": len(arrivals) - len(seen),
            "lost": top - len(seen), "ooo": ooo, "old": 0}


def impaired(count, rng, loss=0.01, dup=0.01, reorder=0.05, depth=40):
    """Sequences 1..count as a netem-like DUT leaves them: lost, duplicated
    (the copy right behind), some held back by up to `depth` places."""
    out = []
    for s in range(1, count + 1):
        if rng.random() < loss:
            continue
        out.append(s)
        if rng.random() < dup:
            out.append(s)
    for i in range(len(out) - 1, 0, -1):
        if rng.random() < reorder:
            j = min(len(out) - 1, i + rng.randrange(1, depth))
            out.insert(j, out.pop(i))
    return out


def by_flow(seqs, cpus, flows=8):
    """RSS/RPS: the generator's flows (here seq % flows, like udp_src
    stepping) hash to CPUs; every copy of a sequence takes its flow's CPU."""
    cpu_of = [(f * 2654435761 >> 5) % cpus for f in range(flows)]   # fixed "hash"
    return [(cpu_of[s % flows], s) for s in seqs]


def check(seqwin, cpus, arrivals):
    parts, total = seqwin(cpus, arrivals)
    expect = model(cpus, arrivals)
    assert {k: total[k] for k in expect} == expect
    return parts, total


@pytest.mark.parametrize("seed", range(3))
def test_one_cpu_counts_loss_duplicates_and_reordering(seqwin, seed):
    rng = random.Random(seed)
    parts, total = check(seqwin, 1, [(0, s) for s in impaired(30000, rng)])
    assert total["lost"] > 0 and total["dup"] > 0 and total["ooo"] > 0


@pytest.mark.parametrize("cpus", [2, 4])
def test_a_stream_spread_by_flow_hash_is_counted_exactly(seqwin, cpus):
    rng = random.Random(cpus)
    parts, total = check(seqwin, cpus, by_flow(impaired(50000, rng), cpus))
    assert sum(1 for p in parts if p["n"]) >= 2          # really spread
    assert total["lost"] > 0 and total["dup"] > 0 and total["ooo"] > 0


def test_copies_of_a_sequence_on_two_cpus_are_duplicates_not_extra_packets(seqwin):
    """The same sequence arriving on two CPUs (packets sprayed one by one,
    no flow affinity): each CPU alone sees it once; the merge finds it in
    both windows. Exact while the run fits one window."""
    rng = random.Random(7)
    arrivals = [(rng.randrange(2), s) for s in impaired(W - 100, rng, dup=0.03)]
    parts, total = check(seqwin, 2, arrivals)
    cross = total["dup"] - sum(p["dup"] for p in parts)
    assert cross > 20, (parts, total)


def test_cross_cpu_copies_older_than_the_window_are_not_found(seqwin):
    """The limit of per-CPU windows, as docs/pgrx-receiver.md states it: a copy on
    another CPU than its original is found only while both are within the
    last W sequences; older ones count as received. RSS and RPS never do
    this (identical copies hash alike), packet spraying would."""
    rng = random.Random(8)
    seqs = list(range(1, 3 * W + 1))
    copies = set(rng.sample(seqs, 200))
    arrivals = []
    for s in seqs:
        arrivals.append((0, s))
        if s in copies:
            arrivals.append((1, s))
    parts, total = seqwin(2, arrivals)
    findable = sum(1 for s in copies if s > 3 * W - W)
    assert total["dup"] == findable and 0 < findable < len(copies)
    assert total["lost"] == 0 and total["seq_max"] == 3 * W


def test_loss_burst_longer_than_the_window_and_tail(seqwin):
    """A gap of 3 windows on one CPU of two, then traffic again."""
    seqs = list(range(1, 5001)) + list(range(5001 + 3 * W, 5001 + 3 * W + 5000))
    check(seqwin, 2, by_flow(seqs, 2))


def test_packets_older_than_the_window_count_as_old(seqwin):
    arrivals = [(0, s) for s in range(1, 10001)] + [(0, 100), (0, 10000 - W)]
    parts, total = seqwin(1, arrivals)
    assert total["old"] == 2 and total["dup"] == 0
    assert total["lost"] == 0 and total["n"] == 10002


def test_an_empty_cpu_adds_nothing(seqwin):
    parts, total = check(seqwin, 3, [(1, s) for s in (1, 2, 4, 3, 3)])
    assert parts[0]["n"] == parts[2]["n"] == 0
    assert (total["lost"], total["ooo"], total["dup"]) == (0, 1, 1)


# ---- spoofed and extreme sequence numbers (issue 32 item 4) ----

def test_a_spoofed_first_frame_of_0xffffffff_claims_no_loss(seqwin):
    """The example of the issue: without the jump rule the stream's first
    frame 0xffffffff made seq_max 2^32 - 1 and lost ~4.29e9."""
    parts, total = seqwin(1, [(0, 0xffffffff)] + [(0, s) for s in range(1, 1001)])
    assert (total["seq_max"], total["lost"], total["jump"], total["n"]) == (1000, 0, 1, 1000)


def test_spoofed_jumps_into_a_running_stream(seqwin):
    """0xffffffff, 0, +2^31 - 1, -2^31 (as 32-bit wire values) amid 1..3000:
    the forward jump waits unconfirmed (jump), the others are old; nothing
    is lost and the genuine sequence's books balance."""
    genuine = [(0, s) for s in range(1, 3001)]
    spoofs = [(0, 0xffffffff), (0, 0), (0, (1500 + 2**31 - 1) % 2**32), (0, (1600 + 2**31) % 2**32)]
    arrivals = genuine[:1500] + spoofs[:3] + genuine[1500:1600] + spoofs[3:] + genuine[1600:]
    parts, total = seqwin(1, arrivals)
    assert total["seq_max"] == 3000 and total["lost"] == 0
    assert total["jump"] == 1 and total["old"] == 3 and total["n"] == 3003
    assert total["n"] - total["dup"] - total["old"] == 3000


def test_a_replaced_far_frame_counts_as_jump(seqwin):
    arrivals = [(0, s) for s in range(1, 101)] + [(0, 10**6), (0, 2 * 10**6)] + \
        [(0, s) for s in range(101, 201)]
    parts, total = seqwin(1, arrivals)
    assert (total["seq_max"], total["lost"], total["jump"]) == (200, 0, 2)


def test_a_real_outage_longer_than_the_jump_limit_is_loss(seqwin):
    """Frames after a gap of many windows confirm each other: the gap is loss,
    exactly, on one CPU and on two (each CPU confirms its own part)."""
    seqs = list(range(1, 2001)) + list(range(2001 + 50 * W, 2001 + 50 * W + 2000))
    for cpus in (1, 2):
        parts, total = check(seqwin, cpus, by_flow(seqs, cpus) if cpus > 1 else [(0, s) for s in seqs])
        assert total["lost"] == 50 * W and total["jump"] == 0


def test_a_jump_confirmed_by_a_reordered_frame(seqwin):
    """After the gap the second frame arrives first: still confirmed."""
    seqs = list(range(1, 101)) + [100 + 10 * W + 2, 100 + 10 * W + 1] + list(range(103 + 10 * W, 200 + 10 * W))
    parts, total = seqwin(1, [(0, s) for s in seqs])
    assert total["jump"] == 0 and total["ooo"] == 1
    assert total["lost"] == 10 * W and total["seq_max"] == 199 + 10 * W


def test_the_32_bit_wrap_extends(seqwin):
    """A stream crossing 2^32 (its first frames confirm the start near the
    top): sequences after the wrap continue above 2^32; only the numbers
    below its first frame count as lost, as for any stream (the generator
    starts at 1)."""
    first = 2**32 - 100
    seqs = [(first + i) % 2**32 for i in range(300)]
    parts, total = seqwin(1, [(0, s) for s in seqs])
    assert total["seq_max"] == first + 299 and total["jump"] == 0
    assert total["ooo"] == total["dup"] == total["old"] == 0
    assert total["lost"] == first - 1
