// SPDX-License-Identifier: GPL-2.0
/*
 * Per-CPU transmit threads. A thread owns its device list: every change
 * (add, remove, start, stop) is a request the thread itself carries out
 * between packets, so the transmit path needs no locks.
 *
 * Rate control: each device has an absolute schedule (next_tx += delay).
 * The thread sleeps on an hrtimer until spin_ns before the next packet is
 * due, then busy-waits until it is. A generator that ran late (the
 * thread was preempted, the VM stalled) sends back to back until on
 * schedule again, or, with catchup_pct set, at no more than
 * (1 + catchup_pct/100) times its rate; a debt older than max_lag_ns is
 * forgotten.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/kthread.h>
#include <linux/slab.h>
#include <linux/sched.h>
#include <linux/hrtimer.h>
#include <linux/netdevice.h>
#include <linux/random.h>
#include <linux/math64.h>
#include <linux/overflow.h>
#include <linux/etherdevice.h>
#include <net/dst.h>
#include "rfcpg.h"

/* ---- start / stop (thread context) ---- */

void pg_dev_result_line(struct pg_dev *pd)
{
	u64 total_us = ktime_us_delta(pd->stopped_at, pd->started_at);
	u64 idle_us = pd->idle_acc / NSEC_PER_USEC;
	u64 pps = 0, bps;
	u32 size = pd->last_pkt_size ? pd->last_pkt_size : pd->min_pkt_size;

	if (idle_us > total_us)
		idle_us = total_us;
	if (total_us)
		pps = div64_u64(pd->sofar * USEC_PER_SEC, total_us);
	bps = pps * 8 * size;
	scnprintf(pd->result, sizeof(pd->result),
		  "OK: %llu(c%llu+d%llu) usec, %llu (%ubyte,%ufrags)\n  %llupps %lluMb/sec (%llubps) errors: %llu  tx_dropped: %llu",
		  total_us, total_us - idle_us, idle_us, pd->sofar, size, pd->nfrags,
		  pps, div_u64(bps, 1000000), bps, pd->errors, pd->tx_dropped);
}

static void pg_dev_start(struct pg_thread *t, struct pg_dev *pd)
{
	int err;

	mutex_lock(&pd->cfg_lock);
	if (pd->running) {
		mutex_unlock(&pd->cfg_lock);
		return;
	}
	if (!netif_running(pd->odev)) {
		scnprintf(pd->result, sizeof(pd->result),
			  "Error starting: device %s is down", pd->odev->name);
		mutex_unlock(&pd->cfg_lock);
		return;
	}
	err = pg_dev_prepare(pd);
	if (err) {
		scnprintf(pd->result, sizeof(pd->result), "Error starting: %s",
			  err == -ENOMEM ? "No memory" : "bad configuration");
		mutex_unlock(&pd->cfg_lock);
		return;
	}
	pd->sofar = 0;
	pd->errors = 0;
	pd->tx_dropped = 0;
	pd->tx_bytes = 0;
	pd->idle_acc = 0;
	pd->seq_num = 1;
	memset(pd->imix_counts, 0, sizeof(pd->imix_counts));
	pd->started_at = ktime_get();
	pd->held = false;
	if (pd->start_offset) {
		/* the first frame's slot: elapsed time starts there */
		u64 at = READ_ONCE(t->pn->start_ns) + pd->start_offset;	/* <= 1 s: no wrap */
		u64 now = ktime_to_ns(pd->started_at);
		u64 gap = pg_nominal_gap(pd->delay);

		/*
		 * Picked up late (threads take the start one after another):
		 * the next slot of the same phase, so that the generators of
		 * one stream stay interleaved.
		 */
		if (at <= now && gap)
			at += (div64_u64(now - at, gap) + 1) * gap;
		if (at > now) {
			pd->started_at = ns_to_ktime(min_t(u64, at, KTIME_MAX));
			pd->held = true;
		}
	}
	pd->stopped_at = pd->started_at;
	pd->dep_clear = false;
	pg_dep_reset(&pd->dep, ktime_to_ns(pd->started_at));
	pd->next_tx = ktime_to_ns(pd->started_at);
	/*
	 * Without a rate the schedule only orders the thread's devices (1 ns
	 * a frame): those of one start share an epoch, pgctrl's, so they take
	 * turns from the first frame, not after the first one's head start.
	 */
	if (!pd->delay && !pd->held)
		pd->next_tx = min_t(u64, pd->next_tx, READ_ONCE(t->pn->start_ns));
	pd->earliest_tx = pd->next_tx;
	pd->burst_done = 0;
	pd->burst_gap = 0;
	pd->resched = false;
	scnprintf(pd->result, sizeof(pd->result), "Starting");
	atomic_inc(&t->pn->running);
	WRITE_ONCE(pd->running, true);
	mutex_unlock(&pd->cfg_lock);
}

