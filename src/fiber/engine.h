/* The fiber engine: what every fiber model shares. A fiber model (fibers,
 * mn) owns one or more fiber workers (weft__fworker) and plugs into the
 * engine with a small ops table that says where ready work is kept; the
 * engine does everything else: the fiber record and its state machine,
 * running tasks, parking, waking, yielding, sleeping, waiting for file
 * descriptors, the quantum clock and preemption, virtual time.
 *
 * Tasks run on the worker's current fiber (as marl does): a task that
 * never waits costs no context switch and no stack of its own. Only when a
 * task waits, yields or is preempted does its fiber stay with it, and the
 * worker continues on another fiber (a spare, a new one, or the worker's
 * own thread stack, which never runs tasks and so is always free to go
 * on).
 *
 * Fibers that move. A fiber's home is the worker it runs on or last ran
 * on; a woken or yielded fiber is queued there (the model's queue), and a
 * model may let another worker take it from that queue and resume it
 * (mn does, when the home is busy). What stays with a worker: its timers
 * and poller, so a fiber with a timer or fd interest armed (a sleep, a
 * timed park, an fd wait) is pinned until that wait is over (pinned);
 * its stacks (a moved fiber's stack is counted in the pool of the worker
 * it ends on, stacks_out settles the count). What the engine re-reads
 * after every switch: the current worker (f->home) and weft__tls; it
 * saves and restores errno, the task, the preemption guard and the mutex
 * hold count across it (switch_away).
 *
 * Parking is one atomic step on the fiber's state: RUNNING -> PARKED by
 * CAS (an unpark that came first left WOKEN, and then the fiber does not
 * park). The switch away from a parked or queued fiber may still be under
 * way on its home when a waker queues it and another worker takes it:
 * on_cpu says so (set when a worker enters a fiber, cleared by that
 * worker once the switch away from it has saved it), and a worker
 * resuming a fiber from elsewhere waits for it to clear (a few hundred
 * ns at most; Linux's p->on_cpu). An unpark that finds the fiber queued
 * to run again (yielded or preempted after it queued itself as a waiter)
 * leaves READY_WOKEN, which its next park consumes. */
#ifndef WEFT_SRC_FIBER_ENGINE_H
#define WEFT_SRC_FIBER_ENGINE_H

#include <stdalign.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "core/clock.h"
#include "core/inbox.h"
#include "core/internal.h"
#include "core/progress.h"
#include "fiber/context.h"
#include "fiber/preempt.h"
#include "fiber/stack.h"
#include "io/iowait.h"
#include "io/poller.h"
#include "io/timers.h"

/* The life of a fiber. */
typedef enum weft__fiber_state {
	WEFT__FIBER_RUNNING,     /* on its worker now */
	WEFT__FIBER_READY,       /* queued to run again (yielded, preempted, woken) */
	WEFT__FIBER_READY_WOKEN, /* queued, and woken meanwhile: its next park returns */
	WEFT__FIBER_PARKED,      /* waiting for an unpark */
	WEFT__FIBER_WOKEN,       /* unparked before it could park */
} weft__fiber_state;

/* Why a fiber parks: a join lets the model run what the fiber posted first. */
typedef enum weft__wait_reason {
	WEFT__WAIT_SYNC,     /* a weft/sync.h primitive */
	WEFT__WAIT_JOIN,     /* weft_wait or weft_group_wait */
	WEFT__WAIT_SLEEP,    /* weft_sleep_ns */
	WEFT__WAIT_FD,       /* weft_wait_fd */
	WEFT__WAIT_BLOCKING, /* weft_blocking's helper thread */
} weft__wait_reason;

typedef struct weft__fworker weft__fworker;

