// SPDX-License-Identifier: GPL-2.0
/*
 * The receiver, /proc/net/pktgen/pgrx: a netfilter PRE_ROUTING hook (IPv4
 * and IPv6, before defragmentation and conntrack) that counts test packets
 * arriving on the devices it watches (up to 4) in its namespace. Everything
 * the hook writes lives per CPU (counters, latency, and what each CPU saw of
 * each stream: sequence window, inter-arrival, delay variation) and is
 * merged when read, so the per-packet path takes no shared lock and writes
 * no shared cache line, at any statistics level. Only a stream's identity
 * (the test header's stream id, or else the source address) is shared:
 * added once, under a lock, by the first CPU that sees it, or,
 * when the controller declared the streams (`streams`), made with the
 * session, so the hook only looks up and counts other sources as foreign. All
 * counters of one measurement form a "session", swapped under RCU on reset
 * so the hook never sees freed memory. The script output format is
 * specified in README.md.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/slab.h>
#include <linux/percpu.h>
#include <linux/seqlock.h>
#include <linux/seq_file.h>
#include <linux/jhash.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <linux/if_vlan.h>
#include <linux/netfilter.h>
#include <linux/netfilter_ipv4.h>
#include <linux/netfilter_ipv6.h>
#include <linux/capability.h>
#include <linux/random.h>
#include <net/checksum.h>
#include <net/ip6_checksum.h>
#include <net/ip.h>
#include <net/ipv6.h>
#include "rfcpg.h"
#include "seqwin.h"
#include "stats.h"

#define PG_MAX_STREAMS		1024
#define PG_STREAM_BUCKETS	2048
/* streams per hash chain at most: a lookup walks no more (seeded hash) */
#define PG_CHAIN_MAX		8
/*
 * The sane window of a test header's timestamp: no older than this before
 * the session began (rx, rx_reset), no later than this after arrival.
 * Outside it the frame counts in bad_ts and gives no latency sample.
 */
#define PG_TS_PAST_NS		(10 * NSEC_PER_SEC)
#define PG_TS_AHEAD_NS		(100 * NSEC_PER_MSEC)
/* `pkt_size`: a minimum Ethernet frame without FCS, up to an IP datagram's 64 KiB */
#define PG_RX_MIN_SIZE		60
#define PG_RX_MAX_SIZE		(ETH_HLEN + 65535)
/* IPv6 extension headers walked before UDP at most: a bounded cost per frame */
#define PG_MAX_EXTHDRS		8
/* devices one receiver watches: a tester port that sends also receives */
#define PG_RX_MAX_DEVS		4
/* streams a controller may declare (`streams`): what one write's list holds */
#define PG_RX_MAX_DECL		64

enum pgrx_level { PG_LVL_COUNTER, PG_LVL_BASIC, PG_LVL_TIME };
static const char *const pg_level_names[] = { "counter", "basic", "time" };

/* Test frames not believed, by class (README.md "Rejected frames"). */
enum pg_rx_bad {
	PG_BAD_LEN,	/* UDP length short of the test header, or past the IP end */
	PG_BAD_CSUM,	/* UDP checksum wrong where the device had not checked it */
	PG_BAD_TS,	/* timestamp outside the sane window: no latency sample */
	PG_BAD_SIZE,	/* a frame of another length than `pkt_size`: not counted */
	PG_BAD_NR,
	PG_BAD_NONE = PG_BAD_NR
};

/* A stream's identity, shared by all CPUs; immutable once published. */
struct pg_stream {
	struct pg_stream *next;		/* hash chain */
	u16 sid;			/* the test header's stream id; 0: by address */
	bool v6;
	struct in6_addr addr;		/* IPv4 as v4-mapped; with sid: :: */
	u32 id;				/* index into order[] and pg_rx_cpu.stream[] */
};

struct pg_streams {
	spinlock_t lock;		/* insertion: once per new stream */
	bool closed;			/* declared streams only: no insertion at all */
	u32 count;
	u32 seed;			/* of the address hash, random per session */
	u8 chain[PG_STREAM_BUCKETS];	/* chain lengths, <= PG_CHAIN_MAX */
	struct pg_stream *bucket[PG_STREAM_BUCKETS];
	struct pg_stream *order[PG_MAX_STREAMS];
};

/* What one CPU saw of one stream; written by that CPU's hook only. */
struct pg_stream_cpu {
	seqcount_t seq;
	struct pg_seqwin win;		/* win.n: packets */
	u64 bytes;
	unsigned int pend_len;		/* bytes of win's pending far-ahead frame */
	u64 last_arrival, last_lat;
	bool have_arrival, have_lat;
	struct pg_stat ia, jit;
};

struct pg_rx_cpu {
	seqcount_t seq;
	u64 packets, bytes, first_ns, last_ns, streams_dropped;
	u64 foreign;			/* test frames of undeclared streams: nowhere else */
	u64 bad[PG_BAD_NR];		/* read with READ_ONCE, like streams_dropped */
	struct pg_stat lat;
	u64 *hist;
	struct pg_stream_cpu **stream;	/* [PG_MAX_STREAMS] by id; basic, time */
};

struct pg_rx_session {
	enum pgrx_level level;
	u64 start_ns;			/* CLOCK_REALTIME at rx / rx_reset */
	struct pg_rx_cpu __percpu *cpu;
	struct pg_streams *streams;
};

