// SPDX-License-Identifier: GPL-2.0
/*
 * Building test packets: Ethernet / [S-VLAN] [VLAN] [MPLS] / IPv4 or IPv6 /
 * UDP / 16-byte test header / zero padding, with per-packet address, port,
 * MAC, size, queue and flow variation.
 */
#include <linux/kernel.h>
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/skbuff.h>
#include <linux/etherdevice.h>
#include <linux/if_vlan.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <linux/timekeeping.h>
#include <net/ip.h>
#include <net/ipv6.h>
#include <net/checksum.h>
#include <net/ip6_checksum.h>
#include <net/addrconf.h>
#include <linux/inetdevice.h>
#include "rfcpg.h"

static u32 pg_rand_range(struct pg_thread *t, u32 lo, u32 hi)
{
	u64 span = (u64)hi - lo + 1;

	return lo + (u32)(((u64)prandom_u32_state(&t->rnd) * span) >> 32);
}

/* Next value of a [min, max] range: random, or one step after cur. */
static u32 pg_next(struct pg_thread *t, u32 cur, u32 min, u32 max, bool rnd)
{
	if (min >= max)
		return min;
	if (rnd)
		return pg_rand_range(t, min, max);
	if (cur < min || cur >= max)
		return min;
	return cur + 1;
}

/*
 * Next UDP port of a [min, max) range: upstream leaves the port ranges'
 * max out, stepping and random alike (udp_src_max 1002 after udp_src_min
 * 1000 gives two ports), unlike its address and size ranges.
 */
static u16 pg_next_port(struct pg_thread *t, u16 cur, u16 min, u16 max, bool rnd)
{
	if (min >= max)
		return min;
	if (rnd)
		return (u16)pg_rand_range(t, min, max - 1);
	if (cur < min || cur + 1 >= max)
		return min;
	return cur + 1;
}

/* The device's first IPv4 address (host order), 0 if it has none. */
static u32 pg_dev_ip4(struct net_device *dev)
{
	const struct in_ifaddr *ifa;
	struct in_device *idev;
	u32 a = 0;

	rcu_read_lock();
	idev = __in_dev_get_rcu(dev);
	ifa = idev ? rcu_dereference(idev->ifa_list) : NULL;
	if (ifa)
		a = ntohl(ifa->ifa_local);
	rcu_read_unlock();
	return a;
}

/* The device's first usable global IPv6 address, :: if it has none. */
static void pg_dev_ip6(struct net_device *dev, struct in6_addr *a)
{
	struct inet6_ifaddr *ifp;
	struct inet6_dev *idev;

	*a = in6addr_any;
	idev = in6_dev_get(dev);
	if (!idev)
		return;
	read_lock_bh(&idev->lock);
	list_for_each_entry(ifp, &idev->addr_list, if_list) {
		if (!(ifp->scope & (IFA_HOST | IFA_LINK | IFA_SITE)) &&
		    !(ifp->flags & (IFA_F_TENTATIVE | IFA_F_DADFAILED))) {
			*a = ifp->addr;
			break;
		}
	}
	read_unlock_bh(&idev->lock);
	in6_dev_put(idev);
}

/*
 * IPv6 ranges (dst6_min/dst6_max, and ours src6_min/src6_max): the one
 * 32-bit word in which min and max differ varies between them, the other
 * three as in both. The last word steps hosts; the second steps /64
 * networks with the same interface id (RFC 2544 section 12's networks, as
 * dst_stride 256 does for IPv4). Addresses that differ in more than one
 * word are no range (-1).
 */
static int pg_range6_word(const struct in6_addr *lo, const struct in6_addr *hi)
{
	int i, word = -1;

	if (ipv6_addr_any(lo))
		return -1;
	for (i = 0; i < 4; i++) {
		if (lo->s6_addr32[i] == hi->s6_addr32[i])
			continue;
		if (word >= 0)
			return -1;
		word = i;
	}
	if (word >= 0 && ntohl(lo->s6_addr32[word]) >= ntohl(hi->s6_addr32[word]))
		return -1;
	return word;
}

