/** @file
 * Runtime configuration: defaults, then fields set in code, then WEFT_*
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
	WEFT_MODEL_THREADS = 0, /**< N kernel workers sharing one ready queue */
	WEFT_MODEL_SPAWN = 1,   /**< one kernel thread created and joined per task */
	WEFT_MODEL_FIBERS = 2,  /**< every task a fiber on one worker thread (M:1) */
	WEFT_MODEL_MN = 3,      /**< every task a fiber, over N work-stealing workers (M:N) */
	WEFT_MODEL_COUNT_       /**< the number of values, not a value */
} weft_model;

/** The order in which ready tasks are picked (WEFT_POLICY). */
typedef enum weft_policy {
	WEFT_POLICY_PRIORITY = 0, /**< smaller priority first, FIFO among equals */
	WEFT_POLICY_FIFO = 1,     /**< first posted, first run */
	WEFT_POLICY_RANDOM = 2,   /**< any ready task, drawn from a PRNG seeded by seed */
	WEFT_POLICY_PSJF =
	        3, /**< fewest quanta used so far first (as the thread-worker course library's PSJF) */
	WEFT_POLICY_MLFQ = 4, /**< multi-level feedback queue: demote on a used-up
	                             quantum, boost everyone periodically */
	WEFT_POLICY_COUNT_    /**< the number of values, not a value */
} weft_policy;

/** Whether fibers that never yield are time-sliced (WEFT_PREEMPT). */
typedef enum weft_preempt {
	WEFT_PREEMPT_OFF = 0,   /**< cooperative: a fiber runs until it waits or yields */
	WEFT_PREEMPT_TIMER = 1, /**< a quantum timer switches compute-bound fibers */
	WEFT_PREEMPT_COUNT_     /**< the number of values, not a value */
} weft_preempt;

/** Where the worker count came from; reported in the statistics. */
typedef enum weft_workers_source {
	WEFT_WORKERS_FROM_AFFINITY = 0, /**< CPUs in sched_getaffinity */
	WEFT_WORKERS_FROM_CGROUP = 1,   /**< the cgroup CPU limit, lower than affinity */
	WEFT_WORKERS_FROM_CONFIG = 2,   /**< weft_config.workers set in code */
	WEFT_WORKERS_FROM_ENV = 3,      /**< WEFT_WORKERS */
	WEFT_WORKERS_SOURCE_COUNT_      /**< the number of values, not a value */
} weft_workers_source;

/** Whether workers are pinned to CPUs (WEFT_PIN). */
typedef enum weft_pin {
	WEFT_PIN_OFF = 0,   /**< the kernel places and moves workers (the default) */
	WEFT_PIN_CORES = 1, /**< worker i runs only on the i-th CPU of the process's
	                       affinity mask, round robin when there are fewer CPUs */
	WEFT_PIN_COUNT_     /**< the number of values, not a value */
} weft_pin;

/** What a worker hook is told about (weft_config.worker_hook). */
typedef enum weft_worker_event {
	WEFT_WORKER_START = 0, /**< the worker thread began; it has run no task yet */
	WEFT_WORKER_EXIT = 1,  /**< the worker thread ran its last task and ends */
} weft_worker_event;

/** A worker hook: called on the worker thread itself with event (a
 * weft_worker_event; ignore values you do not know, more may come), the
 * worker's index (what weft_worker_index() returns in its tasks; under
 * spawn, the slot of the task thread) and weft_config.worker_hook_ctx.
 * Also called on the stand-in threads that run queued tasks while workers
 * are blocked (threads, spawn; docs/models.md), with the index of the
 * worker each carries. */
typedef void (*weft_worker_hook)(int event, int index, void *ctx);

/** The configuration of a runtime, given to weft_rt_create. Fill it with
 * weft_config_init, then set the fields wanted; WEFT_* environment
 * variables override the fields (docs/configuration.md). */
typedef struct weft_config {
	weft_model model;       /**< default WEFT_MODEL_THREADS */
	weft_policy policy;     /**< default WEFT_POLICY_PRIORITY */
	int workers;            /**< 0: one per CPU this process may use */
	weft_pin pin;           /**< default WEFT_PIN_OFF (in what was padding: the ABI holds) */
	long queue_capacity;    /**< most tasks queued at once; 0: unbounded */
	int stats;              /**< non-zero: print statistics to stderr at destroy */
	size_t stack_size;      /**< fiber stack bytes; 0: 64 KiB */
	uint64_t seed;          /**< random policy: 0 picks one (shown in the stats) */
	weft_preempt preempt;   /**< fiber models; default WEFT_PREEMPT_OFF */
	uint32_t quantum_us;    /**< time slice for preempt, psjf and mlfq; 0: 10,000 */
	uint32_t mlfq_levels;   /**< mlfq: number of levels, 1 .. 64; 0: 4 */
	uint32_t mlfq_boost_us; /**< mlfq: everyone back to the top this often; 0: 100,000 */
	const char *trace_path; /**< Chrome trace JSON written at destroy; NULL: none */
	/** Called on each worker thread when it starts, before any task, and
	 * when it exits, after its last task: under threads, fibers and mn once
	 * per worker, under spawn once per task thread. NULL: none. It runs
	 * with every signal blocked, must not wait for the runtime's tasks,
	 * and has returned for every worker when weft_rt_destroy returns. */
	weft_worker_hook worker_hook;
	void *worker_hook_ctx; /**< passed to worker_hook */
	void *reserved[1];     /**< room to grow without breaking the ABI; keep zero */
} weft_config;

/** weft_config_init fills *cfg with the defaults. It does not read the
 * environment: that happens in weft_rt_create, so that an environment value
 * wins over a field set in code. Returns WEFT_EINVAL if cfg is NULL. */
WEFT_EXTERN int weft_config_init(weft_config *cfg);

/** weft_model_name returns the model's name as WEFT_MODEL spells it
 * ("threads", "spawn", "fibers", "mn"; static), NULL when model is out of
 * range. */
WEFT_EXTERN const char *weft_model_name(weft_model model);
/** weft_policy_name returns the policy's name as WEFT_POLICY spells it
 * ("priority", "fifo", "random", "psjf", "mlfq"; static), NULL when out of
 * range. */
WEFT_EXTERN const char *weft_policy_name(weft_policy policy);
/** weft_preempt_name returns "off" or "timer" as WEFT_PREEMPT spells it
 * (static), NULL when out of range. */
WEFT_EXTERN const char *weft_preempt_name(weft_preempt preempt);
/** weft_workers_source_name returns the name the statistics print for where
 * the worker count came from (static), NULL when out of range. */
WEFT_EXTERN const char *weft_workers_source_name(weft_workers_source source);

#ifdef __cplusplus
}
#endif

#endif
