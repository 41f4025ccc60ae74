/* Behaviour of a runtime, run for every model and worker count (MATRIX):
 * `test_sched <case> <model> <workers>`.
 *
 * Many cases hold every worker busy with gate tasks (harness.h) so that what
 * is queued, and in which order, is known exactly while the test posts; then
 * they let the gates go. Tasks and helper threads report through WT_CHECK,
 * never through cmocka's assertions. */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/testing.h"
#include "harness.h"

/* A task that counts its runs. */
typedef struct ctask {
	weft_task t;
	_Atomic unsigned hits;
	int id;
} ctask;

static void ctask_fn(void *arg)
{
	ctask *c = arg;
	atomic_fetch_add(&c->hits, 1);
}

static void ctask_init(ctask *c, int id)
{
	memset(c, 0, sizeof(*c));
	c->id = id;
	assert_rc(0, weft_task_init(&c->t, ctask_fn, c));
}

static ctask *ctasks_new(int n)
{
	ctask *c = calloc((size_t)n, sizeof(*c));
	assert_non_null(c);
	for (int i = 0; i < n; i++)
		ctask_init(&c[i], i);
	return c;
}

/* Asserts that every one of c[0..n) ran exactly `times` times. */
static void assert_hits(const ctask *c, int n, unsigned times)
{
	for (int i = 0; i < n; i++) {
		unsigned h = atomic_load(&c[i].hits);
		if (h != times)
			fail_msg("task %d ran %u time(s), expected %u", i, h, times);
	}
}

static weft_rt *create_with(weft_policy policy, long capacity)
{
	weft_config cfg;
	wt_config(&cfg);
	cfg.policy = policy;
	cfg.queue_capacity = capacity;
	return wt_create(&cfg);
}

/* ------------------------------------------------------------ order */

/* Tasks record the order in which they start. Every PARENT_EVERY-th task
 * posts a child from inside, with a priority more urgent than any other. */
enum { PARENT_EVERY = 50, PARENT_AT = 7 };
#define CHILD_PRIORITY (-1000000)

static _Atomic int order_pos;
static int *order_seen;
static ctask *order_kids;
static weft_rt *order_rt;
static int order_n; /* ids below are queued tasks, from it on children */

static bool is_parent(int id)
{
	return id % PARENT_EVERY == PARENT_AT;
}

static void order_fn(void *arg)
{
	ctask *c = arg;
	atomic_fetch_add(&c->hits, 1);
	order_seen[atomic_fetch_add(&order_pos, 1)] = c->id;
	if (c->id < order_n && is_parent(c->id))
		WT_CHECK_RC(0, weft_post(order_rt, &order_kids[c->id / PARENT_EVERY].t));
}

static bool order_all_ran(void *arg)
{
	return atomic_load(&order_pos) >= *(int *)arg;
}

static int64_t random_priority(uint64_t *rng)
{
	uint64_t r = wt_rand_below(rng, 100);
	if (r < 40)
		return (int64_t)wt_rand_below(rng, 8); /* few levels: many equals */
	if (r < 60)
		return -1 - (int64_t)wt_rand_below(rng, 4); /* negative */
	if (r < 80)
		return 60 + (int64_t)wt_rand_below(rng, 10); /* around 64 */
	if (r < 90)
		return 70 + (int64_t)wt_rand_below(rng, 1000000);
	if (r < 98)
		return 8 + (int64_t)wt_rand_below(rng, 52);
	return r == 98 ? INT64_MAX : -500;
}

/* Holds every worker, queues n tasks with random priorities, then lets
 * exactly one worker go: it alone runs the queue, so the start order is the
 * order the policy hands tasks out. The other gates are released at the
 * end. Returns the tasks; order_seen has the ids in start order, children
 * numbered n, n+1, ... in the order of their parents. */
static ctask *run_ordered(weft_policy policy, int n, int *nkids)
{
	uint64_t rng = wt_seed();
	weft_rt *rt = create_with(policy, 0);
	int nw = wt_workers(rt);
	wt_gate gate;
	wt_gate_init(&gate);
	weft_task gates[WT_GATE_MAX];
	wt_gate_hold(rt, &gate, gates, nw);

	int kids = 0;
	for (int i = 0; i < n; i++)
		kids += is_parent(i);
	*nkids = kids;
	ctask *c = ctasks_new(n);
	order_kids = ctasks_new(kids);
	order_rt = rt;
	order_n = n;
	for (int k = 0; k < kids; k++) {
		order_kids[k].id = n + k;
		assert_rc(0, weft_task_init(&order_kids[k].t, order_fn, &order_kids[k]));
		assert_rc(0, weft_task_set_priority(&order_kids[k].t, CHILD_PRIORITY));
	}
	order_seen = calloc((size_t)(n + kids), sizeof(int));
	assert_non_null(order_seen);
	atomic_store(&order_pos, 0);
	for (int i = 0; i < n; i++) {
		assert_rc(0, weft_task_init(&c[i].t, order_fn, &c[i]));
		assert_rc(0, weft_task_set_priority(&c[i].t, random_priority(&rng)));
		assert_rc(0, weft_post(rt, &c[i].t));
		assert_int_equal(weft_task_state_of(&c[i].t), WEFT_TASK_QUEUED);
	}
	wt_gate_release(&gate, 1);
	int all = n + kids;
	if (!wt_poll(order_all_ran, &all))
		fail_msg("only %d of %d tasks ran", atomic_load(&order_pos), all);
	/* The other workers were held all along. */
	assert_int_equal(wt_gate_started(&gate), nw);
	wt_gate_release(&gate, nw - 1);
	assert_rc(0, weft_wait_all(rt));
	assert_rc(0, weft_rt_destroy(rt));
	wt_gate_destroy(&gate);
	assert_hits(c, n, 1);
	assert_hits(order_kids, kids, 1);
	free(order_kids);
	order_kids = NULL;
	return c;
}

/* Whether the policy orders tasks posted from inside tasks too. Under mn
 * it orders only the tasks posted from outside; a task's own posts run
 * work-first on its worker (or are stolen), and every 61st pick looks at
 * the outside queue first (src/model/mn.c), so a child runs some time
 * after its parent, no more is promised. */
static bool inside_posts_ordered(void)
{
	return wt.model != WEFT_MODEL_MN;
}

/* Under mn (see above): child id ran after its parent, at position k. */
static void check_child_after_parent(int k, int id, int n)
{
	int parent = (id - n) * PARENT_EVERY + PARENT_AT;
	for (int j = 0; j < k; j++)
		if (order_seen[j] == parent)
			return;
	fail_msg("position %d: child %d ran before its parent %d", k, id - n, parent);
}

static void order_priority(void)
{
	int n = 1000, kids;
	ctask *c = run_ordered(WEFT_POLICY_PRIORITY, n, &kids);
	/* A child, more urgent than everything queued, runs right after its
	 * parent; the others run by (priority, post order). */
	const ctask *prev = NULL;
	for (int k = 0; k < n + kids; k++) {
		int id = order_seen[k];
		if (id >= n && !inside_posts_ordered()) {
			check_child_after_parent(k, id, n);
			continue;
		}
		if (id >= n) {
			int parent = k > 0 ? order_seen[k - 1] : -1;
			if (parent < 0 || parent >= n || !is_parent(parent) ||
			    parent / PARENT_EVERY != id - n)
				fail_msg("position %d: child %d ran after task %d, not right after "
				         "its parent %d",
				         k, id - n, parent, (id - n) * PARENT_EVERY + PARENT_AT);
			continue;
		}
		const ctask *b = &c[id];
		if (prev) {
			int64_t pa = weft_task_priority(&prev->t), pb = weft_task_priority(&b->t);
			if (pa > pb || (pa == pb && prev->id > b->id))
				fail_msg("position %d: task %d (priority %lld) ran before task %d "
				         "(priority %lld)",
				         k, prev->id, (long long)pa, b->id, (long long)pb);
		}
		prev = b;
	}
	free(order_seen);
	free(c);
}

static void order_fifo(void)
{
	int n = 1000, kids;
	ctask *c = run_ordered(WEFT_POLICY_FIFO, n, &kids);
	/* Post order, whatever the priorities: the queued tasks, then the
	 * children, which were posted after all of them (under mn, the queued
	 * tasks in post order, each child after its parent). */
	int next = 0; /* the queued task expected next */
	for (int k = 0; k < n + kids; k++) {
		int id = order_seen[k];
		if (!inside_posts_ordered() && id >= n) {
			check_child_after_parent(k, id, n);
			continue;
		}
		int want = inside_posts_ordered() ? k : next++;
		if (id != want)
			fail_msg("position %d: task %d ran, expected task %d (post order)", k, id,
			         want);
	}
	free(order_seen);
	free(c);
}

/* ------------------------------------------------------------ EBUSY */

static weft_task self_task;
static _Atomic int self_rc = 1;

static void self_post_fn(void *arg)
{
	weft_rt *rt = arg;
	atomic_store(&self_rc, weft_post(rt, &self_task));
	WT_CHECK(weft_task_state_of(&self_task) == WEFT_TASK_RUNNING);
}

