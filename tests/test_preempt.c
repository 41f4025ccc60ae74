/* Quanta, preemption and the psjf/mlfq policies.
 *
 * Policy order is checked on the ready queue itself with scripted charges
 * (deterministic); preemption end to end on the fibers model: compute-bound
 * fibers that never yield all progress, fibers hammering malloc and stdio
 * are never switched inside libc (no deadlock, no corruption under ASan),
 * and weft's own locks are never held across a preemption.
 *
 * ThreadSanitizer delivers asynchronous signals only at its own safe points
 * (interceptors), so a compute loop is never interrupted under it and a
 * handler that switches fibers is outside what it models: the end-to-end
 * cases skip under TSan (docs/fibers.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/internal.h"
#include "harness.h"

#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif
#ifndef UNDER_TSAN
#define UNDER_TSAN 0
#endif

#define SKIP_UNDER_TSAN()                                                            \
	do {                                                                         \
		if (UNDER_TSAN) {                                                    \
			fprintf(stderr, "preemption is not exercised under TSan\n"); \
			skip();                                                      \
		}                                                                    \
	} while (0)

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void nothing(void *arg)
{
	(void)arg;
}

static weft__readyq queue(weft_policy policy, unsigned levels)
{
	weft_config cfg;
	weft_config_init(&cfg);
	cfg.policy = policy;
	cfg.mlfq_levels = levels;
	weft__readyq q;
	weft__readyq_init(&q, &cfg);
	return q;
}

static void init_tasks(weft_task *t, int n)
{
	for (int i = 0; i < n; i++)
		assert_rc(0, weft_task_init(&t[i], nothing, (void *)(intptr_t)i));
}

static int id(const weft_task *t)
{
	return (int)(intptr_t)t->arg_;
}

/* ------------------------------------------------------------ psjf */

/* Least quanta first; among equals, the one queued first; a job charged a
 * quantum goes behind everyone with fewer. */
static void psjf_order(void)
{
	weft__readyq q = queue(WEFT_POLICY_PSJF, 0);
	weft_task t[4];
	init_tasks(t, 4);
	for (int i = 0; i < 4; i++)
		weft__readyq_push(&q, &t[i]);
	/* 0 runs a quantum and is preempted; so does 1, twice. */
	weft_task *r = weft__readyq_pop(&q);
	assert_int_equal(id(r), 0);
	q.ops->charge(&q, r);
	weft__readyq_push(&q, r);
	r = weft__readyq_pop(&q);
	assert_int_equal(id(r), 1);
	q.ops->charge(&q, r);
	q.ops->charge(&q, r);
	weft__readyq_push(&q, r);
	static const int want[] = {2, 3, 0, 1};
	for (int i = 0; i < 4; i++)
		assert_int_equal(id(weft__readyq_pop(&q)), want[i]);
	assert_null(weft__readyq_pop(&q));
	/* A yield (push without a charge) keeps its place among equals. */
	weft__readyq_push(&q, &t[2]);
	weft__readyq_push(&q, &t[3]);
	assert_true(q.ops->more_urgent(&q, &t[2], &t[0]));
	assert_false(q.ops->more_urgent(&q, &t[0], &t[2]));
}

/* ------------------------------------------------------------ mlfq */

static void mlfq_order(void)
{
	weft__readyq q = queue(WEFT_POLICY_MLFQ, 3);
	weft_task t[5];
	init_tasks(t, 5);
	t[3].priority_ = 2;  /* starts at the bottom */
	t[4].priority_ = 99; /* clamped to the bottom */
	for (int i = 0; i < 5; i++)
		weft__readyq_push(&q, &t[i]);
	/* Round robin at the top: 0, 1, 2; 0 uses up its quantum: level 1. */
	weft_task *r = weft__readyq_pop(&q);
	assert_int_equal(id(r), 0);
	q.ops->charge(&q, r);
	assert_int_equal(r->level_, 1);
	weft__readyq_push(&q, r);
	r = weft__readyq_pop(&q);
	assert_int_equal(id(r), 1);
	weft__readyq_push(&q, r); /* yielded early: stays on top, at the tail */
	static const int want[] = {2, 1, 0, 3, 4};
	for (int i = 0; i < 5; i++)
		assert_int_equal(id(weft__readyq_pop(&q)), want[i]);
	/* Charged twice more, 0 stays at the bottom level. */
	q.ops->charge(&q, &t[0]);
	q.ops->charge(&q, &t[0]);
	assert_int_equal(t[0].level_, 2);
}

