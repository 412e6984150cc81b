// SPDX-License-Identifier: GPL-2.0
/*
 * Departure spacing (departures.h). The cost on the send path is one
 * histogram increment and a few compares per call, and for a paced frame
 * the policers' 16 compares and subtractions: a burst's frames all leave in
 * the same call, so after the first they are counted in bulk as gaps of
 * 0 ns.
 */
#include <linux/kernel.h>
#include <linux/string.h>
#include <linux/bits.h>
#include <linux/math64.h>
#include <linux/overflow.h>
#include "departures.h"

void pg_dep_reset(struct pg_departures *d, u64 start_ns)
{
	memset(d, 0, sizeof(*d));
	memset(d->tokens_ns, 0xff, sizeof(d->tokens_ns));	/* every bucket full */
	d->last_ns = start_ns;
}

/* a frame `gap` after the one before; `close`: less than half the nominal gap */
static void pg_dep_step(struct pg_departures *d, bool close)
{
	if (!close) {
		d->run = 1;
		return;
	}
	d->run = d->run ? d->run + 1 : 2;
	if (d->run == 2)
		d->bursts++;
	if (d->run > d->longest)
		d->longest = d->run;
}

/* beyond this nominal gap (18 min) no policer is kept: its sums could wrap */
#define PG_DEP_POLICE_MAX_GAP	BIT_ULL(40)
/* a queue of 2^62 ns stays there: frames far ahead of a rate do not wrap it */
#define PG_DEP_QUEUE_MAX	BIT_ULL(62)

/*
 * `gap` ns after the last call, `frames` frames of `nominal` ns each leave.
 * The queue at the nominal rate drains by `gap` and takes them; each
 * policer's bucket refills by `gap` (up to its size) and passes as many as
 * it holds tokens for. A single frame or a bucket that passes all costs no
 * division.
 */
static void pg_dep_police(struct pg_departures *d, u64 gap, unsigned int frames, u64 nominal)
{
	u64 need = (u64)frames * nominal;
	unsigned int i;

	if (unlikely(nominal != d->queue_nominal)) {
		/* a new rate (ratep while running): the largest so far, in its ns */
		d->queue_nominal = nominal;
		if (check_mul_overflow(d->bucket_needed, nominal, &d->queue_max_ns))
			d->queue_max_ns = U64_MAX;
	}
	d->queue_ns = min(d->queue_ns > gap ? d->queue_ns - gap : 0, PG_DEP_QUEUE_MAX) + need;
	if (d->queue_ns > d->queue_max_ns) {
		d->queue_max_ns = d->queue_ns;
		d->bucket_needed = div64_u64(d->queue_ns + nominal - 1, nominal);
	}
	for (i = 0; i < PG_BUCKETS; i++) {
		u64 size = nominal << i, t = d->tokens_ns[i];
		u64 pass;

		t = t >= size - min(gap, size) ? size : t + gap;
		if (t >= need) {
			d->tokens_ns[i] = t - need;
			continue;
		}
		pass = frames == 1 ? 0 : div64_u64(t, nominal);
		d->tokens_ns[i] = t - pass * nominal;
		d->drops[i] += frames - pass;
	}
}

void pg_dep_record(struct pg_departures *d, u64 now, unsigned int frames, u64 gap_ns)
{
	u64 gap, half = gap_ns / 2;
	bool first = !d->gaps.n;

	if (!frames)
		return;
	gap = now > d->last_ns ? now - d->last_ns : 0;
	d->last_ns = now;
	if (gap_ns && gap_ns <= PG_DEP_POLICE_MAX_GAP)
		pg_dep_police(d, gap, frames, gap_ns);
	pg_stat_add(&d->gaps, gap);
	d->hist[pg_hist_index(gap)]++;
	/* the first frame follows "start", not a frame: it starts a run */
	pg_dep_step(d, !first && gap < half);
	if (frames == 1)
		return;
	/* the rest of a burst: back to back, 0 ns apart */
	frames--;
	d->gaps.min = 0;
	d->gaps.n += frames;
	d->hist[0] += frames;
	if (half) {
		if (d->run < 2)
			d->bursts++;
		d->run += frames;
		if (d->run > d->longest)
			d->longest = d->run;
	}
}

void pg_dep_show(struct seq_file *m, const struct pg_departures *d, u64 gap_ns)
{
	u64 mean;
	u32 milli;
	pg_u128 var;
	unsigned int i;

	pg_stat_mean_var(&d->gaps, &mean, &milli, &var);
	seq_printf(m, "Departures: frames: %llu  unpaced_frames: %llu  nominal_gap_ns: %llu  min_gap_ns: %llu  mean_gap_ns: %llu  max_gap_ns: %llu\n",
		   d->gaps.n, d->unpaced, gap_ns, d->gaps.min, mean, d->gaps.max);
	seq_puts(m, "    ");
	for (i = 0; i < PG_PCT_NR; i++)
		seq_printf(m, " %s_gap_ns: %llu", pg_pct_names[i],
			   pg_hist_percentile(d->hist, d->gaps.n, pg_pct[i][0], pg_pct[i][1],
					      d->gaps.min, d->gaps.max));
	seq_printf(m, "  micro_bursts: %llu  longest_micro_burst: %llu  bucket_needed: %llu\n",
		   d->bursts, d->longest, d->bucket_needed);
	seq_puts(m, "     bucket_drops:");
	for (i = 0; i < PG_BUCKETS; i++)
		if (d->drops[i])
			seq_printf(m, " %llu:%llu", BIT_ULL(i), d->drops[i]);
	seq_puts(m, "\n");
	seq_puts(m, "     gap_hist_ns:");
	for (i = 0; i < PG_HIST_BUCKETS; i++) {
		u64 lo, hi;

		if (!d->hist[i])
			continue;
		pg_hist_bounds(i, &lo, &hi);
		seq_printf(m, " %llu-%llu:%llu", lo, hi, d->hist[i]);
	}
	seq_puts(m, "\n");
}
