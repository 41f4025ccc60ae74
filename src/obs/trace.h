/* Trace export (WEFT_TRACE=path.json): Chrome trace-event JSON, one track
 * per worker (and one for threads that are not workers), a slice per run
 * segment of a task, a flow arrow from each post to the task's first run,
 * instants for park, wake, yield, preemption and steal. Events are buffered per
 * worker (each slot has its own lock, uncontended but for
 * weft_trace_flush) and written at destroy or on weft_trace_flush. Nothing
 * is recorded unless a path was given; rt->trace is NULL then. */
#ifndef WEFT_SRC_OBS_TRACE_H
#define WEFT_SRC_OBS_TRACE_H

#include <stdint.h>

#include "core/internal.h"

typedef enum weft__trace_kind {
	WEFT__TRACE_POST,  /* flow start on the poster's track */
	WEFT__TRACE_BEGIN, /* a run segment begins (first one: flow end) */
	WEFT__TRACE_END,   /* a run segment ends */
	WEFT__TRACE_PARK,  /* instants */
	WEFT__TRACE_WAKE,
	WEFT__TRACE_YIELD,
	WEFT__TRACE_PREEMPT,
	WEFT__TRACE_STEAL, /* a threads worker took a batch from another's */
	WEFT__TRACE_KINDS
} weft__trace_kind;

/* Allocates rt->trace when rt->cfg.trace_path is set; 0 or WEFT_ENOMEM. */
int weft__trace_create(weft_rt *rt);
/* Writes the file (if any events) and frees everything. */
void weft__trace_destroy(weft_rt *rt);

/* Records an event on the calling thread's track. task may be NULL for
 * instants; first marks the BEGIN of a task's first segment. */
void weft__trace_record(weft_rt *rt, weft__trace_kind kind, const weft_task *t, bool first);

static inline void weft__trace(weft_rt *rt, weft__trace_kind kind, const weft_task *t, bool first)
{
	if (__builtin_expect(rt->trace != NULL, 0))
		weft__trace_record(rt, kind, t, first);
}

#endif
