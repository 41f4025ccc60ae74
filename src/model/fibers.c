/* Model fibers: every task is a fiber on one worker thread (M:1).
 *
 * The worker runs a scheduler loop on its own stack. A task becomes a fiber
 * the first time it is picked: it gets a pooled stack (the fiber record
 * sits at the top of that stack, so a fiber costs no allocation) and runs
 * until it returns, yields or parks; then the scheduler picks the next
 * ready task by the policy. A million queued tasks cost no stacks.
 *
 * Ready work arrives three ways: posts from fibers of this worker go
 * straight into the policy's queue (only the worker touches it); posts
 * from other threads and wake-ups of parked fibers from other threads go
 * through a lock-free inbox that the scheduler drains; timers (sleep,
 * wait_fd timeouts) expire in the scheduler. With nothing ready, the
 * worker sleeps in the poller until the next timer, an fd event, or an
 * inbox push (which writes the poller's eventfd only while it sleeps).
 *
 * Parking is two-phase, so a wake-up can come from any thread at any time
 * (the fiber is already queued on the primitive when it parks): the fiber
 * moves RUNNING -> PARKING by CAS and switches to the scheduler, which, on
 * its own stack, commits PARKING -> PARKED. An unpark that finds RUNNING
 * or PARKING turns it into WOKEN, and the fiber does not park or the
 * scheduler requeues it; an unpark that finds PARKED makes it READY and
 * queues its task; one that finds READY (a fiber preempted after queueing
 * itself as a waiter and before parking) leaves READY_WOKEN, which the
 * fiber's next park consumes. Either way the fiber never runs on two stacks
 * and no wake-up is lost.
 *
 *
 * Preemption (WEFT_PREEMPT=timer) and the quanta psjf and mlfq order by
 * come from a per-worker quantum clock (src/fiber/preempt.h); the tick
 * handler, on_tick below, switches a fiber out only at a safe point
 * (docs/fibers.md states the rule). Sleeps and timeouts run on a virtual
 * clock under random with a chosen seed, so timed code replays. */
#include <stdio.h>
#include <time.h>

#include "core/completion.h"
#include "core/internal.h"
#include "fiber/context.h"
#include "fiber/preempt.h"
#include "fiber/stack.h"
#include "io/poller.h"
#include "io/timers.h"
#include "obs/latency.h"
#include "obs/probes.h"
#include "obs/trace.h"

/* READY_WOKEN: queued to run (yielded or preempted) and woken meanwhile, so
 * its next park must not sleep: a preemption may land between a fiber
 * queueing itself as a waiter and parking. */
enum { RUNNING, READY, READY_WOKEN, PARKING, PARKED, WOKEN, DONE };

#define STACK_CACHE       1024 /* free stacks kept for reuse */
/* Quanta a fiber holding a weft_mutex may overrun before it is preempted
 * anyway: enough to get out of an ordinary critical section, bounded so a
 * fiber that keeps a mutex locked cannot keep the worker. */
#define MUTEX_GRACE_TICKS 2

typedef struct fiber {
	weft__context ctx;
	weft__stack *stack;
	weft_task *task;
	struct fibers *m;
	_Atomic int state;
	weft__timer timer; /* sleep, or a wait_fd timeout */
	int wait_fd;       /* fd of a wait_fd in progress, or -1 */
	bool preempted;    /* readied by a tick: may have become READY_WOKEN */
	bool traced;       /* its first run segment is in the trace */
	int wait_result;   /* wait_fd: ready events, or WEFT_ETIMEDOUT */
} fiber;