/* The boost lifts queued and not-queued tasks to the top, in queue order. */
static void mlfq_boost(void)
{
	weft__readyq q = queue(WEFT_POLICY_MLFQ, 4);
	weft_task t[4];
	init_tasks(t, 4);
	t[0].priority_ = 3;
	t[1].priority_ = 1;
	t[2].priority_ = 2;
	t[3].priority_ = 3;
	for (int i = 0; i < 3; i++)
		weft__readyq_push(&q, &t[i]);
	weft__readyq_push(&q, &t[3]);
	weft_task *running = weft__readyq_pop(&q); /* 1, from level 1 */
	assert_int_equal(id(running), 1);
	q.ops->boost(&q);
	/* Everything queued is now on level 0, lower levels after higher. */
	weft_task *first = weft__readyq_pop(&q);
	assert_int_equal(id(first), 2);
	weft__readyq_push(&q, running); /* boosted while running: top, tail */
	static const int want[] = {0, 3, 1};
	for (int i = 0; i < 3; i++) {
		weft_task *r = weft__readyq_pop(&q);
		assert_int_equal(id(r), want[i]);
		assert_int_equal(r->level_, 0);
	}
	weft__readyq_push(&q, first);
	assert_int_equal(first->level_, 0);
}

/* weft__task_request_level (worker_setschedprio) applies at the next push. */
static void mlfq_request(void)
{
	weft__readyq q = queue(WEFT_POLICY_MLFQ, 4);
	weft_task t[2];
	init_tasks(t, 2);
	weft__readyq_push(&q, &t[0]);
	weft__readyq_push(&q, &t[1]);
	weft__task_request_level(&t[0], 3);
	weft_task *r = weft__readyq_pop(&q);
	assert_int_equal(id(r), 0); /* queued before the request */
	weft__readyq_push(&q, r);
	assert_int_equal(id(weft__readyq_pop(&q)), 1);
	r = weft__readyq_pop(&q);
	assert_int_equal(id(r), 0);
	assert_int_equal(r->level_, 3);
}

/* ------------------------------------------------------------ end to end */

static weft_rt *fibers_rt(weft_policy policy, weft_preempt preempt, uint32_t quantum_us)
{
	weft_config cfg;
	wt_config(&cfg);
	cfg.model = WEFT_MODEL_FIBERS;
	cfg.policy = policy;
	cfg.preempt = preempt;
	cfg.quantum_us = quantum_us;
	cfg.stack_size = 65536;
	return wt_create(&cfg);
}

enum { SPINNERS = 3, ROUNDS = 8 };
static _Atomic int round_of[SPINNERS];

/* Never yields: round r may end only once every spinner has reached r, so
 * the fibers must take turns ROUNDS times, which only preemption makes
 * happen. */
static void spinner(void *arg)
{
	int me = (int)(intptr_t)arg;
	for (int r = 1; r <= ROUNDS; r++) {
		atomic_store_explicit(&round_of[me], r, memory_order_relaxed);
		for (int other = 0; other < SPINNERS; other++)
			while (atomic_load_explicit(&round_of[other], memory_order_relaxed) < r)
				;
	}
}

