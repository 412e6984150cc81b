/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Sequence accounting of a test stream (README.md "Sequence accounting").
 * Each CPU keeps a pg_seqwin of the packets it saw; a reader sums them into
 * a pg_seqwin_sum, which also finds sequences seen on more than one CPU.
 */
#ifndef PG_SEQWIN_H
#define PG_SEQWIN_H

#include <linux/types.h>
#include <linux/bitops.h>

#define PG_SEQ_WINDOW	4096

struct pg_seqwin {
	u64 n;				/* packets accounted */
	u64 seq_max, ooo, dup, old;
	/* bit x % W set: sequence x seen, for x in (seq_max - W, seq_max] */
	unsigned long bits[BITS_TO_LONGS(PG_SEQ_WINDOW)];
};

struct pg_seqwin_sum {
	u64 n, seq_max, ooo, dup, old;
	bool any;
	unsigned long seen[BITS_TO_LONGS(PG_SEQ_WINDOW)];	/* the union */
	unsigned long part[BITS_TO_LONGS(PG_SEQ_WINDOW)];	/* scratch */
	unsigned long both[BITS_TO_LONGS(PG_SEQ_WINDOW)];	/* scratch */
};

void pg_seqwin_add(struct pg_seqwin *w, u32 seq32);
void pg_seqwin_copy(struct pg_seqwin *to, const struct pg_seqwin *from);
void pg_seqwin_sum_init(struct pg_seqwin_sum *sum);
void pg_seqwin_sum_add(struct pg_seqwin_sum *sum, const struct pg_seqwin *w);
u64 pg_seqwin_sum_lost(const struct pg_seqwin_sum *sum);

#endif
