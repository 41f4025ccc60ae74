/* weft_cond: a FIFO queue of waiters. A waiter is queued before it lets go
 * of the mutex, so a signal sent after that cannot be missed. */
#include <string.h>

#include "core/internal.h"
#include "sync/waiter.h"

int weft_cond_init(weft_cond *c)
{
	if (!c)
		return WEFT_EINVAL;
	memset(c, 0, sizeof(*c));
	return 0;
}

int weft_cond_wait(weft_cond *c, weft_mutex *m)
{
	if (!c || !m)
		return WEFT_EINVAL;
	weft__sync *s = WEFT__SYNC(c);
	weft__waiter w;
	weft__waiter_init(&w, NULL);
	weft__lock_acquire(&s->lock);
	weft__sync_push(s, &w);
	weft__lock_release(&s->lock);
	int rc = weft_mutex_unlock(m);
	if (rc) {
		/* Not holding m is misuse: take ourselves off the queue. */
		weft__lock_acquire(&s->lock);
		weft__waiter **p = &s->head, *prev = NULL;
		while (*p && *p != &w) {
			prev = *p;
			p = &(*p)->next;
		}
		bool queued = *p == &w;
		if (queued) {
			*p = w.next;
			if (s->tail == &w)
				s->tail = prev;
		}
		weft__lock_release(&s->lock);
		if (!queued)
			weft__waiter_park(&w); /* a signal already took us: absorb it */
		return rc;
	}
	weft__waiter_park(&w);
	return weft_mutex_lock(m);
}

static int wake(weft_cond *c, bool all)
{
	if (!c)
		return WEFT_EINVAL;
	weft__sync *s = WEFT__SYNC(c);
	weft__lock_acquire(&s->lock);
	weft__waiter *list = all ? weft__sync_take_all(s) : weft__sync_pop(s);
	if (list && !all)
		list->next = NULL;
	weft__lock_release(&s->lock);
	weft__sync_unpark_list(list);
	return 0;
}

int weft_cond_signal(weft_cond *c)
{
	return wake(c, false);
}

int weft_cond_broadcast(weft_cond *c)
{
	return wake(c, true);
}
