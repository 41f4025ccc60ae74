/* mutex_contention: weft_mutex against glibc's pthread_mutex_t, hammered by
 * plain kernel threads (pthread_create, no weft runtime), and weft_mutex
 * again from tasks of a runtime of each model in --models (2 workers).
 *
 * One run: T threads (or tasks) each take the lock P times around a tiny
 * critical section (one increment of a shared, non-atomic counter, checked
 * after the run so a lock that let two in fails the benchmark). "ns/pair"
 * is the wall time from releasing the threads to the last one finishing,
 * divided by T * P: the cost of one lock/unlock pair under that much
 * contention.
 *
 * A second, timed run of the same shape reads the clock around every
 * lock() and reports the longest single wait ("max wait"): a lock that is
 * fast on average by letting one thread starve the others shows here. The
 * clock reads lengthen every operation, so that run's own ns/pair is not
 * the one reported.
 *
 * Repetitions are interleaved over the locks (bench/contention.h) and the
 * medians reported with each one's ratio to pthread's from the same run.
 *
 *   mutex_contention [--pairs P] [--threads 2,8] [--reps R] [--models LIST]
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <weft/weft.h>

#include "contention.h"

#define PROG "mutex_contention"

enum { PTHREAD, WEFT, PLAIN_KINDS };
static const char *const plain_names[PLAIN_KINDS] = {"pthread", "weft"};

static pthread_mutex_t pmu = PTHREAD_MUTEX_INITIALIZER;
static weft_mutex wmu;
static long shared_counter; /* guarded by the lock under test */

static struct {
	bool use_pthread;
	long pairs;
	bool timed;
} run;

static inline void lock(void)
{
	if (run.use_pthread)
		pthread_mutex_lock(&pmu);
	else if (weft_mutex_lock(&wmu) != 0)
		abort();
}

static inline void unlock(void)
{
	if (run.use_pthread)
		pthread_mutex_unlock(&pmu);
	else if (weft_mutex_unlock(&wmu) != 0)
		abort();
}

static void hammer(contention_thread *t)
{
	int64_t max_wait = 0;
	for (long i = 0; i < run.pairs; i++) {
		if (run.timed) {
			int64_t t0 = contention_now_ns();
			lock();
			int64_t waited = contention_now_ns() - t0;
			if (waited > max_wait)
				max_wait = waited;
		} else {
			lock();
		}
		shared_counter++;
		unlock();
	}
	t->max_wait = max_wait;
}

/* One run; ns per pair, and the longest lock() when timed. */
static double run_once(contention_run *r, int kind, int threads, long pairs, bool timed,
                       int64_t *max_wait)
{
	static contention_thread ts[CONTENTION_MAX_THREADS];
	run.use_pthread = kind == PTHREAD;
	run.pairs = pairs;
	run.timed = timed;
	shared_counter = 0;
	if (weft_mutex_init(&wmu) != 0)
		abort();
	int64_t span = contention_run_kind(r, kind, ts, threads, hammer, max_wait);
	if (shared_counter != (long)threads * pairs) {
		fprintf(stderr, PROG ": %s lost updates: %ld of %ld\n", r->kind_names[kind],
		        shared_counter, (long)threads * pairs);
		exit(1);
	}
	return (double)span / ((double)threads * (double)pairs);
}

static long pairs_per_thread = 1000000;

static double measure(contention_run *r, int kind, int threads, int64_t *max_wait)
{
	double ns = run_once(r, kind, threads, pairs_per_thread, false, max_wait);
	run_once(r, kind, threads, pairs_per_thread / 4 + 1, true, max_wait);
	return ns;
}

static const char usage_text[] =
        "usage: " PROG " [--pairs P] [--threads 2,8] [--reps R] [--models LIST]\n"
        "       " PROG " --help | --version\n"
        "weft_mutex against pthread_mutex_t, hammered by plain kernel threads, and by\n"
        "tasks of each model in LIST on 2 workers (default mn; \"\" for none): ns per\n"
        "lock/unlock pair (median of R, default 5) and the longest lock().\n";

static bool own_option(int c, const char *arg)
{
	char *end;
	pairs_per_thread = strtol(arg, &end, 10); /* --pairs, the only one */
	return c == 'p' && !*end && pairs_per_thread >= 1;
}

int main(int argc, char **argv)
{
	cli_check_stdout_at_exit(PROG);
	static contention_run r;
	contention_init(&r, PROG, PLAIN_KINDS, plain_names);
	static const struct option opts[] = {{"pairs", required_argument, NULL, 'p'}, {0}};
	int rc = contention_start(&r, argc, argv, opts, own_option, "mn", usage_text);
	if (rc >= 0)
		return rc;
	contention_measure_all(&r, measure);
	contention_print(&r, "ns/pair", true);
	printf("(%ld pairs per thread or task, median of %d runs; max wait: the longest lock() "
	       "over %d timed runs of %ld pairs per thread)\n",
	       pairs_per_thread, r.reps, r.reps, pairs_per_thread / 4 + 1);
	contention_end(&r);
	return 0;
}
