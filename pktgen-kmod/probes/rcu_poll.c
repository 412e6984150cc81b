// SPDX-License-Identifier: GPL-2.0
/*
 * A grace-period cookie to wait on later: start_poll_synchronize_rcu()
 * (5.12+) also starts the grace period; get_state_synchronize_rcu() only
 * takes the cookie, and cond_synchronize_rcu() waits as needed with either.
 * choices: start_poll get_state
 */
#include <linux/rcupdate.h>

unsigned long probe_rcu_cookie(void);
unsigned long probe_rcu_cookie(void)
{
#ifdef PROBE_start_poll
	return start_poll_synchronize_rcu();
#elif defined(PROBE_get_state)
	return get_state_synchronize_rcu();
#else
	return 0;
#endif
}
