/** @file
 * Tasks and task groups. Both are caller-owned: weft never allocates or
 * frees them, so posting a task allocates nothing. A posted task must stay
 * alive and untouched until it has finished (weft_wait returns, or its group
 * or weft_wait_all drains); after that it may be reused or freed. */
#ifndef WEFT_TASK_H
#define WEFT_TASK_H

#include "export.h"
#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A task's function: runs with the arg given to weft_task_init (or
 * weft_fork_join). */
typedef void (*weft_fn)(void *arg);

/** The life of a task; the same names appear in statistics and traces. */
typedef enum weft_task_state {
	WEFT_TASK_IDLE = 0,      /**< initialised, not posted */
	WEFT_TASK_QUEUED = 1,    /**< posted, waiting for a worker */
	WEFT_TASK_RUNNING = 2,   /**< its function is executing */
	WEFT_TASK_DONE = 3,      /**< its function returned */
	WEFT_TASK_CANCELLED = 4, /**< discarded by a cancelling destroy */
	WEFT_TASK_STATE_COUNT_   /**< the number of states, not a state */
} weft_task_state;

struct weft_rt;
struct weft_group;

/** A task: a function and its argument, caller-owned (on the stack, in an
 * array, inside the caller's own struct). Prepare it with weft_task_init,
 * then post it (weft_post, weft_post_in, weft_post_at, weft_post_when). Its
 * fields are private: touch it only through the functions below. */
typedef struct weft_task {
	/** @cond WEFT_PRIVATE */
	/* private: touched only by weft, through the functions below */
	weft_fn fn_;
	void *arg_;
	int64_t priority_;
	uint64_t seq_;             /**< post order, for FIFO among equal priorities */
	struct weft_task *next_;   /**< queue link, or sibling in a heap */
	struct weft_task *child_;  /**< first child in a heap */
	struct weft_group *group_; /**< group to notify at completion, or NULL */
	void *fiber_;              /**< its fiber once it waited under a fiber model */
	void *waiters_;            /**< weft_wait callers, under the lock bit of state_ */
	uint32_t state_;           /**< weft_task_state | waiter and lock bits, atomic */
	uint32_t quanta_;          /**< psjf, mlfq: quanta charged to it so far */
	uint16_t level_;           /**< mlfq: its queue level */
	uint16_t epoch_;           /**< mlfq: the boost epoch its level belongs to */
	int32_t level_request_;    /**< mlfq: 1 + level asked for while in flight, or 0; atomic */
	int64_t posted_ns_;        /**< statistics on: when it was posted (CLOCK_MONOTONIC) */

	/** @endcond */
} weft_task;

/** A task group: counts the unfinished tasks posted into it (weft_post_in,
 * and the group argument of weft_post_at and weft_post_when) so that
 * weft_group_wait can wait for all of them. Caller-owned; prepare it with
 * weft_group_init. Its fields are private. */
typedef struct weft_group {
	/** @cond WEFT_PRIVATE */
	uint32_t pending_;  /**< unfinished tasks | waiter and lock bits, atomic */
	uint32_t sign_;     /**< in-flight bits of its latest post, atomic */
	void *waiters_;     /**< weft_group_wait callers, under the lock bit of pending_ */
	void *reserved_[3]; /**< [0]: marks it posted into since its last wait, atomic */

	/** @endcond */
} weft_group;

/** weft_task_init prepares a task to run fn(arg) with priority 0. Returns
 * WEFT_EINVAL if t or fn is NULL, and WEFT_EBUSY, changing nothing, when t
 * is queued or running (re-initialising it would lose it). t may be
 * uninitialised memory: a task in flight carries a signature that leftover
 * bytes match with a chance of about 2^-28. */
WEFT_EXTERN int weft_task_init(weft_task *t, weft_fn fn, void *arg);

/** weft_task_set_priority sets the task's priority: under the priority policy
 * smaller values run first, and tasks of equal priority run in post order.
 * Returns WEFT_EINVAL for NULL, WEFT_EBUSY while the task is queued or
 * running. */
WEFT_EXTERN int weft_task_set_priority(weft_task *t, int64_t priority);
/** weft_task_priority returns the task's priority (0 unless
 * weft_task_set_priority changed it), or 0 for NULL. */
WEFT_EXTERN int64_t weft_task_priority(const weft_task *t);

/** weft_task_state_of returns the task's current state. */
WEFT_EXTERN weft_task_state weft_task_state_of(const weft_task *t);
/** weft_task_state_name returns the state's name ("idle", "queued",
 * "running", "done", "cancelled"; static), or NULL when state is out of
 * range. */
WEFT_EXTERN const char *weft_task_state_name(weft_task_state state);

