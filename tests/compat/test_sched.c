/* Tests of the seed scheduler API on weft (include/weft/compat/sched.h).
 *
 *   test_compat_sched <case> [<model> <workers>]
 *
 * runs one case; with a model it sets WEFT_MODEL (the tests run with every
 * WEFT_* variable cleared), and <workers> is the worker count the cases
 * that do not need a particular count pass to sched_init. The scheduler
 * may run fewer workers than asked (fibers has one, whatever is asked):
 * cases that hold every worker or check worker indices use s.num_workers,
 * the effective count. The ordering cases need one worker to have an order
 * to check: they use exactly one, and skip when <workers> is not 1 so that
 * each runs once per model. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#include <weft/compat/sched.h>
#include <weft/weft.h>

static int g_workers = 2;

/* ------------------------------------------------------------ helpers */

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* Polls cond(arg) every millisecond for up to 10 s. */
static bool eventually(bool (*cond)(void *), void *arg)
{
	for (int i = 0; i < 10000; i++) {
		if (cond(arg))
			return true;
		sleep_ms(1);
	}
	return cond(arg);
}

/* A gate tasks wait at until the test opens it. */
typedef struct gate {
	pthread_mutex_t lock;
	pthread_cond_t cv;
	bool open;
	int inside; /* tasks waiting at the gate */
} gate_t;

static void gate_init(gate_t *g)
{
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->cv, NULL);
	g->open = false;
	g->inside = 0;
}

static void gate_destroy(gate_t *g)
{
	pthread_cond_destroy(&g->cv);
	pthread_mutex_destroy(&g->lock);
}

static void gate_pass(gate_t *g)
{
	pthread_mutex_lock(&g->lock);
	g->inside++;
	pthread_cond_broadcast(&g->cv);
	while (!g->open)
		pthread_cond_wait(&g->cv, &g->lock);
	g->inside--;
	pthread_mutex_unlock(&g->lock);
}

static void gate_open(gate_t *g)
{
	pthread_mutex_lock(&g->lock);
	g->open = true;
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->lock);
}

/* Blocks until n tasks wait at the gate (at most 10 s). */
static bool gate_wait_inside(gate_t *g, int n)
{
	struct timespec deadline;
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += 10;
	bool ok = true;
	pthread_mutex_lock(&g->lock);
	while (g->inside < n && ok)
		ok = pthread_cond_timedwait(&g->cv, &g->lock, &deadline) == 0 || g->inside >= n;
	ok = g->inside >= n;
	pthread_mutex_unlock(&g->lock);
	return ok;
}

static void gate_func(void *arg, int thread_num)
{
	(void)thread_num;
	gate_pass(arg);
}

/* Tasks that record the order they ran in. */
#define MAX_LOG 256

typedef struct run_log {
	pthread_mutex_t lock;
	int order[MAX_LOG];
	int n;
} run_log_t;

typedef struct logged {
	run_log_t *log;
	int id;
} logged_t;

static void log_init(run_log_t *l)
{
	pthread_mutex_init(&l->lock, NULL);
	l->n = 0;
}

static void logged_func(void *arg, int thread_num)
{
	(void)thread_num;
	logged_t *a = arg;
	pthread_mutex_lock(&a->log->lock);
	if (a->log->n < MAX_LOG)
		a->log->order[a->log->n] = a->id;
	a->log->n++;
	pthread_mutex_unlock(&a->log->lock);
}

/* Tasks that count their runs. */
static void count_func(void *arg, int thread_num)
{
	(void)thread_num;
	atomic_fetch_add((_Atomic int *)arg, 1);
}

typedef struct at_least {
	_Atomic int *counter;
	int n;
} at_least_t;

static bool reached(void *arg)
{
	at_least_t *a = arg;
	return atomic_load(a->counter) >= a->n;
}

static bool single_worker_case(void)
{
	return g_workers == 1;
}

/* The worker count weft itself runs when asked for `asked` under the
 * current environment: what num_workers must report. */
static int effective_workers(int asked)
{
	weft_config cfg;
	assert_int_equal(weft_config_init(&cfg), 0);
	cfg.workers = asked;
	weft_rt *rt = NULL;
	assert_int_equal(weft_rt_create(&rt, &cfg), 0);
	weft_config eff;
	assert_int_equal(weft_rt_config(rt, &eff), 0);
	assert_int_equal(weft_rt_destroy(rt), 0);
	return eff.workers;
}

