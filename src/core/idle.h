/* Idle workers: the search, lazy-steal and watch rules that the models with
 * several workers share (threads, mn), after Go's scheduler. Each model
 * keeps its own queues and its own way to sleep (a futex, a poller); this
 * is the protocol they follow around them, written once. A model gives
 * two callbacks (weft__idle_ops): each worker's deque of own posts, and
 * the count of own posts so far.
 *
 * Sleeping and waking. A worker that finds no work joins the idle list,
 * then re-checks every place work can appear, then sleeps. A poster makes
 * its work visible first and then asks weft__idle_wanted; both sides use
 * sequentially consistent operations with nothing weaker in between, so
 * either the poster sees the idle worker or the worker sees the work.
 * Wake-ups are throttled: a post wakes a sleeper only when no worker is
 * searching (nspinning == 0; a claimed worker counts there until it finds
 * work or gives up), and a searcher that finds work wakes the next one if
 * work remains, so parallelism ramps up one worker at a time. A searcher
 * stops counting itself before its last look, and one that finds work
 * there counts itself again (weft__idle_resume_search): posts made while
 * it searched woke nobody, and the work they left would otherwise wait
 * beside sleeping workers once it took the first task.
 *
 * Searching. Up to a model's limit of idle workers search (spin) before
 * they sleep (weft__idle_start_search); a post wakes nobody while one
 * does.
 *
 * Lazy steal (weft__idle_find_sitting). A thief takes from a deque a
 * surplus (two or more queued) at once, the oldest first, but a lone task
 * only once it has seen that very task sit at the same place for SIT_NS
 * (1 us, by the clock): a lone task is most likely the child its poster is
 * about to wait for, and taking it turns a push and a pop on one core into
 * a hand-off between two, a park and a wake-up (Cilk's work-first rule,
 * kept from the thief's side). A task its poster does not come back to is
 * still taken, a look later.
 *
 * The watch. A post of one task onto an empty deque (a lone post) wakes
 * nobody while the watch is on duty: while any worker is awake (not asleep
 * for want of work), one idle worker sleeps with a timeout (50 us,
 * doubling up to 1 ms while it finds nothing, back to 50 us when it finds
 * a task sitting) and after each sleep looks at every deque for a task
 * that sits there; so a lone child that its poster does not join soon
 * still runs elsewhere, at most a watch period later: its parallelism is
 * deferred, never lost. The watch goes off duty after WATCH_QUIET looks
 * (~12 ms) during which no worker made an own post at all, and back on
 * duty with the next lone post, which finds nobody on duty and so wakes a
 * sleeper as a post to a queue does. A watcher that finds work leaves the
 * watch (weft__watch_leave): nobody holds it until a lone post finds it
 * vacant and wakes a sleeper, who takes it as it goes back to sleep. (A
 * watcher that handed the watch on with a wake-up at once made every
 * outside post to an idle runtime wake two workers, the second on the
 * CPU of the first, which could then wait behind it and its poster.)
 *
 * No lost wake-up for lone posts (publish, then check, on both sides):
 *   poster: push (then a fence); read watch (clearing watch_off),
 *           nspinning, nidle -> maybe wake.
 *   worker: nspinning--, or join the idle list; fence; re-check.
 * A lone post that wakes nobody saw a watcher, or a searcher, or nobody
 * asleep; each of them stops looking only after a step that re-checks:
 *   - the watcher gives up the watch (store 0) to sleep without a timeout,
 *     then reads awake: a poster is awake, so either it read the watcher's
 *     mark before that store, and the watcher sees awake > 0 and takes the
 *     watch back, or it read 0 and went on as a post to a queue does. Off
 *     duty, it stores watch_off, then 0 in watch, then looks at every
 *     deque: a poster that read its mark has its task seen (the watch goes
 *     back on duty), one that read 0 reads watch_off after, so it clears
 *     it before it reads nspinning and nidle;
 *   - a searcher or the watcher that finds work leaves nspinning or the
 *     watch (seq_cst), then looks at every deque and wakes a sleeper if one
 *     holds a task (the model's, with weft__idle_posts_waiting);
 *   - a worker going to sleep goes through the watch decision
 *     (weft__watch_keep), which keeps the watch while anyone is awake.
 * A worker with tasks on its own deque is awake (it is inside a task, or
 * about to pick), so "someone is awake" covers every deque that can hold
 * a task. */
