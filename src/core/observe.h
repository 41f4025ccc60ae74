/* What the rest of weft calls to feed statistics and traces: thin wrappers
 * over obs/ (latency.h, trace.h), which knows nothing of the runtime. Here
 * the calling thread's slot is found (weft__tls, weft__slot_of), the
 * preemption guard is held around obs's locks, and "off" stays one test of
 * a pointer: rt->latency is NULL when statistics are off, rt->trace when
 * tracing is. */
#ifndef WEFT_SRC_CORE_OBSERVE_H
#define WEFT_SRC_CORE_OBSERVE_H

#include "core/internal.h"
#include "obs/latency.h"
#include "obs/trace.h"

/* Allocates rt->latency when rt->cfg.stats is set and rt->trace when
 * rt->cfg.trace_path is (opening the file); 0, WEFT_ENOMEM, or WEFT_EINVAL
 * when the trace file cannot be opened (said on stderr with the path and
 * errno's text). weft__observe_destroy then frees what was made. */
int weft__observe_create(weft_rt *rt);
/* Writes the trace file (when rt is alive and tracing) and frees both. */
void weft__observe_destroy(weft_rt *rt);

/* Statistics on only (rt->latency not NULL): counts one task's ns on the
 * calling thread's slot. */
static inline void weft__latency_record(weft_rt *rt, weft_latency kind, int64_t ns)
{
	struct weft__latency *l = rt->latency;
	weft__latency_add(l, weft__slot_of(rt, l->slots - 1), kind, ns);
}

/* Worker time accounting, when statistics are on (no-ops otherwise). A
 * model calls started/stopped at a worker's start and end, idle_begin when
 * it finds nothing to run (polling or going to sleep; repeated calls keep
 * the first time) and idle_end when it has work again. */
static inline void weft__worker_started(weft_rt *rt, int index)
{
	weft__latency_worker_started(rt->latency, index);
}

static inline void weft__idle_begin(weft_rt *rt, int index)
{
	weft__latency_idle_begin(rt->latency, index);
}

static inline void weft__idle_end(weft_rt *rt, int index)
{
	weft__latency_idle_end(rt->latency, index);
}

static inline void weft__worker_stopped(weft_rt *rt, int index)
{
	weft__latency_worker_stopped(rt->latency, index);
}

/* A worker's busy and idle time so far (its current idle stretch
 * included); false when not recorded. */
static inline bool weft__worker_times(const weft_rt *rt, int index, int64_t *busy, int64_t *idle)
{
	return weft__latency_worker_times(rt->latency, index, busy, idle);
}

/* Tracing on only (rt->trace not NULL): records an event on the calling
 * thread's track. t may be NULL for instants; first marks the BEGIN of a
 * task's first segment. */
void weft__trace_record(weft_rt *rt, weft__trace_kind kind, const weft_task *t, bool first);

static inline void weft__trace(weft_rt *rt, weft__trace_kind kind, const weft_task *t, bool first)
{
	if (__builtin_expect(rt->trace != NULL, 0))
		weft__trace_record(rt, kind, t, first);
}

/* Statistics or tracing on: one test of two pointers when both are off. */
static inline bool weft__observed(const weft_rt *rt)
{
	return __builtin_expect(rt->latency != NULL || rt->trace != NULL, 0);
}

/* The post time to store in a task posted now, when observed: its flow's
 * name too while tracing (never the same twice, weft__trace_stamp). */
static inline int64_t weft__post_stamp(weft_rt *rt)
{
	int64_t now = weft__latency_now();
	return rt->trace ? weft__trace_stamp(rt->trace, now) : now;
}

/* A task its poster took back (weft__take_back) and runs as a plain call
 * is a task as the statistics count it (stats.run): when observed, the
 * poster calls weft__inline_begin before running it and weft__inline_end
 * after, so that its latencies are recorded and the trace has its slice
 * (nested in the poster's), where its arrow ends. begin returns the start
 * time for end. */
int64_t weft__inline_begin(weft_rt *rt, const weft_task *t);
void weft__inline_end(weft_rt *rt, const weft_task *t, int64_t started);

#endif