int pg_dev_prepare(struct pg_dev *pd)
{
	pg_dev_release_run(pd);
	/* allocated by the flows command (device_hdr.c), in the writer's memcg */
	if (pd->nflows)
		memset(pd->flows, 0, pd->nflows * sizeof(*pd->flows));
	if (pd->nfrags) {
		pd->frag_page = alloc_page(GFP_KERNEL | __GFP_ZERO);
		if (!pd->frag_page) {
			pg_dev_release_run(pd);
			return -ENOMEM;
		}
	}
	/* cur_* hold the last value used: start at max so the first is min */
	pd->cur_saddr = pd->saddr_max > pd->saddr_min ? pd->saddr_max : pd->saddr_min;
	pd->cur_daddr = pd->daddr_max > pd->daddr_min ? pd->daddr_max : pd->daddr_min;
	pd->cur_udp_src = max(pd->udp_src_min, pd->udp_src_max);
	pd->cur_udp_dst = max(pd->udp_dst_min, pd->udp_dst_max);
	pd->cur_pkt_size = max(pd->min_pkt_size, pd->max_pkt_size);
	pd->cur_queue_map = max(pd->queue_map_min, pd->queue_map_max);
	pd->cur_src_mac_offset = pd->src_mac_count ? pd->src_mac_count - 1 : 0;
	pd->cur_dst_mac_offset = pd->dst_mac_count ? pd->dst_mac_count - 1 : 0;
	/* no source configured: the device's own address, as upstream */
	pd->auto_saddr = !pd->have_src_min && !pd->have_src_max;
	if (pd->auto_saddr)
		pd->cur_saddr = pg_dev_ip4(pd->odev);
	pd->cur_in6_saddr = pd->in6_saddr;
	if (ipv6_addr_any(&pd->in6_saddr))
		pg_dev_ip6(pd->odev, &pd->cur_in6_saddr);
	if (pg_range6_word(&pd->min_in6_saddr, &pd->max_in6_saddr) >= 0)
		pd->cur_in6_saddr = pd->max_in6_saddr;	/* the first is min */
	pd->cur_in6_daddr = pd->max_in6_daddr;	/* a valid range starts at min */
	pd->cur_flow = 0;
	pd->cur_imix = 0;
	pd->ip_id = 1;
	pd->clone_left = 0;
	return 0;
}

void pg_dev_release_run(struct pg_dev *pd)
{
	kfree_skb(pd->skb);
	pd->skb = NULL;
	if (pd->frag_page) {
		put_page(pd->frag_page);
		pd->frag_page = NULL;
	}
}

static u32 pg_next_size(struct pg_thread *t, struct pg_dev *pd)
{
	if (pd->n_imix) {
		u32 r = pg_rand_range(t, 0, pd->imix_total - 1), i;

		for (i = 0; i + 1 < pd->n_imix; i++) {
			if (r < pd->imix[i].weight)
				break;
			r -= pd->imix[i].weight;
		}
		pd->cur_imix = i;
		pd->imix_counts[i]++;
		return max_t(u32, pd->imix[i].size, PG_MIN_PKT_SIZE);
	}
	pd->cur_pkt_size = pg_next(t, pd->cur_pkt_size, pd->min_pkt_size,
				   pd->max_pkt_size, pg_dev_has_flag(pd, PGF_TXSIZE_RND));
	return pd->cur_pkt_size;
}

static u32 pg_next_offset(struct pg_thread *t, u32 cur, u32 count, bool rnd)
{
	if (count <= 1)
		return 0;
	if (rnd)
		return pg_rand_range(t, 0, count - 1);
	return cur + 1 >= count ? 0 : cur + 1;
}

/* The next IPv4 destination of the range, every dst_stride-th address. */
static u32 pg_next_dst4(struct pg_thread *t, struct pg_dev *pd, bool rnd)
{
	u32 stride = pd->dst_stride, lo = pd->daddr_min, n;

	if (stride <= 1 || pd->daddr_max <= lo)
		return pg_next(t, pd->cur_daddr, lo, pd->daddr_max, rnd);
	n = (pd->daddr_max - lo) / stride;	/* the range's last index */
	/* a current address off the range or its grid starts it again at min */
	return lo + pg_next(t, (pd->cur_daddr - lo) / stride, 0, n, rnd) * stride;
}

