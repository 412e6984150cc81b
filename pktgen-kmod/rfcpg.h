/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rfc2544_pktgen: shared types. One pg_net per network namespace owns the
 * /proc/net/pktgen directory, one pg_thread per online CPU (each owning a
 * list of pg_dev generators) and the receiver state (pg_rx).
 */
#ifndef RFCPG_H
#define RFCPG_H

#include <linux/types.h>
#include <linux/netdevice.h>
#include <linux/proc_fs.h>
#include <linux/mutex.h>
#include <linux/wait.h>
#include <linux/prandom.h>
#include <linux/in6.h>
#include <linux/if_ether.h>
#include <linux/capability.h>
#include <linux/user_namespace.h>
#include <net/net_namespace.h>
#include "compat.h"
#include "departures.h"

#define PG_MODNAME		"rfc2544_pktgen"
#define PG_VERSION		"1.8"
#define PG_PROC_DIR		"pktgen"
#define PG_CTRL_NAME		"pgctrl"
#define PG_RX_NAME		"pgrx"

/* Test header at UDP payload offset 0: be32 magic, be32 seq, 8 bytes time. */
#define PG_MAGIC_UPSTREAM	0xbe9be955U	/* be32 tv_sec, be32 tv_usec */
#define PG_MAGIC_NS		0x25449e55U	/* be64 ns, CLOCK_REALTIME */
/* be16 stream id (1..65535), be48 ns: CLOCK_REALTIME mod 2^48 (3.2 days) */
#define PG_MAGIC_SID		0x25449e56U
#define PG_HDR_LEN		16

#define PG_MAX_WRITE		1024	/* longer writes: -E2BIG */
#define PG_RESULT_LEN		512
#define PG_NAME_LEN		32	/* "IF@tag" incl. NUL */
#define PG_MAX_ARGS		32
#define PG_MAX_IMIX		20
#define PG_MAX_MPLS		16
#define PG_MAX_FLOWS		65536
#define PG_MIN_PKT_SIZE		42	/* Ethernet + IPv4 + UDP */
#define PG_MAX_PKT_SIZE		65535
#define PG_DELAY_PAUSE		U64_MAX	/* "delay 2147483647" */

/*
 * A command file (pgctrl, kpktgend_N, a device, pgrx): read whole through
 * seq_file (single_open), written one command per write.
 */
#define PG_CMD_PROC_OPS(ops, open_fn, write_fn)		\
	static const struct proc_ops ops = {		\
		.proc_open = open_fn,			\
		.proc_read = seq_read,			\
		.proc_lseek = seq_lseek,		\
		.proc_write = write_fn,			\
		.proc_release = single_release,		\
	}

enum pg_xmit_mode {
	PG_XMIT_START,
	PG_XMIT_NETIF_RECEIVE,
	PG_XMIT_QUEUE,
};

/* Device flags, bit numbers; names in device.c (pg_flag_names). */
enum pg_flag {
	PGF_IPV6,
	PGF_IPSRC_RND,
	PGF_IPDST_RND,
	PGF_TXSIZE_RND,
	PGF_UDPSRC_RND,
	PGF_UDPDST_RND,
	PGF_UDPCSUM,
	PGF_NO_TIMESTAMP,
	PGF_MPLS_RND,
	PGF_QUEUE_MAP_RND,
	PGF_QUEUE_MAP_CPU,
	PGF_FLOW_SEQ,
	PGF_IPSEC,
	PGF_MACSRC_RND,
	PGF_MACDST_RND,
	PGF_VID_RND,
	PGF_SVID_RND,
	PGF_NODE,
	PGF_SHARED,
	PGF_UPSTREAM_HDR,
	PGF_NR
};

struct pg_imix {
	u32 size;
	u32 weight;
};

struct pg_flow {
	u32 daddr;		/* host order */
	u32 count;
	bool active;
};

struct pg_thread;
struct pg_net;
struct pg_rx;

struct pg_dev {
	struct list_head list;		/* thread->devs; changed by the thread only */
	struct list_head odev_node;	/* pn->odevs, under pn->odevs_lock */
	struct pg_thread *thread;
	struct net_device *odev;
	char name[PG_NAME_LEN];		/* proc file name: IF or IF@tag */
	struct proc_dir_entry *proc;
	struct mutex cfg_lock;		/* config writes vs. start */
	bool running;			/* written by the thread under cfg_lock */
	bool resched;			/* delay changed while running */
	bool held;			/* first frame waits for started_at (start_offset) */

