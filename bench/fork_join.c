/* fork_join: what waiting inside tasks costs on every model, in one run.
 *
 *   fib-N        a fib spawn tree: every call with n >= 2 posts fib(n-1) and
 *                fib(n-2) into a group and waits for it; ns per call, at a
 *                small and a large N: on a model whose cost per task does
 *                not grow with the tree, the two agree
 *   post-wait    a task posts one empty task and weft_waits for it, N
 *                times; ns per post + wait
 *   yield        two tasks on one worker call weft_yield in turn; ns per
 *                yield (fiber models)
 *   pingpong     two tasks exchange a token over two unbuffered weft_chans,
 *                N round trips; ns per round trip. With 2 or more workers the
 *                two run on different workers whenever they can (not run on
 *                one kernel-thread worker: the two would deadlock there)
 *   parked       (--parked N, once, not timed) N tasks parked on a
 *                semaphore at once on the model, then released: checks
 *                that they all finish, and prints the wall time
 *
 * Every result is checked (fib's value, counts). Repetitions are
 * interleaved over the configurations with the starting one rotating, and
 * each line reports the median, min and max.
 *
 *   fork_join [--models m1,m2] [--workers 1,2] [--reps R] [--small]
 *             [--fib-small N] [--fib-large N] [--n N] [--parked N] */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <weft/weft.h>

#include "bench_util.h"

#define PROG     "fork_join"
#define MAX_CFGS 64
#define MAX_REPS 51

static void die(const char *what)
{
	fprintf(stderr, PROG ": %s\n", what);
	exit(1);
}

static weft_rt *make_rt(weft_model model, int workers)
{
	weft_config cfg;
	weft_config_init(&cfg);
	cfg.model = model;
	cfg.workers = workers;
	cfg.policy = WEFT_POLICY_FIFO;
	weft_rt *rt;
	if (weft_rt_create(&rt, &cfg) != 0)
		die("weft_rt_create failed");
	return rt;
}

/* ------------------------------------------------------------ workloads */

static weft_rt *cur_rt;

typedef struct fib_call {
	int n;
	long result;
	weft_task t;
} fib_call;

static void fib(void *arg)
{
	fib_call *c = arg;
	if (c->n < 2) {
		c->result = c->n;
		return;
	}
	fib_call a = {.n = c->n - 1}, b = {.n = c->n - 2};
	weft_group g;
	weft_group_init(&g);
	weft_task_init(&a.t, fib, &a);
	weft_task_init(&b.t, fib, &b);
	if (weft_post_in(cur_rt, &g, &a.t) || weft_post_in(cur_rt, &g, &b.t))
		die("post failed");
	weft_group_wait(&g);
	c->result = a.result + b.result;
}

static long fib_value(int n)
{
	long a = 0, b = 1;
	for (int i = 0; i < n; i++) {
		long t = a + b;
		a = b;
		b = t;
	}
	return a;
}

static void empty(void *arg)
{
	(void)arg;
}

static long loop_n;

static void post_wait_loop(void *arg)
{
	(void)arg;
	weft_task t;
	for (long i = 0; i < loop_n; i++) {
		weft_task_init(&t, empty, NULL);
		if (weft_post(cur_rt, &t) || weft_wait(&t))
			die("post or wait failed");
	}
}

static void yield_loop(void *arg)
{
	(void)arg;
	for (long i = 0; i < loop_n; i++)
		weft_yield();
}

static weft_chan ping, pong;

static void pinger(void *arg)
{
	(void)arg;
	for (long i = 0; i < loop_n; i++) {
		long v = i, back;
		weft_chan_send(&ping, &v);
		weft_chan_recv(&pong, &back);
		if (back != i + 1)
			die("pingpong: wrong value");
	}
}

static void ponger(void *arg)
{
	(void)arg;
	for (long i = 0; i < loop_n; i++) {
		long v;
		weft_chan_recv(&ping, &v);
		v++;
		weft_chan_send(&pong, &v);
	}
}

/* ns per unit of one run of workload w on (model, workers). */
typedef enum { W_FIB_SMALL, W_FIB_LARGE, W_POST_WAIT, W_YIELD, W_PINGPONG, W_COUNT } workload;
static const char *const wnames[W_COUNT] = {"fib-small", "fib-large", "post-wait", "yield",
                                            "pingpong"};
static int fib_small = 16, fib_large = 23;
static long n_ops = 200000;

