/* Tasks and groups: initialisation, running, and completion as seen by
 * weft_wait and weft_group_wait.
 *
 * Completion must be the last thing weft does with a task or a group: the
 * owner may free either the moment it sees it finished (see "completion"
 * below for how waiters are found and woken without touching it after). */
#include <sched.h>
#include <stdalign.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/internal.h"
#include "core/observe.h"
#include "core/spin.h"
#include "core/standin.h"
#include "obs/probes.h"
#include "sync/waiter.h"

#ifdef WEFT_HAVE_VALGRIND
#include <valgrind/memcheck.h>
#endif

static _Atomic uint32_t *state_word(const weft_task *t)
{
	return (_Atomic uint32_t *)&t->state_;
}

static _Atomic uint32_t *pending_word(const weft_group *g)
{
	return (_Atomic uint32_t *)&g->pending_;
}

/* Whether the in-flight bits of a state word name a task or group posted
 * before this process was forked from its parent. */
static bool from_parent(uint32_t bits)
{
	return ((bits ^ weft__in_flight_bits(NULL)) & WEFT__FORK_BITS) != 0;
}

/* Says whether t is queued or running, reading memory that may never have
 * been initialised (a task about to be initialised for the first time):
 * the in-flight signature tells a posted task from leftover bytes (random
 * bytes pass for one with a chance of about 2^-28). */
static bool posted_and_unfinished(const weft_task *t)
{
#ifdef WEFT_HAVE_VALGRIND
	VALGRIND_MAKE_MEM_DEFINED(&t->state_, sizeof(t->state_));
#endif
	uint32_t s = atomic_load(state_word(t));
	uint32_t st = s & WEFT__STATE_MASK;
	return (s & WEFT__SIGN_MASK) == weft__in_flight_sign(t) &&
	       (st == WEFT_TASK_QUEUED || st == WEFT_TASK_RUNNING) && !from_parent(s);
}

int weft_task_init(weft_task *t, weft_fn fn, void *arg)
{
	if (!t || !fn)
		return WEFT_EINVAL;
	if (posted_and_unfinished(t))
		return WEFT_EBUSY; /* its queue link would be lost */
	memset(t, 0, sizeof(*t));
	t->fn_ = fn;
	t->arg_ = arg;
	return 0;
}

bool weft__task_posted_unfinished(const weft_task *t)
{
	return posted_and_unfinished(t);
}

static bool in_flight(const weft_task *t)
{
	uint32_t st = atomic_load(state_word(t)) & WEFT__STATE_MASK;
	return st == WEFT_TASK_QUEUED || st == WEFT_TASK_RUNNING;
}

int weft_task_set_priority(weft_task *t, int64_t priority)
{
	if (!t)
		return WEFT_EINVAL;
	if (in_flight(t))
		return WEFT_EBUSY;
	t->priority_ = priority;
	return 0;
}

_Static_assert(sizeof(void *) != 8 || sizeof(weft_task) == 96, "weft_task keeps its size (ABI)");
_Static_assert(sizeof(void *) != 8 || sizeof(weft_group) == 40, "weft_group keeps its size (ABI)");

void weft__task_request_level(weft_task *t, int level)
{
	atomic_store_explicit((_Atomic int32_t *)&t->level_request_, level + 1,
	                      memory_order_relaxed);
}

int64_t weft_task_priority(const weft_task *t)
{
	return t ? t->priority_ : 0;
}

weft_task_state weft_task_state_of(const weft_task *t)
{
	if (!t)
		return WEFT_TASK_IDLE;
	return (weft_task_state)(atomic_load(state_word(t)) & WEFT__STATE_MASK);
}

const char *weft_task_state_name(weft_task_state state)
{
	static const char *const names[] = {
	        [WEFT_TASK_IDLE] = "idle",           [WEFT_TASK_QUEUED] = "queued",
	        [WEFT_TASK_RUNNING] = "running",     [WEFT_TASK_DONE] = "done",
	        [WEFT_TASK_CANCELLED] = "cancelled",
	};
	_Static_assert(sizeof(names) / sizeof(names[0]) == WEFT_TASK_STATE_COUNT_,
	               "a name per task state");
	return (unsigned)state < WEFT_TASK_STATE_COUNT_ ? names[state] : NULL;
}

/* ------------------------------------------------------------ completion */

