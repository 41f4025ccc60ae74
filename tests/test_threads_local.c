/* The threads model's own posts (src/model/threads.c): what a task posts
 * stays on its worker's own stack, where its waits take it back; other
 * workers take it only when it sits there, and a lone post may wake nobody,
 * relying on the watcher. `test_threads_local <case> threads <workers>`,
 * at 1, 2, 4, 8 and 16 workers (16 on a 2-CPU machine is oversubscribed).
 *
 * A lost wake-up (a worker asleep while a task sits on a stack or in the
 * queue and its poster blocks for it) hangs a case here: every wait has a
 * deadline and fails with what is known. The blocking cases leave one
 * worker free (a kernel-thread worker blocked outside weft's waits runs
 * nothing), so they skip at 1 worker. */
#include <errno.h>
#include <inttypes.h>
#include <semaphore.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"

#define PATIENCE_S     (WT_SANITIZER ? 60.0 : 20.0)
#define SEM_PATIENCE_S 20

static weft_rt *create(weft_policy policy)
{
	weft_config cfg;
	wt_config(&cfg);
	cfg.policy = policy;
	return wt_create(&cfg);
}

static void spin_us(double us)
{
	double end = wt_now() + us * 1e-6;
	while (wt_now() < end)
		;
}

static void sleep_us(long us)
{
	struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
	nanosleep(&ts, NULL);
}

/* A raw semaphore wait (the worker blocks outside weft: nothing helps,
 * nothing parks), bounded so that a lost wake-up fails instead of hanging. */
static bool sem_wait_patiently(sem_t *s)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += SEM_PATIENCE_S;
	int rc;
	while ((rc = sem_timedwait(s, &ts)) != 0 && errno == EINTR)
		;
	return rc == 0;
}

/* Waits (from the test thread) until *count reaches target. */
static void await_count(_Atomic long *count, long target, const char *what)
{
	double end = wt_now() + PATIENCE_S;
	while (atomic_load(count) < target && wt_now() < end)
		wt_sleep_ms(1);
	if (atomic_load(count) < target)
		fail_msg("%s: %ld of %ld within %.0f s (%d workers): a task sits unrun", what,
		         atomic_load(count), target, PATIENCE_S, wt.workers);
}

static void await_task(weft_task *t, const char *what)
{
	double end = wt_now() + PATIENCE_S;
	while (weft_task_state_of(t) != WEFT_TASK_DONE && wt_now() < end)
		wt_sleep_ms(1);
	if (weft_task_state_of(t) != WEFT_TASK_DONE)
		fail_msg("%s did not finish within %.0f s (%d workers)", what, PATIENCE_S,
		         wt.workers);
	assert_rc(0, weft_wait(t));
}

/* ------------------------------------------------------------ spawn-join */

/* A task posts an empty child and waits for it, again and again: the child
 * is taken back from the poster's own stack. Counted: almost no wake-ups
 * and steals per spawn-join, at every worker count (a poster descheduled
 * between its post and its wait may have its child taken: allowed, rarely). */
typedef struct chain {
	long n, ran;
} chain;

static void chain_child(void *arg)
{
	((chain *)arg)->ran++; /* ordered by the parent's wait */
}

static void chain_root(void *arg)
{
	chain *c = arg;
	weft_rt *rt = weft_rt_current();
	weft_task t;
	for (long i = 0; i < c->n; i++) {
		WT_CHECK_RC(0, weft_task_init(&t, chain_child, c));
		WT_CHECK_RC(0, weft_post(rt, &t));
		WT_CHECK_RC(0, weft_wait(&t));
	}
}

static void spawn_join_counts(void)
{
	weft_rt *rt = create(WEFT_POLICY_FIFO);
	chain c = {.n = WT_SANITIZER ? 20000 : 200000};
	weft_task root;
	assert_rc(0, weft_task_init(&root, chain_root, &c));
	double t0 = wt_now();
	assert_rc(0, weft_post(rt, &root));
	await_task(&root, "the spawn-join chain");
	double t1 = wt_now();
	wt_check_async();
	assert_int_equal(c.ran, c.n);
	assert_rc(0, weft_wait_all(rt)); /* the statistics are exact once quiet */
	weft_stats s;
	assert_rc(0, weft_stats_get(rt, &s));
	print_message("[ info     ] %ld spawn-joins, %.0f ns each: %.5f wake-ups, %.5f steals, "
	              "%.5f sleeps per spawn-join\n",
	              c.n, (t1 - t0) * 1e9 / (double)c.n, (double)s.wakeups / (double)c.n,
	              (double)s.steals / (double)c.n, (double)s.sleeps / (double)c.n);
	assert_int_equal(s.posted, (uint64_t)c.n + 1);
	assert_int_equal(s.run, (uint64_t)c.n + 1);
	if (!WT_SANITIZER)
		assert_true(s.wakeups + s.steals <= (uint64_t)c.n / 20);
	assert_rc(0, weft_rt_destroy(rt));
}

