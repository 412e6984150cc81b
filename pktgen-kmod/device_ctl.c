// SPDX-License-Identifier: GPL-2.0
/*
 * A generator device's commands: /proc/net/pktgen/<dev>, upstream pktgen's
 * command language and ours (count, rate, imix_weights, stream_id, ...).
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

#define PG_CMD_LIVE	1	/* may change a running device */
#define PG_VARARGS	(-1)

struct pg_cmd {
	const char *name;
	int nargs;
	unsigned int flags;
	int (*fn)(struct pg_dev *pd, int argc, char **argv);
};

int pg_res(struct pg_dev *pd, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vscnprintf(pd->result, sizeof(pd->result), fmt, ap);
	va_end(ap);
	return err;
}

int pg_bad(struct pg_dev *pd, char **argv, const char *want)
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

int pg_cmd_u32_field(struct pg_dev *pd, char **argv, u32 *field, u32 max, const char *want)
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
 * Ours, not upstream's: `start_offset NS` holds the device's first frame
 * until NS after the moment pgctrl's start was written (at once if its
 * thread picked the start up later than that). Several generators of one
 * stream, each offset by a share of the gap, then interleave evenly
 * instead of sending in pairs.
 */
static int pg_cmd_start_offset(struct pg_dev *pd, int argc, char **argv)
{
	u64 v;

	if (pg_parse_u64(argv[1], &v) || v > NSEC_PER_SEC)
		return pg_bad(pd, argv, "decimal ns, up to 1000000000");
	pd->start_offset = v;
	return pg_res(pd, 0, "OK: start_offset=%llu", v);
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
	{ "start_offset", 1, 0, pg_cmd_start_offset },
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

static int pg_dev_open(struct inode *inode, struct file *file)
{
	return single_open(file, pg_dev_show, pde_data(inode));
}

PG_CMD_PROC_OPS(pg_dev_ops, pg_dev_open, pg_dev_write);

int pg_dev_proc_create(struct pg_net *pn, struct pg_dev *pd)
{
	pd->proc = proc_create_data(pd->name, 0600, pn->proc_dir, &pg_dev_ops, pd);
	return pd->proc ? 0 : -ENOMEM;
}
