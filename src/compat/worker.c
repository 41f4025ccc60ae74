/* Seed 004's thread-worker API (include/weft/compat/thread-worker.h) on
 * weft: one process-wide runtime, one weft_task per worker.
 *
 * The runtime is created by the first worker_create, with the seed's
 * behaviour as defaults (fibers on one kernel thread, PSJF, timer
 * preemption with a 10 ms quantum) and the WEFT_* environment overriding
 * them as always, and destroyed by an atexit handler once every worker has
 * finished (a worker still running at exit is left to the process's end,
 * as the seed's would be; destroying the runtime would wait for it).
 *
 * Each worker is a heap-allocated TCB holding its weft_task, reached from
 * its id through a table indexed by id (ids count from 1 and are never
 * reused, so the table grows by one pointer per worker ever created; join
 * frees the TCB and clears its slot). The task runs wrapper(), which takes
 * the start and end times for the statistics and sets the jmp_buf that
 * worker_exit longjmps to from any depth: a worker's frames are all on its
 * own stack (a fiber's, or the worker thread's under WEFT_MODEL=threads),
 * so the jump never leaves it.
 *
 * Locking: `lock` is a weft_mutex, not a pthread mutex, because the
 * functions are called from fibers that the timer may preempt: a fiber
 * preempted while holding a kernel mutex would deadlock the next fiber on
 * the same kernel thread that asks for it, where a weft_mutex parks it. The
 * statistics are atomics, added once per finished worker. */
#define WEFT_NO_USE_WORKERS 1 /* the real pthread_exit, not the macro */

#include <setjmp.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/internal.h"
#include <weft/compat/thread-worker.h>
#include <weft/weft.h>

struct TCB {
	weft_task task; /* what weft runs: wrapper(this) */
	worker_t id;
	void *(*fn)(void *);
	void *arg;
	void *retval;       /* fn's return value or worker_exit's argument */
	jmp_buf exit_jmp;   /* set by wrapper, taken by worker_exit */
	int64_t created_ns; /* CLOCK_MONOTONIC at worker_create */
	bool joining;       /* a worker_join has claimed it; under lock */
};

static struct {
	/* The runtime. Written once (under init_lock) by the first
	 * worker_create, read by everyone afterwards; cleared at exit. */
	_Atomic(weft_rt *) rt;
	pthread_mutex_t init_lock; /* only ever taken before rt exists, by non-fibers */

	weft_mutex lock;    /* guards the fields below */
	struct TCB **table; /* table[id], NULL once joined; under lock */
	size_t cap;         /* slots in table; under lock */
	worker_t next_id;   /* last id handed out; under lock */

	/* Statistics, atomic: nanoseconds summed over finished workers. */
	_Atomic long created, started, finished, yields;
	_Atomic int64_t turnaround_ns, response_ns;
} g = {.init_lock = PTHREAD_MUTEX_INITIALIZER};

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ------------------------------------------------------------ runtime */

/* At exit: destroy the runtime and free the TCBs nobody joined, unless a
 * worker is still running (then destroy would wait for it) or exit was
 * called from a worker (then destroy would wait for the caller). */
static void destroy_at_exit(void)
{
	weft_rt *rt = atomic_load(&g.rt);
	if (!rt || weft_rt_current() == rt)
		return;
	if (atomic_load(&g.finished) != atomic_load(&g.created))
		return;
	if (weft_rt_destroy(rt) != 0)
		return;
	atomic_store(&g.rt, NULL);
	weft_mutex_lock(&g.lock);
	for (size_t i = 0; i < g.cap; i++)
		free(g.table[i]);
	free(g.table);
	g.table = NULL;
	g.cap = 0;
	weft_mutex_unlock(&g.lock);
}

