/* Deferred tasks and cancellation, under every model and worker count
 * (MATRIX): `test_deferred <case> <model> <workers>`.
 *
 * weft_post_at (delayed posts: never early, in deadline order, cancellable,
 * drained or cancelled by destroy), weft_post_when (a wavefront DAG with no
 * task waiting inside a worker, the same result as sequential code;
 * cancellation flowing along edges), weft_cancel and weft_group_cancel
 * (each task runs once or is cancelled, never both, never lost, also with
 * cancels racing the workers from several threads). */
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define MS 1000000LL

static void nothing(void *arg)
{
	(void)arg;
}

/* ------------------------------------------------------------ delayed */

typedef struct delayed {
	weft_task task;
	int64_t due;
	int64_t ran_at;
	long order; /* when it started among all */
	int index;
} delayed;

static _Atomic long started;

static void record_start(void *arg)
{
	delayed *d = arg;
	d->ran_at = weft_clock_ns();
	d->order = atomic_fetch_add(&started, 1);
}

static int by_order(const void *a, const void *b)
{
	const delayed *x = *(delayed *const *)a, *y = *(delayed *const *)b;
	return (x->order > y->order) - (x->order < y->order);
}

/* Many delayed posts with random deadlines over 50 ms: none runs before its
 * deadline; with one worker they start in deadline order (equal deadlines
 * in post order). */
static void delayed_in_order(void)
{
	weft_rt *rt = wt_create_default();
	/* spawn starts a thread per task: fewer there. */
	int n = WT_SANITIZER || wt.model == WEFT_MODEL_SPAWN ? 5000 : 100000;
	delayed *d = calloc((size_t)n, sizeof(*d));
	delayed **by = calloc((size_t)n, sizeof(*by));
	assert_non_null(d);
	assert_non_null(by);
	atomic_store(&started, 0);
	uint64_t rng = wt_seed();
	/* Far enough ahead that every post is in before the first is due (a
	 * deadline that passed while posting would let a later one go first). */
	int64_t base = weft_clock_ns() + (WT_SANITIZER ? 2000 : 500) * MS;
	for (int i = 0; i < n; i++) {
		d[i].index = i;
		/* Coarse deadlines: many ties, which must keep post order. */
		d[i].due = base + (int64_t)wt_rand_below(&rng, 500) * 100000;
		assert_rc(0, weft_task_init(&d[i].task, record_start, &d[i]));
		assert_rc(0, weft_post_at(rt, NULL, &d[i].task, d[i].due));
	}
	bool all_in = weft_clock_ns() < base;
	assert_rc(0, weft_wait_all(rt));
	long early = 0;
	for (int i = 0; i < n; i++) {
		assert_int_equal(WEFT_TASK_DONE, weft_task_state_of(&d[i].task));
		early += d[i].ran_at < d[i].due;
		by[i] = &d[i];
	}
	assert_int_equal(0, early);
	if (wt_workers(rt) == 1 && all_in) {
		qsort(by, (size_t)n, sizeof(*by), by_order);
		for (int i = 1; i < n; i++) {
			bool in_order =
			        by[i - 1]->due < by[i]->due ||
			        (by[i - 1]->due == by[i]->due && by[i - 1]->index < by[i]->index);
			if (!in_order)
				fail_msg("task %d (due %lld) started before task %d (due %lld)",
				         by[i - 1]->index, (long long)by[i - 1]->due, by[i]->index,
				         (long long)by[i]->due);
		}
	}
	assert_rc(0, weft_rt_destroy(rt));
	free(by);
	free(d);
}

