/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one place for kernel differences (5.10 .. 7.x). Each choice is made
 * by scripts/configure, which compiles the snippets in probes/ against the
 * target kernel's headers and writes the answers to probes.h: a kernel that
 * backports an API (RHEL) gets it whatever its version number says.
 */
#ifndef RFCPG_COMPAT_H
#define RFCPG_COMPAT_H

#include <linux/types.h>
#include <linux/kernel.h>
#include <linux/netdevice.h>
#include <linux/skbuff.h>
#include <linux/string.h>
#include <linux/rcupdate.h>
#include <linux/proc_fs.h>

#include "probes.h"

#if defined(PG_HAVE_UNALIGNED_HEADER_LINUX)
#include <linux/unaligned.h>
#elif defined(PG_HAVE_UNALIGNED_HEADER_ASM)
#include <asm/unaligned.h>
#else
#error "probes.h: no answer for unaligned_header (run scripts/configure)"
#endif

#if defined(PG_HAVE_HEX_HEADER_HEX_H)
#include <linux/hex.h>
#elif !defined(PG_HAVE_HEX_HEADER_KERNEL_H)
#error "probes.h: no answer for hex_header (run scripts/configure)"
#endif

#if defined(PG_HAVE_PROC_DATA_PDE_DATA_MACRO)
#define pde_data(inode) PDE_DATA(inode)
#elif !defined(PG_HAVE_PROC_DATA_PDE_DATA)
#error "probes.h: no answer for proc_data (run scripts/configure)"
#endif

/* A cookie for cond_synchronize_rcu(); starts the grace period where it can. */
static inline unsigned long pg_rcu_gp_cookie(void)
{
#if defined(PG_HAVE_RCU_POLL_START_POLL)
	return start_poll_synchronize_rcu();
#elif defined(PG_HAVE_RCU_POLL_GET_STATE)
	return get_state_synchronize_rcu();
#else
#error "probes.h: no answer for rcu_poll (run scripts/configure)"
#endif
}

/* skb_frag_fill_page_desc() appeared in 6.5; skb_fill_page_desc() is on all. */
static inline void pg_skb_add_frag(struct sk_buff *skb, int i, struct page *page,
				   unsigned int off, unsigned int size)
{
	skb_fill_page_desc(skb, i, page, off, size);
}

/*
 * The receive timestamp the core put on an skb (net_enable_timestamp()),
 * in CLOCK_REALTIME ns, or 0 if it has none or carries another clock (a
 * delivery time). Before 5.18 nothing marks a delivery time: the stack
 * clears one on the way to another namespace or host.
 */
static inline u64 pg_skb_rx_realtime_ns(const struct sk_buff *skb)
{
#if defined(PG_HAVE_SKB_TSTAMP_TYPE_TSTAMP_TYPE)
	if (skb->tstamp_type != SKB_CLOCK_REALTIME)
		return 0;
#elif defined(PG_HAVE_SKB_TSTAMP_TYPE_MONO_DELIVERY_TIME)
	if (skb->mono_delivery_time)
		return 0;
#elif !defined(PG_HAVE_SKB_TSTAMP_TYPE_NONE)
#error "probes.h: no answer for skb_tstamp_type (run scripts/configure)"
#endif
	return (u64)ktime_to_ns(skb->tstamp);
}

#endif
