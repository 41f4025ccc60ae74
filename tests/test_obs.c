/* Statistics: per-task latency histograms, weft_stats_reset and the
 * quantize-style printout, and the trace file, under the model and worker
 * count of the command line (MATRIX). */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <stdio.h>

#include <weft/parallel.h>

#include "harness.h"

/* Tracks of threads that are not workers: 1000, 1001, ... (one each). */
#define TRACE_THREADS 64

#define assert_rc_async(x) WT_CHECK_RC(0, (x))

enum { N_TASKS = 500 };

static void short_nap(void *arg)
{
	(void)arg;
	struct timespec ts = {0, 20000}; /* 20 us */
	nanosleep(&ts, NULL);
}

static void weft_nap(void *arg)
{
	(void)arg;
	weft_sleep_ns(10000);
}

static weft_rt *stats_rt(void)
{
	weft_config cfg;
	wt_config(&cfg);
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

static void latency_histograms(void)
{
	/* spawn has no long-lived workers whose busy time it could account. */
	bool has_workers = wt.model != WEFT_MODEL_SPAWN;
	weft_rt *rt = stats_rt();
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
	/* The workers ran N_TASKS sleeps of 20 us: at least 10 ms busy
	 * (spawn has no long-lived workers to account for). */
	if (has_workers)
		assert_true(st.busy_ns >= (uint64_t)N_TASKS * 20000);
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
	if (wt_fiber_model()) { /* a fiber that sleeps parks once and is unparked once */
		for (int i = 0; i < 10; i++) {
			assert_rc(0, weft_task_init(&t[i], weft_nap, NULL));
			assert_rc(0, weft_post(rt, &t[i]));
		}
		assert_rc(0, weft_wait_all(rt));
		assert_rc(0, weft_stats_get(rt, &st));
		assert_int_equal(st.parks, 10);
		assert_int_equal(st.unparks, 10);
	}

	/* The printout, in DTrace's quantize layout. */
	wt_capture_begin();
	assert_rc(0, weft_rt_destroy(rt));
	const char *err = wt_capture_end();
	assert_non_null(strstr(err, "weft: task queue wait (post to first run), ns"));
	assert_non_null(strstr(err, "weft: task turnaround (post to end), ns"));
	assert_non_null(
	        strstr(err, "           value  ------------- Distribution ------------- count"));
	assert_non_null(strstr(err, "|@"));
	if (has_workers)
		assert_non_null(strstr(err, "weft: worker 0 busy "));
	free(t);
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

/* ------------------------------------------------------------ trace */

enum { TRACE_TASKS = 300 };

static void traced_task(void *arg)
{
	(void)arg;
	struct timespec ts = {0, 1000};
	nanosleep(&ts, NULL);
	weft_yield();
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* Runs TRACE_TASKS tasks with tracing to a file, parses it and checks its
 * structure: every task appears exactly once as a first run segment, every
 * post has its flow end, slices nest (B/E balance per track), and the
 * tracks are named. */
static void trace_file(void)
{
	char path[] = "/tmp/weft-trace-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	weft_config cfg;
	wt_config(&cfg);
	cfg.trace_path = path;
	weft_rt *rt = wt_create(&cfg);
	weft_task *t = calloc(TRACE_TASKS, sizeof(*t));
	assert_non_null(t);
	for (int i = 0; i < TRACE_TASKS; i++) {
		assert_rc(0, weft_task_init(&t[i], traced_task, NULL));
		assert_rc(0, weft_post(rt, &t[i]));
	}
	assert_rc(0, weft_wait_all(rt));
	assert_rc(0, weft_trace_flush(rt)); /* a file mid-run is complete JSON too */
	char *mid = slurp(path);
	cJSON *mid_doc = cJSON_Parse(mid);
	assert_non_null(mid_doc);
	cJSON_Delete(mid_doc);
	free(mid);
	assert_rc(0, weft_rt_destroy(rt));

	char *text = slurp(path);
	cJSON *doc = cJSON_Parse(text);
	assert_non_null(doc);
	cJSON *events = cJSON_GetObjectItemCaseSensitive(doc, "traceEvents");
	assert_true(cJSON_IsArray(events));
	int posts = 0, flow_ends = 0, first_begins = 0, names = 0,
	    depth[1001 + TRACE_THREADS] = {0};
	bool balanced = true;
	cJSON *e;
	cJSON_ArrayForEach(e, events)
	{
		const char *ph = cJSON_GetObjectItemCaseSensitive(e, "ph")->valuestring;
		int tid = cJSON_GetObjectItemCaseSensitive(e, "tid")->valueint;
		assert_true(tid >= 0 && tid <= 1000 + TRACE_THREADS);
		if (strcmp(ph, "s") == 0)
			posts++;
		else if (strcmp(ph, "f") == 0)
			flow_ends++;
		else if (strcmp(ph, "M") == 0)
			names++;
		else if (strcmp(ph, "B") == 0) {
			depth[tid]++;
			cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
			if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(args, "first")))
				first_begins++;
		} else if (strcmp(ph, "E") == 0) {
			if (--depth[tid] < 0)
				balanced = false;
		}
		assert_true(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(e, "ts")) ||
		            strcmp(ph, "M") == 0);
	}
	assert_int_equal(posts, TRACE_TASKS);
	assert_int_equal(flow_ends, TRACE_TASKS);
	assert_int_equal(first_begins, TRACE_TASKS);
	assert_true(balanced);
	for (int i = 0; i <= 1000 + TRACE_THREADS; i++)
		assert_int_equal(depth[i], 0);
	assert_true(names >= 2);
	cJSON_Delete(doc);
	free(text);
	free(t);
	unlink(path);
}