static void delayed_cancel_and_destroy(void)
{
	weft_rt *rt = wt_create_default();
	weft_group g;
	assert_rc(0, weft_group_init(&g));
	weft_task far, near, soon;
	assert_rc(0, weft_task_init(&far, nothing, NULL));
	assert_rc(0, weft_task_init(&near, nothing, NULL));
	assert_rc(0, weft_task_init(&soon, nothing, NULL));
	assert_rc(0, weft_post_at(rt, &g, &far, weft_clock_ns() + 60000 * MS));
	assert_int_equal(WEFT_TASK_QUEUED, weft_task_state_of(&far));
	assert_int_equal(1, weft_group_pending(&g));
	assert_rc(WEFT_EBUSY, weft_post(rt, &far));
	assert_rc(WEFT_EBUSY, weft_task_init(&far, nothing, NULL));
	/* Cancelled at once: its waiters and group see it now, not in a minute. */
	int64_t t0 = weft_clock_ns();
	assert_rc(0, weft_cancel(&far));
	assert_rc(WEFT_ECANCELED, weft_wait(&far));
	assert_rc(0, weft_group_wait(&g));
	assert_rc(0, weft_wait_all(rt));
	assert_true(weft_clock_ns() - t0 < 10000 * MS);
	assert_rc(WEFT_EINVAL, weft_cancel(&far)); /* finished: too late */
	/* A past deadline runs at once; an unfinished one delays wait_all. */
	assert_rc(0, weft_post_at(rt, NULL, &near, weft_clock_ns() - MS));
	int64_t due = weft_clock_ns() + 20 * MS;
	assert_rc(0, weft_post_at(rt, NULL, &soon, due));
	assert_rc(0, weft_wait_all(rt));
	assert_true(weft_clock_ns() >= due);
	assert_int_equal(WEFT_TASK_DONE, weft_task_state_of(&near));
	assert_int_equal(WEFT_TASK_DONE, weft_task_state_of(&soon));
	/* Destroy drains what is due soon, cancels under CANCEL. */
	assert_rc(0, weft_task_init(&soon, nothing, NULL));
	assert_rc(0, weft_post_at(rt, NULL, &soon, weft_clock_ns() + 10 * MS));
	assert_rc(0, weft_rt_destroy(rt));
	assert_int_equal(WEFT_TASK_DONE, weft_task_state_of(&soon));
	rt = wt_create_default();
	assert_rc(0, weft_task_init(&far, nothing, NULL));
	assert_rc(0, weft_post_at(rt, NULL, &far, weft_clock_ns() + 60000 * MS));
	size_t discarded = 0;
	assert_rc(0, weft_rt_destroy_ex(rt, WEFT_DESTROY_CANCEL, &discarded));
	assert_int_equal(WEFT_TASK_CANCELLED, weft_task_state_of(&far));
	assert_int_equal(1, discarded);
	assert_rc(WEFT_EINVAL, weft_post_at(NULL, NULL, &far, 0));
}

/* ------------------------------------------------------------ DAG */

/* A wavefront: tile (i, j) needs (i-1, j) and (i, j-1); its value mixes
 * theirs. Posted row by row from this thread before any runs, so every
 * dependency is an edge, and no task ever waits. */
enum { PRIME = 1000003 };

typedef struct tile {
	weft_task task;
	int i, j, cols;
	long *v;
} tile;

static long mix(long up, long left, int i, int j)
{
	return (up * 31 + left * 17 + (long)i * 7 + j) % PRIME;
}

static void compute_tile(void *arg)
{
	tile *t = arg;
	long up = t->i ? t->v[(t->i - 1) * t->cols + t->j] : 1;
	long left = t->j ? t->v[t->i * t->cols + t->j - 1] : 1;
	t->v[t->i * t->cols + t->j] = mix(up, left, t->i, t->j);
}

static void wavefront_dag(void)
{
	weft_rt *rt = wt_create_default();
	int rows = WT_SANITIZER ? 40 : 100, cols = WT_SANITIZER ? 50 : 100; /* 10,000 tiles */
	int n = rows * cols;
	tile *t = calloc((size_t)n, sizeof(*t));
	long *v = calloc((size_t)n, sizeof(*v)), *want = calloc((size_t)n, sizeof(*want));
	assert_non_null(t);
	assert_non_null(v);
	assert_non_null(want);
	for (int i = 0; i < rows; i++)
		for (int j = 0; j < cols; j++)
			want[i * cols + j] = mix(i ? want[(i - 1) * cols + j] : 1,
			                         j ? want[i * cols + j - 1] : 1, i, j);
	weft_stats before;
	assert_rc(0, weft_stats_get(rt, &before));
	for (int i = 0; i < rows; i++) {
		for (int j = 0; j < cols; j++) {
			tile *x = &t[i * cols + j];
			*x = (tile){.i = i, .j = j, .cols = cols, .v = v};
			assert_rc(0, weft_task_init(&x->task, compute_tile, x));
			weft_task *after[2];
			size_t k = 0;
			if (i)
				after[k++] = &t[(i - 1) * cols + j].task;
			if (j)
				after[k++] = &t[i * cols + j - 1].task;
			assert_rc(0, weft_post_when(rt, NULL, &x->task, after, k));
		}
	}
	assert_rc(0, weft_wait_all(rt));
	for (int k = 0; k < n; k++)
		assert_int_equal(want[k], v[k]);
	weft_stats after;
	assert_rc(0, weft_stats_get(rt, &after));
	assert_int_equal((uint64_t)n, after.run - before.run);
	assert_int_equal(0, after.parks - before.parks); /* nobody waited inside */
	assert_rc(0, weft_rt_destroy(rt));
	free(want);
	free(v);
	free(t);
}

