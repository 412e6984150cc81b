/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The receiver's state, shared by its parts: rx.c (the hook path: a
 * frame's parsing, validation and counting), rx_session.c (sessions and
 * their stream tables), rx_show.c (the pgrx read-out) and rx_ctl.c (the
 * pgrx commands, the hooks' registration, init and exit).
 */
#ifndef RFCPG_RX_H
#define RFCPG_RX_H

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
#define PG_LVL_COUNT		(PG_LVL_TIME + 1)
extern const char *const pg_level_names[PG_LVL_COUNT];

/* Test frames not believed, by class (../docs/pgrx-receiver.md, "Rejected frames"). */
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

static inline u32 pg_stream_hash(const struct pg_streams *tbl, const struct in6_addr *src, u16 sid)
{
	/* the address bytes as they are, the id in the initial value */
	return jhash(src->s6_addr, sizeof(src->s6_addr), tbl->seed + sid) % PG_STREAM_BUCKETS;
}

/* rx_session.c */
void pg_session_free(struct pg_rx_session *s);
void pg_rx_reap(struct pg_rx *rx);
int pg_rx_new_session(struct pg_rx *rx);

/* rx.c */
unsigned int pg_rx_hook(void *priv, struct sk_buff *skb, const struct nf_hook_state *state);

/* rx_show.c */
int pg_rx_open(struct inode *inode, struct file *file);

#endif
