// SPDX-License-Identifier: GPL-2.0
/*
 * The pgrx read-out: each CPU's counters and streams merged under their
 * seqcounts, printed in the script or the human format
 * (../docs/pgrx-receiver.md).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include "rx.h"

struct pg_rx_snap {
	u64 packets, bytes, first_ns, last_ns;
	struct pg_stat lat;
};

static void pg_cpu_snap(struct pg_rx_cpu *c, struct pg_rx_snap *out)
{
	unsigned int seq;

	do {
		seq = read_seqcount_begin(&c->seq);
		out->packets = c->packets;
		out->bytes = c->bytes;
		out->first_ns = c->first_ns;
		out->last_ns = c->last_ns;
		out->lat = c->lat;
	} while (read_seqcount_retry(&c->seq, seq));
}

struct pg_stream_snap {
	u16 sid;
	bool v6;
	struct in6_addr addr;
	u64 packets, bytes, seq_max, lost, ooo, dup, old, jump;
};

/* Scratch for merging one stream's per-CPU parts (too big for the stack). */
struct pg_merge {
	struct pg_stream_cpu one;	/* a consistent copy of one CPU's part */
	struct pg_seqwin_sum sum;
};

static void pg_stream_cpu_snap(const struct pg_stream_cpu *sc, struct pg_stream_cpu *o)
{
	unsigned int seq;

	do {
		seq = read_seqcount_begin(&sc->seq);
		pg_seqwin_copy(&o->win, &sc->win);
		o->bytes = sc->bytes;
		o->ia = sc->ia;
		o->jit = sc->jit;
	} while (read_seqcount_retry(&sc->seq, seq));
}

/* A stream as all CPUs saw it (seqwin.c: duplicates across CPUs, loss). */
static void pg_stream_merge(struct pg_rx_session *s, const struct pg_stream *st,
			    struct pg_merge *mg, struct pg_stream_snap *o,
			    struct pg_stat *ia, struct pg_stat *jit)
{
	unsigned int cpu;

	memset(o, 0, sizeof(*o));
	o->sid = st->sid;
	o->v6 = st->v6;
	o->addr = st->addr;
	pg_seqwin_sum_init(&mg->sum);
	for_each_possible_cpu(cpu) {
		struct pg_rx_cpu *c = per_cpu_ptr(s->cpu, cpu);
		/* pairs with the release in pg_stream_cpu_get(): initialised */
		struct pg_stream_cpu *sc = smp_load_acquire(&c->stream[st->id]);

		if (!sc)
			continue;
		pg_stream_cpu_snap(sc, &mg->one);
		pg_seqwin_sum_add(&mg->sum, &mg->one.win);
		o->bytes += mg->one.bytes;
		pg_stat_merge(ia, &mg->one.ia);
		pg_stat_merge(jit, &mg->one.jit);
	}
	o->packets = mg->sum.n;
	o->seq_max = mg->sum.seq_max;
	o->ooo = mg->sum.ooo;
	o->dup = mg->sum.dup;
	o->old = mg->sum.old;
	o->jump = mg->sum.jump;
	o->lost = pg_seqwin_sum_lost(&mg->sum);
}

static void pg_print_addr(struct seq_file *m, const struct pg_stream_snap *o)
{
	if (o->v6)
		seq_printf(m, "%pI6c", &o->addr);
	else
		seq_printf(m, "%pI4", &o->addr.s6_addr32[3]);
}

static void pg_print_stat_script(struct seq_file *m, const char *name,
				 const struct pg_stat *st)
{
	u64 mean;
	u32 milli;
	pg_u128 var;

	pg_stat_mean_var(st, &mean, &milli, &var);
	seq_printf(m, "stat name=%s n=%llu skipped=%llu min=%llu max=%llu mean=%llu.%03u var=",
		   name, st->n, st->skipped, st->n ? st->min : 0, st->max, mean, milli);
	pg_seq_u128(m, var);
	seq_puts(m, " sum=");
	pg_seq_u128(m, st->sum);
	seq_puts(m, " sumsq=");
	pg_seq_u128(m, st->sumsq);
	seq_puts(m, "\n");
}

