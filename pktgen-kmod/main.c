// SPDX-License-Identifier: GPL-2.0
/*
 * rfc2544_pktgen: a pktgen-compatible packet generator with a receiver.
 * Module init/exit, per-namespace setup and the notifiers.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/namei.h>
#include <linux/netdevice.h>
#include <net/net_namespace.h>
#include <net/netns/generic.h>
#include "rfcpg.h"

/*
 * Module parameters. Each is checked when written (insmod, modprobe or
 * /sys/module/rfc2544_pktgen/parameters): a decimal in its range, else
 * -EINVAL and a log line naming the range, so no value can reach the
 * transmit path that overflows or divides by zero there (catchup_pct once
 * took any u32, and 100 + catchup_pct wrapped to 0). Ranges: README.md.
 */
struct pg_param {
	void *val;		/* a u64 or a u32, by size */
	unsigned int size;
	u64 min, max;
};

static int pg_param_set(const char *val, const struct kernel_param *kp)
{
	const struct pg_param *p = kp->arg;
	u64 v;

	if (kstrtou64(val, 10, &v) || v < p->min || v > p->max) {
		pr_warn_ratelimited("%s: \"%.*s\" refused: a decimal from %llu to %llu\n",
				    kp->name, (int)min_t(size_t, strcspn(val, "\n"), 24), val,
				    p->min, p->max);
		return -EINVAL;
	}
	if (p->size == sizeof(u64))
		WRITE_ONCE(*(u64 *)p->val, v);
	else
		WRITE_ONCE(*(u32 *)p->val, (u32)v);
	return 0;
}

static int pg_param_get(char *buffer, const struct kernel_param *kp)
{
	const struct pg_param *p = kp->arg;
	u64 v = p->size == sizeof(u64) ? READ_ONCE(*(u64 *)p->val) :
		READ_ONCE(*(u32 *)p->val);

	return scnprintf(buffer, PAGE_SIZE, "%llu\n", v);
}

static const struct kernel_param_ops pg_param_ops = {
	.set = pg_param_set,
	.get = pg_param_get,
};