static u32 pg_next_daddr(struct pg_thread *t, struct pg_dev *pd)
{
	bool rnd = pg_dev_has_flag(pd, PGF_IPDST_RND);
	struct pg_flow *f;
	u32 i;

	if (!pd->nflows || !pd->flows) {
		pd->cur_daddr = pg_next_dst4(t, pd, rnd);
		return pd->cur_daddr;
	}
	i = pg_dev_has_flag(pd, PGF_FLOW_SEQ) ? pd->cur_flow :
	    pg_rand_range(t, 0, pd->nflows - 1);
	f = &pd->flows[i];
	if (!f->active) {
		pd->cur_daddr = pg_next_dst4(t, pd, rnd);
		f->daddr = pd->cur_daddr;
		f->count = 0;
		f->active = true;
	}
	f->count++;
	if (pd->flowlen && f->count >= pd->flowlen)
		f->active = false;	/* next time: a new flow in this slot */
	/* FLOW_SEQ: the next flow after a finished one, every packet if flowlen 0 */
	if (pg_dev_has_flag(pd, PGF_FLOW_SEQ) && (!pd->flowlen || !f->active))
		pd->cur_flow = i + 1 >= pd->nflows ? 0 : i + 1;
	return f->daddr;
}

/* The next address of the range lo..hi after *cur; false if it is no range. */
static bool pg_next_in_range6(struct pg_thread *t, struct in6_addr *cur,
			      const struct in6_addr *lo, const struct in6_addr *hi,
			      bool rnd)
{
	int w = pg_range6_word(lo, hi);
	u32 last;

	if (w < 0)
		return false;
	last = ntohl(cur->s6_addr32[w]);
	*cur = *lo;
	cur->s6_addr32[w] = htonl(pg_next(t, last, ntohl(lo->s6_addr32[w]),
					  ntohl(hi->s6_addr32[w]), rnd));
	return true;
}

static void pg_next_daddr6(struct pg_thread *t, struct pg_dev *pd)
{
	if (pg_next_in_range6(t, &pd->cur_in6_daddr, &pd->min_in6_daddr,
			      &pd->max_in6_daddr, pg_dev_has_flag(pd, PGF_IPDST_RND)))
		return;
	if (!ipv6_addr_any(&pd->in6_daddr))
		pd->cur_in6_daddr = pd->in6_daddr;
	else
		pd->cur_in6_daddr = pd->min_in6_daddr;
}

static u16 pg_next_queue(struct pg_thread *t, struct pg_dev *pd)
{
	unsigned int real = pd->odev->real_num_tx_queues;
	u32 q;

	if (pg_dev_has_flag(pd, PGF_QUEUE_MAP_CPU))
		q = smp_processor_id();
	else
		q = pg_next(t, pd->cur_queue_map, pd->queue_map_min, pd->queue_map_max,
			    pg_dev_has_flag(pd, PGF_QUEUE_MAP_RND));
	/* as upstream: modulo the queues the device has now, not clamped */
	if (real)
		q %= real;
	pd->cur_queue_map = (u16)q;
	return (u16)q;
}

static void pg_mac_add(u8 *out, const u8 *base, u32 offset)
{
	u64_to_ether_addr((ether_addr_to_u64(base) + offset) & 0xffffffffffffULL, out);
}

static u8 *pg_put16(u8 *p, u16 v)
{
	put_unaligned_be16(v, p);
	return p + 2;
}

/* mono: CLOCK_MONOTONIC ns just read by the caller, or 0 */
static void pg_write_header(struct pg_dev *pd, u8 *p, u64 mono)
{
	u32 magic = pg_dev_has_flag(pd, PGF_UPSTREAM_HDR) ? PG_MAGIC_UPSTREAM :
		    pd->stream_id ? PG_MAGIC_SID : PG_MAGIC_NS;

	put_unaligned_be32(magic, p);
	put_unaligned_be32(pd->seq_num, p + 4);
	pd->seq_num++;
	if (pg_dev_has_flag(pd, PGF_NO_TIMESTAMP)) {
		put_unaligned_be64(0, p + 8);
	} else {
		/* one clock read serves scheduling and the timestamp */
		u64 real = (u64)ktime_to_ns(ktime_mono_to_real(mono ? ns_to_ktime(mono) :
							       ktime_get()));

		if (magic == PG_MAGIC_UPSTREAM) {
			u32 rem;
			u64 sec = div_u64_rem(real, NSEC_PER_SEC, &rem);

			put_unaligned_be32((u32)sec, p + 8);
			put_unaligned_be32(rem / NSEC_PER_USEC, p + 12);
		} else {
			put_unaligned_be64(real, p + 8);
		}
	}
	/* the stream id takes the time's top 16 bits; the receiver restores them */
	if (magic == PG_MAGIC_SID)
		put_unaligned_be16(pd->stream_id, p + 8);
}