/* Tracing off: weft_trace_flush says so. A trace path that cannot be
 * written fails weft_rt_create (WEFT_EINVAL), saying the path and errno's
 * text, from the code or from WEFT_TRACE, and leaves nothing allocated; a
 * good one is created at once. */
static void trace_off_and_bad_path(void)
{
	weft_config cfg;
	wt_config(&cfg);
	weft_rt *rt = wt_create(&cfg);
	assert_rc(WEFT_ENOTSUP, weft_trace_flush(rt));
	assert_rc(WEFT_EINVAL, weft_trace_flush(NULL));
	assert_rc(0, weft_rt_destroy(rt));

	cfg.trace_path = "/nonexistent-dir/trace.json";
	rt = (weft_rt *)&rt;
	wt_capture_begin();
	int rc = weft_rt_create(&rt, &cfg);
	const char *err = wt_capture_end();
	assert_rc(WEFT_EINVAL, rc);
	assert_null(rt);
	wt_assert_no_live_allocations();
	if (!strstr(err, "cannot write the trace to /nonexistent-dir/trace.json: "
	                 "No such file or directory"))
		fail_msg("stderr lacks the path and the reason: \"%s\"", err);

	char dir[] = "/tmp/weft-trace-dir-XXXXXX";
	assert_non_null(mkdtemp(dir));
	cfg.trace_path = NULL;
	assert_int_equal(setenv("WEFT_TRACE", dir, 1), 0); /* a directory */
	wt_capture_begin();
	rc = weft_rt_create(&rt, &cfg);
	err = wt_capture_end();
	assert_rc(WEFT_EINVAL, rc);
	assert_null(rt);
	wt_assert_no_live_allocations();
	assert_non_null(strstr(err, dir));
	assert_non_null(strstr(err, "Is a directory"));

	char path[64];
	snprintf(path, sizeof(path), "%s/trace.json", dir);
	assert_int_equal(setenv("WEFT_TRACE", path, 1), 0);
	rt = wt_create(&cfg);
	unsetenv("WEFT_TRACE");
	assert_int_equal(access(path, W_OK), 0); /* there before any task ran */
	assert_rc(0, weft_rt_destroy(rt));
	char *text = slurp(path);
	cJSON *doc = cJSON_Parse(text);
	assert_non_null(doc);
	cJSON_Delete(doc);
	free(text);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(dir), 0);
}

/* ------------------------------------------------------------ what a trace shows
 *
 * Every task is a slice (the halves weft_fork_join and the loops run
 * inline included), every post's arrow has one id and ends at its task's
 * slice, the statistics count what the trace shows, and a thread outside
 * the workers that runs a loop's chunks has slices of its own (issue 26). */

typedef struct ffib {
	weft_rt *rt;
	int n;
	long v;
} ffib;

