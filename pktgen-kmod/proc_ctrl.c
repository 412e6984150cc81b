// SPDX-License-Identifier: GPL-2.0
/*
 * /proc/net/pktgen/pgctrl (start, stop, reset) and kpktgend_N (add_device,
 * rem_device_all, max_before_softirq): both files, created and removed here.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/slab.h>
#include <linux/seq_file.h>
#include <linux/sched/signal.h>
#include <linux/if_arp.h>
#include <linux/capability.h>
#include "rfcpg.h"

/* pktgen's banner, which version-sniffing scripts look for */
#define PG_BANNER "Packet Generator for packet performance testing. Version: 2.75 (" PG_MODNAME " " PG_VERSION ")\n"

static void pg_free_removed(struct pg_remove *rm)
{
	struct pg_dev *pd, *tmp;

	list_for_each_entry_safe(pd, tmp, &rm->out, list) {
		list_del(&pd->list);
		pg_dev_free(pd);
	}
}

/* Caller holds pn->lock. */
static void pg_remove_from_thread(struct pg_thread *t, struct net_device *dev,
				  struct pg_remove *rm)
{
	struct pg_remove one;

	INIT_LIST_HEAD(&one.out);
	one.dev = dev;
	pg_thread_request(t, PG_REQ_REMOVE, &one);
	list_splice_tail(&one.out, &rm->out);
}

void pg_remove_netdev(struct pg_net *pn, struct net_device *dev)
{
	struct pg_thread *t;
	struct pg_remove rm;

	INIT_LIST_HEAD(&rm.out);
	mutex_lock(&pn->lock);
	if (!pn->dying)
		list_for_each_entry(t, &pn->threads, list)
			pg_remove_from_thread(t, dev, &rm);
	mutex_unlock(&pn->lock);
	pg_free_removed(&rm);
}

static bool pg_name_taken(struct pg_net *pn, const char *name)
{
	struct pg_thread *t;
	struct pg_dev *pd;
	bool taken = false;

	if (!strcmp(name, PG_CTRL_NAME) || !strcmp(name, PG_RX_NAME) ||
	    !strncmp(name, "kpktgend_", 9))
		return true;
	list_for_each_entry(t, &pn->threads, list) {
		mutex_lock(&t->lock);
		list_for_each_entry(pd, &t->devs, list)
			if (!strcmp(pd->name, name))
				taken = true;
		mutex_unlock(&t->lock);
	}
	return taken;
}

/*
 * One generator follows its device's new name: file IF[@tag] becomes
 * NEWIF[@tag], ifname and kpktgend_N say the same. Upstream re-creates the
 * file under the bare new name (dropping the tag) and keeps the old ifname.
 * Caller holds pn->lock; pd's file is not held open by anything we wait on.
 */
static void pg_rename_one(struct pg_net *pn, struct pg_thread *t,
			  struct pg_dev *pd, const char *ifname)
{
	const char *tag = strchr(pd->name, '@');
	char name[PG_NAME_LEN];
	int n;

	n = snprintf(name, sizeof(name), "%s%s", ifname, tag ? tag : "");
	if (!strcmp(name, pd->name))
		return;
	if (n >= (int)sizeof(name) || pg_name_taken(pn, name)) {
		pr_warn("%s: its device is now %s; name too long or taken, file not renamed\n",
			pd->name, ifname);
		return;
	}
	proc_remove(pd->proc);	/* waits for readers/writers of the old file */
	pd->proc = NULL;
	mutex_lock(&t->lock);	/* kpktgend_N's read-out */
	mutex_lock(&pd->cfg_lock);	/* the device file's */
	strscpy(pd->name, name, sizeof(pd->name));
	mutex_unlock(&pd->cfg_lock);
	mutex_unlock(&t->lock);
	if (pg_dev_proc_create(pn, pd))
		pr_warn("%s: cannot create its /proc entry after the rename\n", name);
}

/* NETDEV_CHANGENAME of a device some generator uses (under RTNL). */
void pg_rename_netdev(struct pg_net *pn, struct net_device *dev)
{
	struct pg_thread *t;
	struct pg_dev *pd;

	mutex_lock(&pn->lock);
	if (!pn->dying)
		list_for_each_entry(t, &pn->threads, list)
			/* t->devs changes only on requests, made under pn->lock */
			list_for_each_entry(pd, &t->devs, list)
				if (pd->odev == dev)
					pg_rename_one(pn, t, pd, dev->name);
	mutex_unlock(&pn->lock);
}

static void pg_request_all(struct pg_net *pn, int req)
{
	struct pg_thread *t;

	list_for_each_entry(t, &pn->threads, list)
		pg_thread_request(t, req, NULL);
}

