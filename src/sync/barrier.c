/* weft_barrier: the last of `parties` arrivals releases everyone queued and
 * resets the count, so the next round can start at once. */
#include <string.h>

#include "core/internal.h"
#include "sync/waiter.h"

int weft_barrier_init(weft_barrier *b, unsigned parties)
{
	if (!b || parties == 0)
		return WEFT_EINVAL;
	memset(b, 0, sizeof(*b));
	b->parties_ = parties;
	return 0;
}

int weft_barrier_wait(weft_barrier *b)
{
	if (!b || b->parties_ == 0)
		return WEFT_EINVAL;
	weft__sync *s = WEFT__SYNC(b);
	weft__lock_acquire(&s->lock);
	if (++b->arrived_ < b->parties_)
		return weft__sync_wait(s, NULL);
	b->arrived_ = 0;
	weft__waiter *list = weft__sync_take_all(s);
	weft__lock_release(&s->lock);
	weft__sync_unpark_list(list);
	return WEFT_BARRIER_LAST;
}
