/* weft_parallel_for and weft_parallel_reduce (weft/parallel.h) under every
 * model and worker count (MATRIX): `test_parallel <case> <model> <workers>`.
 *
 * Every case checks exactly-once coverage (a count per index), the sizes
 * the body sees against the grain, and the results of reductions against a
 * sequential computation: a compensated (Kahan) sum for doubles, an exact
 * histogram for integers. Loops run from the test thread (not a task),
 * from inside tasks, nested in bodies, with a bounded queue that refuses
 * posts, and from a task that holds a weft_mutex; at one worker none may
 * deadlock. The spawn model creates a thread per posted half, so fine
 * grains get smaller ranges there. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static weft_rt *create(long capacity)
{
	weft_config cfg;
	wt_config(&cfg);
	cfg.queue_capacity = capacity;
	return wt_create(&cfg);
}

static bool spawn_model(void)
{
	return wt.model == WEFT_MODEL_SPAWN;
}

/* ------------------------------------------------------------ coverage */

/* One loop's bookkeeping: a count per index of [begin, end), and the
 * misuse seen by bodies (recorded, reported by the main thread). */
typedef struct cover {
	size_t begin, end, grain;
	_Atomic unsigned char *count;
	_Atomic long calls, bad_range, too_big;
	weft_rt *rt;
	size_t inner; /* nested: each index runs an inner loop of this many */
	_Atomic long inner_total;
} cover;

static void cover_init(cover *c, weft_rt *rt, size_t begin, size_t end, size_t grain)
{
	memset(c, 0, sizeof(*c));
	c->rt = rt;
	c->begin = begin;
	c->end = end;
	c->grain = grain;
	c->count = calloc(end - begin ? end - begin : 1, 1);
	assert_non_null(c->count);
}

static void cover_body(size_t lo, size_t hi, void *arg)
{
	cover *c = arg;
	atomic_fetch_add(&c->calls, 1);
	if (!(c->begin <= lo && lo < hi && hi <= c->end)) {
		atomic_fetch_add(&c->bad_range, 1);
		return;
	}
	if (c->grain && hi - lo > c->grain)
		atomic_fetch_add(&c->too_big, 1);
	for (size_t i = lo; i < hi; i++)
		atomic_fetch_add_explicit(&c->count[i - c->begin], 1, memory_order_relaxed);
}

/* Asserts that every index ran once and the body saw proper sub-ranges;
 * frees the counts. */
static void cover_check(cover *c, const char *where)
{
	size_t n = c->end - c->begin;
	assert_int_equal(atomic_load(&c->bad_range), 0);
	if (atomic_load(&c->too_big))
		fail_msg("%s: [%zu, %zu) grain %zu: %ld call(s) saw more than the grain", where,
		         c->begin, c->end, c->grain, atomic_load(&c->too_big));
	for (size_t i = 0; i < n; i++)
		if (c->count[i] != 1)
			fail_msg("%s: [%zu, %zu) grain %zu: index %zu ran %d times", where,
			         c->begin, c->end, c->grain, c->begin + i, c->count[i]);
	if (n == 0)
		assert_int_equal(atomic_load(&c->calls), 0);
	free(c->count);
	c->count = NULL;
}

typedef struct range {
	size_t begin, end, grain;
} range;

#define HUGE_GRAIN ((size_t)-1)
#define TOP        ((size_t)-1)

static const range ranges[] = {
        {0, 0, 0},
        {7, 7, 1},
        {0, 1, 0},
        {0, 1, 1},
        {5, 6, HUGE_GRAIN},
        {0, 2, 1},
        {0, 3, 1},
        {0, 100, 1},
        {3, 1003, 7},
        {0, 1000, 0},
        {10, 1010, 1000},
        {0, 1001, 2},
        {0, 4096, 64},
        {0, 100000, 0},
        {0, 100000, HUGE_GRAIN},
        {0, 100000, 999},
        {1, 100000, 1}, /* not under spawn: a thread per half */
        {TOP - 1000, TOP, 3},
        {TOP - 5, TOP, 0},
};

