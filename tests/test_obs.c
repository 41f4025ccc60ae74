/* Statistics: per-task latency histograms, weft_stats_reset and the
 * quantize-style printout, under the model and worker count of the command
 * line (and fibers explicitly). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"

enum { N_TASKS = 500 };

static void short_nap(void *arg)
{
	(void)arg;
	struct timespec ts = {0, 20000}; /* 20 us */
	nanosleep(&ts, NULL);
}

static weft_rt *stats_rt(weft_model model, bool fibers)
{
	weft_config cfg;
	wt_config(&cfg);
	if (fibers)
		cfg.model = WEFT_MODEL_FIBERS;
	else
		(void)model;
	cfg.stats = 1;
	return wt_create(&cfg);
}

static uint64_t total(const uint64_t c[WEFT_LATENCY_BUCKETS])
{
	uint64_t n = 0;
	for (int b = 0; b < WEFT_LATENCY_BUCKETS; b++)
		n += c[b];
	return n;
}

/* The lowest bucket holding anything. */
static int lowest(const uint64_t c[WEFT_LATENCY_BUCKETS])
{
	for (int b = 0; b < WEFT_LATENCY_BUCKETS; b++)
		if (c[b])
			return b;
	return -1;
}

static void run_tasks(weft_rt *rt, weft_task *t, int n)
{
	for (int i = 0; i < n; i++) {
		assert_rc(0, weft_task_init(&t[i], short_nap, NULL));
		assert_rc(0, weft_post(rt, &t[i]));
	}
	assert_rc(0, weft_wait_all(rt));
}

static void histograms(bool fibers)
{
	weft_rt *rt = stats_rt(wt.model, fibers);
	weft_task *t = calloc(N_TASKS, sizeof(*t));
	assert_non_null(t);
	run_tasks(rt, t, N_TASKS);
	uint64_t wait[WEFT_LATENCY_BUCKETS], run[WEFT_LATENCY_BUCKETS], turn[WEFT_LATENCY_BUCKETS];
	assert_rc(0, weft_stats_latency(rt, WEFT_LATENCY_QUEUE_WAIT, wait));
	assert_rc(0, weft_stats_latency(rt, WEFT_LATENCY_RUN, run));
	assert_rc(0, weft_stats_latency(rt, WEFT_LATENCY_TURNAROUND, turn));
	assert_int_equal(total(wait), N_TASKS);
	assert_int_equal(total(run), N_TASKS);
	assert_int_equal(total(turn), N_TASKS);
	/* Every task slept 20 us: no run (and no turnaround) below 2^14 ns. */
	assert_true(lowest(run) >= 15);
	assert_true(lowest(turn) >= 15);

	/* Reset: counters and histograms start again from zero. */
	weft_stats st;
	assert_rc(0, weft_stats_get(rt, &st));
	assert_int_equal(st.run, N_TASKS);
	assert_rc(0, weft_stats_reset(rt));
	assert_rc(0, weft_stats_get(rt, &st));
	assert_int_equal(st.run, 0);
	assert_int_equal(st.posted, 0);
	assert_rc(0, weft_stats_latency(rt, WEFT_LATENCY_RUN, run));
	assert_int_equal(total(run), 0);
	run_tasks(rt, t, 10);
	assert_rc(0, weft_stats_get(rt, &st));
	assert_int_equal(st.run, 10);
	assert_int_equal(st.posted, 10);
	assert_rc(0, weft_stats_latency(rt, WEFT_LATENCY_TURNAROUND, turn));
	assert_int_equal(total(turn), 10);

	/* The printout, in DTrace's quantize layout. */
	wt_capture_begin();
	assert_rc(0, weft_rt_destroy(rt));
	const char *err = wt_capture_end();
	assert_non_null(strstr(err, "weft: task queue wait (post to first run), ns"));
	assert_non_null(strstr(err, "weft: task turnaround (post to end), ns"));
	assert_non_null(
	        strstr(err, "           value  ------------- Distribution ------------- count"));
	assert_non_null(strstr(err, "|@"));
	free(t);
}

static void latency_histograms(void)
{
	histograms(false);
}

static void latency_histograms_fibers(void)
{
	histograms(true);
}

static void stats_off(void)
{
	weft_config cfg;
	wt_config(&cfg);
	weft_rt *rt = wt_create(&cfg);
	uint64_t c[WEFT_LATENCY_BUCKETS];
	assert_rc(WEFT_ENOTSUP, weft_stats_latency(rt, WEFT_LATENCY_RUN, c));
	assert_rc(WEFT_EINVAL, weft_stats_latency(rt, (weft_latency)7, c));
	assert_rc(WEFT_EINVAL, weft_stats_latency(rt, WEFT_LATENCY_RUN, NULL));
	assert_rc(WEFT_EINVAL, weft_stats_latency(NULL, WEFT_LATENCY_RUN, c));
	assert_rc(WEFT_EINVAL, weft_stats_reset(NULL));
	assert_rc(0, weft_stats_reset(rt));
	assert_null(weft_latency_name((weft_latency)7));
	assert_rc(0, weft_rt_destroy(rt));
}

WT_CASES(WT_CASE(latency_histograms), WT_CASE(latency_histograms_fibers), WT_CASE(stats_off));
