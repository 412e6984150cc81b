// SPDX-License-Identifier: GPL-2.0
/*
 * How an skb says its tstamp is not a receive time (CLOCK_REALTIME) but a
 * delivery time: skb->tstamp_type (6.11+), the skb->mono_delivery_time bit
 * (5.18 .. 6.10), or nothing (older kernels clear a delivery time before
 * the receive path sees the skb).
 * choices: tstamp_type mono_delivery_time none
 */
#include <linux/skbuff.h>

bool probe_tstamp(const struct sk_buff *skb);
bool probe_tstamp(const struct sk_buff *skb)
{
#ifdef PROBE_tstamp_type
	return skb->tstamp_type == SKB_CLOCK_REALTIME;
#elif defined(PROBE_mono_delivery_time)
	return !skb->mono_delivery_time;
#else
	return skb->tstamp != 0;
#endif
}