typedef struct fibers {
	weft_rt *rt;
	pthread_t thread;

	/* Worker only. */
	weft__context sched;
	fiber *current; /* the running fiber, NULL on the scheduler's stack */
	weft__readyq ready;
	weft__stack_pool stacks;
	weft__timers timers;
	weft__poller poller;
	bool poller_ok;

	/* Pushed by other threads (posts and wake-ups), drained by the worker. */
	WEFT__ALIGNED _Atomic(weft_task *) inbox;
	_Atomic int sleeping; /* the worker is in (or entering) the poller */

	weft__completion done; /* external posts, wait_all sleepers */

	/* The quantum clock (worker only; the tick handler runs on it too). */
	weft__ticker ticker;
	bool preempt;           /* ticks may switch fibers, not only charge */
	_Atomic uint64_t ticks; /* quanta the worker has been busy so far */
	uint64_t tick_switches; /* m->switches at the previous tick */
	int held_ticks;         /* ticks deferred in a row for a held weft_mutex */
	unsigned held_lock_id;  /* weft__tls.mutex_locks of that hold */
	uint64_t boost_every;   /* mlfq: ticks between boosts, 0: never */
	uint64_t next_boost;

	/* Virtual time (random policy with a chosen seed): sleeps and timeouts
	 * are on a clock that jumps to the next timer when nothing else can
	 * happen, so timed code replays exactly. Worker only. */
	bool virtual_time;
	int64_t vnow;
	int fd_waits; /* wait_fd in progress: real events may still come */

	/* Written by the worker only. */
	WEFT__ALIGNED _Atomic uint64_t finished, posted_inside, cancelled, switches, sleeps;
	_Atomic uint64_t preemptions, deferred, parks;
	WEFT__ALIGNED _Atomic uint64_t unparks; /* any thread: an atomic add */
	_Atomic int stopping;
} fibers;

/* Counters written by the worker only: a plain increment, no locked RMW. */
static void bump(_Atomic uint64_t *c, uint64_t n)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
	                      memory_order_relaxed);
}

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t clock_now(const fibers *m)
{
	return m->virtual_time ? m->vnow : now_ns();
}

static fiber *current(void)
{
	return weft__tls.fiber;
}

/* ------------------------------------------------------------ queues */

static void push_inbox(fibers *m, weft_task *t)
{
	weft_task *head = atomic_load_explicit(&m->inbox, memory_order_relaxed);
	do
		t->next_ = head;
	while (!atomic_compare_exchange_weak_explicit(&m->inbox, &head, t, memory_order_seq_cst,
	                                              memory_order_relaxed));
	if (atomic_load(&m->sleeping))
		weft__poller_wake(&m->poller);
}

static void drain_inbox(fibers *m)
{
	if (!atomic_load_explicit(&m->inbox, memory_order_relaxed))
		return; /* the common case: no read-modify-write on the shared line */
	weft_task *stack = atomic_exchange_explicit(&m->inbox, NULL, memory_order_acquire);
	weft_task *in_order = NULL;
	while (stack) { /* reverse: arrival order */
		weft_task *next = stack->next_;
		stack->next_ = in_order;
		in_order = stack;
		stack = next;
	}
	while (in_order) {
		weft_task *next = in_order->next_;
		weft__readyq_push(&m->ready, in_order);
		in_order = next;
	}
}

static bool on_worker(fibers *m)
{
	return weft__tls.rt == m->rt && weft__tls.index == 0;
}

/* Queues a task (new, or a fiber's to resume) from wherever the caller is. */
static void make_ready(fibers *m, weft_task *t)
{
	if (on_worker(m))
		weft__readyq_push(&m->ready, t);
	else
		push_inbox(m, t);
}

/* ------------------------------------------------------------ fibers */

static void fiber_entry(void *arg)
{
	fiber *f = arg;
	weft__tls.nopreempt = 0; /* the scheduler's stays 1 */
	weft__tls.mutexes_held = 0;
	bool ran = weft__run_task(f->m->rt, f->task);
	weft__tls.nopreempt = 1;
	bump(&f->m->cancelled, !ran);
	atomic_store_explicit(&f->state, DONE, memory_order_relaxed);
	weft__context_switch(NULL, &f->m->sched); /* never returns */
}