static size_t ranges_to_run(void)
{
	/* Under spawn the last ranges with a fine grain would create tens of
	 * thousands of threads. */
	return sizeof(ranges) / sizeof(ranges[0]);
}

static bool range_skipped(const range *r)
{
	return spawn_model() && r->grain > 0 && r->grain < 8 && r->end - r->begin > 2000;
}

static void run_ranges(weft_rt *rt, const char *where)
{
	for (size_t k = 0; k < ranges_to_run(); k++) {
		const range *r = &ranges[k];
		if (range_skipped(r))
			continue;
		cover c;
		cover_init(&c, rt, r->begin, r->end, r->grain);
		assert_rc(0, weft_parallel_for(rt, r->begin, r->end, r->grain, cover_body, &c));
		cover_check(&c, where);
	}
}

/* Every index once for many (begin, end, grain), from the test thread. */
static void for_exactly_once(void)
{
	weft_rt *rt = create(0);
	run_ranges(rt, "from the test thread");
	assert_rc(0, weft_rt_destroy(rt));
}

/* The same from inside a task; the task checks, the test thread waits. */
typedef struct in_task {
	weft_task t;
	weft_rt *rt;
	_Atomic long failures;
} in_task;

static void ranges_task(void *arg)
{
	in_task *it = arg;
	for (size_t k = 0; k < ranges_to_run(); k++) {
		const range *r = &ranges[k];
		if (range_skipped(r))
			continue;
		size_t n = r->end - r->begin;
		cover c = {.begin = r->begin, .end = r->end, .grain = r->grain, .rt = it->rt};
		c.count = calloc(n ? n : 1, 1);
		WT_CHECK(c.count != NULL);
		if (!c.count)
			return;
		WT_CHECK_RC(0,
		            weft_parallel_for(it->rt, r->begin, r->end, r->grain, cover_body, &c));
		WT_CHECK(atomic_load(&c.bad_range) == 0 && atomic_load(&c.too_big) == 0);
		for (size_t i = 0; i < n; i++)
			if (c.count[i] != 1) {
				wt_async_fail(
				        __FILE__, __LINE__,
				        "in a task: [%zu, %zu) grain %zu: index %zu ran %d times",
				        r->begin, r->end, r->grain, r->begin + i, c.count[i]);
				break;
			}
		free(c.count);
	}
}

static void for_in_task(void)
{
	weft_rt *rt = create(0);
	in_task it = {.rt = rt};
	assert_rc(0, weft_task_init(&it.t, ranges_task, &it));
	assert_rc(0, weft_post(rt, &it.t));
	assert_rc(0, weft_wait(&it.t));
	assert_rc(0, weft_rt_destroy(rt));
}

static void outer_body(size_t lo, size_t hi, void *arg);

/* More plain threads than the 16 sets of slots outside callers take their
 * halves from, each running loops at once (and nested ones, which take a
 * set of their own): the calls that find no free set split on their
 * stacks; every index still runs once. */
enum { OUTSIDE_THREADS = 24, OUTSIDE_LOOPS = 100 };

typedef struct outside {
	weft_rt *rt;
	int k;
} outside;

static void *outside_thread(void *arg)
{
	outside *o = arg;
	for (int r = 0; r < OUTSIDE_LOOPS; r++) {
		size_t n = 2000 + (size_t)o->k * 37, grain = r % 3 == 0 ? 0 : (size_t)(r % 7) * 50;
		if (spawn_model() && grain > 0)
			grain = n / 4;
		cover c = {.begin = 5, .end = 5 + n, .grain = grain, .rt = o->rt};
		c.count = calloc(n, 1);
		WT_CHECK(c.count != NULL);
		if (!c.count)
			return NULL;
		if (r % 5 == 4) {
			c.grain = 50;
			c.inner = spawn_model() ? 4 : 20;
			c.end = c.begin + 200;
			n = 200;
			WT_CHECK_RC(0, weft_parallel_for(o->rt, c.begin, c.end, c.grain, outer_body,
			                                 &c));
			WT_CHECK(atomic_load(&c.inner_total) == (long)(n * c.inner));
		} else {
			WT_CHECK_RC(
			        0, weft_parallel_for(o->rt, c.begin, c.end, grain, cover_body, &c));
		}
		WT_CHECK(atomic_load(&c.bad_range) == 0 && atomic_load(&c.too_big) == 0);
		for (size_t i = 0; i < n; i++)
			if (c.count[i] != 1) {
				wt_async_fail(__FILE__, __LINE__,
				              "thread %d loop %d: index %zu ran %d times", o->k, r,
				              c.begin + i, c.count[i]);
				break;
			}
		free(c.count);
	}
	return NULL;
}

