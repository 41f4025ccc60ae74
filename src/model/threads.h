/* Model threads' state, shared by threads.c (the workers, own posts,
 * idling and the model ops) and threads_queue.c (the shared queue: the
 * inbox, the policy's ready queue, the batches, and waking a worker for
 * them). threads.c's essay says how they fit together. */
#ifndef WEFT_SRC_MODEL_THREADS_H
#define WEFT_SRC_MODEL_THREADS_H

#include "core/deque.h"
#include "core/idle.h"
#include "core/inbox.h"
#include "core/internal.h"
#include "core/lock.h"
#include "model/batch.h"

#define SPIN_ROUNDS       32
#define SPIN_PAUSES       16 /* between polls of an idle worker, ~0.4 us */
#define BATCH_WAIT_PAUSES 40 /* ~1 us: see next_task */

typedef struct worker {
	/* Written only by the worker itself, read by quiescence checks,
	 * statistics and the watcher. */
	WEFT__ALIGNED _Atomic uint64_t finished; /* run or cancelled */
	_Atomic uint64_t posted;                 /* tasks this worker's tasks posted */
	_Atomic uint64_t cancelled;
	_Atomic uint64_t sleeps;
	_Atomic uint64_t steals;     /* batches or own posts taken from another worker */
	_Atomic uint64_t attempts;   /* searches of other workers' own posts, and steals */
	_Atomic uint64_t spins;      /* polls of an idle worker before it sleeps */
	_Atomic uint64_t woken;      /* times a post's wake-up claimed it */
	_Atomic uint64_t own_pushed; /* pushes onto own; the watcher reads the sum */

	/* Owner only (the worker, or its stand-in while the worker waits for
	 * it: one at a time). */
	uint64_t shared_posts;   /* own posts sent to the shared queue */
	uint64_t shared_at_take; /* shared_posts when the batch was taken */
	int last_batch;          /* size of the last batch taken */
	uint64_t own_taken;      /* own posts taken back by this worker */
	uint64_t help_pops;      /* pops of own in threads_help, found or not */
	uint64_t stolen_at_lone; /* own_pushed - own_taken at the last lone push */
	uint64_t helped_at_lone; /* help_pops at the last lone push */

	/* The batch: tasks taken from the queue and not yet started, which
	 * the owner takes from the front and other workers steal from the
	 * back (model/batch.h), so no task hides in a busy worker's batch. */
	weft__batch batch;

	/* What this worker's tasks posted: the owner pushes and pops, other
	 * workers take the oldest (see the top). */
	weft__deque own;

	weft__idler idler; /* claimed is the futex word it sleeps on */

	struct threads *m;
	int index;
	pthread_t thread;
} worker;

typedef struct threads {
	weft_rt *rt;
	int nworkers;
	int awake_cap; /* the workers, or the CPUs when there are more CPUs */
	bool ordered;  /* the policy's order must hold across batches */
	/* The policy's more_urgent, when ordered: a task's post more urgent
	 * than the task goes to the shared queue (see threads_submit). */
	bool (*more_urgent)(const weft__readyq *q, const weft_task *a, const weft_task *b);

	/* Written by posters and emptied by workers. */
	WEFT__ALIGNED weft__inbox inbox;

	/* The ready queue, under lock. ready_len mirrors ready.len for lock-free
	 * "is there work?" checks. */
	WEFT__ALIGNED weft__lock lock;
	weft__readyq ready;
	_Atomic size_t ready_len;
	/* Takers moving tasks out of the inbox (drain_begin): while they do,
	 * the tasks are in neither the inbox nor ready_len nor a batch, and a
	 * worker that looked then would sleep beside them. */
	_Atomic int draining;

	weft__idle idle; /* idle, spinning and awake workers, the watch (core/idle.h) */
	_Atomic int stopping;

	worker workers[];
} threads;

/* Moves the inbox into the ready queue (under m->lock, between
 * drain_begin and drain_end). */
void weft__threads_drain_inbox(threads *m);
/* w's next task from its batch or the shared queue, or NULL. */
weft_task *weft__threads_next_task(threads *m, worker *w);
/* Wakes one idle worker, unless one is already spinning. */
void weft__threads_wake_one(threads *m);

/* In this order, against drain_begin's: the inbox, a move under way, the
 * queue (a look that finds the inbox taken sees the move, and one that
 * finds the move over sees where it put the tasks). seq_cst loads: plain
 * ones on x86-64, ordered among themselves on aarch64. */
static inline bool weft__threads_has_work(threads *m)
{
	return atomic_load(&m->inbox.head) != NULL || atomic_load(&m->draining) != 0 ||
	       atomic_load(&m->ready_len) != 0;
}

/* Releases m->lock after a change of the ready queue, publishing its
 * length first: every change goes through here, so that ready_len, which
 * every lock-free look for work reads, never says less than the queue
 * holds (a take that handed its batch's rest back and then stole left it
 * short, and the rest sat unseen beside sleeping workers). */
static inline void weft__threads_unlock(threads *m)
{
	atomic_store_explicit(&m->ready_len, m->ready.len, memory_order_seq_cst);
	weft__lock_release(&m->lock);
}

/* Around a take that may empty the inbox: the move is visible before the
 * inbox is taken (the fence orders the two stores on aarch64 too), and
 * ends once ready_len and the taker's batch say where the tasks went. */
static inline void weft__threads_drain_begin(threads *m)
{
	atomic_fetch_add(&m->draining, 1);
	atomic_thread_fence(memory_order_seq_cst);
}

static inline void weft__threads_drain_end(threads *m)
{
	atomic_fetch_sub(&m->draining, 1);
}

static inline bool weft__threads_stealable(threads *m)
{
	for (int i = 0; i < m->nworkers; i++) {
		if (weft__batch_holds(&m->workers[i].batch))
			return true;
	}
	return false;
}

/* Callers have made their work visible with a seq_cst operation (the
 * inbox CAS, the batch's publication, a fence after an own push), which
 * orders it before these seq_cst loads; a worker going idle does the
 * mirror image (see sleep_idle). */
static inline void weft__threads_wake_if_needed(threads *m)
{
	if (weft__idle_wanted(&m->idle))
		weft__threads_wake_one(m);
}

/* Whether a task's post may wake one more worker: an outside thread
 * running a loop of rt's keeps a CPU busy, so with as many workers as CPUs
 * the last sleeper is left asleep rather than woken to time-share the CPUs
 * with it (as mn does). Never binds without outside helpers. */
static inline bool weft__threads_room_for_one_more(threads *m)
{
	return weft__room_beside_helpers(
	        m->rt, atomic_load_explicit(&m->idle.awake, memory_order_relaxed) + 1,
	        m->awake_cap);
}

#endif
