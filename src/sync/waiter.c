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

#include "core/clock.h"
#include "core/futex.h"
#include "core/spin.h"
#include "core/standin.h"
#include "sync/waiter.h"

_Static_assert(offsetof(weft__sync, lock) == 0 && sizeof(weft__lock) == sizeof(uint32_t),
               "weft__sync overlays WEFT__SYNC_FIELDS");

enum { WAITING = 0, WOKEN = 1, SLEEPING = 2 };

#define WAITER_SPINS 300 /* pauses: about 10 us on this EPYC (33 ns each) */

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

/* A kernel thread's sleep in a weft wait: compensation (core/standin.h)
 * sees it as it starts sleeping (the spin before was the grace), or
 * through a timeout, a grace period set with WEFT_STANDIN_GRACE_US, that a
 * wait ending sooner never reaches. */
static void park(weft__waiter *w, weft__wait_reason why, int spins)
{
	if (w->fiber) {
		weft__fiber_park(w->fiber, why);
		return;
	}
	if (!spin_then_announce(w, spins))
		return;
	weft__block b;
	int64_t timeout = weft__block_begin(&b);
	if (timeout == 0)
		timeout = weft__block_tick(&b);
	while (atomic_load_explicit(&w->woken, memory_order_acquire) != WOKEN) {
		weft__futex_wait(&w->woken, SLEEPING, timeout);
		if (timeout >= 0 && atomic_load_explicit(&w->woken, memory_order_acquire) != WOKEN)
			timeout = weft__block_tick(&b);
	}
	weft__block_end(&b);
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
	/* Compensated like any wait: one whose deadline is far would
	 * otherwise time out where the fiber models finish. */
	weft__timer_slack_fine(); /* within microseconds of it (core/futex.h) */
	weft__block b;
	int64_t now = weft__now_ns();
	weft__sleep_ticks ticks = weft__sleep_ticks_begin(&b, now);
	bool woken = true;
	while (atomic_load_explicit(&w->woken, memory_order_acquire) != WOKEN) {
		now = weft__now_ns();
		int64_t left = weft__ns_left(deadline_ns, now);
		if (left == 0) {
			woken = false;
			break;
		}
		weft__futex_wait(&w->woken, SLEEPING,
		                 weft__sleep_ticks_next(&ticks, &b, now, left));
	}
	weft__block_end(&b);
	return woken;
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
