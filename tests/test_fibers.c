/* What is particular to the fibers model (M:1): the policies' order on its
 * one worker (yields), the random policy's replay and virtual clock, stack
 * overflow and stack size, many fibers parked at once, and waits that park
 * without spinning. What every model must do (exactly once, the primitives,
 * sleeps, fds, weft_blocking, waits inside tasks, destroy) is in the MATRIX
 * tests (sched, sync, blocking, stress, forkjoin), which run under fibers
 * too. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fiber/engine.h"
#include "fiber/symbolize.h"
#include "harness.h"

static weft_rt *create(weft_policy policy)
{
	weft_config cfg;
	wt_config(&cfg);
	cfg.model = WEFT_MODEL_FIBERS;
	cfg.policy = policy;
	cfg.stack_size = 32768;
	return wt_create(&cfg);
}

static weft_task *tasks(int n)
{
	weft_task *t = calloc((size_t)n, sizeof(*t));
	assert_non_null(t);
	return t;
}

/* ------------------------------------------------------------ order */

static int order[64], order_pos;

static void yielder(void *arg)
{
	for (int i = 0; i < 3; i++) {
		order[order_pos++] = (int)(intptr_t)arg;
		WT_CHECK_RC(0, weft_yield());
	}
}

static weft_task pair[2];

/* Posting from inside a fiber queues at once, so both yielders are queued
 * before either runs, whatever the timing of the test thread. */
static void post_pair(void *arg)
{
	(void)arg;
	for (int i = 0; i < 2; i++) {
		WT_CHECK_RC(0, weft_task_init(&pair[i], yielder, (void *)(intptr_t)i));
		WT_CHECK_RC(0, weft_post(weft_rt_current(), &pair[i]));
	}
}

static void yield_interleave(void)
{
	weft_rt *rt = create(WEFT_POLICY_FIFO);
	weft_config eff;
	assert_rc(0, weft_rt_config(rt, &eff));
	assert_int_equal(eff.workers, 1);
	order_pos = 0;
	weft_task root;
	assert_rc(0, weft_task_init(&root, post_pair, NULL));
	assert_rc(0, weft_post(rt, &root));
	assert_rc(0, weft_wait_all(rt));
	static const int want[] = {0, 1, 0, 1, 0, 1};
	assert_int_equal(order_pos, 6);
	for (int i = 0; i < 6; i++)
		assert_int_equal(order[i], want[i]);
	assert_rc(0, weft_rt_destroy(rt));
}

/* Under priority a yield lets only tasks as urgent as the caller run. */
static int urgent_log[8], urgent_n;
static weft_task urgent_later, urgent_peer;

static void log_mark(void *arg)
{
	urgent_log[urgent_n++] = (int)(intptr_t)arg;
}

static void urgent_yielder(void *arg)
{
	(void)arg;
	weft_rt *rt = weft_rt_current();
	WT_CHECK_RC(0, weft_task_init(&urgent_later, log_mark, (void *)(intptr_t)2));
	WT_CHECK_RC(0, weft_task_set_priority(&urgent_later, 5));
	WT_CHECK_RC(0, weft_post(rt, &urgent_later));
	WT_CHECK_RC(0, weft_task_init(&urgent_peer, log_mark, (void *)(intptr_t)1));
	WT_CHECK_RC(0, weft_post(rt, &urgent_peer)); /* priority 0, as the caller */
	WT_CHECK_RC(0, weft_yield());                /* the peer runs, later waits */
	urgent_log[urgent_n++] = 0;
	WT_CHECK_RC(0, weft_yield()); /* only later is queued, less urgent: no switch */
	urgent_log[urgent_n++] = 3;
}

static void yield_respects_priority(void)
{
	weft_rt *rt = create(WEFT_POLICY_PRIORITY);
	urgent_n = 0;
	weft_task t;
	assert_rc(0, weft_task_init(&t, urgent_yielder, NULL));
	assert_rc(0, weft_post(rt, &t));
	assert_rc(0, weft_wait_all(rt));
	static const int want[] = {1, 0, 3, 2};
	assert_int_equal(urgent_n, 4);
	for (int i = 0; i < 4; i++)
		assert_int_equal(urgent_log[i], want[i]);
	assert_rc(0, weft_rt_destroy(rt));
}