/* Waiting for a task or a group: a waiter puts a record (on its own stack)
 * on the object's list and parks; the finisher takes the list and wakes
 * each record, so a wake-up costs the same whatever else is parked (one
 * global table of buckets did not: its chains grew with the parked fibers).
 *
 * The list is guarded by a lock bit in the object's state word, held for a
 * few instructions: by a waiter adding itself, and by the finisher taking
 * the list right before it publishes completion, with the same store that
 * releases the bit. After that store the finisher touches only the records
 * it took, never the object, which its owner may free at once. A finisher
 * that finds no waiter bit publishes with one CAS. */

static void pause_briefly(int *spins)
{
	if (++*spins < 100)
		weft__cpu_relax();
	else
		sched_yield(); /* the holder was descheduled in its few instructions */
}

static void wake_list(weft__waiter *list, int result)
{
	while (list) {
		weft__waiter *next = list->next; /* before the waiter can return */
		list->result = result;
		weft__waiter_unpark(list);
		list = next;
	}
}

static void group_finish(weft_group *g)
{
	_Atomic uint32_t *w = pending_word(g);
	uint32_t p = atomic_load_explicit(w, memory_order_relaxed);
	int spins = 0;
	for (;;) {
		if (p >= 2 * WEFT__GROUP_ONE || !(p & WEFT__GROUP_WAITER)) {
			/* Not the last, or nobody waits: a waiter adding itself
			 * meanwhile sees the count it leaves (group_wait). */
			if (atomic_compare_exchange_weak(w, &p, p - WEFT__GROUP_ONE))
				return;
			continue;
		}
		if (p & WEFT__GROUP_LOCKED) {
			pause_briefly(&spins);
			p = atomic_load_explicit(w, memory_order_relaxed);
			continue;
		}
		if (atomic_compare_exchange_weak(w, &p, p | WEFT__GROUP_LOCKED))
			break;
	}
	weft__waiter *list = g->waiters_;
	g->waiters_ = NULL;
	/* Subtract rather than store: a post into the group may add meanwhile. */
	atomic_fetch_sub(w, WEFT__GROUP_ONE | WEFT__GROUP_WAITER | WEFT__GROUP_LOCKED);
	wake_list(list, 0);
}

/* A task in a group is finished in two steps, its state and then its
 * group, so each waiter finds its object still to be touched: a group
 * waiter (woken by the second) must be able to re-use or free the tasks,
 * and a task waiter (woken by the first) the group once it has waited for
 * each of its tasks. So a task's completion is published only after its
 * group's, and a weft_wait that finds a grouped task finished waits until
 * the finisher has left the group: the finisher counts itself in one of
 * FINISHING stripes (its thread's, chosen once) before it publishes the
 * task and leaves after the group, and writes which stripe into the task
 * (seq_, free once the task runs) before publishing it. Tasks without a
 * group pay nothing; a grouped one an uncontended increment and decrement
 * on its thread's line. The wait spins (a few instructions of the
 * finisher's, unless it was descheduled there), and only when it saw the
 * task finished by itself: the finisher wakes the waiters it took after
 * it left the group. */
#define FINISHING 64

static struct {
	alignas(64) _Atomic uint32_t n;
} finishing[FINISHING];

static unsigned finishing_stripe(void)
{
	static _Atomic unsigned next;
	static _Thread_local unsigned mine; /* 1 + stripe, 0: not chosen yet */
	if (!mine)
		mine = 1 + atomic_fetch_add_explicit(&next, 1, memory_order_relaxed) % FINISHING;
	return mine - 1;
}

/* After t was seen finished: returns once its finisher has left its group. */
static void await_group_left(const weft_task *t)
{
	if (!t->group_)
		return;
	_Atomic uint32_t *n = &finishing[t->seq_ % FINISHING].n;
	int spins = 0;
	while (atomic_load_explicit(n, memory_order_acquire) != 0)
		pause_briefly(&spins);
}

/* Publishes t's end (one CAS when nobody waits) and returns the waiters
 * to wake, taken under the lock bit. */
static inline weft__waiter *publish_end(weft_task *t, weft_task_state end)
{
	_Atomic uint32_t *w = state_word(t);
	uint32_t s = atomic_load_explicit(w, memory_order_relaxed);
	int spins = 0;
	for (;;) {
		if (s & WEFT__LOCKED) {
			pause_briefly(&spins);
			s = atomic_load_explicit(w, memory_order_relaxed);
		} else if (!(s & WEFT__WAITER)) {
			if (atomic_compare_exchange_weak(w, &s, end))
				return NULL;
		} else if (atomic_compare_exchange_weak(w, &s, s | WEFT__LOCKED)) {
			weft__waiter *list = t->waiters_;
			t->waiters_ = NULL;
			atomic_store(w, end);
			return list;
		}
	}
}

