/* Exactly-once under load, for every model and worker count (MATRIX):
 * `test_stress <case> <model> <workers>`.
 *
 * Four external threads post at once, some tasks post children from inside,
 * priorities are random; every task has its own counter, and after
 * weft_wait_all returns on the main thread every counter must be exactly 1.
 * The release build runs 1,000,000 tasks per case under threads and fibers
 * (exactly_once); sanitizer builds and the spawn model (a kernel thread per
 * task) run fewer. Every task checks that weft_worker_index() is below the
 * runtime's real worker count. */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#if defined(__SANITIZE_THREAD__)
#define SCALE_DIV 5
#elif defined(__SANITIZE_ADDRESS__)
#define SCALE_DIV 2
#else
#define SCALE_DIV 1
#endif

enum { POSTERS = 4, FANOUT = 2, PARENT_EVERY = 8 };

static weft_task *tasks;
static _Atomic uint32_t *hits;
static int ext;   /* tasks [0, ext) are posted by the external threads */
static int total; /* tasks [ext, total) are children */
static bool with_children;
static bool use_post_wait;
static bool uneven; /* some tasks spin a while, so batches get stolen */
static int workers; /* the runtime's real count, set before any task runs */
static _Atomic long bad_index;

static void stress_fn(void *arg)
{
	uintptr_t i = (uintptr_t)arg;
	atomic_fetch_add_explicit(&hits[i], 1, memory_order_relaxed);
	if (uneven && i % 16 == 3) {
		double end = wt_now() + 2e-6 * (double)(i % 11);
		while (wt_now() < end)
			;
	}
	int w = weft_worker_index();
	if (w < 0 || w >= workers)
		atomic_fetch_add_explicit(&bad_index, 1, memory_order_relaxed);
	if (with_children && i < (uintptr_t)ext && i % PARENT_EVERY == 0) {
		weft_rt *rt = weft_rt_current();
		size_t first = (size_t)ext + (i / PARENT_EVERY) * FANOUT;
		for (size_t k = 0; k < FANOUT; k++)
			WT_CHECK_RC(0, weft_post(rt, &tasks[first + k]));
	}
}

typedef struct poster {
	weft_rt *rt;
	int from, to;
	pthread_barrier_t *start;
} poster;

static void *poster_thread(void *arg)
{
	poster *p = arg;
	pthread_barrier_wait(p->start);
	for (int i = p->from; i < p->to; i++) {
		int rc = use_post_wait ? weft_post_wait(p->rt, &tasks[i])
		                       : weft_post(p->rt, &tasks[i]);
		if (rc != 0) {
			WT_CHECK_RC(0, rc);
			return NULL;
		}
	}
	return NULL;
}

/* Runs `n` tasks (about: children fill the last fifth) through a runtime
 * with the given policy and capacity. */
static void run_stress(weft_policy policy, long capacity, int n, bool children)
{
	uint64_t rng = wt_seed();
	with_children = children;
	use_post_wait = capacity > 0;
	if (children) {
		ext = (n / 5 * 4) / PARENT_EVERY * PARENT_EVERY;
		total = ext + ext / PARENT_EVERY * FANOUT;
	} else {
		ext = total = n;
	}
	tasks = calloc((size_t)total, sizeof(*tasks));
	hits = calloc((size_t)total, sizeof(*hits));
	assert_non_null(tasks);
	assert_non_null(hits);
	for (int i = 0; i < total; i++) {
		assert_rc(0, weft_task_init(&tasks[i], stress_fn, (void *)(uintptr_t)i));
		/* Mostly the bucketed range 0..63 and a few levels around it,
		 * sometimes anything at all. */
		int64_t p = (int64_t)wt_rand_below(&rng, 72) - 4;
		if (wt_rand_below(&rng, 64) == 0)
			p = (int64_t)wt_rand(&rng);
		assert_rc(0, weft_task_set_priority(&tasks[i], p));
	}

	weft_config cfg;
	wt_config(&cfg);
	cfg.policy = policy;
	cfg.queue_capacity = capacity;
	weft_rt *rt = wt_create(&cfg);
	workers = wt_workers(rt);

	double t0 = wt_now();
	pthread_barrier_t start;
	pthread_barrier_init(&start, NULL, POSTERS);
	poster p[POSTERS];
	pthread_t th[POSTERS];
	for (int i = 0; i < POSTERS; i++) {
		p[i] = (poster){.rt = rt,
		                .from = (int)((long)ext * i / POSTERS),
		                .to = (int)((long)ext * (i + 1) / POSTERS),
		                .start = &start};
		wt_thread_start(&th[i], poster_thread, &p[i]);
	}
	for (int i = 0; i < POSTERS; i++)
		wt_thread_join(th[i]);
	pthread_barrier_destroy(&start);
	assert_rc(0, weft_wait_all(rt));
	double t1 = wt_now();
	wt_check_async();

	/* weft_wait_all returned: every task and every child has run, once. */
	long missing = 0, extra = 0;
	int first_bad = -1;
	for (int i = 0; i < total; i++) {
		uint32_t h = atomic_load_explicit(&hits[i], memory_order_relaxed);
		if (h != 1 && first_bad < 0)
			first_bad = i;
		missing += h == 0;
		extra += h > 1;
	}
	if (first_bad >= 0)
		fail_msg("%ld of %d task(s) never ran, %ld ran more than once (first: task %d, "
		         "%u runs)",
		         missing, total, extra, first_bad, atomic_load(&hits[first_bad]));
	assert_int_equal(atomic_load(&bad_index), 0);

	weft_stats s;
	assert_rc(0, weft_stats_get(rt, &s));
	assert_int_equal(s.posted, (uint64_t)total);
	assert_int_equal(s.run, (uint64_t)total);
	assert_int_equal(s.cancelled, 0);
	for (int i = 0; i < total; i++)
		assert_int_equal(weft_task_state_of(&tasks[i]), WEFT_TASK_DONE);
	print_message("[ info     ] %d tasks (%d from %d threads, %d children) in %.3f s, "
	              "%.0f ns/task\n",
	              total, ext, POSTERS, total - ext, t1 - t0, (t1 - t0) * 1e9 / total);
	assert_rc(0, weft_rt_destroy(rt));
	free(tasks);
	free((void *)hits);
}

