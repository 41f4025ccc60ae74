/* Waits that only a still-queued task releases, on every model and worker
 * count (compensation, core/standin.c): under threads and spawn the worker
 * blocked in a weft wait gets a stand-in thread that runs the queued task;
 * the fiber models park. Each case posts the waiting task first, so with
 * one worker (or as many waiting stages as workers) nothing else would
 * run the releasing one: before compensation these hung on threads and
 * spawn ("likely a deadlock" after a second).
 *
 * Also the post-order findings of issue 26: (a) an urgent task a running
 * task posts is not held behind it while less urgent tasks run elsewhere;
 * (b) post order is kept with one worker across a task's post and a later
 * post from outside (threads; what the other models keep is said in
 * docs/models.md, and asserted here as such). */
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static bool kernel_threads(void)
{
	return !wt_fiber_model();
}

/* ------------------------------------------------------------ channel */

static weft_chan chan;
static long chan_sum;

static void consumer(void *arg)
{
	long n = (long)(intptr_t)arg, sum = 0;
	for (long i = 0; i < n; i++) {
		long v = 0;
		WT_CHECK_RC(0, weft_chan_recv(&chan, &v));
		sum += v;
	}
	chan_sum = sum;
}

static void producer(void *arg)
{
	long n = (long)(intptr_t)arg;
	for (long i = 1; i <= n; i++)
		WT_CHECK_RC(0, weft_chan_send(&chan, &i));
}

/* A producer and a consumer over a channel in one runtime, the consumer
 * posted first: unbuffered, then with a small buffer. */
static void chan_pair(void)
{
	weft_rt *rt = wt_create_default();
	long n = WT_SANITIZER ? 2000 : 20000;
	long buf[4];
	for (int round = 0; round < 2; round++) {
		assert_rc(0,
		          weft_chan_init(&chan, sizeof(long), round ? 4 : 0, round ? buf : NULL));
		chan_sum = 0;
		weft_task c, p;
		weft_group g;
		assert_rc(0, weft_group_init(&g));
		assert_rc(0, weft_task_init(&c, consumer, (void *)(intptr_t)n));
		assert_rc(0, weft_task_init(&p, producer, (void *)(intptr_t)n));
		assert_rc(0, weft_post_in(rt, &g, &c));
		assert_rc(0, weft_post_in(rt, &g, &p));
		assert_rc(0, weft_group_wait(&g));
		assert_int_equal(chan_sum, n * (n + 1) / 2);
	}
	weft_stats s;
	assert_rc(0, weft_stats_get(rt, &s));
	if (kernel_threads() && wt_workers(rt) == 1)
		assert_true(s.standins >= 1); /* nothing else could have run the producer */
	if (!kernel_threads())
		assert_int_equal(s.standins, 0);
	assert_rc(0, weft_rt_destroy(rt));
}

/* ------------------------------------------------------------ cond, sem */

static weft_mutex mu;
static weft_cond cv;
static weft_sem sem;
static bool flag;
static _Atomic int released;

static void cond_waiter(void *arg)
{
	(void)arg;
	WT_CHECK_RC(0, weft_mutex_lock(&mu));
	while (!flag)
		WT_CHECK_RC(0, weft_cond_wait(&cv, &mu));
	WT_CHECK_RC(0, weft_mutex_unlock(&mu));
	atomic_fetch_add(&released, 1);
}

static void cond_setter(void *arg)
{
	(void)arg;
	WT_CHECK_RC(0, weft_mutex_lock(&mu));
	flag = true;
	WT_CHECK_RC(0, weft_cond_broadcast(&cv));
	WT_CHECK_RC(0, weft_mutex_unlock(&mu));
}

static void sem_waiter(void *arg)
{
	(void)arg;
	WT_CHECK_RC(0, weft_sem_wait(&sem));
	atomic_fetch_add(&released, 1);
}

static void sem_poster(void *arg)
{
	long n = (long)(intptr_t)arg;
	for (long i = 0; i < n; i++)
		WT_CHECK_RC(0, weft_sem_post(&sem));
}

/* wt_blockers(rt) waiters posted first, then the task that releases them
 * all: a condition variable, then a semaphore; and once more with the
 * releasing task posted only after the waiters have had time to block
 * (a post from outside to a runtime whose every thread is blocked). */
