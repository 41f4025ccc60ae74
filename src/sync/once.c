/* weft_once: a state word (NEW, RUNNING, DONE) and the queue of callers
 * that came while the function ran. The first caller moves NEW to RUNNING
 * under the internal lock and runs the function outside it; callers that
 * find RUNNING queue and park; the runner stores DONE (release) and wakes
 * them all. Once DONE, a call is one acquire load. */
#include <stdatomic.h>

#include "core/internal.h"
#include "sync/waiter.h"

enum { NEW = 0, RUNNING = 1, DONE = 2 };

static _Atomic uint32_t *word(weft__sync *s)
{
	return (_Atomic uint32_t *)(void *)&s->state;
}

int weft_once_call(weft_once *o, void (*fn)(void *), void *arg)
{
	if (!o || !fn)
		return WEFT_EINVAL;
	weft__sync *s = WEFT__SYNC(o);
	if (atomic_load_explicit(word(s), memory_order_acquire) == DONE)
		return 0;
	weft__lock_acquire(&s->lock);
	uint32_t st = atomic_load_explicit(word(s), memory_order_relaxed);
	if (st == DONE) {
		weft__lock_release(&s->lock);
		return 0;
	}
	if (st == RUNNING) {
		weft__sync_wait(s, NULL); /* releases the lock; woken after DONE */
		return 0;
	}
	atomic_store_explicit(word(s), RUNNING, memory_order_relaxed);
	weft__lock_release(&s->lock);
	fn(arg);
	weft__lock_acquire(&s->lock);
	atomic_store_explicit(word(s), DONE, memory_order_release);
	weft__waiter *list = weft__sync_take_all(s);
	weft__lock_release(&s->lock);
	weft__sync_unpark_list(list);
	return 0;
}

bool weft_once_done(const weft_once *o)
{
	return o &&
	       atomic_load_explicit(word(WEFT__SYNC((weft_once *)o)), memory_order_acquire) == DONE;
}
