/* The idle list (idle.h). */
#include "core/idle.h"

static weft__idler *claim_first(weft__idle *d)
{
	weft__lock_acquire(&d->lock);
	weft__idler *i = d->list;
	if (i) {
		d->list = i->next;
		atomic_fetch_sub(&d->nidle, 1);
		/* Under the lock: the worker resets it under the same lock when
		 * it next joins, so a late store cannot leak into that. */
		atomic_store(&i->claimed, 1);
	}
	weft__lock_release(&d->lock);
	if (!i) {
		atomic_fetch_sub(&d->nspinning, 1);
		return NULL;
	}
	atomic_fetch_add_explicit(&d->wakeups, 1, memory_order_relaxed);
	return i;
}

weft__idler *weft__idle_claim(weft__idle *d)
{
	int zero = 0;
	if (!atomic_compare_exchange_strong(&d->nspinning, &zero, 1))
		return NULL;
	return claim_first(d);
}

weft__idler *weft__idle_claim_any(weft__idle *d)
{
	if (atomic_load(&d->nidle) == 0)
		return NULL;
	atomic_fetch_add(&d->nspinning, 1);
	return claim_first(d);
}

void weft__idle_join(weft__idle *d, weft__idler *me)
{
	weft__lock_acquire(&d->lock);
	atomic_store(&me->claimed, 0);
	me->next = d->list;
	d->list = me;
	atomic_fetch_add(&d->nidle, 1);
	weft__lock_release(&d->lock);
	atomic_thread_fence(memory_order_seq_cst);
}

bool weft__idle_leave(weft__idle *d, weft__idler *me)
{
	bool removed = false;
	weft__lock_acquire(&d->lock);
	for (weft__idler **p = &d->list; *p; p = &(*p)->next) {
		if (*p == me) {
			*p = me->next;
			atomic_fetch_sub(&d->nidle, 1);
			removed = true;
			break;
		}
	}
	weft__lock_release(&d->lock);
	return !removed;
}

void weft__idle_claim_all(weft__idle *d, void (*kick)(weft__idler *i, void *ctx), void *ctx)
{
	weft__lock_acquire(&d->lock);
	for (weft__idler *i = d->list; i; i = i->next) {
		atomic_store(&i->claimed, 1);
		atomic_fetch_add(&d->nspinning, 1);
		kick(i, ctx);
	}
	d->list = NULL;
	atomic_store(&d->nidle, 0);
	weft__lock_release(&d->lock);
}
