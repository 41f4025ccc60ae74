/* Idle workers and waking them: the protocol the models with several
 * workers share (threads, mn), after Go's scheduler.
 *
 * A worker that finds no work joins the idle list, then re-checks every
 * place work can appear, then sleeps (how it sleeps is the model's: a
 * futex, a poller). A poster makes its work visible first and then asks
 * weft__idle_wanted; both sides use sequentially consistent operations with
 * nothing weaker in between, so either the poster sees the idle worker or
 * the worker sees the work.
 *
 * Wake-ups are throttled: a post wakes a sleeper only when no woken worker
 * is still looking for work (nspinning == 0; a claimed worker counts there
 * until it finds work or gives up), and a woken worker that finds work
 * wakes the next one if work remains, so parallelism ramps up one worker
 * at a time instead of a thundering herd. */
#ifndef WEFT_SRC_CORE_IDLE_H
#define WEFT_SRC_CORE_IDLE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/internal.h"
#include "core/lock.h"

typedef struct weft__idler {
	struct weft__idler *next; /* under weft__idle.lock */
	/* 1 once a waker claimed this worker (it is then off the list and
	 * counted spinning); reset under the lock when it joins. A futex
	 * word for models that sleep on it. */
	_Atomic uint32_t claimed;
} weft__idler;

typedef struct weft__idle {
	WEFT__ALIGNED _Atomic int nspinning;
	_Atomic int nidle;
	weft__lock lock;
	weft__idler *list;
	_Atomic uint64_t wakeups;
} weft__idle;

/* Whether a poster that just made work visible should wake a sleeper. */
static inline bool weft__idle_wanted(weft__idle *d)
{
	return atomic_load(&d->nspinning) == 0 && atomic_load(&d->nidle) > 0;
}

/* Claims one idle worker, counted spinning from now on; NULL when there is
 * none or a woken one is still looking. The caller then wakes it. */
weft__idler *weft__idle_claim(weft__idle *d);

/* Claims one idle worker whether or not another is searching (it is then
 * counted spinning); NULL when none is idle. The caller wakes it. */
weft__idler *weft__idle_claim_any(weft__idle *d);

/* Joins the idle list. Then the caller re-checks for work and either
 * sleeps until claimed or leaves. */
void weft__idle_join(weft__idle *d, weft__idler *me);

/* Leaves the idle list; true when a waker had claimed the caller first
 * (it is then counted spinning). */
bool weft__idle_leave(weft__idle *d, weft__idler *me);

/* Claims every idle worker, calling kick on each (destroy). */
void weft__idle_claim_all(weft__idle *d, void (*kick)(weft__idler *i, void *ctx), void *ctx);

#endif
