/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one place for kernel-version differences (6.1 .. 6.12+).
 */
#ifndef RFCPG_COMPAT_H
#define RFCPG_COMPAT_H

#include <linux/version.h>
#include <linux/types.h>
#include <linux/netdevice.h>
#include <linux/skbuff.h>
#include <linux/string.h>

/* skb_frag_fill_page_desc() appeared in 6.5; skb_fill_page_desc() is on both. */
static inline void pg_skb_add_frag(struct sk_buff *skb, int i, struct page *page,
				   unsigned int off, unsigned int size)
{
	skb_fill_page_desc(skb, i, page, off, size);
}

/* <asm/unaligned.h> moved to <linux/unaligned.h> in 6.12. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 12, 0)
#include <linux/unaligned.h>
#else
#include <asm/unaligned.h>
#endif

/*
 * The receive timestamp the core put on an skb (net_enable_timestamp()),
 * in CLOCK_REALTIME ns, or 0 if it has none or carries another clock
 * (a delivery time). 6.11 replaced mono_delivery_time by tstamp_type.
 */
static inline u64 pg_skb_rx_realtime_ns(const struct sk_buff *skb)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 11, 0)
	if (skb->tstamp_type != SKB_CLOCK_REALTIME)
		return 0;
#else
	if (skb->mono_delivery_time)
		return 0;
#endif
	return (u64)ktime_to_ns(skb->tstamp);
}

/* get_random_u32_below() exists on both 6.1 and 6.12 (prandom_u32 is gone). */

#endif