/* The runtime, created on first use with the seed's defaults. */
static weft_rt *runtime(void)
{
	weft_rt *rt = atomic_load(&g.rt);
	if (rt)
		return rt;
	static bool registered; /* under init_lock */
	pthread_mutex_lock(&g.init_lock);
	rt = atomic_load(&g.rt);
	if (!rt) {
		weft_config cfg;
		weft_config_init(&cfg);
		cfg.model = WEFT_MODEL_FIBERS;
		cfg.policy = WEFT_POLICY_PSJF;
		cfg.preempt = WEFT_PREEMPT_TIMER;
		cfg.quantum_us = QUANTUM * 1000;
		int rc = weft_rt_create(&rt, &cfg);
		if (rc == 0) {
			atomic_store(&g.rt, rt);
			if (!registered && atexit(destroy_at_exit) == 0)
				registered = true;
		} else if (rc == WEFT_EINVAL) {
			/* The WEFT_* environment asks for what weft refuses
			 * (said just above, e.g. WEFT_MODEL=mn with
			 * WEFT_POLICY=mlfq). The seed's programs ignore
			 * worker_create's result and would print their totals
			 * as if their workers had run: end the process, with
			 * one line saying why, rather than let it pass. */
			pthread_mutex_unlock(&g.init_lock);
			fprintf(stderr, "weft: thread-worker: no runtime can be created with this "
			                "WEFT_* environment (see above); exiting with status 1\n");
			exit(EXIT_FAILURE);
		} else {
			rt = NULL;
		}
	}
	pthread_mutex_unlock(&g.init_lock);
	return rt;
}

/* The TCB of the worker running the caller, or NULL. */
static void wrapper(void *arg);
static struct TCB *current(void)
{
	weft_task *t = weft__tls.task;
	if (!t || t->fn_ != wrapper)
		return NULL;
	return t->arg_;
}

/* The TCB of worker id, or NULL; call under lock. */
static struct TCB *lookup(worker_t id)
{
	return id < g.cap ? g.table[id] : NULL;
}

/* Makes room for table[id]; call under lock. */
static int grow(worker_t id)
{
	size_t cap = g.cap ? g.cap : 64;
	while (cap <= id)
		cap *= 2;
	struct TCB **table = realloc(g.table, cap * sizeof(*table));
	if (!table)
		return -1;
	memset(table + g.cap, 0, (cap - g.cap) * sizeof(*table));
	g.table = table;
	g.cap = cap;
	return 0;
}

/* ------------------------------------------------------------ workers */

static void wrapper(void *arg)
{
	struct TCB *w = arg;
	int64_t start = now_ns();
	atomic_fetch_add(&g.started, 1);
	if (setjmp(w->exit_jmp) == 0)
		w->retval = w->fn(w->arg);
	int64_t end = now_ns();
	atomic_fetch_add(&g.response_ns, start - w->created_ns);
	atomic_fetch_add(&g.turnaround_ns, end - w->created_ns);
	atomic_fetch_add(&g.finished, 1);
}

int worker_create(worker_t *thread, pthread_attr_t *attr, void *(*function)(void *), void *arg)
{
	(void)attr;
	if (!thread || !function)
		return -1;
	weft_rt *rt = runtime();
	if (!rt)
		return -1;
	struct TCB *w = calloc(1, sizeof(*w));
	if (!w)
		return -1;
	w->fn = function;
	w->arg = arg;
	weft_task_init(&w->task, wrapper, w);

	weft_mutex_lock(&g.lock);
	worker_t id = g.next_id + 1;
	if (id == 0 || (id >= g.cap && grow(id) != 0)) {
		weft_mutex_unlock(&g.lock);
		free(w);
		return -1;
	}
	g.next_id = id;
	w->id = id;
	g.table[id] = w;
	weft_mutex_unlock(&g.lock);

	/* Published before the post: a join or setschedprio may come from the
	 * worker itself the moment it runs. */
	*thread = id;
	atomic_fetch_add(&g.created, 1);
	w->created_ns = now_ns();
	if (weft_post(rt, &w->task) != 0) {
		atomic_fetch_sub(&g.created, 1);
		weft_mutex_lock(&g.lock);
		g.table[id] = NULL;
		weft_mutex_unlock(&g.lock);
		free(w);
		return -1;
	}
	return 0;
}

