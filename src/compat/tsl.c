/* The seed's Thread Support Library (include/weft/compat/tsl.h) on weft's
 * fiber layer: the context switch of fiber/context.h, the guarded stack
 * pool of fiber/stack.h and a policy's ready queue (core/internal.h). No
 * weft runtime is created: TSL is its own little M:1 scheduler, and it
 * runs on the caller's kernel thread, not on a worker, because the seed's
 * main() is itself a TSL thread.
 *
 * Threads. A thread control block (tcb) sits at the top of the thread's
 * own stack, as fibers.c keeps its fiber record, so creating a thread
 * allocates nothing besides the (usually pooled) stack. The main thread's
 * tcb is static and its context is the kernel thread's own (init_thread):
 * it runs on the original stack, which is saved and resumed like any
 * other. A table of TSL_MAXTHREADS slots holds every thread that is alive
 * or not yet joined; tids are handed out 2, 3, ... and looked up by a scan
 * of the table (at most 256 entries: O(n) is the simple, adequate choice).
 *
 * States (named, with strings, for the messages): RUNNING (exactly one,
 * `current`), READY (in the ready queue), JOINING (asleep in tsl_join,
 * target->joiner points back), EXITED and CANCELLED (terminated; the tcb
 * and stack stay until tsl_join reaps them).
 *
 * The ready queue is a weft__readyq: the policy is chosen from salg and
 * WEFT_POLICY. Yielding to a specific tid, and cancelling a ready thread,
 * must take one thread out of the middle of the queue, which the policies
 * cannot do: take() pops until it meets the thread and unpops the rest in
 * reverse order. unpop restores a task exactly where it was (it keeps its
 * key), so the queue, and the random policy's draws, are as if the taken
 * thread had never been queued. The alternative, lazy deletion (skip stale
 * entries at pop), does not fit intrusive links: a thread taken and
 * queued again would need a second link while the first is still in place.
 *
 * psjf (ALG_MYALGORITHM) and mlfq charge a thread one quantum per
 * WEFT_QUANTUM_US of CPU time (CLOCK_THREAD_CPUTIME_ID, so time the kernel
 * thread spent descheduled is not charged) when it gives up the CPU; mlfq's
 * boost runs at a pick once WEFT_MLFQ_BOOST_US have passed. fifo and random
 * read no clock.
 *
 * Deadlock: the only way to wait is tsl_join, and a join that would close
 * a cycle of joiners is refused, so whenever some thread waits, the chain
 * of targets ends at a running or ready thread. Hence, when the running
 * thread terminates and nothing is ready, nobody is left at all: the
 * process exits with status 0, on the main thread's stack (switching back
 * to it if need be, even if main exited or was cancelled: its context is
 * always saved), after every stack has been unmapped.
 *
 * Everything here runs on one kernel thread; nothing is shared with other
 * threads except `initialised` (tsl_init once per process). */
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <weft/compat/tsl.h>

#include "core/internal.h"
#include "fiber/context.h"
#include "fiber/stack.h"

#define STACK_CACHE 64 /* free stacks the pool keeps for reuse */

typedef enum tstate { RUNNING, READY, JOINING, EXITED, CANCELLED } tstate;

static const char *const tstate_names[] = {
        [RUNNING] = "running", [READY] = "ready",         [JOINING] = "joining",
        [EXITED] = "exited",   [CANCELLED] = "cancelled",
};

typedef struct tcb {
	weft_task node; /* ready queue link; first, so a node is its tcb */
	weft__context ctx;
	weft__stack *stack; /* NULL for the main thread */
	void (*fn)(void *);
	void *arg;
	int tid;
	tstate state;
	struct tcb *joiner;  /* the thread asleep in tsl_join(this), or NULL */
	struct tcb *joining; /* JOINING: the thread this one waits for */
	int64_t unused_ns;   /* psjf, mlfq: CPU time not yet charged as quanta */
} tcb;

/* The library's state: touched only by the kernel thread that called
 * tsl_init (`home`), as TSL is cooperative M:1. */
