/* weft_latch: a count under the internal lock and the queue of waiters.
 * The count reaching zero is published in the state word (OPEN, release)
 * so that waits after that are one acquire load; the waiters queued
 * before are taken off together and woken outside the lock. */
#include <stdatomic.h>
#include <string.h>

#include "core/internal.h"
#include "sync/waiter.h"

enum { OPEN = 1 };

#define NO_DEADLINE INT64_MAX

static _Atomic uint32_t *word(weft__sync *s)
{
	return (_Atomic uint32_t *)(void *)&s->state;
}

int weft_latch_init(weft_latch *l, size_t count)
{
	if (!l)
		return WEFT_EINVAL;
	memset(l, 0, sizeof(*l));
	l->count_ = count;
	if (count == 0)
		atomic_store_explicit(word(WEFT__SYNC(l)), OPEN, memory_order_relaxed);
	return 0;
}

int weft_latch_count_down(weft_latch *l, size_t n)
{
	if (!l)
		return WEFT_EINVAL;
	weft__sync *s = WEFT__SYNC(l);
	weft__lock_acquire(&s->lock);
	if (n > l->count_) {
		weft__lock_release(&s->lock);
		return WEFT_EINVAL;
	}
	l->count_ -= n;
	weft__waiter *list = NULL;
	if (l->count_ == 0 && n > 0) {
		atomic_store_explicit(word(s), OPEN, memory_order_release);
		list = weft__sync_take_all(s);
	}
	weft__lock_release(&s->lock);
	weft__sync_unpark_list(list);
	return 0;
}

static int wait_until(weft_latch *l, int64_t deadline)
{
	if (!l)
		return WEFT_EINVAL;
	weft__sync *s = WEFT__SYNC(l);
	if (atomic_load_explicit(word(s), memory_order_acquire) == OPEN)
		return 0;
	weft__lock_acquire(&s->lock);
	if (l->count_ == 0) {
		weft__lock_release(&s->lock);
		return 0;
	}
	if (deadline == NO_DEADLINE)
		return weft__sync_wait(s, NULL);
	int rc = weft__sync_wait_until(s, NULL, deadline);
	if (rc == WEFT_ETIMEDOUT)
		weft__lock_release(&s->lock); /* taken off the queue: nothing to fix */
	return rc;
}

int weft_latch_wait(weft_latch *l)
{
	return wait_until(l, NO_DEADLINE);
}

int weft_latch_wait_until(weft_latch *l, int64_t deadline_ns)
{
	return wait_until(l, deadline_ns);
}

int weft_latch_try_wait(const weft_latch *l)
{
	if (!l)
		return WEFT_EINVAL;
	return atomic_load_explicit(word(WEFT__SYNC((weft_latch *)l)), memory_order_acquire) == OPEN
	               ? 0
	               : WEFT_EBUSY;
}

int weft_latch_arrive_and_wait(weft_latch *l, size_t n)
{
	int rc = weft_latch_count_down(l, n);
	return rc ? rc : weft_latch_wait(l);
}