	/* configuration */
	u64 count;
	u32 min_pkt_size, max_pkt_size;
	u32 nfrags;
	u64 delay;			/* ns between packets */
	u32 clone_skb;
	u32 burst;
	u32 burst_frames;		/* distinct frames back to back, then their gaps */
	u64 start_offset;		/* first frame no sooner than this after pgctrl's start */
	enum pg_xmit_mode xmit_mode;
	int node;
	u16 queue_map_min, queue_map_max;
	u32 skb_priority;
	u32 spi;			/* accepted for upstream parity, unused */
	u8 tos, traffic_class;
	DECLARE_BITMAP(flags, PGF_NR);
	bool debug;
	u32 saddr_min, saddr_max, daddr_min, daddr_max;	/* host order */
	u32 dst_stride;			/* IPv4 destinations: min, min + stride, ... <= max */
	u16 stream_id;			/* in each test header (PG_MAGIC_SID); 0: none */
	bool have_src_min, have_src_max, have_dst_min, have_dst_max;
	struct in6_addr in6_saddr, in6_daddr, min_in6_daddr, max_in6_daddr;
	struct in6_addr min_in6_saddr, max_in6_saddr;	/* ours, 1.6 */
	u8 dst_mac[ETH_ALEN], src_mac[ETH_ALEN];
	bool src_mac_set;
	u32 src_mac_count, dst_mac_count;
	u16 udp_src_min, udp_src_max, udp_dst_min, udp_dst_max;
	u32 nflows, flowlen;
	u32 nr_labels;
	u32 labels[PG_MAX_MPLS];
	u16 vlan_id, svlan_id;		/* > 4095: no tag */
	u8 vlan_p, vlan_cfi, svlan_p, svlan_cfi;
	u32 n_imix;
	struct pg_imix imix[PG_MAX_IMIX];
	u32 imix_total;
	u64 imix_counts[PG_MAX_IMIX];

	/* run state, owned by the thread while running */
	u64 sofar, errors, tx_bytes;
	/* consumed but dropped by our own driver or qdisc: in errors, not sofar */
	u64 tx_dropped;
	u32 seq_num;
	u16 ip_id;
	ktime_t started_at, stopped_at;
	u64 idle_acc;			/* ns spent waiting */
	u64 next_tx;			/* ktime ns, the ideal schedule */
	u64 earliest_tx;		/* catch-up speed limit */
	u32 burst_done;			/* frames of the current burst_frames burst */
	u64 burst_gap;			/* its gaps owed, added to next_tx at its end */
	u32 cur_dst_mac_offset, cur_src_mac_offset;
	u32 cur_saddr, cur_daddr;	/* host order */
	bool auto_saddr;		/* no src_min/max: the device's address */
	struct in6_addr cur_in6_saddr, cur_in6_daddr;
	u16 cur_udp_src, cur_udp_dst;
	u16 cur_queue_map;
	u16 cur_vlan_id, cur_svlan_id;
	u32 cur_pkt_size;
	u32 last_pkt_size;
	u32 cur_imix;
	u32 cur_flow;
	struct pg_flow *flows;
	struct sk_buff *skb;		/* kept for clone_skb / burst */
	u32 clone_left;
	struct page *frag_page;
	char result[PG_RESULT_LEN];
	bool dep_clear;			/* clear_counters while running: the thread resets dep */
	struct pg_departures dep;	/* the thread's while running */
};

/* The nominal gap between frames, ns: none while paused (and 0 unpaced). */
static inline u64 pg_nominal_gap(u64 delay)
{
	return delay == PG_DELAY_PAUSE ? 0 : delay;
}

enum pg_req {
	PG_REQ_NONE,
	PG_REQ_RUN,
	PG_REQ_STOP,
	PG_REQ_ADD,
	PG_REQ_REMOVE,		/* arg: struct pg_remove */
};

struct pg_remove {
	struct list_head out;		/* removed devices, for the caller to free */
	struct net_device *dev;		/* NULL: all */
};

struct pg_thread {
	struct list_head list;		/* pn->threads */
	struct pg_net *pn;
	unsigned int cpu;
	struct task_struct *task;
	struct proc_dir_entry *proc;
	struct mutex lock;		/* devs list changes vs. readers */
	struct list_head devs;
	struct mutex ctl_lock;		/* one request at a time */
	wait_queue_head_t wq;
	wait_queue_head_t done_wq;
	int req;
	void *req_arg;
	int req_ret;
	struct rnd_state rnd;
	char name[16];
	char result[PG_RESULT_LEN];
};

struct pg_net {
	struct net *net;
	struct proc_dir_entry *proc_dir;
	struct proc_dir_entry *ctrl;
	struct list_head threads;
	struct mutex lock;		/* device add/remove, start/stop */
	/*
	 * Every generator's odev, for the netdev notifier: a device no
	 * generator uses costs it one spinlocked list walk, no thread trip.
	 */
	spinlock_t odevs_lock;
	struct list_head odevs;
	wait_queue_head_t run_wq;	/* "start" waits for all devices to stop */
	atomic_t running;
	u64 start_ns;			/* CLOCK_MONOTONIC of the last "start" */
	bool dying;
	struct pg_rx *rx;
	char ctrl_result[PG_RESULT_LEN];
};

/* main.c */
struct pg_net *pg_net_get(const struct net *net);
extern u32 pg_allow_netns_admin;
extern u32 pg_max_devs_per_thread;
extern u32 pg_max_devs_per_netns;
extern u64 pg_spin_ns;
extern u64 pg_max_lag_ns;
extern u32 pg_catchup_pct;

