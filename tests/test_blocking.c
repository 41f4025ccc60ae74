/* weft/blocking.h under every model: from tasks and from outside.
 *
 * These calls park a fiber and block a kernel thread (blocking.h), so what a
 * case may expect of the other tasks meanwhile depends on the model: under
 * a fiber model (wt_fiber_model) the caller's worker runs other tasks while
 * it waits; under a kernel-thread model the other tasks need other workers.
 * Each case checks the behaviour its model promises, never less. */
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"

static weft_rt *create(weft_policy policy)
{
	weft_config cfg;
	wt_config(&cfg);
	cfg.policy = policy;
	return wt_create(&cfg);
}

/* ------------------------------------------------------------ sleep */

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
	weft_rt *rt = create(WEFT_POLICY_PRIORITY);
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

/* Ten tasks sleep SLEEP_MS each in weft_sleep_ns, posted at once, and an
 * eleventh keeps taking short sleeps. Under a fiber model the ten sleeps
 * overlap on any number of workers (a sleeping fiber parks), and the
 * eleventh task gets through its loop while they sleep; under a
 * kernel-thread model each sleep holds a worker, and once every worker has
 * slept past the grace period a stand-in thread runs the next queued task
 * (core/standin.c), so more than min(10, W) sleep at once (all ten unless
 * starting the stand-ins takes longer than a sleep). */
enum { SLEEPERS = 10, TICKS = 10 };
/* Under TSan starting ten fibers has taken 45 ms of the 50 before the
 * ticker got its turn: sanitizer builds sleep longer. */
#define SLEEP_MS (WT_SANITIZER ? 200 : 50)
static _Atomic int sleeping, sleeping_max, ticks_done, ticks_at_first_wake = -1;

static void sleeper(void *arg)
{
	(void)arg;
	int r = atomic_fetch_add(&sleeping, 1) + 1;
	int m = atomic_load(&sleeping_max);
	while (r > m && !atomic_compare_exchange_weak(&sleeping_max, &m, r))
		;
	WT_CHECK_RC(0, weft_sleep_ns(SLEEP_MS * 1000000LL));
	int none = -1;
	atomic_compare_exchange_strong(&ticks_at_first_wake, &none, atomic_load(&ticks_done));
	atomic_fetch_sub(&sleeping, 1);
}

static void ticker_task(void *arg)
{
	(void)arg;
	for (int i = 0; i < TICKS; i++) {
		atomic_fetch_add(&ticks_done, 1);
		WT_CHECK_RC(0, weft_sleep_ns(1000000));
	}
}

static void sleeps_overlap(void)
{
	weft_rt *rt = create(WEFT_POLICY_FIFO);
	int nw = wt_workers(rt);
	int want = wt_fiber_model() ? SLEEPERS : nw < SLEEPERS ? nw : SLEEPERS;
	wt_sleep_ms(20); /* let the workers fall asleep */
	weft_task t[SLEEPERS + 1];
	double t0 = wt_now();
	for (int i = 0; i < SLEEPERS; i++) {
		assert_rc(0, weft_task_init(&t[i], sleeper, NULL));
		assert_rc(0, weft_post(rt, &t[i]));
	}
	assert_rc(0, weft_task_init(&t[SLEEPERS], ticker_task, NULL));
	assert_rc(0, weft_post(rt, &t[SLEEPERS]));
	assert_rc(0, weft_wait_all(rt));
	double took = wt_now() - t0;
	assert_rc(0, weft_rt_destroy(rt));
	assert_true(took >= SLEEP_MS * 1e-3);
	if (!wt_fiber_model() && want < SLEEPERS && atomic_load(&sleeping_max) > want)
		want = atomic_load(&sleeping_max); /* stand-ins: more than the workers */
	if (atomic_load(&sleeping_max) != want)
		fail_msg("%d of %d tasks slept at once in weft_sleep_ns, expected %d (%s, %d "
		         "worker(s)); the run took %.3f s",
		         atomic_load(&sleeping_max), SLEEPERS, want, weft_model_name(wt.model), nw,
		         took);
	assert_int_equal(atomic_load(&ticks_done), TICKS);
	/* On fibers the ticker's ten 1 ms sleeps fit inside the long ones. */
	if (wt_fiber_model() && atomic_load(&ticks_at_first_wake) < TICKS / 2)
		fail_msg("only %d of %d ticks while ten fibers slept: the worker did not run "
		         "the ticker meanwhile",
		         atomic_load(&ticks_at_first_wake), TICKS);
}

/* ------------------------------------------------------------ fds */

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

