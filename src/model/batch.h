/* A worker's batch (model threads): tasks it took from the ready queue and
 * has not started, entries [pos, len) of tasks[]. span packs gen:32 pos:16
 * len:16. The owner takes from the front and other workers steal from the
 * back, both by CAS on span, so no task hides in a busy worker's batch (a
 * task that waits for a later one in the same batch would otherwise
 * deadlock). Entries are written only by the owner while the batch is
 * empty, and every refill changes gen, so a thief that read entries of an
 * older batch fails its CAS. */
#ifndef WEFT_SRC_MODEL_BATCH_H
#define WEFT_SRC_MODEL_BATCH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/internal.h"

#define BATCH_MAX 16

typedef struct weft__batch {
	WEFT__ALIGNED _Atomic uint64_t span;
	_Atomic(weft_task *) tasks[BATCH_MAX];
} weft__batch;

#define SPAN(gen, pos, len) ((uint64_t)(gen) << 32 | (uint64_t)(pos) << 16 | (uint64_t)(len))
#define SPAN_GEN(s)         ((uint32_t)((s) >> 32))
#define SPAN_POS(s)         ((int)(((s) >> 16) & 0xffff))
#define SPAN_LEN(s)         ((int)((s)&0xffff))

/* Publishes n tasks as the new batch. Owner only, with the batch empty. */
static inline void weft__batch_fill(weft__batch *b, weft_task *const *tasks, int n)
{
	uint64_t s = atomic_load_explicit(&b->span, memory_order_relaxed);
	for (int i = 0; i < n; i++)
		atomic_store_explicit(&b->tasks[i], tasks[i], memory_order_relaxed);
	atomic_store(&b->span, SPAN(SPAN_GEN(s) + 1, 0, n)); /* seq_cst: see wake */
}

/* Takes the first unstarted task, or NULL. */
static inline weft_task *weft__batch_take_front(weft__batch *b)
{
	uint64_t s = atomic_load_explicit(&b->span, memory_order_acquire);
	while (SPAN_POS(s) < SPAN_LEN(s)) {
		weft_task *t = atomic_load_explicit(&b->tasks[SPAN_POS(s)], memory_order_relaxed);
		if (atomic_compare_exchange_weak_explicit(&b->span, &s, s + SPAN(0, 1, 0),
		                                          memory_order_acq_rel,
		                                          memory_order_acquire))
			return t;
	}
	return NULL;
}

/* Takes the back half (rounded up), or all of it when whole is set, into
 * out. Returns how many. */
static inline int weft__batch_take_back(weft__batch *b, bool whole, weft_task **out)
{
	uint64_t s = atomic_load_explicit(&b->span, memory_order_acquire);
	for (;;) {
		int pos = SPAN_POS(s), len = SPAN_LEN(s);
		int k = whole ? len - pos : (len - pos + 1) / 2;
		if (k <= 0)
			return 0;
		for (int i = 0; i < k; i++)
			out[i] = atomic_load_explicit(&b->tasks[len - k + i], memory_order_relaxed);
		if (atomic_compare_exchange_weak_explicit(
		            &b->span, &s, SPAN(SPAN_GEN(s), pos, len - k), memory_order_acq_rel,
		            memory_order_acquire))
			return k;
	}
}

/* Whether it holds an unstarted task (a racy look: for has_queued). */
static inline bool weft__batch_holds(weft__batch *b)
{
	uint64_t s = atomic_load_explicit(&b->span, memory_order_relaxed);
	return SPAN_POS(s) < SPAN_LEN(s);
}

#endif
