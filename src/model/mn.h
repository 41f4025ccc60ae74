/* Model mn's state and queues, shared by mn.c (picking, idling, the model
 * ops) and mn_queues.c (the injection queue, the resume queues and
 * stealing). mn.c's essay says how they fit together. */
#ifndef WEFT_SRC_MODEL_MN_H
#define WEFT_SRC_MODEL_MN_H

#include "core/deque.h"
#include "core/idle.h"
#include "core/inbox.h"
#include "core/internal.h"
#include "core/lock.h"
#include "core/task_list.h"
#include "fiber/engine.h"

#define INJECTED_EVERY   61 /* picks between looks at the injection queue first */
/* An idle worker searches (spins) this long before it sleeps, one look
 * every LOOK_PAUSES pauses (~1 us): long enough that a post stream which
 * keeps one spare task about is served without a wake-up each time, short
 * enough that an idle runtime stops burning CPU within tens of us. */
#define SPIN_NS          50000
#define LOOK_PAUSES      32
/* Victims one look of a spinning worker probes: a few at random, not all,
 * so that 15 searchers on 16 CPUs do not each read every owner's deque line
 * every microsecond (each read makes that owner's next post take its line
 * back). The look before sleeping reads them all. */
#define LOOK_VICTIMS     2
/* Injected tasks a worker moves to its own deque at once when many wait:
 * the others then steal from it instead of all taking the injection lock
 * for every task (Go's globrunqget). */
#define INJECTED_BATCH   32
/* A fiber queued on a worker this long (seen at two looks, nothing resumed
 * there between them) may be taken by another (mn.c: "Fibers that
 * move"): longer than a worker descheduled for a moment, short beside a
 * watch period. */
#define MOVE_SIT_NS      20000
/* A worker that cannot start a task looks whether it can again this often. */
#define STARVED_SLEEP_NS 1000000

typedef struct mn_worker {
	weft__fworker fw;
	weft__deque deque;
	/* Started fibers to run again (woken, yielded, preempted), FIFO: the
	 * owner and wakers from other threads queue them, the owner takes
	 * them, and so do other workers, the movable ones that sat there (see
	 * "Fibers that move"). */
	WEFT__ALIGNED _Atomic int rlock; /* a spin lock: rlock_take, rlock_drop */
	weft__task_list resume;          /* under rlock */
	_Atomic int nresume;             /* its length: written under rlock, read without */
	_Atomic uint64_t rpops;          /* fibers taken from it so far: written under rlock */
	/* Owner only. */
	int rseen_victim;    /* a victim seen with fibers queued to resume, */
	uint64_t rseen_pops; /* its rpops then (unchanged: they sat), */
	int64_t rseen_ns;    /* and when */
	unsigned picks;
	bool prefer_new; /* last pick was a resumed fiber */
	bool spinning;   /* counted in idle.nspinning */
	bool recheck;    /* saw a lone new task before sleeping: look once more */
	uint64_t rng;
	int64_t batch_base, batch_end; /* deque indices of the last injected batch */
	weft__idler idler;             /* its part in core/idle.h, lazy steals included */
} mn_worker;

typedef struct mn {
	weft_rt *rt;
	int nworkers;
	int max_spinning;
	int awake_cap;     /* the workers, or the CPUs when there are more CPUs */
	bool any_priority; /* fifo: batches need not share a priority */

	WEFT__ALIGNED weft__inbox injected; /* outside posts, not yet queued */
	WEFT__ALIGNED weft__lock lock;
	weft__readyq queue; /* under lock */
	_Atomic size_t queue_len;

	weft__idle idle; /* idle, spinning and awake workers, the watch (core/idle.h) */
	_Atomic int stopping;
	mn_worker *workers; /* nworkers of them */
} mn;

static inline mn_worker *of(weft__fworker *w)
{
	return WEFT__CONTAINER(w, mn_worker, fw);
}

static inline mn *model_of(weft__fworker *w)
{
	return w->model;
}

/* Whether the injection queue holds a task (a racy hint). */
bool weft__mn_injected_waiting(mn *m);
/* Queues t in the policy's order where every worker sees it. */
void weft__mn_inject(mn *m, weft_task *t);
/* One task of the injection queue for self, and a batch more onto its
 * deque when many wait; NULL when empty. */
weft_task *weft__mn_take_injected(mn *m, mn_worker *self);
/* Whether tasks of the last batch self took are still on its deque. */
bool weft__mn_batch_pending(mn_worker *self);
/* mw's resume queue (any thread). */
void weft__mn_resume_push(mn_worker *mw, weft_task *t);
weft_task *weft__mn_resume_pop(mn_worker *mw);
/* A task from victims others' deques (lazy rule), else a fiber from their
 * resume queues, for self; *fresh: worth another look soon. */
weft_task *weft__mn_steal(mn *m, mn_worker *self, int victims, bool *fresh);

#endif
