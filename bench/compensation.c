/* compensation: what a wait released only by a still-queued task costs on
 * the kernel-thread models at 1 worker (where a stand-in thread must run
 * the releasing task, core/standin.c) against 2 workers (where the second
 * worker runs it), in one run. Issue 26's bar: the 1-worker time within 2x
 * of the 2-worker time.
 *
 * Two programs, each as a newcomer writes it, in one runtime:
 *   chan  a consumer task posted first, then its producer, over a weft_chan
 *         of 16 longs (--items per round);
 *   cond  a task waiting on a weft_cond posted first, then the task that
 *         signals it (--pairs per round).
 * Repetitions alternate the worker counts (a runtime made afresh each
 * time), so the ratios come from the same load; medians are printed. */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_util.h"
#include <weft/weft.h>

enum { CAP = 16 };

static int items = 20000, pairs = 200, reps = 7;

static weft_chan chan;
static long chan_buf[CAP];
static long chan_sum;

static void consumer(void *arg)
{
	(void)arg;
	long v, sum = 0;
	for (int i = 0; i < items; i++) {
		if (weft_chan_recv(&chan, &v) != 0)
			abort();
		sum += v;
	}
	chan_sum = sum;
}

static void producer(void *arg)
{
	(void)arg;
	for (long i = 0; i < items; i++)
		if (weft_chan_send(&chan, &i) != 0)
			abort();
}

static weft_mutex mu;
static weft_cond cv;
static int signalled;

static void cond_waiter(void *arg)
{
	(void)arg;
	weft_mutex_lock(&mu);
	while (!signalled)
		weft_cond_wait(&cv, &mu);
	weft_mutex_unlock(&mu);
}

static void cond_signaller(void *arg)
{
	(void)arg;
	weft_mutex_lock(&mu);
	signalled = 1;
	weft_cond_signal(&cv);
	weft_mutex_unlock(&mu);
}

/* Posts first (it waits), then second (it releases), and waits for both. */
static void pair(weft_rt *rt, weft_fn first, weft_fn second)
{
	weft_task a, b;
	weft_task_init(&a, first, NULL);
	weft_task_init(&b, second, NULL);
	if (weft_post(rt, &a) != 0 || weft_post(rt, &b) != 0 || weft_wait(&a) != 0 ||
	    weft_wait(&b) != 0)
		abort();
}

static weft_rt *make(weft_model model, int workers)
{
	weft_config cfg;
	weft_config_init(&cfg);
	cfg.model = model;
	cfg.workers = workers;
	weft_rt *rt;
	int rc = weft_rt_create(&rt, &cfg);
	if (rc != 0) {
		fprintf(stderr, "compensation: weft_rt_create: %s\n", weft_strerror(rc));
		exit(1);
	}
	return rt;
}

/* ms for one round of the chan program and one of the cond program. */
static void round_ms(weft_model model, int workers, double *chan_ms, double *cond_ms)
{
	weft_rt *rt = make(model, workers);
	double start = bench_now_ns();
	weft_chan_init(&chan, sizeof(long), CAP, chan_buf);
	pair(rt, consumer, producer);
	if (chan_sum != (long)items * (items - 1) / 2) {
		fprintf(stderr, "compensation: the consumer's sum is wrong\n");
		exit(1);
	}
	double mid = bench_now_ns();
	weft_mutex_init(&mu);
	weft_cond_init(&cv);
	for (int i = 0; i < pairs; i++) {
		signalled = 0;
		pair(rt, cond_waiter, cond_signaller);
	}
	double end = bench_now_ns();
	weft_rt_destroy(rt);
	*chan_ms = (mid - start) / 1e6;
	*cond_ms = (end - mid) / 1e6;
}

static const char usage[] = "usage: compensation [--items N] [--pairs N] [--reps N]\n"
                            "  On threads and spawn, at 1 and 2 workers, alternating: a consumer\n"
                            "  posted before its producer over a channel (--items, default 20000)\n"
                            "  and --pairs (default 200) condition waits each released by a task\n"
                            "  posted after the waiter. Prints medians of --reps (default 7) and\n"
                            "  the ratio of 1 worker to 2.\n";

int main(int argc, char **argv)
{
	static const struct option longopts[] = {{"items", required_argument, NULL, 'i'},
	                                         {"pairs", required_argument, NULL, 'p'},
	                                         {"reps", required_argument, NULL, 'r'},
	                                         {"help", no_argument, NULL, 'h'},
	                                         {"version", no_argument, NULL, BENCH_OPT_VERSION},
	                                         {NULL, 0, NULL, 0}};
	opterr = 0;
	int c;
	while ((c = getopt_long(argc, argv, ":i:p:r:h", longopts, NULL)) != -1) {
		int *into = c == 'i' ? &items : c == 'p' ? &pairs : c == 'r' ? &reps : NULL;
		if (into) {
			char *end;
			long v = strtol(optarg, &end, 10);
			if (*end || v < 1 || v > 100000000) {
				fprintf(stderr,
				        "compensation: --%s wants a positive count, not '%s'\n",
				        c == 'i'   ? "items"
				        : c == 'p' ? "pairs"
				                   : "reps",
				        optarg);
				return 2;
			}
			*into = (int)v;
			continue;
		}
		return bench_help_version_or_error("compensation", c, argv, longopts, usage);
	}
	static const weft_model models[] = {WEFT_MODEL_THREADS, WEFT_MODEL_SPAWN};
	enum { NMODELS = 2 };
	double *v = calloc((size_t)reps * NMODELS * 2 * 2, sizeof(double));
	if (!v)
		return 1;
	/* v[((m * 2 + w) * 2 + program) * reps + r] */
	for (int r = 0; r < reps; r++)
		for (int m = 0; m < NMODELS; m++)
			for (int w = 0; w < 2; w++) {
				double *at = &v[((m * 2 + w) * 2) * reps + r];
				round_ms(models[m], w + 1, &at[0], &at[reps]);
			}
	printf("compensation: %d items, %d cond pairs, medians of %d (ms)\n", items, pairs, reps);
	printf("  %-8s %-5s %10s %10s %10s %10s\n", "model", "prog", "1 worker", "2 workers",
	       "ratio", "bar 2x");
	for (int m = 0; m < NMODELS; m++)
		for (int p = 0; p < 2; p++) {
			double w1 = bench_median(&v[((m * 2 + 0) * 2 + p) * reps], reps);
			double w2 = bench_median(&v[((m * 2 + 1) * 2 + p) * reps], reps);
			printf("  %-8s %-5s %10.2f %10.2f %9.2fx %10s\n",
			       weft_model_name(models[m]), p ? "cond" : "chan", w1, w2, w1 / w2,
			       w1 <= 2 * w2 ? "met" : "missed");
		}
	free(v);
	return 0;
}