#define PG_PARAM(name, var, lo, hi, desc)					\
	static struct pg_param pg_param_##name = {				\
		.val = &(var), .size = sizeof(var), .min = (lo), .max = (hi),	\
	};									\
	module_param_cb(name, &pg_param_ops, &pg_param_##name, 0644);		\
	MODULE_PARM_DESC(name, desc)

u64 pg_spin_ns = 100000;
PG_PARAM(spin_ns, pg_spin_ns, 0, 10 * NSEC_PER_MSEC,
	 "sleep until this many ns before the next packet is due, then busy-wait (default 100000, at most 10000000)");

u64 pg_max_lag_ns = NSEC_PER_SEC;
PG_PARAM(max_lag_ns, pg_max_lag_ns, 0, 60ULL * NSEC_PER_SEC,
	 "a generator running late by more than this re-bases its schedule instead of sending back to back to catch up (default 1 s, at most 60 s)");

u32 pg_catchup_pct;
PG_PARAM(catchup_pct, pg_catchup_pct, 0, 10000,
	 "a generator running late sends at most this many percent faster than its rate until back on schedule (default 0: no limit, like upstream pktgen; at most 10000)");

u32 pg_allow_netns_admin;
PG_PARAM(allow_netns_admin, pg_allow_netns_admin, 0, 1,
	 "1: CAP_NET_ADMIN over a network namespace's own user namespace may command its generators and receiver (a container's root); 0 (default): CAP_NET_ADMIN in the initial namespace only, as upstream. Risk: README.md");

u32 pg_max_devs_per_thread = 64;
PG_PARAM(max_devs_per_thread, pg_max_devs_per_thread, 1, 4096,
	 "add_device refuses (ENOSPC) a device beyond this many on one kpktgend thread (default 64, 1 to 4096)");

u32 pg_max_devs_per_netns = 256;
PG_PARAM(max_devs_per_netns, pg_max_devs_per_netns, 1, 65536,
	 "add_device refuses (ENOSPC) a device beyond this many in one network namespace (default 256, 1 to 65536)");

static unsigned int pg_net_id __read_mostly;

struct pg_net *pg_net_get(const struct net *net)
{
	return net_generic(net, pg_net_id);
}

static int __net_init pg_net_init(struct net *net)
{
	struct pg_net *pn = pg_net_get(net);
	unsigned int cpu;
	int err;

	INIT_LIST_HEAD(&pn->threads);
	mutex_init(&pn->lock);
	spin_lock_init(&pn->odevs_lock);
	INIT_LIST_HEAD(&pn->odevs);
	init_waitqueue_head(&pn->run_wq);
	atomic_set(&pn->running, 0);
	pn->dying = false;
	strscpy(pn->ctrl_result, "OK", sizeof(pn->ctrl_result));
	smp_store_release(&pn->net, net);	/* initialised: see pg_netdev_event */

	pn->proc_dir = proc_mkdir(PG_PROC_DIR, net->proc_net);
	if (!pn->proc_dir)
		return -ENOMEM;

	err = pg_ctrl_init(pn);
	if (err)
		goto err_dir;

	for_each_online_cpu(cpu) {
		err = pg_ctrl_add_thread(pn, cpu);
		if (err)
			goto err_threads;
	}

	err = pg_rx_init(pn);
	if (err)
		goto err_threads;
	return 0;

err_threads:
	pg_ctrl_exit(pn);
err_dir:
	remove_proc_subtree(PG_PROC_DIR, net->proc_net);
	return err;
}

static void __net_exit pg_net_exit(struct net *net)
{
	struct pg_net *pn = pg_net_get(net);

	pg_rx_exit(pn);
	pg_ctrl_exit(pn);	/* stops and frees devices and threads */
	remove_proc_subtree(PG_PROC_DIR, net->proc_net);
}

static struct pernet_operations pg_net_ops = {
	.init = pg_net_init,
	.exit = pg_net_exit,
	.id = &pg_net_id,
	.size = sizeof(struct pg_net),
};

/*
 * A device going away must not stay referenced by a generator; a renamed
 * one's generator files follow its name.
 */
static int pg_netdev_event(struct notifier_block *nb, unsigned long event,
			   void *ptr)
{
	struct net_device *dev = netdev_notifier_info_to_dev(ptr);
	struct pg_net *pn;

	if (event != NETDEV_UNREGISTER && event != NETDEV_CHANGENAME)
		return NOTIFY_DONE;
	pn = pg_net_get(dev_net(dev));
	/*
	 * A namespace whose pktgen state is not set up (yet) has no
	 * generators. Any netns user's veth churn lands here under RTNL:
	 * only a device a generator holds is worth the thread round trip.
	 */
	if (!smp_load_acquire(&pn->net) || !pg_netdev_used(pn, dev))
		return NOTIFY_DONE;
	if (event == NETDEV_UNREGISTER)
		pg_remove_netdev(pn, dev);
	else
		pg_rename_netdev(pn, dev);	/* the file follows the name */
	return NOTIFY_DONE;
}

static struct notifier_block pg_netdev_nb = {
	.notifier_call = pg_netdev_event,
};

/*
 * The in-tree pktgen would collide on /proc/net/pktgen (and WARN); refuse to
 * let it load while we own the directory.
 */
static int pg_module_event(struct notifier_block *nb, unsigned long event,
			   void *ptr)
{
	struct module *mod = ptr;

	if (event == MODULE_STATE_COMING && !strcmp(mod->name, "pktgen")) {
		pr_err("refusing to load the in-tree pktgen while %s owns /proc/net/%s; rmmod %s first\n",
		       PG_MODNAME, PG_PROC_DIR, PG_MODNAME);
		return notifier_from_errno(-EBUSY);
	}
	return NOTIFY_DONE;
}

static struct notifier_block pg_module_nb = {
	.notifier_call = pg_module_event,
};

/* The in-tree pktgen (module or built in) owns /proc/net/pktgen if present. */
static bool pg_intree_present(void)
{
	struct path path;

	if (kern_path("/proc/net/" PG_PROC_DIR, LOOKUP_FOLLOW, &path))
		return false;
	path_put(&path);
	return true;
}

static int __init pg_init(void)
{
	int err;

	err = register_module_notifier(&pg_module_nb);
	if (err)
		return err;

	if (pg_intree_present()) {
		pr_err("/proc/net/%s is owned by the in-tree pktgen module; unload it first (rmmod pktgen)\n",
		       PG_PROC_DIR);
		err = -EBUSY;
		goto err_module_nb;
	}

	err = register_pernet_subsys(&pg_net_ops);
	if (err)
		goto err_module_nb;

	err = register_netdevice_notifier(&pg_netdev_nb);
	if (err)
		goto err_pernet;

	pr_info("version %s loaded\n", PG_VERSION);
	return 0;

err_pernet:
	unregister_pernet_subsys(&pg_net_ops);
err_module_nb:
	unregister_module_notifier(&pg_module_nb);
	return err;
}

static void __exit pg_exit(void)
{
	/*
	 * Notifier first: unregistering replays NETDEV_UNREGISTER, which must
	 * still find the per-namespace state.
	 */
	unregister_netdevice_notifier(&pg_netdev_nb);
	unregister_pernet_subsys(&pg_net_ops);
	unregister_module_notifier(&pg_module_nb);
	pr_info("unloaded\n");
}

module_init(pg_init);
module_exit(pg_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("pktgen-compatible packet generator and receiver for RFC 2544 benchmarks");
MODULE_VERSION(PG_VERSION);