/* The end of a task in group g: out of line, so that a task without a
 * group finishes with the code it always had. */
static __attribute__((noinline)) void finish_grouped(weft_task *t, weft_group *g,
                                                     weft_task_state end)
{
	/* A fiber preempted inside the window would leave a waiter on its
	 * own kernel thread spinning for ever. */
	weft__tls.nopreempt++;
	unsigned k = finishing_stripe();
	_Atomic uint32_t *left = &finishing[k].n;
	atomic_fetch_add_explicit(left, 1, memory_order_relaxed);
	t->seq_ = k; /* ordered before the publication below by its CAS */
	weft__waiter *list = publish_end(t, end);
	group_finish(g);
	atomic_fetch_sub_explicit(left, 1, memory_order_release);
	weft__tls.nopreempt--;
	wake_list(list, end == WEFT_TASK_DONE ? 0 : WEFT_ECANCELED);
}

void weft__task_finish(weft_task *t, weft_task_state end)
{
	weft_group *g = t->group_;
	if (g) {
		finish_grouped(t, g, end);
		return;
	}
	wake_list(publish_end(t, end), end == WEFT_TASK_DONE ? 0 : WEFT_ECANCELED);
}

/* After a task's function returned, which may have run on another
 * thread by then (mn moves fibers): weft__tls is that thread's. */
static void task_returned(weft_task *outer, struct weft__locals *outer_locals)
{
	if (weft__tls.locals)
		weft__locals_end(); /* still the task's: destructors see it */
	weft__tls.task = outer;
	weft__tls.locals = outer_locals;
}

__attribute__((noinline, unused)) static int weft__tls_index(void) /* unused without <sys/sdt.h> */
{
	return weft__tls.index;
}

/* Once finish publishes completion the owner may free t: no preemption
 * tick may charge it meanwhile. */
__attribute__((noinline)) static void task_finishing(weft_task *t)
{
	weft__tls.nopreempt++;
	weft__task_finish(t, WEFT_TASK_DONE);
	weft__tls.nopreempt--;
}

bool weft__run_task(weft_rt *rt, weft_task *t)
{
	if (atomic_load_explicit(&rt->cancelling, memory_order_relaxed)) {
		weft__task_finish(t, WEFT_TASK_CANCELLED);
		return false;
	}
	/* QUEUED -> RUNNING by adding one keeps a waiter bit set meanwhile. A
	 * weft_cancel that came first wins; one that comes later finds it
	 * running (one outcome each). */
	uint32_t was = atomic_fetch_add_explicit(
	        state_word(t), WEFT_TASK_RUNNING - WEFT_TASK_QUEUED, memory_order_acquire);
	if ((was & WEFT__CANCEL) || weft__group_cancelled(t->group_)) {
		weft__task_finish(t, WEFT_TASK_CANCELLED);
		return false;
	}
	int64_t posted = t->posted_ns_, started = 0;
	if (rt->latency) {
		started = weft__latency_now();
		weft__latency_record(rt, WEFT_LATENCY_QUEUE_WAIT, started - posted);
	}
	/* Under a fiber model the model traces each run segment itself. */
	bool segment = !weft__tls.fiber;
	if (segment)
		weft__trace(rt, WEFT__TRACE_BEGIN, t, true);
	WEFT__PROBE2(task__start, t, weft__tls.index);
	weft_task *outer = weft__tls.task;
	struct weft__locals *outer_locals = weft__tls.locals;
	weft__tls.task = t;
	weft__tls.locals = NULL;
	t->fn_(t->arg_);
	/* Under mn the task may have moved to another worker's thread. */
	task_returned(outer, outer_locals);
	if (segment)
		weft__trace(rt, WEFT__TRACE_END, NULL, false);
	WEFT__PROBE2(task__end, t, weft__tls_index());
	if (rt->latency) {
		int64_t ended = weft__latency_now();
		weft__latency_record(rt, WEFT_LATENCY_RUN, ended - started);
		weft__latency_record(rt, WEFT_LATENCY_TURNAROUND, ended - posted);
	}
	task_finishing(t);
	return true;
}