/* ------------------------------------------------------------ cases */

/* Misuse returns false or does nothing; fini makes the scheduler reusable. */
static void init_args(void **state)
{
	(void)state;
	sched_t s;
	task_t t;
	_Atomic int runs = 0;

	assert_false(sched_init(NULL, 1, 1));
	assert_false(sched_init(&s, -1, 1));
	sched_fini(&s); /* after a failed init: releases nothing, clears */
	assert_null(s.impl_);
	assert_false(sched_init(&s, 1, 0));
	assert_false(sched_post(&s, NULL, false));
	task_init(&t, 1, count_func, &runs);
	assert_false(sched_post(&s, &t, false)); /* not initialised */
	sched_execute(&s);                       /* no-ops */
	sched_fini(&s);
	assert_false(sched_post(NULL, &t, false));
	task_init(NULL, 1, count_func, NULL);

	assert_true(sched_init(&s, g_workers, 4));
	assert_int_equal(s.num_workers, effective_workers(g_workers));
	assert_int_equal(s.queue_depth, 4);
	assert_int_equal(s.state, SCHED_STOPPED);
	task_t nofn;
	task_init(&nofn, 1, NULL, NULL);
	assert_false(sched_post(&s, &nofn, false));
	assert_true(sched_post(&s, &t, false));
	sched_execute(&s);
	assert_int_equal(atomic_load(&runs), 1);
	sched_fini(&s);
	assert_null(s.impl_);
	assert_false(sched_post(&s, &t, false)); /* after fini */
	sched_fini(&s);                          /* twice: no-op */

	/* Zero workers: one per CPU, as weft's default. */
	assert_true(sched_init(&s, 0, 4));
	assert_true(s.num_workers >= 1);
	assert_true(sched_post(&s, &t, true));
	sched_execute(&s);
	assert_int_equal(atomic_load(&runs), 2);
	sched_fini(&s);

	assert_int_equal(SCHED_STOPPED, 0);
	assert_int_equal(SCHED_RUNNING, 1);
	assert_int_equal(SCHED_DONE, 2);
}

/* Held tasks start in priority order, smaller first, over the whole
 * uint64_t range (the seed truncated pri to int and mis-sifted its heap). */
static void priority_order(void **state)
{
	(void)state;
	if (!single_worker_case())
		skip();
	static const uint64_t pri[] = {
	        5,
	        UINT64_MAX,
	        0,
	        (UINT64_C(1) << 32) + 1, /* would truncate to 1 as an int */
	        UINT64_C(1) << 63,
	        3,
	        (UINT64_C(1) << 63) - 1,
	        1,
	        UINT64_MAX - 1,
	        2,
	        1000,
	        4,
	};
	enum { N = sizeof(pri) / sizeof(pri[0]) };
	sched_t s;
	task_t tasks[N];
	logged_t args[N];
	run_log_t log;
	log_init(&log);

	assert_true(sched_init(&s, 1, N));
	assert_int_equal(s.num_workers, 1);
	for (int i = 0; i < N; i++) {
		args[i] = (logged_t){&log, i};
		task_init(&tasks[i], pri[i], logged_func, &args[i]);
		assert_true(sched_post(&s, &tasks[i], false));
	}
	sched_execute(&s);
	assert_int_equal(log.n, N);
	for (int i = 1; i < N; i++)
		assert_true(pri[log.order[i - 1]] < pri[log.order[i]]);
	assert_int_equal(log.order[0], 2);     /* pri 0 */
	assert_int_equal(log.order[N - 1], 1); /* UINT64_MAX */
	sched_fini(&s);
}

