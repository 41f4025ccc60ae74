/** @file
 * Synchronisation primitives that work under every model and from threads
 * that are not weft workers: a mutex, a condition variable, a counting
 * semaphore, a barrier, a bounded channel with a select over several
 * channels, a reader-writer lock, a one-time initialisation and a latch.
 *
 * All are caller-owned (no allocation; a channel's buffer is the caller's)
 * and need no destroy beyond not being in use. Waiting blocks the calling
 * kernel thread under `threads` and `spawn` (a task that waits occupies its
 * worker, as with any thread pool: with W workers, W tasks blocked on each
 * other deadlock). Waiters queue first come, first served. A mutex unlock
 * or a semaphore post wakes the longest waiter but lets a running thread
 * take the mutex or unit first (barging, as glibc's do: no lock convoys
 * when threads outnumber CPUs); a waiter that has waited about a
 * millisecond is handed it directly, so a thread that keeps coming back
 * cannot starve one that waits. A send hands its value straight to the
 * longest waiting receiver. */
#ifndef WEFT_SYNC_H
#define WEFT_SYNC_H

#include "export.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @cond WEFT_PRIVATE */
/* The private part every primitive shares: a short internal lock and a
 * FIFO queue of waiters. */
#define WEFT__SYNC_FIELDS                             \
	uint32_t lock_;      /* internal lock word */ \
	uint32_t state_;     /* primitive-specific */ \
	void *head_, *tail_; /* queue of waiters, FIFO */

/** @endcond */

/** A mutex for tasks and threads alike: not recursive, barging with a
 * hand-off to a waiter that waited about 1 ms (weft_mutex_lock). Prepare it
 * with weft_mutex_init; fields private. */
typedef struct weft_mutex {
	/** @cond WEFT_PRIVATE */
	WEFT__SYNC_FIELDS
	void *reserved_[2];
	/** @endcond */
} weft_mutex;

/** A condition variable used with a weft_mutex, as pthread_cond_t with a
 * pthread_mutex_t. Prepare it with weft_cond_init; fields private. */
typedef struct weft_cond {
	/** @cond WEFT_PRIVATE */
	WEFT__SYNC_FIELDS
	void *reserved_[2];
	/** @endcond */
} weft_cond;

/** A counting semaphore. Prepare it with weft_sem_init; fields private. */
typedef struct weft_sem {
	/** @cond WEFT_PRIVATE */
	WEFT__SYNC_FIELDS
	long count_;
	void *reserved_[2];
	/** @endcond */
} weft_sem;

/** A reusable barrier for a fixed number of parties. Prepare it with
 * weft_barrier_init; fields private. */
typedef struct weft_barrier {
	/** @cond WEFT_PRIVATE */
	WEFT__SYNC_FIELDS
	unsigned parties_, arrived_;
	void *reserved_[2];
	/** @endcond */
} weft_barrier;

/** A channel of fixed-size elements, bounded (a ring in a buffer the
 * caller owns) or unbuffered (a send meets a receive), that can be closed.
 * Prepare it with weft_chan_init; fields private. */
typedef struct weft_chan {
	/** @cond WEFT_PRIVATE */
	WEFT__SYNC_FIELDS
	unsigned char *buf_;
	size_t elem_size_, capacity_, count_, head_index_;
	int closed_;
	void *reserved_[2];
	/** @endcond */
} weft_chan;

/** A reader-writer lock: any number of readers or one writer. Writers
 * are preferred over readers that arrive while one waits, and the readers
 * that queued behind a writer all go in when it unlocks, before the next
 * writer (as Go's sync.RWMutex): neither readers nor writers starve.
 * Prepare it with weft_rwlock_init; fields private. */
typedef struct weft_rwlock {
	/** @cond WEFT_PRIVATE */
	WEFT__SYNC_FIELDS
	void *reserved_[2];
	/** @endcond */
} weft_rwlock;

/** A one-time initialisation, as pthread_once_t: weft_once_call runs its
 * function once whoever calls it. Initialise it with WEFT_ONCE_INIT (or
 * zero bytes); fields private. */