static void many_outside_callers(void)
{
	weft_rt *rt = create(0);
	pthread_t th[OUTSIDE_THREADS];
	outside o[OUTSIDE_THREADS];
	for (int k = 0; k < OUTSIDE_THREADS; k++) {
		o[k] = (outside){rt, k};
		wt_thread_start(&th[k], outside_thread, &o[k]);
	}
	for (int k = 0; k < OUTSIDE_THREADS; k++)
		wt_thread_join(th[k]);
	assert_rc(0, weft_rt_destroy(rt));
}

/* ------------------------------------------------------------ errors */

static void never(size_t lo, size_t hi, void *arg)
{
	(void)lo, (void)hi;
	atomic_fetch_add((_Atomic int *)arg, 1);
}

static void acc_init(void *acc, void *arg)
{
	(void)arg;
	*(double *)acc = 0;
}

static void acc_body(size_t lo, size_t hi, void *acc, void *arg)
{
	(void)arg;
	for (size_t i = lo; i < hi; i++)
		*(double *)acc += (double)i;
}

static void acc_combine(void *acc, const void *right, void *arg)
{
	(void)arg;
	*(double *)acc += *(const double *)right;
}

static void errors(void)
{
	weft_rt *rt = create(0);
	_Atomic int calls = 0;
	assert_rc(WEFT_EINVAL, weft_parallel_for(NULL, 0, 10, 0, never, (void *)&calls));
	assert_rc(WEFT_EINVAL, weft_parallel_for(rt, 0, 10, 0, NULL, NULL));
	assert_rc(WEFT_EINVAL, weft_parallel_for(rt, 10, 9, 0, never, (void *)&calls));
	assert_rc(0, weft_parallel_for(rt, 10, 10, 0, never, (void *)&calls));
	assert_rc(0, weft_parallel_for(rt, 10, 10, 1, never, (void *)&calls));
	assert_int_equal(atomic_load(&calls), 0);

	weft_reducer r = {sizeof(double), acc_init, acc_body, acc_combine};
	double sum = -1;
	assert_rc(WEFT_EINVAL, weft_parallel_reduce(NULL, 0, 10, 0, &r, NULL, &sum));
	assert_rc(WEFT_EINVAL, weft_parallel_reduce(rt, 0, 10, 0, NULL, NULL, &sum));
	assert_rc(WEFT_EINVAL, weft_parallel_reduce(rt, 0, 10, 0, &r, NULL, NULL));
	assert_rc(WEFT_EINVAL, weft_parallel_reduce(rt, 10, 9, 0, &r, NULL, &sum));
	weft_reducer bad = r;
	bad.size = 0;
	assert_rc(WEFT_EINVAL, weft_parallel_reduce(rt, 0, 10, 0, &bad, NULL, &sum));
	bad.size = WEFT_REDUCE_MAX_SIZE + 1;
	assert_rc(WEFT_EINVAL, weft_parallel_reduce(rt, 0, 10, 0, &bad, NULL, &sum));
	bad = r;
	bad.init = NULL;
	assert_rc(WEFT_EINVAL, weft_parallel_reduce(rt, 0, 10, 0, &bad, NULL, &sum));
	bad = r;
	bad.body = NULL;
	assert_rc(WEFT_EINVAL, weft_parallel_reduce(rt, 0, 10, 0, &bad, NULL, &sum));
	bad = r;
	bad.combine = NULL;
	assert_rc(WEFT_EINVAL, weft_parallel_reduce(rt, 0, 10, 0, &bad, NULL, &sum));
	assert_true(sum == -1); /* untouched by refused calls */
	/* An empty range leaves the identity. */
	assert_rc(0, weft_parallel_reduce(rt, 4, 4, 0, &r, NULL, &sum));
	assert_true(sum == 0);
	assert_rc(0, weft_parallel_reduce(rt, 0, 1000, 3, &r, NULL, &sum));
	assert_true(sum == 999.0 * 1000 / 2);
	assert_rc(0, weft_rt_destroy(rt));
	/* A dead runtime. */
	assert_rc(WEFT_EINVAL, weft_parallel_for(rt, 0, 10, 0, never, (void *)&calls));
	assert_rc(WEFT_EINVAL, weft_parallel_reduce(rt, 0, 10, 0, &r, NULL, &sum));
	assert_int_equal(atomic_load(&calls), 0);
}