/* Cancelling a delayed task cancels what depends on it, transitively;
 * independent branches still run. */
static void cancel_flows_along_edges(void)
{
	weft_rt *rt = wt_create_default();
	weft_task a, b, c, other, joined;
	assert_rc(0, weft_task_init(&a, nothing, NULL));
	assert_rc(0, weft_task_init(&b, nothing, NULL));
	assert_rc(0, weft_task_init(&c, nothing, NULL));
	assert_rc(0, weft_task_init(&other, nothing, NULL));
	assert_rc(0, weft_task_init(&joined, nothing, NULL));
	assert_rc(0, weft_post_at(rt, NULL, &a, weft_clock_ns() + 60000 * MS));
	assert_rc(0, weft_post(rt, &other));
	weft_task *after_a[] = {&a}, *after_b[] = {&b}, *both[] = {&c, &other};
	assert_rc(0, weft_post_when(rt, NULL, &b, after_a, 1));
	assert_rc(0, weft_post_when(rt, NULL, &c, after_b, 1));
	assert_rc(0, weft_post_when(rt, NULL, &joined, both, 2));
	weft_task idle;
	assert_rc(0, weft_task_init(&idle, nothing, NULL));
	weft_task *bad[] = {&idle};
	assert_rc(WEFT_EINVAL, weft_post_when(rt, NULL, &idle, bad, 1));
	assert_rc(0, weft_cancel(&a));
	assert_rc(0, weft_wait_all(rt));
	assert_int_equal(WEFT_TASK_CANCELLED, weft_task_state_of(&a));
	assert_int_equal(WEFT_TASK_CANCELLED, weft_task_state_of(&b));
	assert_int_equal(WEFT_TASK_CANCELLED, weft_task_state_of(&c));
	assert_int_equal(WEFT_TASK_DONE, weft_task_state_of(&other));
	assert_int_equal(WEFT_TASK_CANCELLED, weft_task_state_of(&joined));
	assert_rc(WEFT_ECANCELED, weft_wait(&c));
	assert_rc(0, weft_rt_destroy(rt));
}

/* ------------------------------------------------------------ cancel */

static _Atomic bool saw_request;

static void holds_until_asked(void *arg)
{
	wt_gate *g = arg;
	wt_gate_fn(g);
	atomic_store(&saw_request, weft_cancel_requested());
}

static void cancel_queued_running_group(void)
{
	weft_rt *rt = wt_create_default();
	int n = wt_workers(rt);
	wt_gate gate;
	wt_gate_init(&gate);
	weft_task held[WT_GATE_MAX];
	for (int i = 0; i < n; i++) {
		assert_rc(0, weft_task_init(&held[i], holds_until_asked, &gate));
		assert_rc(0, weft_post(rt, &held[i]));
	}
	wt_gate_wait_started(&gate, n);
	enum { GROUPED = 10 };
	weft_group g;
	assert_rc(0, weft_group_init(&g));
	weft_task grouped[GROUPED], lone;
	for (int i = 0; i < GROUPED; i++) {
		assert_rc(0, weft_task_init(&grouped[i], nothing, NULL));
		assert_rc(0, weft_post_in(rt, &g, &grouped[i]));
	}
	assert_rc(0, weft_task_init(&lone, nothing, NULL));
	assert_rc(0, weft_post(rt, &lone));
	atomic_store(&saw_request, false);
	assert_rc(0, weft_cancel(&lone));
	assert_rc(0, weft_cancel(&lone)); /* again: still 0 */
	assert_rc(WEFT_EBUSY, weft_cancel(&held[0]));
	assert_rc(0, weft_group_cancel(&g));
	assert_false(weft_cancel_requested()); /* not a task */
	wt_gate_release(&gate, n);
	assert_rc(0, weft_group_wait(&g));
	assert_rc(WEFT_ECANCELED, weft_wait(&lone));
	for (int i = 0; i < GROUPED; i++)
		assert_int_equal(WEFT_TASK_CANCELLED, weft_task_state_of(&grouped[i]));
	for (int i = 0; i < n; i++)
		assert_rc(0, weft_wait(&held[i])); /* ran: not interrupted */
	assert_rc(0, weft_wait_all(rt));
	weft_stats s;
	assert_rc(0, weft_stats_get(rt, &s));
	assert_int_equal(GROUPED + 1, s.cancelled);
	assert_rc(WEFT_EINVAL, weft_cancel(NULL));
	assert_rc(WEFT_EINVAL, weft_group_cancel(NULL));
	assert_rc(0, weft_rt_destroy(rt));
	wt_gate_destroy(&gate);
	(void)atomic_load(&saw_request); /* only held[0] was asked; it may look */
}

