"""The receiver's statistics arithmetic (pktgen-kmod/stats.c), compiled on
the host in user space against a minimal shim of the kernel headers it uses,
checked against exact Python arithmetic:

- 128-bit division and decimal printing;
- mean (3 decimals) and population variance at 10^10 samples of up to
  1.8*10^14 ns (sums near 2^128), where 64-bit sums would have overflowed;
- merging per-CPU accumulators;
- the log-linear histogram: bucket geometry, and median / 99.9th percentile
  within 1 % of the exact nearest-rank value on skewed samples;
- sums that cannot wrap (issue 32 item 4): samples near 2^64 saturate the
  sum of squares at 2^128 - 1 (variance then reported as 2^128 - 1,
  "unknown") instead of wrapping to a small, plausible value, also when
  per-CPU accumulators are merged.
Every test runs on a plain build and on one with -fsanitize=address,undefined.
"""
import math
import random
import subprocess
from fractions import Fraction

import pytest

from kmod_userspace import SANITIZE, build


SHIM = {
    "linux/types.h": """
#include <stdint.h>
#include <stdbool.h>
#include <stddef.h>
typedef uint64_t u64; typedef uint32_t u32; typedef uint16_t u16; typedef uint8_t u8;
typedef int64_t s64; typedef int32_t s32;
#define U64_MAX UINT64_MAX
""",
    "linux/kernel.h": "#include <linux/types.h>\n",
    "linux/bitops.h": """
static inline int fls64(u64 x) { return x ? 64 - __builtin_clzll(x) : 0; }
""",
    "linux/math64.h": """
static inline u64 div64_u64_rem(u64 a, u64 b, u64 *r) { *r = a % b; return a / b; }
""",
    "linux/seq_file.h": """
#include <stdio.h>
struct seq_file { FILE *f; };
static inline void seq_puts(struct seq_file *m, const char *s) { fputs(s, m->f); }
""",
}

HARNESS = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "stats.h"

static pg_u128 parse128(const char *s)
{
    pg_u128 v = 0;
    while (*s) v = v * 10 + (pg_u128)(*s++ - '0');
    return v;
}