static fiber *fiber_new(fibers *m, weft_task *t)
{
	weft__stack *s = weft__stack_get(&m->stacks);
	if (!s)
		return NULL;
	uintptr_t top = (uintptr_t)s->base + s->size;
	fiber *f = (fiber *)((top - sizeof(fiber)) & ~(uintptr_t)63);
	f->stack = s;
	f->task = t;
	f->m = m;
	f->wait_fd = -1;
	f->preempted = false;
	f->traced = false;
	atomic_store_explicit(&f->state, RUNNING, memory_order_relaxed);
	size_t usable = ((uintptr_t)f - (uintptr_t)s->base) & ~(size_t)15;
	weft__context_make(&f->ctx, s->base, usable, fiber_entry, f);
	t->fiber_ = f;
	return f;
}

static void fiber_free(fibers *m, fiber *f)
{
	weft__context_release(&f->ctx);
	weft__stack_put(&m->stacks, f->stack);
}

/* Bookkeeping for f becoming the running fiber (just before the switch). */
static void enter(fibers *m, fiber *f)
{
	/* Only a fiber preempted between queueing itself as a waiter and
	 * parking can be woken while READY: everyone else takes the plain
	 * store, no locked instruction. */
	if (f->preempted) {
		f->preempted = false;
		if (atomic_exchange(&f->state, RUNNING) == READY_WOKEN)
			atomic_store(&f->state, WOKEN); /* for its next park */
	} else {
		atomic_store_explicit(&f->state, RUNNING, memory_order_relaxed);
	}
	weft__trace(m->rt, WEFT__TRACE_BEGIN, f->task, !f->traced);
	WEFT__PROBE2(fiber__switch, weft__tls.task, f->task);
	f->traced = true;
	m->current = f;
	weft__tls.fiber = f;
	weft__stack_set_current(f->stack, f->task);
	bump(&m->switches, 1);
}

/* Runs t (starting or resuming its fiber) until the worker comes back to
 * the scheduler: the fiber, or one it yielded to, ended or parked. */
static void run(fibers *m, weft_task *t)
{
	fiber *f = t->fiber_;
	if (!f) {
		if (atomic_load_explicit(&m->rt->cancelling, memory_order_relaxed)) {
			weft__dequeued(m->rt, 1);
			weft__run_task(m->rt, t); /* discards it without a stack */
			bump(&m->cancelled, 1);
			atomic_store_explicit(&m->finished, m->finished + 1, memory_order_release);
			return;
		}
		f = fiber_new(m, t);
		if (!f) {
			/* No stack now (the mapping limit, said on stderr): let
			 * running fibers finish and free some, then retry. */
			weft__readyq_push(&m->ready, t);
			nanosleep(&(struct timespec){0, 1000000}, NULL);
			return;
		}
		weft__dequeued(m->rt, 1);
	}
	enter(m, f);
	weft__context_switch(&m->sched, &f->ctx);
	weft__tls.nopreempt = 1;
	weft__trace(m->rt, WEFT__TRACE_END, NULL, false);
	/* Whoever switched back may be another fiber than f: a yield hands
	 * the worker from fiber to fiber directly. */
	f = m->current;
	t = f->task;
	m->current = NULL;
	weft__stack_set_current(NULL, NULL);
	weft__tls.fiber = NULL;
	weft__tls.task = NULL;

	int s = atomic_load_explicit(&f->state, memory_order_acquire);
	if (s == DONE) {
		fiber_free(m, f);
		atomic_store_explicit(&m->finished, m->finished + 1, memory_order_release);
	} else if (s == READY || s == READY_WOKEN) {
		weft__readyq_push(&m->ready, t); /* yielded or preempted */
	} else if (s == PARKING || s == WOKEN) {
		/* WOKEN: an unpark landed between the fiber's RUNNING ->
		 * PARKING and the load above; it must run again. */
		int parking = PARKING;
		if (s == WOKEN || !atomic_compare_exchange_strong(&f->state, &parking, PARKED)) {
			atomic_store(&f->state, READY); /* woken before it got here */
			weft__readyq_push(&m->ready, t);
		}
	}
}

/* Switches from fiber f to the context `to` (the scheduler or the next
 * fiber); returns when f runs again, with this thread's per-fiber context
 * (the task, the preemption guard) restored. */
