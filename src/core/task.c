/* Tasks and groups: initialisation, running, and completion as seen by
 * weft_wait and weft_group_wait.
 *
 * Completion must be the last thing weft does with a task or a group: the
 * owner may free either the moment it sees it finished. So the finisher
 * reads what it needs first, then publishes with one atomic exchange (task)
 * or subtraction (group) that also tells it whether anyone sleeps, and then
 * only wakes waiters by the address (weft__word_wake_all), which it never
 * dereferences. */
#include <string.h>

#include "core/internal.h"
#include "core/parking.h"
#include "obs/latency.h"
#include "obs/probes.h"
#include "obs/trace.h"

static _Atomic uint32_t *state_word(const weft_task *t)
{
	return (_Atomic uint32_t *)&t->state_;
}

static _Atomic uint32_t *pending_word(const weft_group *g)
{
	return (_Atomic uint32_t *)&g->pending_;
}

int weft_task_init(weft_task *t, weft_fn fn, void *arg)
{
	if (!t || !fn)
		return WEFT_EINVAL;
	memset(t, 0, sizeof(*t));
	t->fn_ = fn;
	t->arg_ = arg;
	return 0;
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

static void finish(weft_task *t, weft_task_state end)
{
	weft_group *g = t->group_;
	uint32_t old = atomic_exchange(state_word(t), end);
	if (old & WEFT__WAITER)
		weft__word_wake_all(state_word(t));
	if (g) {
		uint32_t was = atomic_fetch_sub(pending_word(g), WEFT__GROUP_ONE);
		if (was == (WEFT__GROUP_ONE | WEFT__GROUP_WAITER))
			weft__word_wake_all(pending_word(g));
	}
}

bool weft__run_task(weft_rt *rt, weft_task *t)
{
	if (atomic_load_explicit(&rt->cancelling, memory_order_relaxed)) {
		finish(t, WEFT_TASK_CANCELLED);
		return false;
	}
	/* QUEUED -> RUNNING by adding one keeps a waiter bit set meanwhile. */
	atomic_fetch_add_explicit(state_word(t), WEFT_TASK_RUNNING - WEFT_TASK_QUEUED,
	                          memory_order_relaxed);
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
	weft__tls.task = t;
	t->fn_(t->arg_);
	weft__tls.task = outer;
	if (segment)
		weft__trace(rt, WEFT__TRACE_END, NULL, false);
	WEFT__PROBE2(task__end, t, weft__tls.index);
	if (rt->latency) {
		int64_t ended = weft__latency_now();
		weft__latency_record(rt, WEFT_LATENCY_RUN, ended - started);
		weft__latency_record(rt, WEFT_LATENCY_TURNAROUND, ended - posted);
	}
	/* Once finish publishes completion the owner may free t: no
	 * preemption tick may charge it meanwhile. */
	weft__tls.nopreempt++;
	finish(t, WEFT_TASK_DONE);
	weft__tls.nopreempt--;
	return true;
}

int weft_wait(weft_task *t)
{
	if (!t)
		return WEFT_EINVAL;
	if (weft__tls.task == t)
		return WEFT_EDEADLK;
	_Atomic uint32_t *w = state_word(t);
	for (;;) {
		uint32_t s = atomic_load_explicit(w, memory_order_acquire);
		switch (s & WEFT__STATE_MASK) {
		case WEFT_TASK_IDLE:
			return WEFT_EINVAL;
		case WEFT_TASK_DONE:
			return 0;
		case WEFT_TASK_CANCELLED:
			return WEFT_ECANCELED;
		}
		if (!(s & WEFT__WAITER) && !atomic_compare_exchange_weak(w, &s, s | WEFT__WAITER))
			continue;
		weft__word_wait(w, s | WEFT__WAITER);
	}
}

int weft_group_init(weft_group *g)
{
	if (!g)
		return WEFT_EINVAL;
	memset(g, 0, sizeof(*g));
	return 0;
}

int weft_group_wait(weft_group *g)
{
	if (!g)
		return WEFT_EINVAL;
	_Atomic uint32_t *w = pending_word(g);
	for (;;) {
		uint32_t p = atomic_load_explicit(w, memory_order_acquire);
		if (p < WEFT__GROUP_ONE) {
			/* Done: clear our waiter bit for the group's next use. */
			if (p == 0 || atomic_compare_exchange_weak(w, &p, 0))
				return 0;
			continue;
		}
		if (!(p & WEFT__GROUP_WAITER) &&
		    !atomic_compare_exchange_weak(w, &p, p | WEFT__GROUP_WAITER))
			continue;
		weft__word_wait(w, p | WEFT__GROUP_WAITER);
	}
}

long weft_group_pending(const weft_group *g)
{
	return g ? (long)(atomic_load(pending_word(g)) / WEFT__GROUP_ONE) : 0;
}
