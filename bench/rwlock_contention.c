/* rwlock_contention: weft_rwlock against glibc's pthread_rwlock_t (default
 * attributes: reader preference), hammered by plain kernel threads, and
 * weft_rwlock again from tasks of a runtime under every model.
 *
 * One run: T threads (or T tasks) each do N operations, a read with
 * probability 1 - W/100 (default 90% reads), else a write. A read takes the
 * lock shared and sums a small table (8 words); a write takes it exclusive
 * and bumps every word. The readers check the table is consistent (all
 * words equal), so a lock that let a writer in beside a reader fails the
 * benchmark. "ns/op" is the wall time from releasing the threads to the
 * last one finishing divided by T * N. Repetitions are interleaved (rep 1
 * of every lock, then rep 2, ...) and the medians reported with the ratio
 * weft / pthread from the same run.
 *
 *   rwlock_contention [--ops N] [--threads 2,8] [--reps R] [--writes W]
 *                     [--models threads,mn,...]
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
#include <weft/weft.h>

#include "bench_util.h"

#define PROG        "rwlock_contention"
#define MAX_THREADS 256
#define MAX_COUNTS  16
#define MAX_REPS    101
#define WORDS       8

enum lock_kind { PTHREAD, WEFT, KINDS };
static const char *const kind_names[KINDS] = {"pthread", "weft"};

static pthread_rwlock_t prw;
static weft_rwlock wrw;
static long table[WORDS]; /* guarded by the lock under test */

static struct {
	enum lock_kind kind;
	long ops;
	int write_pct;
	_Atomic int ready;
	_Atomic bool go;
	_Atomic long torn;
} run;

typedef struct {
	pthread_t th;
	weft_task task;
	uint64_t seed;
	int64_t start, end;
	char pad[64];
} worker;

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void hammer_ops(worker *w)
{
	uint64_t x = w->seed;
	long torn = 0;
	for (long i = 0; i < run.ops; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		bool write = (int)(x % 100) < run.write_pct;
		if (run.kind == WEFT)
			write ? weft_rwlock_wrlock(&wrw) : weft_rwlock_rdlock(&wrw);
		else
			write ? pthread_rwlock_wrlock(&prw) : pthread_rwlock_rdlock(&prw);
		if (write) {
			for (int k = 0; k < WORDS; k++)
				table[k]++;
		} else {
			long first = table[0];
			for (int k = 1; k < WORDS; k++)
				torn += table[k] != first;
		}
		if (run.kind == WEFT)
			weft_rwlock_unlock(&wrw);
		else
			pthread_rwlock_unlock(&prw);
	}
	if (torn)
		atomic_fetch_add(&run.torn, torn);
}

static void *hammer(void *arg)
{
	worker *w = arg;
	atomic_fetch_add(&run.ready, 1);
	while (!atomic_load_explicit(&run.go, memory_order_acquire))
		;
	w->start = now_ns();
	hammer_ops(w);
	w->end = now_ns();
	return NULL;
}

static void hammer_task(void *arg)
{
	worker *w = arg;
	w->start = now_ns();
	hammer_ops(w);
	w->end = now_ns();
}

static void reset(enum lock_kind kind, long ops, int write_pct)
{
	run.kind = kind;
	run.ops = ops;
	run.write_pct = write_pct;
	atomic_store(&run.ready, 0);
	atomic_store(&run.go, false);
	atomic_store(&run.torn, 0);
	memset(table, 0, sizeof(table));
	pthread_rwlock_init(&prw, NULL);
	weft_rwlock_init(&wrw);
}

static double finish(worker *ws, int n)
{
	int64_t first = INT64_MAX, last = 0;
	for (int i = 0; i < n; i++) {
		if (ws[i].start < first)
			first = ws[i].start;
		if (ws[i].end > last)
			last = ws[i].end;
	}
	if (atomic_load(&run.torn)) {
		fprintf(stderr, PROG ": %s let a writer in beside a reader\n",
		        kind_names[run.kind]);
		exit(1);
	}
	pthread_rwlock_destroy(&prw);
	return (double)(last - first) / ((double)n * (double)run.ops);
}

/* One run on plain threads; ns per operation. */
static double run_threads(enum lock_kind kind, int n, long ops, int write_pct)
{
	static worker ws[MAX_THREADS];
	reset(kind, ops, write_pct);
	for (int i = 0; i < n; i++) {
		ws[i].seed = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
		if (pthread_create(&ws[i].th, NULL, hammer, &ws[i]) != 0) {
			fprintf(stderr, PROG ": pthread_create failed\n");
			exit(1);
		}
	}
	while (atomic_load(&run.ready) < n)
		sched_yield();
	atomic_store_explicit(&run.go, true, memory_order_release);
	for (int i = 0; i < n; i++)
		pthread_join(ws[i].th, NULL);
	return finish(ws, n);
}