static void ffib_fn(void *arg)
{
	ffib *f = arg;
	if (f->n < 2) {
		f->v = f->n;
		return;
	}
	ffib a = {.rt = f->rt, .n = f->n - 1}, b = {.rt = f->rt, .n = f->n - 2};
	assert_rc_async(weft_fork_join(f->rt, ffib_fn, &a, ffib_fn, &b));
	f->v = a.v + b.v;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Sorted and without repeats: false when an id is there twice. */
static bool unique_sorted(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	for (int i = 1; i < n; i++)
		if (v[i] == v[i - 1])
			return false;
	return true;
}

typedef struct trace_counts {
	int task_slices; /* "task" slices that begin a task (args.first) */
	int posts, ends;
	bool posts_unique, ends_unique, arrows_match, balanced;
	int outside_slices; /* slices on tracks of threads that are not workers */
} trace_counts;

static trace_counts read_trace(const char *path)
{
	trace_counts c = {.balanced = true};
	char *text = slurp(path);
	cJSON *doc = cJSON_Parse(text);
	assert_non_null(doc);
	cJSON *events = cJSON_GetObjectItemCaseSensitive(doc, "traceEvents");
	assert_true(cJSON_IsArray(events));
	int n = cJSON_GetArraySize(events);
	double *s_ids = calloc((size_t)n + 1, sizeof(double));
	double *f_ids = calloc((size_t)n + 1, sizeof(double));
	int *depth = calloc(1001 + TRACE_THREADS, sizeof(int));
	assert_true(s_ids && f_ids && depth);
	cJSON *e;
	cJSON_ArrayForEach(e, events)
	{
		const char *ph = cJSON_GetObjectItemCaseSensitive(e, "ph")->valuestring;
		int tid = cJSON_GetObjectItemCaseSensitive(e, "tid")->valueint;
		assert_true(tid >= 0 && tid <= 1000 + TRACE_THREADS);
		cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "id");
		if (strcmp(ph, "s") == 0) {
			s_ids[c.posts++] = id->valuedouble;
		} else if (strcmp(ph, "f") == 0) {
			f_ids[c.ends++] = id->valuedouble;
		} else if (strcmp(ph, "B") == 0) {
			depth[tid]++;
			const char *name = cJSON_GetObjectItemCaseSensitive(e, "name")->valuestring;
			cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
			if (strcmp(name, "task") == 0 &&
			    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(args, "first")))
				c.task_slices++;
			if (tid >= 1000)
				c.outside_slices++;
		} else if (strcmp(ph, "E") == 0) {
			if (--depth[tid] < 0)
				c.balanced = false;
		}
	}
	for (int i = 0; i <= 1000 + TRACE_THREADS; i++)
		if (depth[i] != 0)
			c.balanced = false;
	c.posts_unique = unique_sorted(s_ids, c.posts);
	c.ends_unique = unique_sorted(f_ids, c.ends);
	c.arrows_match = c.posts == c.ends;
	for (int i = 0; c.arrows_match && i < c.posts; i++)
		c.arrows_match = s_ids[i] == f_ids[i];
	free(depth);
	free(f_ids);
	free(s_ids);
	cJSON_Delete(doc);
	free(text);
	return c;
}

static weft_rt *traced_rt(char *path)
{
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	weft_config cfg;
	wt_config(&cfg);
	cfg.trace_path = path;
	cfg.stats = 1;
	return wt_create(&cfg);
}

/* Checks the trace of rt (destroyed here) against its statistics. */
static trace_counts check_trace(weft_rt *rt, const char *path)
{
	assert_rc(0, weft_wait_all(rt));
	weft_stats st;
	assert_rc(0, weft_stats_get(rt, &st));
	uint64_t h[WEFT_LATENCY_BUCKETS];
	uint64_t hist[WEFT_LATENCY_COUNT_];
	for (int k = 0; k < WEFT_LATENCY_COUNT_; k++) {
		assert_rc(0, weft_stats_latency(rt, (weft_latency)k, h));
		hist[k] = total(h);
	}
	assert_rc(0, weft_rt_destroy(rt));
	trace_counts c = read_trace(path);
	print_message("stats: posted %llu run %llu cancelled %llu; histograms %llu %llu %llu; "
	              "trace: task slices %d, arrows %d starts %d ends, ids unique %d/%d, "
	              "matching %d, balanced %d, outside slices %d\n",
	              (unsigned long long)st.posted, (unsigned long long)st.run,
	              (unsigned long long)st.cancelled, (unsigned long long)hist[0],
	              (unsigned long long)hist[1], (unsigned long long)hist[2], c.task_slices,
	              c.posts, c.ends, c.posts_unique, c.ends_unique, c.arrows_match, c.balanced,
	              c.outside_slices);
	assert_int_equal(c.task_slices, (int)st.run);
	assert_int_equal(c.posts, (int)st.run);
	assert_true(c.posts_unique);
	assert_true(c.ends_unique);
	assert_true(c.arrows_match);
	assert_true(c.balanced);
	for (int k = 0; k < WEFT_LATENCY_COUNT_; k++)
		assert_int_equal(hist[k], st.run);
	unlink(path);
	return c;
}

