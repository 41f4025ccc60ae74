/* A runtime's life as other threads and processes see it, under every model
 * and worker count (MATRIX): `test_lifecycle <case> <model> <workers>`.
 *
 * destroy racing with posts and with weft_wait_all from other threads (the
 * contract in runtime.h: they return 0 or WEFT_ESHUTDOWN, destroy waits for
 * them, nothing touches freed memory: ASan would say so), calls that would
 * corrupt a task or group still in flight (WEFT_EBUSY), and fork(): the
 * child cannot use its parent's runtime or wait for its tasks, and can
 * create a runtime of its own. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

/* An allocator slow to free, as a loaded machine can be: destroy spends
 * long in the model's release, which is when a racing call would touch
 * what was just freed. Freed memory is poisoned. */
static void *slow_alloc(size_t size, void *ctx)
{
	(void)ctx;
	return malloc(size);
}

static void slow_free(void *p, size_t size, void *ctx)
{
	(void)ctx;
	memset(p, 0xdb, size);
	nanosleep(&(struct timespec){0, 200000}, NULL);
	free(p);
}

static const weft_allocator slow_allocator = {.alloc_fn = slow_alloc, .free_fn = slow_free};

/* ------------------------------------------------------------ destroy vs posts */

enum { POSTERS = 3, SLOTS = 256 };

static _Atomic long ran;
static _Atomic int destroyed;

static void count_run(void *arg)
{
	(void)arg;
	atomic_fetch_add(&ran, 1);
}

typedef struct poster {
	weft_rt *rt;
	weft_task tasks[SLOTS];
	long accepted, refused, after;
} poster;

/* Posts until destroy has returned, reusing each task once it finished.
 * Every answer is 0 (the task will run) or WEFT_ESHUTDOWN; once destroy
 * returned, WEFT_EINVAL (a stale handle, still recognised). */
static void *post_until_destroyed(void *arg)
{
	poster *p = arg;
	int last = 0; /* 0, then WEFT_ESHUTDOWN, then WEFT_EINVAL: never back */
	for (unsigned long i = 0; !atomic_load(&destroyed); i++) {
		weft_task *t = &p->tasks[i % SLOTS];
		weft_task_state st = weft_task_state_of(t);
		if (st == WEFT_TASK_QUEUED || st == WEFT_TASK_RUNNING)
			continue; /* still in flight: next slot */
		WT_CHECK_RC(0, weft_task_init(t, count_run, NULL));
		int rc = weft_post(p->rt, t);
		if (rc == 0) {
			WT_CHECK(last == 0);
			p->accepted++;
		} else if (rc == WEFT_ESHUTDOWN) {
			WT_CHECK(last != WEFT_EINVAL);
			p->refused++;
		} else if (rc == WEFT_EINVAL) {
			p->after++;
		} else {
			wt_async_fail(__FILE__, __LINE__, "weft_post during destroy: %s",
			              weft_err_name(rc));
			break;
		}
		last = rc;
	}
	return NULL;
}

static void destroy_races_posts(void)
{
	assert_rc(0, weft_set_allocator(&slow_allocator));
	atomic_store(&ran, 0);
	atomic_store(&destroyed, 0);
	weft_rt *rt = wt_create_default();
	static poster posters[POSTERS];
	pthread_t th[POSTERS];
	for (int i = 0; i < POSTERS; i++) {
		memset(&posters[i], 0, sizeof(posters[i]));
		posters[i].rt = rt;
		wt_thread_start(&th[i], post_until_destroyed, &posters[i]);
	}
	wt_sleep_ms(20);
	assert_rc(0, weft_rt_destroy(rt));
	/* Posts keep coming while destroy runs and after it returned. */
	wt_sleep_ms(5);
	atomic_store(&destroyed, 1);
	long accepted = 0, refused = 0;
	for (int i = 0; i < POSTERS; i++) {
		wt_thread_join(th[i]);
		accepted += posters[i].accepted;
		refused += posters[i].refused;
	}
	wt_check_async();
	print_message("[ info     ] %ld posts accepted, %ld refused while closing\n", accepted,
	              refused);
	assert_true(accepted > 0);
	/* Every accepted post ran once: destroy drained it. */
	assert_int_equal(accepted, atomic_load(&ran));
	assert_rc(0, weft_set_allocator(NULL));
}

/* ------------------------------------------------------------ destroy vs wait_all */

enum { WAITERS = 3 };

static void nap(void *arg)
{
	(void)arg;
	wt_sleep_ms(2);
	atomic_fetch_add(&ran, 1);
}

typedef struct waiter {
	weft_rt *rt;
	int calls, shut;
} waiter;

/* Calls weft_wait_all and weft_stats_get until destroy has returned: each
 * returns 0 or, once destroy is freeing the runtime, WEFT_ESHUTDOWN (then
 * WEFT_EINVAL). */