static void spin_all(weft_policy policy)
{
	weft_rt *rt = fibers_rt(policy, WEFT_PREEMPT_TIMER, 1000);
	weft_task t[SPINNERS];
	for (int i = 0; i < SPINNERS; i++) {
		atomic_store(&round_of[i], 0);
		assert_rc(0, weft_task_init(&t[i], spinner, (void *)(intptr_t)i));
		assert_rc(0, weft_post(rt, &t[i]));
	}
	assert_rc(0, weft_wait_all(rt));
	weft_stats st;
	assert_rc(0, weft_stats_get(rt, &st));
	assert_true(st.preemptions >= ROUNDS);
	assert_rc(0, weft_rt_destroy(rt));
}

static void compute_bound_fifo(void)
{
	SKIP_UNDER_TSAN();
	spin_all(WEFT_POLICY_FIFO);
}

static void compute_bound_psjf(void)
{
	SKIP_UNDER_TSAN();
	spin_all(WEFT_POLICY_PSJF);
}

static void compute_bound_mlfq(void)
{
	SKIP_UNDER_TSAN();
	spin_all(WEFT_POLICY_MLFQ);
}

/* Cooperative stays the default: with preemption off a spinner is never
 * switched out. */
static _Atomic int coop_flag;

static void waits_for_flag(void *arg)
{
	(void)arg;
	int64_t until = now_ns() + 200 * 1000000LL;
	while (!atomic_load(&coop_flag) && now_ns() < until)
		;
	WT_CHECK(!atomic_load(&coop_flag)); /* nobody ran meanwhile */
}

static void sets_flag(void *arg)
{
	(void)arg;
	atomic_store(&coop_flag, 1);
}

static void cooperative_default(void)
{
	weft_rt *rt = fibers_rt(WEFT_POLICY_FIFO, WEFT_PREEMPT_OFF, 1000);
	atomic_store(&coop_flag, 0);
	weft_task a, b;
	assert_rc(0, weft_task_init(&a, waits_for_flag, NULL));
	assert_rc(0, weft_task_init(&b, sets_flag, NULL));
	assert_rc(0, weft_post(rt, &a));
	assert_rc(0, weft_post(rt, &b));
	assert_rc(0, weft_wait_all(rt));
	assert_int_equal(atomic_load(&coop_flag), 1);
	weft_stats st;
	assert_rc(0, weft_stats_get(rt, &st));
	assert_int_equal(st.preemptions, 0);
	assert_rc(0, weft_rt_destroy(rt));
}

/* Fibers that spend their time in malloc, free and stdio (locks inside
 * libc) under a short quantum. A preemption inside libc would leave a lock
 * held by a switched-out fiber and the next one would deadlock or corrupt
 * the heap; the test must end, with every fiber having progressed. The
 * duration is WEFT_TEST_LIBC_SECONDS (default 10). */
enum { LIBC_FIBERS = 4 };
static _Atomic long libc_rounds[LIBC_FIBERS];
static int64_t libc_deadline;
static FILE *devnull;

static void libc_hammer(void *arg)
{
	int me = (int)(intptr_t)arg;
	unsigned seed = (unsigned)me * 7919u + 1;
	while (now_ns() < libc_deadline) {
		size_t n = 16 + rand_r(&seed) % 4096;
		char *p = malloc(n);
		WT_CHECK(p != NULL);
		if (!p)
			return;
		memset(p, me, n);
		fprintf(devnull, "fiber %d round %ld size %zu %s\n", me, libc_rounds[me], n,
		        n > 2048 ? "big" : "small");
		char line[64];
		snprintf(line, sizeof(line), "%d:%zu", me, n);
		char *copy = strdup(line);
		WT_CHECK(copy && p[n - 1] == (char)me);
		free(copy);
		free(p);
		atomic_fetch_add_explicit(&libc_rounds[me], 1, memory_order_relaxed);
	}
}