/*
 * Who may command the module: CAP_NET_ADMIN in the initial user namespace,
 * as upstream pktgen requires (capable()), held both by the writer and by
 * whoever opened the file, whatever the file's owner and mode. With the
 * module parameter allow_netns_admin=1 (off by default; its risk:
 * ../docs/pktgen-generator.md), CAP_NET_ADMIN over the user namespace
 * that owns the file's network namespace is enough: a container's root
 * drives its own namespace's generators.
 */
static inline bool pg_may_write(const struct file *file, const struct pg_net *pn)
{
	struct user_namespace *ns = READ_ONCE(pg_allow_netns_admin) ?
				    pn->net->user_ns : &init_user_ns;

	return file_ns_capable(file, ns, CAP_NET_ADMIN) && ns_capable(ns, CAP_NET_ADMIN);
}

/* parse.c */
int pg_read_cmd(const char __user *ubuf, size_t count, char *buf, size_t size);
int pg_split(char *buf, char **argv, int max);
int pg_get_args(const char __user *ubuf, size_t count, char *buf, char **argv,
		int max);
const char *pg_args_error(int err);
int pg_parse_u64(const char *s, u64 *v);
int pg_parse_u32(const char *s, u32 *v, u32 max);
int pg_parse_hex(const char *s, u32 *v, unsigned int maxdigits);
int pg_parse_ip4(const char *s, u32 *host_order);
int pg_parse_ip6(const char *s, struct in6_addr *a);
int pg_parse_mac(const char *s, u8 *mac);

/* proc_ctrl.c: pgctrl and the kpktgend_N files */
int pg_ctrl_init(struct pg_net *pn);
int pg_ctrl_add_thread(struct pg_net *pn, unsigned int cpu);
void pg_ctrl_exit(struct pg_net *pn);
void pg_remove_netdev(struct pg_net *pn, struct net_device *dev);
void pg_rename_netdev(struct pg_net *pn, struct net_device *dev);

/* device.c */
extern const char *const pg_flag_names[PGF_NR];
struct pg_dev *pg_dev_alloc(struct pg_thread *t, struct net_device *odev,
			    const char *name);
void pg_dev_free(struct pg_dev *pd);
bool pg_track_dev(struct pg_net *pn, struct pg_dev *pd);
void pg_untrack_dev(struct pg_dev *pd);
bool pg_netdev_used(struct pg_net *pn, const struct net_device *dev);

static inline bool pg_dev_has_flag(const struct pg_dev *pd, enum pg_flag f)
{
	return test_bit(f, pd->flags);
}

/* device_ctl.c */
int pg_dev_proc_create(struct pg_net *pn, struct pg_dev *pd);
int pg_res(struct pg_dev *pd, int err, const char *fmt, ...) __printf(3, 4);
int pg_bad(struct pg_dev *pd, char **argv, const char *want);
int pg_cmd_u32_field(struct pg_dev *pd, char **argv, u32 *field, u32 max, const char *want);

/* device_hdr.c: the header commands device_ctl.c's table names */
int pg_cmd_ip4(struct pg_dev *pd, int argc, char **argv);
int pg_cmd_ip6(struct pg_dev *pd, int argc, char **argv);
int pg_cmd_mac(struct pg_dev *pd, int argc, char **argv);
int pg_cmd_mac_count(struct pg_dev *pd, int argc, char **argv);
int pg_cmd_flows(struct pg_dev *pd, int argc, char **argv);
int pg_cmd_flowlen(struct pg_dev *pd, int argc, char **argv);
int pg_cmd_queue_map(struct pg_dev *pd, int argc, char **argv);
int pg_cmd_mpls(struct pg_dev *pd, int argc, char **argv);
int pg_cmd_vlan(struct pg_dev *pd, int argc, char **argv);
int pg_cmd_tos(struct pg_dev *pd, int argc, char **argv);
int pg_cmd_skb_priority(struct pg_dev *pd, int argc, char **argv);
int pg_cmd_spi(struct pg_dev *pd, int argc, char **argv);
int pg_cmd_stream_id(struct pg_dev *pd, int argc, char **argv);
int pg_cmd_dst_stride(struct pg_dev *pd, int argc, char **argv);
int pg_cmd_udp(struct pg_dev *pd, int argc, char **argv);

/* device_show.c */
int pg_dev_show(struct seq_file *m, void *v);

/* thread.c */
struct pg_thread *pg_thread_create(struct pg_net *pn, unsigned int cpu);
void pg_thread_destroy(struct pg_thread *t);
int pg_thread_request(struct pg_thread *t, int req, void *arg);
void pg_dev_result_line(struct pg_dev *pd);

/* packet.c */
int pg_dev_prepare(struct pg_dev *pd);
void pg_dev_release_run(struct pg_dev *pd);
struct sk_buff *pg_build_skb(struct pg_thread *t, struct pg_dev *pd, u64 mono);

/* rx_ctl.c */
int pg_rx_init(struct pg_net *pn);
void pg_rx_exit(struct pg_net *pn);

#endif
