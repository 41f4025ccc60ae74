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

#define NO_DEADLINE INT64_MAX

/* Takes w back from the queue; if a signal took it first, receives that
 * signal. Returns whether w was still queued. */
static bool take_back(weft__sync *s, weft__waiter *w)
{
	if (!weft__sync_take_back(s, w))
		return false;
	weft__lock_release(&s->lock);
	return true;
}

static int wait_until(weft_cond *c, weft_mutex *m, int64_t deadline)
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
		take_back(s, &w); /* not holding m is misuse */
		return rc;
	}
	if (deadline == NO_DEADLINE)
		weft__waiter_park(&w);
	else if (!weft__waiter_park_until(&w, WEFT__WAIT_SYNC, deadline) && take_back(s, &w))
		rc = WEFT_ETIMEDOUT; /* no signal consumed */
	int lrc = weft_mutex_lock(m);
	return rc ? rc : lrc;
}

int weft_cond_wait(weft_cond *c, weft_mutex *m)
{
	return wait_until(c, m, NO_DEADLINE);
}

int weft_cond_wait_until(weft_cond *c, weft_mutex *m, int64_t deadline_ns)
{
	return wait_until(c, m, deadline_ns);
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
