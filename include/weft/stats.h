/** @file
 * Statistics: counters kept per worker and summed when read
 * (weft_stats_get), latency histograms, the trace, and the report that
 * WEFT_STATS=1 prints at destroy (weft_stats_print). */
#ifndef WEFT_STATS_H
#define WEFT_STATS_H

#include "config.h"
#include "export.h"
#include "runtime.h"
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/** What weft_stats_get reports: the configuration a runtime runs with and
 * its counters, summed over its workers. */
typedef struct weft_stats {
	weft_model model;                   /**< the model it runs */
	weft_policy policy;                 /**< the policy it runs */
	int workers;                        /**< its worker count */
	weft_workers_source workers_source; /**< why this many workers */
	int cpus_affinity;                  /**< CPUs in the affinity mask */
	int cpus_cgroup;                    /**< cgroup CPU limit rounded up, 0: none */
	long queue_capacity;                /**< 0: unbounded */
	uint64_t posted;                    /**< accepted by weft_post */
	uint64_t run;                       /**< finished running */
	uint64_t rejected;                  /**< refused with WEFT_EFULL */
	uint64_t cancelled;                 /**< discarded by a cancelling destroy */
	uint64_t sleeps;                    /**< times a worker went to sleep */
	uint64_t wakeups;                   /**< times a post woke a sleeping worker */
	uint64_t seed;                      /**< the random policy's seed */
	uint64_t switches;                  /**< fiber models: fibers switched in */
	uint64_t preemptions;               /**< fiber models: switches forced by the timer */
	uint64_t
	        steals; /**< threads: batches, or tasks a task posted, taken from another worker; mn: tasks taken from another worker's deque */
	uint64_t parks; /**< fiber models: fibers that parked */
	uint64_t unparks; /**< fiber models: parked fibers made ready again */
	uint64_t busy_ns; /**< statistics on: workers' time not idle, summed */
	uint64_t idle_ns; /**< statistics on: workers' time idle (polling or asleep) */
	uint64_t
	        steal_attempts; /**< mn: searches of other workers' deques (steals: the ones that took a task) */
	uint64_t spins; /**< mn: looks for work by idle workers before they sleep */
	uint64_t
	        standins; /**< threads, spawn: stand-ins started (a thread created, or a spare one called) to run queued tasks while every worker was blocked in a weft wait (compensation, docs/models.md) */
	uint64_t reserved[5]; /**< room to grow without breaking the ABI */
} weft_stats;

/** weft_stats_get sums the counters into *out (since the runtime was
 * created, or since the last weft_stats_reset). The sums are exact once the
 * runtime is quiet and approximate while tasks run. Returns 0, WEFT_EINVAL
 * for NULL or a dead runtime, WEFT_ESHUTDOWN once a destroy frees it. */
WEFT_EXTERN int weft_stats_get(weft_rt *rt, weft_stats *out);

/** weft_stats_reset starts the counters and the latency histograms again
 * from zero (configuration fields are kept). Returns as weft_stats_get. */
WEFT_EXTERN int weft_stats_reset(weft_rt *rt);

/** Per-task latencies, recorded only while statistics are on (cfg.stats or
 * WEFT_STATS=1): the time is read at post, at the task's first run and at
 * its end, and nowhere when statistics are off. */
typedef enum weft_latency {
	WEFT_LATENCY_QUEUE_WAIT =
	        0,            /**< post to first run: the response time of scheduling textbooks */
	WEFT_LATENCY_RUN = 1, /**< first run to end, waits inside included */
	WEFT_LATENCY_TURNAROUND = 2, /**< post to end */
	WEFT_LATENCY_COUNT_          /**< the number of kinds, not a kind */
} weft_latency;

/** Histogram buckets: counts[0] holds 0 ns, counts[b] for b >= 1 the
 * latencies in [2^(b-1), 2^b) ns. */
#define WEFT_LATENCY_BUCKETS 64

/** weft_stats_latency copies one histogram into counts. WEFT_ENOTSUP when
 * statistics are off, WEFT_EINVAL for a bad runtime, kind or NULL. */
WEFT_EXTERN int weft_stats_latency(weft_rt *rt, weft_latency kind,
                                   uint64_t counts[WEFT_LATENCY_BUCKETS]);
/** weft_latency_name returns the histogram's name as the statistics print
 * it (static), or NULL when kind is out of range. */
WEFT_EXTERN const char *weft_latency_name(weft_latency kind);

/** weft_trace_flush writes the trace recorded so far (cfg.trace_path or
 * WEFT_TRACE) now, as destroy does at the end. WEFT_ENOTSUP when tracing is
 * off, WEFT_EINVAL when the file cannot be written. */
WEFT_EXTERN int weft_trace_flush(weft_rt *rt);

/** weft_stats_print writes the statistics in a human-readable form, with the
 * latency histograms (when statistics are on) in the layout of DTrace's
 * quantize: value, distribution bar, count. Returns as weft_stats_get, or
 * WEFT_EINVAL for a NULL out. */
WEFT_EXTERN int weft_stats_print(weft_rt *rt, FILE *out);

#ifdef __cplusplus
}
#endif

#endif
