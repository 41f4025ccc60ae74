/* futex(2) behind core/futex.h. Does not support shared-memory futexes. */
#include <errno.h>
#include <linux/futex.h>
#include <stdbool.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/futex.h"

void weft__timer_slack_fine(void)
{
	static _Thread_local bool done;
	if (!done) {
		prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
		done = true;
	}
}

void weft__futex_wait(_Atomic uint32_t *word, uint32_t expected, int64_t timeout_ns)
{
	struct timespec ts, *tsp = NULL;
	if (timeout_ns >= 0) {
		ts.tv_sec = (time_t)(timeout_ns / 1000000000);
		ts.tv_nsec = (long)(timeout_ns % 1000000000);
		tsp = &ts;
	}
	syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, expected, tsp, NULL, 0);
}

int weft__futex_wake(_Atomic uint32_t *word, int n)
{
	long woken = syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
	return woken > 0 ? (int)woken : 0;
}

void weft__futex_fork_child(void)
{
}
