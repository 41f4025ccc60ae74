/* Trace export (WEFT_TRACE=path.json): Chrome trace-event JSON, one track
 * per worker (and one per thread that is not a worker), a slice per run
 * segment of a task, a flow arrow from each post to the task's first run,
 * instants for park, wake, yield, preemption and steal. A task that its
 * poster took back and ran inline (weft_fork_join, the loops) is a slice
 * too, nested in the poster's, and so is the work a thread outside the
 * workers does for a loop. Events are buffered
 * per slot (each slot has its own lock, uncontended but for a flush) and
 * written by weft__trace_write. The object knows only its slots: which
 * track the calling thread is, the file's header values and the runtime's
 * preemption guard come from core (core/observe.h wraps these for the rest
 * of weft; the runtime keeps NULL when tracing is off). */
#ifndef WEFT_SRC_OBS_TRACE_H
#define WEFT_SRC_OBS_TRACE_H

#include <stdbool.h>
#include <stdint.h>

typedef enum weft__trace_kind {
	WEFT__TRACE_POST,  /* flow start on the poster's track */
	WEFT__TRACE_BEGIN, /* a run segment begins (first one: flow end) */
	WEFT__TRACE_END,   /* a run segment ends */
	WEFT__TRACE_PARK,  /* instants */
	WEFT__TRACE_WAKE,
	WEFT__TRACE_YIELD,
	WEFT__TRACE_PREEMPT,
	WEFT__TRACE_STEAL, /* a threads worker took a batch from another's */
	/* Slices inside a run segment (or on a thread that is no worker),
	 * closed by INLINE_END; a fiber that switches out inside them has
	 * them closed and reopened with its segment (by the writer). */
	WEFT__TRACE_INLINE_BEGIN, /* a task taken back and run by its poster: flow end */
	WEFT__TRACE_LOOP_BEGIN,   /* a loop called from a thread that is no worker */
	WEFT__TRACE_HALF_BEGIN,   /* a loop's half that such a caller kept and ran */
	WEFT__TRACE_JOIN_BEGIN,   /* weft_fork_join called from a thread that is no worker */
	WEFT__TRACE_INLINE_END,
	WEFT__TRACE_KINDS
} weft__trace_kind;

struct weft__trace;

/* Opens path for writing (created or truncated now, so that a path that
 * cannot be written is known at once) and allocates the buffers for
 * slots - 1 workers and the slot of other threads; times count from now.
 * 0; WEFT_EINVAL when path cannot be opened, after saying so with errno's
 * text on stderr; WEFT_ENOMEM. */
int weft__trace_create(struct weft__trace **out, int slots, const char *path);
/* Closes the file and frees everything (writes nothing more). */
void weft__trace_destroy(struct weft__trace *tr);

/* Records an event on worker's track, or on the calling thread's own when
 * worker is not a worker slot (-1). task (an address, NULL for instants)
 * and posted (its post stamp, weft__trace_stamp) name the flow; first marks
 * the BEGIN of a task's first segment. Takes the slot's lock: a fiber must
 * not be preempted inside (the caller holds preemption off). */
void weft__trace_add(struct weft__trace *tr, int worker, weft__trace_kind kind, const void *task,
                     int64_t posted, bool first);

/* A post time for a task posted now (CLOCK_MONOTONIC ns, now): never the
 * same twice in one trace, so that it names the task's flow alone (a task's
 * address is reused by the next frame at that depth, and two posts may
 * read the same ns). One CAS on a shared word: paid only while tracing. */
int64_t weft__trace_stamp(struct weft__trace *tr, int64_t now);

/* Replaces the file's content with everything recorded so far, with the
 * header's model, policy and worker count, holding every slot's lock (same
 * preemption rule as weft__trace_add). 0, or WEFT_EINVAL after saying why
 * (the path and errno's text) on stderr. */
int weft__trace_write(struct weft__trace *tr, const char *model, const char *policy, int workers);

#endif