/** weft_wait blocks until the task has finished. Returns 0 when it ran,
 * WEFT_ECANCELED when a cancelling destroy discarded it, WEFT_EINVAL for NULL,
 * a task that was never posted, or one posted by the parent of this forked
 * process (it never finishes here), and WEFT_EDEADLK when a task waits for
 * itself. May be called from any thread, including from inside another task.
 *
 * Fork-join never deadlocks: a task that waits for tasks it (or its
 * descendants) posted completes on every model at every worker count. Under
 * fibers and mn the waiting fiber parks (or runs the awaited task inline
 * when it is its worker's newest post). Under threads and spawn the waiting
 * thread runs queued tasks meanwhile, newest first, so weft_wait may run
 * other tasks on the caller's thread: do not wait while holding a lock those
 * tasks take. It runs none while the caller holds a weft_mutex, or when
 * less than 512 KiB of its stack is left; then it blocks. Waits that are not
 * fork-join (a task blocked on a primitive that only a queued task releases)
 * can still deadlock threads and spawn when every worker is blocked; weft
 * then says so on stderr after a second. docs/models.md has the details. */
WEFT_EXTERN int weft_wait(weft_task *t);

/** weft_wait_until is weft_wait with a deadline: deadline_ns on the
 * CLOCK_MONOTONIC clock in nanoseconds, as weft_clock_ns() reads it (a
 * timeout of d nanoseconds is weft_clock_ns() + d). Returns what weft_wait
 * returns, or WEFT_ETIMEDOUT when the deadline came before the task
 * finished; the task is then unaffected (it runs, or keeps running, and may
 * be waited for again). A deadline already past returns at once. Under the
 * fiber models the waiting fiber parks on its worker's timer; on kernel
 * threads the thread sleeps. Unlike weft_wait, it never runs other tasks
 * while it waits (one could end long after the deadline), so fork-join
 * with deadlines on threads and spawn can time out where weft_wait would
 * have run the child itself. */
WEFT_EXTERN int weft_wait_until(weft_task *t, int64_t deadline_ns);

/** weft_clock_ns returns the CLOCK_MONOTONIC time in nanoseconds, the clock
 * of every deadline in weft. Callable anywhere. */
WEFT_EXTERN int64_t weft_clock_ns(void);

/** weft_cancel cancels a task that has not started. A queued task will not
 * run: it ends in WEFT_TASK_CANCELLED, its waiters get WEFT_ECANCELED, and
 * its group and weft_wait_all count it as finished. A task delayed by
 * weft_post_at ends so at once; one queued for a worker ends so when the
 * worker reaches it in the queue (it is skipped, never run), and one
 * waiting for predecessors (weft_post_when) ends so when they finished.
 * Returns 0 then (also when it was cancelled already). A running task is
 * not interrupted: weft_cancel returns WEFT_EBUSY and the task may ask
 * weft_cancel_requested(). Returns WEFT_EINVAL for NULL or a task that is
 * not in flight (never posted, or finished: too late). Cancel racing the
 * start has one outcome: either the task never runs (0) or it runs
 * (WEFT_EBUSY, or WEFT_EINVAL once it finished). Callable from any
 * thread, including from tasks. */
WEFT_EXTERN int weft_cancel(weft_task *t);

/** weft_cancel_requested tells the running task whether weft_cancel was
 * called on it (or weft_group_cancel on its group) since it started; false
 * outside tasks. */
WEFT_EXTERN bool weft_cancel_requested(void);

/** weft_group_init prepares an empty group. Tasks join it through
 * weft_post_in and leave it when they finish. Returns WEFT_EINVAL for NULL,
 * and WEFT_EBUSY, changing nothing, while tasks posted into g have not
 * finished. g may be uninitialised memory, also the bytes of an earlier
 * group: only a group that had tasks posted into it since its last
 * successful weft_group_wait leaves a mark that makes its bytes refused. */
WEFT_EXTERN int weft_group_init(weft_group *g);

/** weft_group_wait blocks until every task posted into the group has
 * finished, including tasks posted into it while waiting. Returns 0, or
 * WEFT_EINVAL for NULL or a group whose unfinished tasks the parent of this
 * forked process posted. From inside a task it waits as weft_wait does (the
 * same fork-join guarantee and limits). */
WEFT_EXTERN int weft_group_wait(weft_group *g);

/** weft_group_wait_until is weft_group_wait with a deadline (as in
 * weft_wait_until): WEFT_ETIMEDOUT when tasks of the group are still
 * unfinished at deadline_ns, leaving the group unaffected. */
WEFT_EXTERN int weft_group_wait_until(weft_group *g, int64_t deadline_ns);

/** weft_group_cancel cancels every task of g that has not started, as
 * weft_cancel does, including tasks posted into g later, until
 * weft_group_init prepares it again: each ends in WEFT_TASK_CANCELLED when
 * a worker reaches it (a delayed one when it comes due) and counts as
 * finished for the group. Running tasks see weft_cancel_requested().
 * Returns WEFT_EINVAL for NULL. */
WEFT_EXTERN int weft_group_cancel(weft_group *g);

/** weft_group_pending returns how many tasks of the group have not finished. */
WEFT_EXTERN long weft_group_pending(const weft_group *g);

#ifdef __cplusplus
}
#endif

#endif
