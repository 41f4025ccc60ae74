/* weft/blocking.h: on a fiber, the fiber engine parks it; on any other
 * thread, the thread blocks. */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <time.h>

#include "core/clock.h"
#include "core/futex.h"
#include "core/internal.h"
#include "core/standin.h"
#include "fiber/engine.h"
#include "io/pool.h"
#include "sync/waiter.h"
#include <weft/blocking.h>

int weft_yield(void)
{
	if (weft__tls.fiber) {
		weft__fiber_yield();
		return 0;
	}
	sched_yield();
	return 0;
}

/* On a kernel thread, weft_sleep_ns and weft_wait_fd are weft waits like
 * any other: a worker that sleeps in one past the grace period may get a
 * stand-in (core/standin.h), so their sleeps end at its ticks too. */
int weft_sleep_ns(int64_t ns)
{
	if (ns < 0)
		return WEFT_EINVAL;
	if (ns == 0)
		return weft_yield();
	if (weft__tls.fiber) {
		weft__fiber_sleep(ns);
		return 0;
	}
	weft__timer_slack_fine();
	int64_t now = weft__now_ns();
	int64_t deadline = weft__sat_add(now, ns);
	weft__block b;
	weft__sleep_ticks ticks = weft__sleep_ticks_begin(&b, now);
	for (;;) {
		int64_t left = weft__ns_left(deadline, now);
		if (left == 0)
			break;
		int64_t d = weft__sleep_ticks_next(&ticks, &b, now, left);
		struct timespec ts = {.tv_sec = (time_t)(d / 1000000000),
		                      .tv_nsec = (long)(d % 1000000000)};
		(void)nanosleep(&ts, NULL); /* EINTR: the loop sleeps what is left */
		now = weft__now_ns();
	}
	weft__block_end(&b);
	return 0;
}

/* weft_wait_fd is in io/fd.c, with the other waits on fds. */

/* On a fiber, the call runs on the runtime's blocking pool (io/pool.h)
 * while the fiber parks: one hand-off each way, no thread per call. */
typedef struct blocking_call {
	weft__job job;
	void (*fn)(void *arg);
	void *arg;
} blocking_call;

static void blocking_run(weft__job *j)
{
	blocking_call *c = (blocking_call *)(void *)j;
	c->fn(c->arg);
}

int weft_blocking(void (*fn)(void *arg), void *arg)
{
	if (!fn)
		return WEFT_EINVAL;
	if (!weft__tls.fiber || !weft__tls.rt) {
		fn(arg); /* a kernel thread: block here */
		return 0;
	}
	blocking_call c = {.job = {.run = blocking_run, .fd = -1}, .fn = fn, .arg = arg};
	weft__pool_run(weft__tls.rt, &c.job, WEFT__WAIT_BLOCKING); /* runs it here if refused */
	return 0;
}
