// SPDX-License-Identifier: GPL-2.0
/*
 * Per-device generator parameters: /proc/net/pktgen/<dev> command parser and
 * the Params/Current/Result read-out in upstream pktgen's format.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/slab.h>
#include <linux/seq_file.h>
#include <linux/etherdevice.h>
#include <linux/capability.h>
#include <linux/ktime.h>
#include <linux/nodemask.h>
#include "rfcpg.h"

static const char *const pg_flag_names[PGF_NR] = {
	[PGF_IPV6] = "IPV6",
	[PGF_IPSRC_RND] = "IPSRC_RND",
	[PGF_IPDST_RND] = "IPDST_RND",
	[PGF_TXSIZE_RND] = "TXSIZE_RND",
	[PGF_UDPSRC_RND] = "UDPSRC_RND",
	[PGF_UDPDST_RND] = "UDPDST_RND",
	[PGF_UDPCSUM] = "UDPCSUM",
	[PGF_NO_TIMESTAMP] = "NO_TIMESTAMP",
	[PGF_MPLS_RND] = "MPLS_RND",
	[PGF_QUEUE_MAP_RND] = "QUEUE_MAP_RND",
	[PGF_QUEUE_MAP_CPU] = "QUEUE_MAP_CPU",
	[PGF_FLOW_SEQ] = "FLOW_SEQ",
	[PGF_IPSEC] = "IPSEC",
	[PGF_MACSRC_RND] = "MACSRC_RND",
	[PGF_MACDST_RND] = "MACDST_RND",
	[PGF_VID_RND] = "VID_RND",
	[PGF_SVID_RND] = "SVID_RND",
	[PGF_NODE] = "NODE_ALLOC",
	[PGF_SHARED] = "SHARED",
	[PGF_UPSTREAM_HDR] = "UPSTREAM_HDR",
};

bool pg_dev_has_flag(const struct pg_dev *pd, enum pg_flag f)
{
	return test_bit(f, pd->flags);
}

struct pg_dev *pg_dev_alloc(struct pg_thread *t, struct net_device *odev,
			    const char *name)
{
	/* charged to the writer's memory cgroup: ~36 KiB a device */
	struct pg_dev *pd = kvzalloc(sizeof(*pd), GFP_KERNEL_ACCOUNT);

	if (!pd)
		return NULL;
	INIT_LIST_HEAD(&pd->list);
	INIT_LIST_HEAD(&pd->odev_node);
	mutex_init(&pd->cfg_lock);
	pd->thread = t;
	pd->odev = odev;
	strscpy(pd->name, name, sizeof(pd->name));
	pd->count = 1000;
	pd->min_pkt_size = 60;
	pd->max_pkt_size = 60;
	pd->cur_pkt_size = 60;
	pd->burst = 1;
	pd->burst_frames = 1;
	pd->dst_stride = 1;
	pd->node = NUMA_NO_NODE;
	pd->udp_src_min = 9;
	pd->udp_src_max = 9;
	pd->udp_dst_min = 9;
	pd->udp_dst_max = 9;
	pd->vlan_id = 0xffff;
	pd->svlan_id = 0xffff;
	pd->seq_num = 1;
	strscpy(pd->result, "Idle", sizeof(pd->result));	/* as upstream */
	return pd;
}

/* The device must already be off its thread's list. */
void pg_dev_free(struct pg_dev *pd)
{
	pg_untrack_dev(pd);
	proc_remove(pd->proc);	/* waits for readers/writers in flight */
	pg_dev_release_run(pd);
	kvfree(pd->flows);
	dev_put(pd->odev);
	kvfree(pd);
}

/* ---- read-out ---- */

static void pg_show_flags(struct seq_file *m, const struct pg_dev *pd)
{
	int i;

	seq_puts(m, "     Flags: ");
	for (i = 0; i < PGF_NR; i++) {
		/* as upstream: flow selection is shown only with flows */
		if (i == PGF_FLOW_SEQ && !pd->nflows)
			continue;
		if (test_bit(i, pd->flags))
			seq_printf(m, "%s  ", pg_flag_names[i]);
		else if (i == PGF_FLOW_SEQ)
			seq_puts(m, "FLOW_RND  ");
	}
	seq_puts(m, "\n");
}

static void pg_show_ip4(struct seq_file *m, const char *label, bool have, u32 a)
{
	__be32 be = htonl(a);

	if (have)
		seq_printf(m, "%s%pI4", label, &be);
	else
		seq_puts(m, label);
}

/* Params: sizes, timing, flows, queues. */
static void pg_show_params(struct seq_file *m, const struct pg_dev *pd)
{
	u32 i;

	seq_printf(m, "Params: count %llu  min_pkt_size: %u  max_pkt_size: %u\n",
		   pd->count, pd->min_pkt_size, pd->max_pkt_size);
	if (pd->n_imix) {
		seq_puts(m, "     imix_weights: ");
		for (i = 0; i < pd->n_imix; i++)
			seq_printf(m, "%u,%u ", pd->imix[i].size, pd->imix[i].weight);
		seq_puts(m, "\n");
	}
	seq_printf(m, "     frags: %u  delay: %llu  clone_skb: %u  ifname: %s\n",
		   pd->nfrags, pd->delay == PG_DELAY_PAUSE ? 2147483647ULL : pd->delay,
		   pd->clone_skb, pd->name);
	seq_printf(m, "     flows: %u flowlen: %u\n", pd->nflows, pd->flowlen);
	seq_printf(m, "     queue_map_min: %u  queue_map_max: %u\n",
		   pd->queue_map_min, pd->queue_map_max);
	if (pd->skb_priority)
		seq_printf(m, "     skb_priority: %u\n", pd->skb_priority);
	if (pd->spi)
		seq_printf(m, "     spi: %u\n", pd->spi);
}

