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
	int64_t now = weft__now_ns();
	int64_t deadline = timeout_ns < 0 ? INT64_MAX : weft__sat_add(now, timeout_ns);
	weft__block b;
	weft__sleep_ticks ticks = weft__sleep_ticks_begin(&b, now);
	int rc;
	for (;;) {
		int64_t d = weft__sleep_ticks_next(&ticks, &b, now, weft__ns_left(deadline, now));
		struct timespec ts = {.tv_sec = (time_t)(d / 1000000000),
		                      .tv_nsec = (long)(d % 1000000000)};
		struct pollfd p = {.fd = fd, .events = events};
		/* ppoll: to the nanosecond, where poll's unit is a millisecond */
		int n = ppoll(&p, 1, d == INT64_MAX ? NULL : &ts, NULL);
		if (n > 0) {
			rc = p.revents & POLLNVAL ? WEFT_EINVAL : p.revents;
			break;
		}
		now = weft__now_ns();
		if (n == 0 && deadline != INT64_MAX && now >= deadline) {
			rc = WEFT_ETIMEDOUT;
			break;
		}
		if (n < 0 && errno != EINTR) {
			rc = WEFT_EINVAL;
			break;
		}
	}
	weft__block_end(&b);
	return rc;
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