static void switch_out(fiber *f, weft__context *to)
{
	weft_task *t = weft__tls.task;
	int nopreempt = weft__tls.nopreempt, mutexes_held = weft__tls.mutexes_held;
	weft__context_switch(&f->ctx, to);
	weft__tls.mutexes_held = mutexes_held;
	weft__tls.nopreempt = nopreempt;
	weft__tls.task = t;
}

/* Switches from the running fiber to the scheduler, to be run again as
 * soon as the policy picks it; returns then. A fiber that yields is not in
 * any wait queue (weft queues a waiter only right before parking it), so
 * nobody can wake it meanwhile: a plain store. */
static void to_scheduler(fiber *f)
{
	atomic_store_explicit(&f->state, READY, memory_order_relaxed);
	switch_out(f, &f->m->sched);
}

/* The same for a preemption, which may land between a fiber queueing
 * itself as a waiter and parking: a wake-up that came while it ran (WOKEN)
 * or comes while it is queued (READY_WOKEN, see weft__fiber_unpark) is kept
 * for its next park. */
static void preempt_to_scheduler(fiber *f)
{
	if (atomic_exchange(&f->state, READY) == WOKEN)
		atomic_store(&f->state, READY_WOKEN);
	f->preempted = true;
	switch_out(f, &f->m->sched);
}

/* A yield switches straight to the next ready fiber when that one has
 * started already and nothing waits in the inbox or the timers, saving the
 * round trip through the scheduler (half the switches). */
static void yield_locked(fiber *f)
{
	fibers *m = f->m;
	if (atomic_load_explicit(&m->inbox, memory_order_relaxed) || m->timers.root) {
		to_scheduler(f);
		return;
	}
	weft_task *self = f->task, *next = weft__readyq_pop(&m->ready);
	if (!next)
		return; /* alone: keep running */
	if (m->ready.ops->ordered && m->ready.ops->more_urgent(&m->ready, self, next)) {
		weft__readyq_unpop(&m->ready, next); /* the caller is more urgent */
		return;
	}
	fiber *g = next->fiber_;
	if (!g) { /* not started yet: the scheduler gives it a stack */
		weft__readyq_unpop(&m->ready, next);
		to_scheduler(f);
		return;
	}
	atomic_store_explicit(&f->state, READY, memory_order_relaxed);
	weft__readyq_push(&m->ready, self);
	weft__trace(m->rt, WEFT__TRACE_END, NULL, false);
	enter(m, g);
	switch_out(f, &g->ctx);
}

void weft__fiber_yield(void)
{
	weft__tls.nopreempt++;
	weft__trace(((fiber *)current())->m->rt, WEFT__TRACE_YIELD, NULL, false);
	yield_locked(current());
	weft__tls.nopreempt--;
}

/* The fiber is already in a wait queue (its waker may run on another
 * thread at once), so going from RUNNING to PARKING is a CAS: a wake-up
 * that came first has left WOKEN, and then the fiber does not park. */
void weft__fiber_park(void *fp)
{
	fiber *f = fp;
	weft__tls.nopreempt++;
	int running = RUNNING;
	if (atomic_compare_exchange_strong(&f->state, &running, PARKING)) {
		weft__trace(f->m->rt, WEFT__TRACE_PARK, NULL, false);
		bump(&f->m->parks, 1);
		WEFT__PROBE1(fiber__park, f->task);
		switch_out(f, &f->m->sched);
	} else /* woken before it could park */
		atomic_store_explicit(&f->state, RUNNING, memory_order_relaxed);
	weft__tls.nopreempt--;
}

