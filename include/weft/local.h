/** @file
 * Task-local storage: values that belong to the running task, as
 * pthread_getspecific's belong to a thread. A key names a slot in every
 * task; each task sees its own value (NULL until it sets one), keeps it
 * across parks, yields, preemption and moves to another worker, and has
 * it destroyed with the key's destructor when its function returns.
 *
 * Under a fiber model a `_Thread_local` variable belongs to the worker,
 * not to the task: every fiber of the worker shares it, and under mn a
 * fiber that moves to another worker sees that worker's. Task-local
 * values follow the task instead, and behave the same under every model:
 * on kernel-thread models the value is still the task's (a worker that
 * runs another task while it waits, weft_wait, shows that task its own
 * values). Outside tasks (on a thread that is not running a weft task)
 * the values belong to the thread and are destroyed when it exits.
 *
 * Names: weft_tls_* (task-local storage), apart from the seed API's tsl_*
 * (include/weft/compat/), which is a thread-specific layer of its own. */
#ifndef WEFT_LOCAL_H
#define WEFT_LOCAL_H

#include "export.h"
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A task-local key (a small value, copied freely). Made by
 * weft_tls_key_create; fields private. */
typedef struct weft_tls_key {
	/** @cond WEFT_PRIVATE */
	uint32_t id_; /* slot index + 1 | generation << 8; 0: no key */
	              /** @endcond */
} weft_tls_key;

/** The number of keys that may exist at once in a process. */
#define WEFT_TLS_KEYS_MAX 128

/** weft_tls_key_create makes a key whose value is NULL in every task and
 * thread. destructor (may be NULL) is called with a task's non-NULL value
 * when the task's function returns (after the value is cleared; a
 * destructor that sets values again gets up to three more rounds, as
 * pthread keys), or with a thread's when the thread exits. Returns 0,
 * WEFT_EINVAL for a NULL key, or WEFT_EAGAIN when WEFT_TLS_KEYS_MAX keys
 * exist. Callable anywhere. */
WEFT_EXTERN int weft_tls_key_create(weft_tls_key *key, void (*destructor)(void *));

/** weft_tls_key_delete retires key: later gets return NULL and sets
 * WEFT_EINVAL; values still set are forgotten without their destructor
 * (as pthread_key_delete: free them first if they own memory). Returns 0,
 * or WEFT_EINVAL for a key that does not exist. */
WEFT_EXTERN int weft_tls_key_delete(weft_tls_key key);

/** weft_tls_get returns the running task's value for key (or the calling
 * thread's, outside tasks): NULL when none was set or the key does not
 * exist. A few nanoseconds: a thread-local load and an array read. */
WEFT_EXTERN void *weft_tls_get(weft_tls_key key);

/** weft_tls_set sets the running task's value for key (or the calling
 * thread's, outside tasks). The first set of a task or thread allocates
 * its table (WEFT_ENOMEM when that fails); later ones are stores. Returns
 * 0, or WEFT_EINVAL for a key that does not exist. */
WEFT_EXTERN int weft_tls_set(weft_tls_key key, void *value);

#ifdef __cplusplus
}
#endif

#endif