/* [0, SIZE_MAX): the automatic grains must not overflow; bodies only add
 * up the lengths they get. */
static _Atomic size_t huge_total;
static _Atomic long huge_calls;

static void huge_body(size_t lo, size_t hi, void *arg)
{
	(void)arg;
	atomic_fetch_add(&huge_total, hi - lo);
	atomic_fetch_add(&huge_calls, 1);
}

static void len_init(void *acc, void *arg)
{
	(void)arg;
	*(size_t *)acc = 0;
}

static void len_body(size_t lo, size_t hi, void *acc, void *arg)
{
	(void)arg;
	*(size_t *)acc += hi - lo;
}

static void len_combine(void *acc, const void *right, void *arg)
{
	(void)arg;
	*(size_t *)acc += *(const size_t *)right;
}

static void huge_range(void)
{
	weft_rt *rt = create(0);
	long most = 4L * 64 * wt_workers(rt) + 64;
	size_t grains[] = {0, TOP / 16, TOP};
	for (size_t g = 0; g < sizeof(grains) / sizeof(grains[0]); g++) {
		atomic_store(&huge_total, 0);
		atomic_store(&huge_calls, 0);
		assert_rc(0, weft_parallel_for(rt, 0, TOP, grains[g], huge_body, NULL));
		assert_true(atomic_load(&huge_total) == TOP);
		assert_in_range(atomic_load(&huge_calls), 1, most);
	}
	static const weft_reducer r = {sizeof(size_t), len_init, len_body, len_combine};
	size_t total = 1;
	assert_rc(0, weft_parallel_reduce(rt, 0, TOP, 0, &r, NULL, &total));
	assert_true(total == TOP);
	assert_rc(0, weft_parallel_reduce(rt, 1, TOP, TOP / 3, &r, NULL, &total));
	assert_true(total == TOP - 1);
	assert_rc(0, weft_rt_destroy(rt));
}

/* ------------------------------------------------------------ nesting */

/* Each index of the outer loop runs an inner loop of c->inner iterations;
 * the inner loop's body counts them. */
static void inner_body(size_t lo, size_t hi, void *arg)
{
	cover *c = arg;
	atomic_fetch_add(&c->inner_total, (long)(hi - lo));
}

static void outer_body(size_t lo, size_t hi, void *arg)
{
	cover *c = arg;
	cover_body(lo, hi, c);
	for (size_t i = lo; i < hi; i++)
		WT_CHECK_RC(0, weft_parallel_for(c->rt, 0, c->inner, i % 2 ? 0 : 3, inner_body, c));
}

enum { OUTER_N = 64, INNER_N = 200, NEST_TASKS = 4 };

static size_t outer_grain(void)
{
	return spawn_model() ? 16 : 2;
}

static size_t inner_n(void)
{
	return spawn_model() ? 20 : INNER_N;
}

typedef struct nest_task {
	weft_task t;
	cover c;
} nest_task;

