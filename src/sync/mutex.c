/* weft_mutex: state is 1 while held. Unlock with waiters hands the mutex
 * to the longest waiter without ever marking it free, so a thread that
 * unlocks and relocks at once cannot overtake the waiters (no barging). */
#include <string.h>

#include "core/internal.h"
#include "sync/waiter.h"

/* What the running task holds (weft__thread_ctx.mutexes_held): a fiber's
 * tick defers preempting a holder; a kernel thread does not run other tasks
 * while it waits holding one (task.c). */
static void held(int delta)
{
	if (weft__tls.mutexes_held + delta >= 0) {
		weft__tls.mutexes_held += delta;
		weft__tls.mutex_locks += delta > 0;
	}
}

int weft_mutex_init(weft_mutex *m)
{
	if (!m)
		return WEFT_EINVAL;
	memset(m, 0, sizeof(*m));
	return 0;
}

int weft_mutex_lock(weft_mutex *m)
{
	if (!m)
		return WEFT_EINVAL;
	weft__sync *s = WEFT__SYNC(m);
	weft__lock_acquire(&s->lock);
	/* Counted before the internal lock is released: from then on a tick
	 * must see a holder (a waiter is resumed as the owner). */
	held(1);
	if (!s->state) {
		s->state = 1;
		weft__lock_release(&s->lock);
	} else {
		weft__sync_wait(s, NULL); /* woken as the new owner */
	}
	return 0;
}

int weft_mutex_trylock(weft_mutex *m)
{
	if (!m)
		return WEFT_EINVAL;
	weft__sync *s = WEFT__SYNC(m);
	weft__lock_acquire(&s->lock);
	int rc = s->state ? WEFT_EBUSY : 0;
	s->state = 1;
	if (rc == 0)
		held(1);
	weft__lock_release(&s->lock);
	return rc;
}

int weft_mutex_unlock(weft_mutex *m)
{
	if (!m)
		return WEFT_EINVAL;
	weft__sync *s = WEFT__SYNC(m);
	weft__lock_acquire(&s->lock);
	if (!s->state) {
		weft__lock_release(&s->lock);
		return WEFT_EINVAL;
	}
	weft__waiter *next = weft__sync_pop(s);
	if (!next)
		s->state = 0;
	weft__lock_release(&s->lock);
	held(-1);
	if (next)
		weft__waiter_unpark(next);
	return 0;
}