typedef struct race {
	weft_rt *rt;
	pthread_barrier_t *bar;
	ctask *tasks;
	int rounds;
	_Atomic int *wins; /* per round */
} race;

static void *race_poster(void *arg)
{
	race *r = arg;
	for (int i = 0; i < r->rounds; i++) {
		pthread_barrier_wait(r->bar);
		int rc = weft_post(r->rt, &r->tasks[i].t);
		if (rc == 0)
			atomic_fetch_add(&r->wins[i], 1);
		else
			WT_CHECK_RC(WEFT_EBUSY, rc);
	}
	return NULL;
}

static void ebusy(void)
{
	weft_rt *rt = create_with(WEFT_POLICY_PRIORITY, 0);
	int nw = wt_workers(rt);
	wt_gate gate;
	wt_gate_init(&gate);
	weft_task gates[WT_GATE_MAX];
	wt_gate_hold(rt, &gate, gates, nw);

	/* Queued. */
	ctask c;
	ctask_init(&c, 0);
	weft_group g;
	assert_rc(0, weft_group_init(&g));
	assert_rc(WEFT_EINVAL, weft_wait(&c.t)); /* never posted */
	assert_rc(0, weft_post(rt, &c.t));
	assert_rc(WEFT_EBUSY, weft_post(rt, &c.t));
	assert_rc(WEFT_EBUSY, weft_post_in(rt, &g, &c.t));
	assert_rc(WEFT_EBUSY, weft_post_wait(rt, &c.t));
	assert_rc(WEFT_EBUSY, weft_task_set_priority(&c.t, 5));
	assert_int_equal(weft_task_priority(&c.t), 0);
	assert_int_equal(weft_group_pending(&g), 0);
	assert_int_equal(weft_task_state_of(&c.t), WEFT_TASK_QUEUED);

	/* Running: the gates. */
	for (int i = 0; i < nw; i++) {
		assert_int_equal(weft_task_state_of(&gates[i]), WEFT_TASK_RUNNING);
		assert_rc(WEFT_EBUSY, weft_post(rt, &gates[i]));
		assert_rc(WEFT_EBUSY, weft_task_set_priority(&gates[i], 1));
	}

	/* Several threads post the same idle task at once: one wins. */
	enum { POSTERS = 4, ROUNDS = 50 };
	ctask *rc_tasks = ctasks_new(ROUNDS);
	_Atomic int wins[ROUNDS];
	for (int i = 0; i < ROUNDS; i++)
		atomic_init(&wins[i], 0);
	pthread_barrier_t bar;
	pthread_barrier_init(&bar, NULL, POSTERS);
	race r = {.rt = rt, .bar = &bar, .tasks = rc_tasks, .rounds = ROUNDS, .wins = wins};
	pthread_t th[POSTERS];
	for (int i = 0; i < POSTERS; i++)
		wt_thread_start(&th[i], race_poster, &r);
	for (int i = 0; i < POSTERS; i++)
		wt_thread_join(th[i]);
	pthread_barrier_destroy(&bar);
	for (int i = 0; i < ROUNDS; i++)
		if (atomic_load(&wins[i]) != 1)
			fail_msg("round %d: %d posts of one task succeeded", i,
			         atomic_load(&wins[i]));

	/* A task that posts itself while it runs. */
	assert_rc(0, weft_task_init(&self_task, self_post_fn, rt));
	assert_rc(0, weft_post(rt, &self_task));

	wt_gate_release(&gate, nw);
	assert_rc(0, weft_wait_all(rt));
	assert_rc(WEFT_EBUSY, atomic_load(&self_rc));
	assert_int_equal(atomic_load(&c.hits), 1);
	assert_hits(rc_tasks, ROUNDS, 1);

	/* Done: it may be posted again, and its priority changed. */
	assert_int_equal(weft_task_state_of(&c.t), WEFT_TASK_DONE);
	assert_rc(0, weft_task_set_priority(&c.t, 5));
	assert_rc(0, weft_post(rt, &c.t));
	assert_rc(0, weft_wait(&c.t));
	assert_int_equal(atomic_load(&c.hits), 2);
	assert_rc(0, weft_rt_destroy(rt));
	wt_gate_destroy(&gate);
	free(rc_tasks);
}

/* ------------------------------------------------------------ capacity */

static void full_queue(void)
{
	uint64_t rng = wt_seed();
	long cap = 1 + (long)wt_rand_below(&rng, 16);
	weft_rt *rt = create_with(WEFT_POLICY_PRIORITY, cap);
	int nw = wt_workers(rt);

	/* A task that has run once before; refused later, it stays DONE. */
	ctask done;
	ctask_init(&done, -1);
	assert_rc(0, weft_post(rt, &done.t));
	assert_rc(0, weft_wait(&done.t));

	wt_gate gate;
	wt_gate_init(&gate);
	weft_task gates[WT_GATE_MAX];
	wt_gate_hold(rt, &gate, gates, nw);

	/* Holding the gates with weft_post_wait may have met a full queue. */
	weft_stats s;
	assert_rc(0, weft_stats_get(rt, &s));
	uint64_t rejected0 = s.rejected;

	int n = (int)cap + 1;
	ctask *c = ctasks_new(n);
	for (int i = 0; i < cap; i++)
		assert_rc(0, weft_post(rt, &c[i].t));
	ctask *rej = &c[cap];
	assert_rc(WEFT_EFULL, weft_post(rt, &rej->t));
	assert_int_equal(weft_task_state_of(&rej->t), WEFT_TASK_IDLE);
	assert_rc(0, weft_stats_get(rt, &s));
	assert_int_equal(s.rejected, rejected0 + 1);
	assert_int_equal(s.queue_capacity, cap);

	assert_rc(WEFT_EFULL, weft_post(rt, &rej->t));
	weft_group g;
	assert_rc(0, weft_group_init(&g));
	assert_rc(WEFT_EFULL, weft_post_in(rt, &g, &rej->t));
	assert_int_equal(weft_group_pending(&g), 0);
	assert_rc(WEFT_EFULL, weft_post(rt, &done.t));
	assert_int_equal(weft_task_state_of(&done.t), WEFT_TASK_DONE);
	assert_int_equal(weft_task_state_of(&rej->t), WEFT_TASK_IDLE);
	assert_rc(WEFT_EINVAL, weft_wait(&rej->t)); /* still never posted */
	assert_rc(0, weft_stats_get(rt, &s));
	assert_int_equal(s.rejected, rejected0 + 4);
	assert_int_equal(s.posted, 1 + (uint64_t)nw + (uint64_t)cap);

	wt_gate_release(&gate, nw);
	assert_rc(0, weft_wait_all(rt));
	assert_hits(c, (int)cap, 1);
	assert_int_equal(atomic_load(&rej->hits), 0);
	assert_int_equal(atomic_load(&done.hits), 1);

	/* Room again: the refused task posts and runs. */
	assert_rc(0, weft_post(rt, &rej->t));
	assert_rc(0, weft_wait(&rej->t));
	assert_int_equal(atomic_load(&rej->hits), 1);
	assert_rc(0, weft_wait_all(rt)); /* the counts are exact once quiet */
	assert_rc(0, weft_stats_get(rt, &s));
	assert_int_equal(s.posted, 2 + (uint64_t)nw + (uint64_t)cap);
	assert_int_equal(s.run, s.posted);
	assert_int_equal(s.rejected, rejected0 + 4);
	assert_rc(0, weft_rt_destroy(rt));
	wt_gate_destroy(&gate);
	free(c);
}

/* Capacity 0: no limit, however many are queued. */
static void unbounded(void)
{
	/* Under spawn each queued task later costs a thread: fewer there. */
	int n = wt.model == WEFT_MODEL_SPAWN ? 5000 : WT_SANITIZER ? 10000 : 50000;
	weft_rt *rt = create_with(WEFT_POLICY_PRIORITY, 0);
	int nw = wt_workers(rt);
	wt_gate gate;
	wt_gate_init(&gate);
	weft_task gates[WT_GATE_MAX];
	wt_gate_hold(rt, &gate, gates, nw);
	ctask *c = ctasks_new(n);
	for (int i = 0; i < n; i++)
		assert_rc(0, weft_post(rt, &c[i].t));
	weft_stats s;
	assert_rc(0, weft_stats_get(rt, &s));
	assert_int_equal(s.rejected, 0);
	assert_int_equal(s.queue_capacity, 0);
	wt_gate_release(&gate, nw);
	assert_rc(0, weft_wait_all(rt));
	assert_hits(c, n, 1);
	assert_rc(0, weft_rt_destroy(rt));
	wt_gate_destroy(&gate);
	free(c);
}

/* ------------------------------------------------------------ post_wait */

typedef struct waiter {
	weft_rt *rt;
	weft_task *t;
	_Atomic int done;
	_Atomic int rc;
} waiter;

static void *post_wait_thread(void *arg)
{
	waiter *w = arg;
	atomic_store(&w->rc, weft_post_wait(w->rt, w->t));
	atomic_store(&w->done, 1);
	return NULL;
}