static int count(int threads_n, int spawn_n)
{
	if (wt.model == WEFT_MODEL_SPAWN)
		return WT_SANITIZER ? spawn_n / 2 : spawn_n;
	return threads_n / SCALE_DIV;
}

/* The priority policy, children, 1,000,000 tasks in release. */
static void exactly_once(void)
{
	run_stress(WEFT_POLICY_PRIORITY, 0, count(1000000, 2000), true);
}

/* The fifo policy (workers take tasks in batches). */
static void exactly_once_fifo(void)
{
	run_stress(WEFT_POLICY_FIFO, 0, count(300000, 2000), true);
}

/* Every 16th task busy for up to 20 us: workers with work in their batch
 * while others run dry, so tasks are stolen from batches all the time. */
static void exactly_once_uneven(void)
{
	uneven = true;
	run_stress(WEFT_POLICY_FIFO, 0, count(200000, 2000), true);
}

/* A small bounded queue: the posters use weft_post_wait and sleep on a full
 * queue again and again; a lost wake-up hangs here. */
static void exactly_once_bounded(void)
{
	run_stress(WEFT_POLICY_PRIORITY, 16, count(200000, 2000), false);
}

/* ------------------------------------------------------------ rounds */

/* Bursts posted from outside, then nothing until they ran: the last tasks
 * of a burst must not be left where no worker looks, with nothing more to
 * come that would make a worker look again. Parents post children more
 * urgent than any parent (under priority they go to the shared queue at
 * once, and the poster hands its batch's rest back before it takes again)
 * and run unevenly, so batches are taken, handed back and stolen at every
 * burst's end. Each round waits on a counter with a deadline, so a
 * stranded task fails the case with a count instead of hanging it. */
enum { ROUND_MAX = 32 };

static weft_task round_tasks[2 * ROUND_MAX];
static _Atomic int round_ran;
static int round_parents;

static void round_child(void *arg)
{
	(void)arg;
	atomic_fetch_add(&round_ran, 1);
}

static void round_parent(void *arg)
{
	uintptr_t i = (uintptr_t)arg;
	/* Half post a child more urgent than any parent, which under priority
	 * goes to the shared queue at once, where an idle worker takes it with
	 * a batch; then all run a while, so that batch still sits when this
	 * worker takes again. */
	weft_task *child = &round_tasks[round_parents + (int)i];
	WT_CHECK_RC(0, weft_task_init(child, round_child, NULL));
	if (i % 2 == 0) {
		WT_CHECK_RC(0, weft_task_set_priority(child, (int64_t)(i % 3)));
		WT_CHECK_RC(0, weft_post(weft_rt_current(), child));
	} else {
		atomic_fetch_add(&round_ran, 1); /* no child: a stolen batch that posts nothing */
	}
	double end = wt_now() + 1e-6 * (double)(1 + i % 8);
	while (wt_now() < end)
		;
	atomic_fetch_add(&round_ran, 1);
}

static void bursts_all_run(weft_policy policy)
{
	uint64_t rng = wt_seed();
	weft_config cfg;
	wt_config(&cfg);
	cfg.policy = policy;
	weft_rt *rt = wt_create(&cfg);
	/* Under spawn (a thread per task, nothing batched) the rounds only
	 * check that nothing is lost: a few suffice (the aarch64 preset runs
	 * them under qemu, where 3,000 took minutes). */
	int rounds = wt.model == WEFT_MODEL_SPAWN ? 60 : WT_SANITIZER ? 400 : 3000;
	for (int r = 0; r < rounds; r++) {
		round_parents = 4 + (int)wt_rand_below(&rng, ROUND_MAX - 3);
		atomic_store(&round_ran, 0);
		for (int i = 0; i < round_parents; i++) {
			weft_task *t = &round_tasks[i];
			assert_rc(0, weft_task_init(t, round_parent, (void *)(uintptr_t)i));
			assert_rc(0,
			          weft_task_set_priority(t, 10 + (int64_t)wt_rand_below(&rng, 4)));
			assert_rc(0, weft_post(rt, t));
		}
		int want = 2 * round_parents;
		double give_up = wt_now() + 20.0;
		while (atomic_load(&round_ran) < want && wt_now() < give_up)
			sched_yield();
		int ran = atomic_load(&round_ran);
		if (ran < want)
			fail_msg("round %d: %d of %d tasks ran in 20 s (the rest stranded)", r, ran,
			         want);
		assert_rc(0, weft_wait_all(rt)); /* the tasks' words, before reuse */
	}
	assert_rc(0, weft_rt_destroy(rt));
}

static void bursts_all_run_priority(void)
{
	bursts_all_run(WEFT_POLICY_PRIORITY);
}

static void bursts_all_run_fifo(void)
{
	bursts_all_run(WEFT_POLICY_FIFO);
}

WT_CASES(WT_CASE(exactly_once), WT_CASE(exactly_once_fifo), WT_CASE(exactly_once_uneven),
         WT_CASE(exactly_once_bounded), WT_CASE(bursts_all_run_priority),
         WT_CASE(bursts_all_run_fifo));