typedef struct weft_once {
	/** @cond WEFT_PRIVATE */
	WEFT__SYNC_FIELDS
	void *reserved_[2];
	/** @endcond */
} weft_once;

/** The static initialiser of a weft_once (all zero). */
#define WEFT_ONCE_INIT \
	{              \
		0      \
	}

/** A single-use count-down (C++20's std::latch): weft_latch_wait returns
 * once weft_latch_count_down has brought the count to zero. Prepare it with
 * weft_latch_init; fields private. */
typedef struct weft_latch {
	/** @cond WEFT_PRIVATE */
	WEFT__SYNC_FIELDS
	size_t count_;
	void *reserved_[2];
	/** @endcond */
} weft_latch;

/** weft_mutex_init prepares an unlocked mutex. WEFT_EINVAL for NULL. */
WEFT_EXTERN int weft_mutex_init(weft_mutex *m);
/** weft_mutex_lock takes the mutex. A free mutex is taken at once, even with
 * waiters queued; otherwise the caller spins a few microseconds while
 * nobody is queued or when an unlock woke it (a kernel thread, or a fiber
 * whose runtime has several workers), then a kernel thread sleeps and a
 * fiber parks. An unlock wakes the longest waiter to try again; one that
 * loses after waiting more than about 1 ms is handed the mutex by the next
 * unlock, so no caller waits much longer than that plus two wake-ups per
 * waiter ahead of it. Uncontended, lock and unlock are one atomic operation
 * each on the mutex; nothing is allocated. Not recursive. WEFT_EINVAL for
 * NULL. */
WEFT_EXTERN int weft_mutex_lock(weft_mutex *m);
/** weft_mutex_lock_until is weft_mutex_lock with a deadline (CLOCK_MONOTONIC
 * nanoseconds, as weft_clock_ns() reads it): WEFT_ETIMEDOUT, not holding m
 * and with nothing else changed, when m could not be taken by deadline_ns.
 * A free mutex is taken even with a deadline already past. A fiber parks on
 * its worker's timer; a kernel thread sleeps. */
WEFT_EXTERN int weft_mutex_lock_until(weft_mutex *m, int64_t deadline_ns);
/** weft_mutex_trylock takes the mutex if it is free; WEFT_EBUSY otherwise,
 * also while an unlock is handing it to a waiter that starved. */
WEFT_EXTERN int weft_mutex_trylock(weft_mutex *m);
/** weft_mutex_unlock frees the mutex and wakes the longest waiter if none
 * is awake already, or hands the mutex to that waiter if it has starved.
 * WEFT_EINVAL when the mutex is not locked. */
WEFT_EXTERN int weft_mutex_unlock(weft_mutex *m);

/** weft_cond_init prepares a condition variable with no waiter. WEFT_EINVAL
 * for NULL. */
WEFT_EXTERN int weft_cond_init(weft_cond *c);
/** weft_cond_wait releases m, waits for a signal, and takes m again before
 * returning. As with pthreads, re-check the condition in a loop. Returns 0,
 * or WEFT_EINVAL for NULL or an m that is not locked (then it does not
 * wait). A kernel thread sleeps, a fiber parks. */
WEFT_EXTERN int weft_cond_wait(weft_cond *c, weft_mutex *m);
/** weft_cond_wait_until is weft_cond_wait with a deadline (as in
 * weft_mutex_lock_until): WEFT_ETIMEDOUT when no signal came by deadline_ns
 * (no signal is consumed). Either way m is held again on return, as with
 * pthread_cond_timedwait. */
WEFT_EXTERN int weft_cond_wait_until(weft_cond *c, weft_mutex *m, int64_t deadline_ns);
/** weft_cond_signal wakes the longest waiter, if any. It may be called with
 * or without the mutex held. Returns 0, or WEFT_EINVAL for NULL. */