void weft__fiber_unpark(void *fp)
{
	fiber *f = fp;
	fibers *m = f->m; /* read before the fiber can run and end */
	weft_task *t = f->task;
	weft__tls.nopreempt++; /* make_ready may push to this worker's queue */
	int s = atomic_load(&f->state);
	for (;;) {
		if (s == PARKED) {
			if (atomic_compare_exchange_weak(&f->state, &s, READY)) {
				weft__trace(m->rt, WEFT__TRACE_WAKE, NULL, false);
				atomic_fetch_add_explicit(&m->unparks, 1, memory_order_relaxed);
				WEFT__PROBE1(fiber__wake, t);
				make_ready(m, t);
				break;
			}
		} else if (s == PARKING || s == RUNNING) {
			/* Not switched out yet: park or the scheduler will see
			 * WOKEN and keep it running. */
			if (atomic_compare_exchange_weak(&f->state, &s, WOKEN))
				break;
		} else if (s == READY) {
			/* Queued already (preempted or yielded after it queued
			 * itself as a waiter): its next park returns at once. */
			if (atomic_compare_exchange_weak(&f->state, &s, READY_WOKEN))
				break;
		} else {
			break; /* already woken */
		}
	}
	weft__tls.nopreempt--;
}

void weft__fiber_sleep(int64_t ns)
{
	fiber *f = current();
	weft__tls.nopreempt++;
	weft__timers_add(&f->m->timers, &f->timer, clock_now(f->m) + ns);
	weft__fiber_park(f);
	weft__tls.nopreempt--;
}

int weft__fiber_wait_fd(int fd, short events, int64_t timeout_ns)
{
	fiber *f = current();
	fibers *m = f->m;
	weft__tls.nopreempt++;
	if (weft__poller_arm(&m->poller, fd, events, f) != 0) {
		weft__tls.nopreempt--;
		return WEFT_EINVAL;
	}
	f->wait_fd = fd;
	f->wait_result = 0;
	if (timeout_ns >= 0)
		weft__timers_add(&m->timers, &f->timer, clock_now(m) + timeout_ns);
	m->fd_waits++;
	weft__fiber_park(f);
	m->fd_waits--;
	f->wait_fd = -1;
	weft__tls.nopreempt--;
	return f->wait_result;
}

static void fd_ready(void *token, short revents, void *ctx)
{
	fibers *m = ctx;
	fiber *f = token;
	weft__timers_remove(&m->timers, &f->timer);
	f->wait_result = revents;
	weft__fiber_unpark(f);
}

static void expire_timers(fibers *m)
{
	if (weft__timers_next(&m->timers) == INT64_MAX)
		return;
	int64_t now = clock_now(m);
	weft__timer *tm;
	while ((tm = weft__timers_pop_expired(&m->timers, now))) {
		fiber *f = (fiber *)((char *)tm - offsetof(fiber, timer));
		if (f->wait_fd >= 0) {
			weft__poller_disarm(&m->poller, f->wait_fd);
			f->wait_result = WEFT_ETIMEDOUT;
		}
		weft__fiber_unpark(f);
	}
}

/* ------------------------------------------------------------ quanta */

/* Runs in the signal handler of the worker's quantum clock (preempt.h),
 * interrupting whatever the worker was doing. Every tick charges the
 * running fiber a quantum (psjf, mlfq); under WEFT_PREEMPT=timer a fiber
 * that has run through a whole tick interval is switched out if the
 * interrupted code is a safe point, else at a later tick. */
static void on_tick(void *ctx, uintptr_t pc)
{
	fibers *m = ctx;
	atomic_store_explicit(&m->ticks, atomic_load_explicit(&m->ticks, memory_order_relaxed) + 1,
	                      memory_order_relaxed);
	fiber *f = weft__tls.fiber;
	if (!f || weft__tls.nopreempt)
		return; /* the scheduler, or weft's own critical section */
	if (m->ready.ops->charge)
		m->ready.ops->charge(&m->ready, f->task);
	uint64_t switches = atomic_load_explicit(&m->switches, memory_order_relaxed);
	bool whole_quantum = switches == m->tick_switches;
	m->tick_switches = switches;
	if (!m->preempt || !whole_quantum)
		return;
	if (!weft__pc_in_app(pc)) {
		bump(&m->deferred, 1); /* in libc or another library: next tick */
		return;
	}
	if (weft__tls.mutexes_held) {
		/* Grace is per hold: a fiber that locks and unlocks all the time
		 * is caught holding at many ticks, each time a new hold. */
		if (weft__tls.mutex_locks != m->held_lock_id) {
			m->held_lock_id = weft__tls.mutex_locks;
			m->held_ticks = 0;
		}
		if (m->held_ticks < MUTEX_GRACE_TICKS) {
			m->held_ticks++;
			bump(&m->deferred, 1);
			return;
		}
	}
	m->held_ticks = 0;
	bump(&m->preemptions, 1);
	weft__tls.nopreempt++;
	weft__trace(m->rt, WEFT__TRACE_PREEMPT, NULL, false);
	WEFT__PROBE1(fiber__preempt, f->task);
	weft__ticker_unblock(); /* nopreempt is raised: ticks return at once */
	preempt_to_scheduler(f);
	weft__tls.nopreempt--;
}