static void post_wait_blocks(void)
{
	enum { CAP = 4, WAITERS = 3 };
	weft_rt *rt = create_with(WEFT_POLICY_PRIORITY, CAP);
	int nw = wt_workers(rt);
	ctask *c = ctasks_new(CAP + WAITERS + 1);

	/* With room it just posts. */
	assert_rc(0, weft_post_wait(rt, &c[CAP + WAITERS].t));
	assert_rc(0, weft_wait(&c[CAP + WAITERS].t));

	wt_gate gate;
	wt_gate_init(&gate);
	weft_task gates[WT_GATE_MAX];
	wt_gate_hold(rt, &gate, gates, nw);
	for (int i = 0; i < CAP; i++)
		assert_rc(0, weft_post(rt, &c[i].t));
	assert_rc(WEFT_EFULL, weft_post(rt, &c[CAP].t));

	waiter w[WAITERS];
	pthread_t th[WAITERS];
	for (int i = 0; i < WAITERS; i++) {
		w[i] = (waiter){.rt = rt, .t = &c[CAP + i].t};
		wt_thread_start(&th[i], post_wait_thread, &w[i]);
	}
	wt_sleep_ms(100);
	for (int i = 0; i < WAITERS; i++) {
		if (atomic_load(&w[i].done))
			fail_msg("weft_post_wait returned %s while the queue was full",
			         weft_err_name(atomic_load(&w[i].rc)));
		assert_int_equal(weft_task_state_of(&c[CAP + i].t), WEFT_TASK_IDLE);
	}

	/* Room appears as the queued tasks start: every waiter gets in. */
	wt_gate_release(&gate, nw);
	for (int i = 0; i < WAITERS; i++) {
		wt_thread_join(th[i]);
		assert_rc(0, atomic_load(&w[i].rc));
	}
	assert_rc(0, weft_wait_all(rt));
	assert_hits(c, CAP + WAITERS + 1, 1);
	assert_rc(0, weft_rt_destroy(rt));
	wt_gate_destroy(&gate);
	free(c);
}

/* stats.rejected counts posts refused with WEFT_EFULL (stats.h). A
 * weft_post_wait that slept on a full queue and then got in was never
 * refused, however often it looked. */
static void post_wait_rejected(void)
{
	enum { CAP = 2 };
	weft_rt *rt = create_with(WEFT_POLICY_PRIORITY, CAP + WT_GATE_MAX);
	int nw = wt_workers(rt);
	wt_gate gate;
	wt_gate_init(&gate);
	weft_task gates[WT_GATE_MAX];
	wt_gate_hold(rt, &gate, gates, nw);
	ctask *c = ctasks_new(CAP + WT_GATE_MAX + 1);
	int fill = CAP + WT_GATE_MAX;
	for (int i = 0; i < fill; i++)
		assert_rc(0, weft_post(rt, &c[i].t));
	weft_stats s;
	assert_rc(0, weft_stats_get(rt, &s));
	assert_int_equal(s.rejected, 0);

	waiter w = {.rt = rt, .t = &c[fill].t};
	pthread_t th;
	wt_thread_start(&th, post_wait_thread, &w);
	wt_sleep_ms(50);
	wt_gate_release(&gate, nw);
	wt_thread_join(th);
	assert_rc(0, atomic_load(&w.rc));
	assert_rc(0, weft_wait_all(rt));
	assert_hits(c, fill + 1, 1);
	assert_rc(0, weft_stats_get(rt, &s));
	if (s.rejected != 0)
		fail_msg("stats.rejected is %llu, but no post returned WEFT_EFULL "
		         "(weft_post_wait waited for room and succeeded)",
		         (unsigned long long)s.rejected);
	assert_rc(0, weft_rt_destroy(rt));
	wt_gate_destroy(&gate);
	free(c);
}

/* From inside a task, with the queue full, weft_post_wait must not block. */
typedef struct inner {
	weft_rt *rt;
	wt_gate *full; /* released by the test once the queue is full */
	weft_task *extra;
	_Atomic int rc_wait, rc_post, rc_room;
	weft_task *room_task;
} inner;

static inner in;

static void inner_fn(void *arg)
{
	(void)arg;
	wt_gate_fn(in.full); /* counts as started, waits for the permit */
	atomic_store(&in.rc_wait, weft_post_wait(in.rt, in.extra));
	atomic_store(&in.rc_post, weft_post(in.rt, in.extra));
	WT_CHECK(weft_task_state_of(in.extra) == WEFT_TASK_IDLE);
}

static void room_fn(void *arg)
{
	(void)arg;
	atomic_store(&in.rc_room, weft_post_wait(in.rt, in.room_task));
}

static void post_wait_deadlk(void)
{
	enum { CAP = 2 };
	weft_rt *rt = create_with(WEFT_POLICY_PRIORITY, CAP);
	int nw = wt_workers(rt);
	wt_gate gate, full;
	wt_gate_init(&gate);
	wt_gate_init(&full);
	weft_task gates[WT_GATE_MAX];
	ctask *c = ctasks_new(CAP + 2);
	in = (inner){.rt = rt, .full = &full, .extra = &c[CAP].t, .room_task = &c[CAP + 1].t};
	atomic_store(&in.rc_wait, 1);
	atomic_store(&in.rc_room, 1);

	/* The inner task holds one worker, gates the rest. */
	weft_task inner_task;
	assert_rc(0, weft_task_init(&inner_task, inner_fn, NULL));
	assert_rc(0, weft_post(rt, &inner_task));
	wt_gate_wait_started(&full, 1);
	if (nw > 1)
		wt_gate_hold(rt, &gate, gates, nw - 1);
	for (int i = 0; i < CAP; i++)
		assert_rc(0, weft_post(rt, &c[i].t));
	assert_rc(WEFT_EFULL, weft_post(rt, &c[CAP].t));

	wt_gate_release(&full, 1);
	assert_rc(0, weft_wait(&inner_task)); /* the others are still held */
	wt_gate_release(&gate, nw);
	assert_rc(0, weft_wait_all(rt));
	assert_rc(WEFT_EDEADLK, atomic_load(&in.rc_wait));
	/* Every other worker was still held: plain weft_post found it full. */
	assert_rc(WEFT_EFULL, atomic_load(&in.rc_post));
	assert_int_equal(atomic_load(&c[CAP].hits), 0);
	assert_hits(c, CAP, 1);

	/* With room, weft_post_wait from a task posts. */
	weft_task room;
	assert_rc(0, weft_task_init(&room, room_fn, NULL));
	assert_rc(0, weft_post(rt, &room));
	assert_rc(0, weft_wait_all(rt));
	assert_rc(0, atomic_load(&in.rc_room));
	assert_int_equal(atomic_load(&c[CAP + 1].hits), 1);
	assert_rc(0, weft_rt_destroy(rt));
	wt_gate_destroy(&gate);
	wt_gate_destroy(&full);
	free(c);
}

/* ------------------------------------------------------------ destroy */

typedef struct destroyer {
	weft_rt *rt;
	weft_destroy_mode mode;
	size_t discarded;
	_Atomic int rc;
	_Atomic int done;
} destroyer;

static void *destroy_thread(void *arg)
{
	destroyer *d = arg;
	d->discarded = (size_t)-1;
	atomic_store(&d->rc, weft_rt_destroy_ex(d->rt, d->mode, &d->discarded));
	atomic_store(&d->done, 1);
	return NULL;
}

static bool rt_closing(void *arg)
{
	return atomic_load(&((weft_rt *)arg)->closing) != 0;
}

static bool rt_cancelling(void *arg)
{
	return atomic_load(&((weft_rt *)arg)->cancelling) != 0;
}

/* Gate tasks post one child each once released (during destroy). */
typedef struct child_ctx {
	weft_rt *rt;
	ctask *children;
	_Atomic int next;
} child_ctx;

static void gate_post_child(wt_gate *g, void *ctx)
{
	(void)g;
	child_ctx *cc = ctx;
	int i = atomic_fetch_add(&cc->next, 1);
	WT_CHECK(weft_rt_current() == cc->rt);
	WT_CHECK_RC(0, weft_post(cc->rt, &cc->children[i].t));
}

static void *wait_task_thread(void *arg)
{
	waiter *w = arg;
	atomic_store(&w->rc, weft_wait(w->t));
	atomic_store(&w->done, 1);
	return NULL;
}

/* While destroy runs (held open by the gates), every kind of external post
 * fails with WEFT_ESHUTDOWN and changes nothing. */
static void expect_posts_refused(weft_rt *rt)
{
	ctask late[4];
	for (int i = 0; i < 4; i++)
		ctask_init(&late[i], 1000 + i);
	weft_group g;
	assert_rc(0, weft_group_init(&g));
	assert_rc(WEFT_ESHUTDOWN, weft_post(rt, &late[0].t));
	assert_rc(WEFT_ESHUTDOWN, weft_post_in(rt, &g, &late[1].t));
	assert_rc(WEFT_ESHUTDOWN, weft_post_wait(rt, &late[2].t));
	assert_rc(WEFT_ESHUTDOWN, weft_post(rt, &late[0].t)); /* and again */
	assert_int_equal(weft_group_pending(&g), 0);
	for (int i = 0; i < 4; i++)
		assert_int_equal(weft_task_state_of(&late[i].t), WEFT_TASK_IDLE);
	/* A second destroy while the first runs is refused. */
	assert_rc(WEFT_EINVAL, weft_rt_destroy(rt));
}

