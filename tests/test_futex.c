/* core/futex.h, the wait-on-address every blocking path of weft ends in:
 * futex(2) on Linux, a table of mutexes and condition variables in the
 * portable build (core/futex_posix.c). The same cases run on both, so the
 * table is held to what the kernel does: wake counts, many waiters on one
 * word, waiters on neighbouring words kept apart, timeouts that leave no
 * record behind. `test_futex <case>`.
 *
 * No timed assertions: a hang is caught by the test's TIMEOUT. A spurious
 * return (allowed by the interface) would make a count assertion fail;
 * neither backend produces one without a signal, and none is sent here. */
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/futex.h"

enum { NWAITERS = 8 };

static void pause_us(long us)
{
	struct timespec ts = {0, us * 1000};
	nanosleep(&ts, NULL);
}

/* One waiter: announces itself, sleeps once on word (no limit), counts
 * its return. */
typedef struct once_arg {
	_Atomic uint32_t *word;
	_Atomic int *entered, *returned;
} once_arg;

static void *wait_once(void *p)
{
	once_arg *a = p;
	atomic_fetch_add(a->entered, 1);
	weft__futex_wait(a->word, 0, -1);
	atomic_fetch_add(a->returned, 1);
	return NULL;
}

/* Wakes word n at a time until `want` waiters returned: each call wakes
 * at most n, and every wake-up it counts is a waiter that returns. */
static int wake_all_by(_Atomic uint32_t *word, int n, _Atomic int *returned, int want)
{
	int woke = 0;
	while (atomic_load(returned) < want) {
		int w = weft__futex_wake(word, n);
		assert_true(w >= 0 && w <= n);
		woke += w;
		if (w == 0)
			pause_us(100); /* a waiter not asleep yet */
	}
	return woke;
}

/* Nobody waits: a wake wakes nobody. */
static void wake_nobody(void **state)
{
	(void)state;
	_Atomic uint32_t word = 0;
	assert_int_equal(weft__futex_wake(&word, 1), 0);
	assert_int_equal(weft__futex_wake(&word, INT_MAX), 0);
}

/* A word that does not hold the expected value: the wait returns at once
 * (a hang fails the test). */
static void value_mismatch(void **state)
{
	(void)state;
	_Atomic uint32_t word = 7;
	weft__futex_wait(&word, 6, -1);
	weft__futex_wait(&word, 0, 1000000000);
}

/* NWAITERS threads on one word, woken two at a time: every call wakes at
 * most two, the counts add up to exactly the waiters that returned. */
static void many_waiters_counts(void **state)
{
	(void)state;
	_Atomic uint32_t word = 0;
	_Atomic int entered = 0, returned = 0;
	pthread_t th[NWAITERS];
	once_arg a = {&word, &entered, &returned};
	for (int i = 0; i < NWAITERS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, wait_once, &a), 0);
	while (atomic_load(&entered) < NWAITERS)
		sched_yield();
	int woke = wake_all_by(&word, 2, &returned, NWAITERS);
	for (int i = 0; i < NWAITERS; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(woke, NWAITERS);
	assert_int_equal(atomic_load(&returned), NWAITERS);
	assert_int_equal(weft__futex_wake(&word, INT_MAX), 0); /* nobody left queued */
}

/* Waiters on two neighbouring words (the table may hash them to one
 * bucket): waking one word all the way, or any of a thousand others, wakes
 * none of the other's. */
static void neighbours_apart(void **state)
{
	(void)state;
	static _Atomic uint32_t words[2];
	_Atomic int entered[2] = {0, 0}, returned[2] = {0, 0};
	once_arg a[2] = {{&words[0], &entered[0], &returned[0]},
	                 {&words[1], &entered[1], &returned[1]}};
	pthread_t th[2][NWAITERS / 2];
	for (int k = 0; k < 2; k++)
		for (int i = 0; i < NWAITERS / 2; i++)
			assert_int_equal(pthread_create(&th[k][i], NULL, wait_once, &a[k]), 0);
	while (atomic_load(&entered[0]) + atomic_load(&entered[1]) < NWAITERS)
		sched_yield();
	int woke = wake_all_by(&words[1], INT_MAX, &returned[1], NWAITERS / 2);
	assert_int_equal(woke, NWAITERS / 2);
	for (int i = 0; i < NWAITERS / 2; i++)
		pthread_join(th[1][i], NULL);
	/* Wakes of a thousand other words (some share words[0]'s bucket in
	 * the table, whatever its hash) wake nobody. */
	static _Atomic uint32_t others[1024];
	for (int i = 0; i < 1024; i++)
		assert_int_equal(weft__futex_wake(&others[i], INT_MAX), 0);
	pause_us(20000); /* a wrong wake-up of words[0] would show by now */
	assert_int_equal(atomic_load(&returned[0]), 0);
	woke = wake_all_by(&words[0], 1, &returned[0], NWAITERS / 2);
	assert_int_equal(woke, NWAITERS / 2);
	for (int i = 0; i < NWAITERS / 2; i++)
		pthread_join(th[0][i], NULL);
}

/* Timed waits nobody wakes end (on their own, within the test's TIMEOUT)
 * and leave nothing queued: a later wake finds nobody (the table would
 * otherwise signal a condition variable whose thread has gone). */
typedef struct timed_arg {
	_Atomic uint32_t *word;
	int64_t timeout_ns;
	_Atomic int *returned;
} timed_arg;

static void *wait_timed(void *p)
{
	timed_arg *a = p;
	weft__futex_wait(a->word, 0, a->timeout_ns);
	atomic_fetch_add(a->returned, 1);
	return NULL;
}

static void timeouts_leave_nothing(void **state)
{
	(void)state;
	_Atomic uint32_t word = 0;
	_Atomic int returned = 0;
	timed_arg a[NWAITERS];
	pthread_t th[NWAITERS];
	for (int i = 0; i < NWAITERS; i++) {
		/* 0 (a look), 1 ns, then 1 to 32 ms, staggered. */
		a[i] = (timed_arg){&word,
		                   i == 0   ? 0
		                   : i == 1 ? 1
		                            : (int64_t)1000000 << (i - 2),
		                   &returned};
		assert_int_equal(pthread_create(&th[i], NULL, wait_timed, &a[i]), 0);
	}
	for (int i = 0; i < NWAITERS; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(atomic_load(&returned), NWAITERS);
	assert_int_equal(weft__futex_wake(&word, INT_MAX), 0);
}

/* A long timed wait ends at the wake-up, not at its timeout (10 s, beyond
 * the test's TIMEOUT were it waited out), and the wake counts it. */
static void timed_woken(void **state)
{
	(void)state;
	_Atomic uint32_t word = 0;
	_Atomic int returned = 0;
	timed_arg a = {&word, 10LL * 1000000000, &returned};
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, wait_timed, &a), 0);
	int woke = 0;
	while (atomic_load(&returned) == 0) {
		woke += weft__futex_wake(&word, 1);
		pause_us(200);
	}
	pthread_join(th, NULL);
	assert_int_equal(woke, 1);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest all[] = {
	        cmocka_unit_test(wake_nobody),
	        cmocka_unit_test(value_mismatch),
	        cmocka_unit_test(many_waiters_counts),
	        cmocka_unit_test(neighbours_apart),
	        cmocka_unit_test(timeouts_leave_nothing),
	        cmocka_unit_test(timed_woken),
	};
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	return cmocka_run_group_tests(all, NULL, NULL);
}