static void nest_fn(void *arg)
{
	nest_task *nt = arg;
	WT_CHECK_RC(0, weft_parallel_for(nt->c.rt, nt->c.begin, nt->c.end, nt->c.grain, outer_body,
	                                 &nt->c));
}

/* A loop in a loop's body, from the test thread; then NEST_TASKS tasks at
 * once, each running the nested loop (more loops than workers at one). */
static void nested(void)
{
	weft_rt *rt = create(0);
	cover c;
	cover_init(&c, rt, 0, OUTER_N, outer_grain());
	c.inner = inner_n();
	assert_rc(0, weft_parallel_for(rt, 0, OUTER_N, c.grain, outer_body, &c));
	assert_int_equal(atomic_load(&c.inner_total), (long)(OUTER_N * c.inner));
	cover_check(&c, "nested, from the test thread");

	static nest_task nt[NEST_TASKS];
	for (int k = 0; k < NEST_TASKS; k++) {
		cover_init(&nt[k].c, rt, 0, OUTER_N, outer_grain());
		nt[k].c.inner = inner_n();
		assert_rc(0, weft_task_init(&nt[k].t, nest_fn, &nt[k]));
		assert_rc(0, weft_post(rt, &nt[k].t));
	}
	for (int k = 0; k < NEST_TASKS; k++) {
		assert_rc(0, weft_wait(&nt[k].t));
		assert_int_equal(atomic_load(&nt[k].c.inner_total),
		                 (long)(OUTER_N * nt[k].c.inner));
		cover_check(&nt[k].c, "nested, in tasks");
	}
	assert_rc(0, weft_rt_destroy(rt));
}

/* A task holding a weft_mutex runs its loop itself (it could not help
 * while waiting): at one worker, posting would deadlock. */
typedef struct locked_task {
	weft_task t;
	weft_mutex m;
	cover c;
} locked_task;

static void locked_fn(void *arg)
{
	locked_task *lt = arg;
	WT_CHECK_RC(0, weft_mutex_lock(&lt->m));
	WT_CHECK_RC(0, weft_parallel_for(lt->c.rt, lt->c.begin, lt->c.end, lt->c.grain, cover_body,
	                                 &lt->c));
	WT_CHECK_RC(0, weft_mutex_unlock(&lt->m));
}

static void holding_mutex(void)
{
	weft_rt *rt = create(0);
	static locked_task lt;
	assert_rc(0, weft_mutex_init(&lt.m));
	cover_init(&lt.c, rt, 0, 5000, 10);
	assert_rc(0, weft_task_init(&lt.t, locked_fn, &lt));
	assert_rc(0, weft_post(rt, &lt.t));
	assert_rc(0, weft_wait(&lt.t));
	cover_check(&lt.c, "in a task holding a weft_mutex");
	assert_rc(0, weft_rt_destroy(rt));
}

/* ------------------------------------------------------------ bounded queue */

/* A ready queue of 2: most posts are refused (WEFT_EFULL) and run inline;
 * from the test thread, from tasks and nested, everything still runs once. */
static void bounded_queue(void)
{
	weft_rt *rt = create(2);
	run_ranges(rt, "queue capacity 2, from the test thread");
	in_task it = {.rt = rt};
	assert_rc(0, weft_task_init(&it.t, ranges_task, &it));
	/* The loops may leave the tasks of halves they ran themselves queued
	 * (they finish at once when a worker gets to them): wait for room. */
	assert_rc(0, weft_post_wait(rt, &it.t));
	assert_rc(0, weft_wait(&it.t));
	cover c;
	cover_init(&c, rt, 0, OUTER_N, outer_grain());
	c.inner = inner_n();
	assert_rc(0, weft_parallel_for(rt, 0, OUTER_N, c.grain, outer_body, &c));
	assert_int_equal(atomic_load(&c.inner_total), (long)(OUTER_N * c.inner));
	cover_check(&c, "queue capacity 2, nested");
	assert_rc(0, weft_rt_destroy(rt));
}

/* ------------------------------------------------------------ reductions */