/* A runtime busy with queued work: every worker held by a gate task (each
 * posts a child when released), then m tasks queued behind them, every
 * other one in group g. */
typedef struct busy {
	int m;
	ctask *c, *children;
	child_ctx cc;
	wt_gate gate;
	weft_task gates[WT_GATE_MAX];
	weft_group g;
} busy;

static void busy_start(busy *b, weft_rt *rt, int m)
{
	int nw = wt_workers(rt);
	b->m = m;
	b->c = ctasks_new(m);
	b->children = ctasks_new(nw);
	b->cc = (child_ctx){.rt = rt, .children = b->children};
	wt_gate_init(&b->gate);
	b->gate.after = gate_post_child;
	b->gate.ctx = &b->cc;
	wt_gate_hold(rt, &b->gate, b->gates, nw);
	assert_rc(0, weft_group_init(&b->g));
	for (int i = 0; i < m; i++) {
		if (i % 2)
			assert_rc(0, weft_post_in(rt, &b->g, &b->c[i].t));
		else
			assert_rc(0, weft_post(rt, &b->c[i].t));
	}
}

static void busy_end(busy *b)
{
	wt_gate_destroy(&b->gate);
	free(b->c);
	free(b->children);
}

static void destroy_drain(void)
{
	int m = 200;
	weft_rt *rt = create_with(WEFT_POLICY_PRIORITY, 0);
	int nw = wt_workers(rt);
	busy bz;
	busy_start(&bz, rt, m);

	destroyer d = {.rt = rt, .mode = WEFT_DESTROY_DRAIN};
	pthread_t th;
	wt_thread_start(&th, destroy_thread, &d);
	if (!wt_poll(rt_closing, rt))
		fail_msg("destroy did not start");
	expect_posts_refused(rt);
	wt_sleep_ms(20);
	assert_int_equal(atomic_load(&d.done), 0); /* still draining */

	wt_gate_release(&bz.gate, nw);
	wt_thread_join(th);
	assert_rc(0, atomic_load(&d.rc));
	assert_int_equal(d.discarded, 0);
	assert_hits(bz.c, m, 1);
	assert_hits(bz.children, nw, 1);
	for (int i = 0; i < m; i++)
		assert_int_equal(weft_task_state_of(&bz.c[i].t), WEFT_TASK_DONE);
	assert_int_equal(weft_group_pending(&bz.g), 0);
	assert_rc(0, weft_group_wait(&bz.g));
	wt_assert_no_live_allocations();
	busy_end(&bz);
}

static void destroy_cancel(void)
{
	int m = 200;
	weft_config cfg;
	wt_config(&cfg);
	cfg.stats = 1; /* destroy prints the final counts */
	weft_rt *rt = wt_create(&cfg);
	int nw = wt_workers(rt);
	busy bz;
	busy_start(&bz, rt, m);
	/* Someone sleeps in weft_wait on a queued task. */
	waiter w = {.t = &bz.c[0].t};
	pthread_t wth;
	wt_thread_start(&wth, wait_task_thread, &w);
	wt_sleep_ms(10);

	wt_capture_begin();
	destroyer d = {.rt = rt, .mode = WEFT_DESTROY_CANCEL};
	pthread_t th;
	wt_thread_start(&th, destroy_thread, &d);
	bool cancelling = wt_poll(rt_cancelling, rt);
	if (cancelling)
		expect_posts_refused(rt);
	wt_gate_release(&bz.gate, nw);
	wt_thread_join(th);
	const char *err = wt_capture_end();
	assert_true(cancelling);
	wt_thread_join(wth);

	assert_rc(0, atomic_load(&d.rc));
	/* Every queued task, and every child the bz.gates posted, was discarded;
	 * the bz.gates themselves ran. */
	assert_int_equal(d.discarded, (size_t)m + (size_t)nw);
	assert_hits(bz.c, m, 0);
	assert_hits(bz.children, nw, 0);
	for (int i = 0; i < m; i++) {
		assert_int_equal(weft_task_state_of(&bz.c[i].t), WEFT_TASK_CANCELLED);
		assert_rc(WEFT_ECANCELED, weft_wait(&bz.c[i].t));
	}
	for (int i = 0; i < nw; i++) {
		assert_int_equal(weft_task_state_of(&bz.children[i].t), WEFT_TASK_CANCELLED);
		assert_int_equal(weft_task_state_of(&bz.gates[i]), WEFT_TASK_DONE);
	}
	assert_rc(WEFT_ECANCELED, atomic_load(&w.rc));
	assert_int_equal(weft_group_pending(&bz.g), 0);
	assert_rc(0, weft_group_wait(&bz.g));

	/* The statistics printed at destroy: run + cancelled == posted. */
	unsigned long long posted, run, rejected, cancelled;
	const char *line = strstr(err, "weft: posted");
	assert_non_null(line);
	assert_int_equal(sscanf(line,
	                        "weft: posted %llu, run %llu, rejected (full) %llu, "
	                        "cancelled %llu",
	                        &posted, &run, &rejected, &cancelled),
	                 4);
	assert_int_equal(run, (unsigned long long)nw);
	assert_int_equal(cancelled, d.discarded);
	assert_int_equal(posted, run + cancelled);

	/* A cancelled task belongs to its owner again: it can be reused. */
	weft_rt *rt2 = create_with(WEFT_POLICY_PRIORITY, 0);
	assert_rc(0, weft_post(rt2, &bz.c[0].t));
	assert_rc(0, weft_wait(&bz.c[0].t));
	assert_int_equal(atomic_load(&bz.c[0].hits), 1);
	assert_rc(0, weft_rt_destroy(rt2));

	busy_end(&bz);
}

/* External threads post while destroy starts: each post either is accepted
 * (and then runs, destroy drains) or fails with WEFT_ESHUTDOWN, and once one
 * fails all later ones do. The gates keep destroy from finishing until every
 * poster has seen the refusal, so no post can reach a freed runtime. */
enum { POSTERS = 3, PER_POSTER = 3000 };

typedef struct poster {
	weft_rt *rt;
	ctask *tasks;
	_Atomic int accepted;
	_Atomic int refused;
	_Atomic int *go;
} poster;

static void *poster_thread(void *arg)
{
	poster *p = arg;
	while (!atomic_load(p->go))
		;
	int i = 0;
	for (; i < PER_POSTER - 10; i++) {
		int rc = weft_post(p->rt, &p->tasks[i].t);
		if (rc == WEFT_ESHUTDOWN)
			break;
		WT_CHECK_RC(0, rc);
		atomic_fetch_add(&p->accepted, 1);
		if (i % 64 == 63)
			sched_yield();
	}
	if (i == PER_POSTER - 10) {
		/* Ran out before destroy began: wait for it. */
		while (!atomic_load(&p->rt->closing))
			sched_yield();
	}
	for (int k = i == PER_POSTER - 10 ? i : i + 1; k < PER_POSTER; k++) {
		WT_CHECK_RC(WEFT_ESHUTDOWN, weft_post(p->rt, &p->tasks[k].t));
		WT_CHECK(weft_task_state_of(&p->tasks[k].t) == WEFT_TASK_IDLE);
	}
	atomic_store(&p->refused, 1);
	return NULL;
}

static void destroy_posters(void)
{
	weft_rt *rt = create_with(WEFT_POLICY_PRIORITY, 0);
	int nw = wt_workers(rt);
	wt_gate gate;
	wt_gate_init(&gate);
	weft_task gates[WT_GATE_MAX];
	wt_gate_hold(rt, &gate, gates, nw);

	_Atomic int go = 0;
	poster p[POSTERS];
	pthread_t th[POSTERS];
	for (int i = 0; i < POSTERS; i++) {
		p[i] = (poster){.rt = rt, .tasks = ctasks_new(PER_POSTER), .go = &go};
		wt_thread_start(&th[i], poster_thread, &p[i]);
	}
	atomic_store(&go, 1);
	wt_sleep_ms(2);
	destroyer d = {.rt = rt, .mode = WEFT_DESTROY_DRAIN};
	pthread_t dth;
	wt_thread_start(&dth, destroy_thread, &d);
	for (int i = 0; i < POSTERS; i++)
		wt_thread_join(th[i]);
	assert_int_equal(atomic_load(&d.done), 0);
	wt_gate_release(&gate, nw);
	wt_thread_join(dth);
	assert_rc(0, atomic_load(&d.rc));
	int total = 0;
	for (int i = 0; i < POSTERS; i++) {
		int acc = atomic_load(&p[i].accepted);
		total += acc;
		assert_hits(p[i].tasks, acc, 1);
		for (int k = acc; k < PER_POSTER; k++) {
			assert_int_equal(atomic_load(&p[i].tasks[k].hits), 0);
			assert_int_equal(weft_task_state_of(&p[i].tasks[k].t), WEFT_TASK_IDLE);
		}
		free(p[i].tasks);
	}
	print_message("[ info     ] %d posts accepted before destroy\n", total);
	wt_gate_destroy(&gate);
}

/* ------------------------------------------------------------ EDEADLK */