/* A stream the controller declared: its id, or its source address. */
struct pg_rx_decl {
	u16 sid;
	bool v6;
	struct in6_addr addr;		/* IPv4 as v4-mapped; with sid: :: */
};

struct pg_rx {
	struct pg_net *pn;
	struct mutex lock;		/* configuration, session swaps, reads */
	struct proc_dir_entry *proc;
	struct nf_hook_ops ops[2];
	bool hooks;
	bool stack_tstamps;		/* `timestamp stack` */
	bool tstamps;			/* we hold a net_enable_timestamp() */
	unsigned int ndevs;		/* ifindex[0..ndevs) are watched */
	int ifindex[PG_RX_MAX_DEVS];
	char ifname[PG_RX_MAX_DEVS][IFNAMSIZ];
	enum pgrx_level level;
	bool script;
	bool pass;
	unsigned int pkt_size;		/* frames of another length are not counted; 0: any */
	unsigned int ndecl;		/* declared streams (0: any source is a stream) */
	struct pg_rx_decl decl[PG_RX_MAX_DECL];
	struct pg_rx_session __rcu *session;
	/* the session replaced last, freed once a grace period has passed */
	struct pg_rx_session *retired;
	unsigned long retired_gp;
	char result[PG_RESULT_LEN];
};

/* ---- sessions ---- */

static void pg_session_free(struct pg_rx_session *s)
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

