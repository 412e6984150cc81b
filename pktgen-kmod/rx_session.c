// SPDX-License-Identifier: GPL-2.0
/*
 * The receiver's sessions: all counters of one measurement, per CPU, with
 * the stream table (the declared streams made with the session), swapped
 * under RCU on reset and freed a grace period later.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include "rx.h"

void pg_session_free(struct pg_rx_session *s)
{
	u32 nstreams = s && s->streams ? s->streams->count : 0;
	unsigned int cpu;
	u32 i;

	if (!s)
		return;
	if (s->cpu) {
		for_each_possible_cpu(cpu) {
			struct pg_rx_cpu *c = per_cpu_ptr(s->cpu, cpu);

			kvfree(c->hist);
			for (i = 0; c->stream && i < nstreams; i++)
				kfree(c->stream[i]);
			kvfree(c->stream);
		}
		free_percpu(s->cpu);
	}
	for (i = 0; i < nstreams; i++)
		kfree(s->streams->order[i]);
	kvfree(s->streams);
	kfree(s);
}

/*
 * The declared streams, made before any frame can meet the session: ids 0..
 * ndecl - 1 in the order declared, each CPU's part allocated here, and the
 * table closed, so the hook only looks streams up (no allocation, no lock).
 */
static int pg_session_declare(struct pg_rx_session *s, const struct pg_rx *rx)
{
	struct pg_streams *tbl = s->streams;
	struct pg_stream *st;
	unsigned int cpu, i;
	u32 h;

	for (i = 0; i < rx->ndecl; i++) {
		st = kzalloc(sizeof(*st), GFP_KERNEL_ACCOUNT);
		if (!st)
			return -ENOMEM;
		st->sid = rx->decl[i].sid;
		st->v6 = rx->decl[i].v6;
		st->addr = rx->decl[i].addr;
		st->id = i;
		h = pg_stream_hash(tbl, &st->addr, st->sid);
		st->next = tbl->bucket[h];
		tbl->bucket[h] = st;
		tbl->chain[h]++;
		tbl->order[i] = st;
		tbl->count = i + 1;
		for_each_possible_cpu(cpu) {
			struct pg_rx_cpu *c = per_cpu_ptr(s->cpu, cpu);
			struct pg_stream_cpu *sc;

			sc = kzalloc_node(sizeof(*sc), GFP_KERNEL_ACCOUNT, cpu_to_node(cpu));
			if (!sc)
				return -ENOMEM;
			seqcount_init(&sc->seq);
			c->stream[i] = sc;
		}
	}
	tbl->closed = rx->ndecl > 0;
	return 0;
}

static struct pg_rx_session *pg_session_alloc(const struct pg_rx *rx)
{
	struct pg_rx_session *s = kzalloc(sizeof(*s), GFP_KERNEL);
	enum pgrx_level level = rx->level;
	unsigned int cpu;

	if (!s)
		return NULL;
	s->level = level;
	s->start_ns = ktime_get_real_ns();
	if (level >= PG_LVL_BASIC) {
		s->streams = kvzalloc(sizeof(*s->streams), GFP_KERNEL);
		if (!s->streams)
			goto err;
		spin_lock_init(&s->streams->lock);
		/* chains an outsider cannot aim at: an unknown hash per session */
		s->streams->seed = get_random_u32();
	}
	s->cpu = alloc_percpu(struct pg_rx_cpu);
	if (!s->cpu)
		goto err;
	for_each_possible_cpu(cpu) {
		struct pg_rx_cpu *c = per_cpu_ptr(s->cpu, cpu);
		int node = cpu_to_node(cpu);

		seqcount_init(&c->seq);
		if (level == PG_LVL_TIME) {
			c->hist = kvzalloc_node(PG_HIST_BUCKETS * sizeof(u64),
						GFP_KERNEL, node);
			if (!c->hist)
				goto err;
		}
		if (level >= PG_LVL_BASIC) {
			c->stream = kvzalloc_node(PG_MAX_STREAMS * sizeof(*c->stream),
						  GFP_KERNEL, node);
			if (!c->stream)
				goto err;
		}
	}
	if (s->streams && pg_session_declare(s, rx))
		goto err;
	return s;
err:
	pg_session_free(s);
	return NULL;
}

/* Free the retired session; waits only if its grace period is still open. */
void pg_rx_reap(struct pg_rx *rx)
{
	if (!rx->retired)
		return;
	cond_synchronize_rcu(rx->retired_gp);
	pg_session_free(rx->retired);
	rx->retired = NULL;
}

/*
 * Replace the session (all counters zero). Caller holds rx->lock. The old
 * session may still be in a hook on another CPU: it is retired, not freed,
 * and freed at the next replacement, by when its grace period has long
 * passed. (Waiting for the grace period here cost ~20 ms per reset under
 * emulation, on every trial.)
 */
int pg_rx_new_session(struct pg_rx *rx)
{
	struct pg_rx_session *s = pg_session_alloc(rx), *old;

	if (!s)
		return -ENOMEM;
	pg_rx_reap(rx);
	old = rcu_replace_pointer(rx->session, s, lockdep_is_held(&rx->lock));
	if (old) {
		rx->retired = old;
		rx->retired_gp = pg_rcu_gp_cookie();
	}
	return 0;
}