typedef struct inside {
	weft_rt *rt, *other;
	int workers; /* rt's */
	weft_task self;
	weft_task other_task;
	_Atomic int other_index;
	weft_rt *_Atomic other_current;
	ctask *done_task;
} inside;

static void other_fn(void *arg)
{
	inside *s = arg;
	atomic_store(&s->other_index, weft_worker_index());
	atomic_store(&s->other_current, weft_rt_current());
}

static void inside_fn(void *arg)
{
	inside *s = arg;
	WT_CHECK(weft_rt_current() == s->rt);
	int idx = weft_worker_index();
	WT_CHECK(idx >= 0 && idx < s->workers);
	WT_CHECK(weft_task_state_of(&s->self) == WEFT_TASK_RUNNING);
	WT_CHECK_RC(WEFT_EDEADLK, weft_wait_all(s->rt));
	WT_CHECK_RC(WEFT_EDEADLK, weft_rt_destroy(s->rt));
	size_t n = 12345;
	WT_CHECK_RC(WEFT_EDEADLK, weft_rt_destroy_ex(s->rt, WEFT_DESTROY_CANCEL, &n));
	WT_CHECK(n == 12345);
	WT_CHECK_RC(WEFT_EDEADLK, weft_wait(&s->self));
	/* Waiting for a task that already finished is fine. */
	WT_CHECK_RC(0, weft_wait(&s->done_task->t));
	/* Another runtime may be waited for from inside this one's task. */
	WT_CHECK_RC(0, weft_post(s->other, &s->other_task));
	WT_CHECK_RC(0, weft_wait_all(s->other));
	WT_CHECK(atomic_load(&s->other_current) == s->other);
	WT_CHECK(atomic_load(&s->other_index) == 0);
	/* And we are still ourselves. */
	WT_CHECK(weft_rt_current() == s->rt);
	WT_CHECK(weft_worker_index() == idx);
}

static void deadlk_inside(void)
{
	weft_rt *rt = create_with(WEFT_POLICY_PRIORITY, 0);
	weft_config ocfg;
	wt_config(&ocfg);
	ocfg.workers = 1;
	weft_rt *other = wt_create(&ocfg);
	ctask done;
	ctask_init(&done, 0);
	assert_rc(0, weft_post(rt, &done.t));
	assert_rc(0, weft_wait(&done.t));

	enum { N = 8 };
	inside s[N];
	for (int i = 0; i < N; i++) {
		memset(&s[i], 0, sizeof(s[i]));
		s[i].rt = rt;
		s[i].workers = wt_workers(rt);
		s[i].other = other;
		s[i].done_task = &done;
		atomic_store(&s[i].other_index, -2);
		assert_rc(0, weft_task_init(&s[i].self, inside_fn, &s[i]));
		assert_rc(0, weft_task_init(&s[i].other_task, other_fn, &s[i]));
	}
	for (int i = 0; i < N; i++)
		assert_rc(0, weft_post(rt, &s[i].self));
	assert_rc(0, weft_wait_all(rt));
	for (int i = 0; i < N; i++)
		assert_int_equal(weft_task_state_of(&s[i].self), WEFT_TASK_DONE);
	wt_check_async();
	/* The runtime survived the refused calls. */
	assert_rc(0, weft_post(rt, &done.t));
	assert_rc(0, weft_wait(&done.t));
	assert_int_equal(atomic_load(&done.hits), 2);
	assert_rc(0, weft_rt_destroy(other));
	assert_rc(0, weft_rt_destroy(rt));
}

/* ------------------------------------------------------------ bursty use */

/* post, wait_all, post, wait_all ... with the same task structs, like the
 * seed's sched_execute loop. */
static void bursty(void)
{
	uint64_t rng = wt_seed();
	int rounds, n;
	if (wt.model == WEFT_MODEL_SPAWN) {
		rounds = WT_SANITIZER ? 15 : 40;
		n = 24;
	} else {
		rounds = WT_SANITIZER ? 100 : 400;
		n = 64;
	}
	weft_rt *rt = create_with(WEFT_POLICY_PRIORITY, 0);
	ctask *c = ctasks_new(n);
	for (int r = 0; r < rounds; r++) {
		int k = 1 + (int)wt_rand_below(&rng, (uint64_t)n); /* burst size */
		for (int i = 0; i < k; i++) {
			assert_rc(0,
			          weft_task_set_priority(&c[i].t, (int64_t)wt_rand_below(&rng, 4)));
			assert_rc(0, weft_post(rt, &c[i].t));
		}
		assert_rc(0, weft_wait_all(rt));
		for (int i = 0; i < k; i++) {
			assert_int_equal(weft_task_state_of(&c[i].t), WEFT_TASK_DONE);
			/* Runs so far: this round plus earlier rounds that used it. */
			atomic_fetch_sub(&c[i].hits, 1);
		}
		for (int i = 0; i < n; i++)
			if (atomic_load(&c[i].hits) != 0)
				fail_msg("round %d: task %d ran %u extra time(s)", r, i,
				         atomic_load(&c[i].hits));
		/* wait_all with nothing posted returns at once. */
		if (r % 16 == 0)
			assert_rc(0, weft_wait_all(rt));
	}
	weft_stats s;
	assert_rc(0, weft_stats_get(rt, &s));
	assert_int_equal(s.posted, s.run);
	assert_rc(0, weft_rt_destroy(rt));
	free(c);
}

/* Several threads in weft_wait_all at once: each returns only when every
 * task posted before it started waiting has run. */
typedef struct all_waiter {
	weft_rt *rt;
	ctask *c;
	int n;
	unsigned round;
	pthread_barrier_t *bar;
} all_waiter;

static void *wait_all_thread(void *arg)
{
	all_waiter *a = arg;
	pthread_barrier_wait(a->bar);
	WT_CHECK_RC(0, weft_wait_all(a->rt));
	for (int i = 0; i < a->n; i++)
		if (atomic_load(&a->c[i].hits) != a->round) {
			wt_async_fail(__FILE__, __LINE__,
			              "weft_wait_all returned before task %d ran (round %u)", i,
			              a->round);
			break;
		}
	return NULL;
}

static void wait_all_concurrent(void)
{
	enum { WAITERS = 3, N = 64 };
	int rounds = wt.model == WEFT_MODEL_SPAWN ? 10 : 50;
	weft_rt *rt = create_with(WEFT_POLICY_PRIORITY, 0);
	int nw = wt_workers(rt);
	ctask *c = ctasks_new(N);
	wt_gate gate;
	wt_gate_init(&gate);
	weft_task gates[WT_GATE_MAX];
	for (int r = 1; r <= rounds; r++) {
		bool gated = r % 5 == 1; /* sometimes the waiters surely sleep */
		if (gated)
			wt_gate_hold(rt, &gate, gates, nw);
		for (int i = 0; i < N; i++)
			assert_rc(0, weft_post(rt, &c[i].t));
		pthread_barrier_t bar;
		pthread_barrier_init(&bar, NULL, WAITERS + 1);
		all_waiter a = {.rt = rt, .c = c, .n = N, .round = (unsigned)r, .bar = &bar};
		pthread_t th[WAITERS];
		for (int i = 0; i < WAITERS; i++)
			wt_thread_start(&th[i], wait_all_thread, &a);
		pthread_barrier_wait(&bar);
		if (gated) {
			wt_sleep_ms(5);
			wt_gate_release(&gate, nw);
		}
		for (int i = 0; i < WAITERS; i++)
			wt_thread_join(th[i]);
		pthread_barrier_destroy(&bar);
		assert_rc(0, weft_wait_all(rt));
		wt_check_async();
	}
	assert_hits(c, N, (unsigned)rounds);
	assert_rc(0, weft_rt_destroy(rt));
	wt_gate_destroy(&gate);
	free(c);
}

/* A chain: each task posts the next from inside. Destroy (drain) right
 * after posting the head runs the whole chain; a cancelling destroy cuts
 * it, and every link either ran or was discarded. */
typedef struct chain {
	weft_rt *rt;
	ctask *links;
	int len;
	_Atomic int posted;
} chain;

static chain ch;

static void chain_fn(void *arg)
{
	ctask *me = arg;
	atomic_fetch_add(&me->hits, 1);
	if (me->id + 1 < ch.len) {
		atomic_fetch_add(&ch.posted, 1);
		WT_CHECK_RC(0, weft_post(ch.rt, &ch.links[me->id + 1].t));
	}
}

