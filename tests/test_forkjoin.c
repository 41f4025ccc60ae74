/* Fork-join from inside tasks, under every model and worker count (MATRIX):
 * `test_forkjoin <case> <model> <workers>`. A task posts children and
 * waits for them with weft_wait or weft_group_wait, as recursive
 * divide-and-conquer code does; task.h allows both inside a task.
 *
 * Under a fiber model the waiting task parks and its worker runs the
 * children. Under a kernel-thread model a waiting task blocks its worker:
 * once every worker holds a waiter, nobody is left to run the children,
 * unless weft runs queued work while a task waits (or adds a worker). So
 * these cases hang on `threads` and `spawn` at low worker counts until weft
 * does that; whatever the model, a tree that does not finish within
 * FJ_PATIENCE_S fails with the counts of started and finished tasks (and
 * ctest's short TIMEOUT catches a hang that even that misses). */
#include <stdlib.h>

#include "harness.h"

/* Inside the ctest TIMEOUT (30 s; 60 under ASan, 90 under TSan), far above
 * the time the trees take (milliseconds in release; under TSan a fib tree
 * has taken 8 s on the shared 2-vCPU machine), and short in release: while
 * weft hangs here, every hung entry costs it. */
#define FJ_PATIENCE_S (WT_SANITIZER ? 25.0 : 5.0)

static _Atomic long started, finished;

/* Waits for t[0..n) (posted from the test thread) with one deadline: a
 * hang fails with what is known instead of waiting for ctest to kill the
 * process. What the hung tasks use must outlive the failure (static). */
static void wait_or_fail(weft_task *const *t, int n, const char *what, long total)
{
	double end = wt_now() + FJ_PATIENCE_S;
	for (int i = 0; i < n; i++) {
		while (weft_task_state_of(t[i]) != WEFT_TASK_DONE && wt_now() < end)
			wt_sleep_ms(1);
		if (weft_task_state_of(t[i]) != WEFT_TASK_DONE)
			fail_msg("%s did not finish within %.0f s (%s, %d worker(s) asked): %ld "
			         "of %ld tasks started, %ld finished; do the waiting tasks hold "
			         "every worker?",
			         what, FJ_PATIENCE_S, weft_model_name(wt.model), wt.workers,
			         atomic_load(&started), total, atomic_load(&finished));
		assert_rc(0, weft_wait(t[i])); /* done: returns at once */
	}
}

/* ------------------------------------------------------------ one level */

/* (a) Four parents, posted at once from the test thread, each post a child
 * and weft_wait for it. The child sleeps a little (weft_sleep_ns) so that
 * its parent really waits. */
enum { PARENTS = 4 };

typedef struct family {
	weft_task parent, child;
	_Atomic int child_ran;
	_Atomic int parent_saw; /* child_ran as the parent saw it after the wait */
} family;

static void fj_child(void *arg)
{
	family *f = arg;
	atomic_fetch_add(&started, 1);
	WT_CHECK_RC(0, weft_sleep_ns(1000000));
	atomic_store(&f->child_ran, 1);
	atomic_fetch_add(&finished, 1);
}

static void fj_parent(void *arg)
{
	family *f = arg;
	atomic_fetch_add(&started, 1);
	WT_CHECK_RC(0, weft_task_init(&f->child, fj_child, f));
	WT_CHECK_RC(0, weft_post(weft_rt_current(), &f->child));
	WT_CHECK_RC(0, weft_wait(&f->child));
	atomic_store(&f->parent_saw, atomic_load(&f->child_ran));
	atomic_fetch_add(&finished, 1);
}

static family fam[PARENTS];

static void parents_wait(void)
{
	weft_rt *rt = wt_create_default();
	weft_task *parents[PARENTS];
	for (int i = 0; i < PARENTS; i++) {
		assert_rc(0, weft_task_init(&fam[i].parent, fj_parent, &fam[i]));
		parents[i] = &fam[i].parent;
	}
	for (int i = 0; i < PARENTS; i++)
		assert_rc(0, weft_post(rt, &fam[i].parent));
	wait_or_fail(parents, PARENTS, "four parents waiting for their children", 2 * PARENTS);
	for (int i = 0; i < PARENTS; i++)
		if (atomic_load(&fam[i].parent_saw) != 1)
			fail_msg("parent %d's weft_wait returned before its child ran", i);
	assert_rc(0, weft_rt_destroy(rt));
}

