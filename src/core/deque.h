/* A work-stealing deque of tasks (Chase and Lev, with the C11 orderings of
 * Le, Pop, Cohen and Zappa Nardelli, "Correct and Efficient Work-Stealing
 * for Weak Memory Models", 2013), on a fixed ring: the owner pushes and
 * pops at the bottom (newest first: work-first order), thieves take from
 * the top (oldest first: the biggest pieces of a fork-join tree).
 *
 * The ring has a fixed size so that pushing never allocates; a push that
 * finds it full fails and the owner moves work elsewhere. Where the paper
 * uses fences, this uses sequentially consistent operations on bottom and
 * top: the same order on x86-64 (a locked instruction in pop, as the
 * fence), and ThreadSanitizer understands them (it does not model fences).
 *
 * A thief may want to know whether the one task it sees is the same one it
 * saw before (a task sitting there, not one its poster is about to take
 * back): pushes counts the owner's pushes, on the owner's own line.
 *
 * Owner only: push, pop. Any thread: steal, size_hint, peek. */
#ifndef WEFT_SRC_CORE_DEQUE_H
#define WEFT_SRC_CORE_DEQUE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/internal.h"

#define WEFT__DEQUE_SIZE 1024 /* a power of two */

typedef struct weft__deque {
	WEFT__ALIGNED _Atomic int64_t top; /* thieves CAS it */
	WEFT__ALIGNED _Atomic int64_t bottom;
	_Atomic uint64_t pushes; /* owner writes; a thief's "same as before?" */
	_Atomic(weft_task *) ring[WEFT__DEQUE_SIZE];
} weft__deque;

static inline bool weft__deque_push(weft__deque *d, weft_task *t)
{
	int64_t b = atomic_load_explicit(&d->bottom, memory_order_relaxed);
	int64_t top = atomic_load_explicit(&d->top, memory_order_acquire);
	if (b - top >= WEFT__DEQUE_SIZE)
		return false;
	atomic_store_explicit(&d->ring[b & (WEFT__DEQUE_SIZE - 1)], t, memory_order_relaxed);
	atomic_store_explicit(&d->pushes,
	                      atomic_load_explicit(&d->pushes, memory_order_relaxed) + 1,
	                      memory_order_relaxed);
	atomic_store_explicit(&d->bottom, b + 1, memory_order_release);
	return true;
}

static inline weft_task *weft__deque_pop(weft__deque *d)
{
	int64_t b = atomic_load_explicit(&d->bottom, memory_order_relaxed) - 1;
	int64_t top = atomic_load_explicit(&d->top, memory_order_relaxed);
	if (top > b) /* empty: nothing a thief could race for */
		return NULL;
	atomic_store_explicit(&d->bottom, b, memory_order_seq_cst);
	top = atomic_load_explicit(&d->top, memory_order_seq_cst);
	if (top > b) { /* a thief took the last one */
		atomic_store_explicit(&d->bottom, b + 1, memory_order_release);
		return NULL;
	}
	weft_task *t =
	        atomic_load_explicit(&d->ring[b & (WEFT__DEQUE_SIZE - 1)], memory_order_relaxed);
	if (top == b) { /* the last one: race the thieves for it */
		if (!atomic_compare_exchange_strong_explicit(
		            &d->top, &top, top + 1, memory_order_seq_cst, memory_order_relaxed))
			t = NULL;
		atomic_store_explicit(&d->bottom, b + 1, memory_order_release);
	}
	return t;
}

/* Takes the oldest task, or NULL when empty or when another thief won the
 * race (*lost is then set: worth trying again). */
static inline weft_task *weft__deque_steal(weft__deque *d, bool *lost)
{
	int64_t top = atomic_load_explicit(&d->top, memory_order_seq_cst);
	int64_t b = atomic_load_explicit(&d->bottom, memory_order_seq_cst);
	if (top >= b)
		return NULL;
	weft_task *t =
	        atomic_load_explicit(&d->ring[top & (WEFT__DEQUE_SIZE - 1)], memory_order_relaxed);
	if (!atomic_compare_exchange_strong_explicit(&d->top, &top, top + 1, memory_order_seq_cst,
	                                             memory_order_relaxed)) {
		*lost = true;
		return NULL;
	}
	return t;
}

static inline int64_t weft__deque_size_hint(weft__deque *d)
{
	int64_t b = atomic_load_explicit(&d->bottom, memory_order_relaxed);
	int64_t top = atomic_load_explicit(&d->top, memory_order_relaxed);
	return b > top ? b - top : 0;
}

/* What a thief sees without taking: the number queued, and a key that
 * changes whenever the owner pushes or somebody takes the oldest. */
static inline int64_t weft__deque_peek(weft__deque *d, uint64_t *key)
{
	int64_t top = atomic_load_explicit(&d->top, memory_order_acquire);
	int64_t b = atomic_load_explicit(&d->bottom, memory_order_acquire);
	uint64_t pushes = atomic_load_explicit(&d->pushes, memory_order_relaxed);
	*key = ((uint64_t)top << 40) ^ pushes;
	return b > top ? b - top : 0;
}

#endif