/* ---- pgctrl ---- */

static int pg_ctrl_show(struct seq_file *m, void *v)
{
	struct pg_net *pn = m->private;

	seq_puts(m, PG_BANNER);
	mutex_lock(&pn->lock);
	seq_printf(m, "Result: %s\n", pn->ctrl_result);
	mutex_unlock(&pn->lock);
	return 0;
}

static int pg_ctrl_open(struct inode *inode, struct file *file)
{
	return single_open(file, pg_ctrl_show, pde_data(inode));
}

static void pg_ctrl_set_result(struct pg_net *pn, const char *fmt, const char *arg)
{
	mutex_lock(&pn->lock);
	scnprintf(pn->ctrl_result, sizeof(pn->ctrl_result), fmt, arg);
	mutex_unlock(&pn->lock);
}

/* "start" blocks until every device stopped; a signal stops them all. */
static int pg_ctrl_start(struct pg_net *pn)
{
	int err;

	mutex_lock(&pn->lock);
	if (pn->dying) {
		mutex_unlock(&pn->lock);
		return -ENODEV;
	}
	WRITE_ONCE(pn->start_ns, ktime_get_ns());	/* devices' start_offset */
	pg_request_all(pn, PG_REQ_RUN);
	mutex_unlock(&pn->lock);

	err = wait_event_interruptible(pn->run_wq,
				       !atomic_read(&pn->running) ||
				       READ_ONCE(pn->dying));
	if (err) {
		mutex_lock(&pn->lock);
		if (!pn->dying)
			pg_request_all(pn, PG_REQ_STOP);
		mutex_unlock(&pn->lock);
	}
	return 0;
}

static int pg_ctrl_command(struct pg_net *pn, const char __user *ubuf, size_t count,
			   char *buf)
{
	char *argv[PG_MAX_ARGS];
	int argc, err;

	argc = pg_get_args(ubuf, count, buf, argv, ARRAY_SIZE(argv));
	if (argc < 0) {
		pg_ctrl_set_result(pn, "Error: %s", pg_args_error(argc));
		return argc;
	}
	if (argc != 1) {
		pg_ctrl_set_result(pn, "Error: %s", "expected one of start, stop, reset");
		return -EINVAL;
	}

	if (!strcmp(argv[0], "start")) {
		pg_ctrl_set_result(pn, "%s", "Starting");
		err = pg_ctrl_start(pn);
		if (err)
			return err;
		pg_ctrl_set_result(pn, "OK: %s", "start");
	} else if (!strcmp(argv[0], "stop")) {
		mutex_lock(&pn->lock);
		if (!pn->dying)
			pg_request_all(pn, PG_REQ_STOP);
		mutex_unlock(&pn->lock);
		pg_ctrl_set_result(pn, "OK: %s", "stop");
	} else if (!strcmp(argv[0], "reset")) {
		struct pg_remove rm;
		struct pg_thread *t;

		INIT_LIST_HEAD(&rm.out);
		mutex_lock(&pn->lock);
		if (!pn->dying)
			list_for_each_entry(t, &pn->threads, list)
				pg_remove_from_thread(t, NULL, &rm);
		mutex_unlock(&pn->lock);
		pg_free_removed(&rm);
		pg_ctrl_set_result(pn, "OK: %s", "reset");
	} else {
		pg_ctrl_set_result(pn, "No such command \"%.32s\"", argv[0]);
		return -EINVAL;
	}
	return 0;
}

static ssize_t pg_ctrl_write(struct file *file, const char __user *ubuf,
			     size_t count, loff_t *ppos)
{
	struct pg_net *pn = ((struct seq_file *)file->private_data)->private;
	char *buf;
	int err;

	if (!pg_may_write(file, pn))
		return -EPERM;
	buf = kmalloc(PG_MAX_WRITE, GFP_KERNEL_ACCOUNT);
	if (!buf)
		return -ENOMEM;
	err = pg_ctrl_command(pn, ubuf, count, buf);
	kfree(buf);
	return err ? err : (ssize_t)count;
}

PG_CMD_PROC_OPS(pg_ctrl_ops, pg_ctrl_open, pg_ctrl_write);

/* ---- kpktgend_N ---- */

static int pg_thread_show(struct seq_file *m, void *v)
{
	struct pg_thread *t = m->private;
	struct pg_dev *pd;

	mutex_lock(&t->lock);
	seq_puts(m, "Running: ");
	list_for_each_entry(pd, &t->devs, list)
		if (READ_ONCE(pd->running))
			seq_printf(m, "%s ", pd->name);
	seq_puts(m, "\nStopped: ");
	list_for_each_entry(pd, &t->devs, list)
		if (!READ_ONCE(pd->running))
			seq_printf(m, "%s ", pd->name);
	mutex_unlock(&t->lock);
	mutex_lock(&t->pn->lock);
	seq_printf(m, "\nResult: %s\n", t->result[0] ? t->result : "NA");
	mutex_unlock(&t->pn->lock);
	return 0;
}