/* ------------------------------------------------------------ lone children */

/* Parents post one child (or a few) and then wait for them in every way a
 * task can: weft_wait (helps: takes it back), a raw semaphore the child
 * posts (blocks: another worker must take it), computing first, and
 * weft_wait_until (parks without helping). workers - 1 parents, so one
 * worker is free whatever the parents do. */
enum { KIDS_MAX = 4 };

typedef struct kid {
	weft_task task;
	sem_t sem;
	double spin;
} kid;

static _Atomic long kids_ran, rounds_done;

static void kid_fn(void *arg)
{
	kid *k = arg;
	if (k->spin > 0)
		spin_us(k->spin);
	atomic_fetch_add(&kids_ran, 1);
	sem_post(&k->sem);
}

typedef struct parent {
	weft_task task;
	uint64_t rng;
	int rounds;
} parent;

static void parent_fn(void *arg)
{
	parent *p = arg;
	weft_rt *rt = weft_rt_current();
	for (int r = 0; r < p->rounds; r++) {
		int mode = (int)wt_rand_below(&p->rng, 5);
		int n = mode == 3 ? 2 + (int)wt_rand_below(&p->rng, KIDS_MAX - 1) : 1;
		kid kids[KIDS_MAX];
		for (int i = 0; i < n; i++) {
			kids[i].spin = wt_rand_below(&p->rng, 4) == 0
			                       ? (double)wt_rand_below(&p->rng, 20)
			                       : 0;
			sem_init(&kids[i].sem, 0, 0);
			WT_CHECK_RC(0, weft_task_init(&kids[i].task, kid_fn, &kids[i]));
			WT_CHECK_RC(0, weft_post(rt, &kids[i].task));
		}
		switch (mode) {
		case 0: /* help */
			break;
		case 1: /* block: one lone child */
		case 3: /* block: a few */
			for (int i = 0; i < n; i++)
				WT_CHECK(sem_wait_patiently(&kids[i].sem));
			break;
		case 2: /* compute first */
			spin_us((double)wt_rand_below(&p->rng, 60));
			break;
		case 4: /* park without helping */
			WT_CHECK_RC(0, weft_wait_until(&kids[0].task,
			                               weft_clock_ns() +
			                                       SEM_PATIENCE_S * 1000000000LL));
			break;
		}
		for (int i = n - 1; i >= 0; i--)
			WT_CHECK_RC(0, weft_wait(&kids[i].task));
		for (int i = 0; i < n; i++)
			sem_destroy(&kids[i].sem);
		if (wt_rand_below(&p->rng, 16) == 0)
			sleep_us((long)wt_rand_below(&p->rng, 2000)); /* the others may sleep */
		atomic_fetch_add(&rounds_done, 1);
	}
}

static void lone_child_blocked(void)
{
	if (wt.workers < 2)
		WT_SKIP("a task blocked outside weft holds the only worker");
	weft_rt *rt = create(WEFT_POLICY_PRIORITY);
	int nparents = wt_workers(rt) - 1;
	int rounds = WT_SANITIZER ? 150 : 1500;
	uint64_t rng = wt_seed();
	parent *ps = calloc((size_t)nparents, sizeof(*ps));
	assert_non_null(ps);
	atomic_store(&kids_ran, 0);
	atomic_store(&rounds_done, 0);
	for (int i = 0; i < nparents; i++) {
		ps[i].rng = wt_rand(&rng);
		ps[i].rounds = rounds;
		assert_rc(0, weft_task_init(&ps[i].task, parent_fn, &ps[i]));
		assert_rc(0, weft_post(rt, &ps[i].task));
	}
	await_count(&rounds_done, (long)nparents * rounds, "rounds of the parents");
	for (int i = 0; i < nparents; i++)
		await_task(&ps[i].task, "a parent");
	assert_rc(0, weft_wait_all(rt));
	wt_check_async();
	weft_stats s;
	assert_rc(0, weft_stats_get(rt, &s));
	assert_int_equal(s.posted, s.run);
	assert_int_equal(s.posted, (uint64_t)nparents + (uint64_t)atomic_load(&kids_ran));
	print_message("[ info     ] %d parents x %d rounds: %ld children, %" PRIu64
	              " steals, %" PRIu64 " wake-ups\n",
	              nparents, rounds, atomic_load(&kids_ran), s.steals, s.wakeups);
	assert_rc(0, weft_rt_destroy(rt));
	free(ps);
}

