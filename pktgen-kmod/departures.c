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
	d->cur.start_ns = start_ns;
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

/* frames in `ns` of queue, rounded up */
static u64 pg_dep_frames(u64 ns, u64 nominal)
{
	return div64_u64(ns + nominal - 1, nominal);
}

/* the growth under way stopped: a catch-up if two frames or more, kept if among the largest */
static void pg_dep_catchup_end(struct pg_departures *d)
{
	struct pg_catchup *small = &d->catchups[0];
	unsigned int i;

	d->cur.frames = pg_dep_frames(d->rise_top_ns - d->rise_base_ns, d->queue_nominal);
	d->rise_top_ns = 0;
	if (d->cur.frames < 2)
		return;
	d->catchups_n++;
	for (i = 1; i < PG_CATCHUPS; i++)
		if (d->catchups[i].frames < small->frames)
			small = &d->catchups[i];
	if (d->cur.frames > small->frames)
		*small = d->cur;
}

/*
 * The queue went from `before` to d->queue_ns with frames that left at
 * `now`, `gap` after the departure before; `drained`: what the gap left of
 * it. While it grows, a catch-up is under way, from the departure before
 * the stall that drained it (the call that last did not grow it, or this
 * one's, when this one's gap is a stall too: a `burst N` after a stall).
 */
static void pg_dep_catchup(struct pg_departures *d, u64 before, u64 drained, u64 now,
			   u64 gap, u64 nominal)
{
	if (d->queue_ns <= before) {
		if (d->rise_top_ns)
			pg_dep_catchup_end(d);
		d->rise_base_ns = d->queue_ns;
		d->cur.start_ns = now - gap;
		return;
	}
	if (!d->rise_top_ns && (gap > nominal || !before)) {
		/* as if its first frame had left on its slot (the run's first call too) */
		d->rise_base_ns = drained + nominal;
		d->cur.start_ns = now - gap;
	}
	d->cur.end_ns = now;
	d->rise_top_ns = d->queue_ns;
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
static void pg_dep_police(struct pg_departures *d, u64 now, u64 gap, unsigned int frames,
			  u64 nominal)
{
	u64 need = (u64)frames * nominal, before = d->queue_ns, drained;
	unsigned int i;

	if (unlikely(nominal != d->queue_nominal)) {
		/* a new rate (ratep while running): the largest so far, in its ns */
		if (d->rise_top_ns) {
			pg_dep_catchup_end(d);	/* in the old rate's ns */
			/* and the next one starts afresh, not where this one did */
			d->rise_base_ns = d->queue_ns;
			d->cur.start_ns = now - gap;
		}
		d->queue_nominal = nominal;
		if (check_mul_overflow(d->bucket_needed, nominal, &d->queue_max_ns))
			d->queue_max_ns = U64_MAX;
	}
	drained = min(d->queue_ns > gap ? d->queue_ns - gap : 0, PG_DEP_QUEUE_MAX);
	d->queue_ns = drained + need;
	if (d->queue_ns > d->queue_max_ns) {
		d->queue_max_ns = d->queue_ns;
		d->bucket_needed = pg_dep_frames(d->queue_ns, nominal);
	}
	pg_dep_catchup(d, before, drained, now, gap, nominal);
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
		pg_dep_police(d, now, gap, frames, gap_ns);
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

static void pg_dep_show_catchup(struct seq_file *m, const struct pg_catchup *c, u64 frames)
{
	if (frames >= 2)
		seq_printf(m, " %llu-%llu:%llu", c->start_ns, c->end_ns, frames);
}

/* how many, then the largest as start_ns-end_ns:frames, the one under way last */
static void pg_dep_show_catchups(struct seq_file *m, const struct pg_departures *d)
{
	/* read while the thread may write: each value once */
	u64 top = READ_ONCE(d->rise_top_ns), base = READ_ONCE(d->rise_base_ns);
	u64 nominal = READ_ONCE(d->queue_nominal), cur = 0;
	unsigned int i;

	if (top > base && nominal)
		cur = pg_dep_frames(top - base, nominal);
	seq_printf(m, "     catch_ups: %llu", d->catchups_n + (cur >= 2));
	for (i = 0; i < PG_CATCHUPS; i++)
		pg_dep_show_catchup(m, &d->catchups[i], d->catchups[i].frames);
	pg_dep_show_catchup(m, &d->cur, cur);
	seq_puts(m, "\n");
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
	pg_dep_show_catchups(m, d);
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
