/* Per-task latency histograms (weft_stats_latency) and worker time: log2
 * buckets, one set per worker so that recording is a plain increment on the
 * worker's own cache lines, plus one shared set (atomic adds) for tasks run
 * by threads that are not workers. The object knows only its slots; which
 * slot the calling thread writes to, and whether statistics are on at all
 * (the runtime keeps NULL then and nothing is timed), is core's business:
 * core/observe.h wraps these for the rest of weft. */
#ifndef WEFT_SRC_OBS_LATENCY_H
#define WEFT_SRC_OBS_LATENCY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include <weft/weft.h>

#include "core/alloc.h"

typedef struct weft__latency_slot {
	WEFT__ALIGNED _Atomic uint64_t bucket[WEFT_LATENCY_COUNT_][WEFT_LATENCY_BUCKETS];
	/* Worker time (workers' own slots only): written by the worker. */
	_Atomic int64_t started, stopped, idle_ns, idle_since;
} weft__latency_slot;

struct weft__latency {
	int slots; /* workers + 1: the last is shared */
	weft__latency_slot slot[];
};

/* Allocates the histograms for slots - 1 workers and the shared slot;
 * NULL when out of memory. */
struct weft__latency *weft__latency_create(int slots);
void weft__latency_destroy(struct weft__latency *l);
void weft__latency_reset(struct weft__latency *l);
/* Writes the three histograms (weft_stats_print). */
void weft__latency_print(const struct weft__latency *l, FILE *out);
/* Sums one kind over the slots (all zero when l is NULL). */
void weft__latency_sum(const struct weft__latency *l, weft_latency kind,
                       uint64_t out[WEFT_LATENCY_BUCKETS]);

static inline int64_t weft__latency_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline unsigned weft__latency_bucket(int64_t ns)
{
	if (ns <= 0)
		return 0;
	return 64u - (unsigned)__builtin_clzll((uint64_t)ns); /* [2^(b-1), 2^b) */
}

/* Counts one task's ns in slot i (0 .. slots - 1; only the thread that owns
 * a worker slot writes to it, the last is shared). */
static inline void weft__latency_add(struct weft__latency *l, int i, weft_latency kind, int64_t ns)
{
	unsigned b = weft__latency_bucket(ns);
	if (b >= WEFT_LATENCY_BUCKETS)
		b = WEFT_LATENCY_BUCKETS - 1;
	_Atomic uint64_t *c = &l->slot[i].bucket[kind][b];
	if (i < l->slots - 1) /* the worker's own: a plain increment */
		atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
		                      memory_order_relaxed);
	else
		atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

/* Worker time accounting (no-ops when l is NULL or index is not a worker
 * slot). A worker calls started/stopped at its start and end, idle_begin
 * when it finds nothing to run (polling or going to sleep; repeated calls
 * keep the first time) and idle_end when it has work again. */
static inline weft__latency_slot *weft__latency_worker_slot(struct weft__latency *l, int index)
{
	return l && index >= 0 && index < l->slots - 1 ? &l->slot[index] : NULL;
}

static inline void weft__latency_worker_started(struct weft__latency *l, int index)
{
	weft__latency_slot *s = weft__latency_worker_slot(l, index);
	if (s)
		atomic_store_explicit(&s->started, weft__latency_now(), memory_order_relaxed);
}

static inline void weft__latency_idle_begin(struct weft__latency *l, int index)
{
	weft__latency_slot *s = weft__latency_worker_slot(l, index);
	if (s && atomic_load_explicit(&s->idle_since, memory_order_relaxed) == 0)
		atomic_store_explicit(&s->idle_since, weft__latency_now(), memory_order_relaxed);
}

static inline void weft__latency_idle_end(struct weft__latency *l, int index)
{
	weft__latency_slot *s = weft__latency_worker_slot(l, index);
	if (!s)
		return;
	int64_t since = atomic_load_explicit(&s->idle_since, memory_order_relaxed);
	if (since == 0)
		return;
	atomic_store_explicit(&s->idle_ns,
	                      atomic_load_explicit(&s->idle_ns, memory_order_relaxed) +
	                              (weft__latency_now() - since),
	                      memory_order_relaxed);
	atomic_store_explicit(&s->idle_since, 0, memory_order_relaxed);
}

static inline void weft__latency_worker_stopped(struct weft__latency *l, int index)
{
	weft__latency_idle_end(l, index);
	weft__latency_slot *s = weft__latency_worker_slot(l, index);
	if (s)
		atomic_store_explicit(&s->stopped, weft__latency_now(), memory_order_relaxed);
}

/* A worker's busy and idle time so far (its current idle stretch
 * included); false when not recorded. */
bool weft__latency_worker_times(const struct weft__latency *l, int index, int64_t *busy,
                                int64_t *idle);

#endif