static int pg_thread_open(struct inode *inode, struct file *file)
{
	return single_open(file, pg_thread_show, pde_data(inode));
}

/* "IF[@tag]": IF into ifname (IFNAMSIZ); false, with Result set, if bad. */
static bool pg_dev_name_ok(struct pg_thread *t, const char *name, char *ifname)
{
	const char *at = strchr(name, '@');
	size_t iflen = at ? (size_t)(at - name) : strlen(name);

	if (!iflen || iflen >= IFNAMSIZ || strlen(name) >= PG_NAME_LEN) {
		scnprintf(t->result, sizeof(t->result),
			  "ERROR: bad device name (interface up to %d characters, whole name up to %d)",
			  IFNAMSIZ - 1, PG_NAME_LEN - 1);
		return false;
	}
	if (strchr(name, '/')) {
		scnprintf(t->result, sizeof(t->result), "ERROR: bad device name");
		return false;
	}
	memcpy(ifname, name, iflen);
	ifname[iflen] = '\0';
	return true;
}

/*
 * Room for one more device on t and in its namespace (max_devs_per_thread,
 * max_devs_per_netns): 0, or -ENOSPC with Result set. Caller holds
 * pn->lock, under which every add and remove is made.
 */
static int pg_dev_room(struct pg_thread *t)
{
	u32 max_thread = READ_ONCE(pg_max_devs_per_thread);
	u32 max_netns = READ_ONCE(pg_max_devs_per_netns);
	u32 on_thread = 0, in_netns = 0;
	struct pg_thread *each;
	struct pg_dev *pd;

	list_for_each_entry(each, &t->pn->threads, list) {
		mutex_lock(&each->lock);
		list_for_each_entry(pd, &each->devs, list) {
			in_netns++;
			if (each == t)
				on_thread++;
		}
		mutex_unlock(&each->lock);
	}
	if (on_thread >= max_thread) {
		scnprintf(t->result, sizeof(t->result),
			  "ERROR: %s has %u devices, the most max_devs_per_thread allows",
			  t->name, on_thread);
		return -ENOSPC;
	}
	if (in_netns >= max_netns) {
		scnprintf(t->result, sizeof(t->result),
			  "ERROR: this network namespace has %u devices, the most max_devs_per_netns allows",
			  in_netns);
		return -ENOSPC;
	}
	return 0;
}

/* Caller holds pn->lock. */
static int pg_add_device(struct pg_thread *t, const char *name)
{
	struct pg_net *pn = t->pn;
	char ifname[IFNAMSIZ];
	struct net_device *odev;
	struct pg_dev *pd;
	int err;

	if (!pg_dev_name_ok(t, name, ifname))
		return -EINVAL;
	if (pg_name_taken(pn, name)) {
		scnprintf(t->result, sizeof(t->result),
			  "ERROR: device %s already added or name reserved", name);
		return -EBUSY;
	}
	err = pg_dev_room(t);
	if (err)
		return err;
	odev = dev_get_by_name(pn->net, ifname);
	if (!odev) {
		scnprintf(t->result, sizeof(t->result),
			  "ERROR: no such netdevice: \"%s\"", ifname);
		return -ENODEV;
	}
	if (odev->type != ARPHRD_ETHER && odev->type != ARPHRD_LOOPBACK) {
		scnprintf(t->result, sizeof(t->result),
			  "ERROR: not an ethernet device: \"%s\"", ifname);
		err = -EINVAL;
		goto err_put;
	}
	if (!netif_running(odev)) {
		scnprintf(t->result, sizeof(t->result),
			  "ERROR: device is down: \"%s\"", ifname);
		err = -ENETDOWN;
		goto err_put;
	}

	pd = pg_dev_alloc(t, odev, name);	/* takes over the reference */
	if (!pd) {
		err = -ENOMEM;
		goto err_put;
	}
	err = pg_dev_proc_create(pn, pd);
	if (err) {
		pg_dev_free(pd);
		scnprintf(t->result, sizeof(t->result),
			  "ERROR: cannot create /proc entry for %s", name);
		return err;
	}
	if (!pg_track_dev(pn, pd)) {
		pg_dev_free(pd);
		scnprintf(t->result, sizeof(t->result),
			  "ERROR: no such netdevice: \"%s\" (going away)", ifname);
		return -ENODEV;
	}
	pg_thread_request(t, PG_REQ_ADD, pd);
	scnprintf(t->result, sizeof(t->result), "OK: add_device=%s", name);
	return 0;

err_put:
	dev_put(odev);
	return err;
}

