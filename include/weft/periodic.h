/** @file
 * Periodic work: a function run every period until cancelled, as GCD's
 * timer sources, Go's time.Ticker and Tokio's interval.
 *
 * @code
 * static void tick(void *arg) { (void)arg; }  // the periodic work
 *
 * void every_10ms(weft_rt *rt)
 * {
 *     weft_periodic p;
 *     weft_post_every(rt, &p, tick, NULL, weft_clock_ns(), 10000000, WEFT_EVERY_SKIP);
 *     // ... tick runs at start, start + 10 ms, start + 20 ms, ...
 *     weft_periodic_cancel(&p); // no run after this returns; p is free
 * }
 * @endcode */
#ifndef WEFT_PERIODIC_H
#define WEFT_PERIODIC_H

#include "export.h"
#include "task.h"
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct weft_rt;

/** A periodic task: caller-owned, in use from weft_post_every until
 * weft_periodic_cancel or weft_periodic_wait returned (or its runtime was
 * destroyed). Fields private. */
typedef struct weft_periodic {
	/** @cond WEFT_PRIVATE */
	weft_task runs_[2]; /* run k is runs_[k % 2]: one re-arms the other */
	struct weft_rt *rt_;
	weft_fn fn_;
	void *arg_;
	int64_t start_, period_;
	uint64_t next_;    /* index of the run posted or running */
	uint64_t count_;   /* runs that returned, atomic */
	uint64_t skipped_; /* periods skipped after overruns, atomic */
	uint32_t lock_;
	uint32_t flags_;
	int current_; /* which of runs_ is posted or running */
	int stopped_; /* cancelled, or ended by destroy or an error */
	int error_;   /* why it ended if not cancelled, or 0 */
	void *reserved_[4];
	/** @endcond */
} weft_periodic;

/** weft_post_every flags: after an overrun (a run that returned after the
 * next one was due), skip the periods missed and run next at the first
 * deadline still ahead (Go's Ticker drops ticks the same way). */
#define WEFT_EVERY_SKIP     0u
/** weft_post_every flags: after an overrun, run once for every period
 * missed, back to back, until the runs are on time again (Tokio's
 * MissedTickBehavior::Burst). */
#define WEFT_EVERY_CATCH_UP 1u

/** weft_post_every runs fn(arg) on rt at first_ns, first_ns + period_ns,
 * first_ns + 2 * period_ns, ... (CLOCK_MONOTONIC nanoseconds, as
 * weft_clock_ns() reads them: each deadline is computed from first_ns, so
 * lateness never accumulates into drift) until weft_periodic_cancel. Runs
 * never overlap: the next is posted when the previous returns, as a task
 * of its own, on any worker, on every model; flags says what an overrun
 * does (WEFT_EVERY_SKIP or WEFT_EVERY_CATCH_UP). Run k waits on the
 * runtime's timer as weft_post_at does. A periodic task is in flight until
 * cancelled: weft_wait_all(rt) waits for it; weft_rt_destroy ends it (the
 * next run is not started, a run in progress finishes). Returns 0;
 * WEFT_EINVAL for NULL rt, p or fn, a period_ns below 1 or unknown flags;
 * or what weft_post_at returns for the first run (then nothing runs). */
WEFT_EXTERN int weft_post_every(struct weft_rt *rt, weft_periodic *p, weft_fn fn, void *arg,
                                int64_t first_ns, int64_t period_ns, unsigned flags);

/** weft_periodic_cancel stops p: no run starts after it returns, and a run
 * in progress is waited for (the caller sleeps or parks), so that p may be
 * freed or posted again. Called from p's own function it only stops the
 * later runs and returns at once; p stays in use until that run returned
 * (weft_periodic_wait from elsewhere). Returns 0 (also when p had ended
 * already), WEFT_EINVAL for NULL or a p never posted. */
WEFT_EXTERN int weft_periodic_cancel(weft_periodic *p);

/** weft_periodic_wait waits until p has ended (cancelled, or its runtime
 * destroyed) and its last run returned; p may then be freed. Returns 0,
 * WEFT_EINVAL for NULL or a p never posted, WEFT_EDEADLK from p's own
 * function. */
WEFT_EXTERN int weft_periodic_wait(weft_periodic *p);

/** weft_periodic_runs returns how many runs of p have returned (0 for
 * NULL). */
WEFT_EXTERN uint64_t weft_periodic_runs(const weft_periodic *p);

/** weft_periodic_skipped returns how many periods WEFT_EVERY_SKIP left out
 * after overruns (0 for NULL). */
WEFT_EXTERN uint64_t weft_periodic_skipped(const weft_periodic *p);

#ifdef __cplusplus
}
#endif

#endif