static void pg_dev_stop(struct pg_thread *t, struct pg_dev *pd)
{
	ktime_t now = ktime_get();

	mutex_lock(&pd->cfg_lock);
	if (!pd->running) {
		mutex_unlock(&pd->cfg_lock);
		return;
	}
	/* stopped while start_offset held it: a run of no time, not a negative one */
	pd->stopped_at = ktime_after(now, pd->started_at) ? now : pd->started_at;
	WRITE_ONCE(pd->running, false);
	pg_dev_release_run(pd);
	pg_dev_result_line(pd);
	mutex_unlock(&pd->cfg_lock);
	if (atomic_dec_and_test(&t->pn->running))
		wake_up_all(&t->pn->run_wq);
}

/* ---- requests ---- */

static void pg_thread_handle_req(struct pg_thread *t)
{
	/* acquire: pairs with the requester's release, so req_arg is seen */
	int req = smp_load_acquire(&t->req);
	struct pg_dev *pd, *tmp;
	int ret = 0;

	switch (req) {
	case PG_REQ_RUN:
		list_for_each_entry(pd, &t->devs, list)
			pg_dev_start(t, pd);
		break;
	case PG_REQ_STOP:
		list_for_each_entry(pd, &t->devs, list)
			pg_dev_stop(t, pd);
		break;
	case PG_REQ_ADD:
		pd = t->req_arg;
		mutex_lock(&t->lock);
		list_add_tail(&pd->list, &t->devs);
		mutex_unlock(&t->lock);
		break;
	case PG_REQ_REMOVE: {
		struct pg_remove *rm = t->req_arg;

		list_for_each_entry_safe(pd, tmp, &t->devs, list) {
			if (rm->dev && pd->odev != rm->dev)
				continue;
			pg_dev_stop(t, pd);
			mutex_lock(&t->lock);
			list_move_tail(&pd->list, &rm->out);
			mutex_unlock(&t->lock);
		}
		break;
	}
	default:
		ret = -EINVAL;
	}
	t->req_ret = ret;
	/* publishes req_ret before the requester sees the request done */
	smp_store_release(&t->req, PG_REQ_NONE);
	wake_up_all(&t->done_wq);
}

int pg_thread_request(struct pg_thread *t, int req, void *arg)
{
	int ret;

	mutex_lock(&t->ctl_lock);
	t->req_arg = arg;
	/* publishes req_arg before the thread sees the request */
	smp_store_release(&t->req, req);
	wake_up(&t->wq);
	wake_up_process(t->task);	/* may be in an hrtimer sleep */
	wait_event(t->done_wq, smp_load_acquire(&t->req) == PG_REQ_NONE);
	ret = t->req_ret;
	mutex_unlock(&t->ctl_lock);
	return ret;
}

static bool pg_thread_should_break(struct pg_thread *t)
{
	return READ_ONCE(t->req) != PG_REQ_NONE || kthread_should_stop();
}

/* ---- transmit ---- */

/* A schedule time far in the future stays there instead of wrapping. */
static u64 pg_sat_add(u64 a, u64 b)
{
	u64 r;

	return check_add_overflow(a, b, &r) ? U64_MAX : r;
}

static u64 pg_due(const struct pg_dev *pd)
{
	return max(pd->next_tx, pd->earliest_tx);
}

static struct pg_dev *pg_next_due(struct pg_thread *t)
{
	struct pg_dev *pd, *best = NULL;

