/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Sequence accounting of a test stream (../docs/pgrx-receiver.md,
 * "Sequence accounting").
 * Each CPU keeps a pg_seqwin of the packets it saw; a reader sums them into
 * a pg_seqwin_sum, which also finds sequences seen on more than one CPU.
 */
#ifndef PG_SEQWIN_H
#define PG_SEQWIN_H

#include <linux/types.h>
#include <linux/bitops.h>

#define PG_SEQ_WINDOW	4096
/*
 * A frame more than this far ahead of the highest sequence (or, as a
 * stream's first frame, above it) is believed only when a second frame
 * within a window of it confirms it: one spoofed frame cannot claim more
 * than PG_SEQ_JUMP lost packets.
 */
#define PG_SEQ_JUMP	PG_SEQ_WINDOW

struct pg_seqwin {
	u64 n;				/* packets accounted */
	u64 seq_max, ooo, dup, old;
	u64 jump;			/* far-ahead frames never confirmed (not in n) */
	u64 pend;			/* the far-ahead frame awaiting confirmation */
	bool have_pend;
	/* bit x % W set: sequence x seen, for x in (seq_max - W, seq_max] */
	unsigned long bits[BITS_TO_LONGS(PG_SEQ_WINDOW)];
};

struct pg_seqwin_sum {
	u64 n, seq_max, ooo, dup, old;
	u64 jump;			/* far-ahead frames not believed, pending ones included */
	bool any;
	unsigned long seen[BITS_TO_LONGS(PG_SEQ_WINDOW)];	/* the union */
	unsigned long part[BITS_TO_LONGS(PG_SEQ_WINDOW)];	/* scratch */
	unsigned long both[BITS_TO_LONGS(PG_SEQ_WINDOW)];	/* scratch */
};

/*
 * Returns the frames it accounted: 0 (not believed, yet), 1, or 2 (a
 * pending far-ahead frame confirmed by this one).
 */
unsigned int pg_seqwin_add(struct pg_seqwin *w, u32 seq32);
void pg_seqwin_copy(struct pg_seqwin *to, const struct pg_seqwin *from);
void pg_seqwin_sum_init(struct pg_seqwin_sum *sum);
void pg_seqwin_sum_add(struct pg_seqwin_sum *sum, const struct pg_seqwin *w);
u64 pg_seqwin_sum_lost(const struct pg_seqwin_sum *sum);

#endif