/* Params: addresses, MACs, ports. */
static void pg_show_addrs(struct seq_file *m, const struct pg_dev *pd)
{
	const u8 *src_mac;

	if (pg_dev_has_flag(pd, PGF_IPV6)) {
		/* min/max_saddr: ours (src6_min/src6_max); :: until written, as upstream */
		seq_printf(m, "     saddr: %pI6c  min_saddr: %pI6c  max_saddr: %pI6c\n",
			   &pd->in6_saddr, &pd->min_in6_saddr, &pd->max_in6_saddr);
		seq_printf(m, "     daddr: %pI6c  min_daddr: %pI6c  max_daddr: %pI6c\n",
			   &pd->in6_daddr, &pd->min_in6_daddr, &pd->max_in6_daddr);
	} else {
		pg_show_ip4(m, "     dst_min: ", pd->have_dst_min, pd->daddr_min);
		pg_show_ip4(m, "  dst_max: ", pd->have_dst_max, pd->daddr_max);
		seq_puts(m, "\n");
		pg_show_ip4(m, "     src_min: ", pd->have_src_min, pd->saddr_min);
		pg_show_ip4(m, "  src_max: ", pd->have_src_max, pd->saddr_max);
		seq_puts(m, "\n");
	}
	src_mac = is_zero_ether_addr(pd->src_mac) ? pd->odev->dev_addr : pd->src_mac;
	seq_printf(m, "     src_mac: %pM dst_mac: %pM\n", src_mac, pd->dst_mac);
	seq_printf(m, "     udp_src_min: %u  udp_src_max: %u  udp_dst_min: %u  udp_dst_max: %u\n",
		   pd->udp_src_min, pd->udp_src_max, pd->udp_dst_min, pd->udp_dst_max);
	seq_printf(m, "     src_mac_count: %u  dst_mac_count: %u\n",
		   pd->src_mac_count, pd->dst_mac_count);
}

/* Params: tags, marks, transmit mode and flags. */
static void pg_show_tags_mode(struct seq_file *m, const struct pg_dev *pd)
{
	u32 i;

	if (pd->nr_labels) {
		seq_puts(m, "     mpls: ");
		for (i = 0; i < pd->nr_labels; i++)
			seq_printf(m, "%08x%s", pd->labels[i],
				   i + 1 == pd->nr_labels ? "\n" : ", ");
	}
	if (pd->vlan_id <= 4095)
		seq_printf(m, "     vlan_id: %u  vlan_p: %u  vlan_cfi: %u\n",
			   pd->vlan_id, pd->vlan_p, pd->vlan_cfi);
	if (pd->svlan_id <= 4095)
		seq_printf(m, "     svlan_id: %u  vlan_p: %u  vlan_cfi: %u\n",
			   pd->svlan_id, pd->svlan_p, pd->svlan_cfi);
	if (pd->tos)
		seq_printf(m, "     tos: 0x%02x\n", pd->tos);
	if (pd->traffic_class)
		seq_printf(m, "     traffic_class: 0x%02x\n", pd->traffic_class);
	if (pd->burst > 1)
		seq_printf(m, "     burst: %u\n", pd->burst);
	if (pd->burst_frames > 1)
		seq_printf(m, "     burst_frames: %u\n", pd->burst_frames);
	if (pd->dst_stride > 1)
		seq_printf(m, "     dst_stride: %u\n", pd->dst_stride);
	if (pd->stream_id)
		seq_printf(m, "     stream_id: %u\n", pd->stream_id);
	if (pd->node >= 0)
		seq_printf(m, "     node: %d\n", pd->node);
	if (pd->xmit_mode == PG_XMIT_NETIF_RECEIVE)
		seq_puts(m, "     xmit_mode: netif_receive\n");
	else if (pd->xmit_mode == PG_XMIT_QUEUE)
		seq_puts(m, "     xmit_mode: xmit_queue\n");
	pg_show_flags(m, pd);
}

/* Current: the run's counters and the last values used. */
static void pg_show_current(struct seq_file *m, const struct pg_dev *pd)
{
	u64 stopped;
	u32 i;

	stopped = READ_ONCE(pd->running) ? ktime_to_us(ktime_get()) :
		  ktime_to_us(pd->stopped_at);
	seq_puts(m, "Current:\n");
	seq_printf(m, "     pkts-sofar: %llu  errors: %llu  tx_dropped: %llu\n",
		   pd->sofar, pd->errors, pd->tx_dropped);
	seq_printf(m, "     started: %lluus  stopped: %lluus idle: %lluus\n",
		   (u64)ktime_to_us(pd->started_at), stopped, pd->idle_acc / NSEC_PER_USEC);
	seq_printf(m, "     seq_num: %u  cur_dst_mac_offset: %u  cur_src_mac_offset: %u\n",
		   pd->seq_num, pd->cur_dst_mac_offset, pd->cur_src_mac_offset);
	if (pg_dev_has_flag(pd, PGF_IPV6)) {
		seq_printf(m, "     cur_saddr: %pI6c  cur_daddr: %pI6c\n",
			   &pd->cur_in6_saddr, &pd->cur_in6_daddr);
	} else {
		__be32 s = htonl(pd->cur_saddr), d = htonl(pd->cur_daddr);

		seq_printf(m, "     cur_saddr: %pI4  cur_daddr: %pI4\n", &s, &d);
	}
	seq_printf(m, "     cur_udp_dst: %u  cur_udp_src: %u\n",
		   pd->cur_udp_dst, pd->cur_udp_src);
	seq_printf(m, "     cur_queue_map: %u\n", pd->cur_queue_map);
	seq_printf(m, "     flows: %u\n", pd->nflows);
	if (pd->n_imix) {
		seq_puts(m, "     imix_size_counts: ");
		for (i = 0; i < pd->n_imix; i++)
			seq_printf(m, "%u,%llu ", pd->imix[i].size, pd->imix_counts[i]);
		seq_puts(m, "\n");
	}
}