static struct {
	bool active; /* initialised and not torn down */
	pthread_t home;
	tcb main;
	tcb *current;
	tcb *slots[TSL_MAXTHREADS]; /* alive or unjoined threads */
	int next_tid;
	weft__readyq ready;
	weft__stack_pool pool;
	bool charging;       /* the policy has charge (psjf, mlfq) */
	int64_t quantum_ns;  /* charging: CPU time per quantum */
	int64_t boost_ns;    /* mlfq: boost period, 0 without boost */
	int64_t last_boost;  /* monotonic ns */
	int64_t switched_in; /* charging: CPU clock when current started */
	bool shutting_down;  /* main is resumed only to exit the process */
} g;

static atomic_bool initialised;

static int64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* True on the home thread once tsl_init succeeded: the guard of every
 * call. */
static bool usable(void)
{
	return atomic_load_explicit(&initialised, memory_order_acquire) && g.active &&
	       pthread_equal(pthread_self(), g.home);
}

static tcb *find(int tid)
{
	if (tid <= 0)
		return NULL;
	for (int i = 0; i < TSL_MAXTHREADS; i++)
		if (g.slots[i] && g.slots[i]->tid == tid)
			return g.slots[i];
	return NULL;
}

/* ------------------------------------------------------------ ready queue */

static void make_ready(tcb *t)
{
	t->state = READY;
	weft__readyq_push(&g.ready, &t->node);
}

/* Takes t, which is READY, out of the middle of the ready queue. */
static void take(tcb *t)
{
	weft_task *popped[TSL_MAXTHREADS];
	int n = 0;
	weft_task *x;
	while ((x = weft__readyq_pop(&g.ready)) != &t->node) {
		if (!x || n == TSL_MAXTHREADS) {
			weft__log(WEFT_LOG_ERROR,
			          "weft: tsl: thread %d is %s but not in the ready queue\n", t->tid,
			          tstate_names[t->state]);
			abort();
		}
		popped[n++] = x;
	}
	while (n > 0)
		weft__readyq_unpop(&g.ready, popped[--n]);
}

/* The next thread to run, or NULL when none is ready. */
static tcb *pick(void)
{
	if (g.boost_ns) {
		int64_t now = clock_ns(CLOCK_MONOTONIC);
		if (now - g.last_boost >= g.boost_ns) {
			g.ready.ops->boost(&g.ready);
			g.last_boost = now;
		}
	}
	return (tcb *)weft__readyq_pop(&g.ready);
}

/* The running thread gives up the CPU: charge it the quanta it used. */
static void charge(tcb *t)
{
	if (!g.charging)
		return;
	int64_t now = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	t->unused_ns += now - g.switched_in;
	g.switched_in = now;
	while (t->unused_ns >= g.quantum_ns) {
		g.ready.ops->charge(&g.ready, &t->node);
		t->unused_ns -= g.quantum_ns;
	}
}

/* ------------------------------------------------------------ switching */

static void release_all(void)
{
	for (int i = 0; i < TSL_MAXTHREADS; i++) {
		tcb *t = g.slots[i];
		g.slots[i] = NULL;
		if (t && t != &g.main) {
			weft__stack *s = t->stack;
			weft__context_release(&t->ctx);
			weft__stack_put(&g.pool, s);
		}
	}
	weft__stack_pool_destroy(&g.pool);
	weft__context_release(&g.main.ctx);
	weft__stack_set_current(NULL, NULL);
	g.current = NULL;
	g.active = false;
}

/* Nothing is left to run: on the main thread's stack, free everything and
 * end the process as the seed's implementations do. */
__attribute__((noreturn)) static void finish_process(void)
{
	release_all();
	exit(0);
}

/* Makes next the running thread and switches to it from self (NULL: self
 * has finished and is never resumed). Returns when self runs again. */
static void switch_to(tcb *self, tcb *next)
{
	next->state = RUNNING;
	g.current = next;
	weft__stack_set_current(next->stack, next->stack ? next : NULL);
	if (g.charging)
		g.switched_in = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	weft__context_switch(self ? &self->ctx : NULL, &next->ctx);
	if (g.shutting_down && self == &g.main)
		finish_process();
}

/* Ends the running thread (EXITED) and wakes its joiner. Does not
 * return. */