/* Equal priorities run in post order (the seed ran 0, 9, 8, ..., 1). */
static void fifo_equal(void **state)
{
	(void)state;
	if (!single_worker_case())
		skip();
	enum { N = 60 };
	sched_t s;
	task_t tasks[N];
	logged_t args[N];
	run_log_t log;
	log_init(&log);

	assert_true(sched_init(&s, 1, N));
	/* Three priority levels interleaved: 2, 1, 0, 2, 1, 0, ... */
	for (int i = 0; i < N; i++) {
		args[i] = (logged_t){&log, i};
		task_init(&tasks[i], (uint64_t)(2 - i % 3), logged_func, &args[i]);
		assert_true(sched_post(&s, &tasks[i], false));
	}
	sched_execute(&s);
	assert_int_equal(log.n, N);
	int k = 0;
	for (int level = 0; level < 3; level++)
		for (int i = 2 - level; i < N; i += 3)
			assert_int_equal(log.order[k++], i);

	/* All equal: exactly post order. */
	log.n = 0;
	for (int i = 0; i < N; i++) {
		task_init(&tasks[i], 1, logged_func, &args[i]);
		assert_true(sched_post(&s, &tasks[i], false));
	}
	sched_execute(&s);
	assert_int_equal(log.n, N);
	for (int i = 0; i < N; i++)
		assert_int_equal(log.order[i], i);
	sched_fini(&s);
}

/* While running, posts go straight to weft's queue, which keeps the same
 * order: the single worker is held at a gate while tasks pile up. */
static void queue_order(void **state)
{
	(void)state;
	if (!single_worker_case())
		skip();
	enum { N = 20 };
	sched_t s;
	task_t gate_task, tasks[N];
	logged_t args[N];
	run_log_t log;
	gate_t g;
	log_init(&log);
	gate_init(&g);

	assert_true(sched_init(&s, 1, N));
	task_init(&gate_task, 0, gate_func, &g);
	assert_true(sched_post(&s, &gate_task, true));
	assert_int_equal(s.state, SCHED_RUNNING);
	assert_true(gate_wait_inside(&g, 1));
	for (int i = 0; i < N; i++) {
		args[i] = (logged_t){&log, i};
		/* priorities 7, 6, ..., 0, 7, 6, ...: */
		task_init(&tasks[i], (uint64_t)(7 - i % 8), logged_func, &args[i]);
		assert_true(sched_post(&s, &tasks[i], false));
	}
	gate_open(&g);
	sched_execute(&s);
	assert_int_equal(s.state, SCHED_STOPPED);
	assert_int_equal(log.n, N);
	for (int i = 1; i < N; i++) {
		uint64_t a = tasks[log.order[i - 1]].pri, b = tasks[log.order[i]].pri;
		assert_true(a < b || (a == b && log.order[i - 1] < log.order[i]));
	}
	sched_fini(&s);
	gate_destroy(&g);
}

/* Tasks posted with run_now=false are held until sched_execute. */
static void held(void **state)
{
	(void)state;
	enum { N = 10 };
	sched_t s;
	task_t tasks[N];
	_Atomic int runs = 0;

	assert_true(sched_init(&s, g_workers, N));
	for (int i = 0; i < N; i++) {
		task_init(&tasks[i], (uint64_t)i, count_func, &runs);
		assert_true(sched_post(&s, &tasks[i], false));
		assert_int_equal(weft_task_state_of(&tasks[i].task_), WEFT_TASK_IDLE);
	}
	sleep_ms(50);
	assert_int_equal(atomic_load(&runs), 0);
	assert_int_equal(s.state, SCHED_STOPPED);
	/* A held task cannot be posted twice. */
	assert_false(sched_post(&s, &tasks[0], false));
	sched_execute(&s);
	assert_int_equal(atomic_load(&runs), N);
	assert_int_equal(s.state, SCHED_STOPPED);
	for (int i = 0; i < N; i++)
		assert_int_equal(weft_task_state_of(&tasks[i].task_), WEFT_TASK_DONE);
	sched_execute(&s); /* nothing posted: returns at once */
	assert_int_equal(atomic_load(&runs), N);
	sched_fini(&s);
	assert_int_equal(atomic_load(&runs), N);
}

/* A run_now post starts everything held, without sched_execute, and the
 * scheduler stays RUNNING: later posts run at once too. */