static int pg_dev_show(struct seq_file *m, void *v)
{
	struct pg_dev *pd = m->private;

	mutex_lock(&pd->cfg_lock);
	pg_show_params(m, pd);
	pg_show_addrs(m, pd);
	pg_show_tags_mode(m, pd);
	pg_show_current(m, pd);
	pg_dep_show(m, &pd->dep, pg_nominal_gap(pd->delay));
	seq_printf(m, "Result: %s\n", pd->result);
	mutex_unlock(&pd->cfg_lock);
	return 0;
}

static int pg_dev_open(struct inode *inode, struct file *file)
{
	return single_open(file, pg_dev_show, pde_data(inode));
}

/* ---- commands ---- */

#define PG_CMD_LIVE	1	/* may change a running device */
#define PG_VARARGS	(-1)

struct pg_cmd {
	const char *name;
	int nargs;
	unsigned int flags;
	int (*fn)(struct pg_dev *pd, int argc, char **argv);
};

static int pg_res(struct pg_dev *pd, int err, const char *fmt, ...) __printf(3, 4);
static int pg_res(struct pg_dev *pd, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vscnprintf(pd->result, sizeof(pd->result), fmt, ap);
	va_end(ap);
	return err;
}

static int pg_bad(struct pg_dev *pd, char **argv, const char *want)
{
	return pg_res(pd, -EINVAL, "ERROR: %s: bad value \"%.64s\" (%s)",
		      argv[0], argv[1], want);
}

static u32 pg_clamp_size(u32 v)
{
	return v < PG_MIN_PKT_SIZE ? PG_MIN_PKT_SIZE : v;
}

static int pg_cmd_count(struct pg_dev *pd, int argc, char **argv)
{
	u64 v;

	if (pg_parse_u64(argv[1], &v))
		return pg_bad(pd, argv, "decimal packet count, 0 = forever");
	pd->count = v;
	return pg_res(pd, 0, "OK: count=%llu", v);
}

static int pg_cmd_sizes(struct pg_dev *pd, int argc, char **argv)
{
	u32 v;

	if (pg_parse_u32(argv[1], &v, PG_MAX_PKT_SIZE))
		return pg_bad(pd, argv, "decimal frame size without FCS, up to 65535");
	v = pg_clamp_size(v);
	if (!strcmp(argv[0], "pkt_size")) {
		pd->min_pkt_size = v;
		pd->max_pkt_size = v;
	} else if (!strcmp(argv[0], "min_pkt_size")) {
		pd->min_pkt_size = v;
	} else {
		pd->max_pkt_size = v;
	}
	pd->cur_pkt_size = pd->min_pkt_size;
	pd->n_imix = 0;
	return pg_res(pd, 0, "OK: %s=%u", argv[0], v);
}

static int pg_cmd_imix(struct pg_dev *pd, int argc, char **argv)
{
	struct pg_imix imix[PG_MAX_IMIX];
	u32 total = 0;
	int i, n = argc - 1;

	if (n > PG_MAX_IMIX)
		return pg_res(pd, -E2BIG, "ERROR: imix_weights: at most %d entries",
			      PG_MAX_IMIX);
	if (pd->clone_skb)
		return pg_res(pd, -EINVAL, "ERROR: imix_weights needs clone_skb 0");
	for (i = 0; i < n; i++) {
		char *comma = strchr(argv[i + 1], ',');

		if (!comma)
			goto bad;
		*comma = '\0';
		if (pg_parse_u32(argv[i + 1], &imix[i].size, PG_MAX_PKT_SIZE) ||
		    pg_parse_u32(comma + 1, &imix[i].weight, 1000000))
			goto bad;
		total += imix[i].weight;
	}
	if (!total)
		return pg_res(pd, -EINVAL, "ERROR: imix_weights: weights sum to 0");
	memcpy(pd->imix, imix, sizeof(imix[0]) * n);
	memset(pd->imix_counts, 0, sizeof(pd->imix_counts));
	pd->n_imix = n;
	pd->imix_total = total;
	return pg_res(pd, 0, "OK: imix_weights (%d entries)", n);
bad:
	return pg_res(pd, -EINVAL,
		      "ERROR: imix_weights: expected SIZE,WEIGHT pairs (decimal)");
}

static int pg_cmd_u32_field(struct pg_dev *pd, char **argv, u32 *field, u32 max,
			    const char *want)
{
	u32 v;

	if (pg_parse_u32(argv[1], &v, max))
		return pg_bad(pd, argv, want);
	*field = v;
	return pg_res(pd, 0, "OK: %s=%u", argv[0], v);
}