/* fib(20) by weft_fork_join from a task (its halves nearly all run inline)
 * and one weft_fork_join of fib(15) and fib(14) from the test thread. */
static void trace_fork_join(void)
{
	char path[] = "/tmp/weft-trace-XXXXXX";
	weft_rt *rt = traced_rt(path);
	ffib f = {.rt = rt, .n = 20};
	weft_task t;
	assert_rc(0, weft_task_init(&t, ffib_fn, &f));
	assert_rc(0, weft_post(rt, &t));
	assert_rc(0, weft_wait(&t));
	assert_int_equal(f.v, 6765);
	ffib a = {.rt = rt, .n = 15}, b = {.rt = rt, .n = 14};
	assert_rc(0, weft_fork_join(rt, ffib_fn, &a, ffib_fn, &b));
	assert_int_equal(a.v + b.v, 987);
	trace_counts c = check_trace(rt, path);
	/* The test thread's fork-join, whose halves it ran itself. */
	assert_true(c.outside_slices >= 1);
}

static void loop_body(size_t lo, size_t hi, void *arg)
{
	_Atomic long *sum = arg;
	long s = 0;
	for (size_t i = lo; i < hi; i++)
		s += (long)i;
	atomic_fetch_add(sum, s);
}

static void red_init(void *acc, void *arg)
{
	(void)arg;
	*(long *)acc = 0;
}

static void red_body(size_t lo, size_t hi, void *acc, void *arg)
{
	(void)arg;
	for (size_t i = lo; i < hi; i++)
		*(long *)acc += (long)i;
}

static void red_combine(void *acc, const void *other, void *arg)
{
	(void)arg;
	*(long *)acc += *(const long *)other;
}

typedef struct in_task_loop {
	weft_rt *rt;
	_Atomic long sum;
} in_task_loop;

static void loop_in_task(void *arg)
{
	in_task_loop *l = arg;
	assert_rc_async(weft_parallel_for(l->rt, 0, 20000, 100, loop_body, &l->sum));
}

/* Parallel loops and a reduction from the test thread (which runs chunks
 * itself: its slices must be there) and a loop from a task. */
static void trace_loop(void)
{
	char path[] = "/tmp/weft-trace-XXXXXX";
	weft_rt *rt = traced_rt(path);
	_Atomic long sum = 0;
	assert_rc(0, weft_parallel_for(rt, 0, 20000, 100, loop_body, &sum));
	assert_int_equal(atomic_load(&sum), 20000L * 19999 / 2);
	const weft_reducer r = {
	        .size = sizeof(long), .init = red_init, .body = red_body, .combine = red_combine};
	long total_r = 0;
	assert_rc(0, weft_parallel_reduce(rt, 0, 100000, 0, &r, NULL, &total_r));
	assert_int_equal(total_r, 100000L * 99999 / 2);
	in_task_loop l = {.rt = rt};
	weft_task t;
	assert_rc(0, weft_task_init(&t, loop_in_task, &l));
	assert_rc(0, weft_post(rt, &t));
	assert_rc(0, weft_wait(&t));
	assert_int_equal(atomic_load(&l.sum), 20000L * 19999 / 2);
	trace_counts c = check_trace(rt, path);
	assert_true(c.outside_slices >= 2); /* the test thread's two loops at least */
}

WT_CASES(WT_CASE(latency_histograms), WT_CASE(stats_off), WT_CASE(trace_file),
         WT_CASE(trace_off_and_bad_path), WT_CASE(trace_fork_join), WT_CASE(trace_loop));
