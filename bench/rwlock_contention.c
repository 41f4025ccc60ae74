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
 * last one finishing divided by T * N. Repetitions are interleaved over
 * the locks and the tasks of each model (rep 1 of every one, then rep 2,
 * ...: bench/contention.h) and the medians reported with each one's ratio
 * to pthread's from the same run.
 *
 *   rwlock_contention [--ops N] [--threads 2,8] [--reps R] [--writes W]
 *                     [--models threads,mn,...]
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft/weft.h>

#include "contention.h"

#define PROG  "rwlock_contention"
#define WORDS 8

enum { PTHREAD, WEFT, PLAIN_KINDS };
static const char *const plain_names[PLAIN_KINDS] = {"pthread", "weft"};

static pthread_rwlock_t prw;
static weft_rwlock wrw;
static long table[WORDS]; /* guarded by the lock under test */

static struct {
	bool use_pthread;
	long ops;
	int write_pct;
	_Atomic long torn;
} run;

static void hammer(contention_thread *t)
{
	uint64_t x = t->seed;
	long torn = 0;
	for (long i = 0; i < run.ops; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		bool write = (int)(x % 100) < run.write_pct;
		if (!run.use_pthread)
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
		if (!run.use_pthread)
			weft_rwlock_unlock(&wrw);
		else
			pthread_rwlock_unlock(&prw);
	}
	if (torn)
		atomic_fetch_add(&run.torn, torn);
}

/* One run; ns per operation. */
static double measure(contention_run *r, int kind, int threads, int64_t *max_wait)
{
	static contention_thread ts[CONTENTION_MAX_THREADS];
	run.use_pthread = kind == PTHREAD;
	atomic_store(&run.torn, 0);
	memset(table, 0, sizeof(table));
	pthread_rwlock_init(&prw, NULL);
	weft_rwlock_init(&wrw);
	int64_t span = contention_run_kind(r, kind, ts, threads, hammer, max_wait);
	pthread_rwlock_destroy(&prw);
	if (atomic_load(&run.torn)) {
		fprintf(stderr, PROG ": %s let a writer in beside a reader\n", r->kind_names[kind]);
		exit(1);
	}
	return (double)span / ((double)threads * (double)run.ops);
}

static const char usage_text[] =
        "usage: " PROG " [--ops N] [--threads 2,8] [--reps R] [--writes W] [--models LIST]\n"
        "       " PROG " --help | --version\n"
        "weft_rwlock against pthread_rwlock_t, W% writes (default 10), hammered by plain\n"
        "kernel threads (and by tasks of each model in LIST on 2 workers, default\n"
        "threads,mn; \"\" for none): ns per operation, median of R runs (default 5).\n";

static bool own_option(int c, const char *arg)
{
	char *end;
	long v = strtol(arg, &end, 10);
	if (*end)
		return false;
	if (c == 'o')
		run.ops = v;
	else
		run.write_pct = (int)v;
	return c == 'o' ? v >= 1 : v >= 0 && v <= 100;
}

int main(int argc, char **argv)
{
	cli_check_stdout_at_exit(PROG);
	static contention_run r;
	contention_init(&r, PROG, PLAIN_KINDS, plain_names);
	run.ops = 400000;
	run.write_pct = 10;
	static const struct option opts[] = {{"ops", required_argument, NULL, 'o'},
	                                     {"writes", required_argument, NULL, 'w'},
	                                     {0}};
	int rc = contention_start(&r, argc, argv, opts, own_option, "threads,mn", usage_text);
	if (rc >= 0)
		return rc;
	contention_measure_all(&r, measure);
	printf("%d%% writes\n", run.write_pct);
	contention_print(&r, "ns/op", false);
	printf("(%ld operations per thread or task, median of %d runs)\n", run.ops, r.reps);
	contention_end(&r);
	return 0;
}