/* One parent waits for a child task, then for a group, then is refused
 * weft_wait_all on its own runtime (it would wait for itself). */
static void sleepy_child(void *arg)
{
	atomic_fetch_add(&started, 1);
	WT_CHECK_RC(0, weft_sleep_ns(1000000));
	*(int *)arg = 1;
	atomic_fetch_add(&finished, 1);
}

static void inside_parent(void *arg)
{
	(void)arg;
	atomic_fetch_add(&started, 1);
	int done = 0, gdone = 0;
	weft_task c, g1;
	weft_group g;
	WT_CHECK_RC(0, weft_task_init(&c, sleepy_child, &done));
	WT_CHECK_RC(0, weft_post(weft_rt_current(), &c));
	WT_CHECK_RC(0, weft_wait(&c));
	WT_CHECK(done == 1);
	WT_CHECK_RC(0, weft_group_init(&g));
	WT_CHECK_RC(0, weft_task_init(&g1, sleepy_child, &gdone));
	WT_CHECK_RC(0, weft_post_in(weft_rt_current(), &g, &g1));
	WT_CHECK_RC(0, weft_group_wait(&g));
	WT_CHECK(gdone == 1);
	WT_CHECK_RC(WEFT_EDEADLK, weft_wait_all(weft_rt_current()));
	atomic_fetch_add(&finished, 1);
}

static weft_task inside_task;

static void wait_inside(void)
{
	weft_rt *rt = wt_create_default();
	weft_task *t = &inside_task;
	assert_rc(0, weft_task_init(t, inside_parent, NULL));
	assert_rc(0, weft_post(rt, t));
	wait_or_fail(&t, 1, "a task waiting for its child, then its group", 3);
	assert_rc(0, weft_rt_destroy(rt));
}

/* ------------------------------------------------------------ fib tree */

/* fib(n) as a spawn tree: every call with n >= 2 posts two children,
 * fib(n-1) and fib(n-2), waits for both and adds their results. fib(16) =
 * 987, from 2 fib(17) - 1 = 3193 calls. Nodes live on their parent's stack
 * (caller-owned tasks, nothing allocated). */
enum { FIB_N = 16, FIB_RESULT = 987, FIB_CALLS = 3193 };

typedef enum join_kind { JOIN_GROUP, JOIN_WAIT } join_kind;

typedef struct fib_node {
	weft_task t;
	int n;
	long result;
} fib_node;

static join_kind fib_join;
static bool fib_check_index;
static int fib_workers; /* the runtime's real count, set before the tree runs */
static _Atomic long fib_bad_index;
static _Atomic int fib_first_bad = -2;

static void check_index(void)
{
	int i = weft_worker_index();
	if (i < 0 || i >= fib_workers) {
		atomic_fetch_add(&fib_bad_index, 1);
		int none = -2;
		atomic_compare_exchange_strong(&fib_first_bad, &none, i);
	}
}

static void fib_fn(void *arg)
{
	fib_node *me = arg;
	atomic_fetch_add(&started, 1);
	if (fib_check_index)
		check_index();
	if (me->n < 2) {
		me->result = me->n;
		atomic_fetch_add(&finished, 1);
		return;
	}
	weft_rt *rt = weft_rt_current();
	fib_node kids[2] = {{.n = me->n - 1}, {.n = me->n - 2}};
	weft_group g;
	WT_CHECK_RC(0, weft_group_init(&g));
	for (int k = 0; k < 2; k++) {
		WT_CHECK_RC(0, weft_task_init(&kids[k].t, fib_fn, &kids[k]));
		if (fib_join == JOIN_GROUP)
			WT_CHECK_RC(0, weft_post_in(rt, &g, &kids[k].t));
		else
			WT_CHECK_RC(0, weft_post(rt, &kids[k].t));
	}
	if (fib_join == JOIN_GROUP) {
		WT_CHECK_RC(0, weft_group_wait(&g));
	} else {
		for (int k = 0; k < 2; k++)
			WT_CHECK_RC(0, weft_wait(&kids[k].t));
	}
	if (fib_check_index) /* still a worker of this runtime after the wait */
		check_index();
	me->result = kids[0].result + kids[1].result;
	atomic_fetch_add(&finished, 1);
}

static fib_node root;