static void pg_print_stat_human(struct seq_file *m, const char *name,
				const struct pg_stat *st)
{
	u64 mean;
	u32 milli;
	pg_u128 var;

	pg_stat_mean_var(st, &mean, &milli, &var);
	seq_printf(m, "  %-14s samples %llu  min %llu  mean %llu.%03u  max %llu  variance ",
		   name, st->n, st->n ? st->min : 0, mean, milli, st->max);
	pg_seq_u128(m, var);
	seq_puts(m, " ns^2\n");
}

/* What one read-out gathers, section by section. */
struct pg_rx_show_ctx {
	struct pg_rx *rx;
	struct pg_rx_session *s;	/* NULL: never enabled */
	struct pg_merge *mg;		/* levels basic, time */
	u64 *hist;			/* level time: merged over CPUs */
	u32 nstreams;
	u64 seq_jump;			/* over all streams */
	struct pg_stat lat, ia, jit;
};

/* Scratch for a read-out; caller holds rx->lock. */
static int pg_rx_show_alloc(struct pg_rx_show_ctx *x)
{
	struct pg_rx_session *s = x->s;

	if (!s)
		return 0;
	if (s->level == PG_LVL_TIME) {
		x->hist = kvcalloc(PG_HIST_BUCKETS, sizeof(u64), GFP_KERNEL);
		if (!x->hist)
			return -ENOMEM;
	}
	if (s->streams) {
		x->mg = kmalloc(sizeof(*x->mg), GFP_KERNEL);
		if (!x->mg)
			return -ENOMEM;
		/* pairs with the release in pg_stream_get(): order[] filled */
		x->nstreams = smp_load_acquire(&s->streams->count);
	}
	return 0;
}

/* The watched devices as "a,b" (script) or "a, b" (human), "-" for none. */
static void pg_rx_show_devs(struct seq_file *m, const struct pg_rx *rx, const char *sep,
			    bool ifindex)
{
	unsigned int i;

	if (!rx->ndevs)
		seq_puts(m, ifindex ? "0" : "-");
	for (i = 0; i < rx->ndevs; i++) {
		if (ifindex)
			seq_printf(m, "%s%d", i ? sep : "", rx->ifindex[i]);
		else
			seq_printf(m, "%s%s", i ? sep : "", rx->ifname[i]);
	}
}

static void pg_rx_show_header(struct seq_file *m, struct pg_rx_show_ctx *x)
{
	struct pg_rx *rx = x->rx;
	u64 dropped = 0, foreign = 0;
	unsigned int cpu;

	/* one counter per CPU: no snapshot needed for the header line */
	for_each_possible_cpu(cpu) {
		if (!x->s)
			continue;
		dropped += READ_ONCE(per_cpu_ptr(x->s->cpu, cpu)->streams_dropped);
		foreign += READ_ONCE(per_cpu_ptr(x->s->cpu, cpu)->foreign);
	}

	if (rx->script) {
		seq_printf(m, "pgrx version=6 enabled=%d dev=", rx->hooks);
		pg_rx_show_devs(m, rx, ",", false);
		seq_puts(m, " ifindex=");
		pg_rx_show_devs(m, rx, ",", true);
		seq_printf(m, " statistics=%s action=%s pkt_size=%u streams=%u streams_dropped=%llu declared=%u foreign=%llu\n",
			   pg_level_names[rx->level], rx->pass ? "pass" : "drop",
			   rx->pkt_size, x->nstreams, dropped, rx->ndecl, foreign);
		return;
	}
	seq_printf(m, "RECEIVER %s: dev ", rx->hooks ? "enabled" : "disabled");
	pg_rx_show_devs(m, rx, ", ", false);
	seq_puts(m, " (ifindex ");
	pg_rx_show_devs(m, rx, ", ", true);
	seq_printf(m, "), statistics %s, timestamp %s, counted packets %s, frame length %u%s\n",
		   pg_level_names[rx->level], rx->stack_tstamps ? "stack" : "hook",
		   rx->pass ? "passed on" : "dropped", rx->pkt_size,
		   rx->pkt_size ? "" : " (any)");
	if (rx->ndecl)
		seq_printf(m, "  Declared streams: %u, foreign frames (undeclared streams): %llu\n",
			   rx->ndecl, foreign);
}