/* ------------------------------------------------------------ from idle */

/* The test thread lets every worker go to sleep (the watcher gives up its
 * watch once nobody is awake), then posts a root that posts a lone child
 * and blocks for it: raw, holding a weft_mutex (its wait parks without
 * helping), or in weft_wait. The child must be taken or the root taken
 * back, however the sleeps and the post interleave. */
typedef struct idle_root {
	weft_task task;
	int mode;
	weft_mutex *mu;
} idle_root;

static void idle_root_fn(void *arg)
{
	idle_root *r = arg;
	weft_rt *rt = weft_rt_current();
	kid k = {.spin = 0};
	sem_init(&k.sem, 0, 0);
	WT_CHECK_RC(0, weft_task_init(&k.task, kid_fn, &k));
	if (r->mode == 1)
		WT_CHECK_RC(0, weft_mutex_lock(r->mu));
	WT_CHECK_RC(0, weft_post(rt, &k.task));
	if (r->mode == 0)
		WT_CHECK(sem_wait_patiently(&k.sem));
	WT_CHECK_RC(0, weft_wait(&k.task));
	if (r->mode == 1)
		WT_CHECK_RC(0, weft_mutex_unlock(r->mu));
	sem_destroy(&k.sem);
}

static void idle_then_lone(void)
{
	if (wt.workers < 2)
		WT_SKIP("a task blocked outside weft holds the only worker");
	weft_rt *rt = create(WEFT_POLICY_PRIORITY);
	uint64_t rng = wt_seed();
	weft_mutex mu;
	assert_rc(0, weft_mutex_init(&mu));
	int rounds = WT_SANITIZER ? 150 : 600;
	double worst = 0;
	for (int i = 0; i < rounds; i++) {
		sleep_us((long)wt_rand_below(&rng, 3000));
		idle_root r = {.mode = (int)wt_rand_below(&rng, 3), .mu = &mu};
		assert_rc(0, weft_task_init(&r.task, idle_root_fn, &r));
		double t0 = wt_now();
		assert_rc(0, weft_post(rt, &r.task));
		await_task(&r.task, "a root blocked on its lone child");
		double t = wt_now() - t0;
		worst = t > worst ? t : worst;
	}
	wt_check_async();
	print_message("[ info     ] %d rounds, the slowest %.0f us\n", rounds, worst * 1e6);
	assert_rc(0, weft_rt_destroy(rt));
}

/* A root computes for longer than the watcher stays on duty without own
 * posts (the watch goes off duty, a worker being awake all along), then
 * posts a lone child and blocks for it. */
static void quiet_root_fn(void *arg)
{
	(void)arg;
	weft_rt *rt = weft_rt_current();
	spin_us(WT_SANITIZER ? 40000 : 30000);
	kid k = {.spin = 0};
	sem_init(&k.sem, 0, 0);
	WT_CHECK_RC(0, weft_task_init(&k.task, kid_fn, &k));
	WT_CHECK_RC(0, weft_post(rt, &k.task));
	WT_CHECK(sem_wait_patiently(&k.sem));
	WT_CHECK_RC(0, weft_wait(&k.task));
	sem_destroy(&k.sem);
}

static void quiet_then_lone(void)
{
	if (wt.workers < 2)
		WT_SKIP("a task blocked outside weft holds the only worker");
	weft_rt *rt = create(WEFT_POLICY_FIFO);
	for (int i = 0; i < 8; i++) {
		weft_task root;
		assert_rc(0, weft_task_init(&root, quiet_root_fn, NULL));
		assert_rc(0, weft_post(rt, &root));
		await_task(&root, "a root blocked on its lone child after a quiet spell");
	}
	wt_check_async();
	assert_rc(0, weft_rt_destroy(rt));
}

/* ------------------------------------------------------------ random trees */

/* Outside threads post roots of random trees; each node posts up to four
 * children and waits for them as a group, one by one in random order, or
 * not at all (they go to the shared queue when it returns), sometimes
 * computing first; the posters pause now and then so workers sleep and
 * wake all along. Every node must run once, weft_wait_all must return. */