static void run_waiters(weft_rt *rt, weft_fn wait_fn, weft_fn release_fn, bool late)
{
	int n = wt_blockers(rt);
	weft_task *t = calloc((size_t)n + 1, sizeof(*t));
	assert_non_null(t);
	atomic_store(&released, 0);
	weft_group g;
	assert_rc(0, weft_group_init(&g));
	for (int i = 0; i < n; i++) {
		assert_rc(0, weft_task_init(&t[i], wait_fn, NULL));
		assert_rc(0, weft_post_in(rt, &g, &t[i]));
	}
	if (late)
		wt_sleep_ms(5); /* longer than the grace period */
	assert_rc(0, weft_task_init(&t[n], release_fn, (void *)(intptr_t)n));
	assert_rc(0, weft_post_in(rt, &g, &t[n]));
	assert_rc(0, weft_group_wait(&g));
	assert_int_equal(atomic_load(&released), n);
	free(t);
}

static void cond_released_later(void)
{
	weft_rt *rt = wt_create_default();
	assert_rc(0, weft_mutex_init(&mu));
	assert_rc(0, weft_cond_init(&cv));
	for (int late = 0; late < 2; late++) {
		flag = false;
		run_waiters(rt, cond_waiter, cond_setter, late);
	}
	assert_rc(0, weft_rt_destroy(rt));
}

static void sem_released_later(void)
{
	weft_rt *rt = wt_create_default();
	for (int late = 0; late < 2; late++) {
		assert_rc(0, weft_sem_init(&sem, 0));
		run_waiters(rt, sem_waiter, sem_poster, late);
	}
	assert_rc(0, weft_rt_destroy(rt));
}

/* ------------------------------------------------------------ pipeline */

enum { STAGES = 4 };
static weft_chan stage_chan[STAGES - 1];
static long pipe_items, pipe_sum;

static void stage(void *arg)
{
	int k = (int)(intptr_t)arg;
	for (long i = 1; i <= pipe_items; i++) {
		long v = i;
		if (k > 0)
			WT_CHECK_RC(0, weft_chan_recv(&stage_chan[k - 1], &v));
		if (k < STAGES - 1)
			WT_CHECK_RC(0, weft_chan_send(&stage_chan[k], &v));
		else
			pipe_sum += v;
	}
}

/* Four stages over channels of one slot, posted sink first, so that every
 * worker can be taken by a stage that waits for one still queued. */
static void pipeline_four(void)
{
	weft_rt *rt = wt_create_default();
	long bufs[STAGES - 1][1];
	pipe_items = WT_SANITIZER ? 1000 : 5000;
	pipe_sum = 0;
	for (int k = 0; k < STAGES - 1; k++)
		assert_rc(0, weft_chan_init(&stage_chan[k], sizeof(long), 1, bufs[k]));
	weft_task t[STAGES];
	weft_group g;
	assert_rc(0, weft_group_init(&g));
	for (int k = STAGES - 1; k >= 0; k--) {
		assert_rc(0, weft_task_init(&t[k], stage, (void *)(intptr_t)k));
		assert_rc(0, weft_post_in(rt, &g, &t[k]));
	}
	assert_rc(0, weft_group_wait(&g));
	assert_int_equal(pipe_sum, pipe_items * (pipe_items + 1) / 2);
	assert_rc(0, weft_rt_destroy(rt));
}

/* ------------------------------------------------------------ priority */

enum { PRIO_TASKS = 40 };
static _Atomic int prio_next;
static int64_t prio_seen[PRIO_TASKS];

static void prio_record(void *arg)
{
	weft_task *self = arg;
	int i = atomic_fetch_add(&prio_next, 1);
	if (i < PRIO_TASKS)
		prio_seen[i] = weft_task_priority(self);
}

static weft_task prio_tasks[PRIO_TASKS + 1];

static void prio_release(void *arg)
{
	(void)arg;
	WT_CHECK_RC(0, weft_sem_post(&sem));
}

/* Posts PRIO_TASKS tasks of random priorities and, least urgent of all,
 * the one that releases it; then blocks until released. */
static void prio_poster(void *arg)
{
	weft_rt *rt = arg;
	uint64_t rng = wt_seed();
	for (int i = 0; i < PRIO_TASKS; i++) {
		WT_CHECK_RC(0, weft_task_init(&prio_tasks[i], prio_record, &prio_tasks[i]));
		WT_CHECK_RC(0, weft_task_set_priority(&prio_tasks[i],
		                                      (int64_t)wt_rand_below(&rng, 100) - 50));
		WT_CHECK_RC(0, weft_post(rt, &prio_tasks[i]));
	}
	WT_CHECK_RC(0, weft_task_init(&prio_tasks[PRIO_TASKS], prio_release, NULL));
	WT_CHECK_RC(0, weft_task_set_priority(&prio_tasks[PRIO_TASKS], 1000));
	WT_CHECK_RC(0, weft_post(rt, &prio_tasks[PRIO_TASKS]));
	WT_CHECK_RC(0, weft_sem_wait(&sem));
}