static void run_chain(weft_destroy_mode mode)
{
	int len = wt.model == WEFT_MODEL_SPAWN ? (WT_SANITIZER ? 300 : 1000) : 20000;
	weft_rt *rt = create_with(WEFT_POLICY_PRIORITY, 0);
	ch = (chain){.rt = rt, .links = ctasks_new(len), .len = len};
	for (int i = 0; i < len; i++)
		assert_rc(0, weft_task_init(&ch.links[i].t, chain_fn, &ch.links[i]));
	atomic_store(&ch.posted, 1);
	assert_rc(0, weft_post(rt, &ch.links[0].t));
	if (mode == WEFT_DESTROY_CANCEL) {
		/* Cancel in mid-chain. */
		double end = wt_now() + WT_PATIENCE_S;
		while (atomic_load(&ch.posted) < 100 && wt_now() < end)
			sched_yield();
	}
	size_t discarded = (size_t)-1;
	assert_rc(0, weft_rt_destroy_ex(rt, mode, &discarded));
	int ran = 0, cancelled = 0;
	for (int i = 0; i < len; i++) {
		unsigned h = atomic_load(&ch.links[i].hits);
		weft_task_state st = weft_task_state_of(&ch.links[i].t);
		assert_true(h <= 1);
		ran += (int)h;
		cancelled += st == WEFT_TASK_CANCELLED;
		if (h == 1)
			assert_int_equal(st, WEFT_TASK_DONE);
		else if (st != WEFT_TASK_CANCELLED)
			assert_int_equal(st, WEFT_TASK_IDLE); /* never posted */
	}
	int posted = atomic_load(&ch.posted);
	print_message("[ info     ] chain of %d: %d posted, %d ran, %d cancelled\n", len, posted,
	              ran, cancelled);
	assert_int_equal(ran + cancelled, posted);
	assert_int_equal(discarded, (size_t)cancelled);
	if (mode == WEFT_DESTROY_DRAIN) {
		assert_int_equal(ran, len);
	} else {
		/* Only the link posted when the cancel began can be discarded. */
		assert_true(cancelled <= 1);
	}
	free(ch.links);
}

static void destroy_chain(void)
{
	run_chain(WEFT_DESTROY_DRAIN);
}

static void destroy_cancel_chain(void)
{
	run_chain(WEFT_DESTROY_CANCEL);
}

/* Two runtimes whose tasks post into each other: from inside a task of A a
 * post into B is an external post, and the reverse. */
typedef struct cross {
	weft_rt *a, *b;
	ctask *ca, *cb;
	int n;
} cross;

static cross cr;

static void cross_a_fn(void *arg)
{
	ctask *me = arg;
	atomic_fetch_add(&me->hits, 1);
	WT_CHECK(weft_rt_current() == cr.a);
	WT_CHECK_RC(0, weft_post(cr.b, &cr.cb[me->id].t));
}

static void cross_b_fn(void *arg)
{
	ctask *me = arg;
	atomic_fetch_add(&me->hits, 1);
	WT_CHECK(weft_rt_current() == cr.b);
	int idx = weft_worker_index();
	WT_CHECK(idx >= 0 && idx < 2);
}

static void cross_runtime(void)
{
	int n = wt.model == WEFT_MODEL_SPAWN ? 300 : 20000;
	weft_config cfg;
	wt_config(&cfg);
	weft_rt *a = wt_create(&cfg);
	cfg.model = WEFT_MODEL_THREADS; /* b: the other runtime, 2 workers */
	cfg.workers = 2;
	weft_rt *b = wt_create(&cfg);
	cr = (cross){.a = a, .b = b, .ca = ctasks_new(n), .cb = ctasks_new(n), .n = n};
	for (int i = 0; i < n; i++) {
		assert_rc(0, weft_task_init(&cr.ca[i].t, cross_a_fn, &cr.ca[i]));
		assert_rc(0, weft_task_init(&cr.cb[i].t, cross_b_fn, &cr.cb[i]));
	}
	for (int i = 0; i < n; i++)
		assert_rc(0, weft_post(a, &cr.ca[i].t));
	assert_rc(0, weft_wait_all(a));
	assert_rc(0, weft_wait_all(b));
	assert_hits(cr.ca, n, 1);
	assert_hits(cr.cb, n, 1);
	assert_rc(0, weft_rt_destroy(a));
	assert_rc(0, weft_rt_destroy(b));
	free(cr.ca);
	free(cr.cb);
}

/* ------------------------------------------------------------ waiting */

typedef struct multi_wait {
	ctask *c;
	int n;
} multi_wait;

static void *wait_many_thread(void *arg)
{
	multi_wait *mw = arg;
	for (int i = mw->n - 1; i >= 0; i--) {
		WT_CHECK_RC(0, weft_wait(&mw->c[i].t));
		/* What the task did is visible once weft_wait returns. */
		WT_CHECK(atomic_load_explicit(&mw->c[i].hits, memory_order_relaxed) >= 1);
	}
	return NULL;
}

static void wait_task(void)
{
	enum { N = 64, WAITERS = 3 };
	weft_rt *rt = create_with(WEFT_POLICY_PRIORITY, 0);
	int nw = wt_workers(rt);
	ctask *c = ctasks_new(N);
	wt_gate gate;
	wt_gate_init(&gate);
	weft_task gates[WT_GATE_MAX];
	for (int round = 0; round < 2; round++) {
		wt_gate_hold(rt, &gate, gates, nw);
		for (int i = 0; i < N; i++)
			assert_rc(0, weft_post(rt, &c[i].t));
		/* Several threads sleep in weft_wait on the same tasks. */
		multi_wait mw = {.c = c, .n = N};
		pthread_t th[WAITERS];
		for (int i = 0; i < WAITERS; i++)
			wt_thread_start(&th[i], wait_many_thread, &mw);
		wt_sleep_ms(20);
		wt_gate_release(&gate, nw);
		for (int i = 0; i < N; i++) {
			assert_rc(0, weft_wait(&c[i].t));
			assert_int_equal(atomic_load(&c[i].hits), (unsigned)round + 1);
			assert_rc(0, weft_wait(&c[i].t)); /* again: done stays done */
		}
		for (int i = 0; i < WAITERS; i++)
			wt_thread_join(th[i]);
		assert_rc(0, weft_wait_all(rt));
		wt_gate_wait_finished(&gate, (round + 1) * nw);
	}
	assert_rc(0, weft_rt_destroy(rt));
	wt_gate_destroy(&gate);
	free(c);
}

/* Group tasks post more tasks into the group while someone waits on it. */
typedef struct gctx {
	weft_rt *rt;
	weft_group *g;
	ctask *c;
	int n, fanout;
	_Atomic int next; /* next free index in c */
} gctx;

static gctx groupctx;

static void group_fn(void *arg)
{
	ctask *me = arg;
	atomic_fetch_add(&me->hits, 1);
	gctx *x = &groupctx;
	/* The first n tasks each post `fanout` children, which post one more. */
	int kids = me->id < x->n ? x->fanout : me->id < x->n * (1 + x->fanout) ? 1 : 0;
	for (int k = 0; k < kids; k++) {
		int i = atomic_fetch_add(&x->next, 1);
		WT_CHECK_RC(0, weft_post_in(weft_rt_current(), x->g, &x->c[i].t));
		WT_CHECK(weft_group_pending(x->g) >= 1);
	}
}

static void *group_wait_thread(void *arg)
{
	WT_CHECK_RC(0, weft_group_wait(arg));
	return NULL;
}

static void group(void)
{
	enum { N = 50, FANOUT = 3 };
	int total = N + N * FANOUT + N * FANOUT;
	weft_rt *rt = create_with(WEFT_POLICY_PRIORITY, 0);
	int nw = wt_workers(rt);
	weft_group g, other;
	assert_rc(0, weft_group_init(&g));
	assert_rc(0, weft_group_init(&other));
	ctask *c = calloc((size_t)total, sizeof(*c));
	assert_non_null(c);
	groupctx = (gctx){.rt = rt, .g = &g, .c = c, .n = N, .fanout = FANOUT};
	ctask *oc = ctasks_new(10);
	wt_gate gate;
	wt_gate_init(&gate);
	weft_task gates[WT_GATE_MAX];

	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < total; i++) {
			c[i].id = i;
			atomic_store(&c[i].hits, 0);
			assert_rc(0, weft_task_init(&c[i].t, group_fn, &c[i]));
		}
		atomic_store(&groupctx.next, N);
		wt_gate_hold(rt, &gate, gates, nw);
		for (int i = 0; i < N; i++)
			assert_rc(0, weft_post_in(rt, &g, &c[i].t));
		for (int i = 0; i < 10; i++)
			assert_rc(0, weft_post_in(rt, &other, &oc[i].t));
		assert_int_equal(weft_group_pending(&g), N);
		assert_int_equal(weft_group_pending(&other), 10);
		pthread_t th;
		wt_thread_start(&th, group_wait_thread, &g);
		wt_sleep_ms(10);
		wt_gate_release(&gate, nw);
		assert_rc(0, weft_group_wait(&g));
		/* Everything of the group ran, including what was posted into it
		 * while we waited. */
		assert_int_equal(atomic_load(&groupctx.next), total);
		assert_int_equal(weft_group_pending(&g), 0);
		assert_hits(c, total, 1);
		wt_thread_join(th);
		assert_rc(0, weft_group_wait(&other));
		assert_int_equal(weft_group_pending(&other), 0);
		assert_hits(oc, 10, (unsigned)round + 1);
		assert_rc(0, weft_wait_all(rt));
		wt_gate_wait_finished(&gate, (round + 1) * nw);
	}
	assert_rc(0, weft_rt_destroy(rt));
	wt_gate_destroy(&gate);
	free(c);
	free(oc);
}

