/* blocking_pool: what weft_blocking of an empty function costs from a task
 * on each model, next to a pthread semaphore round trip between two threads
 * measured in the same run (the cost of one hand-off each way, which is
 * what a call handed to another thread and back cannot beat).
 *
 * Under fibers and mn the call goes to another thread while the fiber
 * parks; under threads and spawn it runs right on the caller's thread (the
 * kernel thread may block), so those two rows show the call's own
 * overhead. Repetitions alternate the baseline and the models, and the
 * ratios are of the medians. */
#define _GNU_SOURCE
#include <getopt.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_util.h"
#include <weft/weft.h>

static int calls = 2000, reps = 7;

/* ------------------------------------------------------------ baseline */

static sem_t ping, pong;
static int rounds;

static void *partner(void *arg)
{
	(void)arg;
	for (int i = 0; i < rounds; i++) {
		sem_wait(&ping);
		sem_post(&pong);
	}
	return NULL;
}

/* ns per round trip: post one semaphore, wait for the other thread to post
 * back. */
static double sem_round_trip(void)
{
	sem_init(&ping, 0, 0);
	sem_init(&pong, 0, 0);
	rounds = calls;
	pthread_t t;
	if (pthread_create(&t, NULL, partner, NULL) != 0) {
		perror("blocking_pool: pthread_create");
		exit(1);
	}
	double start = bench_now_ns();
	for (int i = 0; i < rounds; i++) {
		sem_post(&ping);
		sem_wait(&pong);
	}
	double ns = (bench_now_ns() - start) / rounds;
	pthread_join(t, NULL);
	sem_destroy(&ping);
	sem_destroy(&pong);
	return ns;
}

/* ------------------------------------------------------------ weft_blocking */

static void empty(void *arg)
{
	(void)arg;
}

static double per_call_ns;

static void caller(void *arg)
{
	(void)arg;
	if (weft_blocking(empty, NULL) != 0) /* warm: the first call may start a thread */
		abort();
	double start = bench_now_ns();
	for (int i = 0; i < calls; i++)
		if (weft_blocking(empty, NULL) != 0)
			abort();
	per_call_ns = (bench_now_ns() - start) / calls;
}

static double blocking_call(weft_model model, int workers)
{
	weft_config cfg;
	weft_config_init(&cfg);
	cfg.model = model;
	cfg.workers = workers;
	weft_rt *rt;
	if (weft_rt_create(&rt, &cfg) != 0) {
		fprintf(stderr, "blocking_pool: cannot create a %s runtime\n",
		        weft_model_name(model));
		exit(1);
	}
	weft_task t;
	weft_task_init(&t, caller, NULL);
	if (weft_post(rt, &t) != 0 || weft_wait_all(rt) != 0)
		exit(1);
	weft_rt_destroy(rt);
	return per_call_ns;
}

/* ------------------------------------------------------------ main */

typedef struct row {
	weft_model model;
	int workers;
} row;

static const row rows[] = {
        {WEFT_MODEL_FIBERS, 1},  {WEFT_MODEL_MN, 1},    {WEFT_MODEL_MN, 2},
        {WEFT_MODEL_THREADS, 1}, {WEFT_MODEL_SPAWN, 1},
};
#define NROWS (int)(sizeof(rows) / sizeof(rows[0]))

int main(int argc, char **argv)
{
	cli_check_stdout_at_exit("blocking_pool");
	static const struct option opts[] = {{"calls", required_argument, NULL, 'c'},
	                                     {"reps", required_argument, NULL, 'r'},
	                                     {"help", no_argument, NULL, 'h'},
	                                     {"version", no_argument, NULL, BENCH_OPT_VERSION},
	                                     {NULL, 0, NULL, 0}};
	static const char usage[] =
	        "usage: blocking_pool [--calls N] [--reps R]\n"
	        "       blocking_pool --help | --version\n"
	        "ns per weft_blocking(empty function) from a task on each model, next to a\n"
	        "pthread semaphore round trip between two threads in the same run (medians of\n"
	        "R repetitions of N calls each; defaults 2000 and 7).\n";
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":c:r:h", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			calls = atoi(optarg);
			break;
		case 'r':
			reps = atoi(optarg);
			break;
		default:
			return bench_help_version_or_error("blocking_pool", c, argv, opts, usage);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "blocking_pool: unexpected argument '%s'\n%s", argv[optind], usage);
		return 2;
	}
	if (calls < 1 || reps < 1) {
		fprintf(stderr, "blocking_pool: --calls and --reps must be positive\n%s", usage);
		return 2;
	}
	double *sem = calloc((size_t)reps, sizeof(double));
	double *ns = calloc((size_t)reps * NROWS, sizeof(double));
	if (!sem || !ns)
		return 1;
	for (int r = 0; r < reps; r++) {
		sem[r] = sem_round_trip();
		for (int i = 0; i < NROWS; i++)
			ns[i * reps + r] = blocking_call(rows[i].model, rows[i].workers);
	}
	double base = bench_median(sem, reps);
	printf("%-26s %10s %8s\n", "operation", "ns (med)", "x sem");
	printf("%-26s %10.0f %8.2f\n", "pthread sem round trip", base, 1.0);
	for (int i = 0; i < NROWS; i++) {
		char name[64];
		snprintf(name, sizeof(name), "weft_blocking %s w%d", weft_model_name(rows[i].model),
		         rows[i].workers);
		double m = bench_median(&ns[i * reps], reps);
		printf("%-26s %10.0f %8.2f\n", name, m, m / base);
	}
	free(sem);
	free(ns);
	return 0;
}