static int pg_cmd_debug(struct pg_dev *pd, int argc, char **argv)
{
	u32 v;

	if (pg_parse_u32(argv[1], &v, U32_MAX))
		return pg_bad(pd, argv, "decimal");
	pd->debug = v != 0;
	return pg_res(pd, 0, "OK: debug=%u", v);
}

static int pg_cmd_frags(struct pg_dev *pd, int argc, char **argv)
{
	return pg_cmd_u32_field(pd, argv, &pd->nfrags, U32_MAX, "decimal");
}

/* Delay changes reach a running device at its next packet. */
static void pg_set_delay(struct pg_dev *pd, u64 ns)
{
	WRITE_ONCE(pd->delay, ns);
	if (READ_ONCE(pd->running)) {
		WRITE_ONCE(pd->resched, true);
		wake_up_process(pd->thread->task);
	}
}

static int pg_cmd_delay(struct pg_dev *pd, int argc, char **argv)
{
	u64 v;

	if (pg_parse_u64(argv[1], &v))
		return pg_bad(pd, argv, "decimal nanoseconds");
	pg_set_delay(pd, v == 2147483647ULL ? PG_DELAY_PAUSE : v);
	return pg_res(pd, 0, "OK: delay=%llu", v);
}

static int pg_cmd_rate(struct pg_dev *pd, int argc, char **argv)
{
	char *s = argv[1];
	size_t len = strlen(s);
	u32 v;

	if (len > 1 && (s[len - 1] == 'M' || s[len - 1] == 'm'))
		s[len - 1] = '\0';	/* "rate 300M" as in the upstream docs */
	if (pg_parse_u32(s, &v, U32_MAX) || !v)
		return pg_bad(pd, argv, "Mb/s, decimal, > 0");
	pg_set_delay(pd, div_u64((u64)pd->min_pkt_size * 8 * NSEC_PER_USEC, v));
	return pg_res(pd, 0, "OK: rate=%u", v);
}

static int pg_cmd_ratep(struct pg_dev *pd, int argc, char **argv)
{
	u32 v;

	if (pg_parse_u32(argv[1], &v, U32_MAX) || !v)
		return pg_bad(pd, argv, "packets/s, decimal, > 0");
	pg_set_delay(pd, div_u64(NSEC_PER_SEC, v));
	return pg_res(pd, 0, "OK: ratep=%u", v);
}

static int pg_cmd_udp(struct pg_dev *pd, int argc, char **argv)
{
	u32 v;

	if (pg_parse_u32(argv[1], &v, 65535))
		return pg_bad(pd, argv, "port 0..65535");
	if (!strcmp(argv[0], "udp_src_min")) {
		pd->udp_src_min = (u16)v;
		pd->cur_udp_src = (u16)v;
	} else if (!strcmp(argv[0], "udp_src_max")) {
		pd->udp_src_max = (u16)v;
	} else if (!strcmp(argv[0], "udp_dst_min")) {
		pd->udp_dst_min = (u16)v;
		pd->cur_udp_dst = (u16)v;
	} else {
		pd->udp_dst_max = (u16)v;
	}
	return pg_res(pd, 0, "OK: %s=%u", argv[0], v);
}

static bool pg_can_share(const struct pg_dev *pd)
{
	return pd->odev->priv_flags & IFF_TX_SKB_SHARING;
}

static int pg_cmd_clone_skb(struct pg_dev *pd, int argc, char **argv)
{
	u32 v;

	if (pg_parse_u32(argv[1], &v, U32_MAX))
		return pg_bad(pd, argv, "decimal");
	if (v && !pg_can_share(pd))
		return pg_res(pd, -EOPNOTSUPP,
			      "ERROR: clone_skb not supported by %s (no IFF_TX_SKB_SHARING)",
			      pd->odev->name);
	if (v && pd->xmit_mode == PG_XMIT_NETIF_RECEIVE)
		return pg_res(pd, -EOPNOTSUPP,
			      "ERROR: clone_skb not supported with xmit_mode netif_receive");
	/* dev_queue_xmit() may hold or change the skb: it cannot be resent */
	if (v && pd->xmit_mode == PG_XMIT_QUEUE)
		return pg_res(pd, -EOPNOTSUPP,
			      "ERROR: clone_skb not supported with xmit_mode queue_xmit");
	if (v && pd->n_imix)
		return pg_res(pd, -EINVAL, "ERROR: clone_skb must be 0 with imix_weights");
	pd->clone_skb = v;
	return pg_res(pd, 0, "OK: clone_skb=%u", v);
}

static int pg_cmd_burst(struct pg_dev *pd, int argc, char **argv)
{
	u32 v;

	if (pg_parse_u32(argv[1], &v, 65536))
		return pg_bad(pd, argv, "decimal, up to 65536");
	if (!v)
		v = 1;
	if (v > 1 && pd->xmit_mode == PG_XMIT_QUEUE)
		return pg_res(pd, -EOPNOTSUPP,
			      "ERROR: burst not supported with xmit_mode queue_xmit");
	if (v > 1 && pd->xmit_mode == PG_XMIT_START && !pg_can_share(pd))
		return pg_res(pd, -EOPNOTSUPP,
			      "ERROR: burst not supported by %s (no IFF_TX_SKB_SHARING)",
			      pd->odev->name);
	pd->burst = v;
	return pg_res(pd, 0, "OK: burst=%u", v);
}