	list_for_each_entry(pd, &t->devs, list) {
		if (!READ_ONCE(pd->running))
			continue;
		if (READ_ONCE(pd->resched)) {
			WRITE_ONCE(pd->resched, false);
			/* re-based (a rate change), but never into a start_offset hold */
			pd->next_tx = max_t(u64, ktime_get_ns(), ktime_to_ns(pd->started_at));
			pd->earliest_tx = pd->next_tx;
			pd->burst_done = 0;
			pd->burst_gap = 0;
		}
		if (READ_ONCE(pd->delay) == PG_DELAY_PAUSE)
			continue;
		if (!best || pg_due(pd) < pg_due(best))
			best = pd;
	}
	return best;
}

/*
 * Wait until `due`, starting at time *nowp; on return *nowp is the last
 * clock read (reused for the packet's timestamp: clock reads are not free,
 * under emulation least of all). False if interrupted by a request.
 */
static bool pg_wait_until(struct pg_thread *t, struct pg_dev *pd, u64 due, u64 *nowp)
{
	u64 spin = READ_ONCE(pg_spin_ns);
	u64 now = *nowp;
	u64 start = now;
	bool ok = true;

	if (now >= due)
		return true;
	if (due - now > spin) {
		/*
		 * Sleep until spin_ns before the packet is due, then busy-wait:
		 * a wake-up late by less than spin_ns still sends on time. Woken
		 * at `due` itself, every late wake-up (tens to hundreds of us
		 * under emulation) shortened the next gap: measured in the lab,
		 * half the gaps at 5000 pps were micro-bursts.
		 */
		ktime_t exp = ns_to_ktime(min_t(u64, due - spin, KTIME_MAX));

		set_current_state(TASK_INTERRUPTIBLE);
		if (!pg_thread_should_break(t))
			schedule_hrtimeout_range_clock(&exp, 0, HRTIMER_MODE_ABS,
						       CLOCK_MONOTONIC);
		__set_current_state(TASK_RUNNING);
		now = ktime_get_ns();
		if (pg_thread_should_break(t))
			ok = false;
	}
	while (ok && now < due) {
		if (pg_thread_should_break(t) || need_resched()) {
			ok = false;
			break;
		}
		cpu_relax();
		now = ktime_get_ns();
	}
	/* a start_offset hold is before the run's time, not idle in it */
	start = max_t(u64, start, ktime_to_ns(pd->started_at));
	if (now > start)
		pd->idle_acc += now - start;
	*nowp = now;
	return ok;
}

static void pg_count_sent(struct pg_dev *pd, unsigned int n, unsigned int len)
{
	pd->sofar += n;
	pd->tx_bytes += (u64)n * len;
}

/*
 * Packets handed to the driver per hold of its TX lock: BHs are off while
 * it is held, so a long burst lets softirqs (and the RX of the same CPU)
 * run between chunks.
 */
#define PG_TX_LOCK_BATCH	256

struct pg_tx {
	unsigned int sent;	/* accepted by the driver (NETDEV_TX_OK) */
	unsigned int dropped;	/* consumed but dropped (NET_XMIT_DROP/CN...) */
	bool busy;		/* queue stopped or NETDEV_TX_BUSY: retry later */
};

/*
 * Hand one skb (burst copies of it when shared) to the driver. A driver
 * must never be called on a stopped queue, and it may stop the queue on any
 * packet of a burst: the state is checked before every packet. Each copy
 * takes its own skb reference, which the driver consumes unless it answers
 * NETDEV_TX_BUSY.
 */
