/* op_costs: what one operation of each scaling workload costs, in time and
 * in the events that decide how it grows with the cores: parks, wake-ups
 * sent, steals, failed steal attempts and idle looks (each look reads up to
 * two other workers' deque lines and the injection queue's), per
 * operation, read from weft_stats, at every worker count asked.
 *
 *   spawn-join   a task posts one empty task and weft_waits it, N times
 *   fib-plain    fib(F): post a, post b, wait a, wait b at every call
 *   fib-join     fib(F) with weft_fork_join at every call
 *   spawn-wait   the main thread posts N empty tasks, then weft_wait_all
 *   pfor-64k     weft_parallel_for over 65,536 ints (a[i] += 1), from the
 *                main thread, PASSES times (per op: per iteration; the
 *                events are given per loop)
 *
 * On a machine with fewer CPUs than workers the run is oversubscribed and
 * the line says so: the counts still mean something (they are what a
 * 64-core machine would see, more or less), the times do not.
 *
 *   op_costs [--models mn,threads] [--workers 1,2,4,8,16] [--reps R]
 *            [--only W] [--small]
 *
 * Every result is checked. Medians over R runs (default 3) of each
 * configuration, back to back: the counts are what matters here; time the
 * workloads against each other with bench/scaling.sh. */
#define _GNU_SOURCE
#include <getopt.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <weft/weft.h>

#include "bench_util.h"

#define PROG     "op_costs"
#define MAX_REPS 21
#define MAX_LIST 16

static void die(const char *what)
{
	fprintf(stderr, PROG ": %s\n", what);
	exit(1);
}

/* ------------------------------------------------------------ workloads */

static weft_rt *cur_rt;
static long join_n, spawn_n, passes;
static int fib_n;

static void empty(void *arg)
{
	(void)arg;
}

static void chain(void *arg)
{
	(void)arg;
	weft_task t;
	for (long i = 0; i < join_n; i++) {
		weft_task_init(&t, empty, NULL);
		if (weft_post(cur_rt, &t) || weft_wait(&t))
			die("spawn-join: post or wait failed");
	}
}

typedef struct fib {
	weft_task t;
	int n;
	long value;
} fib;

static void fib_plain(void *arg)
{
	fib *f = arg;
	if (f->n < 2) {
		f->value = f->n;
		return;
	}
	fib a = {.n = f->n - 1}, b = {.n = f->n - 2};
	weft_task_init(&a.t, fib_plain, &a);
	weft_task_init(&b.t, fib_plain, &b);
	if (weft_post(cur_rt, &a.t) || weft_post(cur_rt, &b.t) || weft_wait(&a.t) ||
	    weft_wait(&b.t))
		die("fib-plain: post or wait failed");
	f->value = a.value + b.value;
}

static void fib_join(void *arg)
{
	fib *f = arg;
	if (f->n < 2) {
		f->value = f->n;
		return;
	}
	fib a = {.n = f->n - 1}, b = {.n = f->n - 2};
	if (weft_fork_join(cur_rt, fib_join, &a, fib_join, &b))
		die("fib-join: weft_fork_join failed");
	f->value = a.value + b.value;
}

static long fib_value(int n)
{
	long a = 0, b = 1;
	for (int i = 0; i < n; i++) {
		long c = a + b;
		a = b;
		b = c;
	}
	return a;
}

static void loop_body(size_t lo, size_t hi, void *arg)
{
	int *a = arg;
	for (size_t i = lo; i < hi; i++)
		a[i] += 1;
}

enum { SPAWN_JOIN, FIB_PLAIN, FIB_JOIN, SPAWN_WAIT, PFOR, NWORK };
static const char *const names[NWORK] = {"spawn-join", "fib-plain", "fib-join", "spawn-wait",
                                         "pfor-64k"};
#define PFOR_N 65536

