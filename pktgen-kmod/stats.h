/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Sample statistics without overflow: N, min, max and exact 128-bit sums of
 * x and x^2 (10^10 samples of up to 1.8*10^14 still fit; beyond, the sums
 * saturate at 2^128 - 1 instead of wrapping), plus a log-linear
 * latency histogram whose bucket width is at most 1/128 of its lower bound.
 */
#ifndef RFCPG_STATS_H
#define RFCPG_STATS_H

#include <linux/types.h>
#include <linux/bitops.h>
#include <linux/seq_file.h>

/* the compiler's type: linux/types.h only has u128 from 6.2 on */
typedef unsigned __int128 pg_u128;
#define PG_U128_MAX	(~(pg_u128)0)

/* a + b, or PG_U128_MAX where it would wrap: a saturated sum stays there */
static inline pg_u128 pg_u128_add_sat(pg_u128 a, pg_u128 b)
{
	pg_u128 t = a + b;

	return t < a ? PG_U128_MAX : t;
}

struct pg_stat {
	pg_u128 sum;
	pg_u128 sumsq;
	u64 n;
	u64 min;
	u64 max;
	u64 skipped;
};

static inline void pg_stat_add(struct pg_stat *s, u64 x)
{
	if (!s->n || x < s->min)
		s->min = x;
	if (x > s->max)
		s->max = x;
	s->n++;
	s->sum = pg_u128_add_sat(s->sum, x);
	s->sumsq = pg_u128_add_sat(s->sumsq, (pg_u128)x * x);
}

void pg_stat_merge(struct pg_stat *into, const struct pg_stat *from);
u64 pg_u128_divmod(pg_u128 *n, u64 d);
/* "mean=M var=V" style pieces written by the callers' formats */
void pg_stat_mean_var(const struct pg_stat *s, u64 *mean_int, u32 *mean_milli,
		      pg_u128 *var);
void pg_seq_u128(struct seq_file *m, pg_u128 v);

/* Histogram: 0..255 exact, then 128 buckets per power of two up to 2^40. */
#define PG_HIST_SUB_BITS	7
#define PG_HIST_SUB		(1U << PG_HIST_SUB_BITS)
#define PG_HIST_MAX_EXP		40
#define PG_HIST_BUCKETS		((PG_HIST_MAX_EXP - PG_HIST_SUB_BITS + 1) * PG_HIST_SUB + 1)
#define PG_HIST_OVERFLOW	(PG_HIST_BUCKETS - 1)

static inline unsigned int pg_hist_index(u64 v)
{
	unsigned int e;

	if (v < PG_HIST_SUB)
		return (unsigned int)v;
	e = fls64(v) - 1;		/* 2^e <= v < 2^(e+1), e >= 7 */
	if (e >= PG_HIST_MAX_EXP)
		return PG_HIST_OVERFLOW;
	return (e - PG_HIST_SUB_BITS + 1) * PG_HIST_SUB +
	       (unsigned int)((v >> (e - PG_HIST_SUB_BITS)) & (PG_HIST_SUB - 1));
}

void pg_hist_bounds(unsigned int idx, u64 *low, u64 *high);
/* The percentiles both read-outs print: p50 p90 p99 p999 p9999, as num/den. */
#define PG_PCT_NR		5
extern const u64 pg_pct[PG_PCT_NR][2];
extern const char *const pg_pct_names[PG_PCT_NR];
/* q = num/den; nearest-rank percentile from a merged histogram */
u64 pg_hist_percentile(const u64 *hist, u64 n, u64 num, u64 den,
		       u64 min, u64 max);

#endif
