/* Kernel-thread waiters: a futex word per waiter, so a wake-up goes to
 * exactly the thread chosen (FIFO) and no other thread is disturbed.
 *
 * A waiter spins a little before it sleeps, and says when it sleeps, so
 * that a hand-off to a waiter that is still spinning costs a store and a
 * cache-line transfer instead of a futex wake and a sleeping thread's
 * wake-up (microseconds each). Under contention on a mutex with short
 * critical sections, that is the difference between a FIFO hand-off mutex
 * being tens of times slower than a barging one and being close to it. */
#include <stddef.h>

#include "core/futex.h"
#include "core/spin.h"
#include "sync/waiter.h"

_Static_assert(offsetof(weft__sync, lock) == 0 && sizeof(weft__lock) == sizeof(uint32_t),
               "weft__sync overlays WEFT__SYNC_FIELDS");

enum { WAITING = 0, WOKEN = 1, SLEEPING = 2 };

#define WAITER_SPINS 300 /* pauses: about 10 us on this EPYC (33 ns each) */

void weft__waiter_park(weft__waiter *w)
{
	if (w->fiber) {
		weft__fiber_park(w->fiber);
		return;
	}
	for (int i = 0; i < WAITER_SPINS; i++) {
		if (atomic_load_explicit(&w->woken, memory_order_acquire) == WOKEN)
			return;
		weft__cpu_relax();
	}
	uint32_t s = WAITING;
	if (!atomic_compare_exchange_strong_explicit(&w->woken, &s, SLEEPING, memory_order_acquire,
	                                             memory_order_acquire))
		return; /* woken meanwhile */
	while (atomic_load_explicit(&w->woken, memory_order_acquire) != WOKEN)
		weft__futex_wait(&w->woken, SLEEPING, -1);
}

void weft__waiter_unpark(weft__waiter *w)
{
	if (w->fiber) {
		weft__fiber_unpark(w->fiber); /* touches nothing of w after */
		return;
	}
	/* After the exchange w may be gone; the futex wake only uses the
	 * address. */
	if (atomic_exchange_explicit(&w->woken, WOKEN, memory_order_acq_rel) == SLEEPING)
		weft__futex_wake(&w->woken, 1);
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
