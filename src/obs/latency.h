/* Per-task latency histograms (weft_stats_latency): log2 buckets, one set
 * per worker so that recording is a plain increment on the worker's own
 * cache lines, plus one shared set (atomic adds) for tasks run by threads
 * that are not this runtime's workers. Allocated only when statistics are
 * on; rt->latency is NULL otherwise and nothing is timed. */
#ifndef WEFT_SRC_OBS_LATENCY_H
#define WEFT_SRC_OBS_LATENCY_H

#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "core/internal.h"

typedef struct weft__latency_slot {
	WEFT__ALIGNED _Atomic uint64_t bucket[WEFT_LATENCY_COUNT_][WEFT_LATENCY_BUCKETS];
	/* Worker time (workers' own slots only): written by the worker. */
	_Atomic int64_t started, stopped, idle_ns, idle_since;
} weft__latency_slot;

struct weft__latency {
	int slots; /* workers + 1: the last is shared */
	weft__latency_slot slot[];
};

/* Allocates rt->latency when rt->cfg.stats is set; 0 or WEFT_ENOMEM. */
int weft__latency_create(weft_rt *rt);
void weft__latency_destroy(weft_rt *rt);
void weft__latency_reset(weft_rt *rt);
/* Writes the three histograms (weft_stats_print). */
void weft__latency_print(const weft_rt *rt, FILE *out);
/* Sums one kind over the slots. */
void weft__latency_sum(const weft_rt *rt, weft_latency kind, uint64_t out[WEFT_LATENCY_BUCKETS]);

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

static inline void weft__latency_record(weft_rt *rt, weft_latency kind, int64_t ns)
{
	struct weft__latency *l = rt->latency;
	unsigned b = weft__latency_bucket(ns);
	if (b >= WEFT_LATENCY_BUCKETS)
		b = WEFT_LATENCY_BUCKETS - 1;
	int i = weft__slot_of(rt, l->slots - 1);
	_Atomic uint64_t *c = &l->slot[i].bucket[kind][b];
	if (i < l->slots - 1) /* the worker's own: a plain increment */
		atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
		                      memory_order_relaxed);
	else
		atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

/* Worker time accounting, when statistics are on (no-ops otherwise). A
 * model calls started/stopped at a worker's start and end, idle_begin when
 * it finds nothing to run (polling or going to sleep; repeated calls keep
 * the first time) and idle_end when it has work again. */
static inline weft__latency_slot *weft__worker_slot(weft_rt *rt, int index)
{
	struct weft__latency *l = rt->latency;
	return l && index >= 0 && index < l->slots - 1 ? &l->slot[index] : NULL;
}

static inline void weft__worker_started(weft_rt *rt, int index)
{
	weft__latency_slot *s = weft__worker_slot(rt, index);
	if (s)
		atomic_store_explicit(&s->started, weft__latency_now(), memory_order_relaxed);
}

static inline void weft__idle_begin(weft_rt *rt, int index)
{
	weft__latency_slot *s = weft__worker_slot(rt, index);
	if (s && atomic_load_explicit(&s->idle_since, memory_order_relaxed) == 0)
		atomic_store_explicit(&s->idle_since, weft__latency_now(), memory_order_relaxed);
}

static inline void weft__idle_end(weft_rt *rt, int index)
{
	weft__latency_slot *s = weft__worker_slot(rt, index);
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

static inline void weft__worker_stopped(weft_rt *rt, int index)
{
	weft__idle_end(rt, index);
	weft__latency_slot *s = weft__worker_slot(rt, index);
	if (s)
		atomic_store_explicit(&s->stopped, weft__latency_now(), memory_order_relaxed);
}

/* A worker's busy and idle time so far (its current idle stretch
 * included); false when not recorded. */
bool weft__worker_times(const weft_rt *rt, int index, int64_t *busy, int64_t *idle);

#endif
