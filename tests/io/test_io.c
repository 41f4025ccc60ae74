/* The fiber models' building blocks for waiting: the timer heap and the
 * poller. */
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/clock.h"
#include "core/internal.h"
#include "io/poller.h"
#include "io/timers.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

enum { N = 5000 };

/* Random adds, removals and pops against a plain array as the reference. */
static void timers_random(void **state)
{
	(void)state;
	static weft__timer t[N];
	weft__timers h;
	weft__timers_init(&h);
	assert_true(weft__timers_next(&h) == INT64_MAX);
	assert_null(weft__timers_pop_expired(&h, INT64_MAX));
	for (int i = 0; i < N; i++) {
		weft__timers_add(&h, &t[i], (int64_t)(next_rand() % 1000));
	}
	for (int i = 0; i < N; i += 3)
		weft__timers_remove(&h, &t[i]);
	weft__timers_remove(&h, &t[0]); /* twice: a no-op */
	size_t left = h.len;
	assert_int_equal(left, N - (N + 2) / 3);

	int64_t last = -1;
	uint64_t last_seq = 0;
	size_t popped = 0;
	for (int64_t now = 0; now < 1000 + 7; now += 7) {
		weft__timer *x;
		while ((x = weft__timers_pop_expired(&h, now))) {
			assert_true(x->deadline <= now);
			assert_false(x->armed);
			int idx = (int)(x - t);
			assert_true(idx % 3 != 0); /* removed ones never fire */
			assert_true(x->deadline > last ||
			            (x->deadline == last && x->seq > last_seq));
			last = x->deadline;
			last_seq = x->seq;
			popped++;
		}
		assert_true(weft__timers_next(&h) > now);
	}
	assert_int_equal(popped, left);
	assert_int_equal(h.len, 0);
}

static void timers_equal_deadlines_fifo(void **state)
{
	(void)state;
	weft__timer t[10];
	weft__timers h;
	weft__timers_init(&h);
	for (int i = 0; i < 10; i++)
		weft__timers_add(&h, &t[i], 5);
	weft__timers_remove(&h, &t[4]);
	for (int i = 0; i < 10; i++) {
		if (i == 4)
			continue;
		assert_ptr_equal(weft__timers_pop_expired(&h, 5), &t[i]);
	}
}

static void ready_count(void *token, short revents, void *ctx)
{
	(void)token;
	*(short *)ctx |= revents;
}

static void poller_pipe(void **state)
{
	(void)state;
	weft__poller p;
	assert_int_equal(weft__poller_init(&p), 0);
	int fd[2];
	assert_int_equal(pipe(fd), 0);
	int token;
	short got = 0;
	assert_int_equal(weft__poller_arm(&p, fd[0], POLLIN, &token), 0);
	assert_int_equal(weft__poller_wait(&p, 0, ready_count, &got), 0); /* nothing yet */
	assert_int_equal(write(fd[1], "x", 1), 1);
	assert_int_equal(weft__poller_wait(&p, -1, ready_count, &got), 1);
	assert_true(got & POLLIN);
	got = 0; /* one-shot: no second report until armed again */
	assert_int_equal(weft__poller_wait(&p, 0, ready_count, &got), 0);
	assert_int_equal(weft__poller_arm(&p, fd[0], POLLIN, &token), 0);
	assert_int_equal(weft__poller_wait(&p, 0, ready_count, &got), 1);
	weft__poller_disarm(&p, fd[0]);
	assert_int_equal(weft__poller_arm(&p, -1, POLLIN, &token), WEFT_EINVAL);
	close(fd[0]);
	close(fd[1]);
	weft__poller_destroy(&p);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *waker(void *arg)
{
	struct timespec ts = {0, 20 * 1000000};
	nanosleep(&ts, NULL);
	weft__poller_wake(arg);
	return NULL;
}

static void poller_timeout_and_wake(void **state)
{
	(void)state;
	weft__poller p;
	short got = 0;
	assert_int_equal(weft__poller_init(&p), 0);
	double t0 = now_s();
	assert_int_equal(weft__poller_wait(&p, 30 * 1000000, ready_count, &got), 0);
	assert_true(now_s() - t0 >= 0.030);

	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, waker, &p), 0);
	t0 = now_s();
	assert_int_equal(weft__poller_wait(&p, 10LL * 1000000000, ready_count, &got), 0);
	assert_true(now_s() - t0 < 5.0); /* woken, not timed out */
	pthread_join(th, NULL);

	weft__poller_wake(&p); /* a wake before the wait is not lost */
	t0 = now_s();
	assert_int_equal(weft__poller_wait(&p, 10LL * 1000000000, ready_count, &got), 0);
	assert_true(now_s() - t0 < 5.0);
	weft__poller_destroy(&p);
}

/* The poller's look-ahead (poller.h) is handed whatever a report says:
 * no fd, one beyond the table, one never used, one whose waiters are
 * gone. None may fault or change anything. */
static void prefetch_any_fd(void **state)
{
	(void)state;
	const int fds[] = {-1, INT32_MIN, 1 << 30, 16 << 20, 0, 1, 2, 1023, 1024, 4095};
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		weft__io_prefetch_slot(fds[i]);
		weft__io_prefetch_waiter(fds[i]);
	}
	int fd[2];
	assert_int_equal(pipe(fd), 0);
	weft__io_prefetch_slot(fd[0]);
	weft__io_prefetch_waiter(fd[0]);
	close(fd[0]);
	close(fd[1]);
	weft__io_prefetch_waiter(fd[0]); /* closed */
}

/* weft__passed: the ends of time, and never true before the deadline
 * (the coarse clock that answers for far deadlines lags the precise one,
 * never leads it); a deadline a few ms ahead passes within a second. */
static void deadline_passed(void **state)
{
	(void)state;
	assert_false(weft__passed(INT64_MAX));
	assert_true(weft__passed(INT64_MIN));
	assert_true(weft__passed(0));
	assert_true(weft__passed(weft__now_ns()));
	assert_false(weft__passed(weft__now_ns() + 3600 * 1000000000LL));
	assert_true(weft__coarse_lag_ns() >= 0);
	for (int round = 0; round < 200; round++) {
		int64_t t0 = weft__now_ns(), d = t0 + (int64_t)(next_rand() % 5000000);
		while (!weft__passed(d))
			assert_true(weft__now_ns() - t0 < 1000000000LL); /* no stuck clock */
		assert_true(weft__now_ns() >= d);
		assert_true(weft__coarse_now_ns() <= weft__now_ns());
	}
}

int main(int argc, char **argv)
{
	const struct CMUnitTest all[] = {
	        cmocka_unit_test(timers_random),   cmocka_unit_test(timers_equal_deadlines_fifo),
	        cmocka_unit_test(poller_pipe),     cmocka_unit_test(poller_timeout_and_wake),
	        cmocka_unit_test(prefetch_any_fd), cmocka_unit_test(deadline_passed),
	};
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	return cmocka_run_group_tests(all, NULL, NULL);
}
