/** @file
 * The runtime: one instance of weft with its model, workers, ready queue and
 * statistics. Several may coexist. */
#ifndef WEFT_RUNTIME_H
#define WEFT_RUNTIME_H

#include "config.h"
#include "export.h"
#include "task.h"
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A runtime: its model, workers, ready queue and statistics. Opaque;
 * weft_rt_create allocates it and weft_rt_destroy frees it. */
typedef struct weft_rt weft_rt;

/** What weft_rt_destroy_ex does with tasks that have not started. */
typedef enum weft_destroy_mode {
	WEFT_DESTROY_DRAIN = 0,  /**< run every queued task first (the default) */
	WEFT_DESTROY_CANCEL = 1, /**< discard queued tasks; running ones finish */
} weft_destroy_mode;

/** weft_rt_create starts a runtime configured by cfg (NULL: defaults), with
 * WEFT_* environment variables overriding cfg. Returns WEFT_EINVAL for a NULL
 * out, an invalid field, or an invalid environment value (also named on
 * stderr with the accepted values); WEFT_ENOMEM when memory runs out or,
 * under fibers and mn, a fiber stack of the configured size cannot be mapped
 * (each worker maps one up front; stderr names the size, errno's text and
 * the limit: RLIMIT_AS or vm.max_map_count); WEFT_EMFILE under fibers and mn
 * when the process or the system is out of file descriptors (each worker
 * needs an epoll instance and an eventfd; stderr names the call and
 * RLIMIT_NOFILE); or WEFT_EAGAIN when a worker thread cannot be created
 * (stderr names pthread_create, errno's text and RLIMIT_NPROC). On failure
 * nothing is left allocated. Callable from any thread, but not from a
 * signal handler.
 *
 * Runtimes and fork(): a child process has only the thread that called
 * fork, so a runtime created before it has no workers there and its tasks
 * never finish. In the child every call on such a runtime, and weft_wait or
 * weft_group_wait on a task or group it was running, returns WEFT_EINVAL
 * and says so once on stderr (instead of hanging); the child may create
 * runtimes of its own. fork followed by exec needs nothing. */
WEFT_EXTERN int weft_rt_create(weft_rt **out, const weft_config *cfg);

/** weft_rt_destroy drains: it waits until every queued task (and every task
 * those post) has run, joins the workers and frees everything the runtime
 * acquired. Same as weft_rt_destroy_ex(rt, WEFT_DESTROY_DRAIN, NULL). */
WEFT_EXTERN int weft_rt_destroy(weft_rt *rt);

/** weft_rt_destroy_ex destroys with the given mode. Under WEFT_DESTROY_CANCEL
 * queued tasks are not run: they end in WEFT_TASK_CANCELLED (their waiters
 * see WEFT_ECANCELED) and *discarded, if not NULL, receives their number.
 * Returns WEFT_EINVAL for NULL, a bad mode, a runtime already destroyed or
 * being destroyed by another thread, or one inherited across fork, and
 * WEFT_EDEADLK when called from one of the runtime's own tasks.
 *
 * Other threads may go on calling while destroy runs. A post that began
 * before destroy is waited for (its task runs, or is cancelled under
 * WEFT_DESTROY_CANCEL); later ones fail with WEFT_ESHUTDOWN. weft_wait_all
 * and the statistics calls return 0 while tasks still drain and
 * WEFT_ESHUTDOWN once destroy frees the runtime's state, and destroy waits
 * for every such caller to return first. After destroy returned the handle
 * is dead: calls with it return WEFT_EINVAL (weft keeps a runtime's memory
 * for the next weft_rt_create rather than freeing it, so this is detected
 * until a new runtime reuses it; do not rely on it beyond that). */
WEFT_EXTERN int weft_rt_destroy_ex(weft_rt *rt, weft_destroy_mode mode, size_t *discarded);

/** weft_post queues a task; it returns without waiting for it. Never
 * allocates. Returns 0, WEFT_EFULL when the bounded queue is full (nothing
 * changes), WEFT_EBUSY when the task is already queued or running,
 * WEFT_ESHUTDOWN during destroy, WEFT_EINVAL for NULL arguments or a task
 * without a function, or, under spawn, which starts the task's thread right
 * here, WEFT_EAGAIN when that thread cannot be created (nothing changes;
 * stderr names pthread_create and errno's text, at most once a second).
 * Callable from any thread, including from tasks. */
WEFT_EXTERN int weft_post(weft_rt *rt, weft_task *t);

