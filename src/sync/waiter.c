/* Waiters (waiter.h). A fiber parks through the fiber engine. A kernel
 * thread sleeps on its record's futex word, so a wake-up goes to exactly
 * the thread chosen (FIFO) and no other thread is disturbed.
 *
 * A kernel thread spins a little before it sleeps, and says when it
 * sleeps, so that a hand-off to a waiter that is still spinning costs a
 * store and a cache-line transfer instead of a futex wake and a sleeping
 * thread's wake-up (microseconds each). Under contention on a mutex with
 * short critical sections, that is the difference between a FIFO hand-off
 * mutex being tens of times slower than a barging one and being close to
 * it. */
#include <stddef.h>
#include <stdio.h>
#include <time.h>

#include "core/futex.h"
#include "core/spin.h"
#include "sync/waiter.h"

_Static_assert(offsetof(weft__sync, lock) == 0 && sizeof(weft__lock) == sizeof(uint32_t),
               "weft__sync overlays WEFT__SYNC_FIELDS");

enum { WAITING = 0, WOKEN = 1, SLEEPING = 2 };

#define WAITER_SPINS      300 /* pauses: about 10 us on this EPYC (33 ns each) */
/* How long every worker must stay blocked, with tasks queued, before weft
 * calls it a deadlock: longer than any ordinary wait for a hand-off. */
#define DEADLOCK_AFTER_NS 1000000000

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

bool weft__waiter_woken(weft__waiter *w)
{
	return atomic_load_explicit(&w->woken, memory_order_acquire) == WOKEN;
}

/* Spins, then moves w to SLEEPING; false when woken meanwhile. */
static bool spin_then_announce(weft__waiter *w, int spins)
{
	for (int i = 0; i < spins; i++) {
		if (weft__waiter_woken(w))
			return false;
		weft__cpu_relax();
	}
	uint32_t s = WAITING;
	return atomic_compare_exchange_strong_explicit(
	               &w->woken, &s, SLEEPING, memory_order_acquire, memory_order_acquire) ||
	       s == SLEEPING;
}

void weft__waiter_sleep(weft__waiter *w, int64_t timeout_ns)
{
	if (timeout_ns >= 0)
		weft__timer_slack_fine(); /* core/futex.h */
	if (spin_then_announce(w, WAITER_SPINS))
		weft__futex_wait(&w->woken, SLEEPING, timeout_ns);
}

static bool all_blocked(weft_rt *rt)
{
	return atomic_load(&rt->blocked) >= rt->cfg.workers && rt->model->has_queued &&
	       rt->model->has_queued(rt);
}

static void report_deadlock(weft_rt *rt)
{
	int no = 0;
	if (!atomic_compare_exchange_strong(&rt->deadlock_reported, &no, 1))
		return;
	weft__log(
	        WEFT_LOG_WARN,
	        "weft: every worker of this runtime (model %s, %d worker(s)) has been blocked in a "
	        "weft wait for a second while tasks are queued that no worker can take: likely a "
	        "deadlock (a task waiting on a semaphore, mutex, condition or channel that only a "
	        "queued task would release). Use more workers, a fiber model (WEFT_MODEL=fibers "
	        "or mn), or post the releasing task first (docs/models.md, \"Waiting inside "
	        "tasks\")\n",
	        rt->model->name, rt->cfg.workers);
}

static void park(weft__waiter *w, weft__wait_reason why, int spins)
{
	if (w->fiber) {
		weft__fiber_park(w->fiber, why);
		return;
	}
	if (!spin_then_announce(w, spins))
		return;
	weft_rt *rt = weft__tls.rt; /* a worker's runtime outlives its workers */
	if (rt)
		atomic_fetch_add(&rt->blocked, 1);
	int64_t since = -1;
	while (atomic_load_explicit(&w->woken, memory_order_acquire) != WOKEN) {
		int64_t timeout = -1;
		if (rt && all_blocked(rt)) {
			int64_t now = now_ns();
			if (since < 0)
				since = now;
			else if (now - since >= DEADLOCK_AFTER_NS)
				report_deadlock(rt);
			timeout = DEADLOCK_AFTER_NS / 4;
		} else {
			since = -1;
		}
		weft__futex_wait(&w->woken, SLEEPING, timeout);
	}
	if (rt)
		atomic_fetch_sub(&rt->blocked, 1);
}

void weft__waiter_park_for(weft__waiter *w, weft__wait_reason why)
{
	park(w, why, WAITER_SPINS);
}

void weft__waiter_park_sleeping(weft__waiter *w)
{
	park(w, WEFT__WAIT_SYNC, 0);
}

bool weft__waiter_park_until(weft__waiter *w, weft__wait_reason why, int64_t deadline_ns)
{
	if (w->fiber)
		return weft__fiber_park_until(w->fiber, why, deadline_ns);
	if (!spin_then_announce(w, WAITER_SPINS))
		return true;
	/* Not counted in rt->blocked: a wait with a deadline ends by itself. */
	weft__timer_slack_fine(); /* within microseconds of it (core/futex.h) */
	while (atomic_load_explicit(&w->woken, memory_order_acquire) != WOKEN) {
		int64_t left = deadline_ns - now_ns();
		if (left <= 0)
			return false;
		weft__futex_wait(&w->woken, SLEEPING, left);
	}
	return true;
}

void weft__waiter_unpark(weft__waiter *w)
{
	if (w->notify) {
		w->notify(w);
		return;
	}
	if (w->fiber) {
		weft__fiber_unpark(w->fiber); /* touches nothing of w after */
		return;
	}
	/* After the exchange w may be gone; the futex wake only uses the
	 * address. */
	if (atomic_exchange_explicit(&w->woken, WOKEN, memory_order_acq_rel) == SLEEPING)
		weft__futex_wake(&w->woken, 1);
}

static bool sync_remove(weft__sync *s, weft__waiter *w)
{
	weft__waiter *prev = NULL;
	for (weft__waiter *x = s->head; x; prev = x, x = x->next) {
		if (x != w)
			continue;
		if (prev)
			prev->next = w->next;
		else
			s->head = w->next;
		if (s->tail == w)
			s->tail = prev;
		return true;
	}
	return false;
}

bool weft__sync_take_back(weft__sync *s, weft__waiter *w)
{
	weft__lock_acquire(&s->lock);
	if (sync_remove(s, w))
		return true;
	weft__lock_release(&s->lock);
	weft__waiter_park(w);
	return false;
}

int weft__sync_wait_until(weft__sync *s, void *data, int64_t deadline_ns)
{
	weft__waiter w;
	weft__waiter_init(&w, data);
	weft__sync_push(s, &w);
	weft__lock_release(&s->lock);
	if (!weft__waiter_park_until(&w, WEFT__WAIT_SYNC, deadline_ns) &&
	    weft__sync_take_back(s, &w))
		return WEFT_ETIMEDOUT; /* lock held: the caller fixes its state */
	return w.result;
}

int weft__sync_wait(weft__sync *s, void *data)
{
	weft__waiter w;
	weft__waiter_init(&w, data);
	weft__sync_push(s, &w);
	weft__lock_release(&s->lock);
	weft__waiter_park(&w);
	return w.result;
}