/* The random policy replays: same seed, same interleaving. */
enum { RND_TASKS = 40, RND_STEPS = 3 };
static int rnd_trace[RND_TASKS * RND_STEPS + 8], rnd_n;
static weft_task rnd_tasks[RND_TASKS];

static void rnd_step(void *arg)
{
	for (int i = 0; i < RND_STEPS; i++) {
		rnd_trace[rnd_n++] = (int)(intptr_t)arg;
		WT_CHECK_RC(0, weft_yield());
	}
}

/* Tasks i = 0 .. n-1 running fn((void *)i), posted by a root task from
 * inside the runtime so that all are queued before any runs: posts from
 * another thread arrive in real time, which no seed (or clock) replays. */
typedef struct batch {
	weft_task *tasks;
	int n;
	weft_fn fn;
} batch;

static void post_batch(void *arg)
{
	batch *b = arg;
	for (int i = 0; i < b->n; i++) {
		WT_CHECK_RC(0, weft_task_init(&b->tasks[i], b->fn, (void *)(intptr_t)i));
		WT_CHECK_RC(0, weft_post(weft_rt_current(), &b->tasks[i]));
	}
}

/* Runs the batch to its end on the fibers model under random with seed
 * (0: weft picks one, which the statistics must show). */
static void run_random(uint64_t seed, batch *b)
{
	weft_config cfg;
	wt_config(&cfg);
	cfg.model = WEFT_MODEL_FIBERS;
	cfg.policy = WEFT_POLICY_RANDOM;
	cfg.seed = seed;
	weft_rt *rt = wt_create(&cfg);
	weft_stats st;
	assert_rc(0, weft_stats_get(rt, &st));
	assert_true(seed ? st.seed == seed : st.seed != 0);
	weft_task root;
	assert_rc(0, weft_task_init(&root, post_batch, b));
	assert_rc(0, weft_post(rt, &root));
	assert_rc(0, weft_wait_all(rt));
	assert_rc(0, weft_rt_destroy(rt));
}

static void random_run(uint64_t seed, int *trace)
{
	rnd_n = 0;
	run_random(seed, &(batch){rnd_tasks, RND_TASKS, rnd_step});
	assert_int_equal(rnd_n, RND_TASKS * RND_STEPS);
	memcpy(trace, rnd_trace, sizeof(int) * RND_TASKS * RND_STEPS);
}

static void random_replay(void)
{
	static int a[RND_TASKS * RND_STEPS], b[RND_TASKS * RND_STEPS], c[RND_TASKS * RND_STEPS];
	random_run(12345, a);
	random_run(12345, b);
	random_run(54321, c);
	assert_memory_equal(a, b, sizeof(a));
	assert_memory_not_equal(a, c, sizeof(a));
	int count[RND_TASKS] = {0};
	for (int i = 0; i < RND_TASKS * RND_STEPS; i++)
		count[a[i]]++;
	for (int i = 0; i < RND_TASKS; i++)
		assert_int_equal(count[i], RND_STEPS);
	/* Not the post order: the policy really draws. */
	bool in_order = true;
	for (int i = 1; i < RND_TASKS; i++)
		in_order = in_order && a[i] == a[i - 1] + 1;
	assert_false(in_order);
	random_run(0, c); /* picks a seed itself */

	setenv("WEFT_SEED", "-3", 1);
	weft_config cfg;
	wt_config(&cfg);
	weft_rt *rt = NULL;
	wt_capture_begin();
	int rc = weft_rt_create(&rt, &cfg);
	const char *err = wt_capture_end();
	unsetenv("WEFT_SEED");
	assert_rc(WEFT_EINVAL, rc);
	assert_non_null(strstr(err, "WEFT_SEED"));
}

/* Under random with a chosen seed, sleeps run on a virtual clock: seconds
 * of sleeping take no real time, and the same seed gives the same trace,
 * timing included. */