static double run_once(workload w, weft_model model, int workers)
{
	weft_rt *rt = make_rt(model, workers);
	cur_rt = rt;
	double t0 = 0, t1 = 0, units = 1;
	if (w == W_FIB_SMALL || w == W_FIB_LARGE) {
		fib_call root = {.n = w == W_FIB_SMALL ? fib_small : fib_large};
		weft_task_init(&root.t, fib, &root);
		t0 = bench_now_ns();
		weft_post(rt, &root.t);
		weft_wait(&root.t);
		t1 = bench_now_ns();
		if (root.result != fib_value(root.n))
			die("fib: wrong value");
		units = (double)(2 * fib_value(root.n + 1) - 1);
	} else if (w == W_POST_WAIT || w == W_YIELD) {
		loop_n = n_ops;
		weft_task a, b;
		weft_task_init(&a, w == W_YIELD ? yield_loop : post_wait_loop, NULL);
		weft_task_init(&b, yield_loop, NULL);
		t0 = bench_now_ns();
		weft_post(rt, &a);
		if (w == W_YIELD)
			weft_post(rt, &b);
		weft_wait_all(rt);
		t1 = bench_now_ns();
		units = (double)n_ops * (w == W_YIELD ? 2 : 1);
	} else {
		loop_n = n_ops / 4;
		weft_chan_init(&ping, sizeof(long), 0, NULL);
		weft_chan_init(&pong, sizeof(long), 0, NULL);
		weft_task a, b;
		weft_task_init(&a, pinger, NULL);
		weft_task_init(&b, ponger, NULL);
		t0 = bench_now_ns();
		weft_post(rt, &a);
		weft_post(rt, &b);
		weft_wait_all(rt);
		t1 = bench_now_ns();
		units = (double)loop_n;
	}
	weft_rt_destroy(rt);
	return (t1 - t0) / units;
}

/* ------------------------------------------------------------ parked */

static weft_sem park_sem;
static atomic_long parked_done;

static void parked_task(void *arg)
{
	(void)arg;
	weft_sem_wait(&park_sem);
	atomic_fetch_add(&parked_done, 1);
}

static void run_parked(weft_model model, int workers, long n)
{
	weft_rt *rt = make_rt(model, workers);
	weft_task *t = calloc((size_t)n, sizeof(*t));
	if (!t)
		die("out of memory");
	weft_sem_init(&park_sem, 0);
	atomic_store(&parked_done, 0);
	double t0 = bench_now_ns();
	for (long i = 0; i < n; i++) {
		weft_task_init(&t[i], parked_task, NULL);
		if (weft_post(rt, &t[i]))
			die("post failed");
	}
	weft_stats s;
	for (;;) { /* look now and then: a spinning poller would take a core from the workers */
		weft_stats_get(rt, &s);
		if ((long)s.parks >= n)
			break;
		nanosleep(&(struct timespec){0, 10000000}, NULL);
	}
	double t1 = bench_now_ns();
	for (long i = 0; i < n; i++)
		weft_sem_post(&park_sem);
	weft_wait_all(rt);
	double t2 = bench_now_ns();
	if (atomic_load(&parked_done) != n)
		die("parked: not every task finished");
	printf("parked: %ld fibers on %s, %d worker%s: all parked after %.2f s, all done %.2f s "
	       "later\n",
	       n, weft_model_name(model), workers, cli_plural(workers), (t1 - t0) / 1e9,
	       (t2 - t1) / 1e9);
	weft_rt_destroy(rt);
	free(t);
}

/* ------------------------------------------------------------ main */

typedef struct cfg {
	workload w;
	weft_model model;
	int workers;
	double ns[MAX_REPS];
} cfg;

static int parse_list(const char *s, int *out, int max)
{
	int n = 0;
	char *copy = strdup(s), *save = NULL;
	for (char *tok = strtok_r(copy, ",", &save); tok && n < max;
	     tok = strtok_r(NULL, ",", &save))
		out[n++] = atoi(tok);
	free(copy);
	return n;
}