static void pg_xmit_start(struct pg_dev *pd, struct sk_buff *skb, bool shared,
			  unsigned int burst, struct pg_tx *tx)
{
	struct net_device *odev = pd->odev;
	struct netdev_queue *txq = skb_get_tx_queue(odev, skb);
	unsigned int done = 0, end;
	netdev_tx_t ret;

	while (done < burst && !tx->busy) {
		end = min(burst, done + PG_TX_LOCK_BATCH);
		local_bh_disable();
		HARD_TX_LOCK(odev, txq, smp_processor_id());
		for (; done < end; done++) {
			if (unlikely(netif_xmit_frozen_or_drv_stopped(txq))) {
				tx->busy = true;
				break;
			}
			if (shared)
				refcount_inc(&skb->users);
			ret = netdev_start_xmit(skb, odev, txq, done + 1 < end);
			if (likely(ret == NETDEV_TX_OK)) {
				tx->sent++;
			} else if (dev_xmit_complete(ret)) {
				tx->dropped++;	/* consumed: the driver dropped it */
			} else {
				if (shared)
					refcount_dec(&skb->users);
				tx->busy = true;
				break;
			}
		}
		HARD_TX_UNLOCK(odev, txq);
		local_bh_enable();
	}
}

/*
 * netif_receive: the same skb up to `burst` times into the stack, as
 * upstream does (building a packet costs more than receiving it). The
 * burst's references are taken and the frame classified once: the stack
 * clones a shared skb before changing it, so after each pass ours can be
 * used again as long as only our references are left and its data and
 * length are as they were; if anything still holds it (a queue, a socket)
 * or moved it, the burst ends there. Consumes skb; returns the frames
 * injected.
 */
static unsigned int pg_netif_receive(struct pg_dev *pd, struct sk_buff *skb,
				     unsigned int burst)
{
	unsigned char *head = skb->head, *data;
	unsigned int held = burst;	/* references to skb that are ours */
	unsigned int n = 0, len;
	__be16 protocol;

	protocol = eth_type_trans(skb, pd->odev);
	skb->protocol = protocol;
	data = skb->data;
	len = skb->len;
	if (held > 1)
		refcount_add(held - 1, &skb->users);
	local_bh_disable();
	for (;;) {
		if (netif_receive_skb(skb) == NET_RX_DROP)
			pd->errors++;
		n++;
		if (--held == 0)
			break;
		if (unlikely(refcount_read(&skb->users) != held ||
			     skb->head != head || skb->data != data ||
			     skb->len != len)) {
			/* keep one reference, so this cannot free it under a holder */
			if (held > 1)
				WARN_ON_ONCE(refcount_sub_and_test(held - 1, &skb->users));
			consume_skb(skb);	/* ours to drop, not a lost frame */
			break;
		}
		/* what the stack may have attached to our skb is not ours to reuse */
		skb_dst_drop(skb);
		nf_reset_ct(skb);
		skb->protocol = protocol;
		if (n % PG_TX_LOCK_BATCH == 0) {
			local_bh_enable();	/* let softirqs run */
			local_bh_disable();
		}
	}
	local_bh_enable();
	return n;
}

/* The device went down or lost its carrier: stop its generator, say why. */
static bool pg_xmit_dev_gone(struct pg_thread *t, struct pg_dev *pd)
{
	struct net_device *odev = pd->odev;

	if (likely(netif_running(odev) && netif_carrier_ok(odev)))
		return false;
	pg_dev_stop(t, pd);
	mutex_lock(&pd->cfg_lock);
	scnprintf(pd->result, sizeof(pd->result),
		  "Stopped: device %s went down after %llu packets",
		  odev->name, pd->sofar);
	mutex_unlock(&pd->cfg_lock);
	return true;
}

/*
 * The skb to send: the kept one while clone_skb/burst copies are left, else
 * a new one. NULL when none could be built (counted, the slot skipped).
 */
static struct sk_buff *pg_xmit_skb(struct pg_thread *t, struct pg_dev *pd, bool shared,
				   u64 now)
{
	if (!pd->skb || (shared && pd->clone_left == 0)) {
		if (pd->skb)
			kfree_skb(pd->skb);
		pd->skb = pg_build_skb(t, pd, now);
		if (!pd->skb) {
			pd->errors++;
			pd->next_tx = pg_sat_add(pd->next_tx, READ_ONCE(pd->delay));
			return NULL;
		}
		/* clone_skb N: the same skb N times (upstream); 0 or 1: once */
		pd->clone_left = max(pd->clone_skb, 1U);
	}
	return pd->skb;
}

