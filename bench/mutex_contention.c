/* mutex_contention: weft_mutex against glibc's pthread_mutex_t, hammered by
 * plain kernel threads (pthread_create, no weft runtime).
 *
 * One run: T threads each take the lock P times around a tiny critical
 * section (one increment of a shared, non-atomic counter, checked after the
 * run so a lock that let two in fails the benchmark). "ns/pair" is the wall
 * time from releasing the threads to the last one finishing, divided by
 * T * P: the cost of one lock/unlock pair under that much contention.
 *
 * A second, timed run of the same shape reads the clock around every
 * lock() and reports the longest single wait ("max wait"): a lock that is
 * fast on average by letting one thread starve the others shows here. The
 * clock reads lengthen every operation, so that run's own ns/pair is not
 * the one reported.
 *
 * Each lock runs at every thread count of --threads, --reps times; the
 * repetitions are interleaved (rep 1 of everything, then rep 2, ...) so a
 * slow drift of the machine lands on both locks alike, and the medians are
 * reported with the ratio weft / pthread from the same run.
 *
 *   mutex_contention [--pairs P] [--threads 2,8] [--reps R]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <getopt.h>
#include <weft/sync.h>

#include "bench_util.h"

#define PROG        "mutex_contention"
#define MAX_THREADS 256
#define MAX_COUNTS  16
#define MAX_REPS    101

enum lock_kind { PTHREAD, WEFT, KINDS };
static const char *const kind_names[KINDS] = {"pthread", "weft"};

static pthread_mutex_t pmu = PTHREAD_MUTEX_INITIALIZER;
static weft_mutex wmu;
static long shared_counter; /* guarded by the lock under test */

static struct {
	enum lock_kind kind;
	long pairs;
	bool timed;
	_Atomic int ready;
	_Atomic bool go;
} run;

typedef struct {
	pthread_t th;
	int64_t start, end, max_wait;
	char pad[64];
} worker;

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline void lock(void)
{
	if (run.kind == WEFT) {
		if (weft_mutex_lock(&wmu) != 0)
			abort();
	} else {
		pthread_mutex_lock(&pmu);
	}
}

static inline void unlock(void)
{
	if (run.kind == WEFT) {
		if (weft_mutex_unlock(&wmu) != 0)
			abort();
	} else {
		pthread_mutex_unlock(&pmu);
	}
}

static void *hammer(void *arg)
{
	worker *w = arg;
	atomic_fetch_add(&run.ready, 1);
	while (!atomic_load_explicit(&run.go, memory_order_acquire))
		;
	w->start = now_ns();
	int64_t max_wait = 0;
	for (long i = 0; i < run.pairs; i++) {
		if (run.timed) {
			int64_t t0 = now_ns();
			lock();
			int64_t waited = now_ns() - t0;
			if (waited > max_wait)
				max_wait = waited;
		} else {
			lock();
		}
		shared_counter++;
		unlock();
	}
	w->end = now_ns();
	w->max_wait = max_wait;
	return NULL;
}

/* One run; returns ns per pair and sets *max_wait. */
static double run_once(enum lock_kind kind, int nthreads, long pairs, bool timed, int64_t *max_wait)
{
	static worker ws[MAX_THREADS];
	run.kind = kind;
	run.pairs = pairs;
	run.timed = timed;
	atomic_store(&run.ready, 0);
	atomic_store(&run.go, false);
	shared_counter = 0;
	if (weft_mutex_init(&wmu) != 0)
		abort();
	for (int i = 0; i < nthreads; i++) {
		if (pthread_create(&ws[i].th, NULL, hammer, &ws[i]) != 0) {
			fprintf(stderr, PROG ": pthread_create failed\n");
			exit(1);
		}
	}
	while (atomic_load(&run.ready) < nthreads)
		sched_yield();
	atomic_store_explicit(&run.go, true, memory_order_release);
	int64_t first = INT64_MAX, last = 0, worst = 0;
	for (int i = 0; i < nthreads; i++) {
		pthread_join(ws[i].th, NULL);
		if (ws[i].start < first)
			first = ws[i].start;
		if (ws[i].end > last)
			last = ws[i].end;
		if (ws[i].max_wait > worst)
			worst = ws[i].max_wait;
	}
	if (shared_counter != (long)nthreads * pairs) {
		fprintf(stderr, PROG ": %s lost updates: %ld of %ld\n", kind_names[kind],
		        shared_counter, (long)nthreads * pairs);
		exit(1);
	}
	*max_wait = worst;
	return (double)(last - first) / ((double)nthreads * (double)pairs);
}

