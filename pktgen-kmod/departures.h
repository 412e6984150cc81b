/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Departure spacing of one generator: when each frame left, as gaps from the
 * frame before (the first frame's from "start"). A histogram of the gaps in
 * the latency histogram's buckets, their min/mean/max, and micro-bursts:
 * runs of frames each sent less than half the nominal gap after the one
 * before. And what a policer at the nominal rate makes of the frames: the
 * bucket it needs to pass every one (the most frames ahead of the rate, as
 * a queue served at the rate would hold them), and the frames it drops with
 * buckets of 1, 2, 4 .. frames. Catch-up bursts each shorter than a bucket
 * still drain it when they come before it refills. And its catch-ups: each
 * time the queue grew by two frames or more (frames sent ahead of the rate,
 * after a stall let it drain), when (ktime ns, one clock for every CPU: from
 * the departure before the stall to the last frame that grew it) and by how
 * much, the largest PG_CATCHUPS kept. A stream's generators each keep their
 * own; the suite merges them into the one timeline the DUT sees: catch-ups
 * that overlap add up. Written only by the device's own kpktgend thread;
 * reset on start.
 * A generator with no rate (delay 0, catchup_pct 0) reads no clock to send:
 * its frames are only counted, as unpaced.
 */
#ifndef RFCPG_DEPARTURES_H
#define RFCPG_DEPARTURES_H

#include <linux/seq_file.h>
#include "stats.h"

/* the policers' buckets: 1, 2, 4 .. 2^(PG_BUCKETS - 1) frames */
#define PG_BUCKETS	16
/* the catch-ups kept: the largest */
#define PG_CATCHUPS	16

struct pg_catchup {
	u64 start_ns;			/* the departure before the stall */
	u64 end_ns;			/* the last frame that grew the queue */
	u64 frames;			/* what they grew it by */
};

struct pg_departures {
	struct pg_stat gaps;		/* ns; n = frames recorded */
	u64 last_ns;			/* the previous frame's departure, ktime ns */
	u64 run;			/* frames in the current close run */
	u64 longest;			/* longest micro-burst, frames (0: none) */
	u64 bursts;			/* micro-bursts (runs of 2 frames or more) */
	u64 unpaced;			/* frames sent with no schedule (delay 0): not timed */
	u64 queue_ns;			/* ahead of the rate after the last frame, ns */
	u64 queue_max_ns;		/* bucket_needed in ns of queue_nominal */
	u64 queue_nominal;		/* the nominal gap the queue was last kept in */
	u64 bucket_needed;		/* queue_max_ns in frames, rounded up */
	u64 tokens_ns[PG_BUCKETS];	/* each policer's bucket; U64_MAX: full */
	u64 drops[PG_BUCKETS];		/* frames each policer dropped */
	u64 catchups_n;			/* catch-ups of two frames or more */
	u64 rise_base_ns;		/* the queue the growth under way started from */
	u64 rise_top_ns;		/* and has reached (0: none under way) */
	struct pg_catchup cur;		/* its times */
	struct pg_catchup catchups[PG_CATCHUPS];	/* the largest ended */
	u64 hist[PG_HIST_BUCKETS];
};

void pg_dep_reset(struct pg_departures *d, u64 start_ns);
/* `frames` frames left at `now` ns, the nominal gap per frame `gap_ns` (0: unpaced) */
void pg_dep_record(struct pg_departures *d, u64 now, unsigned int frames, u64 gap_ns);
void pg_dep_show(struct seq_file *m, const struct pg_departures *d, u64 gap_ns);

#endif