static void pg_rx_show_total(struct seq_file *m, struct pg_rx_show_ctx *x,
			     const struct pg_rx_snap *tot)
{
	u64 span = tot->last_ns - tot->first_ns;

	if (x->rx->script) {
		seq_printf(m, "total id=all packets=%llu bytes=%llu first_ns=%llu last_ns=%llu\n",
			   tot->packets, tot->bytes, tot->first_ns, tot->last_ns);
		return;
	}
	seq_printf(m, "  Total: packets %llu bytes %llu", tot->packets, tot->bytes);
	if (tot->packets > 1 && span)
		seq_printf(m, "  rate %llu pps over %llu ns",
			   div64_u64((tot->packets - 1) * NSEC_PER_SEC, span), span);
	seq_puts(m, "\n");
}

/* One line per CPU (script) or per CPU that counted (human), then the total. */
static void pg_rx_show_cpus(struct seq_file *m, struct pg_rx_show_ctx *x)
{
	struct pg_rx_snap tot = {}, cs;
	unsigned int cpu, i;

	for_each_possible_cpu(cpu) {
		struct pg_rx_cpu *c = x->s ? per_cpu_ptr(x->s->cpu, cpu) : NULL;

		memset(&cs, 0, sizeof(cs));
		if (c)
			pg_cpu_snap(c, &cs);
		if (x->hist && c && c->hist)
			for (i = 0; i < PG_HIST_BUCKETS; i++)
				x->hist[i] += READ_ONCE(c->hist[i]);
		if (x->rx->script)
			seq_printf(m, "cpu id=%u packets=%llu bytes=%llu first_ns=%llu last_ns=%llu\n",
				   cpu, cs.packets, cs.bytes, cs.first_ns, cs.last_ns);
		else if (cs.packets)
			seq_printf(m, "  CPU %u: packets %llu bytes %llu\n", cpu,
				   cs.packets, cs.bytes);
		tot.packets += cs.packets;
		tot.bytes += cs.bytes;
		if (cs.first_ns && (!tot.first_ns || cs.first_ns < tot.first_ns))
			tot.first_ns = cs.first_ns;
		if (cs.last_ns > tot.last_ns)
			tot.last_ns = cs.last_ns;
		pg_stat_merge(&x->lat, &cs.lat);
	}
	pg_rx_show_total(m, x, &tot);
}

static void pg_rx_show_streams(struct seq_file *m, struct pg_rx_show_ctx *x)
{
	struct pg_stream_snap o;
	u32 i;

	for (i = 0; i < x->nstreams; i++) {
		pg_stream_merge(x->s, x->s->streams->order[i], x->mg, &o, &x->ia, &x->jit);
		x->seq_jump += o.jump;
		if (x->rx->script) {
			if (o.sid) {
				seq_printf(m, "stream sid=%u", o.sid);
			} else {
				seq_puts(m, "stream src=");
				pg_print_addr(m, &o);
			}
			seq_printf(m, " packets=%llu bytes=%llu seq_max=%llu lost=%llu ooo=%llu dup=%llu old=%llu\n",
				   o.packets, o.bytes, o.seq_max, o.lost, o.ooo, o.dup, o.old);
		} else {
			if (o.sid) {
				seq_printf(m, "  Stream id %u", o.sid);
			} else {
				seq_puts(m, "  Stream ");
				pg_print_addr(m, &o);
			}
			seq_printf(m, ": packets %llu  lost %llu  out-of-order %llu  duplicates %llu  too-old %llu  highest seq %llu\n",
				   o.packets, o.lost, o.ooo, o.dup, o.old, o.seq_max);
		}
	}
}

