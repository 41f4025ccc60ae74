/* weft/blocking.h: on a fiber, the fiber engine parks it; on any other
 * thread, the thread blocks. */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <time.h>

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

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
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
	int64_t deadline = timeout_ns < 0 ? -1 : now_ns() + timeout_ns;
	for (;;) {
		int ms = -1;
		if (deadline >= 0) {
			int64_t left = deadline - now_ns();
			if (left < 0)
				left = 0;
			/* Round up: poll's unit is a millisecond, and waking early
			 * would report a timeout before it happened. */
			ms = left / 1000000 + (left % 1000000 != 0);
		}
		struct pollfd p = {.fd = fd, .events = events};
		int n = poll(&p, 1, ms);
		if (n > 0) {
			if (p.revents & POLLNVAL)
				return WEFT_EINVAL;
			return p.revents;
		}
		if (n == 0 && deadline >= 0 && now_ns() >= deadline)
			return WEFT_ETIMEDOUT;
		if (n < 0 && errno != EINTR)
			return WEFT_EINVAL;
	}
}

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
	if (!c.waiter.fiber || weft__thread_create(&helper, blocking_main, &c) != 0) {
		fn(arg); /* a kernel thread, or no helper to be had: block here */
		return 0;
	}
	weft__waiter_park_for(&c.waiter, WEFT__WAIT_BLOCKING);
	pthread_join(helper, NULL);
	return 0;
}
