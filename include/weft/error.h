/** @file
 * Error codes. Every weft function that can fail returns 0 or one of these
 * negative codes; weft_strerror() and weft_err_name() describe them.
 *
 * A code says what kind of failure it was; when the system refused
 * something (a thread, a file descriptor, a stack mapping, a timer), weft
 * also says on stderr which call failed and errno's text, with the limit
 * that applies (RLIMIT_NOFILE, RLIMIT_NPROC, RLIMIT_AS, vm.max_map_count).
 * WEFT_EAGAIN is a thread the system would not create (and, from
 * weft_sem_trywait only, a count of zero), never a descriptor or a timer;
 * WEFT_EMFILE is the process (EMFILE) or the system (ENFILE) out of file
 * descriptors, which the fiber models need per worker (an epoll instance
 * and an eventfd): raising `ulimit -n` is the cure, not memory, so it has
 * its own code; WEFT_ENOMEM is memory or address space (a fiber stack that
 * cannot be mapped included). */
#ifndef WEFT_ERROR_H
#define WEFT_ERROR_H

#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The one table of error codes: X(name, value, message) for each, which
 * generates enum weft_errno, weft_strerror and weft_err_name. */
#define WEFT_ERRNO_MAP(X)                                                         \
	X(OK, 0, "success")                                                       \
	X(EINVAL, -1, "invalid argument or misuse of the API")                    \
	X(ENOMEM, -2, "out of memory")                                            \
	X(EFULL, -3, "the ready queue is full")                                   \
	X(EDEADLK, -4, "waiting here would deadlock (called from inside a task)") \
	X(EAGAIN, -5, "the system refused to create a thread")                    \
	X(ESHUTDOWN, -6, "the runtime is shutting down")                          \
	X(ENOTSUP, -7, "not supported by this model or platform")                 \
	X(EBUSY, -8, "the task is already posted and has not finished")           \
	X(ECANCELED, -9, "the task was cancelled before it ran")                  \
	X(ETIMEDOUT, -10, "timed out")                                            \
	X(ECLOSED, -11, "the channel is closed")                                  \
	X(EMFILE, -12, "too many open files (the descriptor limit, ulimit -n)")   \
	X(ESYSTEM, -13, "a system call failed; errno says why")

/** The error codes, from WEFT_ERRNO_MAP: WEFT_OK (0, success), WEFT_EINVAL
 * (-1, invalid argument or misuse of the API), WEFT_ENOMEM (-2, out of
 * memory), WEFT_EFULL (-3, the ready queue is full), WEFT_EDEADLK (-4,
 * waiting here would deadlock), WEFT_EAGAIN (-5, the system refused to
 * create a thread), WEFT_ESHUTDOWN (-6, the runtime is shutting down),
 * WEFT_ENOTSUP (-7, not supported by this model or platform), WEFT_EBUSY
 * (-8, the task is already posted and has not finished), WEFT_ECANCELED
 * (-9, the task was cancelled before it ran), WEFT_ETIMEDOUT (-10, timed
 * out), WEFT_ECLOSED (-11, the channel is closed), WEFT_EMFILE (-12, too
 * many open files), WEFT_ESYSTEM (-13, a system call failed: errno, left as
 * the system set it, says why; the I/O calls of weft/io.h). */
enum weft_errno {
/** @cond WEFT_PRIVATE */
#define WEFT__ERRNO_ENUM(name, value, msg) WEFT_##name = (value),
	WEFT_ERRNO_MAP(WEFT__ERRNO_ENUM)
#undef WEFT__ERRNO_ENUM
	/** @endcond */
};

/** weft_strerror returns a static message for an error code (or for an unknown
 * code, "unknown weft error"). Safe from any thread. */
WEFT_EXTERN const char *weft_strerror(int err);

/** weft_err_name returns the code's name, e.g. "WEFT_EFULL" (static), or
 * "WEFT_E?" for an unknown code. Safe from any thread. */
WEFT_EXTERN const char *weft_err_name(int err);

#ifdef __cplusplus
}
#endif

#endif