static void run_now(void **state)
{
	(void)state;
	enum { N = 8 };
	sched_t s;
	task_t tasks[N];
	_Atomic int runs = 0;

	assert_true(sched_init(&s, g_workers, N));
	for (int i = 0; i < N / 2; i++) {
		task_init(&tasks[i], 1, count_func, &runs);
		assert_true(sched_post(&s, &tasks[i], false));
	}
	sleep_ms(20);
	assert_int_equal(atomic_load(&runs), 0);
	task_init(&tasks[N / 2], 1, count_func, &runs);
	assert_true(sched_post(&s, &tasks[N / 2], true));
	assert_int_equal(s.state, SCHED_RUNNING);
	at_least_t want = {&runs, N / 2 + 1};
	assert_true(eventually(reached, &want));

	/* RUNNING: a run_now=false post is not held. */
	for (int i = N / 2 + 1; i < N; i++) {
		task_init(&tasks[i], 1, count_func, &runs);
		assert_true(sched_post(&s, &tasks[i], false));
	}
	want.n = N;
	assert_true(eventually(reached, &want));
	sched_execute(&s);
	assert_int_equal(s.state, SCHED_STOPPED);
	assert_int_equal(atomic_load(&runs), N);

	/* Back to STOPPED: held again. */
	assert_true(sched_post(&s, &tasks[0], false));
	sleep_ms(20);
	assert_int_equal(atomic_load(&runs), N);
	sched_execute(&s);
	assert_int_equal(atomic_load(&runs), N + 1);
	sched_fini(&s);
}

/* queue_depth waiting tasks fill the queue: the next post returns false and
 * changes nothing. Running tasks do not count. */
static void full_queue(void **state)
{
	(void)state;
	enum { DEPTH = 4 };
	sched_t s;
	task_t tasks[DEPTH + 1];
	_Atomic int runs = 0;

	assert_true(sched_init(&s, g_workers, DEPTH));
	for (int i = 0; i <= DEPTH; i++)
		task_init(&tasks[i], 1, count_func, &runs);
	for (int i = 0; i < DEPTH; i++)
		assert_true(sched_post(&s, &tasks[i], false));
	assert_false(sched_post(&s, &tasks[DEPTH], false));
	assert_false(sched_post(&s, &tasks[DEPTH], true)); /* run_now too */
	assert_int_equal(s.state, SCHED_STOPPED);          /* unchanged */
	assert_int_equal(weft_task_state_of(&tasks[DEPTH].task_), WEFT_TASK_IDLE);
	assert_int_equal(tasks[DEPTH].held_, 0);
	sched_execute(&s);
	assert_int_equal(atomic_load(&runs), DEPTH);
	/* Drained: room again. */
	assert_true(sched_post(&s, &tasks[DEPTH], false));
	sched_execute(&s);
	assert_int_equal(atomic_load(&runs), DEPTH + 1);
	sched_fini(&s);

	/* With every worker busy at a gate, only waiting tasks count. */
	assert_true(sched_init(&s, g_workers, 2));
	int n = s.num_workers;
	gate_t g;
	gate_init(&g);
	task_t *gates = calloc((size_t)n, sizeof(*gates));
	task_t extra[3];
	assert_non_null(gates);
	for (int i = 0; i < n; i++) {
		task_init(&gates[i], 0, gate_func, &g);
		assert_true(sched_post(&s, &gates[i], true));
		if (i % 2 == 1) /* depth 2: let the gate tasks start */
			assert_true(gate_wait_inside(&g, i + 1));
	}
	assert_true(gate_wait_inside(&g, n));
	runs = 0;
	for (int i = 0; i < 3; i++)
		task_init(&extra[i], 1, count_func, &runs);
	assert_true(sched_post(&s, &extra[0], false));
	assert_true(sched_post(&s, &extra[1], false));
	assert_false(sched_post(&s, &extra[2], false));
	gate_open(&g);
	sched_execute(&s);
	assert_int_equal(atomic_load(&runs), 2);
	sched_fini(&s);
	free(gates);
	gate_destroy(&g);
}

/* The seed's burst use: post, execute, post, execute, reusing the tasks
 * with and without task_init in between. */
static void burst(void **state)
{
	(void)state;
	enum { N = 16, ROUNDS = 5 };
	sched_t s;
	task_t tasks[N];
	_Atomic int a = 0, b = 0;

	assert_true(sched_init(&s, g_workers, N));
	for (int i = 0; i < N; i++)
		task_init(&tasks[i], (uint64_t)(i % 4), count_func, &a);
	for (int r = 1; r <= ROUNDS; r++) {
		for (int i = 0; i < N; i++)
			assert_true(sched_post(&s, &tasks[i], false));
		sched_execute(&s);
		assert_int_equal(atomic_load(&a), r * N);
		assert_int_equal(s.state, SCHED_STOPPED);
	}
	/* As the seed's sort does: re-initialise tasks[0] for another job. */
	task_init(&tasks[0], 1, count_func, &b);
	assert_true(sched_post(&s, &tasks[0], false));
	sched_execute(&s);
	assert_int_equal(atomic_load(&b), 1);
	assert_int_equal(atomic_load(&a), ROUNDS * N);
	/* Changing pri between posts is allowed (read at post time). */
	tasks[1].pri = 42;
	assert_true(sched_post(&s, &tasks[1], false));
	assert_int_equal(weft_task_priority(&tasks[1].task_), (int64_t)(42 ^ (UINT64_C(1) << 63)));
	sched_execute(&s);
	assert_int_equal(atomic_load(&a), ROUNDS * N + 1);
	sched_fini(&s);
}

