/* Kernel-thread waiters: a futex word per waiter, so a wake-up goes to
 * exactly the thread chosen (FIFO) and no other thread is disturbed. */
#include <stddef.h>

#include "core/futex.h"
#include "sync/waiter.h"

_Static_assert(offsetof(weft__sync, lock) == 0 && sizeof(weft__lock) == sizeof(uint32_t),
               "weft__sync overlays WEFT__SYNC_FIELDS");

void weft__waiter_park(weft__waiter *w)
{
	if (w->fiber) {
		weft__fiber_park(w->fiber);
		return;
	}
	while (atomic_load_explicit(&w->woken, memory_order_acquire) == 0)
		weft__futex_wait(&w->woken, 0, -1);
}

void weft__waiter_unpark(weft__waiter *w)
{
	if (w->fiber) {
		weft__fiber_unpark(w->fiber); /* touches nothing of w after */
		return;
	}
	atomic_store_explicit(&w->woken, 1, memory_order_release);
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
