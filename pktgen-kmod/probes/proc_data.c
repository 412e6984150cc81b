// SPDX-License-Identifier: GPL-2.0
/*
 * The data of a /proc entry from its inode: pde_data() (5.17+), the
 * PDE_DATA() macro before.
 * choices: pde_data pde_data_macro
 */
#include <linux/fs.h>
#include <linux/proc_fs.h>

void *probe_pde(const struct inode *inode);
void *probe_pde(const struct inode *inode)
{
#ifdef PROBE_pde_data
	return pde_data(inode);
#elif defined(PROBE_pde_data_macro)
	return PDE_DATA(inode);
#else
	return (void *)inode;
#endif
}
