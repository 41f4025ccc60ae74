/* The idle protocol of the models with several workers (idle.h). */
#include "core/idle.h"
#include "core/clock.h"
#include "core/spin.h"

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

/* ------------------------------------------------------------ search */

#define SIT_NS        1000  /* a lone task this old is taken: see idle.h */
#define SETTLE_PAUSES 16    /* between looks while settling, ~0.4 us */
#define WATCH_MIN_NS  50000 /* the watcher's period: see idle.h */
#define WATCH_MAX_NS  1000000
#define WATCH_QUIET   16 /* looks without an own post: off duty (~12 ms) */

void weft__idle_init(weft__idle *d, const weft__idle_ops *ops, void *model, int nworkers)
{
	d->ops = ops;
	d->model = model;
	d->nworkers = nworkers;
	atomic_store(&d->awake, nworkers);
	atomic_store(&d->watch_ns, WATCH_MIN_NS);
}

void weft__idler_init(weft__idler *i, int index)
{
	i->index = index;
	i->seen_victim = -1;
}

bool weft__idle_start_search(weft__idle *d, int max)
{
	int n = atomic_load_explicit(&d->nspinning, memory_order_relaxed);
	do {
		if (n >= max)
			return false;
	} while (!atomic_compare_exchange_weak(&d->nspinning, &n, n + 1));
	return true;
}

int weft__idle_find_sitting(weft__idle *d, weft__idler *me, int start, int count, bool settle)
{
	int n = d->nworkers;
	if (n < 2)
		return -1;
	int64_t until = 0; /* settle: a chain of spawn-joins shows a new lone task at every look */
	for (;;) {
		int lone = -1;
		int64_t lone_top = 0;
		/* the one seen before first: it may have sat long */
		int prev = me->seen_victim;
		for (int k = -1; k < count; k++) {
			int v;
			if (k < 0) {
				if (prev < 0)
					continue;
				v = prev;
			} else {
				v = (me->index + 1 + (start + k) % (n - 1)) % n;
				if (v == prev)
					continue;
			}
			weft__deque *q = d->ops->deque(d->model, v);
			/* bottom first: the count is then at most what the deque
			 * held at some moment (top only grows), so a lone task
			 * that its owner just took back and replaced never looks
			 * like a surplus */
			int64_t b = atomic_load(&q->bottom);
			int64_t top = atomic_load(&q->top);
			if (b - top > 1) {
				me->seen_victim = v;
				me->seen_top = top;
				return v;
			}
			if (b - top == 1 && lone < 0) {
				lone = v;
				lone_top = top;
			}
		}
		if (lone < 0) {
			me->seen_victim = -1;
			return -1;
		}
		int64_t now = weft__now_ns();
		if (lone != me->seen_victim || lone_top != me->seen_top) {
			me->seen_victim = lone; /* a new one: it sits from now */
			me->seen_top = lone_top;
			me->seen_ns = now;
		} else if (now - me->seen_ns >= SIT_NS) {
			return lone;
		}
		if (!settle)
			return -1;
		if (!until)
			until = now + 2 * SIT_NS;
		else if (now > until)
			return -1;
		for (int i = 0; i < SETTLE_PAUSES; i++)
			weft__cpu_relax();
	}
}

weft_task *weft__idle_take_sitting(weft__idle *d, weft__idler *me, int v)
{
	weft__deque *q = d->ops->deque(d->model, v);
	int64_t top = me->seen_top;
	me->seen_victim = -1;
	if (atomic_load(&q->bottom) <= top)
		return NULL;
	weft_task *t =
	        atomic_load_explicit(&q->ring[top & (WEFT__DEQUE_SIZE - 1)], memory_order_relaxed);
	if (!atomic_compare_exchange_strong_explicit(&q->top, &top, top + 1, memory_order_seq_cst,
	                                             memory_order_relaxed))
		return NULL;
	return t;
}

bool weft__idle_posts_waiting(weft__idle *d)
{
	for (int i = 0; i < d->nworkers; i++) {
		weft__deque *q = d->ops->deque(d->model, i);
		int64_t top = atomic_load(&q->top);
		if (atomic_load(&q->bottom) > top)
			return true;
	}
	return false;
}

/* ------------------------------------------------------------ the watch */

bool weft__watch_keep(weft__idle *d, weft__idler *me)
{
	int self = me->index + 1;
	for (;;) {
		int cur = atomic_load(&d->watch);
		if (cur != 0 && cur != self)
			return false;
		if (atomic_load(&d->awake) > 0 && !atomic_load(&d->watch_off)) {
			int zero = 0;
			if (cur == self)
				return true;
			if (atomic_compare_exchange_strong(&d->watch, &zero, self)) {
				me->posts_seen = d->ops->posts(d->model);
				me->quiet = 0;
				return true;
			}
			continue;
		}
		if (cur == 0)
			return false;
		atomic_store(&d->watch, 0);
	}
}

void weft__watch_found(weft__idle *d)
{
	atomic_store_explicit(&d->watch_ns, WATCH_MIN_NS, memory_order_relaxed);
}

/* Off duty: mark it off, leave it, and look at the deques, the mirror of a
 * lone post's push, fence, look at watch and watch_off (see idle.h). */
void weft__watch_found_nothing(weft__idle *d, weft__idler *me, int64_t period)
{
	period = period * 2 > WATCH_MAX_NS ? WATCH_MAX_NS : period * 2;
	atomic_store_explicit(&d->watch_ns, period, memory_order_relaxed);
	uint64_t sum = d->ops->posts(d->model);
	if (sum != me->posts_seen) {
		me->posts_seen = sum;
		me->quiet = 0;
		return;
	}
	if (++me->quiet < WATCH_QUIET)
		return;
	atomic_store_explicit(&d->watch_ns, WATCH_MIN_NS, memory_order_relaxed);
	atomic_store(&d->watch_off, 1);
	atomic_store(&d->watch, 0);
	if (d->ops->barrier)
		d->ops->barrier(d->model);
	if (weft__idle_posts_waiting(d))
		atomic_store(&d->watch_off, 0); /* a post that saw the watch on */
}

bool weft__watch_leave(weft__idle *d, weft__idler *me)
{
	if (atomic_load_explicit(&d->watch, memory_order_relaxed) != me->index + 1)
		return false;
	atomic_store(&d->watch, 0);
	return true;
}

bool weft__idle_doze(weft__idle *d, weft__idler *me,
                     bool (*sleep)(weft__idler *me, int64_t ns, void *ctx), void *ctx)
{
	for (;;) {
		bool watching = weft__watch_keep(d, me);
		int64_t period = watching ? weft__watch_period(d) : -1;
		if (atomic_load(&me->claimed) == 0 && sleep(me, period, ctx))
			return weft__idle_leave(d, me);
		if (atomic_load(&me->claimed) != 0)
			return true;
		if (!watching)
			continue;
		if (weft__idle_find_sitting(d, me, 0, d->nworkers - 1, true) >= 0) {
			weft__watch_found(d);
			return weft__idle_leave(d, me);
		}
		weft__watch_found_nothing(d, me, period);
	}
}