/*
 * Ours, not upstream's: bursty traffic (RFC 2544 section 21) on any device.
 * N distinct frames, each built as usual (its own sequence number and
 * timestamp), leave back to back; the next burst starts N gaps of `delay`
 * after this one started, so the mean rate stays the one set. Unlike
 * `burst`, no skb is shared: veth and queue_xmit can do it too.
 */
static int pg_cmd_burst_frames(struct pg_dev *pd, int argc, char **argv)
{
	u32 v;

	if (pg_parse_u32(argv[1], &v, 65536))
		return pg_bad(pd, argv, "decimal, up to 65536");
	pd->burst_frames = max(v, 1U);
	return pg_res(pd, 0, "OK: burst_frames=%u", pd->burst_frames);
}

/*
 * Ours, not upstream's: `dst_stride N` makes the IPv4 destination range
 * dst_min, dst_min + N, ... up to dst_max, stepped or drawn (IPDST_RND) as
 * the range is. With N = 256 and the same host part in dst_min and dst_max,
 * every frame goes to one address in one of the /24 networks between them
 * (RFC 2544 section 12's traffic to 256 networks), never to a network's
 * other addresses. 1 (the default) is every address.
 */
static int pg_cmd_dst_stride(struct pg_dev *pd, int argc, char **argv)
{
	u32 v;

	if (pg_parse_u32(argv[1], &v, 1U << 24))
		return pg_bad(pd, argv, "decimal, up to 16777216");
	pd->dst_stride = max(v, 1U);
	return pg_res(pd, 0, "OK: dst_stride=%u", pd->dst_stride);
}

/*
 * Ours, not upstream's: `stream_id N` (1..65535) puts N in every test
 * header (magic PG_MAGIC_SID), so pgrx counts the stream by N however its
 * addresses and ports vary. 0 (the default): no id, the source address
 * identifies the stream. Ignored with UPSTREAM_HDR (the in-tree format).
 */
static int pg_cmd_stream_id(struct pg_dev *pd, int argc, char **argv)
{
	u32 v;

	if (pg_parse_u32(argv[1], &v, U16_MAX))
		return pg_bad(pd, argv, "decimal, 0 (none) or up to 65535");
	pd->stream_id = (u16)v;
	return pg_res(pd, 0, "OK: stream_id=%u", v);
}

static int pg_cmd_node(struct pg_dev *pd, int argc, char **argv)
{
	u32 v;

	if (pg_parse_u32(argv[1], &v, MAX_NUMNODES > 1 ? 65535 : 65535))
		return pg_bad(pd, argv, "NUMA node number");
	if (v < MAX_NUMNODES && node_possible((int)v)) {
		pd->node = (int)v;
		return pg_res(pd, 0, "OK: node=%u", v);
	}
	/* upstream accepts an impossible node and keeps allocating anywhere */
	pd->node = NUMA_NO_NODE;
	return pg_res(pd, 0, "OK: node=%u (not a possible node: ignored)", v);
}

static int pg_cmd_xmit_mode(struct pg_dev *pd, int argc, char **argv)
{
	if (!strcmp(argv[1], "start_xmit")) {
		if (pd->burst > 1 && !pg_can_share(pd))
			return pg_res(pd, -EOPNOTSUPP, "ERROR: set burst 1 first");
		pd->xmit_mode = PG_XMIT_START;
	} else if (!strcmp(argv[1], "netif_receive")) {
		if (pd->clone_skb)
			return pg_res(pd, -EOPNOTSUPP,
				      "ERROR: netif_receive needs clone_skb 0");
		pd->xmit_mode = PG_XMIT_NETIF_RECEIVE;
	} else if (!strcmp(argv[1], "queue_xmit")) {
		if (pd->burst > 1)
			return pg_res(pd, -EOPNOTSUPP,
				      "ERROR: queue_xmit needs burst 1");
		if (pd->clone_skb)
			return pg_res(pd, -EOPNOTSUPP,
				      "ERROR: queue_xmit needs clone_skb 0");
		pd->xmit_mode = PG_XMIT_QUEUE;
	} else {
		/* upstream (its kselftest): accepted, Result names it, no change */
		return pg_res(pd, 0,
			      "xmit_mode -:%.32s:- unknown\nAvailable modes: start_xmit, netif_receive, queue_xmit",
			      argv[1]);
	}
	return pg_res(pd, 0, "OK: xmit_mode=%s", argv[1]);
}

static int pg_cmd_flag(struct pg_dev *pd, int argc, char **argv)
{
	const char *name = argv[1];
	bool clear = false;
	int i;

	if (*name == '!') {
		clear = true;
		name++;
	}
	for (i = 0; i < PGF_NR; i++)
		if (!strcmp(name, pg_flag_names[i]))
			break;
	if (i == PGF_NR && !strcmp(name, "NODE"))
		i = PGF_NODE;	/* short alias */
	if (i == PGF_NR && !strcmp(name, "FLOW_RND")) {
		/* upstream: random flow selection is FLOW_SEQ off */
		clear_bit(PGF_FLOW_SEQ, pd->flags);
		if (clear)
			set_bit(PGF_FLOW_SEQ, pd->flags);
		return pg_res(pd, 0, "OK: flags=%sFLOW_RND", clear ? "!" : "");
	}
	/* upstream (its kselftest): accepted, Result names it, no change */
	if (i == PGF_NR)
		return pg_res(pd, 0,
			      "Flag -:%.32s:- unknown\nAvailable flags, (prepend ! to un-set flag):\n"
			      "IPV6, IPSRC_RND, IPDST_RND, TXSIZE_RND, UDPSRC_RND, UDPDST_RND, UDPCSUM, "
			      "NO_TIMESTAMP, MPLS_RND, QUEUE_MAP_RND, QUEUE_MAP_CPU, FLOW_SEQ, FLOW_RND, MACSRC_RND, "
			      "MACDST_RND, VID_RND, SVID_RND, NODE_ALLOC, SHARED, UPSTREAM_HDR", name);
	if (i == PGF_IPSEC && !clear)
		return pg_res(pd, -EOPNOTSUPP, "ERROR: IPSEC is not supported by " PG_MODNAME);
	if (clear)
		clear_bit(i, pd->flags);
	else
		set_bit(i, pd->flags);
	return pg_res(pd, 0, "OK: flags=%s%s", clear ? "!" : "", pg_flag_names[i]);
}

