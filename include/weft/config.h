/* Runtime configuration: defaults, then fields set in code, then WEFT_*
 * environment variables, which win. docs/configuration.md catalogues every
 * variable. */
#ifndef WEFT_CONFIG_H
#define WEFT_CONFIG_H

#include "export.h"
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** How tasks become execution (WEFT_MODEL). */
typedef enum weft_model {
	WEFT_MODEL_THREADS = 0, /* N kernel workers sharing one ready queue */
	WEFT_MODEL_SPAWN = 1,   /* one kernel thread created and joined per task */
	WEFT_MODEL_FIBERS = 2,  /* every task a fiber on one worker thread (M:1) */
	WEFT_MODEL_MN = 3,      /* every task a fiber, over N work-stealing workers (M:N) */
	WEFT_MODEL_COUNT_
} weft_model;

/** The order in which ready tasks are picked (WEFT_POLICY). */
typedef enum weft_policy {
	WEFT_POLICY_PRIORITY = 0, /* smaller priority first, FIFO among equals */
	WEFT_POLICY_FIFO = 1,     /* first posted, first run */
	WEFT_POLICY_RANDOM = 2,   /* any ready task, drawn from a PRNG seeded by seed */
	WEFT_POLICY_PSJF = 3,     /* fewest quanta used so far first (seed 004's PSJF) */
	WEFT_POLICY_MLFQ = 4,     /* multi-level feedback queue: demote on a used-up
	                             quantum, boost everyone periodically */
	WEFT_POLICY_COUNT_
} weft_policy;

/** Whether fibers that never yield are time-sliced (WEFT_PREEMPT). */
typedef enum weft_preempt {
	WEFT_PREEMPT_OFF = 0,   /* cooperative: a fiber runs until it waits or yields */
	WEFT_PREEMPT_TIMER = 1, /* a quantum timer switches compute-bound fibers */
	WEFT_PREEMPT_COUNT_
} weft_preempt;

/** Where the worker count came from; reported in the statistics. */
typedef enum weft_workers_source {
	WEFT_WORKERS_FROM_AFFINITY = 0, /* CPUs in sched_getaffinity */
	WEFT_WORKERS_FROM_CGROUP = 1,   /* the cgroup CPU limit, lower than affinity */
	WEFT_WORKERS_FROM_CONFIG = 2,   /* weft_config.workers set in code */
	WEFT_WORKERS_FROM_ENV = 3,      /* WEFT_WORKERS */
	WEFT_WORKERS_SOURCE_COUNT_
} weft_workers_source;

typedef struct weft_config {
	weft_model model;       /* default WEFT_MODEL_THREADS */
	weft_policy policy;     /* default WEFT_POLICY_PRIORITY */
	int workers;            /* 0: one per CPU this process may use */
	long queue_capacity;    /* most tasks queued at once; 0: unbounded */
	int stats;              /* non-zero: print statistics to stderr at destroy */
	size_t stack_size;      /* fiber stack bytes; 0: 64 KiB */
	uint64_t seed;          /* random policy: 0 picks one (shown in the stats) */
	weft_preempt preempt;   /* fiber models; default WEFT_PREEMPT_OFF */
	uint32_t quantum_us;    /* time slice for preempt, psjf and mlfq; 0: 10,000 */
	uint32_t mlfq_levels;   /* mlfq: number of levels, 1 .. 64; 0: 4 */
	uint32_t mlfq_boost_us; /* mlfq: everyone back to the top this often; 0: 100,000 */
	const char *trace_path; /* Chrome trace JSON written at destroy; NULL: none */
	void *reserved[3];      /* room to grow without breaking the ABI; keep zero */
} weft_config;

/** weft_config_init fills *cfg with the defaults. It does not read the
 * environment: that happens in weft_rt_create, so that an environment value
 * wins over a field set in code. Returns WEFT_EINVAL if cfg is NULL. */
WEFT_EXTERN int weft_config_init(weft_config *cfg);

/** Names used by WEFT_MODEL, WEFT_POLICY and the statistics. NULL when the
 * value is out of range. */
WEFT_EXTERN const char *weft_model_name(weft_model model);
WEFT_EXTERN const char *weft_policy_name(weft_policy policy);
WEFT_EXTERN const char *weft_preempt_name(weft_preempt preempt);
WEFT_EXTERN const char *weft_workers_source_name(weft_workers_source source);

#ifdef __cplusplus
}
#endif

#endif
