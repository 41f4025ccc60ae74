/* weft_sem: a post with waiters hands its unit to the longest waiter
 * instead of raising the count, so late arrivals cannot take it first. */
#include <string.h>

#include "core/internal.h"
#include "sync/waiter.h"

int weft_sem_init(weft_sem *s, long count)
{
	if (!s || count < 0)
		return WEFT_EINVAL;
	memset(s, 0, sizeof(*s));
	s->count_ = count;
	return 0;
}

static int take(weft_sem *sem, bool wait)
{
	if (!sem)
		return WEFT_EINVAL;
	weft__sync *s = WEFT__SYNC(sem);
	weft__lock_acquire(&s->lock);
	if (sem->count_ > 0) {
		sem->count_--;
		weft__lock_release(&s->lock);
		return 0;
	}
	if (!wait) {
		weft__lock_release(&s->lock);
		return WEFT_EAGAIN;
	}
	return weft__sync_wait(s, NULL);
}

int weft_sem_wait(weft_sem *s)
{
	return take(s, true);
}

int weft_sem_trywait(weft_sem *s)
{
	return take(s, false);
}

int weft_sem_post(weft_sem *sem)
{
	if (!sem)
		return WEFT_EINVAL;
	weft__sync *s = WEFT__SYNC(sem);
	weft__lock_acquire(&s->lock);
	weft__waiter *w = weft__sync_pop(s);
	if (!w)
		sem->count_++;
	weft__lock_release(&s->lock);
	if (w)
		weft__waiter_unpark(w);
	return 0;
}

long weft_sem_value(const weft_sem *sem)
{
	if (!sem)
		return 0;
	weft__sync *s = WEFT__SYNC((weft_sem *)sem);
	weft__lock_acquire(&s->lock);
	long v = sem->count_;
	weft__lock_release(&s->lock);
	return v;
}