/* xmit_mode queue_xmit: one frame through the qdisc; consumes skb. */
static unsigned int pg_xmit_queue(struct pg_dev *pd, struct sk_buff *skb,
				  unsigned int len)
{
	pd->skb = NULL;
	if (dev_queue_xmit(skb) == NET_XMIT_SUCCESS) {
		pg_count_sent(pd, 1, len);
	} else {
		/* dropped by our own qdisc or driver, not by the DUT */
		pd->errors++;
		pd->tx_dropped++;
	}
	return 1;
}

/*
 * xmit_mode start_xmit: straight to the driver. Returns the frames handed
 * over, 0 when the queue was full before the first one (retry soon).
 */
static unsigned int pg_xmit_driver(struct pg_dev *pd, struct sk_buff *skb, bool shared,
				   unsigned int burst, unsigned int len)
{
	struct pg_tx tx = {};

	pg_xmit_start(pd, skb, shared, shared ? burst : 1, &tx);
	if (tx.sent || tx.dropped) {
		pg_count_sent(pd, tx.sent, len);
		pd->errors += tx.dropped;
		pd->tx_dropped += tx.dropped;
		if (!shared)
			pd->skb = NULL;	/* the driver owns it now */
		else
			pd->clone_left--;
		return tx.sent + tx.dropped;
	}
	if (tx.busy) {
		/* queue full: retry the same packet soon, not an error */
		pd->earliest_tx = ktime_get_ns() + 1000;
		if (need_resched())
			cond_resched();
		return 0;
	}
	return 1;
}

/*
 * burst_frames: inside a burst the next frame is due at once, and the gaps
 * of the burst's frames are owed; at its end *gap is all of them.
 */
static bool pg_burst_continues(struct pg_dev *pd, unsigned int frames, u64 *gap)
{
	if (pd->burst_frames <= 1)
		return false;
	pd->burst_gap = pg_sat_add(pd->burst_gap, *gap);
	pd->burst_done += frames;
	if (pd->burst_done < pd->burst_frames)
		return true;
	*gap = pd->burst_gap;
	pd->burst_done = 0;
	pd->burst_gap = 0;
	return false;
}

/* After `frames` were handed over: departures, the next slot, count reached. */
static void pg_xmit_done(struct pg_thread *t, struct pg_dev *pd, u64 now,
			 unsigned int frames, unsigned int len)
{
	u64 gap, delay;

	pd->last_pkt_size = len;
	delay = READ_ONCE(pd->delay);
	if (unlikely(READ_ONCE(pd->dep_clear))) {
		WRITE_ONCE(pd->dep_clear, false);
		pg_dep_reset(&pd->dep, now ? now : ktime_get_ns());
	}
	if (now)
		pg_dep_record(&pd->dep, now, frames, pg_nominal_gap(delay));
	else
		pd->dep.unpaced += frames;	/* no schedule, no clock read: full speed */
	/*
	 * One gap per frame actually handed over (a burst cut short by a
	 * stopped queue or a held skb counts what it sent), saturating:
	 * delay * burst and next_tx + gap may not wrap into the past.
	 */
	if (check_mul_overflow(delay, (u64)frames, &gap))
		gap = U64_MAX;
	/*
	 * No rate: 1 ns a frame, so that the thread's unlimited devices take
	 * turns (pg_next_due takes the earliest); else the first one listed
	 * sent alone until its count ran out.
	 */
	if (!gap)
		gap = frames;
	if (!pg_burst_continues(pd, frames, &gap)) {
		pd->next_tx = pg_sat_add(pd->next_tx, gap);
		if (READ_ONCE(pg_catchup_pct))
			pd->earliest_tx = pg_sat_add(ktime_get_ns(),
						     mul_u64_u32_div(gap, 100,
								     100 + READ_ONCE(pg_catchup_pct)));
	}

	/* count: frames handed to the driver, whether it sent or dropped them */
	if (pd->count && pd->sofar + pd->tx_dropped >= pd->count)
		pg_dev_stop(t, pd);
}