/* A task that waits until a later task has run must not keep that task
 * from running while there is room for it: weft_wait from inside a task is
 * allowed (task.h). The waiter polls with weft_sleep_ns, weft's own
 * blocking call: under a kernel-thread model it blocks its worker, so the
 * later task needs another, free worker, or with one worker a stand-in
 * thread (compensation, core/standin.c); under a fiber model the waiter
 * parks and the later task runs on its worker, whatever the count. Task 0 waits (up to a few
 * seconds, so that a failure is quick) for task 1 to finish. */
static _Atomic int later_done;
static _Atomic int waiter_saw;

static void later_fn(void *arg)
{
	(void)arg;
	atomic_store(&later_done, 1);
}

static void waiter_fn(void *arg)
{
	(void)arg;
	double end = wt_now() + 3.0;
	while (!atomic_load(&later_done) && wt_now() < end)
		WT_CHECK_RC(0, weft_sleep_ns(1000000));
	atomic_store(&waiter_saw, atomic_load(&later_done));
}

static void wait_in_task(void)
{
	weft_rt *rt = create_with(WEFT_POLICY_PRIORITY, 0);
	int nw = wt_workers(rt);
	int n = 64 * nw;
	ctask *c = ctasks_new(n);
	assert_rc(0, weft_task_init(&c[0].t, waiter_fn, NULL));
	assert_rc(0, weft_task_init(&c[1].t, later_fn, NULL));
	wt_gate gate;
	wt_gate_init(&gate);
	weft_task gates[WT_GATE_MAX];
	wt_gate_hold(rt, &gate, gates, nw);
	for (int i = 0; i < n; i++)
		assert_rc(0, weft_post(rt, &c[i].t));
	wt_gate_release(&gate, nw);
	assert_rc(0, weft_wait_all(rt));
	assert_rc(0, weft_rt_destroy(rt));
	wt_gate_destroy(&gate);
	free(c);
	if (!atomic_load(&waiter_saw))
		fail_msg("task 1 did not run while task 0 waited for it in weft_sleep_ns (%s, %d "
		         "worker(s))",
		         weft_model_name(wt.model), nw);
}

/* The same with one waiter per worker, each at the head of what becomes
 * that worker's batch: tasks 0, 16, 32, ... wait for the task after them.
 * Taken one at a time (or with the rest of a blocked worker's batch given
 * back) every target runs: whenever a waiter blocks, the next free worker
 * takes the next task (under a fiber model, the waiter's own worker does).
 * If every worker holds its waiter's target in its own batch, nobody is
 * left to steal it. */
enum { MANY_STRIDE = 16 };
static _Atomic int many_done[64 * WT_GATE_MAX];
static _Atomic int many_timeouts;

static void many_later_fn(void *arg)
{
	atomic_store(&many_done[(intptr_t)arg], 1);
}

static void many_waiter_fn(void *arg)
{
	intptr_t i = (intptr_t)arg;
	double end = wt_now() + 3.0;
	while (!atomic_load(&many_done[i + 1]) && wt_now() < end)
		WT_CHECK_RC(0, weft_sleep_ns(1000000));
	if (!atomic_load(&many_done[i + 1]))
		atomic_fetch_add(&many_timeouts, 1);
	atomic_store(&many_done[i], 1);
}

static void wait_in_task_many(void)
{
	weft_rt *rt = create_with(WEFT_POLICY_PRIORITY, 0);
	int nw = wt_workers(rt);
	int n = 64 * nw;
	weft_task *t = calloc((size_t)n, sizeof(*t));
	assert_non_null(t);
	wt_gate gate;
	wt_gate_init(&gate);
	weft_task gates[WT_GATE_MAX];
	wt_gate_hold(rt, &gate, gates, nw);
	for (intptr_t i = 0; i < n; i++) {
		bool waiter = i % MANY_STRIDE == 0 && i / MANY_STRIDE < nw;
		assert_rc(0, weft_task_init(&t[i], waiter ? many_waiter_fn : many_later_fn,
		                            (void *)i));
		assert_rc(0, weft_post(rt, &t[i]));
	}
	wt_gate_release(&gate, nw);
	assert_rc(0, weft_wait_all(rt));
	assert_rc(0, weft_rt_destroy(rt));
	wt_gate_destroy(&gate);
	free(t);
	if (atomic_load(&many_timeouts))
		fail_msg("%d of %d task(s) waited 3 s in vain for the task posted right after "
		         "them (every worker blocked on a task held in its own batch)",
		         atomic_load(&many_timeouts), nw);
}

/* Tasks that block their kernel thread (a plain system call: nanosleep
 * here, on purpose, not weft_sleep_ns) spread over every worker: 2W of
 * them, posted at once to an idle runtime, run W at a time. Under a fiber
 * model such a call holds the worker too, so W at a time holds there as
 * well (blocking.sleeps_overlap checks what weft_sleep_ns does instead). */
static _Atomic int spread_running, spread_max;

static void spread_fn(void *arg)
{
	(void)arg;
	int r = atomic_fetch_add(&spread_running, 1) + 1;
	int m = atomic_load(&spread_max);
	while (r > m && !atomic_compare_exchange_weak(&spread_max, &m, r))
		;
	wt_sleep_ms(50);
	atomic_fetch_sub(&spread_running, 1);
}

static void spread_blocking(void)
{
	weft_rt *rt = create_with(WEFT_POLICY_PRIORITY, 0);
	int nw = wt_workers(rt);
	wt_sleep_ms(20); /* let the workers fall asleep */
	int n = 2 * nw;
	weft_task t[2 * WT_GATE_MAX];
	for (int i = 0; i < n; i++) {
		assert_rc(0, weft_task_init(&t[i], spread_fn, NULL));
		assert_rc(0, weft_post(rt, &t[i]));
	}
	assert_rc(0, weft_wait_all(rt));
	assert_rc(0, weft_rt_destroy(rt));
	if (atomic_load(&spread_max) != nw)
		fail_msg("at most %d of %d blocking tasks ran at once on %d workers",
		         atomic_load(&spread_max), n, nw);
}

/* ------------------------------------------------------------ workers */

static _Atomic int index_bad;
static _Atomic int index_seen_mask;
static int index_workers; /* the runtime's, set before its tasks run */

static void index_fn(void *arg)
{
	weft_rt *rt = arg;
	int i = weft_worker_index();
	if (i < 0 || i >= index_workers || weft_rt_current() != rt)
		atomic_fetch_add(&index_bad, 1);
	else if (i < 31)
		atomic_fetch_or(&index_seen_mask, 1 << i);
}

static void worker_index(void)
{
	assert_int_equal(weft_worker_index(), -1);
	assert_null(weft_rt_current());
	weft_rt *rt = create_with(WEFT_POLICY_PRIORITY, 0);
	int nw = wt_workers(rt);
	index_workers = nw;
	assert_int_equal(weft_worker_index(), -1);
	assert_null(weft_rt_current());

	/* W gates run at once, so on W different workers: each index once. */
	wt_gate gate;
	wt_gate_init(&gate);
	weft_task gates[WT_GATE_MAX];
	wt_gate_hold(rt, &gate, gates, nw);
	int seen[WT_GATE_MAX] = {0};
	for (int i = 0; i < nw; i++) {
		int idx = gate.worker_seen[i];
		if (idx < 0 || idx >= nw)
			fail_msg("gate %d ran with worker index %d, outside [0, %d)", i, idx, nw);
		assert_ptr_equal(gate.rt_seen[i], rt);
		seen[idx]++;
	}
	for (int i = 0; i < nw; i++)
		assert_int_equal(seen[i], 1);
	wt_gate_release(&gate, nw);

	int n = wt.model == WEFT_MODEL_SPAWN ? 200 : 5000;
	weft_task *t = calloc((size_t)n, sizeof(*t));
	assert_non_null(t);
	for (int i = 0; i < n; i++) {
		assert_rc(0, weft_task_init(&t[i], index_fn, rt));
		assert_rc(0, weft_post(rt, &t[i]));
	}
	assert_rc(0, weft_wait_all(rt));
	assert_int_equal(atomic_load(&index_bad), 0);
	assert_int_equal(weft_worker_index(), -1);
	assert_null(weft_rt_current());
	assert_rc(0, weft_rt_destroy(rt));
	assert_int_equal(weft_worker_index(), -1);
	wt_gate_destroy(&gate);
	free(t);
}

/* ------------------------------------------------------------ stats */

static weft_task stat_children[10];
static void stat_parent_fn(void *arg)
{
	weft_rt *rt = weft_rt_current();
	(void)arg;
	for (int i = 0; i < 10; i++)
		WT_CHECK_RC(0, weft_post(rt, &stat_children[i]));
}

static void noop(void *arg)
{
	(void)arg;
}

static void check_print(weft_rt *rt, const char *const *needles)
{
	FILE *f = tmpfile();
	assert_non_null(f);
	assert_rc(0, weft_stats_print(rt, f));
	rewind(f);
	char buf[4096];
	size_t len = fread(buf, 1, sizeof(buf) - 1, f);
	buf[len] = '\0';
	fclose(f);
	for (const char *const *n = needles; *n; n++)
		if (!strstr(buf, *n))
			fail_msg("weft_stats_print output lacks \"%s\":\n%s", *n, buf);
}

