// SPDX-License-Identifier: GPL-2.0
/*
 * A generator device: its defaults, allocation and freeing, and the list
 * of output devices the netdev notifier checks. Its /proc file is
 * device_ctl.c (commands) and device_show.c (read-out).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/slab.h>
#include <linux/proc_fs.h>
#include "rfcpg.h"

const char *const pg_flag_names[PGF_NR] = {
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

/*
 * Publish pd's odev to the notifier's check. The device may have started
 * unregistering after dev_get_by_name(): its reg_state is set before
 * NETDEV_UNREGISTER is sent, so either the notifier sees pd on the list or
 * we see the state here (same lock) and give up.
 */
bool pg_track_dev(struct pg_net *pn, struct pg_dev *pd)
{
	bool ok;

	spin_lock(&pn->odevs_lock);
	ok = pd->odev->reg_state == NETREG_REGISTERED;	/* a bitfield */
	if (ok)
		list_add_tail(&pd->odev_node, &pn->odevs);
	spin_unlock(&pn->odevs_lock);
	return ok;
}

void pg_untrack_dev(struct pg_dev *pd)
{
	struct pg_net *pn = pd->thread->pn;

	spin_lock(&pn->odevs_lock);
	list_del_init(&pd->odev_node);
	spin_unlock(&pn->odevs_lock);
}

/* Does any generator of pn hold dev? Cheap: called for every device event. */
bool pg_netdev_used(struct pg_net *pn, const struct net_device *dev)
{
	struct pg_dev *pd;
	bool used = false;

	spin_lock(&pn->odevs_lock);
	list_for_each_entry(pd, &pn->odevs, odev_node)
		if (pd->odev == dev) {
			used = true;
			break;
		}
	spin_unlock(&pn->odevs_lock);
	return used;
}