int main(void)
{
    struct seq_file m = { stdout };
    char cmd[32];
    static u64 hist[PG_HIST_BUCKETS];

    while (scanf("%31s", cmd) == 1) {
        if (!strcmp(cmd, "div")) {            /* div N D -> quotient remainder */
            char a[64]; unsigned long long d;
            pg_u128 n; u64 r;
            scanf("%63s %llu", a, &d);
            n = parse128(a);
            r = pg_u128_divmod(&n, d);
            pg_seq_u128(&m, n);
            printf(" %llu\n", (unsigned long long)r);
        } else if (!strcmp(cmd, "meanvar")) { /* meanvar n sum sumsq */
            char a[64], b[64]; unsigned long long n;
            struct pg_stat st = {0};
            u64 mi; u32 ml; pg_u128 var;
            scanf("%llu %63s %63s", &n, a, b);
            st.n = n; st.sum = parse128(a); st.sumsq = parse128(b);
            pg_stat_mean_var(&st, &mi, &ml, &var);
            printf("%llu.%03u ", (unsigned long long)mi, ml);
            pg_seq_u128(&m, var);
            printf("\n");
        } else if (!strcmp(cmd, "samples")) { /* samples K x1..xK (two halves merged) */
            unsigned long long k, i, x;
            struct pg_stat a = {0}, b = {0};
            u64 mi; u32 ml; pg_u128 var;
            memset(hist, 0, sizeof(hist));
            scanf("%llu", &k);
            for (i = 0; i < k; i++) {
                scanf("%llu", &x);
                pg_stat_add(i % 2 ? &a : &b, x);
                hist[pg_hist_index(x)]++;
            }
            pg_stat_merge(&a, &b);
            pg_stat_mean_var(&a, &mi, &ml, &var);
            printf("%llu %llu %llu %llu.%03u ", (unsigned long long)a.n,
                   (unsigned long long)a.min, (unsigned long long)a.max,
                   (unsigned long long)mi, ml);
            pg_seq_u128(&m, var);
            printf(" %llu %llu %llu\n",
                   (unsigned long long)pg_hist_percentile(hist, a.n, 50, 100, a.min, a.max),
                   (unsigned long long)pg_hist_percentile(hist, a.n, 999, 1000, a.min, a.max),
                   (unsigned long long)pg_hist_percentile(hist, a.n, 9999, 10000, a.min, a.max));
        } else if (!strcmp(cmd, "sat")) {     /* sat K x: K samples x, merged with a copy */
            unsigned long long k, i, x;
            struct pg_stat a = {0}, b = {0};
            u64 mi; u32 ml; pg_u128 var;
            scanf("%llu %llu", &k, &x);
            for (i = 0; i < k; i++)
                pg_stat_add(&a, x);
            printf("%llu ", (unsigned long long)a.n);
            pg_seq_u128(&m, a.sum);
            printf(" ");
            pg_seq_u128(&m, a.sumsq);
            pg_stat_mean_var(&a, &mi, &ml, &var);
            printf(" %llu.%03u ", (unsigned long long)mi, ml);
            pg_seq_u128(&m, var);
            b = a;
            pg_stat_merge(&b, &a);
            printf(" ");
            pg_seq_u128(&m, b.sumsq);
            printf("\n");
        } else if (!strcmp(cmd, "bucket")) {  /* bucket x -> idx low high */
            unsigned long long x; u64 lo, hi; unsigned int idx;
            scanf("%llu", &x);
            idx = pg_hist_index(x);
            pg_hist_bounds(idx, &lo, &hi);
            printf("%u %llu %llu\n", idx, (unsigned long long)lo, (unsigned long long)hi);
        }
        fflush(stdout);
    }
    return 0;
}
"""


@pytest.fixture(scope="module", params=["plain", "sanitized"])
def stats_bin(tmp_path_factory, request):
    flags = SANITIZE if request.param == "sanitized" else ()
    return build(tmp_path_factory.mktemp("stats"), SHIM, HARNESS, ["stats.c"], "stats_test", flags)


def run(binary, text):
    res = subprocess.run([str(binary)], input=text, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    return res.stdout.splitlines()


def test_u128_division(stats_bin):
    cases = [(2**128 - 1, 10), (2**128 - 1, 2**64 - 1), (10**38, 10**19 + 7), (12345, 1),
             (2**64, 3), (0, 5), (3 * 2**100 + 17, 2**63 + 5)]
    lines = run(stats_bin, "".join(f"div {n} {d}\n" for n, d in cases))
    for (n, d), line in zip(cases, lines):
        q, r = line.split()
        assert (int(q), int(r)) == divmod(n, d)


def exact_mean_var(n, s, ss):
    mean = Fraction(s, n)
    var = Fraction(ss, n) - mean * mean
    return mean, var


def test_mean_and_variance_at_1e10_samples(stats_bin):
    """Sums as 10^10 samples of up to 1.8*10^14 ns produce them; the u64 sum of
    squares the published receiver kept would have overflowed long before."""
    cases = []
    n = 10**10
    for lo, hi in [(1.79e14, 1.8e14), (2_000_000, 2_000_100), (1, 3), (0, 10**9)]:
        # two-point distribution: half at lo, half at hi
        a, b = int(lo), int(hi)
        s = n // 2 * a + n // 2 * b
        ss = n // 2 * a * a + n // 2 * b * b
        cases.append((n, s, ss))
        assert ss < 2**128
    cases.append((7, 7 * 5, 7 * 25))                 # zero variance
    cases.append((3, 1 + 2 + 4, 1 + 4 + 16))
    lines = run(stats_bin, "".join(f"meanvar {n} {s} {ss}\n" for n, s, ss in cases))
    for (n, s, ss), line in zip(cases, lines):
        mean_txt, var_txt = line.split()
        mean, var = exact_mean_var(n, s, ss)
        assert Fraction(mean_txt) == Fraction(math.floor(mean * 1000), 1000)
        assert int(var_txt) == math.floor(var)
    assert cases[0][2] > 2**64                       # the overflow this avoids


def test_bucket_geometry(stats_bin):
    xs = [0, 1, 127, 128, 255, 256, 257, 1000, 2**20 + 12345, 2**39 + 1, 2**40 - 1, 2**40,
          2**63]
    lines = run(stats_bin, "".join(f"bucket {x}\n" for x in xs))
    prev = -1
    for x, line in zip(xs, lines):
        idx, lo, hi = (int(v) for v in line.split())
        assert idx >= prev
        prev = idx
        if x < 2**40:
            assert lo <= x <= hi
            assert x < 256 and lo == hi == x or (hi - lo + 1) <= lo / 128
        else:
            assert hi == 2**64 - 1 and lo == 2**40


@pytest.mark.parametrize("dist", ["lognormal", "bimodal", "uniform"])
def test_percentiles_within_1_percent(stats_bin, dist):
    rng = random.Random(7)
    k = 200000
    if dist == "lognormal":
        xs = [int(rng.lognormvariate(math.log(2e6), 0.5)) for _ in range(k)]
    elif dist == "bimodal":
        xs = [int(rng.gauss(20000, 500)) if rng.random() < 0.99 else int(rng.gauss(5e6, 1e5))
              for _ in range(k)]
    else:
        xs = [rng.randrange(1000, 10**7) for _ in range(k)]
    xs = [max(0, x) for x in xs]
    line = run(stats_bin, f"samples {k} " + " ".join(map(str, xs)) + "\n")[0].split()
    n, mn, mx, mean, var, p50, p999, p9999 = line
    srt = sorted(xs)
    assert (int(n), int(mn), int(mx)) == (k, srt[0], srt[-1])
    exact_mean, exact_var = exact_mean_var(k, sum(xs), sum(x * x for x in xs))
    assert Fraction(mean) == Fraction(math.floor(exact_mean * 1000), 1000)
    assert int(var) == math.floor(exact_var)

    def rank(q):                                   # nearest rank
        return srt[max(1, math.ceil(q * k)) - 1]

    for q, got in ((0.5, p50), (0.999, p999), (0.9999, p9999)):
        want = rank(q)
        assert abs(int(got) - want) <= 0.01 * want, (q, got, want)


U128_MAX = 2**128 - 1


@pytest.mark.parametrize("k,x", [(1, 2**64 - 1), (2, 2**64 - 1), (5, 2**63), (3, 2**62 + 12345)])
def test_sums_saturate_instead_of_wrapping(stats_bin, k, x):
    """x^2 near 2^128: the exact sum of squares is kept while it fits and
    saturates once it would not; a merge of two saturated (or of two
    nearly full) accumulators saturates too. The mean stays exact (the sum
    of x is far from 2^128). A wrap would look plausible: 5 samples of 2^63
    wrap to a sum of squares of 2^126."""
    n, total, sumsq, mean, var, merged = run(stats_bin, f"sat {k} {x}\n")[0].split()
    assert int(n) == k and int(total) == k * x
    assert Fraction(mean) == x
    exact = k * x * x
    if exact <= U128_MAX:
        assert int(sumsq) == exact and int(var) == 0
    else:
        assert int(sumsq) == U128_MAX and int(var) == U128_MAX
    assert int(merged) == min(2 * exact, U128_MAX)