static void start_quantum_clock(fibers *m)
{
	const weft_config *cfg = &m->rt->cfg;
	m->preempt = cfg->preempt == WEFT_PREEMPT_TIMER;
	if (!m->preempt && !m->ready.ops->charge)
		return;
	int64_t quantum = (int64_t)cfg->quantum_us * 1000;
	int rc = weft__ticker_start(&m->ticker, quantum, on_tick, m);
	if (rc) {
		fprintf(stderr, "weft: no quantum clock (%s): fibers run cooperatively\n",
		        weft_strerror(rc));
		m->preempt = false;
		return;
	}
	if (m->ready.ops->boost) {
		m->boost_every = cfg->mlfq_boost_us / cfg->quantum_us;
		m->boost_every += m->boost_every == 0;
		m->next_boost = m->boost_every;
	}
}

/* mlfq's periodic boost, in quanta of busy worker time: a worker that idles
 * has nobody to starve. */
static void maybe_boost(fibers *m)
{
	if (!m->boost_every)
		return;
	uint64_t ticks = atomic_load_explicit(&m->ticks, memory_order_relaxed);
	if (ticks < m->next_boost)
		return;
	m->ready.ops->boost(&m->ready);
	m->next_boost = ticks + m->boost_every;
}

/* ------------------------------------------------------------ waiting */

static uint64_t sum_finished(void *state)
{
	return atomic_load(&((fibers *)state)->finished);
}

static uint64_t sum_posted(void *state)
{
	return atomic_load(&((fibers *)state)->posted_inside);
}

static const weft__worker_sums sums = {sum_finished, sum_posted};

static void fibers_wait_all(weft_rt *rt)
{
	fibers *m = rt->model_state;
	weft__wait_quiescent(&m->done, rt, &sums, m);
}

/* ------------------------------------------------------------ worker */

/* Nothing is ready: sleep in the poller until the next timer, an fd event
 * or a post. Under virtual time, when no fd can wake anybody, only a post
 * could come before the next timer: look once without sleeping, then jump
 * the clock to the timer. */
static void idle(fibers *m)
{
	int64_t next = weft__timers_next(&m->timers);
	int64_t timeout = -1;
	if (next != INT64_MAX) {
		timeout = next - clock_now(m);
		if (timeout < 0 || (m->virtual_time && m->fd_waits == 0))
			timeout = 0;
	}
	bump(&m->sleeps, 1);
	weft__ticker_idle(&m->ticker, true);
	weft__idle_begin(m->rt, 0);
	weft__poller_wait(&m->poller, timeout, fd_ready, m);
	weft__idle_end(m->rt, 0);
	weft__ticker_idle(&m->ticker, false);
	if (m->virtual_time && next != INT64_MAX && m->ready.len == 0 &&
	    atomic_load(&m->inbox) == NULL && next > m->vnow)
		m->vnow = next;
}