/* With one worker blocked, the stand-in runs what the blocked task posted
 * in priority order (threads and spawn with the priority policy; the fiber
 * models run a task's posts newest first, docs/models.md). */
static void priority_with_standins(void)
{
	weft_config cfg;
	wt_config(&cfg);
	cfg.policy = WEFT_POLICY_PRIORITY;
	weft_rt *rt = wt_create(&cfg);
	assert_rc(0, weft_sem_init(&sem, 0));
	atomic_store(&prio_next, 0);
	weft_task p;
	assert_rc(0, weft_task_init(&p, prio_poster, rt));
	assert_rc(0, weft_post(rt, &p));
	assert_rc(0, weft_wait(&p));
	assert_rc(0, weft_wait_all(rt));
	assert_int_equal(atomic_load(&prio_next), PRIO_TASKS);
	if (kernel_threads() && wt_workers(rt) == 1) {
		for (int i = 1; i < PRIO_TASKS; i++)
			if (prio_seen[i] < prio_seen[i - 1])
				fail_msg("task %d ran with priority %lld after %lld", i,
				         (long long)prio_seen[i], (long long)prio_seen[i - 1]);
	}
	assert_rc(0, weft_rt_destroy(rt));
}

/* ------------------------------------------------------------ retired */

static _Atomic int hook_starts, hook_exits;

static void count_threads(int event, int index, void *ctx)
{
	(void)index;
	(void)ctx;
	atomic_fetch_add(event == WEFT_WORKER_START ? &hook_starts : &hook_exits, 1);
}

/* Stand-ins end once the waits they stood in for are over, without
 * waiting for destroy; the statistics count them; nothing leaks (the
 * harness checks). */
static void standins_retire(void)
{
	weft_config cfg;
	wt_config(&cfg);
	cfg.worker_hook = count_threads;
	atomic_store(&hook_starts, 0);
	atomic_store(&hook_exits, 0);
	weft_rt *rt = wt_create(&cfg);
	assert_rc(0, weft_sem_init(&sem, 0));
	for (int round = 0; round < 3; round++)
		run_waiters(rt, sem_waiter, sem_poster, round == 2);
	assert_rc(0, weft_wait_all(rt));
	weft_stats s;
	assert_rc(0, weft_stats_get(rt, &s));
	/* A stand-in may serve the next round too when it has not retired
	 * yet (seen under ASan with ctest -j2): at least one was counted. */
	if (kernel_threads() && wt_workers(rt) == 1)
		assert_true(s.standins >= 1);
	/* Threads alive now: the workers (under spawn a task thread exits with
	 * its task: none), no stand-in. A worker may still be starting. */
	double give_up = wt_now() + WT_PATIENCE_S;
	int expected = wt.model == WEFT_MODEL_SPAWN ? 0 : wt_workers(rt);
	while (atomic_load(&hook_starts) - atomic_load(&hook_exits) != expected &&
	       wt_now() < give_up)
		wt_sleep_ms(1);
	assert_int_equal(atomic_load(&hook_starts) - atomic_load(&hook_exits), expected);
	int workers = wt_workers(rt);
	assert_rc(0, weft_rt_destroy(rt));
	assert_int_equal(atomic_load(&hook_starts), atomic_load(&hook_exits));
	/* Each stand-in is a thread started, or a spare one called again. */
	if (wt.model == WEFT_MODEL_THREADS) {
		assert_true(atomic_load(&hook_starts) <= workers + (int)s.standins);
		assert_true(atomic_load(&hook_starts) >= workers + (s.standins > 0));
	}
}

/* ------------------------------------------------------------ (a) */

enum { LOW_TASKS = 200 };
static _Atomic int low_started, low_done, low_before_urgent;
static _Atomic bool urgent_posted, urgent_started;

static void spin_us(int us)
{
	double until = wt_now() + us * 1e-6;
	while (wt_now() < until)
		;
}

static void low_task(void *arg)
{
	(void)arg;
	atomic_fetch_add(&low_started, 1);
	if (atomic_load(&urgent_posted) && !atomic_load(&urgent_started))
		atomic_fetch_add(&low_before_urgent, 1);
	spin_us(50);
	atomic_fetch_add(&low_done, 1);
}

static void urgent_task(void *arg)
{
	(void)arg;
	atomic_store(&urgent_started, true);
}

static weft_task urgent;