/* One run: the time in ns and the operation count; *s the counters. */
static double run(int kind, weft_model model, int workers, double *ops, weft_stats *s)
{
	weft_config cfg;
	weft_config_init(&cfg);
	cfg.model = model;
	cfg.workers = workers;
	cfg.policy = WEFT_POLICY_FIFO;
	if (weft_rt_create(&cur_rt, &cfg) != 0)
		die("weft_rt_create failed");
	double t0 = 0, ns = 0;
	if (kind == SPAWN_JOIN || kind == FIB_PLAIN || kind == FIB_JOIN) {
		fib root = {.n = fib_n};
		weft_fn fn = kind == SPAWN_JOIN ? chain : kind == FIB_PLAIN ? fib_plain : fib_join;
		weft_task_init(&root.t, fn, &root);
		t0 = bench_now_ns();
		if (weft_post(cur_rt, &root.t) || weft_wait(&root.t))
			die("post or wait failed");
		ns = bench_now_ns() - t0;
		if (kind != SPAWN_JOIN && root.value != fib_value(fib_n))
			die("fib: wrong value");
		*ops = kind == SPAWN_JOIN ? (double)join_n : 2.0 * (double)fib_value(fib_n + 1) - 1;
	} else if (kind == SPAWN_WAIT) {
		weft_task *t = calloc((size_t)spawn_n, sizeof(*t));
		if (!t)
			die("out of memory");
		for (long i = 0; i < spawn_n; i++)
			weft_task_init(&t[i], empty, NULL);
		t0 = bench_now_ns();
		for (long i = 0; i < spawn_n; i++)
			if (weft_post(cur_rt, &t[i]))
				die("spawn-wait: post failed");
		weft_wait_all(cur_rt);
		ns = bench_now_ns() - t0;
		for (long i = 0; i < spawn_n; i++)
			if (weft_task_state_of(&t[i]) != WEFT_TASK_DONE)
				die("spawn-wait: a task did not run");
		free(t);
		*ops = (double)spawn_n;
	} else {
		int *a = calloc(PFOR_N, sizeof(*a));
		if (!a)
			die("out of memory");
		t0 = bench_now_ns();
		for (long p = 0; p < passes; p++)
			if (weft_parallel_for(cur_rt, 0, PFOR_N, 0, loop_body, a))
				die("pfor: weft_parallel_for failed");
		ns = bench_now_ns() - t0;
		for (long i = 0; i < PFOR_N; i++)
			if (a[i] != passes)
				die("pfor: wrong count");
		free(a);
		*ops = (double)PFOR_N * (double)passes;
	}
	weft_wait_all(cur_rt);
	weft_stats_get(cur_rt, s);
	weft_rt_destroy(cur_rt);
	return ns;
}

static int parse_list(const char *arg, int *out)
{
	int n = 0;
	char *copy = strdup(arg), *save = NULL;
	for (char *tok = strtok_r(copy, ",", &save); tok && n < MAX_LIST;
	     tok = strtok_r(NULL, ",", &save)) {
		char *end;
		long v = strtol(tok, &end, 10);
		if (*end || v < 1 || v > 1024) {
			free(copy);
			return -1;
		}
		out[n++] = (int)v;
	}
	free(copy);
	return n;
}

static const char usage[] =
        "usage: " PROG " [--models mn,threads] [--workers 1,2,4,8,16] [--reps R]\n"
        "       [--only WORKLOAD] [--small]\n"
        "       " PROG " --help | --version\n"
        "workloads: spawn-join fib-plain fib-join spawn-wait pfor-64k\n";