/* sched_fini runs whatever is still held or queued. */
static void fini_drains(void **state)
{
	(void)state;
	enum { N = 32 };
	sched_t s;
	task_t tasks[N];
	_Atomic int runs = 0;

	assert_true(sched_init(&s, g_workers, N));
	for (int i = 0; i < N; i++) {
		task_init(&tasks[i], (uint64_t)(N - i), count_func, &runs);
		assert_true(sched_post(&s, &tasks[i], false));
	}
	assert_int_equal(atomic_load(&runs), 0);
	sched_fini(&s);
	assert_int_equal(atomic_load(&runs), N);

	/* Some running (run_now), some held behind them: all run. */
	runs = 0;
	assert_true(sched_init(&s, g_workers, N));
	for (int i = 0; i < N; i++)
		assert_true(sched_post(&s, &tasks[i], i == N / 2));
	sched_fini(&s);
	assert_int_equal(atomic_load(&runs), N);
}

/* The second argument is the worker index, 0 .. num_workers-1, and every
 * worker has its own. */
typedef struct index_arg {
	gate_t *gate;
	_Atomic int *seen; /* seen[index]++ */
	int workers;
	_Atomic int *bad;
} index_arg_t;

static void index_func(void *arg, int thread_num)
{
	index_arg_t *a = arg;
	if (thread_num < 0 || thread_num >= a->workers) {
		atomic_fetch_add(a->bad, 1);
		return;
	}
	atomic_fetch_add(&a->seen[thread_num], 1);
	if (a->gate)
		gate_pass(a->gate);
}

static void thread_index(void **state)
{
	(void)state;
	sched_t s;
	assert_true(sched_init(&s, g_workers, g_workers * 10));
	int n = s.num_workers; /* the workers there are (test: init_args) */
	assert_true(n >= 1 && n <= g_workers);
	gate_t g;
	gate_init(&g);
	_Atomic int bad = 0;
	_Atomic int *seen = calloc((size_t)n, sizeof(*seen));
	task_t *tasks = calloc((size_t)n * 10, sizeof(*tasks));
	assert_non_null(seen);
	assert_non_null(tasks);
	index_arg_t gated = {&g, seen, n, &bad};
	index_arg_t free_run = {NULL, seen, n, &bad};

	/* n tasks that wait for each other: they must be on n different
	 * workers, so every index appears exactly once. The last post starts
	 * them (run_now); the gate opens once all n are inside. */
	for (int i = 0; i < n; i++) {
		task_init(&tasks[i], 1, index_func, &gated);
		assert_true(sched_post(&s, &tasks[i], i == n - 1));
	}
	assert_true(gate_wait_inside(&g, n));
	gate_open(&g);
	sched_execute(&s);
	for (int i = 0; i < n; i++)
		assert_int_equal(atomic_load(&seen[i]), 1);
	for (int i = 0; i < n * 10; i++) {
		task_init(&tasks[i], (uint64_t)i, index_func, &free_run);
		assert_true(sched_post(&s, &tasks[i], false));
	}
	sched_execute(&s);
	int total = 0;
	for (int i = 0; i < n; i++)
		total += atomic_load(&seen[i]);
	assert_int_equal(total, n + n * 10);
	assert_int_equal(atomic_load(&bad), 0);
	sched_fini(&s);
	free(tasks);
	free(seen);
	gate_destroy(&g);
}

/* A task may post more tasks; sched_execute waits for them too. */
typedef struct chain {
	sched_t *s;
	task_t *next; /* posted by this task, or NULL */
	_Atomic int *runs;
} chain_t;

static void chain_func(void *arg, int thread_num)
{
	(void)thread_num;
	chain_t *c = arg;
	atomic_fetch_add(c->runs, 1);
	if (c->next)
		sched_post(c->s, c->next, false);
}