static void run_fib(join_kind join, bool check)
{
	weft_rt *rt = wt_create_default();
	fib_join = join;
	fib_check_index = check;
	fib_workers = wt_workers(rt);
	root = (fib_node){.n = FIB_N, .result = -1};
	assert_rc(0, weft_task_init(&root.t, fib_fn, &root));
	assert_rc(0, weft_post(rt, &root.t));
	weft_task *t = &root.t;
	wait_or_fail(&t, 1,
	             join == JOIN_GROUP ? "the fib(16) tree (weft_group_wait)"
	                                : "the fib(16) tree (weft_wait)",
	             FIB_CALLS);
	assert_int_equal(root.result, FIB_RESULT);
	assert_int_equal(atomic_load(&started), FIB_CALLS);
	assert_int_equal(atomic_load(&finished), FIB_CALLS);
	if (atomic_load(&fib_bad_index))
		fail_msg("%ld time(s) weft_worker_index() was outside [0, %d) in a tree task "
		         "(first: %d)",
		         atomic_load(&fib_bad_index), fib_workers, atomic_load(&fib_first_bad));
	/* The counts are exact once the runtime is quiet (stats.h): a worker
	 * may count a task after its waiter already returned. */
	assert_rc(0, weft_wait_all(rt));
	weft_stats s;
	assert_rc(0, weft_stats_get(rt, &s));
	assert_int_equal(s.run, FIB_CALLS);
	assert_rc(0, weft_rt_destroy(rt));
}

/* (b) Children posted into a group, weft_group_wait. */
static void fib_group(void)
{
	run_fib(JOIN_GROUP, false);
}

/* (c) Children posted alone, weft_wait on each. */
static void fib_wait(void)
{
	run_fib(JOIN_WAIT, false);
}

/* (d) As (b), every task checking weft_worker_index() before and after
 * its wait. */
static void fib_worker_index(void)
{
	run_fib(JOIN_GROUP, true);
}

/* ------------------------------------------------------------ deep */

/* (e) A chain: each task posts the next and waits for it, deeper than a
 * worker's stack can nest waits (a few hundred bytes a level in release,
 * more under the sanitizers, against 8 MiB). A kernel-thread worker that
 * runs the child inside its wait runs out of stack long before the end;
 * it must go on from a fresh stack, not sleep with the child queued and
 * nobody to take it (the hang of a grain-1 parallel loop). Every task
 * checks weft_worker_index() as it starts. */
#if defined(__SANITIZE_THREAD__)
#define CHAIN_DEPTH 2000 /* TSan: time and memory grow with the depth of the calls */
#else
#define CHAIN_DEPTH (WT_SANITIZER ? 40000 : 100000)
#endif

static weft_task *chain;

static void chain_fn(void *arg)
{
	long i = (long)(intptr_t)arg;
	atomic_fetch_add(&started, 1);
	check_index();
	if (i + 1 < CHAIN_DEPTH) {
		WT_CHECK_RC(0, weft_task_init(&chain[i + 1], chain_fn, (void *)(intptr_t)(i + 1)));
		WT_CHECK_RC(0, weft_post(weft_rt_current(), &chain[i + 1]));
		WT_CHECK_RC(0, weft_wait(&chain[i + 1]));
	}
	atomic_fetch_add(&finished, 1);
}

static void deep_chain(void)
{
	chain = calloc(CHAIN_DEPTH, sizeof(*chain)); /* left to the process if it hangs */
	assert_non_null(chain);
	weft_rt *rt = wt_create_default();
	fib_workers = wt_workers(rt);
	assert_rc(0, weft_task_init(&chain[0], chain_fn, (void *)(intptr_t)0));
	assert_rc(0, weft_post(rt, &chain[0]));
	weft_task *t = &chain[0];
	wait_or_fail(&t, 1, "a chain of tasks each waiting for the next", CHAIN_DEPTH);
	assert_int_equal(atomic_load(&finished), CHAIN_DEPTH);
	assert_int_equal(atomic_load(&fib_bad_index), 0);
	assert_rc(0, weft_rt_destroy(rt));
	free(chain);
}

WT_CASES(WT_CASE(parents_wait), WT_CASE(wait_inside), WT_CASE(fib_group), WT_CASE(fib_wait),
         WT_CASE(fib_worker_index), WT_CASE(deep_chain));
