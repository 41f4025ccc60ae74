/** @file
 * Waiting that suits the model: under a fiber model these calls park the
 * calling fiber and let its worker run others; under `threads` and `spawn`,
 * and on threads that are not weft workers, they block the calling kernel
 * thread, like the system calls they replace. */
#ifndef WEFT_BLOCKING_H
#define WEFT_BLOCKING_H

#include "export.h"
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** weft_yield lets other work run before the caller continues: a fiber
 * goes to the back of its worker's ready fibers, a kernel thread calls
 * sched_yield. Returns 0. Callable anywhere. */
WEFT_EXTERN int weft_yield(void);

/** weft_sleep_ns waits at least ns nanoseconds (0 is a yield; INT64_MAX
 * never returns): a fiber parks on its worker's timer, a kernel thread
 * sleeps. Returns 0, or WEFT_EINVAL for a negative ns. Callable anywhere. */
WEFT_EXTERN int weft_sleep_ns(int64_t ns);

/** weft_wait_fd waits until fd is ready for events (POLLIN, POLLOUT, ... from
 * <poll.h>) or timeout_ns passes (negative or INT64_MAX: no limit; 0: a
 * poll). Returns the ready events (> 0), WEFT_ETIMEDOUT, WEFT_ECANCELED
 * (weft_fd_cancel on fd), or WEFT_EINVAL for a bad fd or no events. A
 * fiber parks while its worker's epoll instance watches fd (so one worker
 * serves thousands of waiting connections); a kernel thread calls poll.
 * weft/io.h has the absolute form (weft_wait_fd_until), a wait for several
 * fds (weft_wait_fds), and calls that read and write. */
WEFT_EXTERN int weft_wait_fd(int fd, short events, int64_t timeout_ns);

/** weft_blocking runs fn(arg), a call that may block its thread for long
 * (a library doing its own blocking I/O), so that it does not stall other
 * work: on a fiber it runs on a thread of the runtime's blocking pool while
 * the fiber parks (one hand-off each way; the pool grows on demand up to 64
 * threads, WEFT_BLOCKING_THREADS, beyond which calls wait in order; it
 * retires a thread idle for 10 s and is ended by weft_rt_destroy:
 * docs/io.md), so there weft_worker_index() is -1; when the pool has no
 * thread and cannot create one, fn runs on the caller's worker. On any
 * other thread it runs directly. Returns 0, or WEFT_EINVAL for a NULL fn. */
WEFT_EXTERN int weft_blocking(void (*fn)(void *arg), void *arg);

#ifdef __cplusplus
}
#endif

#endif