/* One run as n tasks of rt (weft_rwlock only). */
static double run_tasks(weft_rt *rt, int n, long ops, int write_pct)
{
	static worker ws[MAX_THREADS];
	reset(WEFT, ops, write_pct);
	for (int i = 0; i < n; i++) {
		ws[i].seed = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
		weft_task_init(&ws[i].task, hammer_task, &ws[i]);
		if (weft_post(rt, &ws[i].task) != 0)
			abort();
	}
	weft_wait_all(rt);
	return finish(ws, n);
}

static const char usage_text[] =
        "usage: " PROG " [--ops N] [--threads 2,8] [--reps R] [--writes W] [--models LIST]\n"
        "       " PROG " --help | --version\n"
        "weft_rwlock against pthread_rwlock_t, W% writes (default 10), hammered by plain\n"
        "kernel threads (and by tasks of each model in LIST, default threads,mn): ns per\n"
        "operation, median of R runs (default 5).\n";

static void usage(void)
{
	fputs(usage_text, stderr);
	exit(2);
}

static int parse_counts(char *s, int *counts)
{
	int n = 0;
	char *end;
	for (;;) {
		long v = strtol(s, &end, 10);
		if (end == s || v < 1 || v > MAX_THREADS || n == MAX_COUNTS)
			usage();
		counts[n++] = (int)v;
		if (*end == '\0')
			return n;
		if (*end != ',')
			usage();
		s = end + 1;
	}
}

int main(int argc, char **argv)
{
	cli_check_stdout_at_exit(PROG);
	long ops = 400000;
	int reps = 5, write_pct = 10;
	int counts[MAX_COUNTS] = {2, 8}, ncounts = 2;
	char models_arg[128] = "threads,mn";
	static const struct option opts[] = {{"ops", required_argument, NULL, 'o'},
	                                     {"reps", required_argument, NULL, 'r'},
	                                     {"threads", required_argument, NULL, 't'},
	                                     {"writes", required_argument, NULL, 'w'},
	                                     {"models", required_argument, NULL, 'm'},
	                                     {"help", no_argument, NULL, 'h'},
	                                     {"version", no_argument, NULL, BENCH_OPT_VERSION},
	                                     {0}};
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		char *end;
		if (c == 'o') {
			ops = strtol(optarg, &end, 10);
			if (*end || ops < 1)
				usage();
		} else if (c == 'r') {
			reps = (int)strtol(optarg, &end, 10);
			if (*end || reps < 1 || reps > MAX_REPS)
				usage();
		} else if (c == 'w') {
			write_pct = (int)strtol(optarg, &end, 10);
			if (*end || write_pct < 0 || write_pct > 100)
				usage();
		} else if (c == 't') {
			ncounts = parse_counts(optarg, counts);
		} else if (c == 'm') {
			snprintf(models_arg, sizeof(models_arg), "%s", optarg);
		} else {
			return bench_help_version_or_error(PROG, c, argv, opts, usage_text);
		}
	}
	if (optind < argc)
		usage();

	static double ns[MAX_COUNTS][KINDS][MAX_REPS];
	for (int r = 0; r < reps; r++)
		for (int ci = 0; ci < ncounts; ci++)
			for (int k = 0; k < KINDS; k++) {
				enum lock_kind kind = (enum lock_kind)((k + r) % KINDS);
				ns[ci][kind][r] = run_threads(kind, counts[ci], ops, write_pct);
			}
	printf("plain threads, %d%% writes\n%-8s %-8s %12s\n", write_pct, "threads", "lock",
	       "ns/op");
	for (int ci = 0; ci < ncounts; ci++) {
		double med[KINDS];
		for (int k = 0; k < KINDS; k++) {
			med[k] = bench_median(ns[ci][k], reps);
			printf("%-8d %-8s %12.1f\n", counts[ci], kind_names[k], med[k]);
		}
		printf("%-8d %-8s %12.2fx\n", counts[ci], "ratio", med[WEFT] / med[PTHREAD]);
	}

	/* weft_rwlock from tasks: the model's workers (2) run the tasks. */
	char *save = NULL;
	for (char *m = strtok_r(models_arg, ",", &save); m; m = strtok_r(NULL, ",", &save)) {
		weft_config cfg;
		weft_config_init(&cfg);
		int model = 0;
		while (model < WEFT_MODEL_COUNT_ && strcmp(weft_model_name((weft_model)model), m))
			model++;
		if (model == WEFT_MODEL_COUNT_) {
			fprintf(stderr, PROG ": unknown model %s\n", m);
			return 2;
		}
		cfg.model = (weft_model)model;
		cfg.workers = 2;
		weft_rt *rt;
		if (weft_rt_create(&rt, &cfg) != 0)
			return 1;
		for (int ci = 0; ci < ncounts; ci++) {
			double v[MAX_REPS];
			for (int r = 0; r < reps; r++)
				v[r] = run_tasks(rt, counts[ci], ops, write_pct);
			printf("%-8s %d tasks on 2 workers: weft %8.1f ns/op\n", m, counts[ci],
			       bench_median(v, reps));
		}
		weft_rt_destroy(rt);
	}
	printf("(%ld operations per thread or task, median of %d runs)\n", ops, reps);
	return 0;
}