/* Posts the urgent task and computes on until it started (or, with one
 * worker, returns: nothing else could start it meanwhile). */
static void urgent_poster(void *arg)
{
	weft_rt *rt = arg;
	WT_CHECK_RC(0, weft_task_init(&urgent, urgent_task, NULL));
	WT_CHECK_RC(0, weft_task_set_priority(&urgent, -100));
	/* Counted from when the post returned: a poster descheduled between
	 * a flag set before the post and the post itself let the other
	 * workers start tasks that no order could have put after it (171 at
	 * 8 workers under TSan in CI). */
	WT_CHECK_RC(0, weft_post(rt, &urgent));
	atomic_store(&urgent_posted, true);
	double give_up = wt_now() + WT_PATIENCE_S;
	while (wt_workers(rt) > 1 && !atomic_load(&urgent_started) &&
	       atomic_load(&low_done) < LOW_TASKS && wt_now() < give_up)
		;
}

/* Finding (a): with less urgent tasks queued, an urgent task posted by a
 * running task starts within a batch's worth of them on another worker
 * (threads, spawn: strict priority order; it sat on its poster's own stack
 * until the queue ran dry). The fiber models keep a task's posts on its
 * worker (docs/models.md): there it only has to run. */
static void urgent_from_task(void)
{
	weft_config cfg;
	wt_config(&cfg);
	cfg.policy = WEFT_POLICY_PRIORITY;
	weft_rt *rt = wt_create(&cfg);
	atomic_store(&low_started, 0);
	atomic_store(&low_done, 0);
	atomic_store(&low_before_urgent, 0);
	atomic_store(&urgent_posted, false);
	atomic_store(&urgent_started, false);
	weft_task p, *low = calloc(LOW_TASKS, sizeof(*low));
	assert_non_null(low);
	assert_rc(0, weft_task_init(&p, urgent_poster, rt));
	assert_rc(0, weft_post(rt, &p));
	for (int i = 0; i < LOW_TASKS; i++) {
		assert_rc(0, weft_task_init(&low[i], low_task, NULL));
		assert_rc(0, weft_task_set_priority(&low[i], 10));
		assert_rc(0, weft_post(rt, &low[i]));
	}
	assert_rc(0, weft_wait_all(rt));
	assert_true(atomic_load(&urgent_started));
	int late = atomic_load(&low_before_urgent);
	print_message("[ info     ] %d less urgent tasks started after the urgent post\n", late);
	/* A threads worker finishes the batch it holds (at most 16) and the
	 * task it runs first, and every worker may hold one when the urgent
	 * post comes (31 seen at 8 workers under ASan and ctest -j2: more
	 * than one batch). spawn has no batches, but the tasks whose threads
	 * were being created when the urgent post came start after it: how
	 * many grows with the machine's load (34 seen at 4 workers under
	 * ctest -j2). Either bound says the urgent task was not left to the
	 * end (all 200 less urgent ones before it, the finding). */
	if (kernel_threads() && wt_workers(rt) > 1)
		assert_true(late <=
		            (wt.model == WEFT_MODEL_SPAWN ? LOW_TASKS / 2 : 17 * wt_workers(rt)));
	free(low);
	assert_rc(0, weft_rt_destroy(rt));
}

/* ------------------------------------------------------------ (b) */

static _Atomic int order_next;
static int order_a, order_b;
static _Atomic bool a_posted, b_posted;
static weft_task task_a, task_b;

static void record_a(void *arg)
{
	(void)arg;
	order_a = atomic_fetch_add(&order_next, 1);
}

static void record_b(void *arg)
{
	(void)arg;
	order_b = atomic_fetch_add(&order_next, 1);
}

/* Posts A, then computes until the main thread has posted B. */
static void poster_of_a(void *arg)
{
	weft_rt *rt = arg;
	WT_CHECK_RC(0, weft_task_init(&task_a, record_a, NULL));
	WT_CHECK_RC(0, weft_post(rt, &task_a));
	atomic_store(&a_posted, true);
	double give_up = wt_now() + WT_PATIENCE_S;
	while (!atomic_load(&b_posted) && wt_now() < give_up)
		;
}

/* Finding (b): a task posts A; after that post returned the main thread
 * posts B; with one worker A runs first under threads and spawn (fifo, and
 * priority with equal priorities), as the docs promise. The fiber models
 * keep it too (A runs when its poster returns, before the next pick). */
