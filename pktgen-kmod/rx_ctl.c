// SPDX-License-Identifier: GPL-2.0
/*
 * The pgrx commands (rx, rx_reset, statistics, streams, pkt_size, ...),
 * the netfilter hooks' registration, init and exit.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include "rx.h"

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