static int pg_cmd_ip4(struct pg_dev *pd, int argc, char **argv)
{
	u32 a;

	if (pg_parse_ip4(argv[1], &a))
		return pg_bad(pd, argv, "dotted IPv4 address");
	if (!strcmp(argv[0], "dst") || !strcmp(argv[0], "dst_min")) {
		pd->daddr_min = a;
		pd->have_dst_min = true;
		pd->cur_daddr = a;
	} else if (!strcmp(argv[0], "dst_max")) {
		pd->daddr_max = a;
		pd->have_dst_max = true;
	} else if (!strcmp(argv[0], "src_min")) {
		pd->saddr_min = a;
		pd->have_src_min = true;
		pd->cur_saddr = a;
	} else {
		pd->saddr_max = a;
		pd->have_src_max = true;
	}
	return pg_res(pd, 0, "OK: %s=%s", argv[0], argv[1]);
}

static int pg_cmd_ip6(struct pg_dev *pd, int argc, char **argv)
{
	struct in6_addr a;

	if (pg_parse_ip6(argv[1], &a))
		return pg_bad(pd, argv, "IPv6 address");
	if (!strcmp(argv[0], "dst6")) {
		pd->in6_daddr = a;
		pd->cur_in6_daddr = a;
	} else if (!strcmp(argv[0], "dst6_min")) {
		pd->min_in6_daddr = a;
		pd->cur_in6_daddr = a;
	} else if (!strcmp(argv[0], "dst6_max")) {
		pd->max_in6_daddr = a;
	} else if (!strcmp(argv[0], "src6_min")) {
		pd->min_in6_saddr = a;
	} else if (!strcmp(argv[0], "src6_max")) {
		pd->max_in6_saddr = a;
	} else {
		pd->in6_saddr = a;
		pd->cur_in6_saddr = a;
	}
	set_bit(PGF_IPV6, pd->flags);
	return pg_res(pd, 0, "OK: %s=%pI6c", argv[0], &a);
}

static int pg_cmd_mac(struct pg_dev *pd, int argc, char **argv)
{
	u8 mac[ETH_ALEN];

	if (pg_parse_mac(argv[1], mac))
		return pg_bad(pd, argv, "MAC xx:xx:xx:xx:xx:xx");
	if (!strcmp(argv[0], "dst_mac")) {
		ether_addr_copy(pd->dst_mac, mac);
	} else {
		ether_addr_copy(pd->src_mac, mac);
		pd->src_mac_set = true;
	}
	return pg_res(pd, 0, "OK: %s %pM", argv[0], mac);
}

static int pg_cmd_mac_count(struct pg_dev *pd, int argc, char **argv)
{
	if (!strcmp(argv[0], "src_mac_count"))
		return pg_cmd_u32_field(pd, argv, &pd->src_mac_count, U32_MAX, "decimal");
	return pg_cmd_u32_field(pd, argv, &pd->dst_mac_count, U32_MAX, "decimal");
}

static int pg_cmd_clear_counters(struct pg_dev *pd, int argc, char **argv)
{
	WRITE_ONCE(pd->sofar, 0);
	WRITE_ONCE(pd->errors, 0);
	WRITE_ONCE(pd->tx_dropped, 0);
	WRITE_ONCE(pd->tx_bytes, 0);
	WRITE_ONCE(pd->idle_acc, 0);
	if (!READ_ONCE(pd->running)) {
		pd->seq_num = 1;
		pg_dep_reset(&pd->dep, 0);
	} else {
		WRITE_ONCE(pd->dep_clear, true);	/* the thread owns dep */
	}
	return pg_res(pd, 0, "OK: Clearing counters.");
}

/*
 * The flow table is allocated here, in the writer's context and charged to
 * its memory cgroup (up to 768 KiB), not by the thread at start; the
 * thread only clears it (pg_dev_prepare). Not while running: the thread
 * reads it then.
 */
static int pg_cmd_flows(struct pg_dev *pd, int argc, char **argv)
{
	struct pg_flow *flows = NULL;
	u32 v;

	if (pg_parse_u32(argv[1], &v, PG_MAX_FLOWS))
		return pg_bad(pd, argv, "decimal, at most 65536");
	if (v) {
		flows = kvcalloc(v, sizeof(*flows), GFP_KERNEL_ACCOUNT);
		if (!flows)
			return pg_res(pd, -ENOMEM, "ERROR: flows: no memory for %u flows", v);
	}
	kvfree(pd->flows);
	pd->flows = flows;
	pd->nflows = v;
	return pg_res(pd, 0, "OK: %s=%u", argv[0], v);
}