/* From inside a task: a timeout, and a descriptor that is not open. */
static void misuse_task(void *arg)
{
	(void)arg;
	double t0 = wt_now();
	WT_CHECK_RC(WEFT_ETIMEDOUT, weft_wait_fd(pipefd[0], POLLIN, 30 * 1000000));
	WT_CHECK(wt_now() - t0 >= 0.030);
	WT_CHECK_RC(WEFT_EINVAL, weft_wait_fd(wt_closed_fd(), POLLIN, 1000000));
	WT_CHECK_RC(WEFT_EINVAL, weft_wait_fd(pipefd[0], 0, 0));
}

static void wait_fd(void)
{
	weft_rt *rt = create(WEFT_POLICY_PRIORITY);
	assert_int_equal(pipe(pipefd), 0);

	/* From outside. */
	double t0 = wt_now();
	assert_rc(WEFT_ETIMEDOUT, weft_wait_fd(pipefd[0], POLLIN, 30 * 1000000));
	assert_true(wt_now() - t0 >= 0.030);
	assert_rc(WEFT_EINVAL, weft_wait_fd(-1, POLLIN, 0));
	assert_rc(WEFT_EINVAL, weft_wait_fd(pipefd[0], 0, 0));
	assert_true(weft_wait_fd(pipefd[1], POLLOUT, 0) & POLLOUT);

	weft_task m;
	assert_rc(0, weft_task_init(&m, misuse_task, NULL));
	assert_rc(0, weft_post(rt, &m));
	assert_rc(0, weft_wait(&m));

	/* A reader task waits; the writer is a task too when the waiting
	 * reader leaves room for it (another worker, or a parked fiber), else
	 * the test thread writes. */
	int got = 0;
	weft_task r, w;
	assert_rc(0, weft_task_init(&r, read_task, &got));
	assert_rc(0, weft_post(rt, &r));
	if (wt_blockers(rt) > 1) {
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

/* ------------------------------------------------------------ weft_blocking */

static void add_one(void *arg)
{
	(*(int *)arg)++;
}

/* weft_blocking from a task: under a fiber model the call runs on a thread
 * of the runtime's blocking pool (weft_worker_index() -1 there) while the fiber parks and its
 * worker runs others (the ticker advances during the call); elsewhere it
 * runs directly on the caller's thread, and the ticker advances only if it
 * has a worker of its own. The ticker ticks until the call is over. */
static _Atomic int call_ticks, call_done, call_index = 99, caller_index = 98;

static void slow_call(void *arg)
{
	(void)arg;
	atomic_store(&call_index, weft_worker_index());
	wt_sleep_ms(50); /* a plain blocking call: would stall a fiber's worker */
}

static void blocking_task(void *arg)
{
	int *advanced = arg;
	atomic_store(&caller_index, weft_worker_index());
	int before = atomic_load(&call_ticks);
	WT_CHECK_RC(0, weft_blocking(slow_call, NULL));
	*advanced = atomic_load(&call_ticks) > before;
	atomic_store(&call_done, 1);
}

static void call_ticker(void *arg)
{
	(void)arg;
	double end = wt_now() + WT_PATIENCE_S;
	while (!atomic_load(&call_done) && wt_now() < end) {
		atomic_fetch_add(&call_ticks, 1);
		WT_CHECK_RC(0, weft_sleep_ns(1000000));
	}
}

static void blocking_call(void)
{
	int n = 0;
	assert_rc(WEFT_EINVAL, weft_blocking(NULL, NULL));
	assert_rc(0, weft_blocking(add_one, &n)); /* not a task: runs right here */
	assert_int_equal(n, 1);

	weft_rt *rt = create(WEFT_POLICY_FIFO);
	int nw = wt_workers(rt);
	int advanced = -1;
	weft_task t[2];
	assert_rc(0, weft_task_init(&t[0], blocking_task, &advanced));
	assert_rc(0, weft_task_init(&t[1], call_ticker, NULL));
	for (int i = 0; i < 2; i++)
		assert_rc(0, weft_post(rt, &t[i]));
	assert_rc(0, weft_wait_all(rt));
	assert_rc(0, weft_rt_destroy(rt));
	if (wt_fiber_model()) {
		assert_int_equal(atomic_load(&call_index), -1); /* ran on a helper */
		if (advanced != 1)
			fail_msg("the worker ran nothing else during weft_blocking");
	} else {
		assert_int_equal(atomic_load(&call_index), atomic_load(&caller_index));
		if (nw > 1 && advanced != 1)
			fail_msg("the ticker, on a worker of its own, did not advance during "
			         "weft_blocking");
	}
}

WT_CASES(WT_CASE(sleep_and_yield), WT_CASE(sleeps_overlap), WT_CASE(wait_fd),
         WT_CASE(blocking_call));
