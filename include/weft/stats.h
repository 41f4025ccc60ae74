/* Statistics: counters kept per worker and summed when read. */
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

typedef struct weft_stats {
	weft_model model;
	weft_policy policy;
	int workers;
	weft_workers_source workers_source; /* why this many workers */
	int cpus_affinity;                  /* CPUs in the affinity mask */
	int cpus_cgroup;                    /* cgroup CPU limit rounded up, 0: none */
	long queue_capacity;                /* 0: unbounded */
	uint64_t posted;                    /* accepted by weft_post */
	uint64_t run;                       /* finished running */
	uint64_t rejected;                  /* refused with WEFT_EFULL */
	uint64_t cancelled;                 /* discarded by a cancelling destroy */
	uint64_t sleeps;                    /* times a worker went to sleep */
	uint64_t wakeups;                   /* times a post woke a sleeping worker */
	uint64_t seed;                      /* the random policy's seed */
	uint64_t switches;                  /* fiber models: fibers switched in */
	uint64_t preemptions;               /* fiber models: switches forced by the timer */
	uint64_t reserved[13];
} weft_stats;

/* weft_stats_get sums the counters into *out. The sums are exact once the
 * runtime is quiet and approximate while tasks run. */
WEFT_EXTERN int weft_stats_get(weft_rt *rt, weft_stats *out);

/* weft_stats_print writes the statistics in a human-readable form. */
WEFT_EXTERN int weft_stats_print(weft_rt *rt, FILE *out);

#ifdef __cplusplus
}
#endif

#endif