__attribute__((noreturn)) static void terminate(tcb *self)
{
	self->state = EXITED;
	if (self->joiner) {
		self->joiner->joining = NULL;
		make_ready(self->joiner);
	}
	tcb *next = pick();
	if (!next) {
		if (self == &g.main)
			finish_process();
		g.shutting_down = true;
		next = &g.main;
	}
	/* Main's context is kept (the process ends on its stack); a thread's
	 * is finished, and its stack stays until it is joined. */
	switch_to(self == &g.main ? self : NULL, next);
	weft__log(WEFT_LOG_ERROR, "weft: tsl: thread %d ran after it exited\n", self->tid);
	abort();
}

static void thread_entry(void *arg)
{
	tcb *t = arg;
	t->fn(t->arg);
	terminate(t);
}

/* Frees the terminated thread t (its tcb lives on its stack). */
static void reap(tcb *t)
{
	for (int i = 0; i < TSL_MAXTHREADS; i++)
		if (g.slots[i] == t)
			g.slots[i] = NULL;
	if (t == &g.main)
		return; /* its context is needed to end the process */
	weft__stack *s = t->stack;
	weft__context_release(&t->ctx);
	weft__stack_put(&g.pool, s);
}

/* Whatever remains when the process exits while the main thread runs
 * (main returned, or called exit): unmap the stacks. Skipped when exit is
 * called on a TSL thread's stack, which must not be unmapped under it. */
static void at_exit(void)
{
	if (usable() && g.current == &g.main)
		release_all();
}

/* ------------------------------------------------------------ the API */

int tsl_init(int salg)
{
	weft_policy policy;
	switch (salg) {
	case ALG_FCFS:
		policy = WEFT_POLICY_FIFO;
		break;
	case ALG_RANDOM:
		policy = WEFT_POLICY_RANDOM;
		break;
	case ALG_MYALGORITHM:
		policy = WEFT_POLICY_PSJF;
		break;
	default:
		return TSL_ERROR;
	}
	if (atomic_exchange(&initialised, true))
		return TSL_ERROR;

	/* weft's one reader of WEFT_* (defaults < code < environment); the
	 * runtime object only receives the result. */
	weft_config in;
	weft_config_init(&in);
	in.model = WEFT_MODEL_FIBERS;
	in.policy = policy;
	in.stack_size = TSL_STACKSIZE;
	weft_rt scratch;
	memset(&scratch, 0, sizeof(scratch));
	if (weft__config_resolve(&scratch, &in) != 0)
		goto fail;
	const weft_config *cfg = &scratch.cfg;
	/* The tcb takes the top of each stack: ask for that much more. */
	if (weft__stack_pool_init(&g.pool, cfg->stack_size + sizeof(tcb) + 64, STACK_CACHE) != 0)
		goto fail;
	if (weft__stack_overflow_handler_install() != 0)
		goto fail;

	weft__readyq_init(&g.ready, cfg);
	g.charging = g.ready.ops->charge != NULL;
	g.quantum_ns = (int64_t)cfg->quantum_us * 1000;
	g.boost_ns = g.ready.ops->boost ? (int64_t)cfg->mlfq_boost_us * 1000 : 0;
	g.last_boost = clock_ns(CLOCK_MONOTONIC);
	g.switched_in = g.charging ? clock_ns(CLOCK_THREAD_CPUTIME_ID) : 0;

	memset(&g.main, 0, sizeof(g.main));
	weft__context_init_thread(&g.main.ctx);
	g.main.tid = TID_MAIN;
	g.main.state = RUNNING;
	memset(g.slots, 0, sizeof(g.slots));
	g.slots[0] = &g.main;
	g.current = &g.main;
	g.next_tid = TID_MAIN + 1;
	g.shutting_down = false;
	g.home = pthread_self();
	g.active = true;
	atexit(at_exit);
	if (cfg->stats) /* WEFT_STATS=1: what a replay needs */
		weft__log(WEFT_LOG_NOTICE,
		          "weft: tsl: policy %s, seed %llu, stacks of at least %zu bytes\n",
		          g.ready.ops->name, (unsigned long long)cfg->seed, cfg->stack_size);
	return TSL_SUCCESS;

fail:
	atomic_store(&initialised, false);
	return TSL_ERROR;
}