enum { TREE_POSTERS = 3, TREE_DEPTH = 4, TREE_KIDS = 4 };

typedef struct node {
	weft_task task;
	int depth;
	uint64_t seed;
} node;

static node *pool;
static long pool_cap;
static _Atomic long pool_next, nodes_posted, nodes_ran;
static _Atomic uint32_t *node_hits;

static node *node_new(int depth, uint64_t seed)
{
	long i = atomic_fetch_add(&pool_next, 1);
	if (i >= pool_cap)
		return NULL;
	node *n = &pool[i];
	n->depth = depth;
	n->seed = seed;
	return n;
}

static void node_fn(void *arg);

static void node_post(weft_rt *rt, weft_group *g, node *n)
{
	WT_CHECK_RC(0, weft_task_init(&n->task, node_fn, n));
	atomic_fetch_add(&nodes_posted, 1);
	WT_CHECK_RC(0, g ? weft_post_in(rt, g, &n->task) : weft_post(rt, &n->task));
}

static void node_fn(void *arg)
{
	node *n = arg;
	atomic_fetch_add(&node_hits[n - pool], 1);
	atomic_fetch_add(&nodes_ran, 1);
	uint64_t rng = n->seed;
	if (n->depth >= TREE_DEPTH) {
		if (wt_rand_below(&rng, 8) == 0)
			spin_us((double)wt_rand_below(&rng, 20));
		return;
	}
	weft_rt *rt = weft_rt_current();
	int nk = (int)wt_rand_below(&rng, TREE_KIDS + 1);
	int mode = (int)wt_rand_below(&rng, 3); /* group, one by one, none */
	weft_group g;
	weft_group_init(&g);
	node *kids[TREE_KIDS];
	int made = 0;
	for (int i = 0; i < nk; i++) {
		node *k = node_new(n->depth + 1, wt_rand(&rng));
		if (!k)
			break;
		kids[made++] = k;
		node_post(rt, mode == 0 ? &g : NULL, k);
	}
	if (wt_rand_below(&rng, 4) == 0)
		spin_us((double)wt_rand_below(&rng, 10));
	if (mode == 0) {
		WT_CHECK_RC(0, weft_group_wait(&g));
	} else if (mode == 1) {
		for (int i = 0; i < made; i++) {
			int j = i + (int)wt_rand_below(&rng, (uint64_t)(made - i));
			node *t = kids[j];
			kids[j] = kids[i];
			kids[i] = t;
			WT_CHECK_RC(0, weft_wait(&kids[i]->task));
		}
	}
}

typedef struct tree_poster {
	weft_rt *rt;
	uint64_t rng;
	int roots;
} tree_poster;

static void *tree_poster_thread(void *arg)
{
	tree_poster *p = arg;
	for (int i = 0; i < p->roots; i++) {
		node *n = node_new(0, wt_rand(&p->rng));
		if (!n)
			break;
		node_post(p->rt, NULL, n);
		if (wt_rand_below(&p->rng, 64) == 0)
			sleep_us((long)wt_rand_below(&p->rng, 1500));
	}
	return NULL;
}

static void random_trees(weft_policy policy)
{
	int roots = WT_SANITIZER ? 300 : 3000;
	pool_cap = (long)TREE_POSTERS * roots * 40;
	pool = calloc((size_t)pool_cap, sizeof(*pool));
	node_hits = calloc((size_t)pool_cap, sizeof(*node_hits));
	assert_non_null(pool);
	assert_non_null(node_hits);
	atomic_store(&pool_next, 0);
	atomic_store(&nodes_posted, 0);
	atomic_store(&nodes_ran, 0);
	weft_rt *rt = create(policy);
	uint64_t rng = wt_seed();
	tree_poster p[TREE_POSTERS];
	pthread_t th[TREE_POSTERS];
	for (int i = 0; i < TREE_POSTERS; i++) {
		p[i] = (tree_poster){.rt = rt, .rng = wt_rand(&rng), .roots = roots};
		wt_thread_start(&th[i], tree_poster_thread, &p[i]);
	}
	for (int i = 0; i < TREE_POSTERS; i++)
		wt_thread_join(th[i]);
	/* Posts only come from running nodes now: once the counts meet,
	 * nothing is left to post anything. */
	double end = wt_now() + PATIENCE_S;
	while (atomic_load(&nodes_ran) < atomic_load(&nodes_posted) && wt_now() < end)
		wt_sleep_ms(1);
	if (atomic_load(&nodes_ran) < atomic_load(&nodes_posted))
		fail_msg("%ld of %ld nodes ran within %.0f s (%d workers): a task sits unrun",
		         atomic_load(&nodes_ran), atomic_load(&nodes_posted), PATIENCE_S,
		         wt.workers);
	assert_rc(0, weft_wait_all(rt));
	wt_check_async();
	long used = atomic_load(&pool_next) < pool_cap ? atomic_load(&pool_next) : pool_cap;
	for (long i = 0; i < used; i++)
		if (atomic_load(&node_hits[i]) != 1)
			fail_msg("node %ld ran %u times", i, atomic_load(&node_hits[i]));
	weft_stats s;
	assert_rc(0, weft_stats_get(rt, &s));
	assert_int_equal(s.posted, (uint64_t)atomic_load(&nodes_posted));
	assert_int_equal(s.run, (uint64_t)atomic_load(&nodes_posted));
	print_message("[ info     ] %s: %ld nodes, %" PRIu64 " steals, %" PRIu64
	              " wake-ups, %" PRIu64 " sleeps\n",
	              weft_policy_name(policy), atomic_load(&nodes_posted), s.steals, s.wakeups,
	              s.sleeps);
	assert_rc(0, weft_rt_destroy(rt));
	free(pool);
	free((void *)node_hits);
	pool = NULL;
}