/** weft_post_in is weft_post that also adds the task to group g. */
WEFT_EXTERN int weft_post_in(weft_rt *rt, weft_group *g, weft_task *t);

/** weft_post_at posts t (into group g, or none when g is NULL) to be queued
 * no earlier than deadline_ns, a CLOCK_MONOTONIC time as weft_clock_ns()
 * reads it (a delay of d nanoseconds is weft_clock_ns() + d): the shape of
 * GCD's dispatch_after or a libuv timer. From the call on, the task counts
 * as posted: it is QUEUED for weft_task_state_of, weft_wait and its group
 * wait for it, weft_wait_all waits until it ran, and it holds a place of a
 * bounded queue. Delayed tasks are queued in deadline order (equal
 * deadlines in post order), never early; each runtime runs one timer
 * thread for them, started at the first delayed post. weft_cancel takes a
 * delayed task back at once. Destroy (DRAIN) waits for delayed tasks to
 * come due and run; WEFT_DESTROY_CANCEL cancels them. Allocates only to
 * grow the runtime's heap of delayed tasks (amortised). Returns what
 * weft_post returns, WEFT_ENOMEM, or WEFT_EAGAIN when the timer thread
 * cannot be started. Callable from any thread, including from tasks. */
WEFT_EXTERN int weft_post_at(weft_rt *rt, weft_group *g, weft_task *t, int64_t deadline_ns);

/** weft_post_when posts t (into group g, or none) to be queued once every
 * task of after[0..n) has finished: a dependency edge from each, as GCD's
 * dispatch_group_notify, TBB flow graph edges or OpenMP's depend do, with
 * no task waiting inside a worker. A predecessor already finished counts
 * as done. If a predecessor was cancelled, t is cancelled too (its
 * waiters get WEFT_ECANCELED), so cancelling a task cancels what depends on
 * it. t counts as posted from the call on, as with weft_post_at. Each call
 * allocates one block (a record per predecessor, freed when t is queued).
 * n == 0 is weft_post_in / weft_post. Returns what weft_post returns, or
 * WEFT_ENOMEM; WEFT_EINVAL also for a NULL, never-posted or self
 * predecessor. Callable from any thread, including from tasks; results
 * stay in caller-owned memory (the predecessors' arguments). */
WEFT_EXTERN int weft_post_when(weft_rt *rt, weft_group *g, weft_task *t, weft_task *const *after,
                               size_t n);

/** weft_post_wait is weft_post that, instead of returning WEFT_EFULL, blocks
 * until there is room. From inside one of the runtime's tasks it returns
 * WEFT_EDEADLK rather than block (the caller's own worker may be the one
 * that would make room). */
WEFT_EXTERN int weft_post_wait(weft_rt *rt, weft_task *t);

/** weft_wait_all blocks until every task posted so far, including tasks those
 * tasks post, has finished. The runtime stays
 * usable: post, wait_all, post, wait_all works. Returns WEFT_EDEADLK when
 * called from one of the runtime's own tasks, WEFT_EINVAL for NULL or a dead
 * runtime, and WEFT_ESHUTDOWN when a concurrent destroy is freeing it (see
 * weft_rt_destroy_ex). */
WEFT_EXTERN int weft_wait_all(weft_rt *rt);

/** weft_worker_index returns the index (0 .. workers-1) of the worker running
 * the caller, or -1 when the caller is not running inside a weft task. */
WEFT_EXTERN int weft_worker_index(void);

/** weft_rt_current returns the runtime whose task is running the caller, or
 * NULL. */
WEFT_EXTERN weft_rt *weft_rt_current(void);

/** weft_rt_config copies the effective configuration (after the environment
 * and machine defaults were applied) into *out. Returns 0, or WEFT_EINVAL
 * for NULL or a dead runtime. */
WEFT_EXTERN int weft_rt_config(const weft_rt *rt, weft_config *out);

/** An allocator for everything weft allocates (never tasks or groups, which
 * are the caller's). free_fn receives the size that was requested. */
typedef struct weft_allocator {
	void *(*alloc_fn)(size_t size, void *ctx);          /**< like malloc; NULL: out of memory */
	void (*free_fn)(void *ptr, size_t size, void *ctx); /**< like free, with the size */
	void *ctx;                                          /**< passed to both */
} weft_allocator;

/** weft_set_allocator replaces the allocator (NULL restores malloc/free).
 * Returns WEFT_EBUSY while any runtime exists. */
WEFT_EXTERN int weft_set_allocator(const weft_allocator *a);

#ifdef __cplusplus
}
#endif

#endif