enum { VS_FIBERS = 8, VS_ROUNDS = 4 };
static int vs_trace[VS_FIBERS * VS_ROUNDS], vs_n;

static void virtual_sleeper(void *arg)
{
	int me = (int)(intptr_t)arg;
	for (int r = 0; r < VS_ROUNDS; r++) {
		/* 0.5 .. 3 s, different per fiber and round */
		int64_t ns = (500 + ((me * 7 + r * 13) % 6) * 500) * 1000000LL;
		WT_CHECK_RC(0, weft_sleep_ns(ns));
		vs_trace[vs_n++] = me * 100 + r;
	}
}

static weft_task vs_tasks[VS_FIBERS];

static void virtual_run(uint64_t seed, int *trace)
{
	vs_n = 0;
	run_random(seed, &(batch){vs_tasks, VS_FIBERS, virtual_sleeper});
	assert_int_equal(vs_n, VS_FIBERS * VS_ROUNDS);
	memcpy(trace, vs_trace, sizeof(vs_trace));
}

static void virtual_clock(void)
{
	static int a[VS_FIBERS * VS_ROUNDS], b[VS_FIBERS * VS_ROUNDS];
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	virtual_run(99, a);
	virtual_run(99, b);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_memory_equal(a, b, sizeof(a));
	/* Each fiber sleeps 2 to 12 virtual seconds; both runs took far less. */
	assert_true(t1.tv_sec - t0.tv_sec < 3);
	/* Wake-ups follow the virtual deadlines: the first to wake is one of
	 * the fibers whose first sleep is the shortest, 0.5 s (0 and 6). */
	assert_true(a[0] == 0 || a[0] == 600);
}

/* Runs body(arg) in a child process with stderr captured; returns what it
 * wrote and its wait status. */
static const char *in_child(void (*body)(int), int arg, int *wstatus)
{
	static char buf[4096];
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(fds[1], 2);
		body(arg);
		_exit(99);
	}
	close(fds[1]);
	size_t n = 0;
	ssize_t r;
	while (n < sizeof(buf) - 1 && (r = read(fds[0], buf + n, sizeof(buf) - 1 - n)) > 0)
		n += (size_t)r;
	buf[n] = '\0';
	close(fds[0]);
	waitpid(pid, wstatus, 0);
	return buf;
}

/* A failing run under random prints its seed: a child process creates a
 * runtime with seed 4242 and exits with status 3 (then 0, and stays
 * silent). */
static void random_then_exit(int status)
{
	weft_config cfg;
	weft_config_init(&cfg);
	cfg.model = WEFT_MODEL_FIBERS;
	cfg.policy = WEFT_POLICY_RANDOM;
	cfg.seed = 4242;
	weft_rt *rt;
	if (weft_rt_create(&rt, &cfg) == 0)
		weft_rt_destroy(rt);
	exit(status);
}

static void seed_on_failure(void)
{
	int st;
	const char *err = in_child(random_then_exit, 3, &st);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 3);
	assert_non_null(strstr(err, "WEFT_SEED=4242"));
	err = in_child(random_then_exit, 0, &st);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_null(strstr(err, "WEFT_SEED"));
}

/* A real overflow: a fiber recursing without end runs into the guard page
 * of its 16 KiB stack; the process says which task overflowed and its stack
 * size, then aborts. */
static weft_task overflowing;

static int recurse(int depth)
{
	volatile char frame[256];
	frame[0] = (char)depth;
	if (depth == INT32_MAX) /* never: 16 KiB run out first */
		return 0;
	return recurse(depth + 1) + frame[0];
}

static void overflow_task(void *arg)
{
	(void)arg;
	recurse(0);
}

static void overflow_child(int unused)
{
	(void)unused;
	weft_config cfg;
	weft_config_init(&cfg);
	cfg.model = WEFT_MODEL_FIBERS;
	cfg.stack_size = 16384;
	weft_rt *rt;
	if (weft_rt_create(&rt, &cfg) != 0)
		_exit(98);
	weft_task_init(&overflowing, overflow_task, NULL);
	weft_post(rt, &overflowing);
	weft_wait(&overflowing);
	_exit(0); /* not reached: the overflow aborts */
}

