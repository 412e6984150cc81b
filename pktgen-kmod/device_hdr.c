// SPDX-License-Identifier: GPL-2.0
/*
 * A generator device's commands for the frame it builds: addresses, MACs,
 * flows, the TX queue, MPLS, VLAN and QinQ tags, TOS, priority. The table
 * that names them and the rest of the commands are device_ctl.c's.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/slab.h>
#include <linux/etherdevice.h>
#include "rfcpg.h"

int pg_cmd_ip4(struct pg_dev *pd, int argc, char **argv)
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

int pg_cmd_ip6(struct pg_dev *pd, int argc, char **argv)
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

int pg_cmd_mac(struct pg_dev *pd, int argc, char **argv)
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

int pg_cmd_mac_count(struct pg_dev *pd, int argc, char **argv)
{
	if (!strcmp(argv[0], "src_mac_count"))
		return pg_cmd_u32_field(pd, argv, &pd->src_mac_count, U32_MAX, "decimal");
	return pg_cmd_u32_field(pd, argv, &pd->dst_mac_count, U32_MAX, "decimal");
}

/*
 * The flow table is allocated here, in the writer's context and charged to
 * its memory cgroup (up to 768 KiB), not by the thread at start; the
 * thread only clears it (pg_dev_prepare). Not while running: the thread
 * reads it then.
 */
int pg_cmd_flows(struct pg_dev *pd, int argc, char **argv)
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

int pg_cmd_flowlen(struct pg_dev *pd, int argc, char **argv)
{
	return pg_cmd_u32_field(pd, argv, &pd->flowlen, U32_MAX, "decimal");
}

int pg_cmd_queue_map(struct pg_dev *pd, int argc, char **argv)
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

int pg_cmd_mpls(struct pg_dev *pd, int argc, char **argv)
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

int pg_cmd_vlan(struct pg_dev *pd, int argc, char **argv)
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

int pg_cmd_tos(struct pg_dev *pd, int argc, char **argv)
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

int pg_cmd_skb_priority(struct pg_dev *pd, int argc, char **argv)
{
	return pg_cmd_u32_field(pd, argv, &pd->skb_priority, U32_MAX, "decimal");
}

/* Accepted and shown, as upstream; without IPsec (flag IPSEC) unused. */
int pg_cmd_spi(struct pg_dev *pd, int argc, char **argv)
{
	return pg_cmd_u32_field(pd, argv, &pd->spi, U32_MAX, "decimal");
}

int pg_cmd_udp(struct pg_dev *pd, int argc, char **argv)
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

/*
 * Ours, not upstream's: `dst_stride N` makes the IPv4 destination range
 * dst_min, dst_min + N, ... up to dst_max, stepped or drawn (IPDST_RND) as
 * the range is. With N = 256 and the same host part in dst_min and dst_max,
 * every frame goes to one address in one of the /24 networks between them
 * (RFC 2544 section 12's traffic to 256 networks), never to a network's
 * other addresses. 1 (the default) is every address.
 */
int pg_cmd_dst_stride(struct pg_dev *pd, int argc, char **argv)
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
int pg_cmd_stream_id(struct pg_dev *pd, int argc, char **argv)
{
	u32 v;

	if (pg_parse_u32(argv[1], &v, U16_MAX))
		return pg_bad(pd, argv, "decimal, 0 (none) or up to 65535");
	pd->stream_id = (u16)v;
	return pg_res(pd, 0, "OK: stream_id=%u", v);
}
