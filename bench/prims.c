/* prims: what issue 27's primitives cost, in one run.
 *
 *   periodic   weft_post_every at 10 ms, 50 runs, on each model: the time
 *              from the first run to the 50th (49 periods: 490 ms when on
 *              time), how far that is off, and the latest run
 *   tls        ns per weft_tls_get inside a task (each model), against a
 *              _Thread_local read and pthread_getspecific in the same run
 *              (the fastest of 7 rounds each)
 *
 *   prims [--runs N] [--period-ms P] [--models threads,spawn,fibers,mn]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <getopt.h>
#include <weft/weft.h>

#include "bench_util.h"

#define PROG     "prims"
#define MAX_RUNS 10000

static struct {
	weft_periodic p;
	int runs;
	int64_t start, period;
	int64_t at[MAX_RUNS];
	_Atomic int n;
} per;

static void tick(void *arg)
{
	(void)arg;
	int k = atomic_load(&per.n);
	if (k < per.runs)
		per.at[k] = weft_clock_ns();
	if (atomic_fetch_add(&per.n, 1) + 1 == per.runs)
		weft_periodic_cancel(&per.p);
}

static void periodic_run(weft_rt *rt, const char *model)
{
	atomic_store(&per.n, 0);
	per.start = weft_clock_ns() + per.period;
	if (weft_post_every(rt, &per.p, tick, NULL, per.start, per.period, WEFT_EVERY_SKIP) != 0)
		abort();
	weft_periodic_wait(&per.p);
	int64_t span = per.at[per.runs - 1] - per.at[0], late = 0;
	for (int k = 0; k < per.runs; k++) {
		int64_t l = per.at[k] - (per.start + k * per.period);
		if (l > late)
			late = l;
	}
	double want = (double)(per.runs - 1) * (double)per.period;
	printf("periodic %-8s %d runs every %.0f ms: first to last %.2f ms (%+.2f%%), "
	       "latest run %.3f ms late\n",
	       model, per.runs, (double)per.period / 1e6, (double)span / 1e6,
	       100.0 * ((double)span - want) / want, (double)late / 1e6);
}

/* ------------------------------------------------------------ tls */

enum { GETS = 20000000 };
static weft_tls_key key;
static _Thread_local void *plain_tl;
static pthread_key_t pkey;
static double tls_ns;

/* The fastest of 7 rounds: on a shared machine the noise only adds. */
static double per_get(void *(*get)(void))
{
	double best = 1e9;
	for (int r = 0; r < 7; r++) {
		uintptr_t sum = 0;
		int64_t t0 = weft_clock_ns();
		for (int i = 0; i < GETS / 7; i++) {
			sum += (uintptr_t)get();
			__asm__ __volatile__("" : "+r"(sum));
		}
		double ns = (double)(weft_clock_ns() - t0) / (GETS / 7) + (sum == 1 ? 1e-9 : 0);
		if (ns < best)
			best = ns;
	}
	return best;
}

static void *get_weft(void)
{
	return weft_tls_get(key);
}
static void *get_plain(void)
{
	void *v = plain_tl;
	__asm__ __volatile__("" : "+r"(v));
	return v;
}
static void *get_pthread(void)
{
	return pthread_getspecific(pkey);
}

static void tls_task(void *arg)
{
	(void)arg;
	weft_tls_set(key, &key);
	tls_ns = per_get(get_weft);
}

int main(int argc, char **argv)
{
	cli_check_stdout_at_exit(PROG);
	per.runs = 50;
	per.period = 10000000;
	char models_arg[128] = "threads,spawn,fibers,mn";
	static const struct option opts[] = {{"runs", required_argument, NULL, 'n'},
	                                     {"period-ms", required_argument, NULL, 'p'},
	                                     {"models", required_argument, NULL, 'm'},
	                                     {"help", no_argument, NULL, 'h'},
	                                     {"version", no_argument, NULL, BENCH_OPT_VERSION},
	                                     {0}};
	static const char usage_text[] =
	        "usage: " PROG " [--runs N] [--period-ms P] [--models LIST]\n"
	        "periodic accuracy and task-local storage cost on each model\n";
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		if (c == 'n')
			per.runs = atoi(optarg);
		else if (c == 'p')
			per.period = (int64_t)(atof(optarg) * 1e6);
		else if (c == 'm')
			snprintf(models_arg, sizeof(models_arg), "%s", optarg);
		else
			return bench_help_version_or_error(PROG, c, argv, opts, usage_text);
	}
	if (per.runs < 2 || per.runs > MAX_RUNS || per.period < 1) {
		fputs(usage_text, stderr);
		return 2;
	}
	weft_tls_key_create(&key, NULL);
	pthread_key_create(&pkey, NULL);
	pthread_setspecific(pkey, &pkey);
	plain_tl = &pkey;
	printf("tls      plain thread: _Thread_local %.2f ns, pthread_getspecific %.2f ns per "
	       "get\n",
	       per_get(get_plain), per_get(get_pthread));
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
		weft_task t;
		weft_task_init(&t, tls_task, NULL);
		weft_post(rt, &t);
		weft_wait(&t);
		printf("tls      %-8s weft_tls_get in a task: %.2f ns per get\n", m, tls_ns);
		periodic_run(rt, m);
		weft_rt_destroy(rt);
	}
	return 0;
}