static void overflow_aborts(void)
{
	int st;
	const char *err = in_child(overflow_child, 0, &st);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
	char want[128], name[32];
	uintptr_t off;
	/* By name where weft can name functions (not the portable build:
	 * fiber/symbolize.h), by address always. */
	if (weft__symbolize((uintptr_t)overflow_task, name, sizeof(name), &off))
		snprintf(want, sizeof(want),
		         "task %p (function overflow_task at %p) overflowed its",
		         (void *)&overflowing, (void *)overflow_task);
	else
		snprintf(want, sizeof(want), "task %p (function %p) overflowed its",
		         (void *)&overflowing, (void *)overflow_task);
	if (!strstr(err, want))
		fprintf(stderr, "child said: %s\n", err);
	assert_non_null(strstr(err, want));
	assert_non_null(strstr(err, "stack"));
}

/* ------------------------------------------------------------ parking */

/* Fibers park on a semaphore; a plain thread wakes them. */
static weft_sem sem;
static _Atomic int woke;

static void sem_waiter(void *arg)
{
	(void)arg;
	WT_CHECK_RC(0, weft_sem_wait(&sem));
	atomic_fetch_add(&woke, 1);
}

static void many_parked(void)
{
	int n = WT_SANITIZER ? 2000 : 20000;
	weft_rt *rt = create(WEFT_POLICY_FIFO);
	assert_rc(0, weft_sem_init(&sem, 0));
	atomic_store(&woke, 0);
	weft_task *t = tasks(n);
	for (int i = 0; i < n; i++) {
		assert_rc(0, weft_task_init(&t[i], sem_waiter, NULL));
		assert_rc(0, weft_post(rt, &t[i]));
	}
	wt_sleep_ms(50);
	assert_int_equal(atomic_load(&woke), 0);
	for (int i = 0; i < n; i++)
		assert_rc(0, weft_sem_post(&sem));
	assert_rc(0, weft_wait_all(rt));
	assert_int_equal(atomic_load(&woke), n);
	assert_rc(0, weft_rt_destroy(rt));
	free(t);
}

/* Parked fibers' records (and so the stack frames under them) are spread
 * over the lines of a page (engine.c's cache colouring): stacks are whole
 * pages apart, and without it every record sat at the same offset of its
 * page, in the same set of each cache. 64 fibers of 32 KiB stacks have 16
 * colours to land on; a hash that put them all on one or two would fail. */
static _Atomic uintptr_t record_at[64];

static void record_where(void *arg)
{
	atomic_store(&record_at[(intptr_t)arg], (uintptr_t)weft__fiber_current());
	WT_CHECK_RC(0, weft_sem_wait(&sem));
}

static void parked_spread(void)
{
	weft_rt *rt = create(WEFT_POLICY_FIFO);
	assert_rc(0, weft_sem_init(&sem, 0));
	weft_task t[64];
	for (int i = 0; i < 64; i++) {
		assert_rc(0, weft_task_init(&t[i], record_where, (void *)(intptr_t)i));
		assert_rc(0, weft_post(rt, &t[i]));
	}
	bool seen[64] = {false};
	int offsets = 0;
	for (int i = 0; i < 64; i++) {
		while (!atomic_load(&record_at[i]))
			wt_sleep_ms(1);
		size_t line = (atomic_load(&record_at[i]) % 4096) / 64;
		offsets += !seen[line];
		seen[line] = true;
	}
	for (int i = 0; i < 64; i++)
		assert_rc(0, weft_sem_post(&sem));
	assert_rc(0, weft_wait_all(rt));
	assert_rc(0, weft_rt_destroy(rt));
	assert_true(offsets >= 8);
}

/* A fiber waiting for a task or a group parks: while the awaited work is
 * itself parked, the worker switches to nobody and burns no CPU (a waiter
 * that polled by yielding would spin for the whole wait). The last wait is for a task of
 * another runtime (threads), finished by one of its workers. */