typedef struct weft__fiber {
	/* The line the switch reads (sp, flags) */
	weft__context ctx;
	/* One line: what a wake-up and a resume touch besides (the record
	 * and the switch's line): a fiber parked among thousands is a few
	 * cold lines, not a dozen (io/iowait.h). */
	/* The worker it runs on or last ran on: written by the worker that
	 * enters it, read by wakers once it parked. */
	alignas(64) _Atomic(weft__fworker *) home;
	weft_task *task; /* the task on it, NULL while it runs the worker loop */
	/* The running task's thread state across a switch (switch_away):
	 * kept here, not in registers the fiber's stack would hold. */
	weft_task *saved_task;
	struct weft__locals *saved_locals;
	_Atomic int state;
	_Atomic int on_cpu; /* entered, and the switch away from it not done */
	weft__stack *stack; /* NULL for the worker's own thread stack */
	int saved_nopreempt, saved_mutexes_held, saved_errno;
	/* Written by the thread running the fiber or its worker, read by
	 * thieves (weft__fiber_movable): relaxed atomics, a stale read only
	 * delays a move. */
	_Atomic bool pinned; /* a timer or fd interest at home: may not move */
	/* Queued while a second wake-up may still come (a tick queued it, or a
	 * timed park whose timer and waker both fire): it may be READY_WOKEN. */
	bool rewakable;
	bool joining; /* parked in a join: resumed before new work */
	bool traced;  /* its task's first run segment is in the trace */
	/* Its fd waits' group and one-fd record (io/iowait.h), a line. */
	alignas(64) weft__fiber_io io;
	weft_task *first; /* a new loop fiber: the task to start first, or NULL */
	/* Waits that must end on the thread they began on hold a pin for
	 * their length: an I/O wait with a deadline (its timer is the
	 * worker's), a file call on the worker's io_uring. */
	_Atomic int pins;
	/* Its timer, and the deadline of the timed wait in progress
	 * (INT64_MAX between timed waits): the timer may outlive its wait and
	 * fire early (engine.h: weft__fiber_timer_arm). */
	weft__timer timer;
	int64_t due;
	int wait_fd;             /* fd of a wait_fd in progress, or -1 */
	_Atomic int wait_result; /* written by the waker or the timer side, read by the fiber */
	struct weft__fiber *next_spare;
} weft__fiber;

/* How a task became ready, for the model's ready op. */
typedef enum weft__ready_how {
	WEFT__READY_POSTED,  /* posted by a task running on this worker */
	WEFT__READY_ARRIVED, /* from the inbox: an outside post or a wake-up from another thread */
	WEFT__READY_WOKEN,   /* its fiber was unparked on this worker */
	WEFT__READY_YIELDED, /* its fiber yielded or was preempted */
} weft__ready_how;

/* What a fiber model supplies. Every op runs on the worker's own thread. */
typedef struct weft__fiber_ops {
	/* t is ready to start (t->fiber_ == NULL) or to resume: keep it. */
	void (*ready)(weft__fworker *w, weft_task *t, weft__ready_how how);
	/* The next task to start or resume, or NULL when w has nothing. */
	weft_task *(*next)(weft__fworker *w);
	/* Nothing to run: wait for work (weft__fworker_sleep does the sleeping).
	 * Returns false when the worker is to stop. */
	bool (*idle)(weft__fworker *w);
	/* Optional: the running fiber is about to park in a join (weft_wait,
	 * weft_group_wait) for tasks it may have posted. */
	void (*join)(weft__fworker *w);
	/* Optional: removes and returns a task the running task waits for (t,
	 * or any task of group g) if it is among this worker's newest own
	 * posts and not started; else NULL. */
	weft_task *(*take_awaited)(weft__fworker *w, const weft_task *t, const weft_group *g);
	/* Optional: the quantum clock charged t a quantum (psjf, mlfq). */
	void (*charge)(weft__fworker *w, weft_task *t);
	/* Optional: mlfq's periodic boost. */
	void (*boost)(weft__fworker *w);
	/* Optional, any thread but w's: t's fiber, last on w, was woken; queue
	 * it (where other workers may take it) and wake whom it takes. Without
	 * it: w's inbox, waking w if it sleeps. */
	void (*wake)(weft__fworker *w, weft_task *t);
	/* Optional, on w: a look at w's poller handled two or more reports
	 * (fds, timers of one-shot arms), whose fibers are queued on w now.
	 * Events from outside, not a waker that parks next: a model with
	 * other workers may wake one for the surplus. */
	void (*reported)(weft__fworker *w);
} weft__fiber_ops;

struct weft__fworker {
	weft_rt *rt;
	const weft__fiber_ops *ops;
	void *model; /* the model's state */
	int index;
	pthread_t thread;