static const char usage_text[] =
        "usage: " PROG " [--pairs P] [--threads 2,8] [--reps R]\n"
        "       " PROG " --help | --version\n"
        "weft_mutex against pthread_mutex_t, hammered by plain kernel threads: ns per\n"
        "lock/unlock pair (median of R, default 5) and the longest lock().\n";

static void usage(void)
{
	fputs(usage_text, stderr);
	exit(2);
}

int main(int argc, char **argv)
{
	cli_check_stdout_at_exit(PROG);
	long pairs = 1000000;
	int reps = 5;
	int counts[MAX_COUNTS] = {2, 8}, ncounts = 2;
	static const struct option opts[] = {{"pairs", required_argument, NULL, 'p'},
	                                     {"reps", required_argument, NULL, 'r'},
	                                     {"threads", required_argument, NULL, 't'},
	                                     {"help", no_argument, NULL, 'h'},
	                                     {"version", no_argument, NULL, BENCH_OPT_VERSION},
	                                     {0}};
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		char *end;
		if (c == 'p') {
			pairs = strtol(optarg, &end, 10);
			if (*end || pairs < 1)
				usage();
		} else if (c == 'r') {
			reps = (int)strtol(optarg, &end, 10);
			if (*end || reps < 1 || reps > MAX_REPS)
				usage();
		} else if (c == 't') {
			char *s = optarg;
			ncounts = 0;
			for (;;) {
				long n = strtol(s, &end, 10);
				if (end == s || n < 1 || n > MAX_THREADS || ncounts == MAX_COUNTS)
					usage();
				counts[ncounts++] = (int)n;
				if (*end == '\0')
					break;
				if (*end != ',')
					usage();
				s = end + 1;
			}
		} else {
			return bench_help_version_or_error(PROG, c, argv, opts, usage_text);
		}
	}
	if (optind < argc)
		usage();

	static double ns[MAX_COUNTS][KINDS][MAX_REPS];
	static int64_t worst[MAX_COUNTS][KINDS];
	for (int r = 0; r < reps; r++) {
		for (int c = 0; c < ncounts; c++) {
			for (int k = 0; k < KINDS; k++) {
				/* Alternate which lock goes first. */
				enum lock_kind kind = (enum lock_kind)((k + r) % KINDS);
				int64_t w;
				ns[c][kind][r] = run_once(kind, counts[c], pairs, false, &w);
				run_once(kind, counts[c], pairs / 4 + 1, true, &w);
				if (w > worst[c][kind])
					worst[c][kind] = w;
			}
		}
	}

	printf("%-8s %-8s %12s %14s\n", "threads", "lock", "ns/pair", "max wait us");
	for (int c = 0; c < ncounts; c++) {
		double med[KINDS];
		for (int k = 0; k < KINDS; k++) {
			med[k] = bench_median(ns[c][k], reps);
			printf("%-8d %-8s %12.1f %14.1f\n", counts[c], kind_names[k], med[k],
			       (double)worst[c][k] / 1000.0);
		}
		printf("%-8d %-8s %12.2fx\n", counts[c], "ratio", med[WEFT] / med[PTHREAD]);
	}
	printf("(%ld pairs per thread, median of %d runs; max wait: the longest lock() "
	       "over %d timed runs of %ld pairs per thread)\n",
	       pairs, reps, reps, pairs / 4 + 1);
	return 0;
}
