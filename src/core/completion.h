/* What every model with workers shares to answer "has everything posted
 * finished?" without a shared counter on the post/run path: the count of
 * posts from outside the workers (workers count their own), the wait_all
 * sleepers, and the rule that an external poster must be out of the runtime
 * before destroy frees it.
 *
 * The model supplies the finished and posted sums of its workers. Each
 * count only grows and every task is counted as posted before it can
 * finish, so reading every finished count first and every posted count
 * second, equal sums prove a moment at which everything posted had
 * finished. */
#ifndef WEFT_SRC_CORE_COMPLETION_H
#define WEFT_SRC_CORE_COMPLETION_H

#include "core/internal.h"

typedef struct weft__completion {
	/* Written only by posters from outside the workers: lines of their
	 * own, so counting a post does not take a line from a worker. */
	WEFT__ALIGNED _Atomic uint64_t external_posted;
	_Atomic uint64_t external_refused; /* posted, then found the runtime closing */
	_Atomic uint64_t external_left;    /* external posts that returned */

	/* wait_all sleepers: all_seq changes when quiescence is seen. */
	WEFT__ALIGNED _Atomic uint32_t all_seq;
	_Atomic int all_waiters;
} weft__completion;

/* The model's sums over its workers: tasks finished (run or cancelled) and
 * tasks posted by its tasks. Read finished first, then posted. */
typedef struct weft__worker_sums {
	uint64_t (*finished)(void *state);
	uint64_t (*posted)(void *state);
} weft__worker_sums;

bool weft__quiescent(weft__completion *c, const weft__worker_sums *s, void *state);

/* A post from a thread that is not one of the runtime's workers: counts
 * it, then either calls push(state, t) or, when destroy has begun, refuses
 * with WEFT_ESHUTDOWN (releasing the capacity). Its last touch of the
 * runtime is the external_left increment that destroy waits for. Inline,
 * on the post path: with a constant push, the call to it inlines too. */
static inline int weft__external_post(weft__completion *c, weft_rt *rt, weft_task *t,
                                      void (*push)(void *state, weft_task *t), void *state)
{
	/* Count first, then look at closing: a destroyer sets closing and then
	 * waits for quiescence, so either it counts this post and waits for
	 * the task, or this poster sees closing and refuses. */
	atomic_fetch_add(&c->external_posted, 1);
	int rc = 0;
	if (atomic_load(&rt->closing)) {
		weft__dequeued(rt, 1);
		atomic_fetch_add(&c->external_refused, 1);
		rc = WEFT_ESHUTDOWN;
	} else {
		push(state, t);
	}
	atomic_fetch_add_explicit(&c->external_left, 1, memory_order_release);
	return rc;
}

/* Destroy: waits until every external poster has left submit. */
void weft__external_drain(weft__completion *c);

/* Blocks until quiescent (weft_wait_all from outside). */
void weft__wait_quiescent(weft__completion *c, weft_rt *rt, const weft__worker_sums *s,
                          void *state);

/* A worker that ran out of work wakes wait_all sleepers if quiescent. */
void weft__notify_quiescent(weft__completion *c, const weft__worker_sums *s, void *state);

#endif