/* The doubles summed: positive, of varied magnitude and every mantissa
 * bit in use, from the index alone (10^8 of them would not fit in memory). */
static double value_of(size_t i)
{
	uint64_t x = (uint64_t)i * 0x9e3779b97f4a7c15ull;
	x ^= x >> 29;
	return (double)(x >> 11) * 0x1p-53 * (1.0 + (double)(i % 1000));
}

static void sum_init(void *acc, void *arg)
{
	(void)arg;
	*(double *)acc = 0;
}

static void sum_body(size_t lo, size_t hi, void *acc, void *arg)
{
	(void)arg;
	double s = *(double *)acc;
	for (size_t i = lo; i < hi; i++)
		s += value_of(i);
	*(double *)acc = s;
}

static void sum_combine(void *acc, const void *right, void *arg)
{
	(void)arg;
	*(double *)acc += *(const double *)right;
}

static double kahan_sum(size_t n)
{
	double s = 0, comp = 0;
	for (size_t i = 0; i < n; i++) {
		double y = value_of(i) - comp;
		double t = s + y;
		comp = (t - s) - y;
		s = t;
	}
	return s;
}

typedef struct sum_task {
	weft_task t;
	weft_rt *rt;
	size_t n, grain;
	double result;
} sum_task;

static void sum_fn(void *arg)
{
	sum_task *st = arg;
	static const weft_reducer r = {sizeof(double), sum_init, sum_body, sum_combine};
	WT_CHECK_RC(0, weft_parallel_reduce(st->rt, 0, st->n, st->grain, &r, NULL, &st->result));
}

/* 10^8 doubles (10^6 under sanitizers) summed with the automatic grain
 * match the sequential compensated sum within 1e-12 relative; with a given
 * grain the result has the same bits from the test thread, from a task and
 * run after run. */
static void reduce_sum(void)
{
	size_t n = WT_SANITIZER ? 1000000 : 100000000;
	if (spawn_model())
		n /= 10; /* the same tree, fewer iterations: the threads are slower */
	weft_rt *rt = create(0);
	static const weft_reducer r = {sizeof(double), sum_init, sum_body, sum_combine};
	double got = -1;
	assert_rc(0, weft_parallel_reduce(rt, 0, n, 0, &r, NULL, &got));
	double want = kahan_sum(n);
	double rel = fabs(got - want) / want;
	print_message("[ info     ] sum of %zu doubles: %.17g, Kahan %.17g, relative %.3g\n", n,
	              got, want, rel);
	if (!(rel <= 1e-12))
		fail_msg("sum of %zu doubles: %.17g, sequential %.17g (relative %.3g)", n, got,
		         want, rel);

	size_t grain = n / 37 + 1, small = n / 100;
	double a = 0, b = 0;
	assert_rc(0, weft_parallel_reduce(rt, 0, small, grain / 100 + 1, &r, NULL, &a));
	assert_rc(0, weft_parallel_reduce(rt, 0, small, grain / 100 + 1, &r, NULL, &b));
	assert_memory_equal(&a, &b, sizeof(a));
	sum_task st = {.rt = rt, .n = small, .grain = grain / 100 + 1, .result = -1};
	assert_rc(0, weft_task_init(&st.t, sum_fn, &st));
	assert_rc(0, weft_post(rt, &st.t));
	assert_rc(0, weft_wait(&st.t));
	assert_memory_equal(&a, &st.result, sizeof(a));
	assert_rc(0, weft_rt_destroy(rt));

	/* The same grain on a runtime with a bounded queue (posts refused,
	 * halves run inline): still the same bits. */
	rt = create(2);
	double c = 0;
	assert_rc(0, weft_parallel_reduce(rt, 0, small, grain / 100 + 1, &r, NULL, &c));
	assert_memory_equal(&a, &c, sizeof(a));
	assert_rc(0, weft_rt_destroy(rt));
}

/* A histogram of 256 64-bit bins (2 KiB: the accumulators' depth cap
 * applies) and a min/max with its index, exact against sequential ones. */