static struct sk_buff *pg_alloc(struct pg_dev *pd, unsigned int size)
{
	unsigned int headroom = LL_RESERVED_SPACE(pd->odev);
	struct sk_buff *skb;

	if (pg_dev_has_flag(pd, PGF_NODE) && pd->node != NUMA_NO_NODE) {
		skb = __alloc_skb(NET_SKB_PAD + headroom + size,
				  GFP_KERNEL | __GFP_NOWARN, 0, pd->node);
		if (skb)
			skb_reserve(skb, NET_SKB_PAD);
	} else {
		skb = __netdev_alloc_skb(pd->odev, headroom + size,
					 GFP_KERNEL | __GFP_NOWARN);
	}
	if (skb)
		skb_reserve(skb, headroom);
	return skb;
}

/* One packet's choices and layout, from pg_pkt_vary() and pg_pkt_geometry(). */
struct pg_pkt {
	bool ipv6, vlan, svlan;
	u16 sport, dport, queue;
	u32 saddr, daddr;		/* host order, IPv4 */
	unsigned int size;		/* frame size without FCS */
	unsigned int l3len, hdrlen;	/* IP header; Ethernet to UDP included */
	unsigned int datalen;		/* UDP payload */
	unsigned int nfrags, frag_total;	/* payload in page fragments */
	unsigned int linear;		/* bytes in the skb's head */
};

/* Per-packet variation: size, MACs, addresses, ports, queue, VLAN ids. */
static void pg_pkt_vary(struct pg_thread *t, struct pg_dev *pd, struct pg_pkt *pk)
{
	pk->size = pg_next_size(t, pd);
	pd->cur_src_mac_offset = pg_next_offset(t, pd->cur_src_mac_offset, pd->src_mac_count,
						pg_dev_has_flag(pd, PGF_MACSRC_RND));
	pd->cur_dst_mac_offset = pg_next_offset(t, pd->cur_dst_mac_offset, pd->dst_mac_count,
						pg_dev_has_flag(pd, PGF_MACDST_RND));
	if (pk->ipv6) {
		/* no source range: src6, or the device's address (set at start) */
		pg_next_in_range6(t, &pd->cur_in6_saddr, &pd->min_in6_saddr,
				  &pd->max_in6_saddr, pg_dev_has_flag(pd, PGF_IPSRC_RND));
		pg_next_daddr6(t, pd);
	} else {
		if (!pd->auto_saddr)
			pd->cur_saddr = pg_next(t, pd->cur_saddr, pd->saddr_min,
						pd->saddr_max,
						pg_dev_has_flag(pd, PGF_IPSRC_RND));
		pk->saddr = pd->cur_saddr;
		pk->daddr = pg_next_daddr(t, pd);
	}
	pd->cur_udp_src = pg_next_port(t, pd->cur_udp_src, pd->udp_src_min, pd->udp_src_max,
					pg_dev_has_flag(pd, PGF_UDPSRC_RND));
	pd->cur_udp_dst = pg_next_port(t, pd->cur_udp_dst, pd->udp_dst_min, pd->udp_dst_max,
					pg_dev_has_flag(pd, PGF_UDPDST_RND));
	pk->sport = pd->cur_udp_src;
	pk->dport = pd->cur_udp_dst;
	pk->queue = pg_next_queue(t, pd);
	pd->cur_vlan_id = pg_dev_has_flag(pd, PGF_VID_RND) ?
			  (u16)pg_rand_range(t, 0, 4095) : pd->vlan_id;
	pd->cur_svlan_id = pg_dev_has_flag(pd, PGF_SVID_RND) ?
			   (u16)pg_rand_range(t, 0, 4095) : pd->svlan_id;
}

/*
 * Geometry: header lengths, the UDP payload (at least the test header) and
 * how much of it goes into page fragments.
 */
