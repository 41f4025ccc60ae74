/* The waiter seam: whatever is blocked on a primitive. Every primitive in
 * src/sync queues weft__waiter records (on the waiting thread's stack) and
 * only ever calls park and unpark, so adding a model that blocks
 * differently (a fiber that parks instead of sleeping) changes this file
 * and nothing above it.
 *
 * A waiter is a fiber, which parks (src/fiber/engine.h), or a kernel thread,
 * which sleeps on the record's futex word. */
#ifndef WEFT_SRC_SYNC_WAITER_H
#define WEFT_SRC_SYNC_WAITER_H

#include <stdatomic.h>
#include <stdint.h>

#include "core/internal.h"
#include "core/lock.h"
#include "fiber/engine.h"

typedef struct weft__waiter {
	struct weft__waiter *next;
	_Atomic uint32_t woken; /* futex word: 0 waiting, 1 woken, 2 asleep */
	int result;             /* set by the waker before unpark */
	void *data;             /* hand-off payload, primitive-specific */
	weft__fiber *fiber;     /* the parked fiber, or NULL for a kernel thread */
	/* Not a waiter but a continuation (core/deferred.c): called by
	 * weft__waiter_unpark instead of waking anything. */
	void (*notify)(struct weft__waiter *w);
	/* A case of weft_chan_select (sync/select.c), or NULL: whoever pops it
	 * from a channel's queue claims it first (weft__select_claim) and
	 * skips it when another case of its select went first. */
	struct weft__selector *sel;
} weft__waiter;

static inline void weft__waiter_init(weft__waiter *w, void *data)
{
	w->next = NULL;
	atomic_store_explicit(&w->woken, 0, memory_order_relaxed);
	w->result = 0;
	w->data = data;
	w->fiber = weft__tls.fiber;
	w->notify = NULL;
	w->sel = NULL;
}

/* Blocks until weft__waiter_unpark(w); then w->result and whatever the
 * waker wrote before are visible. why: what the fiber waits for (traces).
 * A kernel thread that is a worker (or stand-in) of a runtime whose model
 * compensates sleeps at most the grace period before it tells
 * core/standin.h, which may start a stand-in to run queued tasks, and says
 * on stderr what it cannot cure (a likely deadlock) instead of hanging
 * silently. The timed and the untimed park alike. */
void weft__waiter_park_for(weft__waiter *w, weft__wait_reason why);

static inline void weft__waiter_park(weft__waiter *w)
{
	weft__waiter_park_for(w, WEFT__WAIT_SYNC);
}

/* weft__waiter_park without the spin: a kernel thread sleeps at once. For a
 * waiter that is only woken to compete again (the barging mutex): spinning
 * there makes every unlock pay a wake-up while the running thread could
 * have gone on alone. */
void weft__waiter_park_sleeping(weft__waiter *w);

/* weft__waiter_park until CLOCK_MONOTONIC reaches deadline_ns: true when
 * unparked, false when the deadline came first. After false, w may still
 * be on the primitive's queue, or a waker may have just taken it and be
 * about to unpark it: the caller takes the primitive's lock and removes w
 * if it is still queued (the wait timed out, nothing changed), else calls
 * weft__waiter_park_for to receive the wake-up it was given. */
bool weft__waiter_park_until(weft__waiter *w, weft__wait_reason why, int64_t deadline_ns);

/* Kernel threads: whether w was unparked, and a sleep of at most
 * timeout_ns waiting for it (it may return early), for a waiter that
 * looks for other work meanwhile. */
bool weft__waiter_woken(weft__waiter *w);
void weft__waiter_sleep(weft__waiter *w, int64_t timeout_ns);

/* Wakes w. w may be gone as soon as this returns (its owner returns from
 * park and its stack frame ends), so the caller reads nothing of w after. */
void weft__waiter_unpark(weft__waiter *w);

/* The FIFO queue and lock every primitive embeds (WEFT__SYNC_FIELDS). */
typedef struct weft__sync {
	weft__lock lock;
	uint32_t state;
	weft__waiter *head, *tail;
} weft__sync;

#define WEFT__SYNC(p) ((weft__sync *)(void *)&(p)->lock_)

static inline void weft__sync_push(weft__sync *s, weft__waiter *w)
{
	w->next = NULL;
	if (s->tail)
		s->tail->next = w;
	else
		s->head = w;
	s->tail = w;
}

static inline weft__waiter *weft__sync_pop(weft__sync *s)
{
	weft__waiter *w = s->head;
	if (w) {
		s->head = w->next;
		if (!s->head)
			s->tail = NULL;
	}
	return w;
}

/* Takes every queued waiter off s (caller holds the lock); hand the list
 * to weft__sync_unpark_list after releasing it. */
static inline weft__waiter *weft__sync_take_all(weft__sync *s)
{
	weft__waiter *list = s->head;
	s->head = s->tail = NULL;
	return list;
}

/* Unparks every waiter of a list, reading each link before the waiter can
 * return and end the stack frame it lives in. */
static inline void weft__sync_unpark_list(weft__waiter *list)
{
	while (list) {
		weft__waiter *next = list->next;
		weft__waiter_unpark(list);
		list = next;
	}
}

/* Queues a waiter, releases the lock and parks; returns the waker's result. */
int weft__sync_wait(weft__sync *s, void *data);

/* After a timed park of w on s ran out: takes w off s's queue and returns
 * true with s's lock held (the caller fixes its state, then unlocks); or,
 * when a waker popped w first, receives that wake-up (w->result is the
 * waker's) and returns false without the lock. */
bool weft__sync_take_back(weft__sync *s, weft__waiter *w);

/* weft__sync_wait until CLOCK_MONOTONIC deadline_ns: the waker's result,
 * or WEFT_ETIMEDOUT with the lock held again and the waiter taken off the
 * queue (the caller fixes what its state says about waiters, then
 * releases the lock). */
int weft__sync_wait_until(weft__sync *s, void *data, int64_t deadline_ns);

#endif