static void stats(void)
{
	enum { N = 100 };
	weft_rt *rt = create_with(WEFT_POLICY_FIFO, 1000);
	/* The workers asked for, except under fibers, which is M:1 (one
	 * worker whatever is asked; DESIGN.md). */
	int want = wt.model == WEFT_MODEL_FIBERS ? 1 : wt.workers;
	assert_int_equal(wt_workers(rt), want);
	weft_stats s;
	assert_rc(0, weft_stats_get(rt, &s));
	assert_int_equal(s.model, wt.model);
	assert_int_equal(s.policy, WEFT_POLICY_FIFO);
	assert_int_equal(s.workers, want);
	assert_int_equal(s.workers_source, WEFT_WORKERS_FROM_CONFIG);
	assert_int_equal(s.queue_capacity, 1000);
	assert_true(s.cpus_affinity >= 1);
	assert_int_equal(s.posted, 0);
	assert_int_equal(s.run, 0);

	weft_task t[N], parent;
	for (int i = 0; i < N; i++) {
		assert_rc(0, weft_task_init(&t[i], noop, NULL));
		assert_rc(0, weft_post(rt, &t[i]));
	}
	for (int i = 0; i < 10; i++)
		assert_rc(0, weft_task_init(&stat_children[i], noop, NULL));
	assert_rc(0, weft_task_init(&parent, stat_parent_fn, NULL));
	assert_rc(0, weft_post(rt, &parent));
	assert_rc(0, weft_wait_all(rt));
	assert_rc(0, weft_stats_get(rt, &s));
	assert_int_equal(s.posted, N + 11);
	assert_int_equal(s.run, N + 11);
	assert_int_equal(s.rejected, 0);
	assert_int_equal(s.cancelled, 0);

	char line[128], workers[64], model[64];
	snprintf(line, sizeof(line), "posted %d, run %d", N + 11, N + 11);
	snprintf(workers, sizeof(workers), "%d worker%s from config", want, want == 1 ? "" : "s");
	snprintf(model, sizeof(model), "model %s", weft_model_name(wt.model));
	const char *needles[] = {model, workers, line, "policy fifo", "queue capacity 1000", NULL};
	check_print(rt, needles);
	assert_rc(0, weft_rt_destroy(rt));

	/* Workers from the environment: the source says so. */
	char n[16];
	snprintf(n, sizeof(n), "%d", wt.workers);
	assert_int_equal(setenv("WEFT_WORKERS", n, 1), 0);
	weft_config cfg;
	wt_config(&cfg);
	cfg.workers = wt.workers + 1;
	rt = wt_create(&cfg);
	unsetenv("WEFT_WORKERS");
	assert_int_equal(wt_workers(rt), want);
	assert_rc(0, weft_stats_get(rt, &s));
	assert_int_equal(s.workers, want);
	assert_int_equal(s.workers_source, WEFT_WORKERS_FROM_ENV);
	snprintf(workers, sizeof(workers), "%d worker%s from WEFT_WORKERS", want,
	         want == 1 ? "" : "s");
	const char *env_needles[] = {
	        model, workers, "posted 0, run 0", "queue capacity unbounded", "policy priority",
	        NULL};
	check_print(rt, env_needles);
	assert_rc(0, weft_rt_destroy(rt));
}

/* ------------------------------------------------------------ failures */

/* Every allocation weft_rt_create makes may fail: each failure returns
 * WEFT_ENOMEM (or WEFT_EAGAIN) and leaves nothing allocated. Posting and
 * running allocate nothing. */
static void alloc_fail(void)
{
	weft_config cfg;
	wt_config(&cfg);
	cfg.queue_capacity = 8;
	long before = wt_alloc_total();
	weft_rt *rt = wt_create(&cfg);
	long needed = wt_alloc_total() - before;
	assert_true(needed >= 1);
	assert_rc(0, weft_rt_destroy(rt));

	for (long nth = 1; nth <= needed; nth++) {
		wt_alloc_fail_nth(nth);
		rt = (weft_rt *)&rt;
		int rc = weft_rt_create(&rt, &cfg);
		wt_alloc_fail_nth(0);
		if (rc != WEFT_ENOMEM && rc != WEFT_EAGAIN)
			fail_msg("allocation %ld of %ld failed: weft_rt_create returned %s", nth,
			         needed, weft_err_name(rc));
		assert_null(rt);
		wt_assert_no_live_allocations();
	}
	/* One past the last allocation: nothing fails. */
	wt_alloc_fail_nth(needed + 1);
	rt = wt_create(&cfg);
	wt_alloc_fail_nth(0);

	before = wt_alloc_total();
	ctask *c = ctasks_new(100);
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < 100; i++)
			assert_rc(0, weft_post_wait(rt, &c[i].t));
		assert_rc(0, weft_wait_all(rt));
	}
	assert_hits(c, 100, 3);
	assert_int_equal(wt_alloc_total(), before);
	assert_rc(0, weft_rt_destroy(rt));
	free(c);
}

/* Thread creation fails: under a model with long-lived workers (all but
 * spawn), weft_rt_create for every worker it starts (EAGAIN, the started
 * ones joined, nothing left); under spawn, a post (EAGAIN, task unchanged)
 * or a hand-over to the next queued task (the finishing thread runs it
 * itself). */
static void thread_fail(void)
{
	weft_config cfg;
	wt_config(&cfg);
	cfg.queue_capacity = 64;
	weft_rt *rt = wt_create(&cfg); /* how many workers it really starts */
	int nw = wt_workers(rt);
	assert_rc(0, weft_rt_destroy(rt));
	if (wt.model != WEFT_MODEL_SPAWN) {
		for (long nth = 1; nth <= nw; nth++) {
			weft__fault_thread_create(nth);
			rt = (weft_rt *)&rt;
			int rc = weft_rt_create(&rt, &cfg);
			weft__fault_thread_create(0);
			if (rc != WEFT_EAGAIN)
				fail_msg("thread %ld of %d failed: weft_rt_create returned %s", nth,
				         nw, weft_err_name(rc));
			assert_null(rt);
			wt_assert_no_live_allocations();
		}
	}
	/* The fault one past the last worker does not hit creation. */
	weft__fault_thread_create(nw + 1);
	rt = wt_create(&cfg);
	weft__fault_thread_create(0);
	ctask *c = ctasks_new(40);
	for (int i = 0; i < 10; i++)
		assert_rc(0, weft_post(rt, &c[i].t));
	assert_rc(0, weft_wait_all(rt));
	assert_hits(c, 10, 1);

	if (wt.model == WEFT_MODEL_SPAWN) {
		/* A post that needs a thread and cannot get one. */
		weft_stats before, after;
		assert_rc(0, weft_stats_get(rt, &before));
		weft__fault_thread_create(1);
		assert_rc(WEFT_EAGAIN, weft_post(rt, &c[10].t));
		weft__fault_thread_create(0);
		assert_int_equal(weft_task_state_of(&c[10].t), WEFT_TASK_IDLE);
		assert_rc(0, weft_stats_get(rt, &after));
		assert_int_equal(after.posted, before.posted);

		/* Hand-over: the gates hold every slot, 20 tasks queue; the first
		 * gate's thread cannot create the next thread. */
		wt_gate gate;
		wt_gate_init(&gate);
		weft_task gates[WT_GATE_MAX];
		wt_gate_hold(rt, &gate, gates, nw);
		for (int i = 10; i < 40; i++)
			assert_rc(0, weft_post(rt, &c[i].t));
		weft__fault_thread_create(1);
		wt_gate_release(&gate, 1);
		wt_gate_wait_finished(&gate, 1);
		wt_gate_release(&gate, nw - 1);
		assert_rc(0, weft_wait_all(rt));
		weft__fault_thread_create(0);
		wt_gate_destroy(&gate);
	} else {
		for (int i = 10; i < 40; i++)
			assert_rc(0, weft_post(rt, &c[i].t));
		assert_rc(0, weft_wait_all(rt));
	}
	assert_hits(c, 40, 1);
	weft_stats s;
	assert_rc(0, weft_stats_get(rt, &s));
	assert_int_equal(s.posted, s.run);
	assert_rc(0, weft_rt_destroy(rt));
	free(c);
}

WT_CASES(WT_CASE(order_priority), WT_CASE(order_fifo), WT_CASE(ebusy), WT_CASE(full_queue),
         WT_CASE(unbounded), WT_CASE(post_wait_blocks), WT_CASE(post_wait_rejected),
         WT_CASE(post_wait_deadlk), WT_CASE(destroy_drain), WT_CASE(destroy_cancel),
         WT_CASE(destroy_posters), WT_CASE(deadlk_inside), WT_CASE(bursty),
         WT_CASE(wait_all_concurrent), WT_CASE(destroy_chain), WT_CASE(destroy_cancel_chain),
         WT_CASE(cross_runtime), WT_CASE(wait_task), WT_CASE(group), WT_CASE(wait_in_task),
         WT_CASE(wait_in_task_many), WT_CASE(spread_blocking), WT_CASE(worker_index),
         WT_CASE(stats), WT_CASE(alloc_fail), WT_CASE(thread_fail));