int main(int argc, char **argv)
{
	cli_check_stdout_at_exit(PROG);
	const char *models_arg = "threads,fibers,mn";
	int workers[8] = {1, 2}, nworkers = 2, reps = 5;
	long parked = 0;
	static const struct option opts[] = {{"models", required_argument, 0, 'm'},
	                                     {"workers", required_argument, 0, 'w'},
	                                     {"reps", required_argument, 0, 'r'},
	                                     {"small", no_argument, 0, 's'},
	                                     {"fib-small", required_argument, 0, 'a'},
	                                     {"fib-large", required_argument, 0, 'b'},
	                                     {"n", required_argument, 0, 'n'},
	                                     {"parked", required_argument, 0, 'p'},
	                                     {"help", no_argument, 0, 'h'},
	                                     {"version", no_argument, 0, BENCH_OPT_VERSION},
	                                     {0, 0, 0, 0}};
	static const char usage[] =
	        "usage: " PROG " [--models m1,m2] [--workers 1,2] [--reps R] [--small]\n"
	        "       [--fib-small N] [--fib-large N] [--n N] [--parked N]\n"
	        "       " PROG " --help | --version\n"
	        "Waiting inside tasks on every model: fib spawn trees, post + wait, yield,\n"
	        "channel ping-pong, N parked fibers (medians of R, default 5).\n";
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'm':
			models_arg = optarg;
			break;
		case 'w':
			nworkers = parse_list(optarg, workers, 8);
			break;
		case 'r':
			reps = atoi(optarg);
			break;
		case 's':
			fib_small = 8;
			fib_large = 12;
			n_ops = 2000;
			reps = 1;
			break;
		case 'a':
			fib_small = atoi(optarg);
			break;
		case 'b':
			fib_large = atoi(optarg);
			break;
		case 'n':
			n_ops = atol(optarg);
			break;
		case 'p':
			parked = atol(optarg);
			break;
		default:
			return bench_help_version_or_error(PROG, c, argv, opts, usage);
		}
	}
	if (optind < argc) {
		fprintf(stderr, PROG ": unexpected argument '%s'\n%s", argv[optind], usage);
		return 2;
	}
	if (reps < 1 || reps > MAX_REPS || nworkers < 1 || fib_small < 2 || fib_large < 2 ||
	    n_ops < 4)
		die("bad option value");
	weft_model models[WEFT_MODEL_COUNT_];
	int nmodels = 0;
	char *copy = strdup(models_arg), *save = NULL;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (nmodels == WEFT_MODEL_COUNT_ || !bench_model_by_name(tok, &models[nmodels]))
			die("unknown model in --models");
		nmodels++;
	}
	free(copy);

	static cfg cfgs[MAX_CFGS];
	int ncfg = 0;
	for (int m = 0; m < nmodels; m++)
		for (int k = 0; k < nworkers; k++)
			for (int w = 0; w < W_COUNT; w++) {
				bool fiber = models[m] == WEFT_MODEL_FIBERS ||
				             models[m] == WEFT_MODEL_MN;
				if (w == W_YIELD && (!fiber || workers[k] != 1))
					continue; /* yield between fibers on one worker */
				if (w == W_PINGPONG && !fiber && workers[k] < 2)
					continue; /* on one kernel worker the two would deadlock */
				if (models[m] == WEFT_MODEL_FIBERS && workers[k] != 1)
					continue; /* fibers has one worker whatever is asked */
				if (ncfg < MAX_CFGS)
					cfgs[ncfg++] = (cfg){
					        .w = w, .model = models[m], .workers = workers[k]};
			}
	for (int r = 0; r < reps; r++)
		for (int i = 0; i < ncfg; i++) {
			cfg *k = &cfgs[(i + r) % ncfg];
			k->ns[r] = run_once(k->w, k->model, k->workers);
		}
	printf("%-10s %-8s %-7s %10s %10s %10s\n", "workload", "model", "workers", "median_ns",
	       "min_ns", "max_ns");
	for (int i = 0; i < ncfg; i++) {
		cfg *k = &cfgs[i];
		qsort(k->ns, (size_t)reps, sizeof(double), bench_cmp_double);
		char name[32];
		snprintf(name, sizeof(name), "%s", wnames[k->w]);
		if (k->w == W_FIB_SMALL || k->w == W_FIB_LARGE)
			snprintf(name, sizeof(name), "fib-%d",
			         k->w == W_FIB_SMALL ? fib_small : fib_large);
		printf("%-10s %-8s %-7d %10.1f %10.1f %10.1f\n", name, weft_model_name(k->model),
		       k->workers, k->ns[reps / 2], k->ns[0], k->ns[reps - 1]);
	}
	if (parked > 0)
		for (int m = 0; m < nmodels; m++)
			if (models[m] == WEFT_MODEL_FIBERS || models[m] == WEFT_MODEL_MN)
				run_parked(models[m],
				           models[m] == WEFT_MODEL_MN ? workers[nworkers - 1] : 1,
				           parked);
	return 0;
}