static void random_trees_fifo(void)
{
	random_trees(WEFT_POLICY_FIFO);
}

static void random_trees_priority(void)
{
	random_trees(WEFT_POLICY_PRIORITY);
}

/* ------------------------------------------------------------ order */

/* A task posts more tasks than its own stack holds and returns without
 * waiting: they reach the policy's queue, in post order. With one worker
 * nothing runs before the poster ends, so the run order is the policy's:
 * post order under fifo, priority then post order under priority. */
enum { ORDER_N = 3000 };

static weft_task order_tasks[ORDER_N];
static int order_ran[ORDER_N];
static _Atomic int order_next;

static void order_fn(void *arg)
{
	order_ran[atomic_fetch_add(&order_next, 1)] = (int)(uintptr_t)arg;
}

static void order_poster(void *arg)
{
	(void)arg;
	weft_rt *rt = weft_rt_current();
	for (int i = 0; i < ORDER_N; i++)
		WT_CHECK_RC(0, weft_post(rt, &order_tasks[i]));
}

static void order_run(weft_policy policy)
{
	uint64_t rng = wt_seed();
	for (int i = 0; i < ORDER_N; i++) {
		assert_rc(0, weft_task_init(&order_tasks[i], order_fn, (void *)(uintptr_t)i));
		if (policy == WEFT_POLICY_PRIORITY)
			assert_rc(0, weft_task_set_priority(&order_tasks[i],
			                                    (int64_t)wt_rand_below(&rng, 100)));
	}
	atomic_store(&order_next, 0);
	weft_rt *rt = create(policy);
	weft_task poster;
	assert_rc(0, weft_task_init(&poster, order_poster, NULL));
	assert_rc(0, weft_post(rt, &poster));
	await_task(&poster, "the poster");
	assert_rc(0, weft_wait_all(rt));
	wt_check_async();
	assert_int_equal(atomic_load(&order_next), ORDER_N);
	static bool seen[ORDER_N];
	memset(seen, 0, sizeof(seen));
	for (int i = 0; i < ORDER_N; i++) {
		assert_false(seen[order_ran[i]]);
		seen[order_ran[i]] = true;
	}
	if (wt_workers(rt) == 1) {
		for (int i = 1; i < ORDER_N; i++) {
			int a = order_ran[i - 1], b = order_ran[i];
			int64_t pa = weft_task_priority(&order_tasks[a]);
			int64_t pb = weft_task_priority(&order_tasks[b]);
			if (pa > pb || (pa == pb && a > b))
				fail_msg("%s: task %d (priority %lld) ran before task %d (priority "
				         "%lld)",
				         weft_policy_name(policy), a, (long long)pa, b,
				         (long long)pb);
		}
	}
	assert_rc(0, weft_rt_destroy(rt));
}

static void order_after_task(void)
{
	order_run(WEFT_POLICY_FIFO);
	order_run(WEFT_POLICY_PRIORITY);
}

WT_CASES(WT_CASE(spawn_join_counts), WT_CASE(lone_child_blocked), WT_CASE(idle_then_lone),
         WT_CASE(quiet_then_lone), WT_CASE(random_trees_fifo), WT_CASE(random_trees_priority),
         WT_CASE(order_after_task));
