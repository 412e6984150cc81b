// SPDX-License-Identifier: GPL-2.0
/*
 * 128-bit arithmetic for statistics read-out (the kernel has no 128-bit
 * division helper) and the histogram geometry.
 */
#include <linux/kernel.h>
#include <linux/math64.h>
#include <linux/bitops.h>
#include "stats.h"

const u64 pg_pct[PG_PCT_NR][2] = {
	{ 50, 100 }, { 90, 100 }, { 99, 100 }, { 999, 1000 }, { 9999, 10000 },
};
const char *const pg_pct_names[PG_PCT_NR] = { "p50", "p90", "p99", "p999", "p9999" };

void pg_stat_merge(struct pg_stat *into, const struct pg_stat *from)
{
	if (from->n) {
		if (!into->n || from->min < into->min)
			into->min = from->min;
		if (from->max > into->max)
			into->max = from->max;
	}
	into->n += from->n;
	into->sum = pg_u128_add_sat(into->sum, from->sum);
	into->sumsq = pg_u128_add_sat(into->sumsq, from->sumsq);
	into->skipped += from->skipped;
}

/* *n /= d, returns the remainder. Schoolbook: high word, then 64 bit steps. */
u64 pg_u128_divmod(pg_u128 *n, u64 d)
{
	u64 hi = (u64)(*n >> 64), lo = (u64)*n;
	u64 qhi, qlo = 0, r;
	int i;

	qhi = div64_u64_rem(hi, d, &r);
	for (i = 63; i >= 0; i--) {
		u64 carry = r >> 63;

		r = (r << 1) | ((lo >> i) & 1);
		qlo <<= 1;
		if (carry || r >= d) {
			r -= d;
			qlo |= 1;
		}
	}
	*n = ((pg_u128)qhi << 64) | qlo;
	return r;
}

/*
 * mean = sum/n (integer part and thousandths, rounded down);
 * var  = (sumsq - sum^2/n) / n, computed as
 *        sumsq - q^2 n - 2 q r - r^2/n with sum = q n + r, so that no
 *        intermediate exceeds sumsq (true of exact sums: sum^2/n <= sumsq).
 *        A saturated sum gives var = PG_U128_MAX ("unknown").
 */
void pg_stat_mean_var(const struct pg_stat *s, u64 *mean_int, u32 *mean_milli,
		      pg_u128 *var)
{
	pg_u128 q, t, nvar;
	u64 r;

	*mean_int = 0;
	*mean_milli = 0;
	*var = 0;
	if (!s->n)
		return;

	t = s->sum;
	if (t > PG_U128_MAX / 1000) {	/* beyond any real sum: no thousandths */
		pg_u128_divmod(&t, s->n);
	} else {
		t *= 1000;
		pg_u128_divmod(&t, s->n);
		*mean_milli = (u32)pg_u128_divmod(&t, 1000);
	}
	*mean_int = t > U64_MAX ? U64_MAX : (u64)t;	/* every x < 2^64: so is the mean */
	if (s->sum == PG_U128_MAX || s->sumsq == PG_U128_MAX) {
		*var = PG_U128_MAX;
		return;
	}

	q = s->sum;
	r = pg_u128_divmod(&q, s->n);
	nvar = s->sumsq;
	t = q * q * s->n;
	if (t > nvar)
		return;
	nvar -= t;
	t = 2 * q * r;
	if (t > nvar)
		return;
	nvar -= t;
	t = (pg_u128)r * r;
	pg_u128_divmod(&t, s->n);
	if (t > nvar)
		return;
	nvar -= t;
	pg_u128_divmod(&nvar, s->n);
	*var = nvar;
}

void pg_seq_u128(struct seq_file *m, pg_u128 v)
{
	char buf[48];
	int i = sizeof(buf) - 1;

	buf[i] = '\0';
	do {
		buf[--i] = (char)('0' + pg_u128_divmod(&v, 10));
	} while (v && i > 0);
	seq_puts(m, &buf[i]);
}

void pg_hist_bounds(unsigned int idx, u64 *low, u64 *high)
{
	unsigned int e, sub;

	if (idx >= PG_HIST_OVERFLOW) {
		*low = 1ULL << PG_HIST_MAX_EXP;
		*high = U64_MAX;
		return;
	}
	if (idx < PG_HIST_SUB) {
		*low = idx;
		*high = idx;
		return;
	}
	e = idx / PG_HIST_SUB + PG_HIST_SUB_BITS - 1;
	sub = idx % PG_HIST_SUB;
	*low = ((u64)PG_HIST_SUB + sub) << (e - PG_HIST_SUB_BITS);
	*high = *low + (1ULL << (e - PG_HIST_SUB_BITS)) - 1;
}

u64 pg_hist_percentile(const u64 *hist, u64 n, u64 num, u64 den,
		       u64 min, u64 max)
{
	u64 rank, cum = 0, low, high, v;
	pg_u128 p;
	unsigned int i;

	if (!n)
		return 0;
	p = (pg_u128)n * num;
	rank = (u64)p;
	if (pg_u128_divmod(&p, den))
		rank = (u64)p + 1;	/* ceil(n * num / den) */
	else
		rank = (u64)p;
	if (!rank)
		rank = 1;
	if (rank > n)
		rank = n;
	for (i = 0; i < PG_HIST_BUCKETS; i++) {
		cum += hist[i];
		if (cum >= rank)
			break;
	}
	if (i >= PG_HIST_BUCKETS)
		return max;
	pg_hist_bounds(i, &low, &high);
	if (high == U64_MAX)
		return max;
	v = low + (high - low) / 2;
	if (v < min)
		v = min;
	if (v > max)
		v = max;
	return v;
}