#ifndef WEFT_SRC_CORE_IDLE_H
#define WEFT_SRC_CORE_IDLE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/deque.h"
#include "core/internal.h"
#include "core/lock.h"

/* What a model tells the protocol about its queues. */
typedef struct weft__idle_ops {
	/* Worker i's own posts: the deque thieves take from (any thread). */
	weft__deque *(*deque)(void *model, int i);
	/* Own posts made so far, all workers (only grows): the watch's sign
	 * of use. */
	uint64_t (*posts)(void *model);
	/* Optional: a barrier with every running poster (membarrier.h), for
	 * a model whose lone posts leave out their fence. */
	void (*barrier)(void *model);
} weft__idle_ops;

/* One worker's part. */
typedef struct weft__idler {
	struct weft__idler *next; /* under weft__idle.lock */
	/* 1 once a waker claimed this worker (it is then off the list and
	 * counted spinning); reset under the lock when it joins. A futex
	 * word for models that sleep on it. */
	_Atomic uint32_t claimed;
	/* Owner only. */
	int index;
	int seen_victim;     /* the lone task looked at: its worker or -1, */
	int64_t seen_top;    /* its index on that worker's deque, */
	int64_t seen_ns;     /* and when it was first seen there */
	uint64_t posts_seen; /* as the watcher: ops->posts at its last change, */
	int quiet;           /* and looks since */
} weft__idler;

typedef struct weft__idle {
	WEFT__ALIGNED _Atomic int nspinning;
	_Atomic int nidle;
	weft__lock lock;
	weft__idler *list;
	_Atomic uint64_t wakeups;
	/* 0, or 1 + the index of the watcher. Read by every lone post, so on
	 * a line of its own (with watch_off) that changes only when the watch
	 * does. */
	WEFT__ALIGNED _Atomic int watch;
	_Atomic int watch_off; /* 1: off duty (no own post for a while) */
	/* Workers not asleep for want of work: each model changes it around
	 * its sleeps (weft__idle_awake). */
	WEFT__ALIGNED _Atomic int awake;
	_Atomic int64_t watch_ns; /* the watcher's period; the watcher writes it */
	/* Set at init. */
	const weft__idle_ops *ops;
	void *model;
	int nworkers;
} weft__idle;

/* Sets up d for nworkers workers (all awake), and each idler. */
void weft__idle_init(weft__idle *d, const weft__idle_ops *ops, void *model, int nworkers);
void weft__idler_init(weft__idler *i, int index);

/* Whether a poster that just made work visible should wake a sleeper. */
static inline bool weft__idle_wanted(weft__idle *d)
{
	return atomic_load(&d->nspinning) == 0 && atomic_load(&d->nidle) > 0;
}

/* A worker falls asleep (-1) or wakes up (+1). */
static inline void weft__idle_awake(weft__idle *d, int delta)
{
	atomic_fetch_add(&d->awake, delta);
}

/* Claims one idle worker, counted spinning from now on; NULL when there is
 * none or a woken one is still looking. The caller then wakes it. */
weft__idler *weft__idle_claim(weft__idle *d);

/* Claims one idle worker whether or not another is searching (it is then
 * counted spinning); NULL when none is idle. The caller wakes it. */
weft__idler *weft__idle_claim_any(weft__idle *d);

/* Joins the idle list. Then the caller re-checks for work and either
 * sleeps until claimed or leaves. */
void weft__idle_join(weft__idle *d, weft__idler *me);

