/* The progress duty (weft/progress.h) as the schedulers take it. Engine
 * code calls weft__progress_idle before a fiber worker sleeps and
 * weft__progress_busy between tasks; neither asks which model it runs
 * under. */
#ifndef WEFT_SRC_CORE_PROGRESS_H
#define WEFT_SRC_CORE_PROGRESS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* How many progress functions are registered: a relaxed load tells the
 * hot paths there is nothing to do. */
extern _Atomic int weft__progress_count;

/* Per worker: the adaptive spin and the busy tick. */
typedef struct weft__progress_state {
	int64_t spin_ns;
	int64_t last_ns; /* the last busy poll */
	uint32_t ticks;
} weft__progress_state;

static inline bool weft__progress_on(void)
{
	return atomic_load_explicit(&weft__progress_count, memory_order_relaxed) > 0;
}

/* For a worker with nothing to run: polls, then spins polling for the
 * adaptive window (none at first) while work_came(ctx) is false. Returns true when work
 * came (run it: do not sleep), else stores in *sleep_ns how long the
 * worker may sleep at most (negative: no limit). */
bool weft__progress_idle(weft__progress_state *s, bool (*work_came)(void *ctx), void *ctx,
                         int64_t *sleep_ns);

/* The watch: of the workers that sleep while a progress function waits,
 * one sleeps no longer than asked and the others until work comes, so
 * that the polling costs one wake-up per interval, not one per worker.
 * weft__progress_watch claims it for who (or says who has it already);
 * weft__progress_unwatch gives it up after the sleep. */
bool weft__progress_watch(const void *who);
void weft__progress_unwatch(const void *who);

/* For a busy worker, between two tasks: polls as often as the progress
 * functions asked (every few dozen calls while nobody waits). */
void weft__progress_busy(weft__progress_state *s);

#endif