/* Kernel-thread workers run queued tasks while they wait, as oneTBB's wait
 * and OpenMP's taskwait do, so that fork-join never needs more workers
 * than there are (core/standin.c: how, and the stand-in that takes over
 * when the worker's stack runs low). Not while it holds a weft_mutex (a
 * task it ran could want that mutex: a deadlock with itself): it then
 * parks, a weft wait like any other, which compensation sees. Fibers park
 * instead: their models run the tasks a joining fiber posted first (see
 * src/model/fibers.c).
 *
 * join waits for rec's wake-up, or until deadline (NO_DEADLINE: none);
 * false when the deadline came first (the caller then takes rec back). */
#define NO_DEADLINE INT64_MAX

static bool join(weft__waiter *rec, int64_t deadline)
{
	/* A wait with a deadline runs no other task: one it ran could end
	 * long after the deadline. */
	if (deadline != NO_DEADLINE)
		return weft__waiter_park_until(rec, WEFT__WAIT_JOIN, deadline);
	weft_rt *rt = weft__tls.rt;
	if (rec->fiber || !rt || !rt->model->help || weft__tls.mutexes_held > 0 ||
	    !weft__standin_join_help(rt, rec))
		weft__waiter_park_for(rec, WEFT__WAIT_JOIN);
	return true;
}

/* Removes rec, whose wait timed out, from a task's or group's list (lock
 * bit held); false if it is not there. */
static bool unlink_waiter(void **list, weft__waiter *rec)
{
	weft__waiter **p = (weft__waiter **)list;
	while (*p && *p != rec)
		p = &(*p)->next;
	if (!*p)
		return false;
	*p = rec->next;
	return true;
}

/* Locks t's waiter list (for the caller to add to it): returns
 * WEFT_TASK_QUEUED and the state word it locked, or the state t ended in. */
static weft_task_state lock_unfinished(weft_task *t, uint32_t *locked)
{
	_Atomic uint32_t *w = state_word(t);
	uint32_t s = atomic_load_explicit(w, memory_order_acquire);
	int spins = 0;
	for (;;) {
		weft_task_state st = (weft_task_state)(s & WEFT__STATE_MASK);
		if (st != WEFT_TASK_QUEUED && st != WEFT_TASK_RUNNING)
			return st;
		if (s & WEFT__LOCKED) {
			pause_briefly(&spins);
			s = atomic_load_explicit(w, memory_order_acquire);
		} else if (atomic_compare_exchange_weak_explicit(w, &s, s | WEFT__LOCKED,
		                                                 memory_order_acquire,
		                                                 memory_order_acquire)) {
			*locked = s;
			return WEFT_TASK_QUEUED;
		}
	}
}

/* A timed-out weft_wait takes its record back, unless the task finished
 * meanwhile: then the finisher has the record and wakes it soon. */
static int task_wait_timed_out(weft_task *t, weft__waiter *rec)
{
	uint32_t locked;
	if (lock_unfinished(t, &locked) != WEFT_TASK_QUEUED) {
		weft__waiter_park_for(rec, WEFT__WAIT_JOIN);
		return rec->result;
	}
	(void)unlink_waiter(&t->waiters_, rec); /* unfinished: rec was on it */
	atomic_fetch_sub(state_word(t), t->waiters_ ? WEFT__LOCKED : WEFT__LOCKED | WEFT__WAITER);
	return WEFT_ETIMEDOUT;
}

/* Adds rec to the list lock_unfinished locked and unlocks, setting WAITER:
 * arithmetic, because the task may go from QUEUED to RUNNING meanwhile (an
 * add on the low bits); it cannot finish while the lock bit is set. */
static void push_waiter(weft_task *t, uint32_t locked, weft__waiter *rec)
{
	rec->next = t->waiters_;
	t->waiters_ = rec;
	if (locked & WEFT__WAITER)
		atomic_fetch_sub(state_word(t), WEFT__LOCKED);
	else
		atomic_fetch_sub(state_word(t), WEFT__LOCKED - WEFT__WAITER);
}

weft_task_state weft__task_add_waiter(weft_task *t, weft__waiter *w)
{
	uint32_t locked;
	weft_task_state st = lock_unfinished(t, &locked);
	if (st == WEFT_TASK_QUEUED)
		push_waiter(t, locked, w);
	return st;
}

static int wait_task(weft_task *t, int64_t deadline);

