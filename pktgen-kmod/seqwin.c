// SPDX-License-Identifier: GPL-2.0
/*
 * Sequence accounting, per CPU, merged when read. A CPU counts what it can
 * see alone: duplicates and out-of-order packets within its window, and
 * packets too old for it. Loss needs every CPU's view: a reader sums the
 * parts, counts a sequence that two parts' windows both hold as one more
 * duplicate, and takes loss as the sequences 1..seq_max seen nowhere.
 */
#include <linux/kernel.h>
#include <linux/bitmap.h>
#include "seqwin.h"

/* Set or clear the window bits of the n <= W sequences from, from + 1, ... */
static void pg_window_fill(unsigned long *win, u64 from, u64 n, bool set)
{
	unsigned int start = from % PG_SEQ_WINDOW;
	unsigned int first = min_t(u64, n, PG_SEQ_WINDOW - start);

	if (set) {
		bitmap_set(win, start, first);
		bitmap_set(win, 0, n - first);
	} else {
		bitmap_clear(win, start, first);
		bitmap_clear(win, 0, n - first);
	}
}

/* Move a window's top from *max up to top: sequences below top - W leave. */
static void pg_window_slide(unsigned long *win, u64 *max, u64 top)
{
	if (top - *max >= PG_SEQ_WINDOW)
		bitmap_zero(win, PG_SEQ_WINDOW);
	else
		pg_window_fill(win, *max + 1, top - *max, false);
	*max = top;
}

/*
 * Account sequence s (64-bit, not far ahead of seq_max). Sequences start at
 * 1: 0 and what extends below it are `old`, never a new low end.
 */
static void pg_seqwin_account(struct pg_seqwin *w, u64 s)
{
	if ((s64)s <= 0) {
		w->n++;
		w->old++;
	} else if (!w->n++) {
		w->seq_max = s;
		__set_bit(s % PG_SEQ_WINDOW, w->bits);
	} else if (likely(s == w->seq_max + 1)) {	/* in order: its bit held s - W */
		w->seq_max = s;
		__set_bit(s % PG_SEQ_WINDOW, w->bits);
	} else if (s > w->seq_max) {
		pg_window_slide(w->bits, &w->seq_max, s);
		__set_bit(s % PG_SEQ_WINDOW, w->bits);
	} else if (w->seq_max - s < PG_SEQ_WINDOW) {
		if (__test_and_set_bit(s % PG_SEQ_WINDOW, w->bits))
			w->dup++;
		else
			w->ooo++;
	} else {
		w->old++;
	}
}

/*
 * A far-ahead frame (s > seq_max + PG_SEQ_JUMP) waits as `pend` until a
 * frame within a window of it (in 64-bit terms) confirms the jump; a newer
 * far-ahead frame replaces it, and the one replaced counts in `jump`.
 */
static unsigned int pg_seqwin_confirm(struct pg_seqwin *w, u64 s)
{
	w->have_pend = false;
	pg_seqwin_account(w, w->pend);
	pg_seqwin_account(w, s);
	return 2;
}

unsigned int pg_seqwin_add(struct pg_seqwin *w, u32 seq32)
{
	u64 s;

	/*
	 * 64-bit extension of the wire's 32-bit sequence, nearest to seq_max;
	 * a stream's first frame is taken as it is (the generator starts at 1)
	 */
	if (likely(w->n))
		s = w->seq_max + (u64)(s64)(s32)(seq32 - (u32)w->seq_max);
	else
		s = seq32;
	if (unlikely(w->have_pend) &&
	    (s > w->pend ? s - w->pend : w->pend - s) <= PG_SEQ_WINDOW)
		return pg_seqwin_confirm(w, s);
	if (likely(w->n && s == w->seq_max + 1)) {	/* in order: its bit held s - W */
		w->n++;
		w->seq_max = s;
		__set_bit(s % PG_SEQ_WINDOW, w->bits);
		return 1;
	}
	if ((s64)s > 0 && s > (w->n ? w->seq_max : 0) + PG_SEQ_JUMP) {
		if (w->have_pend)
			w->jump++;
		w->pend = s;
		w->have_pend = true;
		return 0;
	}
	pg_seqwin_account(w, s);
	return 1;
}

void pg_seqwin_copy(struct pg_seqwin *to, const struct pg_seqwin *from)
{
	to->n = from->n;
	to->seq_max = from->seq_max;
	to->ooo = from->ooo;
	to->dup = from->dup;
	to->old = from->old;
	to->jump = from->jump;
	to->pend = from->pend;
	to->have_pend = from->have_pend;
	bitmap_copy(to->bits, from->bits, PG_SEQ_WINDOW);
}

void pg_seqwin_sum_init(struct pg_seqwin_sum *sum)
{
	sum->n = 0;
	sum->seq_max = 0;
	sum->ooo = 0;
	sum->dup = 0;
	sum->old = 0;
	sum->jump = 0;
	sum->any = false;
	bitmap_zero(sum->seen, PG_SEQ_WINDOW);
}

void pg_seqwin_sum_add(struct pg_seqwin_sum *sum, const struct pg_seqwin *w)
{
	u64 lo;

	sum->jump += w->jump + w->have_pend;
	if (!w->n)
		return;
	sum->n += w->n;
	sum->ooo += w->ooo;
	sum->dup += w->dup;
	sum->old += w->old;
	if (!sum->any) {
		sum->any = true;
		sum->seq_max = w->seq_max;
		bitmap_copy(sum->seen, w->bits, PG_SEQ_WINDOW);
		return;
	}
	if (w->seq_max > sum->seq_max)
		pg_window_slide(sum->seen, &sum->seq_max, w->seq_max);
	/* the sequences both the union's and this part's windows cover */
	lo = sum->seq_max >= PG_SEQ_WINDOW ? sum->seq_max - PG_SEQ_WINDOW + 1 : 0;
	if (w->seq_max < lo)
		return;
	bitmap_zero(sum->part, PG_SEQ_WINDOW);
	pg_window_fill(sum->part, lo, w->seq_max - lo + 1, true);
	bitmap_and(sum->part, sum->part, w->bits, PG_SEQ_WINDOW);
	bitmap_and(sum->both, sum->part, sum->seen, PG_SEQ_WINDOW);
	sum->dup += bitmap_weight(sum->both, PG_SEQ_WINDOW);
	bitmap_or(sum->seen, sum->seen, sum->part, PG_SEQ_WINDOW);
}

/* Sequences 1..seq_max that no part saw (the generator starts at 1). */
u64 pg_seqwin_sum_lost(const struct pg_seqwin_sum *sum)
{
	u64 unique = sum->n - min(sum->n, sum->dup + sum->old);

	return sum->seq_max > unique ? sum->seq_max - unique : 0;
}
