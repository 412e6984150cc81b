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
 * specified in ../docs/pgrx-receiver.md.
 *
 * This file is the hook path; rx_session.c makes and frees sessions,
 * rx_show.c prints them, rx_ctl.c takes the commands (rx.h: their state).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include "rx.h"

const char *const pg_level_names[PG_LVL_COUNT] = { "counter", "basic", "time" };

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
			/* readers of count see st complete */
			smp_store_release(&tbl->count, tbl->count + 1);
			/* and so do readers of the bucket */
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

unsigned int pg_rx_hook(void *priv, struct sk_buff *skb,
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