static void post_order_one_worker(void)
{
	for (int policy = 0; policy < 2; policy++) {
		weft_config cfg;
		wt_config(&cfg);
		cfg.policy = policy ? WEFT_POLICY_PRIORITY : WEFT_POLICY_FIFO;
		weft_rt *rt = wt_create(&cfg);
		for (int round = 0; round < 20; round++) {
			atomic_store(&order_next, 0);
			atomic_store(&a_posted, false);
			atomic_store(&b_posted, false);
			weft_task t;
			assert_rc(0, weft_task_init(&t, poster_of_a, rt));
			assert_rc(0, weft_post(rt, &t));
			double give_up = wt_now() + WT_PATIENCE_S;
			while (!atomic_load(&a_posted) && wt_now() < give_up)
				wt_sleep_ms(0);
			assert_true(atomic_load(&a_posted));
			assert_rc(0, weft_task_init(&task_b, record_b, NULL));
			assert_rc(0, weft_post(rt, &task_b));
			atomic_store(&b_posted, true);
			assert_rc(0, weft_wait_all(rt));
			if (wt_workers(rt) == 1 && order_a > order_b)
				fail_msg("%s: B, posted after A's post returned, ran first (round "
				         "%d)",
				         weft_policy_name(cfg.policy), round);
		}
		assert_rc(0, weft_rt_destroy(rt));
	}
}

/* ------------------------------------------------------------ warning */

static char warned[512];
static _Atomic int warnings;

static void capture_log(int level, const char *msg, void *ctx)
{
	(void)ctx;
	if (level == WEFT_LOG_WARN && strstr(msg, "likely a deadlock") &&
	    atomic_fetch_add(&warnings, 1) == 0)
		snprintf(warned, sizeof(warned), "%s", msg);
}

static void sem_waiter_timed(void *arg)
{
	(void)arg;
	int rc = weft_sem_wait_until(&sem, weft_clock_ns() + (int64_t)(WT_PATIENCE_S * 1e9));
	WT_CHECK(rc == 0 || rc == WEFT_ETIMEDOUT);
	atomic_fetch_add(&released, 1);
}

static void sem_poster_all(void *arg)
{
	(void)arg;
	for (int i = 0; i < 64; i++)
		WT_CHECK_RC(0, weft_sem_post(&sem));
}

/* What compensation cannot cure is still said, with the reason: with
 * WEFT_STANDINS=0 every worker waits (with a deadline far away: a wait
 * with one is compensated and watched too) for a task still queued, and
 * after a second weft says why no stand-in runs it; then the main thread
 * releases them. Kernel-thread models only (the fiber models park). */
static void cannot_cure_warns(void)
{
	if (!kernel_threads())
		WT_SKIP("the fiber models park: nothing to compensate");
	setenv("WEFT_STANDINS", "0", 1);
	weft_rt *rt = wt_create_default();
	unsetenv("WEFT_STANDINS");
	atomic_store(&warnings, 0);
	warned[0] = '\0';
	assert_rc(0, weft_set_log(capture_log, NULL));
	assert_rc(0, weft_sem_init(&sem, 0));
	int n = wt_workers(rt);
	atomic_store(&released, 0);
	weft_task *t = calloc((size_t)n + 1, sizeof(*t));
	assert_non_null(t);
	for (int i = 0; i < n; i++) {
		assert_rc(0, weft_task_init(&t[i], sem_waiter_timed, NULL));
		assert_rc(0, weft_post(rt, &t[i]));
	}
	assert_rc(0, weft_task_init(&t[n], sem_poster_all, NULL));
	assert_rc(0, weft_post(rt, &t[n]));
	double give_up = wt_now() + WT_PATIENCE_S;
	while (atomic_load(&warnings) == 0 && wt_now() < give_up)
		wt_sleep_ms(10);
	for (int i = 0; i < n; i++)
		assert_rc(0, weft_sem_post(&sem));
	assert_rc(0, weft_wait_all(rt));
	assert_rc(0, weft_set_log(NULL, NULL));
	weft_stats s;
	assert_rc(0, weft_stats_get(rt, &s));
	assert_int_equal(s.standins, 0);
	assert_rc(0, weft_rt_destroy(rt));
	free(t);
	assert_int_equal(atomic_load(&warnings), 1);
	if (!strstr(warned, "compensation is off (WEFT_STANDINS=0)"))
		fail_msg("the warning does not say why: %s", warned);
}

WT_CASES(WT_CASE(chan_pair), WT_CASE(cond_released_later), WT_CASE(sem_released_later),
         WT_CASE(pipeline_four), WT_CASE(priority_with_standins), WT_CASE(standins_retire),
         WT_CASE(urgent_from_task), WT_CASE(post_order_one_worker), WT_CASE(cannot_cure_warns));