/* Many tasks, cancels from several threads while workers run them: each
 * task ran once or was cancelled, never both, never lost; a cancel that
 * returned 0 means it never ran; the counts add up. */
enum { CANCELLERS = 3 };

typedef struct racing {
	weft_task *tasks;
	_Atomic int *ran, *cancel_ok;
	long n;
	uint64_t seed;
} racing;

static void count_run(void *arg)
{
	atomic_fetch_add((_Atomic int *)arg, 1);
}

static void *cancel_randomly(void *arg)
{
	racing *r = arg;
	uint64_t rng = r->seed;
	for (long k = 0; k < r->n / 2; k++) {
		long i = (long)wt_rand_below(&rng, (uint64_t)r->n);
		if (weft_cancel(&r->tasks[i]) == 0)
			atomic_store(&r->cancel_ok[i], 1);
	}
	return NULL;
}

static void cancels_race_workers(void)
{
	weft_rt *rt = wt_create_default();
	long n = WT_SANITIZER ? 50000 : wt.model == WEFT_MODEL_SPAWN ? 20000 : 1000000;
	weft_task *tasks = calloc((size_t)n, sizeof(*tasks));
	_Atomic int *ran = calloc((size_t)n, sizeof(*ran));
	_Atomic int *cancel_ok = calloc((size_t)n, sizeof(*cancel_ok));
	assert_non_null(tasks);
	assert_non_null(ran);
	assert_non_null(cancel_ok);
	for (long i = 0; i < n; i++)
		assert_rc(0, weft_task_init(&tasks[i], count_run, (void *)&ran[i]));
	weft_stats before;
	assert_rc(0, weft_stats_get(rt, &before));
	racing r[CANCELLERS];
	pthread_t th[CANCELLERS];
	/* Half the tasks are posted before the cancellers start, half while
	 * they run. */
	for (long i = 0; i < n / 2; i++)
		assert_rc(0, weft_post_wait(rt, &tasks[i]));
	for (int c = 0; c < CANCELLERS; c++) {
		r[c] = (racing){tasks, ran, cancel_ok, n, wt_seed() + (uint64_t)c * 7919};
		wt_thread_start(&th[c], cancel_randomly, &r[c]);
	}
	for (long i = n / 2; i < n; i++)
		assert_rc(0, weft_post_wait(rt, &tasks[i]));
	for (int c = 0; c < CANCELLERS; c++)
		wt_thread_join(th[c]);
	assert_rc(0, weft_wait_all(rt));
	long done = 0, cancelled = 0;
	for (long i = 0; i < n; i++) {
		weft_task_state st = weft_task_state_of(&tasks[i]);
		int runs = atomic_load(&ran[i]);
		if (st == WEFT_TASK_DONE) {
			done++;
			if (runs != 1 || atomic_load(&cancel_ok[i]))
				fail_msg("task %ld done, ran %d time(s), cancel said 0: %d", i,
				         runs, atomic_load(&cancel_ok[i]));
		} else if (st == WEFT_TASK_CANCELLED) {
			cancelled++;
			if (runs != 0 || !atomic_load(&cancel_ok[i]))
				fail_msg("task %ld cancelled, ran %d time(s), cancel said 0: %d", i,
				         runs, atomic_load(&cancel_ok[i]));
		} else {
			fail_msg("task %ld lost (state %s)", i, weft_task_state_name(st));
		}
	}
	weft_stats after;
	assert_rc(0, weft_stats_get(rt, &after));
	assert_int_equal(done + cancelled, n);
	assert_int_equal((uint64_t)cancelled, after.cancelled - before.cancelled);
	assert_int_equal((uint64_t)done, after.run - before.run);
	print_message("[ info     ] %ld ran, %ld cancelled\n", done, cancelled);
	assert_rc(0, weft_rt_destroy(rt));
	free(cancel_ok);
	free(ran);
	free(tasks);
}

WT_CASES(WT_CASE(delayed_in_order), WT_CASE(delayed_cancel_and_destroy), WT_CASE(wavefront_dag),
         WT_CASE(cancel_flows_along_edges), WT_CASE(cancel_queued_running_group),
         WT_CASE(cancels_race_workers));