int worker_yield(void)
{
	atomic_fetch_add_explicit(&g.yields, 1, memory_order_relaxed);
	weft_yield();
	return 0;
}

void worker_exit(void *value_ptr)
{
	struct TCB *w = current();
	if (w) {
		w->retval = value_ptr;
		longjmp(w->exit_jmp, 1);
	}
	if (weft_rt_current()) {
		weft__log(WEFT_LOG_ERROR,
		          "worker_exit: called from a weft task that is not a worker\n");
		abort();
	}
	pthread_exit(value_ptr);
}

int worker_join(worker_t thread, void **value_ptr)
{
	weft_mutex_lock(&g.lock);
	struct TCB *w = lookup(thread);
	if (!w || w->joining || w == current()) {
		weft_mutex_unlock(&g.lock);
		return -1;
	}
	w->joining = true;
	weft_mutex_unlock(&g.lock);

	weft_wait(&w->task);
	if (value_ptr)
		*value_ptr = w->retval;
	weft_mutex_lock(&g.lock);
	g.table[thread] = NULL;
	weft_mutex_unlock(&g.lock);
	free(w);
	return 0;
}

int worker_setschedprio(worker_t thread, int prio)
{
	if (prio < LOW_PRIO || prio > HIGH_PRIO)
		return -1;
	weft_mutex_lock(&g.lock);
	struct TCB *w = lookup(thread);
	if (w)
		weft__task_request_level(&w->task, NUMPRIO - 1 - prio);
	weft_mutex_unlock(&g.lock);
	return w ? 0 : -1;
}

/* ------------------------------------------------------------ mutexes */

int worker_mutex_init(worker_mutex_t *mutex, const pthread_mutexattr_t *mutexattr)
{
	(void)mutexattr;
	return mutex && weft_mutex_init(&mutex->m_) == 0 ? 0 : -1;
}

int worker_mutex_lock(worker_mutex_t *mutex)
{
	return mutex && weft_mutex_lock(&mutex->m_) == 0 ? 0 : -1;
}

int worker_mutex_unlock(worker_mutex_t *mutex)
{
	return mutex && weft_mutex_unlock(&mutex->m_) == 0 ? 0 : -1;
}

/* Fails (like pthread_mutex_destroy's EBUSY) while the mutex is held. */
int worker_mutex_destroy(worker_mutex_t *mutex)
{
	if (!mutex || weft_mutex_trylock(&mutex->m_) != 0)
		return -1;
	weft_mutex_unlock(&mutex->m_);
	return 0;
}

/* ------------------------------------------------------------ statistics */

void print_app_stats(void)
{
	/* As the seed's library counted, one per dispatch of a thread: its
	 * start (the runtime's `run` counter lags weft_wait; weft's own
	 * `switches` leaves out a task that runs to its end on the fiber it
	 * started on), and every time it is scheduled again after a yield, a
	 * wait (fiber models: parks) or a preemption. */
	long switches = atomic_load(&g.started) + atomic_load(&g.yields);
	weft_rt *rt = atomic_load(&g.rt);
	weft_stats s;
	if (rt && weft_stats_get(rt, &s) == 0)
		switches += (long)(s.parks + s.preemptions);
	long n = atomic_load(&g.finished);
	double avg_turn_time = n ? (double)atomic_load(&g.turnaround_ns) / 1e3 / (double)n : 0;
	double avg_resp_time = n ? (double)atomic_load(&g.response_ns) / 1e3 / (double)n : 0;

	/* The seed's lines, verbatim (its print_app_stats: "DO NOT MODIFY"). */
	fprintf(stderr, "Total context switches %ld \n", switches);
	fprintf(stderr, "Average turnaround time %lf \n", avg_turn_time);
	fprintf(stderr, "Average response time  %lf \n", avg_resp_time);
}
