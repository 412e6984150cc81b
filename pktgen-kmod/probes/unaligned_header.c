// SPDX-License-Identifier: GPL-2.0
/*
 * Where get/put_unaligned_be*() are declared: <linux/unaligned.h> since
 * 6.12, <asm/unaligned.h> before.
 * choices: linux asm
 */
#include <linux/types.h>

#ifdef PROBE_linux
#include <linux/unaligned.h>
#endif
#ifdef PROBE_asm
#include <asm/unaligned.h>
#endif

#if defined(PROBE_linux) || defined(PROBE_asm)
u32 probe_unaligned(const void *p);
u32 probe_unaligned(const void *p)
{
	return get_unaligned_be32(p);
}
#endif
