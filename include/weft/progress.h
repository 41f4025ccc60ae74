/* Progress functions: how a library that completes work without a file
 * descriptor (an MPI implementation, a GPU queue) gets polled by weft's
 * workers instead of by a spinning core. A task that waits for such work
 * registers what it waits for with the library's own code, then parks on an
 * ordinary primitive (a weft_sem); the library's progress function, called
 * by a worker that has nothing to run (and, every so often, by a busy one),
 * polls, and posts the semaphores of the waits that completed. weft-mpi
 * (weft/mpi.h) is built on it; docs/mpi.md says what it costs. */
#ifndef WEFT_PROGRESS_H
#define WEFT_PROGRESS_H

#include "export.h"
#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A progress function: polls once, makes ready the waiters whose work
 * completed, and returns when it wants to be called again: 0 when it
 * completed something (it is then likely to again soon), n > 0 at the
 * latest n nanoseconds from now (a worker with nothing to run sleeps no
 * longer than that), or a negative value when nobody waits (workers then
 * sleep until other work comes). It must not park or block for long: it
 * runs on a worker between tasks, one call at a time over the process. */
typedef int64_t (*weft_progress_fn)(void *arg);

/** weft_progress_add registers fn(arg) with every runtime of the process,
 * present and future: fiber workers (fibers, mn) call it before they would
 * sleep, poll with it for a short adaptive spin, then sleep at most as long
 * as it asked, and a busy worker calls it between two tasks as often as it
 * asked (every few dozen tasks while nobody waits). Up to 4
 * functions. Returns 0, WEFT_EINVAL for a NULL fn or one already added with
 * that arg, WEFT_ENOMEM when 4 are registered. */
WEFT_EXTERN int weft_progress_add(weft_progress_fn fn, void *arg);

/** weft_progress_remove unregisters fn(arg); when it returns, no worker is
 * calling it any more (arg may be freed), except the caller itself when it
 * is called from a progress function (fn removing itself, or another one):
 * the poll it is called from does not call fn again. WEFT_EINVAL when it
 * was not registered. */
WEFT_EXTERN int weft_progress_remove(weft_progress_fn fn, void *arg);

/** weft_progress_served tells whether the calling thread is a worker that
 * calls the progress functions itself when it has nothing to run, i.e. a
 * task that parks on a weft_sem is resumed once a progress function posts
 * it (a fiber of fibers or mn). false on a kernel thread (a task of
 * threads or spawn, a thread outside a runtime): such a waiter blocks its
 * thread, so it should call weft_progress_poll itself between short
 * sleeps. */
WEFT_EXTERN bool weft_progress_served(void);

/** weft_progress_poll calls every registered progress function once,
 * unless another thread is doing so right now, and returns the smallest
 * value they returned (negative: none is registered or none waits; also
 * what it returns when another thread was polling). Any thread. */
WEFT_EXTERN int64_t weft_progress_poll(void);

#ifdef __cplusplus
}
#endif

#endif