WEFT_EXTERN int weft_cond_signal(weft_cond *c);
/** weft_cond_broadcast wakes every waiter; each takes the mutex again in
 * turn before its weft_cond_wait returns. Returns 0, or WEFT_EINVAL for
 * NULL. */
WEFT_EXTERN int weft_cond_broadcast(weft_cond *c);

/** weft_sem_init prepares a semaphore holding count units. WEFT_EINVAL for
 * NULL or a negative count. */
WEFT_EXTERN int weft_sem_init(weft_sem *s, long count);
/** weft_sem_wait takes one unit, waiting while the count is zero: a kernel
 * thread spins briefly, then sleeps; a fiber parks. Waiters are served
 * first come, first served, but a unit posted while none of them runs may
 * be taken by a caller that arrives then (barging), except that a waiter
 * that waited about 1 ms is handed the next unit directly. Returns 0, or
 * WEFT_EINVAL for NULL. */
WEFT_EXTERN int weft_sem_wait(weft_sem *s);
/** weft_sem_wait_until is weft_sem_wait with a deadline (as in
 * weft_mutex_lock_until): WEFT_ETIMEDOUT, with the count unchanged, when no
 * unit could be taken by deadline_ns. */
WEFT_EXTERN int weft_sem_wait_until(weft_sem *s, int64_t deadline_ns);
/** weft_sem_trywait takes one unit if the count is above zero, without
 * waiting: 0, WEFT_EAGAIN when the count is zero, WEFT_EINVAL for NULL. */
WEFT_EXTERN int weft_sem_trywait(weft_sem *s);
/** weft_sem_post adds one unit and wakes the longest waiter, if any (or
 * hands the unit to it when it has waited about 1 ms). Never waits;
 * callable from any thread and from tasks. Returns 0, or WEFT_EINVAL for
 * NULL. */
WEFT_EXTERN int weft_sem_post(weft_sem *s);
/** weft_sem_value returns the count at the moment of the call (0 for NULL):
 * a hint for statistics and tests, out of date as soon as another thread
 * posts or waits. */
WEFT_EXTERN long weft_sem_value(const weft_sem *s);

/** weft_barrier_init prepares a barrier for parties callers (at least 1).
 * WEFT_EINVAL for NULL or parties 0. */
WEFT_EXTERN int weft_barrier_init(weft_barrier *b, unsigned parties);
/** What weft_barrier_wait returns to the last party of a round (the others
 * get 0). */
#define WEFT_BARRIER_LAST 1
/** weft_barrier_wait blocks until `parties` callers have arrived, then
 * releases them all; the barrier is then ready for the next round. Returns
 * WEFT_BARRIER_LAST for exactly one caller per round (the last to arrive),
 * 0 for the others, and WEFT_EINVAL for NULL.
 *
 * There is no timed barrier wait: a party that gave up would leave the
 * round one short, and every other party would then wait for ever (POSIX
 * has no pthread_barrier_timedwait for the same reason). Time out on what
 * the parties wait for instead. With W workers under threads or spawn, at
 * most W tasks can wait at a barrier at once. */
WEFT_EXTERN int weft_barrier_wait(weft_barrier *b);

/** weft_chan_init prepares an open, empty channel of elements of elem_size
 * bytes, with room for capacity of them in buf (elem_size * capacity bytes,
 * owned by the caller and in use until the channel is no longer used;
 * capacity 0: no buffer, buf may be NULL, every send meets a receive).
 * WEFT_EINVAL for a NULL ch, elem_size 0, a NULL buf with capacity > 0, or
 * a size that overflows. */
WEFT_EXTERN int weft_chan_init(weft_chan *ch, size_t elem_size, size_t capacity, void *buf);
/** weft_chan_send copies *elem into the channel, waiting while it is full.
 * WEFT_ECLOSED when the channel is (or gets) closed: the element was not
 * sent. */
WEFT_EXTERN int weft_chan_send(weft_chan *ch, const void *elem);
/** weft_chan_recv copies the oldest element into *out, waiting while the
 * channel is empty. WEFT_ECLOSED once the channel is closed and empty. */