static void *wait_all_until_destroyed(void *arg)
{
	waiter *w = arg;
	int last = 0; /* 0, then WEFT_ESHUTDOWN, then WEFT_EINVAL: never back */
	while (!atomic_load(&destroyed)) {
		weft_stats st;
		int rc = w->calls % 2 ? weft_stats_get(w->rt, &st) : weft_wait_all(w->rt);
		w->calls++;
		if (rc == 0)
			WT_CHECK(last == 0);
		else if (rc == WEFT_ESHUTDOWN)
			WT_CHECK(last != WEFT_EINVAL);
		else
			WT_CHECK_RC(WEFT_EINVAL, rc);
		w->shut += rc == WEFT_ESHUTDOWN;
		if (rc == WEFT_EINVAL)
			wt_sleep_ms(1);
		last = rc;
	}
	return NULL;
}

static void destroy_races_wait_all(void)
{
	assert_rc(0, weft_set_allocator(&slow_allocator));
	atomic_store(&ran, 0);
	atomic_store(&destroyed, 0);
	weft_rt *rt = wt_create_default();
	enum { TASKS = 64 };
	static weft_task tasks[TASKS];
	for (int i = 0; i < TASKS; i++) {
		assert_rc(0, weft_task_init(&tasks[i], nap, NULL));
		assert_rc(0, weft_post(rt, &tasks[i]));
	}
	static waiter waiters[WAITERS];
	pthread_t th[WAITERS];
	for (int i = 0; i < WAITERS; i++) {
		waiters[i] = (waiter){.rt = rt};
		wt_thread_start(&th[i], wait_all_until_destroyed, &waiters[i]);
	}
	wt_sleep_ms(5); /* the waiters sleep in weft_wait_all */
	assert_rc(0, weft_rt_destroy(rt));
	assert_int_equal(TASKS, atomic_load(&ran));
	wt_sleep_ms(5);
	atomic_store(&destroyed, 1);
	for (int i = 0; i < WAITERS; i++)
		wt_thread_join(th[i]);
	wt_check_async();
	for (int i = 0; i < WAITERS; i++)
		assert_true(waiters[i].calls > 0);
	assert_rc(0, weft_set_allocator(NULL));
}

/* ------------------------------------------------------------ in flight */

/* Tasks and groups still queued or running refuse what would lose them:
 * weft_task_init, weft_task_set_priority, weft_post, weft_group_init. */
static void busy_tasks_refuse(void)
{
	weft_rt *rt = wt_create_default();
	int n = wt_workers(rt);
	wt_gate gate;
	wt_gate_init(&gate);
	weft_task held[WT_GATE_MAX];
	wt_gate_hold(rt, &gate, held, n); /* every worker busy */
	atomic_store(&ran, 0);
	weft_group g;
	assert_rc(0, weft_group_init(&g));
	weft_task queued;
	assert_rc(0, weft_task_init(&queued, count_run, NULL));
	assert_rc(0, weft_post_in(rt, &g, &queued));
	assert_int_equal(WEFT_TASK_QUEUED, weft_task_state_of(&queued));

	assert_rc(WEFT_EBUSY, weft_task_init(&queued, count_run, NULL));
	assert_rc(WEFT_EBUSY, weft_task_set_priority(&queued, 3));
	assert_rc(WEFT_EBUSY, weft_post(rt, &queued));
	assert_rc(WEFT_EBUSY, weft_group_init(&g));
	assert_int_equal(WEFT_TASK_RUNNING, weft_task_state_of(&held[0]));
	assert_rc(WEFT_EBUSY, weft_task_init(&held[0], count_run, NULL));

	wt_gate_release(&gate, n);
	assert_rc(0, weft_group_wait(&g));
	assert_rc(0, weft_wait_all(rt));
	assert_int_equal(1, atomic_load(&ran)); /* nothing lost */
	/* Finished: both may be prepared again, also when a later frame wrote
	 * over the group's first word only (a fiber stack reused does): a
	 * waited group leaves no mark that such bytes would match. */
	assert_rc(0, weft_task_init(&queued, count_run, NULL));
	memset(&g, 0x5a, sizeof(uint32_t));
	assert_rc(0, weft_group_init(&g));
	/* Used again after its wait: refused again while a task is in it. */
	assert_rc(0, weft_group_wait(&g));
	wt_gate_hold(rt, &gate, held, n);
	assert_rc(0, weft_post_in(rt, &g, &queued));
	assert_rc(WEFT_EBUSY, weft_group_init(&g));
	wt_gate_release(&gate, n);
	assert_rc(0, weft_group_wait(&g));
	assert_rc(0, weft_wait_all(rt));
	assert_int_equal(2, atomic_load(&ran));
	assert_rc(0, weft_task_init(&queued, count_run, NULL));
	assert_rc(0, weft_group_init(&g));
	for (int i = 0; i < n; i++)
		assert_rc(0, weft_task_init(&held[i], count_run, NULL));
	assert_rc(0, weft_rt_destroy(rt));
	wt_gate_destroy(&gate);
}