/* Leaves the idle list; true when a waker had claimed the caller first
 * (it is then counted spinning). */
bool weft__idle_leave(weft__idle *d, weft__idler *me);

/* Claims every idle worker, calling kick on each (destroy). */
void weft__idle_claim_all(weft__idle *d, void (*kick)(weft__idler *i, void *ctx), void *ctx);

/* Counts the caller as searching if fewer than max do; true when it is. */
bool weft__idle_start_search(weft__idle *d, int max);
/* Counts the caller as searching again, whatever the limit: a searcher
 * that stopped, then found work in its last look before sleeping. Posts
 * made while it searched woke nobody, so when it takes the work it must
 * be the searcher that wakes the next one for what is left (Go's
 * findrunnable: becomeSpinning after the last check). */
static inline void weft__idle_resume_search(weft__idle *d)
{
	atomic_fetch_add(&d->nspinning, 1);
}

/* Stops counting a searcher; true when it was the last one. */
static inline bool weft__idle_stop_search(weft__idle *d)
{
	return atomic_fetch_sub(&d->nspinning, 1) == 1;
}

/* The lazy-steal rule: looks at count deques of the others, from the
 * start-th after me's own on, for a task to take: the oldest of a surplus,
 * or a lone task me first saw at the same place at least SIT_NS ago.
 * Returns the victim's index (the task's place in me->seen_top), or -1;
 * then me->seen_victim >= 0 names a lone task to look at again. settle:
 * rather than return -1 for a lone task not yet sitting long enough, wait
 * (2 us at most) until it has or is gone. */
int weft__idle_find_sitting(weft__idle *d, weft__idler *me, int start, int count, bool settle);
/* Takes the task weft__idle_find_sitting chose on victim v's deque, or
 * NULL when its owner or another thief took it first. */
weft_task *weft__idle_take_sitting(weft__idle *d, weft__idler *me, int v);
/* Whether any worker's deque holds a task. */
bool weft__idle_posts_waiting(weft__idle *d);

/* Whether me, about to sleep (on the idle list, not counted awake), must
 * hold the watch: yes while any worker is awake, the watch is on duty and
 * no other idle worker holds it. */
bool weft__watch_keep(weft__idle *d, weft__idler *me);
/* The watcher's period now. */
static inline int64_t weft__watch_period(weft__idle *d)
{
	return atomic_load_explicit(&d->watch_ns, memory_order_relaxed);
}
/* The watcher found a task sitting: the period goes back to its shortest. */
void weft__watch_found(weft__idle *d);
/* The watcher looked after a sleep of period and found nothing: the period
 * doubles, and after WATCH_QUIET such looks with no own post made the
 * watch goes off duty. */
void weft__watch_found_nothing(weft__idle *d, weft__idler *me, int64_t period);
/* me found work: it gives the watch up if it held it; true then (the
 * caller re-checks the deques, see the top). */
bool weft__watch_leave(weft__idle *d, weft__idler *me);
/* Sleeps until claimed, or until sleep (the model's: at most ns, or
 * without a limit when ns < 0) returns true for a wake-up of another kind;
 * while me holds the watch, in watch periods, looking at every deque after
 * each for a task that sits there. me is on the idle list. Returns true
 * when claimed (counted spinning), false when it left the list itself: a
 * task sits (me->seen_victim names it) or sleep said so. */
bool weft__idle_doze(weft__idle *d, weft__idler *me,
                     bool (*sleep)(weft__idler *me, int64_t ns, void *ctx), void *ctx);
/* A lone post, after the push and a fence: true when nobody is on duty
 * (the watch is put back on duty, and the poster wakes a sleeper as a
 * post to a queue does). */
static inline bool weft__watch_vacant(weft__idle *d)
{
	if (atomic_load(&d->watch) != 0)
		return false;
	if (atomic_load(&d->watch_off))
		atomic_store(&d->watch_off, 0);
	return true;
}

#endif