static void post_from_task(void **state)
{
	(void)state;
	enum { N = 50 };
	sched_t s;
	task_t tasks[N];
	chain_t args[N];
	_Atomic int runs = 0;

	assert_true(sched_init(&s, g_workers, 2));
	for (int i = 0; i < N; i++) {
		args[i] = (chain_t){&s, i + 1 < N ? &tasks[i + 1] : NULL, &runs};
		task_init(&tasks[i], 1, chain_func, &args[i]);
	}
	assert_true(sched_post(&s, &tasks[0], false));
	sched_execute(&s);
	assert_int_equal(atomic_load(&runs), N);
	sched_fini(&s);
}

/* WEFT_WORKERS and WEFT_MODEL override what the program asked for. */
static void env_override(void **state)
{
	(void)state;
	sched_t s;
	char *model = getenv("WEFT_MODEL");
	char saved[32] = "";
	if (model)
		snprintf(saved, sizeof(saved), "%s", model);

	/* 3 under a model that runs the workers it is asked for; fibers
	 * has one whatever the count, so there the override shows nothing. */
	int want = effective_workers(3);
	setenv("WEFT_WORKERS", "3", 1);
	assert_true(sched_init(&s, 1, 8));
	assert_int_equal(s.num_workers, want);
	sched_fini(&s);
	unsetenv("WEFT_WORKERS");

	setenv("WEFT_MODEL", "no-such-model", 1);
	assert_false(sched_init(&s, 1, 8));
	task_t t;
	task_init(&t, 1, count_func, NULL);
	assert_false(sched_post(&s, &t, false)); /* says sched_init failed */
	sched_execute(&s);                       /* the same, no wait */
	sched_fini(&s);
	assert_null(s.impl_);
	if (model)
		setenv("WEFT_MODEL", saved, 1);
	else
		unsetenv("WEFT_MODEL");
}

/* Many tasks through a small queue: when a post finds the queue full the
 * caller drains it with sched_execute, as the seed's comment advises. */
static void many(void **state)
{
	(void)state;
	enum { DEPTH = 16, TOTAL = 20000 };
	sched_t s;
	task_t tasks[DEPTH];
	_Atomic int runs = 0;
	int posted = 0, rejected = 0;

	assert_true(sched_init(&s, g_workers, DEPTH));
	int next = 0;
	while (posted < TOTAL) {
		task_t *t = &tasks[next];
		task_init(t, (uint64_t)(posted % 7), count_func, &runs);
		if (sched_post(&s, t, posted % 3 == 0)) {
			posted++;
			next = (next + 1) % DEPTH;
			/* A task slot is reused only after a drain. */
			if (next == 0)
				sched_execute(&s);
		} else {
			rejected++;
			sched_execute(&s);
		}
	}
	sched_execute(&s);
	assert_int_equal(atomic_load(&runs), TOTAL);
	assert_int_equal(rejected, 0); /* the drains kept room */
	sched_fini(&s);
}

/* ------------------------------------------------------------ main */

#define CASE(name)          \
	{                   \
#name, name \
	}
static const struct {
	const char *name;
	CMUnitTestFunction fn;
} cases[] = {
        CASE(init_args),   CASE(priority_order), CASE(fifo_equal),     CASE(queue_order),
        CASE(held),        CASE(run_now),        CASE(full_queue),     CASE(burst),
        CASE(fini_drains), CASE(thread_index),   CASE(post_from_task), CASE(env_override),
        CASE(many),
};

int main(int argc, char **argv)
{
	if (argc != 2 && argc != 4) {
		fprintf(stderr, "usage: %s <case> [<model> <workers>]\n", argv[0]);
		return 2;
	}
	if (argc == 4) {
		setenv("WEFT_MODEL", argv[2], 1);
		g_workers = atoi(argv[3]);
		if (g_workers < 1) {
			fprintf(stderr, "%s: bad worker count '%s'\n", argv[0], argv[3]);
			return 2;
		}
	}
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (strcmp(cases[i].name, argv[1]) != 0)
			continue;
		const struct CMUnitTest one[] = {{cases[i].name, cases[i].fn, NULL, NULL, NULL}};
		return cmocka_run_group_tests_name("compat_sched", one, NULL, NULL);
	}
	fprintf(stderr, "%s: no case '%s'\n", argv[0], argv[1]);
	return 2;
}