/* Memory that never held a task (garbage, or the zeroes of a fresh page)
 * is not mistaken for a task in flight (random bytes are, once in about
 * 2^28 tries for a task, 2^64 for a group: not in 10,000). */
static void init_on_garbage(void)
{
	uint64_t rng = wt_seed();
	for (int i = 0; i < 10000; i++) {
		weft_task t;
		uint64_t *words = (uint64_t *)&t;
		for (size_t w = 0; w < sizeof(t) / sizeof(*words); w++)
			words[w] = wt_rand(&rng);
		assert_rc(0, weft_task_init(&t, count_run, NULL));
		weft_group g;
		words = (uint64_t *)&g;
		for (size_t w = 0; w < sizeof(g) / sizeof(*words); w++)
			words[w] = wt_rand(&rng);
		assert_rc(0, weft_group_init(&g));
	}
}

/* ------------------------------------------------------------ fork */

typedef struct forked {
	weft_rt *rt;
	weft_task *in_flight;
	weft_group *group;
} forked;

#define CHILD_CHECK(cond)                                                                  \
	do {                                                                               \
		if (!(cond)) {                                                             \
			fprintf(stderr, "child: %s failed at line %d\n", #cond, __LINE__); \
			_exit(1);                                                          \
		}                                                                          \
	} while (0)

static void child_uses_parent(void *arg)
{
	forked *f = arg;
	weft_task t;
	CHILD_CHECK(weft_task_init(&t, count_run, NULL) == 0);
	CHILD_CHECK(weft_post(f->rt, &t) == WEFT_EINVAL);
	CHILD_CHECK(weft_wait(f->in_flight) == WEFT_EINVAL);
	CHILD_CHECK(weft_group_wait(f->group) == WEFT_EINVAL);
	CHILD_CHECK(weft_wait_all(f->rt) == WEFT_EINVAL);
	CHILD_CHECK(weft_rt_destroy(f->rt) == WEFT_EINVAL);
	/* A task of the parent's may be prepared again in the child. */
	CHILD_CHECK(weft_task_init(f->in_flight, count_run, NULL) == 0);
	/* A runtime of its own works (not checked under TSan, which cannot
	 * start threads in the child of a multi-threaded process). */
#ifdef __SANITIZE_THREAD__
	return;
#endif
	weft_rt *mine = NULL;
	weft_config cfg;
	weft_config_init(&cfg);
	cfg.model = wt.model;
	cfg.workers = wt.workers;
	CHILD_CHECK(weft_rt_create(&mine, &cfg) == 0);
	atomic_store(&ran, 0);
	CHILD_CHECK(weft_post(mine, &t) == 0);
	CHILD_CHECK(weft_wait(&t) == 0);
	CHILD_CHECK(atomic_load(&ran) == 1);
	CHILD_CHECK(weft_rt_destroy(mine) == 0);
}

static void child_execs(void *arg)
{
	(void)arg;
	execl("/bin/sh", "sh", "-c", "exit 7", (char *)NULL);
	_exit(99);
}

static void fork_with_live_runtime(void)
{
	weft_rt *rt = wt_create_default();
	int n = wt_workers(rt);
	wt_gate gate;
	wt_gate_init(&gate);
	weft_task held[WT_GATE_MAX];
	wt_gate_hold(rt, &gate, held, n); /* tasks running at fork, one queued */
	weft_group g;
	assert_rc(0, weft_group_init(&g));
	weft_task grouped;
	assert_rc(0, weft_task_init(&grouped, count_run, NULL));
	assert_rc(0, weft_post_in(rt, &g, &grouped));

	char err[4096];
	forked f = {rt, &held[0], &g};
	int status = wt_in_child(child_uses_parent, &f, 20, err, sizeof(err));
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("the child failed (status %#x): %s", status, err);
	assert_non_null(strstr(err, "fork"));

	status = wt_in_child(child_execs, NULL, 20, err, sizeof(err));
	assert_true(WIFEXITED(status));
	assert_int_equal(7, WEXITSTATUS(status));

	/* The parent's runtime is untouched by all that. */
	wt_gate_release(&gate, n);
	assert_rc(0, weft_wait(&held[0]));
	assert_rc(0, weft_group_wait(&g));
	assert_rc(0, weft_rt_destroy(rt));
	wt_gate_destroy(&gate);
}

WT_CASES(WT_CASE(destroy_races_posts), WT_CASE(destroy_races_wait_all), WT_CASE(busy_tasks_refuse),
         WT_CASE(init_on_garbage), WT_CASE(fork_with_live_runtime));