enum { BINS = 256 };

typedef struct hist {
	uint64_t bin[BINS];
} hist;

static unsigned bin_of(size_t i)
{
	uint64_t x = (uint64_t)i * 0xd1b54a32d192ed03ull;
	return (unsigned)((x ^ (x >> 32)) % BINS);
}

static void hist_init(void *acc, void *arg)
{
	(void)arg;
	memset(acc, 0, sizeof(hist));
}

static void hist_body(size_t lo, size_t hi, void *acc, void *arg)
{
	(void)arg;
	hist *h = acc;
	for (size_t i = lo; i < hi; i++)
		h->bin[bin_of(i)]++;
}

static void hist_combine(void *acc, const void *right, void *arg)
{
	(void)arg;
	hist *h = acc;
	const hist *r = right;
	for (int b = 0; b < BINS; b++)
		h->bin[b] += r->bin[b];
}

typedef struct minmax {
	double min, max;
	size_t argmin, argmax;
} minmax;

static void mm_init(void *acc, void *arg)
{
	(void)arg;
	*(minmax *)acc = (minmax){INFINITY, -INFINITY, (size_t)-1, (size_t)-1};
}

static void mm_body(size_t lo, size_t hi, void *acc, void *arg)
{
	(void)arg;
	minmax *m = acc;
	for (size_t i = lo; i < hi; i++) {
		double v = value_of(i);
		if (v < m->min)
			m->min = v, m->argmin = i;
		if (v > m->max)
			m->max = v, m->argmax = i;
	}
}

/* Left then right: ties keep the smaller index, as the sequential loop. */
static void mm_combine(void *acc, const void *right, void *arg)
{
	(void)arg;
	minmax *m = acc;
	const minmax *r = right;
	if (r->min < m->min)
		m->min = r->min, m->argmin = r->argmin;
	if (r->max > m->max)
		m->max = r->max, m->argmax = r->argmax;
}

static void reduce_exact(void)
{
	size_t n = WT_SANITIZER ? 200000 : 2000000;
	weft_rt *rt = create(0);
	static hist want, got;
	memset(&want, 0, sizeof(want));
	for (size_t i = 0; i < n; i++)
		want.bin[bin_of(i)]++;
	const weft_reducer hr = {sizeof(hist), hist_init, hist_body, hist_combine};
	size_t grains[] = {0, 1000, spawn_model() ? 5000 : 17};
	for (size_t g = 0; g < sizeof(grains) / sizeof(grains[0]); g++) {
		memset(&got, 0xa5, sizeof(got)); /* init must clear it */
		assert_rc(0, weft_parallel_reduce(rt, 0, n, grains[g], &hr, NULL, &got));
		assert_memory_equal(&want, &got, sizeof(want));
	}

	minmax mw;
	mm_init(&mw, NULL);
	mm_body(0, n, &mw, NULL);
	const weft_reducer mr = {sizeof(minmax), mm_init, mm_body, mm_combine};
	minmax mg;
	assert_rc(0, weft_parallel_reduce(rt, 0, n, 0, &mr, NULL, &mg));
	assert_true(mg.min == mw.min && mg.max == mw.max);
	assert_int_equal(mg.argmin, mw.argmin);
	assert_int_equal(mg.argmax, mw.argmax);
	assert_rc(0, weft_rt_destroy(rt));

	/* With a bounded queue too. */
	rt = create(2);
	memset(&got, 0, sizeof(got));
	assert_rc(0, weft_parallel_reduce(rt, 0, n, 1000, &hr, NULL, &got));
	assert_memory_equal(&want, &got, sizeof(want));
	assert_rc(0, weft_rt_destroy(rt));
}

WT_CASES(WT_CASE(for_exactly_once), WT_CASE(for_in_task), WT_CASE(many_outside_callers),
         WT_CASE(errors), WT_CASE(huge_range), WT_CASE(nested), WT_CASE(holding_mutex),
         WT_CASE(bounded_queue), WT_CASE(reduce_sum), WT_CASE(reduce_exact));