static int pg_cmd_flowlen(struct pg_dev *pd, int argc, char **argv)
{
	return pg_cmd_u32_field(pd, argv, &pd->flowlen, U32_MAX, "decimal");
}

static int pg_cmd_queue_map(struct pg_dev *pd, int argc, char **argv)
{
	u32 v;

	if (pg_parse_u32(argv[1], &v, 65535))
		return pg_bad(pd, argv, "queue 0..65535");
	if (!strcmp(argv[0], "queue_map_min"))
		pd->queue_map_min = (u16)v;
	else
		pd->queue_map_max = (u16)v;
	return pg_res(pd, 0, "OK: %s=%u", argv[0], v);
}

static int pg_cmd_mpls(struct pg_dev *pd, int argc, char **argv)
{
	u32 labels[PG_MAX_MPLS];
	char *p = argv[1], *comma;
	u32 n = 0;

	for (;;) {
		comma = strchr(p, ',');
		if (comma)
			*comma = '\0';
		if (n == PG_MAX_MPLS)
			return pg_res(pd, -E2BIG, "ERROR: mpls: at most %d labels",
				      PG_MAX_MPLS);
		if (pg_parse_hex(p, &labels[n], 8))
			return pg_res(pd, -EINVAL,
				      "ERROR: mpls: labels are up to 8 hex digits, comma separated");
		n++;
		if (!comma)
			break;
		p = comma + 1;
	}
	if (n == 1 && labels[0] == 0) {
		pd->nr_labels = 0;	/* "mpls 0": off */
		return pg_res(pd, 0, "OK: mpls off");
	}
	memcpy(pd->labels, labels, n * sizeof(labels[0]));
	pd->nr_labels = n;
	return pg_res(pd, 0, "OK: mpls_count=%u", n);
}

static int pg_cmd_vlan(struct pg_dev *pd, int argc, char **argv)
{
	bool svlan = argv[0][0] == 's';
	const char *what = argv[0] + (svlan ? 6 : 5);	/* id, p, cfi */
	u32 v;

	if (pg_parse_u32(argv[1], &v, U32_MAX))
		return pg_bad(pd, argv, "decimal");
	if (!strcmp(what, "id")) {
		if (v > 4095) {
			/* out of range removes the tag (vlan_id: both tags) */
			pd->svlan_id = 0xffff;
			if (!svlan)
				pd->vlan_id = 0xffff;
			return pg_res(pd, 0, "OK: %s tag removed", argv[0]);
		}
		if (svlan)
			pd->svlan_id = (u16)v;
		else
			pd->vlan_id = (u16)v;
	} else if (!strcmp(what, "p")) {
		if (v > 7)
			return pg_bad(pd, argv, "priority 0..7");
		if (svlan)
			pd->svlan_p = (u8)v;
		else
			pd->vlan_p = (u8)v;
	} else {
		if (v > 1)
			return pg_bad(pd, argv, "0 or 1");
		if (svlan)
			pd->svlan_cfi = (u8)v;
		else
			pd->vlan_cfi = (u8)v;
	}
	return pg_res(pd, 0, "OK: %s=%u", argv[0], v);
}

static int pg_cmd_tos(struct pg_dev *pd, int argc, char **argv)
{
	u32 v;

	if (pg_parse_hex(argv[1], &v, 8) || v > 0xff)
		return pg_bad(pd, argv, "hex 00..ff");
	if (!strcmp(argv[0], "tos"))
		pd->tos = (u8)v;
	else
		pd->traffic_class = (u8)v;
	return pg_res(pd, 0, "OK: %s=0x%02x", argv[0], v);
}

static int pg_cmd_skb_priority(struct pg_dev *pd, int argc, char **argv)
{
	return pg_cmd_u32_field(pd, argv, &pd->skb_priority, U32_MAX, "decimal");
}

/* Accepted and shown, as upstream; without IPsec (flag IPSEC) unused. */
static int pg_cmd_spi(struct pg_dev *pd, int argc, char **argv)
{
	return pg_cmd_u32_field(pd, argv, &pd->spi, U32_MAX, "decimal");
}

