/* weft/blocking.h: on a fiber, the fiber engine parks it; on any other
 * thread, the thread blocks. */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <time.h>

#include "core/clock.h"
#include "core/futex.h"
#include "core/internal.h"
#include "fiber/engine.h"
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
	struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000),
	                      .tv_nsec = (long)(ns % 1000000000)};
	weft__timer_slack_fine();
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
	return 0;
}

/* weft_wait_fd is in io/fd.c, with the other waits on fds. */

/* On a fiber, the call runs on a helper thread while the fiber parks; the
 * fiber joins the helper when it wakes, so no thread outlives the call. */
typedef struct blocking_call {
	void (*fn)(void *arg);
	void *arg;
	weft__waiter waiter;
} blocking_call;

static void *blocking_main(void *p)
{
	blocking_call *c = p;
	c->fn(c->arg);
	weft__waiter_unpark(&c->waiter); /* c is gone once the fiber resumes */
	return NULL;
}

int weft_blocking(void (*fn)(void *arg), void *arg)
{
	if (!fn)
		return WEFT_EINVAL;
	blocking_call c = {.fn = fn, .arg = arg};
	weft__waiter_init(&c.waiter, NULL);
	pthread_t helper;
	if (!c.waiter.fiber ||
	    weft__thread_create(&helper, blocking_main, &c, "blocking", false) != 0) {
		fn(arg); /* a kernel thread, or no helper to be had: block here */
		return 0;
	}
	weft__waiter_park_for(&c.waiter, WEFT__WAIT_BLOCKING);
	pthread_join(helper, NULL);
	return 0;
}