WEFT_EXTERN int weft_chan_recv(weft_chan *ch, void *out);
/** weft_chan_send_until is weft_chan_send with a deadline (CLOCK_MONOTONIC
 * nanoseconds, as weft_clock_ns() reads it): WEFT_ETIMEDOUT when it would
 * still have to wait at deadline_ns, with nothing sent; an element that can
 * move at once moves, even with a deadline already past. A fiber parks on
 * its worker's timer. */
WEFT_EXTERN int weft_chan_send_until(weft_chan *ch, const void *elem, int64_t deadline_ns);
/** weft_chan_recv_until is weft_chan_recv with a deadline, as
 * weft_chan_send_until: WEFT_ETIMEDOUT when no element came by
 * deadline_ns, with nothing received (*out unchanged); WEFT_ECLOSED once
 * the channel is closed and empty. */
WEFT_EXTERN int weft_chan_recv_until(weft_chan *ch, void *out, int64_t deadline_ns);
/** weft_chan_close: later sends fail, receivers drain what is buffered, then
 * get WEFT_ECLOSED; every waiter is woken. WEFT_ECLOSED if already closed. */
WEFT_EXTERN int weft_chan_close(weft_chan *ch);

/** weft_rwlock_init prepares an unlocked reader-writer lock. WEFT_EINVAL
 * for NULL. */
WEFT_EXTERN int weft_rwlock_init(weft_rwlock *l);
/** weft_rwlock_rdlock takes l for reading: at once (one atomic operation)
 * while no writer holds or waits for it; else a kernel thread spins
 * briefly then sleeps and a fiber parks until the writers ahead of it are
 * done. Readers queued behind a writer enter together when it unlocks, so
 * a reader waits for at most the writers that were queued when it came
 * (no reader starves). Not recursive: a reader that takes it again while a
 * writer waits deadlocks, as with Go's RWMutex. WEFT_EINVAL for NULL. */
WEFT_EXTERN int weft_rwlock_rdlock(weft_rwlock *l);
/** weft_rwlock_wrlock takes l for writing, alone: at once when it is free;
 * else the caller waits (a kernel thread sleeps, a fiber parks) while
 * readers that hold it finish. Readers that arrive meanwhile wait behind
 * it (no writer starves); writers are served in arrival order, each after
 * the readers queued before it. WEFT_EINVAL for NULL. */
WEFT_EXTERN int weft_rwlock_wrlock(weft_rwlock *l);
/** weft_rwlock_rdlock_until is weft_rwlock_rdlock with a deadline
 * (CLOCK_MONOTONIC nanoseconds, as weft_clock_ns() reads it):
 * WEFT_ETIMEDOUT, not holding l and with nothing else changed, when it
 * could not be taken by deadline_ns. A lock free for readers is taken even
 * with a deadline already past. */
WEFT_EXTERN int weft_rwlock_rdlock_until(weft_rwlock *l, int64_t deadline_ns);
/** weft_rwlock_wrlock_until is weft_rwlock_wrlock with a deadline, as
 * weft_rwlock_rdlock_until. Readers kept out because it waited are let in
 * when it gives up. */
WEFT_EXTERN int weft_rwlock_wrlock_until(weft_rwlock *l, int64_t deadline_ns);
/** weft_rwlock_tryrdlock takes l for reading if that needs no wait:
 * WEFT_EBUSY when a writer holds or waits for it. */
WEFT_EXTERN int weft_rwlock_tryrdlock(weft_rwlock *l);
/** weft_rwlock_trywrlock takes l for writing if it is free: WEFT_EBUSY
 * otherwise. */
WEFT_EXTERN int weft_rwlock_trywrlock(weft_rwlock *l);
/** weft_rwlock_unlock releases l, held for reading or for writing (as
 * pthread_rwlock_unlock). The last reader out hands l to the first
 * queued writer; a writer hands it to every queued reader, or if none, to
 * the next writer. WEFT_EINVAL for NULL or an l nobody holds. */