/* now: the monotonic time just read, or 0 to read it when needed */
static void pg_xmit(struct pg_thread *t, struct pg_dev *pd, u64 now)
{
	bool shared = pd->clone_skb || pd->burst > 1;
	unsigned int frames;	/* handed over by this call: sets the gap */
	unsigned int burst;
	struct sk_buff *skb;
	unsigned int len;

	if (pg_xmit_dev_gone(t, pd))
		return;
	skb = pg_xmit_skb(t, pd, shared, now);
	if (!skb)
		return;
	len = skb->len;
	/* count N sends N frames: the last burst stops there (upstream overshoots) */
	burst = pd->burst;
	if (pd->count)
		burst = min_t(u64, burst, pd->count - pd->sofar - pd->tx_dropped);
	burst = max(burst, 1U);

	switch (pd->xmit_mode) {
	case PG_XMIT_NETIF_RECEIVE:
		pd->skb = NULL;
		frames = pg_netif_receive(pd, skb, burst);
		pg_count_sent(pd, frames, len);
		break;
	case PG_XMIT_QUEUE:
		frames = pg_xmit_queue(pd, skb, len);
		break;
	default:
		frames = pg_xmit_driver(pd, skb, shared, burst, len);
		if (!frames)
			return;		/* queue full: nothing handed over */
		break;
	}
	pg_xmit_done(t, pd, now, frames, len);
}

static int pg_thread_fn(void *arg)
{
	struct pg_thread *t = arg;
	unsigned int budget = 0;

	while (!kthread_should_stop()) {
		struct pg_dev *pd;
		u64 now;

		if (READ_ONCE(t->req) != PG_REQ_NONE)
			pg_thread_handle_req(t);

		pd = pg_next_due(t);
		if (!pd) {
			/* idle, or all running devices paused: wait for a request */
			wait_event_interruptible_timeout(t->wq,
							 pg_thread_should_break(t),
							 atomic_read(&t->pn->running) ? HZ / 10 :
							 MAX_SCHEDULE_TIMEOUT);
			continue;
		}
		if (!READ_ONCE(pd->delay) && !READ_ONCE(pg_catchup_pct) &&
		    likely(!pd->held)) {
			now = 0;		/* no rate limit: no schedule to keep */
		} else {
			now = ktime_get_ns();
			/* a burst's own frames are due at its start: no lag */
			if (!pd->burst_done && now > pd->next_tx &&
			    now - pd->next_tx > READ_ONCE(pg_max_lag_ns))
				pd->next_tx = now;	/* too late to catch up: re-base */
			if (!pg_wait_until(t, pd, pg_due(pd), &now)) {
				cond_resched();
				continue;
			}
			pd->held = false;	/* its slot came, sent or not */
		}
		pg_xmit(t, pd, now);
		if (++budget >= 64) {
			budget = 0;
			cond_resched();
		}
	}
	return 0;
}

/* Started, bound to cpu; the caller gives it a file and lists it. */
struct pg_thread *pg_thread_create(struct pg_net *pn, unsigned int cpu)
{
	struct pg_thread *t;
	int err;

	t = kzalloc_node(sizeof(*t), GFP_KERNEL_ACCOUNT, cpu_to_node(cpu));
	if (!t)
		return ERR_PTR(-ENOMEM);
	t->pn = pn;
	t->cpu = cpu;
	INIT_LIST_HEAD(&t->list);
	INIT_LIST_HEAD(&t->devs);
	mutex_init(&t->lock);
	mutex_init(&t->ctl_lock);
	init_waitqueue_head(&t->wq);
	init_waitqueue_head(&t->done_wq);
	prandom_seed_state(&t->rnd, get_random_u64());
	snprintf(t->name, sizeof(t->name), "kpktgend_%u", cpu);

	t->task = kthread_create_on_node(pg_thread_fn, t, cpu_to_node(cpu),
					 "kpktgend_%u", cpu);
	if (IS_ERR(t->task)) {
		err = PTR_ERR(t->task);
		kfree(t);
		return ERR_PTR(err);
	}
	kthread_bind(t->task, cpu);
	get_task_struct(t->task);
	wake_up_process(t->task);
	return t;
}

/* The thread's device list must be empty and its file gone (pg_ctrl_exit). */
void pg_thread_destroy(struct pg_thread *t)
{
	kthread_stop(t->task);
	put_task_struct(t->task);
	kfree(t);
}
