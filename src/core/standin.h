/* Stand-ins: threads that run queued tasks in the place of a kernel-thread
 * worker that cannot (standin.c has the design).
 *
 * Two kinds, one mechanism (a thread that runs the model's help until told
 * to stop, with its worker's index):
 * - deep nesting: a worker waiting for a task runs queued tasks on its own
 *   stack; when that stack runs low a stand-in with a fresh stack goes on in
 *   its place and the worker sleeps until the stand-in has seen the wake-up
 *   (weft__standin_join_help, for task.c);
 * - compensation: a worker (or stand-in) blocked in a weft wait that runs
 *   nothing (mutex, condition, semaphore, channel, barrier, sleep, fd wait,
 *   a task wait that may not help) while tasks are queued that no running
 *   thread takes: a stand-in runs them beside it (weft__block_*, for
 *   sync/waiter.c and sync/blocking.c). */
#ifndef WEFT_SRC_CORE_STANDIN_H
#define WEFT_SRC_CORE_STANDIN_H

#include <stdbool.h>
#include <stdint.h>

#include "core/clock.h"
#include "core/internal.h"

struct weft__waiter;

/* A kernel thread's weft wait, as compensation sees it: on the waiting
 * thread's stack, between weft__block_begin and weft__block_end. */
typedef struct weft__block {
	weft_rt *rt;   /* NULL: not a worker or stand-in of a runtime that compensates */
	bool counted;  /* the wait outlasted the grace period: counted in rt->blocked */
	int64_t since; /* when every thread was first seen blocked (-1: not) */
} weft__block;

/* Before a kernel thread sleeps in a weft wait: returns how long it may
 * sleep before it calls weft__block_tick (the grace period), or -1 (no
 * limit: the thread is no worker of a runtime that compensates). Writes
 * nothing shared. */
int64_t weft__block_begin(weft__block *b);

/* The sleep ran out and the wait goes on: the first call makes the wait
 * long (counted blocked; the model's block_begin; a stand-in if every
 * thread is blocked and tasks are queued), later ones watch for a
 * deadlock. Returns the next limit, or -1. */
int64_t weft__block_tick(weft__block *b);

/* The wait is over. */
void weft__block_end(weft__block *b);

/* The ticks of a sleep that has its own deadline (a timed wait,
 * weft_sleep_ns, an fd wait): when the next weft__block_tick is due
 * (INT64_MAX: never). */
typedef struct weft__sleep_ticks {
	int64_t at;
} weft__sleep_ticks;

static inline weft__sleep_ticks weft__sleep_ticks_begin(weft__block *b, int64_t now)
{
	int64_t t = weft__block_begin(b);
	return (weft__sleep_ticks){t >= 0 ? weft__sat_add(now, t) : INT64_MAX};
}

/* How long to sleep from now, at most left (which it returns when no tick
 * comes sooner), after the tick if one is due. */
static inline int64_t weft__sleep_ticks_next(weft__sleep_ticks *k, weft__block *b, int64_t now,
                                             int64_t left)
{
	if (now >= k->at) {
		int64_t t = weft__block_tick(b);
		k->at = t >= 0 ? weft__sat_add(now, t) : INT64_MAX;
	}
	return k->at != INT64_MAX && k->at - now < left ? k->at - now : left;
}

/* An outside post to rt made a task visible (after a seq_cst operation):
 * if every thread of rt is in a long wait, a stand-in runs it. One load
 * when nothing is blocked. */
void weft__standin_consider(weft_rt *rt);
static inline void weft__standin_poke(weft_rt *rt)
{
	if (atomic_load(&rt->blocked) > 0)
		weft__standin_consider(rt);
}

/* Destroy, after every task finished: joins every stand-in. */
void weft__standin_join_all(weft_rt *rt);

/* task.c's wait for rec on a worker that may run queued tasks meanwhile
 * (the model has help): runs them until rec is woken, handing over to a
 * stand-in with a fresh stack when this one runs low; false when it could
 * not (no stack left and no thread to be had: the caller parks). */
bool weft__standin_join_help(weft_rt *rt, struct weft__waiter *rec);

#endif