int main(int argc, char **argv)
{
	cli_check_stdout_at_exit(PROG);
	static const struct option opts[] = {
	        {"models", required_argument, NULL, 'm'},
	        {"workers", required_argument, NULL, 'w'},
	        {"reps", required_argument, NULL, 'r'},
	        {"only", required_argument, NULL, 'o'},
	        {"small", no_argument, NULL, 's'},
	        {"help", no_argument, NULL, 'h'},
	        {"version", no_argument, NULL, BENCH_OPT_VERSION},
	        {NULL, 0, NULL, 0},
	};
	weft_model models[8];
	int nmodels = 0, workers[MAX_LIST] = {1, 2, 4, 8, 16}, nworkers = 5, reps = 3, only = -1;
	bool small = false;
	models[nmodels++] = WEFT_MODEL_MN;
	models[nmodels++] = WEFT_MODEL_THREADS;
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'm': {
			nmodels = 0;
			char *copy = strdup(optarg), *save = NULL;
			for (char *tok = strtok_r(copy, ",", &save); tok && nmodels < 8;
			     tok = strtok_r(NULL, ",", &save)) {
				if (!bench_model_by_name(tok, &models[nmodels])) {
					fprintf(stderr, PROG ": unknown model %s\n", tok);
					return 2;
				}
				nmodels++;
			}
			free(copy);
			break;
		}
		case 'w':
			if ((nworkers = parse_list(optarg, workers)) <= 0) {
				fprintf(stderr, PROG ": --workers takes counts like 1,2,4\n");
				return 2;
			}
			break;
		case 'r':
			reps = atoi(optarg);
			if (reps < 1 || reps > MAX_REPS) {
				fprintf(stderr, PROG ": --reps is 1 to %d\n", MAX_REPS);
				return 2;
			}
			break;
		case 'o':
			for (int k = 0; k < NWORK; k++)
				if (strcmp(optarg, names[k]) == 0)
					only = k;
			if (only < 0) {
				fprintf(stderr, PROG ": unknown workload %s\n", optarg);
				return 2;
			}
			break;
		case 's':
			small = true;
			break;
		default:
			return bench_help_version_or_error(PROG, c, argv, opts, usage);
		}
	}
	if (optind < argc) {
		fprintf(stderr, PROG ": unexpected argument '%s'\n%s", argv[optind], usage);
		return 2;
	}
	join_n = small ? 2000 : 200000;
	spawn_n = small ? 2000 : 500000;
	passes = small ? 10 : 1000;
	fib_n = small ? 12 : 25;
	int cpus = 0;
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		cpus = CPU_COUNT(&set);
	printf("op_costs: %d CPUs; per op: ns (median of %d), then per op (pfor-64k: per "
	       "loop) parks, wake-ups, steals, failed steal attempts, idle looks\n",
	       cpus, reps);
	printf("%-11s %-8s %4s %10s %9s %9s %9s %9s %9s\n", "workload", "model", "w", "ns/op",
	       "parks", "wakeups", "steals", "failed", "looks");
	for (int k = 0; k < NWORK; k++) {
		if (only >= 0 && k != only)
			continue;
		for (int mi = 0; mi < nmodels; mi++) {
			for (int wi = 0; wi < nworkers; wi++) {
				double ns[MAX_REPS], ev[5][MAX_REPS], ops = 1;
				for (int r = 0; r < reps; r++) {
					weft_stats s;
					ns[r] = run(k, models[mi], workers[wi], &ops, &s);
					double per = k == PFOR ? (double)passes : ops;
					ev[0][r] = (double)s.parks / per;
					ev[1][r] = (double)s.wakeups / per;
					ev[2][r] = (double)s.steals / per;
					ev[3][r] = (double)(s.steal_attempts - s.steals) / per;
					ev[4][r] = (double)s.spins / per;
					ns[r] /= ops;
				}
				printf("%-11s %-8s %4d %10.2f %9.4f %9.4f %9.4f %9.4f %9.4f%s\n",
				       names[k], weft_model_name(models[mi]), workers[wi],
				       bench_median(ns, reps), bench_median(ev[0], reps),
				       bench_median(ev[1], reps), bench_median(ev[2], reps),
				       bench_median(ev[3], reps), bench_median(ev[4], reps),
				       cpus && workers[wi] > cpus ? "  (oversubscribed)" : "");
				fflush(stdout);
			}
		}
	}
	return 0;
}