	/* Worker only. */
	weft__fiber main;     /* the thread's own stack: runs the loop, never a task */
	weft__fiber *current; /* the fiber running now */
	weft__fiber *spares;  /* loop fibers with nothing on them, to reuse */
	int nspares;
	bool stack_refused;  /* the last stack asked for was refused (see can_start) */
	weft__fiber *zombie; /* ended; freed by whoever runs next */
	weft__fiber *prev;   /* switched away from: its on_cpu is cleared after */
	weft__stack_pool stacks;
	weft__timers timers;
	weft__poller poller;
	bool poller_ok;
	/* Waits for reports of this worker's poller in progress (real events
	 * may still come): added to by its own fibers, dropped by a fiber
	 * that ended its wait where it resumed, which may be another worker
	 * (an fd wait without a deadline lets the fiber move). */
	_Atomic int fd_waits;
	/* Picks since the last look at the poller while busy, and when that
	 * look was (weft__fworker_poll_busy). */
	unsigned picks_since_poll;
	unsigned poll_every; /* picks between busy looks (engine_sleep.c: polled) */
	int64_t busy_polled_ns;
	/* The worker's io_uring for file calls (io/uring.h), made on first
	 * use; reaped between tasks and when its eventfd fires. */
	struct weft__ring *ring;
	bool virtual_time;
	bool tracing; /* rt->trace != NULL */
	int64_t vnow;

	/* The quantum clock (worker only; the tick handler runs on it too). */
	weft__ticker ticker;
	bool preempt;
	_Atomic uint64_t ticks;
	uint64_t tick_switches;
	int held_ticks;
	unsigned held_lock_id;
	uint64_t boost_every, next_boost;
	bool charges, boosts; /* set by the model before start: the policy's quanta */

	/* Tasks and wake-ups from other threads; sleeping says how the worker
	 * sleeps (or is about to: no, in the poller, on kicked), so a push
	 * must wake it that way; kicked: a wake-up not yet seen (any thread
	 * sets it, the worker clears it when it wakes). */
	WEFT__ALIGNED weft__inbox inbox;
	_Atomic int sleeping;
	_Atomic uint32_t kicked;

	/* Written by the worker only (read by sums and stats). */
	WEFT__ALIGNED _Atomic uint64_t finished, posted, cancelled, switches, sleeps;
	_Atomic uint64_t preemptions, deferred, parks, steals;
	/* The model's search for work: looks at other workers' queues, idle
	 * looks before sleeping, wake-ups this worker sent and received. */
	_Atomic uint64_t steal_attempts, spins, wakes_sent, wakes_received;
	WEFT__ALIGNED _Atomic uint64_t unparks; /* any thread: an atomic add */
	/* Its fibers parked until a thread outside the workers (the blocking
	 * pool) finishes their job: added by the fiber, maybe dropped on
	 * another worker after it moved (weft__fiber_handoff_begin). */
	_Atomic int handoffs;
	/* Stacks of fibers that moved to other workers (they add them to
	 * their own count): the owner subtracts them from stacks.live. */
	_Atomic size_t stacks_out;
	_Atomic uint64_t moved_in; /* fibers taken from other workers (worker only) */

	/* The progress duty (core/progress.h), worker only: the spin, the
	 * longest the next sleep may last (negative: no limit), and unparks
	 * before the poll (a change means a progress function woke a fiber
	 * of this worker). */
	weft__progress_state progress;
	int64_t progress_sleep_ns;
	uint64_t progress_unparks;
};

/* Sets up w (stacks, timers, poller); 0 or a WEFT_E* code, everything
 * released on failure. */
WEFT__WARN_UNUSED int weft__fworker_init(weft__fworker *w, weft_rt *rt, const weft__fiber_ops *ops,
                                         void *model, int index);
/* Starts the worker thread. */
WEFT__WARN_UNUSED int weft__fworker_start(weft__fworker *w);
/* Joins the worker thread (after the model's idle op returned false). */
void weft__fworker_join(weft__fworker *w);
/* Frees what init acquired; the thread has ended (or never started). */
void weft__fworker_release(weft__fworker *w);

/* A post from a task running on w (the caller is on w). */
void weft__fworker_post_local(weft__fworker *w, weft_task *t);
/* From any thread: queue t on w through its inbox, waking w if it sleeps. */
void weft__fworker_push_remote(weft__fworker *w, weft_task *t);
/* The worker whose fiber is calling, if it belongs to rt; else NULL. */
weft__fworker *weft__fworker_self(weft_rt *rt);

/* For the model's idle op: sleeps in the poller until the next timer, an fd
 * event, an inbox push or weft__fworker_wake. The caller has announced
 * itself idle and re-checked its own queues after that. */