static const struct pg_cmd pg_cmds[] = {
	{ "count", 1, 0, pg_cmd_count },
	{ "pkt_size", 1, 0, pg_cmd_sizes },
	{ "min_pkt_size", 1, 0, pg_cmd_sizes },
	{ "max_pkt_size", 1, 0, pg_cmd_sizes },
	{ "imix_weights", PG_VARARGS, 0, pg_cmd_imix },
	{ "debug", 1, 0, pg_cmd_debug },
	{ "frags", 1, 0, pg_cmd_frags },
	{ "delay", 1, PG_CMD_LIVE, pg_cmd_delay },
	{ "rate", 1, PG_CMD_LIVE, pg_cmd_rate },
	{ "ratep", 1, PG_CMD_LIVE, pg_cmd_ratep },
	{ "udp_src_min", 1, 0, pg_cmd_udp },
	{ "udp_src_max", 1, 0, pg_cmd_udp },
	{ "udp_dst_min", 1, 0, pg_cmd_udp },
	{ "udp_dst_max", 1, 0, pg_cmd_udp },
	{ "clone_skb", 1, 0, pg_cmd_clone_skb },
	{ "burst", 1, 0, pg_cmd_burst },
	{ "burst_frames", 1, 0, pg_cmd_burst_frames },
	{ "dst_stride", 1, 0, pg_cmd_dst_stride },
	{ "stream_id", 1, 0, pg_cmd_stream_id },
	{ "node", 1, 0, pg_cmd_node },
	{ "xmit_mode", 1, 0, pg_cmd_xmit_mode },
	{ "flag", 1, 0, pg_cmd_flag },
	{ "dst", 1, 0, pg_cmd_ip4 },
	{ "dst_min", 1, 0, pg_cmd_ip4 },
	{ "dst_max", 1, 0, pg_cmd_ip4 },
	{ "src_min", 1, 0, pg_cmd_ip4 },
	{ "src_max", 1, 0, pg_cmd_ip4 },
	{ "dst6", 1, 0, pg_cmd_ip6 },
	{ "src6", 1, 0, pg_cmd_ip6 },
	{ "dst6_min", 1, 0, pg_cmd_ip6 },
	{ "dst6_max", 1, 0, pg_cmd_ip6 },
	{ "src6_min", 1, 0, pg_cmd_ip6 },
	{ "src6_max", 1, 0, pg_cmd_ip6 },
	{ "dst_mac", 1, 0, pg_cmd_mac },
	{ "src_mac", 1, 0, pg_cmd_mac },
	{ "src_mac_count", 1, 0, pg_cmd_mac_count },
	{ "dst_mac_count", 1, 0, pg_cmd_mac_count },
	{ "clear_counters", 0, PG_CMD_LIVE, pg_cmd_clear_counters },
	{ "flows", 1, 0, pg_cmd_flows },
	{ "flowlen", 1, 0, pg_cmd_flowlen },
	{ "queue_map_min", 1, 0, pg_cmd_queue_map },
	{ "queue_map_max", 1, 0, pg_cmd_queue_map },
	{ "mpls", 1, 0, pg_cmd_mpls },
	{ "vlan_id", 1, 0, pg_cmd_vlan },
	{ "vlan_p", 1, 0, pg_cmd_vlan },
	{ "vlan_cfi", 1, 0, pg_cmd_vlan },
	{ "svlan_id", 1, 0, pg_cmd_vlan },
	{ "svlan_p", 1, 0, pg_cmd_vlan },
	{ "svlan_cfi", 1, 0, pg_cmd_vlan },
	{ "tos", 1, 0, pg_cmd_tos },
	{ "traffic_class", 1, 0, pg_cmd_tos },
	{ "skb_priority", 1, 0, pg_cmd_skb_priority },
	{ "spi", 1, 0, pg_cmd_spi },
};

static int pg_dev_command(struct pg_dev *pd, int argc, char **argv)
{
	const struct pg_cmd *c = NULL;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(pg_cmds); i++)
		if (!strcmp(argv[0], pg_cmds[i].name)) {
			c = &pg_cmds[i];
			break;
		}
	if (!c)
		return pg_res(pd, -EINVAL, "No such parameter \"%.32s\"", argv[0]);
	/*
	 * A keyword without its value: upstream's kselftest expects the write
	 * to succeed (upstream reads the value as 0). We change nothing and
	 * say so in Result. Not imix_weights: an empty list is -EINVAL there.
	 */
	if (argc == 1 && c->nargs != 0 && c->nargs != PG_VARARGS)
		return pg_res(pd, 0, "ERROR: %s: missing value, nothing changed", c->name);
	if (c->nargs == PG_VARARGS ? argc < 2 : argc - 1 != c->nargs) {
		if (argc - 1 < c->nargs || c->nargs == PG_VARARGS)
			return pg_res(pd, -EINVAL, "ERROR: %s: missing value", c->name);
		return pg_res(pd, -EINVAL, "ERROR: %s: too many arguments", c->name);
	}
	if (READ_ONCE(pd->running) && !(c->flags & PG_CMD_LIVE))
		return pg_res(pd, -EBUSY,
			      "ERROR: %s is running; stop it before changing %s (only delay, rate, ratep, clear_counters apply while running)",
			      pd->name, c->name);
	return c->fn(pd, argc, argv);
}

static ssize_t pg_dev_write(struct file *file, const char __user *ubuf,
			    size_t count, loff_t *ppos)
{
	struct pg_dev *pd = ((struct seq_file *)file->private_data)->private;
	char *buf, *argv[PG_MAX_ARGS];
	int argc, err;

	if (!pg_may_write(file, pd->thread->pn))
		return -EPERM;
	buf = kmalloc(PG_MAX_WRITE, GFP_KERNEL_ACCOUNT);
	if (!buf)
		return -ENOMEM;
	argc = pg_get_args(ubuf, count, buf, argv, PG_MAX_ARGS);
	mutex_lock(&pd->cfg_lock);
	if (argc < 0) {
		err = pg_res(pd, argc, "ERROR: %s", pg_args_error(argc));
		goto out;
	}
	err = pg_dev_command(pd, argc, argv);
	if (pd->debug)
		pr_info("%s: %s -> %d\n", pd->name, argv[0], err);
out:
	mutex_unlock(&pd->cfg_lock);
	kfree(buf);
	return err ? err : (ssize_t)count;
}

PG_CMD_PROC_OPS(pg_dev_ops, pg_dev_open, pg_dev_write);

int pg_dev_proc_create(struct pg_net *pn, struct pg_dev *pd)
{
	pd->proc = proc_create_data(pd->name, 0600, pn->proc_dir, &pg_dev_ops, pd);
	return pd->proc ? 0 : -ENOMEM;
}
