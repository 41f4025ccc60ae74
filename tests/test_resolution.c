/* Timer resolution, under every model and worker count (MATRIX):
 * `test_resolution <case> <model> <workers>`.
 *
 * A fiber worker with nothing to run sleeps in its poller until the next
 * timer. With a millisecond timeout (epoll_wait) a 200 us sleep or
 * deadline took at least a millisecond; the poller's timeout is now in
 * nanoseconds (epoll_pwait2, or a timerfd on kernels without it). The
 * bound asserted is the tick, not the microseconds the benchmark sees
 * (bench/timed_waits): the median of 21 waits under 900 us, so that a
 * loaded machine does not fail it but a millisecond resolution does. */
#include <stdlib.h>

#include "core/testing.h"
#include "harness.h"

#define US     1000LL
#define WAIT   (200 * US)
#define BOUND  (900 * US)
#define ROUNDS 21

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

static int64_t median(int64_t *v)
{
	qsort(v, ROUNDS, sizeof(*v), cmp_i64);
	return v[ROUNDS / 2];
}

static void hold(void *arg)
{
	while (!atomic_load((_Atomic int *)arg))
		weft_sleep_ns(100 * US);
}

typedef struct probe {
	weft_task *held;
	_Atomic int posted; /* held is posted (after this task: one worker) */
	int64_t sleep[ROUNDS], until[ROUNDS];
} probe;

/* Every round sleeps, then waits for a task that does not finish in time;
 * each returns no earlier than asked. */
static void measure(void *arg)
{
	probe *p = arg;
	while (!atomic_load(&p->posted))
		weft_sleep_ns(10 * US);
	for (int i = 0; i < ROUNDS; i++) {
		int64_t t0 = weft_clock_ns();
		weft_sleep_ns(WAIT);
		p->sleep[i] = weft_clock_ns() - t0;
		if (p->sleep[i] < WAIT)
			wt_async_fail(__FILE__, __LINE__, "slept %lld ns of %lld",
			              (long long)p->sleep[i], (long long)WAIT);
		int64_t d = weft_clock_ns() + WAIT;
		int rc = weft_wait_until(p->held, d);
		int64_t now = weft_clock_ns();
		p->until[i] = now - (d - WAIT);
		if (rc != WEFT_ETIMEDOUT || now < d)
			wt_async_fail(__FILE__, __LINE__,
			              "weft_wait_until: %s, %lld ns after its deadline",
			              weft_err_name(rc), (long long)(now - d));
	}
}

static void fine(void)
{
	weft_config cfg;
	wt_config(&cfg);
	weft_rt *rt = wt_create(&cfg);
	_Atomic int release = 0;
	weft_task held, t;
	probe p = {.held = &held};
	/* With one thread worker, held waits in the queue behind t. */
	assert_rc(0, weft_task_init(&t, measure, &p));
	assert_rc(0, weft_post(rt, &t));
	assert_rc(0, weft_task_init(&held, hold, &release));
	assert_rc(0, weft_post(rt, &held));
	atomic_store(&p.posted, 1);
	assert_rc(0, weft_wait(&t));
	atomic_store(&release, 1);
	assert_rc(0, weft_wait_all(rt));
	wt_check_async();
	int64_t s = median(p.sleep), u = median(p.until);
	print_message("[ info     ] %lld us waits: sleep median %.1f us, wait_until %.1f us\n",
	              (long long)(WAIT / US), (double)s / 1e3, (double)u / 1e3);
	assert_true(s < BOUND);
	assert_true(u < BOUND);
	assert_rc(0, weft_rt_destroy(rt));
}

/* With epoll_pwait2 where the kernel has it. */
static void fine_timeouts(void)
{
	fine();
}

/* As on a kernel without epoll_pwait2: the timerfd carries the timeout. */
static void fine_timeouts_timerfd(void)
{
	weft__fault_no_pwait2(true);
	fine();
	weft__fault_no_pwait2(false);
}

WT_CASES(WT_CASE(fine_timeouts), WT_CASE(fine_timeouts_timerfd));