static void *worker_main(void *arg)
{
	fibers *m = arg;
	weft__tls.rt = m->rt;
	weft__tls.index = 0;
	weft__tls.nopreempt = 1; /* the scheduler is never preempted */
	weft__worker_started(m->rt, 0);
	weft__context_init_thread(&m->sched);
	weft__stack_overflow_handler_install();
	start_quantum_clock(m);
	for (;;) {
		drain_inbox(m);
		expire_timers(m);
		maybe_boost(m);
		weft_task *t = weft__readyq_pop(&m->ready);
		if (t) {
			run(m, t);
			continue;
		}
		weft__notify_quiescent(&m->done, &sums, m);
		if (atomic_load(&m->stopping) && weft__quiescent(&m->done, &sums, m))
			break;
		atomic_store(&m->sleeping, 1); /* seq_cst: pairs with push_inbox */
		if (atomic_load(&m->inbox) == NULL)
			idle(m);
		atomic_store(&m->sleeping, 0);
	}
	weft__ticker_stop(&m->ticker);
	weft__worker_stopped(m->rt, 0);
	weft__context_release(&m->sched);
	weft__tls.nopreempt = 0;
	weft__tls.rt = NULL;
	weft__tls.index = -1;
	return NULL;
}

/* ------------------------------------------------------------ ops */

static void push_task(void *state, weft_task *t)
{
	push_inbox(state, t);
}

static int fibers_submit(weft_rt *rt, weft_task *t, bool from_task)
{
	fibers *m = rt->model_state;
	t->fiber_ = NULL;
	if (from_task) {
		atomic_store_explicit(&m->posted_inside, m->posted_inside + 1,
		                      memory_order_relaxed);
		weft__tls.nopreempt++;
		weft__readyq_push(&m->ready, t);
		weft__tls.nopreempt--;
		return 0;
	}
	return weft__external_post(&m->done, rt, t, push_task, m);
}

static void fibers_release(weft_rt *rt)
{
	fibers *m = rt->model_state;
	weft__stack_pool_destroy(&m->stacks);
	if (m->poller_ok)
		weft__poller_destroy(&m->poller);
	weft__free(m, sizeof(*m));
	rt->model_state = NULL;
}

static int fibers_start(weft_rt *rt)
{
	fibers *m = weft__alloc(sizeof(*m));
	if (!m)
		return WEFT_ENOMEM;
	m->rt = rt;
	rt->model_state = m;
	weft__readyq_init(&m->ready, &rt->cfg);
	weft__timers_init(&m->timers);
	m->virtual_time = rt->cfg.policy == WEFT_POLICY_RANDOM && rt->seed_given;
	int rc = weft__stack_pool_init(&m->stacks, rt->cfg.stack_size, STACK_CACHE);
	if (rc == 0 && (rc = weft__poller_init(&m->poller)) == 0)
		m->poller_ok = true;
	if (rc == 0)
		rc = weft__thread_create(&m->thread, worker_main, m);
	if (rc) {
		fibers_release(rt);
		return rc;
	}
	return 0;
}

static void fibers_stop(weft_rt *rt)
{
	fibers *m = rt->model_state;
	fibers_wait_all(rt);
	weft__external_drain(&m->done);
	atomic_store(&m->stopping, 1);
	weft__poller_wake(&m->poller);
	pthread_join(m->thread, NULL);
}

static void fibers_stats(weft_rt *rt, weft_stats *s)
{
	fibers *m = rt->model_state;
	uint64_t finished = atomic_load(&m->finished);
	uint64_t cancelled = atomic_load(&m->cancelled);
	s->posted += atomic_load(&m->posted_inside) + atomic_load(&m->done.external_posted) -
	             atomic_load(&m->done.external_refused);
	s->run += finished - cancelled;
	s->cancelled += cancelled;
	s->sleeps += atomic_load(&m->sleeps);
	s->switches += atomic_load(&m->switches);
	s->preemptions += atomic_load(&m->preemptions);
	s->parks += atomic_load(&m->parks);
	s->unparks += atomic_load(&m->unparks);
}

const weft__model_ops weft__model_fibers = {
        .name = "fibers",
        .start = fibers_start,
        .submit = fibers_submit,
        .wait_all = fibers_wait_all,
        .stop = fibers_stop,
        .release = fibers_release,
        .stats = fibers_stats,
};
