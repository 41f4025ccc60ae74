/* The blocking pool: kernel threads, one set per runtime, that run calls a
 * fiber must not make on its worker (weft_blocking's function, a file read
 * when io_uring is not there) while the fiber parks.
 *
 * A call costs one hand-off each way: the caller queues a job and wakes one
 * idle thread directly (each thread sleeps on a futex word of its own, so a
 * wake-up wakes exactly the one that gets the job); the thread runs it and
 * unparks the caller's waiter. The pool starts with no thread, creates one
 * when a job finds every thread busy, up to WEFT__POOL_MAX threads
 * (WEFT_BLOCKING_THREADS), after which jobs queue in FIFO order. A thread idle for WEFT__POOL_IDLE_NS ends
 * (the most recently idle thread takes the next job, so the others are the
 * ones that age out); it is joined by the next job that creates a thread,
 * or by weft_rt_destroy, which ends and joins every thread. Nothing runs in
 * the child of a fork: the runtime that owns the pool is the parent's there
 * (core/runtime.c), and a new runtime in the child has a pool of its own. */
#ifndef WEFT_SRC_IO_POOL_H
#define WEFT_SRC_IO_POOL_H

#include <stdbool.h>
#include <stdint.h>

#include "core/internal.h"
#include "sync/waiter.h"

typedef struct weft__pool weft__pool;

#define WEFT__POOL_MAX     64 /* threads per runtime unless WEFT_BLOCKING_THREADS says */
#define WEFT__POOL_IDLE_NS (10 * 1000000000LL) /* an idle thread ends after this */

typedef enum weft__job_state {
	WEFT__JOB_QUEUED,  /* on the pool's queue: take_back can still remove it */
	WEFT__JOB_RUNNING, /* a pool thread has it */
	WEFT__JOB_DONE,    /* run; the waiter was (or is being) unparked */
} weft__job_state;

/* A job, in the caller's storage (its fiber stack): the pool reads and
 * writes it until it unparks the waiter, never after. */
typedef struct weft__job {
	struct weft__job *next;
	void (*run)(struct weft__job *j); /* on a pool thread */
	weft__waiter waiter;              /* unparked when run returned */
	int fd;                           /* for weft__pool_cancel_fd; -1: none */
	int state;                        /* weft__job_state, under the pool's lock */
} weft__job;

/* Queues j on rt's pool (creating the pool or a thread as needed) and
 * returns 0: j's waiter is unparked once j->run returned. When the pool
 * has no thread and none can be created, the calling thread runs the
 * queued jobs itself (j among them) before it returns 0. WEFT_ENOMEM when
 * the pool itself cannot be allocated: j was not queued, and the caller
 * runs it. */
WEFT__WARN_UNUSED int weft__pool_submit(weft_rt *rt, weft__job *j);

/* Runs j on rt's pool and parks the calling fiber until it is done (j may
 * run right here: weft__pool_submit). For callers with no deadline. */
void weft__pool_run(weft_rt *rt, weft__job *j, weft__wait_reason why);

/* Takes j back if no thread has started it: true, and j's waiter will not
 * be unparked; false when it runs or ran (its unpark comes). */
bool weft__pool_take_back(weft_rt *rt, weft__job *j);

/* Queued jobs of every runtime's pool on fd: taken off, their result set
 * by done(j) and their waiters unparked. Returns how many. */
int weft__pool_cancel_fd(int fd, void (*done)(weft__job *j));

/* weft_rt_destroy, after the model stopped (no job in flight): ends and
 * joins every thread and frees the pool. */
void weft__pool_destroy(weft_rt *rt);

/* For the statistics: threads now, the most at once, jobs run. */
typedef struct weft__pool_stats {
	int threads, peak, max;
	uint64_t jobs, created, retired;
	uint64_t woken; /* jobs handed to a thread asleep (a futex wake each) */
} weft__pool_stats;
void weft__pool_get_stats(weft_rt *rt, weft__pool_stats *s);

/* Tests (core/testing.h): the idle time before a thread ends and the most
 * threads of pools created from now on (0: the defaults). */
void weft__pool_testing_limits(int64_t idle_ns, int max_threads);

#endif