void weft__fworker_sleep(weft__fworker *w);
/* Before going idle with fibers parked on the blocking pool: yields the
 * CPU for up to 20 us while they stay there; true when a wake-up came. */
bool weft__fworker_await_handoff(weft__fworker *w);
/* The same, for at most max_ns (a watch); true when something else than
 * the end of max_ns ended it (a wake-up, an fd, a timer, an inbox push). */
bool weft__fworker_sleep_for(weft__fworker *w, int64_t max_ns);
/* Makes w's current or next sleep return (any thread). */
void weft__fworker_wake(weft__fworker *w);
/* Whether w can start a new task now (owner only): true while no stack was
 * refused it (one load: it is asked between any two tasks); after a
 * refusal, when it is on a loop fiber with nothing on it (the task runs
 * right there), has a spare fiber, or can map a stack for one again (kept
 * as a spare; that ends the refusal). False when the system refuses
 * stacks and every stack w has is held by a started task: a model must
 * then not take work from elsewhere (steal, its shared queue), which w
 * could only set aside while other workers could have started it. */
bool weft__fworker_can_start(weft__fworker *w);
/* w's clock: the real one, or its virtual time (worker only). */
static inline int64_t weft__fworker_now(const weft__fworker *w)
{
	return w->virtual_time ? w->vnow : weft__now_ns();
}
/* Wakes the fibers whose timers expired (worker only; engine_sleep.c). */
void weft__fworker_expire_timers(weft__fworker *w);
/* Whether work came for w since its progress duty began (progress.h). */
bool weft__fworker_progress_came(void *ctx);
/* A hand-off: the calling fiber is about to park until a thread outside
 * the workers (the blocking pool) has run its job; weft__fiber_handoff_end
 * after the park, with what begin returned (NULL off a fiber: nothing to
 * end). While a worker has hand-offs in flight a model does not spin
 * looking for work before it sleeps: on a machine short of CPUs the spin
 * takes the CPU that thread needs to finish the job. */
weft__fworker *weft__fiber_handoff_begin(void);
void weft__fiber_handoff_end(weft__fworker *w);
static inline void weft__fworker_fd_waits_add(weft__fworker *w, int d)
{
	atomic_fetch_add_explicit(&w->fd_waits, d, memory_order_relaxed);
}

static inline bool weft__fworker_fd_waiting(weft__fworker *w)
{
	return atomic_load_explicit(&w->fd_waits, memory_order_relaxed) > 0;
}

/* A worker that never runs out of work never sleeps in its poller: every
 * POLL_EVERY_PICKS picks between tasks, and at most every BUSY_POLL_NS,
 * it takes its fds' reports without waiting (Tokio's driver is polled
 * every 61 ticks alike), so an I/O fiber on a busy worker is woken within
 * about that, not when the worker next runs dry. After a look that woke
 * more fibers than that, the next waits until as many picks have gone by
 * (poll_every): the batch runs first, while what the wake-ups touched is
 * still in the cache, and the reports that came meanwhile wait in the
 * kernel, not as woken fibers at the back of a long queue (1,000 echo
 * connections on one fiber worker: 0.947x Tokio's requests per second
 * with a look every 61 picks, 0.975x so). */
#define POLL_EVERY_PICKS 61
#define BUSY_POLL_NS     50000
void weft__fworker_poll_busy(weft__fworker *w);

static inline void weft__fworker_poll_if_due(weft__fworker *w)
{
	if (__builtin_expect(++w->picks_since_poll >= w->poll_every, 0))
		weft__fworker_poll_busy(w);
}

static inline void weft__fiber_pin_set(weft__fiber *f, bool on)
{
	atomic_store_explicit(&f->pinned, on, memory_order_relaxed);
}

/* Only the fiber itself adds or drops a pin: no locked instruction. */
static inline void weft__fiber_pins_add(weft__fiber *f, int d)
{
	int n = atomic_load_explicit(&f->pins, memory_order_relaxed);
	atomic_store_explicit(&f->pins, n + d, memory_order_relaxed);
}