static weft_sem gate_sem;
static weft_rt *other_rt;

static void gated(void *arg)
{
	(void)arg;
	WT_CHECK_RC(0, weft_sem_wait(&gate_sem));
}

static void waits_for_all(void *arg)
{
	_Atomic int *stage = arg;
	weft_task c, g1, x;
	weft_group g;
	WT_CHECK_RC(0, weft_task_init(&c, gated, NULL));
	WT_CHECK_RC(0, weft_post(weft_rt_current(), &c));
	WT_CHECK_RC(0, weft_wait(&c));
	atomic_store(stage, 1);
	WT_CHECK_RC(0, weft_group_init(&g));
	WT_CHECK_RC(0, weft_task_init(&g1, gated, NULL));
	WT_CHECK_RC(0, weft_post_in(weft_rt_current(), &g, &g1));
	WT_CHECK_RC(0, weft_group_wait(&g));
	atomic_store(stage, 2);
	WT_CHECK_RC(0, weft_task_init(&x, gated, NULL));
	WT_CHECK_RC(0, weft_post(other_rt, &x));
	WT_CHECK_RC(0, weft_wait(&x));
	atomic_store(stage, 3);
}

static _Atomic int *stage_ptr;
static int stage_want;

static bool stage_reached(void *arg)
{
	(void)arg;
	return atomic_load(stage_ptr) == stage_want;
}

static int64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static uint64_t switches_of(weft_rt *rt)
{
	weft_stats st;
	assert_rc(0, weft_stats_get(rt, &st));
	return st.switches;
}

static void wait_parks(void)
{
	weft_rt *rt = create(WEFT_POLICY_FIFO);
	weft_config cfg;
	wt_config(&cfg);
	cfg.model = WEFT_MODEL_THREADS;
	cfg.workers = 1;
	other_rt = wt_create(&cfg);
	assert_rc(0, weft_sem_init(&gate_sem, 0));
	_Atomic int stage = 0;
	stage_ptr = &stage;
	weft_task t;
	assert_rc(0, weft_task_init(&t, waits_for_all, &stage));
	assert_rc(0, weft_post(rt, &t));
	for (int want = 1; want <= 3; want++) {
		wt_sleep_ms(20); /* both fibers (or the thread task) park */
		uint64_t before = switches_of(rt);
		int64_t cpu = cpu_ns();
		wt_sleep_ms(30);
		assert_true(cpu_ns() - cpu < 10 * 1000000);
		assert_int_equal(switches_of(rt), before);
		assert_int_equal(atomic_load(&stage), want - 1);
		assert_rc(0, weft_sem_post(&gate_sem));
		stage_want = want;
		assert_true(wt_poll(stage_reached, NULL));
	}
	assert_rc(0, weft_wait(&t));
	assert_rc(0, weft_rt_destroy(other_rt));
	assert_rc(0, weft_rt_destroy(rt));
}

static void env_stack_size(void)
{
	setenv("WEFT_STACK_SIZE", "12", 1);
	weft_config cfg;
	wt_config(&cfg);
	cfg.model = WEFT_MODEL_FIBERS;
	weft_rt *rt = NULL;
	wt_capture_begin();
	int rc = weft_rt_create(&rt, &cfg);
	const char *err = wt_capture_end();
	unsetenv("WEFT_STACK_SIZE");
	assert_rc(WEFT_EINVAL, rc);
	assert_non_null(strstr(err, "WEFT_STACK_SIZE"));
	cfg.stack_size = 100; /* below the minimum */
	assert_rc(WEFT_EINVAL, weft_rt_create(&rt, &cfg));
}

WT_CASES(WT_CASE(yield_interleave), WT_CASE(yield_respects_priority), WT_CASE(random_replay),
         WT_CASE(virtual_clock), WT_CASE(seed_on_failure), WT_CASE(overflow_aborts),
         WT_CASE(many_parked), WT_CASE(parked_spread), WT_CASE(wait_parks),
         WT_CASE(env_stack_size));