int weft_wait(weft_task *t)
{
	return wait_task(t, NO_DEADLINE);
}

int weft_wait_until(weft_task *t, int64_t deadline_ns)
{
	return wait_task(t, deadline_ns);
}

static int wait_task(weft_task *t, int64_t deadline)
{
	if (!t)
		return WEFT_EINVAL;
	if (weft__tls.task == t)
		return WEFT_EDEADLK;
	_Atomic uint32_t *w = state_word(t);
	uint32_t s = atomic_load_explicit(w, memory_order_acquire);
	if ((s & WEFT__STATE_MASK) == WEFT_TASK_QUEUED && deadline == NO_DEADLINE &&
	    weft__fiber_run_awaited(t, NULL))
		s = atomic_load_explicit(w, memory_order_acquire);
	switch (s & WEFT__STATE_MASK) {
	case WEFT_TASK_IDLE:
		return WEFT_EINVAL;
	case WEFT_TASK_DONE:
		await_group_left(t);
		return 0;
	case WEFT_TASK_CANCELLED:
		await_group_left(t);
		return WEFT_ECANCELED;
	}
	if (from_parent(s)) {
		weft__report_fork_use("a task waited for");
		return WEFT_EINVAL; /* it never finishes in this process */
	}
	if (deadline != NO_DEADLINE && weft__now_ns() >= deadline)
		return WEFT_ETIMEDOUT;
	uint32_t locked;
	switch (lock_unfinished(t, &locked)) {
	case WEFT_TASK_DONE:
		await_group_left(t);
		return 0;
	case WEFT_TASK_CANCELLED:
		await_group_left(t);
		return WEFT_ECANCELED;
	case WEFT_TASK_QUEUED:
		break;
	default:
		return WEFT_EINVAL;
	}
	weft__waiter rec;
	weft__waiter_init(&rec, NULL);
	push_waiter(t, locked, &rec);
	/* A record the finisher woke was woken after it left the group. */
	if (!join(&rec, deadline))
		return task_wait_timed_out(t, &rec);
	return rec.result;
}

int weft_group_init(weft_group *g)
{
	if (!g)
		return WEFT_EINVAL;
#ifdef WEFT_HAVE_VALGRIND
	VALGRIND_MAKE_MEM_DEFINED(g, sizeof(*g));
#endif
	if (atomic_load_explicit(weft__group_mark_word(g), memory_order_relaxed) ==
	            weft__group_mark(g) &&
	    !from_parent(atomic_load((_Atomic uint32_t *)&g->sign_)) &&
	    atomic_load(pending_word(g)) >= WEFT__GROUP_ONE)
		return WEFT_EBUSY; /* its unfinished tasks would be lost */
	memset(g, 0, sizeof(*g));
	return 0;
}

/* A timed-out weft_group_wait takes its record back, unless the last task
 * finished meanwhile: then the finisher has the record and wakes it soon. */
static int group_wait_timed_out(weft_group *g, weft__waiter *rec)
{
	_Atomic uint32_t *w = pending_word(g);
	uint32_t p = atomic_load_explicit(w, memory_order_acquire);
	int spins = 0;
	for (;;) {
		if (p < WEFT__GROUP_ONE) {
			weft__waiter_park_for(rec, WEFT__WAIT_JOIN);
			return rec->result;
		}
		if (p & WEFT__GROUP_LOCKED) {
			pause_briefly(&spins);
			p = atomic_load_explicit(w, memory_order_acquire);
		} else if (atomic_compare_exchange_weak_explicit(w, &p, p | WEFT__GROUP_LOCKED,
		                                                 memory_order_acquire,
		                                                 memory_order_acquire)) {
			break;
		}
	}
	(void)unlink_waiter(&g->waiters_, rec); /* unfinished: rec was on it */
	atomic_fetch_sub(w, g->waiters_ ? WEFT__GROUP_LOCKED
	                                : WEFT__GROUP_LOCKED | WEFT__GROUP_WAITER);
	return WEFT_ETIMEDOUT;
}

static int wait_group(weft_group *g, int64_t deadline);

/* A group found empty by a wait forgets its mark (the next post sets it
 * again): weft_group_init then takes its bytes as fresh even after a later
 * frame wrote over the pending count alone, as fiber stacks do, instead of
 * refusing them as a group with tasks in flight. */