/* The frames not believed, by class (after the streams: seq_jump is theirs). */
static void pg_rx_show_invalid(struct seq_file *m, struct pg_rx_show_ctx *x)
{
	u64 bad[PG_BAD_NR] = {};
	unsigned int cpu, i;

	for_each_possible_cpu(cpu)
		for (i = 0; x->s && i < PG_BAD_NR; i++)
			bad[i] += READ_ONCE(per_cpu_ptr(x->s->cpu, cpu)->bad[i]);
	if (x->rx->script)
		seq_printf(m, "invalid bad_len=%llu bad_csum=%llu bad_ts=%llu seq_jump=%llu wrong_size=%llu\n",
			   bad[PG_BAD_LEN], bad[PG_BAD_CSUM], bad[PG_BAD_TS], x->seq_jump,
			   bad[PG_BAD_SIZE]);
	else if (bad[PG_BAD_LEN] || bad[PG_BAD_CSUM] || bad[PG_BAD_TS] || x->seq_jump ||
		 bad[PG_BAD_SIZE])
		seq_printf(m, "  Invalid: bad length %llu  bad checksum %llu  bad timestamp %llu  sequence jumps %llu  wrong size %llu\n",
			   bad[PG_BAD_LEN], bad[PG_BAD_CSUM], bad[PG_BAD_TS], x->seq_jump,
			   bad[PG_BAD_SIZE]);
}

/* stat and percentile lines (script: always; human: level time only). */
static void pg_rx_show_stats(struct seq_file *m, struct pg_rx_show_ctx *x)
{
	bool time = x->s && x->s->level == PG_LVL_TIME;
	unsigned int i;

	if (x->rx->script) {
		pg_print_stat_script(m, "latency", &x->lat);
		pg_print_stat_script(m, "interarrival", &x->ia);
		pg_print_stat_script(m, "jitter", &x->jit);
		seq_printf(m, "percentile name=latency n=%llu", x->lat.n);
	} else if (time) {
		pg_print_stat_human(m, "latency", &x->lat);
		pg_print_stat_human(m, "inter-arrival", &x->ia);
		pg_print_stat_human(m, "delay-var", &x->jit);
		seq_puts(m, "  latency percentiles (ns):");
	} else {
		return;
	}
	for (i = 0; i < PG_PCT_NR; i++)
		seq_printf(m, " %s=%llu", pg_pct_names[i],
			   x->hist ? pg_hist_percentile(x->hist, x->lat.n, pg_pct[i][0],
							pg_pct[i][1], x->lat.min,
							x->lat.max) : 0);
	seq_puts(m, "\n");
}

static void pg_rx_show_hist(struct seq_file *m, struct pg_rx_show_ctx *x)
{
	unsigned int i;
	u64 lo, hi;

	for (i = 0; x->hist && i < PG_HIST_BUCKETS; i++) {
		if (!x->hist[i])
			continue;
		pg_hist_bounds(i, &lo, &hi);
		seq_printf(m, "hist name=latency low=%llu high=%llu count=%llu\n",
			   lo, hi, x->hist[i]);
	}
	seq_puts(m, "end\n");
}

static int pg_rx_show(struct seq_file *m, void *v)
{
	struct pg_rx_show_ctx x = { .rx = m->private };
	struct pg_rx *rx = x.rx;
	int err;

	mutex_lock(&rx->lock);
	x.s = rcu_dereference_protected(rx->session, lockdep_is_held(&rx->lock));
	err = pg_rx_show_alloc(&x);
	if (!err) {
		pg_rx_show_header(m, &x);
		pg_rx_show_cpus(m, &x);
		pg_rx_show_streams(m, &x);
		pg_rx_show_invalid(m, &x);
		pg_rx_show_stats(m, &x);
		if (rx->script)
			pg_rx_show_hist(m, &x);
		seq_printf(m, "Result: %s\n", rx->result);
	}
	mutex_unlock(&rx->lock);
	kfree(x.mg);
	kvfree(x.hist);
	return err;
}

int pg_rx_open(struct inode *inode, struct file *file)
{
	/* the histogram dump can be long: start with a big buffer */
	return single_open_size(file, pg_rx_show, pde_data(inode), 64 * 1024);
}
