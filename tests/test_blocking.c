/* weft/blocking.h under every model: from tasks and from outside. */
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"

static weft_rt *create(void)
{
	weft_config cfg;
	wt_config(&cfg);
	return wt_create(&cfg);
}

static void sleep_task(void *arg)
{
	double *slept = arg;
	double t0 = wt_now();
	WT_CHECK_RC(0, weft_sleep_ns(20 * 1000000));
	*slept = wt_now() - t0;
	WT_CHECK_RC(0, weft_yield());
}

static void sleep_and_yield(void)
{
	weft_rt *rt = create();
	double slept = 0;
	weft_task t;
	assert_rc(0, weft_task_init(&t, sleep_task, &slept));
	assert_rc(0, weft_post(rt, &t));
	assert_rc(0, weft_wait(&t));
	assert_true(slept >= 0.020);
	assert_rc(WEFT_EINVAL, weft_sleep_ns(-1));
	assert_rc(0, weft_sleep_ns(0));
	assert_rc(0, weft_yield());
	assert_rc(0, weft_rt_destroy(rt));
}

static int pipefd[2];

static void write_task(void *arg)
{
	(void)arg;
	WT_CHECK_RC(0, weft_sleep_ns(10 * 1000000));
	WT_CHECK(write(pipefd[1], "x", 1) == 1);
}

static void read_task(void *arg)
{
	int *got = arg;
	*got = weft_wait_fd(pipefd[0], POLLIN, 10LL * 1000000000);
}

static void wait_fd(void)
{
	weft_rt *rt = create();
	assert_int_equal(pipe(pipefd), 0);

	double t0 = wt_now();
	assert_rc(WEFT_ETIMEDOUT, weft_wait_fd(pipefd[0], POLLIN, 30 * 1000000));
	assert_true(wt_now() - t0 >= 0.030);
	assert_rc(WEFT_EINVAL, weft_wait_fd(-1, POLLIN, 0));
	assert_rc(WEFT_EINVAL, weft_wait_fd(pipefd[0], 0, 0));
	assert_true(weft_wait_fd(pipefd[1], POLLOUT, 0) & POLLOUT);

	/* A reader task waits; the writer is a task too when there is a worker
	 * for it, else the test thread writes. */
	int got = 0;
	weft_task r, w;
	assert_rc(0, weft_task_init(&r, read_task, &got));
	assert_rc(0, weft_post(rt, &r));
	if (wt.workers > 1) {
		assert_rc(0, weft_task_init(&w, write_task, NULL));
		assert_rc(0, weft_post(rt, &w));
	} else {
		wt_sleep_ms(10);
		assert_int_equal(write(pipefd[1], "x", 1), 1);
	}
	assert_rc(0, weft_wait_all(rt));
	assert_true(got > 0 && (got & POLLIN));
	close(pipefd[0]);
	close(pipefd[1]);
	assert_rc(0, weft_rt_destroy(rt));
}

static void add_one(void *arg)
{
	(*(int *)arg)++;
}

static void blocking_call(void)
{
	int n = 0;
	assert_rc(WEFT_EINVAL, weft_blocking(NULL, NULL));
	assert_rc(0, weft_blocking(add_one, &n));
	assert_int_equal(n, 1);
}

WT_CASES(WT_CASE(sleep_and_yield), WT_CASE(wait_fd), WT_CASE(blocking_call));
