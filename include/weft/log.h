/** @file
 * Where weft's messages go: stderr by default, or a function the program
 * installs. A message says why a call failed or what weft did instead of
 * what was asked (an invalid WEFT_* value, a thread that could not be
 * created, a model that ignores a setting). */
#ifndef WEFT_LOG_H
#define WEFT_LOG_H

#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

/** How much a message matters, most severe first. */
typedef enum weft_log_level {
	WEFT_LOG_ERROR = 0,  /**< a call fails, or something weft needed could not be had */
	WEFT_LOG_WARN = 1,   /**< misuse, or weft goes on in a degraded way */
	WEFT_LOG_NOTICE = 2, /**< a setting weft adjusted or ignored, said once */
} weft_log_level;

/** The type of a log hook: level is a weft_log_level, msg one message
 * without weft's "weft: " prefix and without a trailing newline (it is
 * valid only during the call), ctx what was given to weft_set_log. It is
 * called on whichever thread says something (a worker, a thread posting, the
 * one calling weft_rt_create), possibly on several at once, so it must be
 * thread-safe; it must not call weft functions that can log, or it may
 * recurse. */
typedef void (*weft_log_fn)(int level, const char *msg, void *ctx);

/** weft_set_log routes every message weft would print on stderr to fn(level,
 * msg, ctx) instead; fn NULL restores stderr (the default, which prints each
 * message as one line "weft: ...\n"). It is process-wide, like
 * weft_set_allocator, and may be called at any time from any thread: a
 * message logged concurrently goes to either the old or the new hook with
 * its own ctx, and the old hook may still be running on another thread
 * when weft_set_log returns, so keep its ctx valid until no weft call is
 * in flight. Two outputs bypass the hook: the stack-overflow report, which
 * is written with write(2) on stderr from the signal handler (a hook is
 * not async-signal-safe), and the statistics that WEFT_STATS=1 prints at
 * weft_rt_destroy (they go to stderr; weft_stats_print writes them to a
 * FILE of the program's choice). Always returns 0. */
WEFT_EXTERN int weft_set_log(weft_log_fn fn, void *ctx);

#ifdef __cplusplus
}
#endif

#endif