static void pg_pkt_geometry(const struct pg_dev *pd, struct pg_pkt *pk)
{
	unsigned int tags;

	tags = pd->nr_labels * 4 + (pk->vlan ? VLAN_HLEN : 0) + (pk->svlan ? VLAN_HLEN : 0);
	pk->hdrlen = ETH_HLEN + tags + pk->l3len + sizeof(struct udphdr);
	pk->datalen = pk->size > pk->hdrlen ? pk->size - pk->hdrlen : 0;
	if (pk->datalen < PG_HDR_LEN)
		pk->datalen = PG_HDR_LEN;
	pk->nfrags = 0;
	pk->frag_total = 0;
	if (pd->nfrags && pd->frag_page) {
		pk->nfrags = min_t(unsigned int, pd->nfrags, MAX_SKB_FRAGS);
		pk->frag_total = min_t(unsigned int, pk->datalen - PG_HDR_LEN,
				       pk->nfrags * PAGE_SIZE);
		if (pk->frag_total < pk->nfrags)
			pk->nfrags = pk->frag_total;
		if (!pk->nfrags)
			pk->frag_total = 0;
	}
	pk->linear = pk->hdrlen + pk->datalen - pk->frag_total;
}

/* Ethernet header, S-VLAN and VLAN tags, MPLS labels; returns the L3 start. */
static u8 *pg_put_l2(struct pg_thread *t, struct pg_dev *pd, struct sk_buff *skb,
		     const struct pg_pkt *pk, u8 *start)
{
	u16 proto = pk->ipv6 ? ETH_P_IPV6 : ETH_P_IP;
	unsigned int i;
	u8 *p;

	if (is_zero_ether_addr(pd->src_mac))
		pg_mac_add(start + ETH_ALEN, pd->odev->dev_addr, pd->cur_src_mac_offset);
	else
		pg_mac_add(start + ETH_ALEN, pd->src_mac, pd->cur_src_mac_offset);
	pg_mac_add(start, pd->dst_mac, pd->cur_dst_mac_offset);
	p = start + 2 * ETH_ALEN;
	if (pk->svlan) {
		p = pg_put16(p, ETH_P_8021AD);
		p = pg_put16(p, (u16)((pd->svlan_p << 13) | (pd->svlan_cfi << 12) |
				      (pd->cur_svlan_id & 0xfff)));
	}
	if (pk->vlan) {
		p = pg_put16(p, ETH_P_8021Q);
		p = pg_put16(p, (u16)((pd->vlan_p << 13) | (pd->vlan_cfi << 12) |
				      (pd->cur_vlan_id & 0xfff)));
	}
	p = pg_put16(p, pd->nr_labels ? ETH_P_MPLS_UC : proto);
	for (i = 0; i < pd->nr_labels; i++) {
		u32 lse = pd->labels[i] & ~0x100U;

		if (pg_dev_has_flag(pd, PGF_MPLS_RND) && (pd->labels[i] & 0x100))
			lse = (lse & 0xfff) | (prandom_u32_state(&t->rnd) << 12);
		if (i + 1 == pd->nr_labels)
			lse |= 0x100;	/* bottom of stack */
		put_unaligned_be32(lse, p);
		p += 4;
	}
	skb->protocol = htons(pk->svlan ? ETH_P_8021AD : pk->vlan ? ETH_P_8021Q :
			      pd->nr_labels ? ETH_P_MPLS_UC : proto);
	return p;
}

/* The IPv4 or IPv6 header at p; returns the L4 start. */
static u8 *pg_put_l3(struct pg_dev *pd, struct sk_buff *skb, const struct pg_pkt *pk,
		     u8 *p)
{
	skb_set_network_header(skb, (int)(p - skb->data));
	if (pk->ipv6) {
		struct ipv6hdr *ip6 = (struct ipv6hdr *)p;

		ip6_flow_hdr(ip6, pd->traffic_class, 0);
		ip6->payload_len = htons((u16)(sizeof(struct udphdr) + pk->datalen));
		ip6->nexthdr = IPPROTO_UDP;
		ip6->hop_limit = 32;
		ip6->saddr = pd->cur_in6_saddr;
		ip6->daddr = pd->cur_in6_daddr;
	} else {
		struct iphdr *iph = (struct iphdr *)p;

		iph->version = 4;
		iph->ihl = 5;
		iph->tos = pd->tos;
		iph->tot_len = htons((u16)(pk->l3len + sizeof(struct udphdr) + pk->datalen));
		iph->id = htons(pd->ip_id++);
		iph->frag_off = 0;
		iph->ttl = 32;
		iph->protocol = IPPROTO_UDP;
		iph->saddr = htonl(pk->saddr);
		iph->daddr = htonl(pk->daddr);
		iph->check = 0;
		iph->check = ip_fast_csum((u8 *)iph, iph->ihl);
	}
	return p + pk->l3len;
}