static u32 pg_stream_hash(const struct pg_streams *tbl, const struct in6_addr *src, u16 sid)
{
	/* the address bytes as they are, the id in the initial value */
	return jhash(src->s6_addr, sizeof(src->s6_addr), tbl->seed + sid) % PG_STREAM_BUCKETS;
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
static void pg_rx_reap(struct pg_rx *rx)
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
static int pg_rx_new_session(struct pg_rx *rx)
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

/* ---- hook path ---- */

static struct pg_stream *pg_stream_find(struct pg_stream *st,
					const struct in6_addr *src, bool v6, u16 sid)
{
	for (; st; st = st->next)
		if (st->sid == sid && st->v6 == v6 && ipv6_addr_equal(&st->addr, src))
			return st;
	return NULL;
}

/*
 * The stream of src: a lock-free lookup (of at most PG_CHAIN_MAX entries),
 * the table lock only to add one. A frame of a stream the table cannot take
 * (full, or its chain full) is turned away before the lock, lock-free: a
 * flood of new sources costs each frame a hash and a short walk, never the
 * lock.
 */
static struct pg_stream *pg_stream_get(struct pg_streams *tbl,
				       const struct in6_addr *src, bool v6, u16 sid)
{
	u32 h = pg_stream_hash(tbl, src, sid);
	struct pg_stream *st;

	/* pairs with the bucket release below: a found stream is complete */
	st = pg_stream_find(smp_load_acquire(&tbl->bucket[h]), src, v6, sid);
	if (st || tbl->closed)
		return st;
	if (READ_ONCE(tbl->count) >= PG_MAX_STREAMS || READ_ONCE(tbl->chain[h]) >= PG_CHAIN_MAX)
		return NULL;
	spin_lock(&tbl->lock);
	st = pg_stream_find(tbl->bucket[h], src, v6, sid);
	if (!st && tbl->count < PG_MAX_STREAMS && tbl->chain[h] < PG_CHAIN_MAX) {
		st = kzalloc(sizeof(*st), GFP_ATOMIC);
		if (st) {
			st->sid = sid;
			st->v6 = v6;
			st->addr = *src;
			st->id = tbl->count;
			st->next = tbl->bucket[h];
			tbl->order[st->id] = st;
			WRITE_ONCE(tbl->chain[h], tbl->chain[h] + 1);
			/* readers of count and of the bucket see st complete */
			smp_store_release(&tbl->count, tbl->count + 1);
			smp_store_release(&tbl->bucket[h], st);
		}
	}
	spin_unlock(&tbl->lock);
	return st;
}

/* This CPU's part of stream id, made on its first packet here. */
static struct pg_stream_cpu *pg_stream_cpu_get(struct pg_rx_cpu *c, u32 id)
{
	struct pg_stream_cpu *sc = c->stream[id];

	if (likely(sc))
		return sc;
	sc = kzalloc(sizeof(*sc), GFP_ATOMIC);
	if (!sc)
		return NULL;
	seqcount_init(&sc->seq);
	smp_store_release(&c->stream[id], sc);	/* readers see it initialised */
	return sc;
}

static void pg_stream_update(struct pg_stream_cpu *sc, enum pgrx_level level,
			     u32 seq, unsigned int len, u64 now, u64 lat, bool lat_ok)
{
	unsigned int took;

	raw_write_seqcount_begin(&sc->seq);
	/* a far-ahead frame's bytes wait with it until it is confirmed */
	took = pg_seqwin_add(&sc->win, seq);
	if (took)
		sc->bytes += len + (took > 1 ? sc->pend_len : 0);
	else
		sc->pend_len = len;
	if (level == PG_LVL_TIME) {
		if (sc->have_arrival && now >= sc->last_arrival)
			pg_stat_add(&sc->ia, now - sc->last_arrival);
		else
			sc->ia.skipped++;
		sc->last_arrival = now;
		sc->have_arrival = true;
		if (lat_ok && sc->have_lat)
			pg_stat_add(&sc->jit, lat > sc->last_lat ? lat - sc->last_lat :
				    sc->last_lat - lat);
		else
			sc->jit.skipped++;
		if (lat_ok) {
			sc->last_lat = lat;
			sc->have_lat = true;
		}
	}
	raw_write_seqcount_end(&sc->seq);
}

/* bytes counted: the frame without FCS = IP length + link header */
static unsigned int pg_mac_len(const struct sk_buff *skb)
{
	return skb_mac_header_was_set(skb) ?
	       (unsigned int)(skb_network_header(skb) - skb_mac_header(skb)) : ETH_HLEN;
}

/* What the hook reads from a frame: identity, test header, bytes counted. */
struct pg_rx_frame {
	struct in6_addr src;		/* IPv4 as v4-mapped */
	bool v6;
	unsigned int thoff;		/* the UDP header's offset */
	unsigned int ulen;		/* the UDP header's length field */
	__sum16 check;			/* the UDP header's checksum field */
	u32 magic;
	u32 seq;
	u16 sid;			/* stream id (PG_MAGIC_SID); 0: none */
	u64 ts;				/* transmit time, ns; 0: none */
	unsigned int tagged;		/* tag bytes VLAN devices took off */
	unsigned int len;		/* bytes counted */
};

/* IPv4 UDP, not a fragment: the UDP header's offset, or 0. */
static unsigned int pg_rx_ipv4(const struct sk_buff *skb, struct pg_rx_frame *f)
{
	const struct iphdr *iph = ip_hdr(skb);

	if (iph->protocol != IPPROTO_UDP || ip_is_fragment(iph))
		return 0;
	ipv6_addr_set_v4mapped(iph->saddr, &f->src);
	f->v6 = false;
	return skb_network_offset(skb) + iph->ihl * 4;
}

/*
 * IPv6 UDP after at most PG_MAX_EXTHDRS extension headers (hop-by-hop
 * first, routing, destination options): the UDP header's offset, or 0. A
 * fragment header of any kind (first, later, atomic) is no whole test
 * frame; ipv6_skip_exthdr() would let a first fragment through (it reports
 * the offset only, not the M flag), so the chain is walked here.
 */
static unsigned int pg_rx_ipv6(const struct sk_buff *skb, struct pg_rx_frame *f)
{
	const struct ipv6hdr *ip6 = ipv6_hdr(skb);
	unsigned int off = skb_network_offset(skb) + sizeof(*ip6);
	const struct ipv6_opt_hdr *eh;
	struct ipv6_opt_hdr buf;
	u8 nexthdr = ip6->nexthdr;
	int i;

	for (i = 0; nexthdr != IPPROTO_UDP; i++) {
		if (i == PG_MAX_EXTHDRS ||
		    !(nexthdr == NEXTHDR_HOP ? i == 0 :
		      nexthdr == NEXTHDR_ROUTING || nexthdr == NEXTHDR_DEST))
			return 0;
		eh = skb_header_pointer(skb, (int)off, sizeof(buf), &buf);
		if (!eh)
			return 0;
		nexthdr = eh->nexthdr;
		off += ipv6_optlen(eh);
	}
	f->src = ip6->saddr;
	f->v6 = true;
	return off;
}

/* A test header's magic, sequence and timestamp; false: not a test header. */
static bool pg_rx_decode(const u8 *h, struct pg_rx_frame *f)
{
	f->magic = get_unaligned_be32(h);
	f->sid = 0;
	if (f->magic != PG_MAGIC_NS && f->magic != PG_MAGIC_UPSTREAM &&
	    f->magic != PG_MAGIC_SID)
		return false;
	f->seq = get_unaligned_be32(h + 4);
	if (f->magic == PG_MAGIC_NS) {
		f->ts = get_unaligned_be64(h + 8);
	} else if (f->magic == PG_MAGIC_SID) {
		f->sid = get_unaligned_be16(h + 8);
		/* no generator sends id 0: not a test header */
		if (!f->sid)
			return false;
		/* the low 48 bits; pg_rx_ts48() restores the rest on arrival */
		f->ts = (u64)get_unaligned_be16(h + 10) << 32 | get_unaligned_be32(h + 12);
	} else {
		u32 usec = get_unaligned_be32(h + 12);

		/* an impossible microsecond field: a timestamp no clock gave */
		f->ts = usec < USEC_PER_SEC ?
			(u64)get_unaligned_be32(h + 8) * NSEC_PER_SEC +
			(u64)usec * NSEC_PER_USEC : U64_MAX;
	}
	return true;
}

/*
 * The per-frame step, before any stream is looked up: is this a test frame
 * (UDP whose payload starts with a test header), and what does it say.
 * Nothing it read is believed yet: see pg_rx_validate().
 */
static bool pg_rx_parse(struct sk_buff *skb, u8 pf, struct pg_rx_frame *f)
{
	u8 buf[sizeof(struct udphdr) + PG_HDR_LEN];
	const struct udphdr *uh;

	f->thoff = pf == NFPROTO_IPV4 ? pg_rx_ipv4(skb, f) : pg_rx_ipv6(skb, f);
	if (!f->thoff)
		return false;
	uh = skb_header_pointer(skb, (int)f->thoff, sizeof(buf), buf);
	if (!uh || !pg_rx_decode((const u8 *)(uh + 1), f))
		return false;
	f->ulen = ntohs(uh->len);
	f->check = uh->check;
	f->len = skb->len + pg_mac_len(skb) + f->tagged;
	return true;
}

/* Where the IP datagram ends in the skb, by the IP header's length. */
static unsigned int pg_rx_ip_end(const struct sk_buff *skb, bool v6)
{
	unsigned int len;

	if (v6) {
		len = ntohs(ipv6_hdr(skb)->payload_len);
		if (!len)		/* jumbogram: the stack checked it */
			return skb->len;
		len += sizeof(struct ipv6hdr);
	} else {
		len = ntohs(ip_hdr(skb)->tot_len);
	}
	return len + (unsigned int)skb_network_offset(skb);
}

/* The UDP checksum, where the device has not vouched for it. */
static bool pg_rx_csum_ok(struct sk_buff *skb, const struct pg_rx_frame *f)
{
	__wsum sum;

	/* none sent (IPv4; for IPv6 the generator's default, counted anyway) */
	if (!f->check)
		return true;
	if (skb->ip_summed == CHECKSUM_UNNECESSARY || skb->ip_summed == CHECKSUM_PARTIAL)
		return true;
	sum = skb_checksum(skb, (int)f->thoff, (int)f->ulen, 0);
	if (f->v6)
		return !csum_ipv6_magic(&ipv6_hdr(skb)->saddr, &ipv6_hdr(skb)->daddr,
					f->ulen, IPPROTO_UDP, sum);
	return !csum_tcpudp_magic(ip_hdr(skb)->saddr, ip_hdr(skb)->daddr,
				  f->ulen, IPPROTO_UDP, sum);
}

/*
 * Is the frame what it says: a UDP length that holds the test header and
 * ends within the IP datagram (which ends within the skb), and a UDP
 * checksum that adds up. PG_BAD_NONE, or the class it is rejected as.
 */
static enum pg_rx_bad pg_rx_validate(struct sk_buff *skb, const struct pg_rx_frame *f)
{
	unsigned int end = pg_rx_ip_end(skb, f->v6);

	if (end > skb->len || f->ulen < sizeof(struct udphdr) + PG_HDR_LEN ||
	    f->thoff + f->ulen > end)
		return PG_BAD_LEN;
	if (!pg_rx_csum_ok(skb, f))
		return PG_BAD_CSUM;
	return PG_BAD_NONE;
}

/*
 * A stream-id header's 48-bit time as a full CLOCK_REALTIME ns: the value
 * congruent to it mod 2^48 nearest to the arrival time (the clocks and the
 * path would have to be 1.6 days apart to pick the wrong one).
 */
static u64 pg_rx_ts48(u64 ts48, u64 now)
{
	const u64 span = 1ULL << 48;
	u64 ts = (now & ~(span - 1)) | ts48;

	if (ts > now && ts - now > span / 2 && ts >= span)
		ts -= span;
	else if (ts < now && now - ts > span / 2)
		ts += span;
	return ts;
}

/* A timestamp is believed within [session start - past, arrival + ahead]. */
static bool pg_rx_ts_sane(const struct pg_rx_session *s, u64 ts, u64 now)
{
	return (s->start_ns < PG_TS_PAST_NS || ts >= s->start_ns - PG_TS_PAST_NS) &&
	       ts <= now + PG_TS_AHEAD_NS;
}

static void pg_rx_count_bad(struct pg_rx_cpu *c, enum pg_rx_bad bad)
{
	WRITE_ONCE(c->bad[bad], c->bad[bad] + 1);
}

/* Level counter: packets and bytes, nothing else. */
static void pg_rx_count(struct pg_rx_cpu *c, unsigned int len)
{
	raw_write_seqcount_begin(&c->seq);
	c->packets++;
	c->bytes += len;
	raw_write_seqcount_end(&c->seq);
}

/* This CPU's totals and latency at levels basic and time. */
static void pg_rx_cpu_update(struct pg_rx_cpu *c, enum pgrx_level level,
			     unsigned int len, u64 now, u64 lat, bool lat_ok,
			     bool attributed)
{
	raw_write_seqcount_begin(&c->seq);
	c->packets++;
	c->bytes += len;
	if (!c->first_ns)
		c->first_ns = now;
	c->last_ns = now;
	if (!attributed)
		c->streams_dropped++;
	if (level == PG_LVL_TIME) {
		if (lat_ok) {
			pg_stat_add(&c->lat, lat);
			c->hist[pg_hist_index(lat)]++;
		} else {
			c->lat.skipped++;
		}
	}
	raw_write_seqcount_end(&c->seq);
}

/* Levels basic and time: arrival time, latency, the frame's stream. */
static void pg_rx_account(struct pg_rx *rx, struct pg_rx_session *s,
			  struct sk_buff *skb, const struct pg_rx_frame *f)
{
	struct pg_rx_cpu *c = this_cpu_ptr(s->cpu);
	struct pg_stream_cpu *sc;
	struct pg_stream *st;
	u64 now, ts, lat = 0;
	bool lat_ok;

	/* a stream id names the stream whatever its addresses */
	st = f->sid ? pg_stream_get(s->streams, &in6addr_any, false, f->sid) :
		      pg_stream_get(s->streams, &f->src, f->v6, 0);
	if (!st && s->streams->closed) {
		/* an undeclared stream's frame: counted apart, never loss */
		WRITE_ONCE(c->foreign, c->foreign + 1);
		return;
	}

	/* arrival: now, or the core's stamp with `timestamp stack` */
	now = READ_ONCE(rx->stack_tstamps) ? pg_skb_rx_realtime_ns(skb) : 0;
	if (!now)
		now = ktime_get_real_ns();
	ts = f->sid && f->ts ? pg_rx_ts48(f->ts, now) : f->ts;
	lat_ok = ts && now >= ts;
	if (ts && !pg_rx_ts_sane(s, ts, now)) {
		pg_rx_count_bad(c, PG_BAD_TS);
		lat_ok = false;
	}
	if (lat_ok)
		lat = now - ts;

	sc = st ? pg_stream_cpu_get(c, st->id) : NULL;
	pg_rx_cpu_update(c, s->level, f->len, now, lat, lat_ok, sc);
	if (sc)
		pg_stream_update(sc, s->level, f->seq, f->len, now, lat, lat_ok);
}

/*
 * One frame believed: counted at the session's level, if it has the length
 * the trial sends (RFC 2544 section 10: frames of another length are no
 * test frames of this trial; they are counted apart and so show as loss).
 */
static void pg_rx_frame(struct pg_rx *rx, struct pg_rx_session *s,
			struct sk_buff *skb, const struct pg_rx_frame *f)
{
	unsigned int size = READ_ONCE(rx->pkt_size);

	if (unlikely(size && f->len != size))
		pg_rx_count_bad(this_cpu_ptr(s->cpu), PG_BAD_SIZE);
	else if (s->level == PG_LVL_COUNTER)
		pg_rx_count(this_cpu_ptr(s->cpu), f->len);
	else
		pg_rx_account(rx, s, skb, f);
}

/*
 * Frames merged by UDP GRO (rx-udp-gro-forwarding, fraglist GRO) or built
 * as UDP GSO arrive as one skb: one IP and UDP header, then gso_segs
 * payloads of gso_size bytes (the last maybe shorter), each starting with
 * its own test header. 1 for every other skb.
 */
static unsigned int pg_rx_segs(const struct sk_buff *skb)
{
	if (likely(!skb_is_gso(skb)) || !(skb_shinfo(skb)->gso_type & SKB_GSO_UDP_L4))
		return 1;
	return skb_shinfo(skb)->gso_segs;
}

/* Each segment of a UDP GRO/GSO skb counted as the frame it was. */
static void pg_rx_segments(struct pg_rx *rx, struct pg_rx_session *s,
			   struct sk_buff *skb, struct pg_rx_frame *f)
{
	unsigned int size = skb_shinfo(skb)->gso_size, hdrs, left, seg, off, i;
	u8 buf[PG_HDR_LEN];
	const u8 *h;

	/* link, IP and UDP headers of one segment's frame */
	hdrs = pg_mac_len(skb) + f->tagged + f->thoff - skb_network_offset(skb) +
	       sizeof(struct udphdr);
	left = f->ulen - sizeof(struct udphdr);
	off = f->thoff + sizeof(struct udphdr);
	/* at most UDP_MAX_SEGMENTS: what GRO and GSO make */
	for (i = 0; left && i < UDP_MAX_SEGMENTS; i++, left -= seg, off += seg) {
		seg = min(size, left);
		if (i) {
			h = skb_header_pointer(skb, (int)off, PG_HDR_LEN, buf);
			/* a segment without a test header is no test frame */
			if (seg < PG_HDR_LEN || !h || !pg_rx_decode(h, f))
				continue;
		}
		f->len = hdrs + seg;
		pg_rx_frame(rx, s, skb, f);
	}
}

static bool pg_rx_is_watched(const struct pg_rx *rx, const struct net_device *dev)
{
	unsigned int i, n = min_t(unsigned int, READ_ONCE(rx->ndevs), PG_RX_MAX_DEVS);

	for (i = 0; i < n; i++)
		if (dev->ifindex == READ_ONCE(rx->ifindex[i]))
			return true;
	return false;
}

/* VLAN devices followed down to their port: QinQ is two */
#define PG_RX_MAX_VLAN_DEPTH	8

/*
 * Did the VLAN device take its tag out of the frame? vlan_do_receive()
 * (net/8021q/vlan_core.c) puts the tag back into the data, where mac_len
 * then counts it, only for a device with VLAN_FLAG_REORDER_HDR off that is
 * no macvlan or bridge port; in every other case it is gone.
 */
static bool pg_rx_vlan_stripped(const struct net_device *dev)
{
	return (vlan_dev_priv(dev)->flags & VLAN_FLAG_REORDER_HDR) ||
	       netif_is_macvlan_port(dev) || netif_is_bridge_port(dev);
}

/*
 * Is the frame's device watched: a watched device, or a VLAN device stacked
 * on one (a tagged frame reaches IP only through the device of its tag)?
 * Watched ifindexes are those of the hook's namespace, and a VLAN device
 * may sit on a port of another. *tagged: the tag bytes the VLAN devices
 * took out of the frame, which its length on the wire counts, and an
 * accelerated tag still on the skb.
 */
static bool pg_rx_watched(const struct pg_rx *rx, const struct sk_buff *skb,
			  const struct nf_hook_state *state, unsigned int *tagged)
{
	const struct net_device *dev = state->in;
	unsigned int depth = 0;
	bool watched = false;

	*tagged = skb_vlan_tag_present(skb) ? VLAN_HLEN : 0;
	while (dev) {
		watched = watched || (net_eq(dev_net(dev), state->net) &&
				      pg_rx_is_watched(rx, dev));
		if (!is_vlan_dev(dev) || ++depth > PG_RX_MAX_VLAN_DEPTH)
			break;
		if (pg_rx_vlan_stripped(dev))
			*tagged += VLAN_HLEN;
		dev = vlan_dev_priv(dev)->real_dev;
	}
	return watched;
}

static unsigned int pg_rx_hook(void *priv, struct sk_buff *skb,
			       const struct nf_hook_state *state)
{
	struct pg_rx *rx = priv;
	struct pg_rx_session *s;
	struct pg_rx_frame f;
	enum pg_rx_bad bad;

	if (!pg_rx_watched(rx, skb, state, &f.tagged))
		return NF_ACCEPT;
	if (!pg_rx_parse(skb, state->pf, &f))
		return NF_ACCEPT;
	s = rcu_dereference(rx->session);
	if (!s)
		return NF_ACCEPT;
	bad = pg_rx_validate(skb, &f);
	if (unlikely(bad != PG_BAD_NONE))
		pg_rx_count_bad(this_cpu_ptr(s->cpu), bad);
	else if (unlikely(pg_rx_segs(skb) > 1))
		pg_rx_segments(rx, s, skb, &f);
	else
		pg_rx_frame(rx, s, skb, &f);
	return READ_ONCE(rx->pass) ? NF_ACCEPT : NF_DROP;
}

/* ---- read-out ---- */

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

static int pg_rx_open(struct inode *inode, struct file *file)
{
	/* the histogram dump can be long: start with a big buffer */
	return single_open_size(file, pg_rx_show, pde_data(inode), 64 * 1024);
}

/* ---- commands ---- */

static int pg_rx_res(struct pg_rx *rx, int err, const char *fmt, const char *arg)
{
	scnprintf(rx->result, sizeof(rx->result), fmt, arg);
	return err;
}

/*
 * `timestamp stack`: have the core stamp packets as they enter the receive
 * path (backlog and softirq delays on the receiving host then stay out of
 * the latency). That switches receive timestamps on for every device of
 * every namespace (net_enable_timestamp() is one global key), so it is held
 * only while counting at level basic or time with `timestamp stack`; the
 * default, `timestamp hook`, reads the clock in the hook and turns on
 * nothing.
 */
static void pg_rx_sync_tstamps(struct pg_rx *rx)
{
	bool want = rx->hooks && rx->level >= PG_LVL_BASIC && rx->stack_tstamps;

	if (want && !rx->tstamps)
		net_enable_timestamp();
	else if (!want && rx->tstamps)
		net_disable_timestamp();
	rx->tstamps = want;
}

/*
 * `rx DEV [DEV ...]`: watch these devices (a port that sends in one
 * direction receives the other's frames) and reset all counters. The list
 * is checked whole before anything changes.
 */
static int pg_rx_enable(struct pg_rx *rx, int argc, char **names)
{
	int ifindex[PG_RX_MAX_DEVS];
	struct net *net = rx->pn->net;
	struct net_device *dev;
	int i, j, err;

	if (argc < 1 || argc > PG_RX_MAX_DEVS)
		return pg_rx_res(rx, -EINVAL, "ERROR: usage: rx DEV [DEV ...] (1 to %s devices)",
				 __stringify(PG_RX_MAX_DEVS));
	for (i = 0; i < argc; i++) {
		if (strlen(names[i]) >= IFNAMSIZ)
			return pg_rx_res(rx, -EINVAL, "ERROR: bad device name \"%.32s\"", names[i]);
		dev = dev_get_by_name(net, names[i]);
		if (!dev)
			return pg_rx_res(rx, -ENODEV, "ERROR: no such netdevice: \"%s\"", names[i]);
		ifindex[i] = dev->ifindex;
		dev_put(dev);
		for (j = 0; j < i; j++)
			if (ifindex[j] == ifindex[i])
				return pg_rx_res(rx, -EINVAL, "ERROR: device \"%s\" listed twice",
						 names[i]);
	}
	/* a receiver enabled anew starts from no declared streams */
	rx->ndecl = 0;
	/* a hook that reads the list meanwhile sees a prefix of old or new */
	WRITE_ONCE(rx->ndevs, 0);
	for (i = 0; i < argc; i++) {
		WRITE_ONCE(rx->ifindex[i], ifindex[i]);
		strscpy(rx->ifname[i], names[i], sizeof(rx->ifname[i]));
	}
	WRITE_ONCE(rx->ndevs, argc);

	err = pg_rx_new_session(rx);
	if (err)
		return pg_rx_res(rx, err, "%s", "No memory");
	if (!rx->hooks) {
		err = nf_register_net_hooks(net, rx->ops, ARRAY_SIZE(rx->ops));
		if (err)
			return pg_rx_res(rx, err, "%s", "ERROR: cannot register netfilter hooks");
		rx->hooks = true;
	}
	pg_rx_sync_tstamps(rx);
	return pg_rx_res(rx, 0, "OK: rx=%s", rx->ifname[0]);
}

static void pg_rx_disable(struct pg_rx *rx)
{
	if (rx->hooks) {
		nf_unregister_net_hooks(rx->pn->net, rx->ops, ARRAY_SIZE(rx->ops));
		rx->hooks = false;
	}
	pg_rx_sync_tstamps(rx);
}

/*
 * `pkt_size N`: count only frames of N bytes as pktgen's pkt_size counts
 * them (the frame without FCS; IPv4 trims the Ethernet padding before the
 * hook, so 60 is the 64-byte frame). 0 counts every length.
 */
static int pg_rx_set_pkt_size(struct pg_rx *rx, const char *arg)
{
	unsigned int v;

	if (kstrtouint(arg, 10, &v) || (v && (v < PG_RX_MIN_SIZE || v > PG_RX_MAX_SIZE)))
		return pg_rx_res(rx, -EINVAL,
				 "ERROR: pkt_size %.32s: expected 0 (any) or 60 to 65549", arg);
	WRITE_ONCE(rx->pkt_size, v);
	return pg_rx_res(rx, 0, "OK: pkt_size=%s", arg);
}

/* One item of a `streams` list: sid:N (1..65535), IPv4 (as v4-mapped) or IPv6. */
static bool pg_rx_parse_decl(const char *a, struct pg_rx_decl *d)
{
	u32 v4;

	memset(d, 0, sizeof(*d));
	if (!strncmp(a, "sid:", 4)) {
		if (pg_parse_u32(a + 4, &v4, U16_MAX) || !v4)
			return false;
		d->sid = (u16)v4;
		return true;
	}
	if (!pg_parse_ip4(a, &v4)) {
		ipv6_addr_set_v4mapped(htonl(v4), &d->addr);
		return true;
	}
	d->v6 = true;
	return !pg_parse_ip6(a, &d->addr);
}

/*
 * `streams ITEM[,ITEM...]`: the trial's streams, each sid:N (frames whose
 * test header carries stream id N, whatever their addresses) or a source
 * address (frames without an id), made with every new session (counters
 * reset now); frames of any other stream are counted as foreign, in no
 * stream and no total. `streams any`: every id or source is a stream of its
 * own, made on its first frame (as before). The list is checked whole
 * before anything changes.
 */
static int pg_rx_declare(struct pg_rx *rx, char *list)
{
	struct pg_rx_decl *decl;
	unsigned int n = 0, i;
	char *item;
	int err = 0;

	decl = kcalloc(PG_RX_MAX_DECL, sizeof(*decl), GFP_KERNEL);
	if (!decl)
		return pg_rx_res(rx, -ENOMEM, "%s", "No memory");
	if (strcmp(list, "any")) {
		while ((item = strsep(&list, ",")) != NULL) {
			if (n == PG_RX_MAX_DECL) {
				err = pg_rx_res(rx, -E2BIG, "ERROR: more than %s streams",
						__stringify(PG_RX_MAX_DECL));
				goto out;
			}
			if (!pg_rx_parse_decl(item, &decl[n])) {
				err = pg_rx_res(rx, -EINVAL,
						"ERROR: not sid:1..65535, an IPv4 or an IPv6 address: \"%.48s\"",
						item);
				goto out;
			}
			for (i = 0; i < n; i++)
				if (decl[i].sid == decl[n].sid && decl[i].v6 == decl[n].v6 &&
				    ipv6_addr_equal(&decl[i].addr, &decl[n].addr)) {
					err = pg_rx_res(rx, -EINVAL, "ERROR: stream \"%.48s\" listed twice",
							item);
					goto out;
				}
			n++;
		}
	}
	memcpy(rx->decl, decl, n * sizeof(*decl));
	rx->ndecl = n;
	if (rcu_access_pointer(rx->session) && pg_rx_new_session(rx))
		err = pg_rx_res(rx, -ENOMEM, "%s", "No memory");
	else
		err = pg_rx_res(rx, 0, "OK: streams=%s", n ? "declared" : "any");
out:
	kfree(decl);
	return err;
}

static int pg_rx_command(struct pg_rx *rx, int argc, char **argv)
{
	const char *cmd = argv[0];
	int i;

	if (!strcmp(cmd, "rx"))
		return pg_rx_enable(rx, argc - 1, argv + 1);
	if (!strcmp(cmd, "rx_reset") || !strcmp(cmd, "rx_disable")) {
		if (argc != 1)
			return pg_rx_res(rx, -EINVAL, "ERROR: %s takes no argument", cmd);
		if (cmd[3] == 'd') {
			pg_rx_disable(rx);
			return pg_rx_res(rx, 0, "OK: %s", cmd);
		}
		if (rcu_access_pointer(rx->session) && pg_rx_new_session(rx))
			return pg_rx_res(rx, -ENOMEM, "%s", "No memory");
		return pg_rx_res(rx, 0, "OK: %s", cmd);
	}
	if (argc != 2)
		goto unknown;
	if (!strcmp(cmd, "statistics")) {
		for (i = 0; i < (int)ARRAY_SIZE(pg_level_names); i++)
			if (!strcmp(argv[1], pg_level_names[i]))
				break;
		if (i == (int)ARRAY_SIZE(pg_level_names))
			return pg_rx_res(rx, -EINVAL,
					 "ERROR: statistics %.32s: expected counter, basic or time",
					 argv[1]);
		rx->level = (enum pgrx_level)i;
		pg_rx_sync_tstamps(rx);
		if (rcu_access_pointer(rx->session) && pg_rx_new_session(rx))
			return pg_rx_res(rx, -ENOMEM, "%s", "No memory");
		return pg_rx_res(rx, 0, "OK: statistics=%s", pg_level_names[i]);
	}
	if (!strcmp(cmd, "display")) {
		if (strcmp(argv[1], "human") && strcmp(argv[1], "script"))
			return pg_rx_res(rx, -EINVAL,
					 "ERROR: display %.32s: expected human or script", argv[1]);
		rx->script = argv[1][0] == 's';
		return pg_rx_res(rx, 0, "OK: display=%s", argv[1]);
	}
	if (!strcmp(cmd, "timestamp")) {
		if (strcmp(argv[1], "hook") && strcmp(argv[1], "stack"))
			return pg_rx_res(rx, -EINVAL,
					 "ERROR: timestamp %.32s: expected hook or stack", argv[1]);
		WRITE_ONCE(rx->stack_tstamps, argv[1][0] == 's');
		pg_rx_sync_tstamps(rx);
		return pg_rx_res(rx, 0, "OK: timestamp=%s", argv[1]);
	}
	if (!strcmp(cmd, "pkt_size"))
		return pg_rx_set_pkt_size(rx, argv[1]);
	if (!strcmp(cmd, "streams"))
		return pg_rx_declare(rx, argv[1]);
	if (!strcmp(cmd, "action")) {
		if (strcmp(argv[1], "drop") && strcmp(argv[1], "pass"))
			return pg_rx_res(rx, -EINVAL,
					 "ERROR: action %.32s: expected drop or pass", argv[1]);
		WRITE_ONCE(rx->pass, argv[1][0] == 'p');
		return pg_rx_res(rx, 0, "OK: action=%s", argv[1]);
	}
unknown:
	return pg_rx_res(rx, -EINVAL, "No such command or bad arguments \"%.32s\"", cmd);
}

static ssize_t pg_rx_write(struct file *file, const char __user *ubuf,
			   size_t count, loff_t *ppos)
{
	struct pg_rx *rx = ((struct seq_file *)file->private_data)->private;
	char *argv[1 + PG_RX_MAX_DEVS];
	int argc, err;
	char *buf;

	if (!pg_may_write(file, rx->pn))
		return -EPERM;
	buf = kmalloc(PG_MAX_WRITE, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	argc = pg_get_args(ubuf, count, buf, argv, ARRAY_SIZE(argv));
	mutex_lock(&rx->lock);
	if (argc < 0)
		err = pg_rx_res(rx, argc, "ERROR: %s", pg_args_error(argc));
	else
		err = pg_rx_command(rx, argc, argv);
	mutex_unlock(&rx->lock);
	kfree(buf);
	return err ? err : (ssize_t)count;
}

PG_CMD_PROC_OPS(pg_rx_ops, pg_rx_open, pg_rx_write);

int pg_rx_init(struct pg_net *pn)
{
	struct pg_rx *rx = kzalloc(sizeof(*rx), GFP_KERNEL);
	int i;

	if (!rx)
		return -ENOMEM;
	rx->pn = pn;
	mutex_init(&rx->lock);
	rx->level = PG_LVL_TIME;
	strscpy(rx->result, "OK", sizeof(rx->result));
	for (i = 0; i < 2; i++) {
		rx->ops[i].hook = pg_rx_hook;
		rx->ops[i].priv = rx;
		rx->ops[i].hooknum = NF_INET_PRE_ROUTING;
	}
	rx->ops[0].pf = NFPROTO_IPV4;
	rx->ops[0].priority = NF_IP_PRI_RAW_BEFORE_DEFRAG;
	rx->ops[1].pf = NFPROTO_IPV6;
	rx->ops[1].priority = NF_IP6_PRI_RAW_BEFORE_DEFRAG;

	rx->proc = proc_create_data(PG_RX_NAME, 0600, pn->proc_dir, &pg_rx_ops, rx);
	if (!rx->proc) {
		kfree(rx);
		return -ENOMEM;
	}
	pn->rx = rx;
	return 0;
}

void pg_rx_exit(struct pg_net *pn)
{
	struct pg_rx *rx = pn->rx;

	if (!rx)
		return;
	proc_remove(rx->proc);	/* no writer can re-register the hooks */
	pg_rx_disable(rx);
	/*
	 * nf_unregister_net_hooks() only unlinks the hooks: a hook already
	 * running on another CPU (under rcu_read_lock) may still use rx and
	 * its session. Wait for it before freeing them.
	 */
	synchronize_net();
	pg_rx_reap(rx);
	pg_session_free(rcu_dereference_protected(rx->session, 1));
	kfree(rx);
	pn->rx = NULL;
}