WEFT_EXTERN int weft_rwlock_unlock(weft_rwlock *l);

/** weft_once_call runs fn(arg) if no call on o has run it yet; callers
 * that come while it runs wait (a kernel thread sleeps, a fiber parks)
 * until it returned; afterwards every call returns at once (one load).
 * Returns 0 once fn has run, whether this call ran it or not; WEFT_EINVAL
 * for a NULL o or fn. fn must not call weft_once_call on the same o
 * (it would wait for itself). */
WEFT_EXTERN int weft_once_call(weft_once *o, void (*fn)(void *), void *arg);
/** weft_once_done tells whether o's function has run (returned). False
 * for NULL. */
WEFT_EXTERN bool weft_once_done(const weft_once *o);

/** weft_latch_init prepares a latch that opens after count count-downs
 * (0: open at once). WEFT_EINVAL for NULL. */
WEFT_EXTERN int weft_latch_init(weft_latch *l, size_t count);
/** weft_latch_count_down lowers the count by n; at zero every waiter is
 * woken and later waits return at once. Never waits. WEFT_EINVAL for NULL
 * or an n larger than the count (nothing changes then). */
WEFT_EXTERN int weft_latch_count_down(weft_latch *l, size_t n);
/** weft_latch_wait waits until the count is zero (a kernel thread sleeps,
 * a fiber parks). 0, or WEFT_EINVAL for NULL. */
WEFT_EXTERN int weft_latch_wait(weft_latch *l);
/** weft_latch_wait_until is weft_latch_wait with a deadline (as in
 * weft_mutex_lock_until): WEFT_ETIMEDOUT when the count is not zero by
 * deadline_ns. */
WEFT_EXTERN int weft_latch_wait_until(weft_latch *l, int64_t deadline_ns);
/** weft_latch_try_wait: 0 when the count is zero, WEFT_EBUSY otherwise;
 * never waits. */
WEFT_EXTERN int weft_latch_try_wait(const weft_latch *l);
/** weft_latch_arrive_and_wait is weft_latch_count_down(l, n) then
 * weft_latch_wait(l). */
WEFT_EXTERN int weft_latch_arrive_and_wait(weft_latch *l, size_t n);

/** What a weft_chan_case does: send *elem, or receive into *elem. */
typedef enum weft_chan_op {
	WEFT_CHAN_SEND = 1, /**< send the element at elem */
	WEFT_CHAN_RECV = 2, /**< receive an element into elem */
} weft_chan_op;

/** One case of weft_chan_select: an operation on a channel. */
typedef struct weft_chan_case {
	weft_chan *ch;   /**< the channel (each at most once per select) */
	weft_chan_op op; /**< WEFT_CHAN_SEND or WEFT_CHAN_RECV */
	void *elem;      /**< the element to send, or where to receive one */
	int result;      /**< out: 0, or WEFT_ECLOSED for the case chosen */
} weft_chan_case;

/** weft_chan_select performs exactly one of the n cases, whichever can go
 * first, as Go's select: it returns the index of the case done, whose
 * result is 0 when an element moved, or WEFT_ECLOSED when its channel is
 * closed (a closed channel is ready: for a receive, once its buffer is
 * empty; for a send, at once, and nothing is sent). When several cases are
 * ready, the one done is chosen at random (the search starts at a random
 * case), so no ready case is starved. When none is ready, the caller waits
 * (a kernel thread sleeps, a fiber parks) until one is, or until
 * deadline_ns (CLOCK_MONOTONIC, as weft_clock_ns() reads it; INT64_MAX
 * waits for ever, 0 or any past time only polls): then WEFT_ETIMEDOUT,
 * with nothing sent or received. WEFT_EINVAL for a NULL cases with n > 0,
 * n 0 with no deadline, n above 64, a case with a NULL channel or element,
 * an unknown op, or a channel named in two cases. */
WEFT_EXTERN int weft_chan_select(weft_chan_case *cases, size_t n, int64_t deadline_ns);

#ifdef __cplusplus
}
#endif

#endif
