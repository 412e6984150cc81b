// SPDX-License-Identifier: GPL-2.0
/*
 * A generator device's read-out: Params, Current, departures and Result,
 * in upstream pktgen's format.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/etherdevice.h>
#include <linux/kernel.h>
#include <linux/seq_file.h>
#include "rfcpg.h"

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
	if (pd->start_offset)
		seq_printf(m, "     start_offset: %llu\n", pd->start_offset);
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
	/* still held by start_offset: its run has not begun */
	stopped = max_t(u64, stopped, ktime_to_us(pd->started_at));
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

int pg_dev_show(struct seq_file *m, void *v)
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