static void libc_safe_points(void)
{
	SKIP_UNDER_TSAN();
	const char *env = getenv("WEFT_TEST_LIBC_SECONDS");
	int seconds = env ? atoi(env) : 10;
	devnull = fopen("/dev/null", "w");
	assert_non_null(devnull);
	weft_rt *rt = fibers_rt(WEFT_POLICY_FIFO, WEFT_PREEMPT_TIMER, 200);
	libc_deadline = now_ns() + (int64_t)seconds * 1000000000;
	weft_task t[LIBC_FIBERS];
	for (int i = 0; i < LIBC_FIBERS; i++) {
		atomic_store(&libc_rounds[i], 0);
		assert_rc(0, weft_task_init(&t[i], libc_hammer, (void *)(intptr_t)i));
		assert_rc(0, weft_post(rt, &t[i]));
	}
	/* Every fiber progresses while the others still run: preemption, not
	 * one fiber after the other. */
	wt_sleep_ms(seconds * 500);
	for (int i = 0; i < LIBC_FIBERS; i++)
		assert_true(atomic_load(&libc_rounds[i]) > 0);
	assert_rc(0, weft_wait_all(rt));
	weft_stats st;
	assert_rc(0, weft_stats_get(rt, &st));
	assert_true(st.preemptions > 0);
	assert_rc(0, weft_rt_destroy(rt));
	fclose(devnull);
}

/* weft's own critical sections under preemption: fibers that never yield
 * take a weft_mutex, post and wait for tasks and pass a semaphore, with a
 * 100 us quantum. A preemption inside weft (a lock held, the ready queue
 * half-updated) would deadlock or lose a task. */
enum { SYNC_FIBERS = 4, SYNC_ROUNDS = 20000 };
static weft_mutex sync_mutex;
static weft_sem sync_sem;
static long sync_counter;
static _Atomic long children_ran;

static void child(void *arg)
{
	(void)arg;
	atomic_fetch_add(&children_ran, 1);
}

static void sync_hammer(void *arg)
{
	(void)arg;
	int rounds = WT_SANITIZER ? SYNC_ROUNDS / 10 : SYNC_ROUNDS;
	for (int i = 0; i < rounds; i++) {
		WT_CHECK_RC(0, weft_mutex_lock(&sync_mutex));
		long v = sync_counter;
		for (volatile int spin = 0; spin < 50; spin++)
			;
		sync_counter = v + 1;
		WT_CHECK_RC(0, weft_mutex_unlock(&sync_mutex));
		if (i % 64 == 0) {
			weft_task c;
			WT_CHECK_RC(0, weft_task_init(&c, child, NULL));
			WT_CHECK_RC(0, weft_post(weft_rt_current(), &c));
			WT_CHECK_RC(0, weft_wait(&c));
			WT_CHECK_RC(0, weft_sem_post(&sync_sem));
			WT_CHECK_RC(0, weft_sem_wait(&sync_sem));
		}
	}
}

static void weft_critical_sections(void)
{
	SKIP_UNDER_TSAN();
	weft_rt *rt = fibers_rt(WEFT_POLICY_MLFQ, WEFT_PREEMPT_TIMER, 100);
	assert_rc(0, weft_mutex_init(&sync_mutex));
	assert_rc(0, weft_sem_init(&sync_sem, 0));
	sync_counter = 0;
	atomic_store(&children_ran, 0);
	weft_task t[SYNC_FIBERS];
	for (int i = 0; i < SYNC_FIBERS; i++) {
		assert_rc(0, weft_task_init(&t[i], sync_hammer, NULL));
		assert_rc(0, weft_post(rt, &t[i]));
	}
	assert_rc(0, weft_wait_all(rt));
	int rounds = WT_SANITIZER ? SYNC_ROUNDS / 10 : SYNC_ROUNDS;
	assert_int_equal(sync_counter, (long)SYNC_FIBERS * rounds);
	assert_int_equal(atomic_load(&children_ran), SYNC_FIBERS * ((rounds + 63) / 64));
	assert_rc(0, weft_rt_destroy(rt));
}