static ssize_t pg_thread_write(struct file *file, const char __user *ubuf,
			       size_t count, loff_t *ppos)
{
	struct pg_thread *t = ((struct seq_file *)file->private_data)->private;
	struct pg_net *pn = t->pn;
	char *argv[3];
	int argc, err;
	char *buf;

	if (!pg_may_write(file, pn))
		return -EPERM;
	buf = kmalloc(PG_MAX_WRITE, GFP_KERNEL_ACCOUNT);
	if (!buf)
		return -ENOMEM;
	argc = pg_get_args(ubuf, count, buf, argv, ARRAY_SIZE(argv));
	err = argc < 0 ? argc : 0;

	mutex_lock(&pn->lock);
	if (pn->dying) {
		err = -ENODEV;
	} else if (err) {
		scnprintf(t->result, sizeof(t->result), "Error: %s",
			  pg_args_error(err));
	} else if (!strcmp(argv[0], "add_device")) {
		if (argc != 2) {
			scnprintf(t->result, sizeof(t->result),
				  "Error: usage: add_device IF[@tag]");
			err = -EINVAL;
		} else {
			err = pg_add_device(t, argv[1]);
		}
	} else if (!strcmp(argv[0], "rem_device_all") && argc == 1) {
		struct pg_remove rm;

		INIT_LIST_HEAD(&rm.out);
		pg_remove_from_thread(t, NULL, &rm);
		mutex_unlock(&pn->lock);
		pg_free_removed(&rm);
		mutex_lock(&pn->lock);
		scnprintf(t->result, sizeof(t->result), "OK: rem_device_all");
	} else if (!strcmp(argv[0], "max_before_softirq")) {
		u64 v = 0;

		/* accepted for compatibility; it has no effect */
		if (argc > 2 || (argc == 2 && pg_parse_u64(argv[1], &v))) {
			scnprintf(t->result, sizeof(t->result),
				  "Error: usage: max_before_softirq [N]");
			err = -EINVAL;
		} else {
			scnprintf(t->result, sizeof(t->result),
				  "OK: max_before_softirq=%llu", v);
		}
	} else {
		scnprintf(t->result, sizeof(t->result),
			  "No such parameter \"%.32s\"", argv[0]);
		err = -EINVAL;
	}
	mutex_unlock(&pn->lock);
	kfree(buf);
	return err ? err : (ssize_t)count;
}

PG_CMD_PROC_OPS(pg_thread_ops, pg_thread_open, pg_thread_write);

/* A kpktgend thread for cpu and its file; on pn->threads once both exist. */
int pg_ctrl_add_thread(struct pg_net *pn, unsigned int cpu)
{
	struct pg_thread *t = pg_thread_create(pn, cpu);

	if (IS_ERR(t))
		return PTR_ERR(t);
	t->proc = proc_create_data(t->name, 0600, pn->proc_dir,
				   &pg_thread_ops, t);
	if (!t->proc) {
		pg_thread_destroy(t);
		return -ENOMEM;
	}
	mutex_lock(&pn->lock);	/* pgctrl may already be walking the list */
	list_add_tail(&t->list, &pn->threads);
	mutex_unlock(&pn->lock);
	return 0;
}

int pg_ctrl_init(struct pg_net *pn)
{
	pn->ctrl = proc_create_data(PG_CTRL_NAME, 0600, pn->proc_dir,
				    &pg_ctrl_ops, pn);
	return pn->ctrl ? 0 : -ENOMEM;
}

/* Tear down in an order that lets a blocked "start" writer return first. */
void pg_ctrl_exit(struct pg_net *pn)
{
	struct pg_thread *t, *tmp;
	struct pg_remove rm;

	mutex_lock(&pn->lock);
	pn->dying = true;
	mutex_unlock(&pn->lock);
	wake_up_all(&pn->run_wq);

	proc_remove(pn->ctrl);
	pn->ctrl = NULL;

	INIT_LIST_HEAD(&rm.out);
	mutex_lock(&pn->lock);
	list_for_each_entry(t, &pn->threads, list)
		pg_remove_from_thread(t, NULL, &rm);
	mutex_unlock(&pn->lock);
	pg_free_removed(&rm);

	list_for_each_entry_safe(t, tmp, &pn->threads, list) {
		list_del(&t->list);
		proc_remove(t->proc);	/* waits for writers in flight */
		pg_thread_destroy(t);
	}
}
