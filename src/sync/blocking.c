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

int weft_wait_fd(int fd, short events, int64_t timeout_ns)
{
	if (fd < 0 || events == 0)
		return WEFT_EINVAL;
	if (weft__tls.fiber) {
		int rc = weft__fiber_wait_fd(fd, events, timeout_ns);
		if (rc != WEFT_EINVAL)
			return rc;
		/* epoll refuses regular files, which are always ready: poll. */
	}
	/* INT64_MAX, like a negative timeout, has no end. */
	int64_t deadline = timeout_ns < 0 ? INT64_MAX : weft__sat_add(weft__now_ns(), timeout_ns);
	for (;;) {
		int ms = -1;
		if (deadline != INT64_MAX) {
			int64_t left = weft__ns_left(deadline, weft__now_ns());
			/* Round up: poll's unit is a millisecond, and waking early
			 * would report a timeout before it happened. */
			left = left / 1000000 + (left % 1000000 != 0);
			ms = left > INT32_MAX ? INT32_MAX : (int)left;
		}
		struct pollfd p = {.fd = fd, .events = events};
		int n = poll(&p, 1, ms);
		if (n > 0) {
			if (p.revents & POLLNVAL)
				return WEFT_EINVAL;
			return p.revents;
		}
		if (n == 0 && deadline != INT64_MAX && weft__now_ns() >= deadline)
			return WEFT_ETIMEDOUT;
		if (n < 0 && errno != EINTR)
			return WEFT_EINVAL;
	}
}

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