/* Waits under preemption: pairs of fibers pass a token back and forth
 * through semaphores and a channel with a 100 us quantum. A tick may land
 * between a fiber queueing itself as a waiter and parking; the wake-up that
 * comes while it sits preempted in the ready queue must not be lost (it
 * would then park for ever and the test would time out). */
enum { PING_PAIRS = 2, PING_ROUNDS = 30000 };
static weft_sem ping_sem[PING_PAIRS][2];
static weft_chan ping_chan[PING_PAIRS];
static long ping_slots[PING_PAIRS][4];

static weft_rt *ping_rt;

static void spin_a_little(void)
{
	for (volatile int i = 0; i < 3000; i++)
		;
}

static int64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Spins for ns of this thread's CPU time, nearly all of it in the test's
 * own code (a tick in the clock's vDSO is not a safe point). CPU time, not
 * wall time: on a crowded machine a wall-clock window can pass while the
 * worker waits for a CPU, and the ticks that land then find a fiber that
 * has not run a whole quantum (CI saw no preemption at all once). */
static void spin_cpu(int64_t ns)
{
	int64_t until = thread_cpu_ns() + ns;
	do
		spin_a_little();
	while (thread_cpu_ns() < until);
}

static uint64_t preemptions_so_far(void)
{
	weft_stats st;
	WT_CHECK_RC(0, weft_stats_get(ping_rt, &st));
	return st.preemptions;
}

static void pinger(void *arg)
{
	int pair = (int)(intptr_t)arg / 2, side = (int)(intptr_t)arg % 2;
	for (int i = 0; i < PING_ROUNDS; i++) {
		spin_a_little();
		if (i % 1024 == 0) /* now and then longer than a quantum: preempted */
			spin_cpu(400000);
		if (side == 0) {
			WT_CHECK_RC(0, weft_sem_post(&ping_sem[pair][1]));
			WT_CHECK_RC(0, weft_sem_wait(&ping_sem[pair][0]));
			long v = i;
			WT_CHECK_RC(0, weft_chan_send(&ping_chan[pair], &v));
		} else {
			WT_CHECK_RC(0, weft_sem_wait(&ping_sem[pair][1]));
			WT_CHECK_RC(0, weft_sem_post(&ping_sem[pair][0]));
			long v = -1;
			WT_CHECK_RC(0, weft_chan_recv(&ping_chan[pair], &v));
			WT_CHECK(v == i);
		}
	}
	/* The rounds are the test; the assertion that a tick preempted one is
	 * its proof that they ran under preemption, which a crowded machine can
	 * starve of whole quanta: spin on until one is on record (a few ms
	 * unless something is broken, then the bound and the assertion). */
	for (int64_t patience = now_ns() + 10 * 1000000000LL;
	     preemptions_so_far() == 0 && now_ns() < patience;)
		spin_cpu(200000);
}

static void waits_under_preemption(void)
{
	SKIP_UNDER_TSAN();
	weft_rt *rt = fibers_rt(WEFT_POLICY_FIFO, WEFT_PREEMPT_TIMER, 100);
	ping_rt = rt;
	weft_task t[2 * PING_PAIRS];
	for (int p = 0; p < PING_PAIRS; p++) {
		assert_rc(0, weft_sem_init(&ping_sem[p][0], 0));
		assert_rc(0, weft_sem_init(&ping_sem[p][1], 0));
		assert_rc(0, weft_chan_init(&ping_chan[p], sizeof(long), 1, ping_slots[p]));
	}
	for (int i = 0; i < 2 * PING_PAIRS; i++) {
		assert_rc(0, weft_task_init(&t[i], pinger, (void *)(intptr_t)i));
		assert_rc(0, weft_post(rt, &t[i]));
	}
	assert_rc(0, weft_wait_all(rt));
	weft_stats st;
	assert_rc(0, weft_stats_get(rt, &st));
	assert_true(st.preemptions > 0);
	assert_rc(0, weft_rt_destroy(rt));
}

/* No lock convoy: fibers that take a weft_mutex around a tiny critical
 * section between stretches of work, under a 100 us quantum. A fiber
 * preempted while holding the mutex would make the others queue on it, and
 * FIFO hand-off then costs a switch per lock for the rest of the run
 * (seed 004's external_cal did this: millions of switches). Preemption
 * must wait for the holder to let go, so switches stay near the number of
 * preemptions. */
enum { CONVOY_FIBERS = 4 };
static weft_mutex convoy_mutex;
static unsigned convoy_sum;
static int64_t convoy_deadline;

/* The work between locks is in libc (as external_cal's fscanf is), where
 * ticks are deferred: the ticks that do land in the fiber's own code land
 * mostly in and around the mutex, where a careless rule would preempt a
 * holder. */
static void convoy_worker(void *arg)
{
	(void)arg;
	char from[512], to[512];
	memset(from, 'a', sizeof(from));
	from[sizeof(from) - 1] = '\0';
	while (now_ns() < convoy_deadline) {
		for (int i = 0; i < 200; i++) {
			snprintf(to, sizeof(to), "%s%d", from + 400, i);
			WT_CHECK_RC(0, weft_mutex_lock(&convoy_mutex));
			convoy_sum += (unsigned char)to[0];
			WT_CHECK_RC(0, weft_mutex_unlock(&convoy_mutex));
		}
	}
}

static void no_convoy(void)
{
	SKIP_UNDER_TSAN();
	weft_rt *rt = fibers_rt(WEFT_POLICY_MLFQ, WEFT_PREEMPT_TIMER, 100);
	assert_rc(0, weft_mutex_init(&convoy_mutex));
	convoy_deadline = now_ns() + 500 * 1000000LL;
	weft_task t[CONVOY_FIBERS];
	for (int i = 0; i < CONVOY_FIBERS; i++) {
		assert_rc(0, weft_task_init(&t[i], convoy_worker, NULL));
		assert_rc(0, weft_post(rt, &t[i]));
	}
	assert_rc(0, weft_wait_all(rt));
	weft_stats st;
	assert_rc(0, weft_stats_get(rt, &st));
	assert_true(st.preemptions > 0);
	/* Each preemption is a switch out and one in; a convoy adds a switch
	 * per lock (hundreds of thousands here). */
	if (getenv("WT_VERBOSE") || st.switches > 4 * st.preemptions + 100)
		fprintf(stderr, "%llu switches for %llu preemptions\n",
		        (unsigned long long)st.switches, (unsigned long long)st.preemptions);
	assert_true(st.switches <= 4 * st.preemptions + 100);
	assert_rc(0, weft_rt_destroy(rt));
}

/* A tick charges the task whose code runs, never one that just finished:
 * its owner frees it the moment its wait returns (a tick in that window
 * read freed memory in psjf/mlfq's charge, seen under TSan in CI). Short
 * tasks ending at every phase of a 100 us quantum, each freed at once. */
enum { SHORT_TASKS = 4000 };

static void short_spin(void *arg)
{
	(void)arg;
	int64_t until = now_ns() + 5000 + rand() % 50000;
	while (now_ns() < until)
		;
}

static void charges_only_live_tasks(weft_policy policy)
{
	weft_rt *rt = fibers_rt(policy, WEFT_PREEMPT_OFF, WEFT__MIN_QUANTUM_US);
	for (int i = 0; i < SHORT_TASKS; i++) {
		weft_task *t = malloc(sizeof *t);
		assert_non_null(t);
		assert_rc(0, weft_task_init(t, short_spin, NULL));
		assert_rc(0, weft_post(rt, t));
		assert_rc(0, weft_wait(t));
		memset(t, 0xa5, sizeof *t); /* a late charge reads garbage */
		free(t);
	}
	assert_rc(0, weft_rt_destroy(rt));
}

static void charges_psjf(void)
{
	charges_only_live_tasks(WEFT_POLICY_PSJF);
}

static void charges_mlfq(void)
{
	charges_only_live_tasks(WEFT_POLICY_MLFQ);
}

/* ------------------------------------------------------------ config */

static void env_values(void)
{
	setenv("WEFT_PREEMPT", "sometimes", 1);
	weft_config cfg;
	wt_config(&cfg);
	cfg.model = WEFT_MODEL_FIBERS;
	weft_rt *rt = NULL;
	wt_capture_begin();
	int rc = weft_rt_create(&rt, &cfg);
	const char *err = wt_capture_end();
	assert_rc(WEFT_EINVAL, rc);
	assert_non_null(strstr(err, "WEFT_PREEMPT"));
	assert_non_null(strstr(err, "timer"));
	setenv("WEFT_PREEMPT", "timer", 1);
	setenv("WEFT_QUANTUM_US", "5", 1); /* below the minimum */
	wt_capture_begin();
	rc = weft_rt_create(&rt, &cfg);
	err = wt_capture_end();
	assert_rc(WEFT_EINVAL, rc);
	assert_non_null(strstr(err, "WEFT_QUANTUM_US"));
	setenv("WEFT_QUANTUM_US", "2000", 1);
	setenv("WEFT_POLICY", "mlfq", 1);
	setenv("WEFT_MLFQ_LEVELS", "8", 1);
	setenv("WEFT_MLFQ_BOOST_US", "40000", 1);
	rt = wt_create(&cfg);
	weft_config eff;
	assert_rc(0, weft_rt_config(rt, &eff));
	assert_int_equal(eff.preempt, WEFT_PREEMPT_TIMER);
	assert_int_equal(eff.quantum_us, 2000);
	assert_int_equal(eff.policy, WEFT_POLICY_MLFQ);
	assert_int_equal(eff.mlfq_levels, 8);
	assert_int_equal(eff.mlfq_boost_us, 40000);
	assert_rc(0, weft_rt_destroy(rt));
	setenv("WEFT_MLFQ_LEVELS", "65", 1);
	wt_capture_begin();
	rc = weft_rt_create(&rt, &cfg);
	err = wt_capture_end();
	assert_rc(WEFT_EINVAL, rc);
	assert_non_null(strstr(err, "WEFT_MLFQ_LEVELS"));
	unsetenv("WEFT_PREEMPT");
	unsetenv("WEFT_QUANTUM_US");
	unsetenv("WEFT_POLICY");
	unsetenv("WEFT_MLFQ_LEVELS");
	unsetenv("WEFT_MLFQ_BOOST_US");
	/* Out-of-range fields in code are misuse. */
	cfg.quantum_us = 1;
	assert_rc(WEFT_EINVAL, weft_rt_create(&rt, &cfg));
	cfg.quantum_us = 0;
	cfg.preempt = (weft_preempt)7;
	assert_rc(WEFT_EINVAL, weft_rt_create(&rt, &cfg));
	assert_string_equal(weft_preempt_name(WEFT_PREEMPT_TIMER), "timer");
	assert_null(weft_preempt_name((weft_preempt)9));
	assert_string_equal(weft_policy_name(WEFT_POLICY_PSJF), "psjf");
	assert_string_equal(weft_policy_name(WEFT_POLICY_MLFQ), "mlfq");
}

WT_CASES(WT_CASE(psjf_order), WT_CASE(mlfq_order), WT_CASE(mlfq_boost), WT_CASE(mlfq_request),
         WT_CASE(compute_bound_fifo), WT_CASE(compute_bound_psjf), WT_CASE(compute_bound_mlfq),
         WT_CASE(cooperative_default), WT_CASE(libc_safe_points), WT_CASE(weft_critical_sections),
         WT_CASE(waits_under_preemption), WT_CASE(no_convoy), WT_CASE(charges_psjf),
         WT_CASE(charges_mlfq), WT_CASE(env_values));
