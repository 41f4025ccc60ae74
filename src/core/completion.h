/* Quiescence ("has everything posted finished?") over the runtime's
 * weft__completion counters (internal.h) and the model's own.
 *
 * The model supplies the finished and posted sums of its workers. Each
 * count only grows and every task is counted as posted before it can
 * finish, so reading every finished count first and every posted count
 * second, equal sums prove a moment at which everything posted had
 * finished. */
#ifndef WEFT_SRC_CORE_COMPLETION_H
#define WEFT_SRC_CORE_COMPLETION_H

#include "core/internal.h"

/* The model's sums over its workers: tasks finished (run or cancelled) and
 * tasks posted by its tasks. Read finished first, then posted. */
typedef struct weft__worker_sums {
	uint64_t (*finished)(void *state);
	uint64_t (*posted)(void *state);
} weft__worker_sums;

bool weft__quiescent(weft__completion *c, const weft__worker_sums *s, void *state);

/* A post from outside the workers was counted in external_posted and then
 * refused (no task was queued): counts that and wakes wait_all sleepers,
 * which may now be quiescent. */
void weft__external_refused(weft__completion *c);

/* Destroy: waits until every outside poster has left weft_post. */
void weft__external_drain(weft__completion *c);

/* Blocks until quiescent (weft_wait_all from outside). */
void weft__wait_quiescent(weft__completion *c, const weft__worker_sums *s, void *state);

/* A worker that ran out of work wakes wait_all sleepers if quiescent. */
void weft__notify_quiescent(weft__completion *c, const weft__worker_sums *s, void *state);

#endif