int tsl_create_thread(void (*tsf)(void *), void *targ)
{
	if (!usable() || !tsf)
		return TSL_ERROR;
	int slot = -1;
	for (int i = 0; i < TSL_MAXTHREADS && slot < 0; i++)
		if (!g.slots[i])
			slot = i;
	if (slot < 0)
		return TSL_ERROR;
	/* Sequential tids; after INT_MAX, start over at 2, skipping tids
	 * still in use. */
	int tid = g.next_tid;
	while (find(tid))
		tid = tid == INT_MAX ? TID_MAIN + 1 : tid + 1;
	weft__stack *s = weft__stack_get(&g.pool);
	if (!s)
		return TSL_ERROR;
	g.next_tid = tid == INT_MAX ? TID_MAIN + 1 : tid + 1;

	uintptr_t top = (uintptr_t)s->base + s->size;
	tcb *t = (tcb *)((top - sizeof(tcb)) & ~(uintptr_t)63);
	memset(t, 0, sizeof(*t));
	t->stack = s;
	t->fn = tsf;
	t->arg = targ;
	t->tid = tid;
	size_t usable_size = ((uintptr_t)t - (uintptr_t)s->base) & ~(size_t)15;
	weft__context_make(&t->ctx, s->base, usable_size, thread_entry, t);
	g.slots[slot] = t;
	make_ready(t);
	return tid;
}

int tsl_yield(int tid)
{
	if (!usable() || tid < 0)
		return TSL_ERROR;
	tcb *self = g.current, *next;
	if (tid == TSL_ANY) {
		charge(self);
		next = pick();
		if (!next)
			return self->tid; /* alone: keep running */
		if (g.ready.ops->ordered &&
		    g.ready.ops->more_urgent(&g.ready, &self->node, &next->node)) {
			weft__readyq_unpop(&g.ready, &next->node);
			return self->tid; /* the caller is more urgent */
		}
	} else {
		next = find(tid);
		if (!next || next->state != READY)
			return TSL_ERROR;
		take(next);
		charge(self);
	}
	int to = next->tid; /* next may be joined and gone when self resumes */
	make_ready(self);
	switch_to(self, next);
	return to;
}

int tsl_exit(void)
{
	if (!usable())
		return TSL_ERROR;
	terminate(g.current);
}

int tsl_join(int tid)
{
	if (!usable())
		return TSL_ERROR;
	tcb *self = g.current, *t = find(tid);
	if (!t || t == self || (t->joiner && t->joiner != self))
		return TSL_ERROR;
	if (t->state != EXITED && t->state != CANCELLED) {
		for (tcb *u = t; u; u = u->state == JOINING ? u->joining : NULL)
			if (u == self)
				return TSL_ERROR; /* a cycle of joiners: deadlock */
		t->joiner = self;
		self->joining = t;
		self->state = JOINING;
		charge(self);
		tcb *next = pick();
		if (!next) { /* impossible while cycles are refused */
			weft__log(WEFT_LOG_ERROR,
			          "weft: tsl: thread %d joins %d (%s) and nothing is ready\n",
			          self->tid, tid, tstate_names[t->state]);
			abort();
		}
		switch_to(self, next);
		/* Woken by t's termination. */
	}
	reap(t);
	return tid;
}

int tsl_cancel(int tid)
{
	if (!usable())
		return TSL_ERROR;
	tcb *self = g.current, *t = find(tid);
	if (!t || t == self)
		return TSL_ERROR;
	switch (t->state) {
	case READY:
		take(t);
		break;
	case JOINING:
		t->joining->joiner = NULL;
		t->joining = NULL;
		break;
	case EXITED:
	case CANCELLED:
		return TSL_SUCCESS;
	case RUNNING: /* only self runs */
		return TSL_ERROR;
	}
	t->state = CANCELLED;
	if (t->joiner) {
		t->joiner->joining = NULL;
		make_ready(t->joiner);
	}
	return TSL_SUCCESS;
}

int tsl_gettid(void)
{
	if (!usable())
		return TSL_ERROR;
	return g.current->tid;
}