/* A timer outlives the timed wait it was armed for: a wait that ends
 * before its deadline leaves it in the heap (due INT64_MAX), and the
 * fiber's next timed wait keeps it when its deadline is no earlier, so
 * that a server giving every read a deadline seconds ahead pays no heap
 * operation per read. (Removing the timer of each read that came in time
 * cost a heap repair over other fibers' cold records: 0.6 µs of about
 * 15 an echo at 1,000 connections, perf, 2026-11-29.) Such a timer fires early
 * and goes back in at the wait's deadline (weft__fworker_expire_timers);
 * any other park, a yield or the end of the task drops it, so that a
 * kept timer never holds a queued fiber to its worker: between waits it
 * is the worker's only while the fiber runs. Under a virtual clock an
 * early timer would move the clock: there it goes at once. */
static inline void weft__fiber_timer_arm(weft__fworker *w, weft__fiber *f, int64_t due)
{
	f->due = due;
	if (f->timer.armed) {
		if (f->timer.deadline <= due && !w->virtual_time)
			return;
		weft__timers_remove(&w->timers, &f->timer);
	}
	weft__timers_add(&w->timers, &f->timer, due);
}

/* The timed wait is over (woken, or its timer fired). */
static inline void weft__fiber_timer_done(weft__fworker *w, weft__fiber *f)
{
	f->due = INT64_MAX;
	if (w->virtual_time)
		weft__timers_remove(&w->timers, &f->timer);
}

/* Before a park without a deadline, a yield, or when the task ends. The
 * heap is the worker's: no preemption while it is changed. */
static inline void weft__fiber_timer_drop(weft__fworker *w, weft__fiber *f)
{
	if (__builtin_expect(f->timer.armed, 0)) {
		weft__tls.nopreempt++;
		weft__timers_remove(&w->timers, &f->timer);
		weft__tls.nopreempt--;
	}
	f->due = INT64_MAX;
}

/* Whether t's fiber, queued to resume on another worker, may move to the
 * caller's (no timer or fd interest armed). Under the queue's lock. */
static inline bool weft__fiber_movable(const weft_task *t)
{
	weft__fiber *f = t->fiber_;
	return f && !atomic_load_explicit(&f->pinned, memory_order_relaxed) &&
	       atomic_load_explicit(&f->pins, memory_order_relaxed) == 0;
}

/* Adds w's counters into *s (the model's stats op). */
void weft__fworker_stats(weft__fworker *w, weft_stats *s);
/* The fiber models' own statistics lines (the model's print_stats op). */
void weft__fworker_print_stats(const weft_stats *s, FILE *out);
/* One line of w's own counters (for the model's print_workers op). */
void weft__fworker_print_worker(weft__fworker *w, FILE *out);

/* ---------------------------------------------- the blocking calls (fiber side) */

/* The running fiber, or NULL on a thread that is not running a fiber. */
static inline weft__fiber *weft__fiber_current(void)
{
	return (weft__fiber *)weft__tls.fiber;
}

/* A task waiting for t (or for group g) on a fiber runs it right here, on
 * its own stack, when it is one of its worker's newest posts and not
 * started: no park, no switch (oneTBB does the same). Only what the caller
 * waits for, so nothing runs on top of it that could wait for the caller;
 * not while the caller holds a weft_mutex, and only with room left on the
 * stack. True when it ran one. */
bool weft__fiber_run_awaited(const weft_task *t, const weft_group *g);

/* The model op take_back of the fiber models: t, just posted by the
 * running task, if it is still among its worker's newest posts. */
bool weft__fiber_take_back(weft_rt *rt, weft_task *t);

/* Parks the running fiber until weft__fiber_unpark; the caller has queued
 * it as a waiter somewhere first. May return spuriously only if the
 * caller's waker unparked it (callers re-check their condition). */
void weft__fiber_park(weft__fiber *f, weft__wait_reason why);
/* weft__fiber_park until CLOCK_MONOTONIC reaches deadline_ns: true when
 * unparked, false when the deadline came first. After false the caller's
 * waker may still take the waiter and unpark it: the caller looks for its
 * record under its lock, removes it if it is there, and otherwise parks
 * again (untimed) to receive that wake-up, which then comes soon. */
bool weft__fiber_park_until(weft__fiber *f, weft__wait_reason why, int64_t deadline_ns);
/* Any thread: makes a parked (or parking) fiber runnable again. */
void weft__fiber_unpark(weft__fiber *f);
void weft__fiber_yield(void);
void weft__fiber_sleep(int64_t ns);
/* Ready events, WEFT_ETIMEDOUT, or WEFT_EINVAL when the poller refuses the
 * fd (a regular file): the caller then polls. */
int weft__fiber_wait_fd(int fd, short events, int64_t timeout_ns);

#endif