/* UDP header, test header and zero padding to the end of the head at `end`. */
static struct udphdr *pg_put_l4(struct pg_dev *pd, struct sk_buff *skb,
				const struct pg_pkt *pk, u8 *p, u8 *end, u64 mono)
{
	struct udphdr *uh = (struct udphdr *)p;

	skb_set_transport_header(skb, (int)(p - skb->data));
	uh->source = htons(pk->sport);
	uh->dest = htons(pk->dport);
	uh->len = htons((u16)(sizeof(struct udphdr) + pk->datalen));
	uh->check = 0;
	p += sizeof(struct udphdr);
	pg_write_header(pd, p, mono);
	p += PG_HDR_LEN;
	memset(p, 0, end - p);
	return uh;
}

/* The rest of the payload in page fragments of one shared zero page. */
static void pg_put_frags(struct pg_dev *pd, struct sk_buff *skb, const struct pg_pkt *pk)
{
	unsigned int i;

	for (i = 0; i < pk->nfrags; i++) {
		unsigned int flen = pk->frag_total / pk->nfrags +
				    (i < pk->frag_total % pk->nfrags ? 1 : 0);

		get_page(pd->frag_page);
		pg_skb_add_frag(skb, (int)i, pd->frag_page, 0, flen);
		skb->len += flen;
		skb->data_len += flen;
		skb->truesize += flen;
	}
}

/* flag UDPCSUM: the UDP checksum over the whole datagram, fragments included. */
static void pg_udp_csum(struct pg_dev *pd, struct sk_buff *skb, const struct pg_pkt *pk,
			struct udphdr *uh)
{
	int thoff = skb_transport_offset(skb);
	unsigned int ulen = skb->len - thoff;
	__wsum csum = skb_checksum(skb, thoff, (int)ulen, 0);

	if (pk->ipv6)
		uh->check = csum_ipv6_magic(&pd->cur_in6_saddr, &pd->cur_in6_daddr,
					    ulen, IPPROTO_UDP, csum);
	else
		uh->check = csum_tcpudp_magic(htonl(pk->saddr), htonl(pk->daddr), ulen,
					      IPPROTO_UDP, csum);
	if (!uh->check)
		uh->check = CSUM_MANGLED_0;
}

struct sk_buff *pg_build_skb(struct pg_thread *t, struct pg_dev *pd, u64 mono)
{
	struct pg_pkt pk = {};
	struct sk_buff *skb;
	struct udphdr *uh;
	u8 *p, *start;

	pk.ipv6 = pg_dev_has_flag(pd, PGF_IPV6);
	pk.vlan = pd->vlan_id <= 4095;
	pk.svlan = pk.vlan && pd->svlan_id <= 4095;
	pk.l3len = pk.ipv6 ? sizeof(struct ipv6hdr) : sizeof(struct iphdr);
	pg_pkt_vary(t, pd, &pk);
	pg_pkt_geometry(pd, &pk);

	skb = pg_alloc(pd, pk.linear);
	if (!skb)
		return NULL;
	start = skb_put(skb, pk.linear);
	skb_reset_mac_header(skb);
	p = pg_put_l2(t, pd, skb, &pk, start);
	p = pg_put_l3(pd, skb, &pk, p);
	uh = pg_put_l4(pd, skb, &pk, p, start + pk.linear, mono);
	pg_put_frags(pd, skb, &pk);
	if (pg_dev_has_flag(pd, PGF_UDPCSUM))
		pg_udp_csum(pd, skb, &pk, uh);
	skb->ip_summed = CHECKSUM_NONE;
	skb->dev = pd->odev;
	skb->priority = pd->skb_priority;
	skb_set_queue_mapping(skb, pk.queue);
	return skb;
}
