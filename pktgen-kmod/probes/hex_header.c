// SPDX-License-Identifier: GPL-2.0
/*
 * Where hex_to_bin() and mac_pton() are declared: <linux/hex.h> on new
 * kernels (7.x no longer pulls it in through <linux/kernel.h>), in
 * <linux/kernel.h> itself before.
 * choices: hex_h kernel_h
 */
#include <linux/types.h>

#ifdef PROBE_hex_h
#include <linux/hex.h>
#endif
#ifdef PROBE_kernel_h
#include <linux/kernel.h>
#endif

#if defined(PROBE_hex_h) || defined(PROBE_kernel_h)
int probe_hex(const char *s, u8 *mac);
int probe_hex(const char *s, u8 *mac)
{
	return hex_to_bin(s[0]) + mac_pton(s, mac);
}
#endif