static int waited(weft_group *g, int rc)
{
	if (rc == 0)
		atomic_store_explicit(weft__group_mark_word(g), NULL, memory_order_relaxed);
	return rc;
}

int weft_group_wait(weft_group *g)
{
	return waited(g, wait_group(g, NO_DEADLINE));
}

int weft_group_wait_until(weft_group *g, int64_t deadline_ns)
{
	return waited(g, wait_group(g, deadline_ns));
}

static int wait_group(weft_group *g, int64_t deadline)
{
	if (!g)
		return WEFT_EINVAL;
	_Atomic uint32_t *w = pending_word(g);
	uint32_t p = atomic_load_explicit(w, memory_order_acquire);
	while (p >= WEFT__GROUP_ONE && deadline == NO_DEADLINE && weft__fiber_run_awaited(NULL, g))
		p = atomic_load_explicit(w, memory_order_acquire);
	if (p >= WEFT__GROUP_ONE && from_parent(atomic_load((_Atomic uint32_t *)&g->sign_))) {
		weft__report_fork_use("a group waited for");
		return WEFT_EINVAL;
	}
	int spins = 0;
	for (;;) {
		if (p < WEFT__GROUP_ONE)
			return 0;
		if (deadline != NO_DEADLINE && weft__now_ns() >= deadline)
			return WEFT_ETIMEDOUT;
		if (p & WEFT__GROUP_LOCKED) {
			pause_briefly(&spins);
			p = atomic_load_explicit(w, memory_order_acquire);
		} else if (atomic_compare_exchange_weak_explicit(w, &p, p | WEFT__GROUP_LOCKED,
		                                                 memory_order_acquire,
		                                                 memory_order_acquire)) {
			break;
		}
	}
	weft__waiter rec;
	weft__waiter_init(&rec, NULL);
	rec.next = g->waiters_;
	g->waiters_ = &rec;
	/* Unlock, setting WAITER. Without WAITER the last finisher does not
	 * wait for the lock, so the count may have reached zero meanwhile:
	 * then nobody will wake this record, and it leaves the list itself. */
	p = atomic_load_explicit(w, memory_order_acquire);
	for (;;) {
		if (p < WEFT__GROUP_ONE) {
			g->waiters_ = rec.next;
			atomic_fetch_sub(w, WEFT__GROUP_LOCKED);
			return 0;
		}
		if (atomic_compare_exchange_weak(w, &p,
		                                 (p | WEFT__GROUP_WAITER) & ~WEFT__GROUP_LOCKED))
			break;
	}
	if (!join(&rec, deadline))
		return group_wait_timed_out(g, &rec);
	return rec.result;
}

long weft_group_pending(const weft_group *g)
{
	return g ? (long)(atomic_load(pending_word(g)) / WEFT__GROUP_ONE) : 0;
}

int64_t weft_clock_ns(void)
{
	return weft__now_ns();
}

/* ------------------------------------------------------------ cancellation */

/* Sets CANCEL on t while it is queued (0) or running (WEFT_EBUSY: a
 * request it may look at); WEFT_EINVAL when it is neither. Never touches
 * a task that finished: the CAS fails on its final state. */
int weft__task_request_cancel(weft_task *t, uint32_t *was)
{
	_Atomic uint32_t *w = state_word(t);
	uint32_t s = atomic_load_explicit(w, memory_order_acquire);
	for (;;) {
		*was = s;
		uint32_t st = s & WEFT__STATE_MASK;
		if ((st != WEFT_TASK_QUEUED && st != WEFT_TASK_RUNNING) ||
		    (s & WEFT__SIGN_MASK) != weft__in_flight_sign(t))
			return WEFT_EINVAL;
		int rc = st == WEFT_TASK_RUNNING ? WEFT_EBUSY : 0;
		if ((s & WEFT__CANCEL) ||
		    atomic_compare_exchange_weak_explicit(
		            w, &s, s | WEFT__CANCEL, memory_order_acq_rel, memory_order_acquire))
			return rc;
	}
}

bool weft_cancel_requested(void)
{
	weft_task *t = weft__tls.task;
	if (!t)
		return false;
	return (atomic_load_explicit(state_word(t), memory_order_relaxed) & WEFT__CANCEL) ||
	       weft__group_cancelled(t->group_);
}

int weft_group_cancel(weft_group *g)
{
	if (!g)
		return WEFT_EINVAL;
	atomic_store((_Atomic uintptr_t *)&g->reserved_[1], 1);
	return 0;
}
