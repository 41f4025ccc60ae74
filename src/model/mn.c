/* Model mn: fibers over N work-stealing workers (M:N).
 *
 * Every task runs as a fiber (src/fiber/engine.h: a task runs on the
 * worker's current fiber and gets a stack of its own only if it waits), so
 * sleeps, fd waits, joins, weft_blocking and every primitive of weft/sync.h
 * park the fiber, never the worker, and the program still uses every core.
 *
 * Where work lives, per worker:
 *   deque    tasks posted by this worker's tasks, not started: the owner
 *            takes the newest (work-first: a fork-join tree holds about
 *            depth x workers stacks), thieves the oldest (the biggest
 *            subtrees); a Chase-Lev deque, so a post is a store and a
 *            fence, with no lock and nothing shared written;
 *   resume   started fibers to run again (woken, yielded, preempted), FIFO,
 *            owner only: a fiber stays on the worker that started it (as
 *            marl does), which keeps its stack, timers, fd interest and
 *            per-thread state with one worker; wake-ups from other threads
 *            reach it through the worker's inbox;
 * and for all of them the injection queue: posts from threads that are not
 * workers (a lock-free inbox, moved under the lock into the policy's
 * queue, so the policy orders them), and the overflow of full deques.
 *
 * A worker picks: every 61st pick the injection queue first (Go's rule, so
 * outside posts are not starved by a worker that keeps posting to itself);
 * then resume and deque in turn (a resumed fiber, then a new task: neither
 * a yield loop nor a stream of new tasks starves the other); then the
 * injection queue (taking a batch onto its deque when many wait, so the
 * others steal from it rather than all take the injection lock per task);
 * then it steals from the other deques, from a random victim on.
 *
 * Searching and sleeping. What makes a runtime slower on 16 cores than on
 * one is work that moves between cores when it need not, and lines that
 * every core writes or reads per operation. So:
 *   - a join that nobody stole is a pop of the worker's own deque: the
 *     awaited task is looked for AWAITED_DEPTH deep (the plain fork, post
 *     a, post b, wait a, waits first for the one under the newest), and
 *     weft_fork_join takes its b back with one pop (model op take_back);
 *   - a thief takes a surplus (two or more queued) at once, but a lone task
 *     only when it saw that very task sit there at its previous look (the
 *     deque's push counter and top, per victim): a lone task is nearly
 *     always the child its poster waits for next, and taking it would turn
 *     a push and a pop on one core into a hand-off, a park and a wake-up
 *     (Cilk's work-first rule, from the thief's side). A task its poster
 *     does not come back to is still taken, a look (~1 us) later;
 *   - a post of one task onto an empty deque wakes nobody: its poster
 *     nearly always waits for it next (the chain of spawn-joins), and a
 *     woken worker would only search, find nothing and sleep again, ever
 *     and again. A second task, or an offer (weft_fork_join's b, a loop's
 *     half: the poster runs something else first), may wake one;
 *   - a worker that runs out of work searches (spins) for SPIN_NS, one look
 *     per microsecond at LOOK_VICTIMS random victims and the injection
 *     queue, if fewer than max_spinning (half the CPUs, plus one)
 *     already search; a post wakes a sleeper only when nobody searches
 *     (idle.h), and a searcher that finds work wakes the next sleeper only
 *     if it was the last searcher and a surplus remains (ramp-up one worker
 *     at a time, as Go does). So a post from a task costs a store and two
 *     reads of lines that change only when workers go to sleep or wake (the
 *     fence that orders them is paid by the worker going to sleep, with a
 *     membarrier, where the kernel has it); a chain of spawn-joins wakes
 *     nobody, and the owner's deque line is read by at most max_spinning
 *     searchers, a few times a microsecond between them, however many
 *     workers there are;
 *   - the watch: the first worker to sleep keeps it, and sleeps for at
 *     most WATCH_BUSY_NS (WATCH_IDLE_NS when every worker sleeps), then
 *     looks once, without searching: a lone task whose poster went on with
 *     something long (or blocked its thread) is taken within two watches.
 *     When the watcher finds work it hands the watch to a sleeper (a kick).
 *
 * No lost wake-up, i.e. never every worker asleep while a task sits where
 * only sleepers could take it: a post makes its task visible (deque store;
 * or the inbox's seq_cst CAS) before it reads the idle counts, and a
 * worker about to sleep stops counting itself a searcher, joins the idle
 * list and then, after a membarrier (or with the posters' fence where the
 * kernel has none), looks everywhere once more: its own queues, the
 * injection queue and every deque. Either the poster saw it idle and
 * nobody searching, and wakes a sleeper, or the last look sees the task.
 * A lone task the last look sees but may not take yet (seen for the first
 * time) does not let the worker sleep: it looks again a microsecond later
 * and takes it then, unless its owner did. A lone post that woke nobody is
 * still its poster's (a worker only idles with an empty deque, so the
 * poster runs it at the latest when it next picks), and the watch bounds
 * how long it waits when the poster does not come back. Wake-ups of a
 * parked fiber go through its worker's inbox, which the engine pairs with
 * the worker's sleeping flag. tests/test_join.c (lone_child_found,
 * bursts_never_strand) is the stress that would catch a lost wake-up.
 *
 * Policies: priority and fifo order the injection queue, i.e. the tasks
 * posted from outside; tasks posted by tasks run work-first on their
 * worker and may be stolen, so their priorities are not kept (best effort:
 * a worker's own tasks before stolen ones). random, psjf and mlfq need one
 * queue that sees every task and are refused. */
#include <stdio.h>
#include <string.h>

#include "core/clock.h"
#include "core/completion.h"
#include "core/deque.h"
#include "core/idle.h"
#include "core/internal.h"
#include "core/lock.h"
#include "core/membarrier.h"
#include "core/observe.h"
#include "core/spin.h"
#include "core/task_list.h"
#include "fiber/engine.h"
#include "obs/probes.h"

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
/* A fiber queued on a worker this long (seen at two looks) may be taken by
 * another (see "Fibers that move"). */
#define MOVE_SIT_NS      2000
/* A worker that cannot start a task looks whether it can again this often. */
#define STARVED_SLEEP_NS 1000000

typedef struct mn_worker {
	weft__fworker fw;
	weft__deque deque;
	/* Started fibers to run again (woken, yielded, preempted), FIFO: the
	 * owner and wakers from other threads queue them, the owner takes
	 * them, and so do other workers, the movable ones that sat there (see
	 * "Fibers that move"). */
	WEFT__ALIGNED weft__lock rlock;
	weft__task_list resume; /* under rlock */
	_Atomic int nresume;    /* its length: written under rlock, read without */
	/* Owner only. */
	weft_task *rseen; /* a fiber seen queued on a victim's resume queue, */
	int rseen_victim; /* that victim, */
	int64_t rseen_ns; /* and when */
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

static mn_worker *of(weft__fworker *w)
{
	return WEFT__CONTAINER(w, mn_worker, fw);
}

static mn *model_of(weft__fworker *w)
{
	return w->model;
}

/* ------------------------------------------------------------ waking */

static void kick(weft__idler *i, void *ctx)
{
	(void)ctx;
	weft__fworker_wake(&WEFT__CONTAINER(i, mn_worker, idler)->fw);
}

/* by: the worker that wakes, or NULL from outside (counted in idle). */
static void wake_one(mn *m, mn_worker *by)
{
	weft__idler *i = weft__idle_claim(&m->idle);
	if (!i)
		return;
	if (by)
		weft__count(&by->fw.wakes_sent, 1);
	kick(i, NULL);
}

/* Whether one more worker may be awake (extra: the caller itself is not
 * counted yet): an outside thread running a loop of rt's keeps a CPU busy,
 * so with as many workers as CPUs the last sleeper is left asleep rather
 * than woken to time-share the CPUs (a loop called from main on 2 workers
 * and 2 CPUs ran at half speed). Never binds without outside helpers. */
static bool room_for(mn *m, int extra)
{
	int awake = m->nworkers - atomic_load_explicit(&m->idle.nidle, memory_order_relaxed);
	return weft__room_beside_helpers(m->rt, awake + extra, m->awake_cap);
}

static bool injected_waiting(mn *m)
{
	return !weft__inbox_empty(&m->injected) ||
	       atomic_load_explicit(&m->queue_len, memory_order_relaxed) != 0;
}

static bool own_work(mn_worker *self)
{
	return atomic_load_explicit(&self->nresume, memory_order_relaxed) ||
	       !weft__inbox_empty(&self->fw.inbox) || weft__deque_size_hint(&self->deque) > 0;
}

/* ------------------------------------------------------------ queues */

static void inject(mn *m, weft_task *t)
{
	weft__lock_acquire(&m->lock);
	weft__readyq_push(&m->queue, t);
	atomic_store_explicit(&m->queue_len, m->queue.len, memory_order_relaxed);
	weft__lock_release(&m->lock);
}

/* One task from the injection queue, in the policy's order. When many
 * wait and other workers could share them, a batch more of the same
 * priority (any, under fifo) goes onto the taker's deque in order (the
 * best is popped first), where idle workers steal from it rather than all
 * take the injection lock for every task (Go's globrunqget). The price: a
 * task posted later with a more urgent priority may wait for the batch
 * (INJECTED_BATCH tasks at most). */
static weft_task *take_injected(mn *m, mn_worker *self)
{
	if (!injected_waiting(m))
		return NULL;
	weft__lock_acquire(&m->lock);
	for (weft_task *t = weft__inbox_take(&m->injected); t;) {
		weft_task *next = t->next_;
		weft__readyq_push(&m->queue, t);
		t = next;
	}
	weft_task *t = weft__readyq_pop(&m->queue);
	size_t want = m->nworkers > 1 ? m->queue.len / (size_t)m->nworkers : 0, batch = 0;
	want = want > INJECTED_BATCH ? INJECTED_BATCH : want;
	weft_task *more[INJECTED_BATCH];
	while (t && batch < want) {
		weft_task *x = weft__readyq_pop(&m->queue);
		if (!m->any_priority && x->priority_ != t->priority_) {
			weft__readyq_unpop(&m->queue, x);
			break;
		}
		more[batch++] = x;
	}
	atomic_store_explicit(&m->queue_len, m->queue.len, memory_order_relaxed);
	weft__lock_release(&m->lock);
	if (batch > 0) {
		self->batch_base = atomic_load_explicit(&self->deque.bottom, memory_order_relaxed);
		self->batch_end = self->batch_base + (int64_t)batch;
	}
	while (batch > 0) {
		if (!weft__deque_push(&self->deque, more[--batch])) {
			inject(m, more[batch]); /* full: back where every worker sees it */
		}
	}
	return t;
}

/* Whether tasks of the last batch self took are still on its deque. */
static bool batch_pending(mn_worker *self)
{
	return atomic_load_explicit(&self->deque.top, memory_order_relaxed) < self->batch_end &&
	       atomic_load_explicit(&self->deque.bottom, memory_order_relaxed) > self->batch_base;
}

/* ------------------------------------------------------------ fibers */

static void resume_push(mn_worker *mw, weft_task *t)
{
	weft__lock_acquire(&mw->rlock);
	weft__task_list_append(&mw->resume, t);
	atomic_store_explicit(&mw->nresume, mw->nresume + 1, memory_order_relaxed);
	weft__lock_release(&mw->rlock);
}

static weft_task *resume_pop(mn_worker *mw)
{
	if (!atomic_load_explicit(&mw->nresume, memory_order_relaxed))
		return NULL;
	weft__lock_acquire(&mw->rlock);
	weft_task *t = weft__task_list_pop(&mw->resume);
	if (t)
		atomic_store_explicit(&mw->nresume, mw->nresume - 1, memory_order_relaxed);
	weft__lock_release(&mw->rlock);
	return t;
}

/* The oldest movable fiber queued on v, if self saw that very one there at
 * least MOVE_SIT_NS ago (the lazy rule of core/idle.h, for fibers: one its
 * worker is about to resume stays). Under v's lock. */
static weft_task *take_fiber(mn_worker *self, mn_worker *v, int vi, bool *fresh)
{
	weft_task *prev = NULL, *t = v->resume.head;
	while (t && !weft__fiber_movable(t)) {
		prev = t;
		t = t->next_;
	}
	if (!t)
		return NULL;
	int64_t now = weft__now_ns();
	if (t != self->rseen || vi != self->rseen_victim) {
		self->rseen = t;
		self->rseen_victim = vi;
		self->rseen_ns = now;
		*fresh = true;
		return NULL;
	}
	if (now - self->rseen_ns < MOVE_SIT_NS) {
		*fresh = true;
		return NULL;
	}
	if (prev)
		prev->next_ = t->next_;
	else
		v->resume.head = t->next_;
	if (v->resume.tail == t)
		v->resume.tail = prev;
	atomic_store_explicit(&v->nresume, v->nresume - 1, memory_order_relaxed);
	self->rseen = NULL;
	return t;
}

/* A fiber queued on a busy worker, for self (see "Fibers that move"):
 * victims others from start on. */
static weft_task *steal_fiber(mn *m, mn_worker *self, int start, int victims, bool *fresh)
{
	int n = m->nworkers;
	for (int k = 0; k < victims && k < n - 1; k++) {
		int vi = (self->fw.index + 1 + (start + k) % (n - 1)) % n;
		mn_worker *v = &m->workers[vi];
		if (!atomic_load_explicit(&v->nresume, memory_order_relaxed))
			continue;
		weft__lock_acquire(&v->rlock);
		weft_task *t = take_fiber(self, v, vi, fresh);
		weft__lock_release(&v->rlock);
		if (t) {
			weft__count(&self->fw.steals, 1);
			return t;
		}
	}
	return NULL;
}

/* Tries `victims` others (all when victims >= nworkers - 1), from a random
 * one on, under the lazy-steal rule of core/idle.h. *fresh: a lone task
 * was seen and left for now, or a race lost: worth another look. */
static weft_task *steal(mn *m, mn_worker *self, int victims, bool *fresh)
{
	int n = m->nworkers;
	if (n < 2)
		return NULL;
	weft__count(&self->fw.steal_attempts, 1);
	self->rng = self->rng * 6364136223846793005ull + 1442695040888963407ull;
	int start = (int)((self->rng >> 33) % (uint64_t)(n - 1));
	int v = weft__idle_find_sitting(&m->idle, &self->idler, start,
	                                victims < n - 1 ? victims : n - 1, false);
	if (v < 0) {
		*fresh |= self->idler.seen_victim >= 0;
		return steal_fiber(m, self, start, victims, fresh);
	}
	weft_task *t = weft__idle_take_sitting(&m->idle, &self->idler, v);
	if (!t) {
		*fresh = true; /* taken while we looked */
		return NULL;
	}
	weft__count(&self->fw.steals, 1);
	WEFT__PROBE2(task__steal, self->fw.index, 1);
	weft__trace(m->rt, WEFT__TRACE_STEAL, NULL, false);
	return t;
}

/* Whether anything is to be had now, for a worker about to sleep: its own
 * queues, the injection queue, a surplus or a lone task it saw before
 * (taken, onto its own deque). *fresh: only lone new tasks were seen. A
 * worker that cannot start a task (no stack to be had) looks at its own
 * queues only: see pick_local. */
static bool look(mn *m, mn_worker *self, int victims, bool *fresh)
{
	if (own_work(self))
		return true;
	if (!weft__fworker_can_start(&self->fw))
		return false;
	if (injected_waiting(m))
		return true;
	weft_task *t = steal(m, self, victims, fresh);
	if (!t)
		return false;
	if (t->fiber_)
		resume_push(self, t);                /* a fiber that moves */
	else if (!weft__deque_push(&self->deque, t)) /* cannot be full: it was empty */
		inject(m, t);
	return true;
}

/* ------------------------------------------------------------ fiber ops */

static void on_ready(weft__fworker *w, weft_task *t, weft__ready_how how)
{
	mn_worker *mw = of(w);
	mn *m = model_of(w);
	if (how != WEFT__READY_POSTED) {
		resume_push(mw, t);
		/* Woken while this worker runs another fiber, or yielded
		 * behind one: it waits, so a sleeper may come and take it
		 * (Go's ready wakes one too); a look first, it sits a while. */
		if (how == WEFT__READY_WOKEN ||
		    atomic_load_explicit(&mw->nresume, memory_order_relaxed) > 1) {
			atomic_thread_fence(memory_order_seq_cst);
			if (weft__idle_wanted(&m->idle) && room_for(m, 1))
				wake_one(m, mw);
		}
		return;
	}
	bool lone = weft__deque_size_hint(&mw->deque) == 0 && !weft__tls.offering;
	if (!weft__deque_push(&mw->deque, t))
		inject(m, t); /* full: let every worker see it */
	/* The task, then the watch and the idle counts: a worker going to
	 * sleep pays for this order with a membarrier (see "No lost
	 * wake-up"), else here. */
	if (weft__membarrier_usable())
		atomic_signal_fence(memory_order_seq_cst);
	else
		atomic_thread_fence(memory_order_seq_cst);
	/* A lone post is its poster's, most likely: a searcher or the watch
	 * takes it if not; with nobody on watch it wakes as any post does. */
	if ((!lone || weft__watch_vacant(&m->idle)) && weft__idle_wanted(&m->idle) &&
	    room_for(m, 1))
		wake_one(m, mw);
}

/* The awaited task is usually among the caller's newest posts: the
 * plain fork (post a, post b, wait a, wait b) waits first for the one
 * under the newest. Look AWAITED_DEPTH deep, set the others aside and put
 * them back in their order: they were the caller's own posts a moment ago
 * and stay stealable the whole time but for these few instructions. */
#define AWAITED_DEPTH 4

static weft_task *take_awaited(weft__fworker *w, const weft_task *t, const weft_group *g)
{
	mn_worker *mw = of(w);
	weft_task *aside[AWAITED_DEPTH], *x, *found = NULL;
	int n = 0;
	while (n < AWAITED_DEPTH && (x = weft__deque_pop(&mw->deque))) {
		if (x == t || (g && x->group_ == g)) {
			found = x;
			break;
		}
		aside[n++] = x;
	}
	while (n > 0)
		weft__deque_push(&mw->deque, aside[--n]); /* there is room: they were just there */
	return found;
}

/* Out of stacks. A worker whose every stack is held by a parked fiber
 * (the system refuses more) takes no new task from elsewhere: it could not
 * start it, and a child it stole from a parent parked on another worker
 * would then wait for one of its own parked fibers to end, which may be
 * waiting for such a child in turn (4 workers and 20,000 fork-joins under
 * ulimit -v hung so). Work stays where a worker that can start it steals
 * it; the worker runs its own queues (a task of its own deque it cannot
 * start the engine sets aside, and sleeps until one of its fibers is
 * woken). A parent's child is then run by the parent itself (take_awaited)
 * or by a worker with a stack, so a fork-join tree one level deep always
 * finishes, only slower. */
static weft_task *pick_local(mn *m, mn_worker *mw)
{
	weft_task *t;
	/* (A worker going through a batch it took is serving the injection
	 * queue already, in its order.) */
	if (++mw->picks % INJECTED_EVERY == 0 && !batch_pending(mw) &&
	    weft__fworker_can_start(&mw->fw) && (t = take_injected(m, mw)))
		return t;
	if (!(mw->prefer_new && weft__deque_size_hint(&mw->deque) > 0) && (t = resume_pop(mw))) {
		mw->prefer_new = true;
		return t;
	}
	mw->prefer_new = false;
	if ((t = weft__deque_pop(&mw->deque)))
		return t;
	if ((t = resume_pop(mw))) {
		mw->prefer_new = true;
		return t;
	}
	if (!weft__fworker_can_start(&mw->fw))
		return NULL;
	if ((t = take_injected(m, mw)))
		return t;
	bool fresh = false;
	return steal(m, mw, m->nworkers, &fresh);
}

/* Whether work is queued that more workers could share: the injection
 * queue, or a deque holding two or more. */
static bool surplus(mn *m)
{
	if (injected_waiting(m))
		return true;
	for (int i = 0; i < m->nworkers; i++)
		if (weft__deque_size_hint(&m->workers[i].deque) > 1)
			return true;
	return false;
}

/* Stops counting mw as spinning; true when it was the last one. */
static bool stop_spinning(mn *m, mn_worker *mw)
{
	if (!mw->spinning)
		return false;
	mw->spinning = false;
	return weft__idle_stop_search(&m->idle);
}

/* mw, the watcher, found work and left the watch: a lone post that saw it
 * watching woke nobody (core/idle.h), so it looks once at every deque.
 * Only lone posts by other workers can be there, and their posters are
 * awake; those leave out their fence, hence the membarrier. */
static void watch_left(mn *m, mn_worker *mw)
{
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load(&m->idle.awake) <= 1)
		return; /* nobody else awake: nobody else posts to a deque */
	if (weft__membarrier_usable())
		(void)weft__membarrier();
	if (weft__idle_posts_waiting(&m->idle) && weft__idle_wanted(&m->idle) && room_for(m, 1))
		wake_one(m, mw);
}

static weft_task *next(weft__fworker *w)
{
	mn_worker *mw = of(w);
	mn *m = model_of(w);
	weft_task *t = pick_local(m, mw);
	/* A searcher found work: if it was the last one searching and more
	 * work remains, the next one wakes (ramp up, one at a time). */
	if (t && stop_spinning(m, mw) && surplus(m) && room_for(m, 1))
		wake_one(m, mw);
	/* Busy now: the watch is left vacant, not handed on with a wake-up
	 * (core/idle.h says why): the next lone post wakes a sleeper to it. */
	if (t && weft__watch_leave(&m->idle, &mw->idler))
		watch_left(m, mw);
	return t;
}

static uint64_t sum_finished(void *state)
{
	mn *m = state;
	uint64_t n = 0;
	for (int i = 0; i < m->nworkers; i++)
		n += atomic_load(&m->workers[i].fw.finished);
	return n;
}

static uint64_t sum_posted(void *state)
{
	mn *m = state;
	uint64_t n = 0;
	for (int i = 0; i < m->nworkers; i++)
		n += atomic_load(&m->workers[i].fw.posted);
	return n;
}

static uint64_t sum_wakes_sent(mn *m)
{
	uint64_t n = 0;
	for (int i = 0; i < m->nworkers; i++)
		n += atomic_load(&m->workers[i].fw.wakes_sent);
	return n;
}

static const weft__worker_sums sums = {sum_finished, sum_posted};

static weft__deque *deque_of(void *state, int i)
{
	mn *m = state;
	return &m->workers[i].deque;
}

static void barrier(void *state)
{
	(void)state;
	if (weft__membarrier_usable())
		(void)weft__membarrier();
}

static const weft__idle_ops idle_ops = {deque_of, sum_posted, barrier};

/* Idle while it cannot start a task (see pick_local): work it sees
 * elsewhere is for a worker that can, so it passes the watch and a wake-up
 * on rather than keep them (a post from outside that woke it, or the
 * watch, would otherwise wake nobody able to take the task), and sleeps
 * a watch's length at a time, then looks whether a stack can be had again
 * (another worker may have given memory back). It is on no idle list
 * meanwhile: a wake-up of one of its own fibers comes through its inbox. */
static bool idle_starved(mn *m, mn_worker *mw)
{
	(void)stop_spinning(m, mw);
	(void)weft__watch_leave(&m->idle, &mw->idler);
	if (own_work(mw))
		return true;
	bool elsewhere = injected_waiting(m);
	for (int i = 0; i < m->nworkers && !elsewhere; i++)
		elsewhere = i != mw->fw.index && weft__deque_size_hint(&m->workers[i].deque) > 0;
	if (elsewhere) {
		weft__idler *i = weft__idle_claim_any(&m->idle);
		if (i) {
			weft__count(&mw->fw.wakes_sent, 1);
			kick(i, NULL);
		}
	}
	(void)weft__fworker_sleep_for(&mw->fw, STARVED_SLEEP_NS);
	return true;
}

/* The poller (or futex) sleep of weft__idle_doze: true when something
 * else than the end of ns came (a wake-up, an fd, a timer), or when
 * progress functions are registered: the engine's loop then takes the
 * progress duty before the next sleep (core/progress.h). */
static bool doze_sleep(weft__idler *me, int64_t ns, void *ctx)
{
	(void)me;
	return weft__fworker_sleep_for(ctx, ns) || weft__progress_on();
}

static bool idle(weft__fworker *w)
{
	mn_worker *mw = of(w);
	mn *m = model_of(w);
	weft__notify_quiescent(&m->rt->done, &sums, m);
	if (atomic_load(&m->stopping))
		return false; /* destroy set it after quiescence: no work can come */
	if (!weft__fworker_can_start(w))
		return idle_starved(m, mw);
	bool fresh = false;
	/* Search for a while, if few others do (or once more, for a lone task
	 * seen just before sleeping): a look now and then, at a few victims. */
	if (mw->recheck || mw->spinning ||
	    (room_for(m, 0) &&
	     (mw->spinning = weft__idle_start_search(&m->idle, m->max_spinning)))) {
		int64_t until = weft_clock_ns() + SPIN_NS;
		do {
			/* Its own inbox is where a wake-up of one of its fibers
			 * lands: look at it at every pause, so a ping-pong across
			 * workers is not paced by the looks. While a thread from
			 * outside runs a loop, the injection inbox too: it posts
			 * its halves there and waits for a worker to start them
			 * (only then: a stream of outside posts would pay for
			 * every such read with a line transfer). */
			bool loop_outside = atomic_load_explicit(&m->rt->outside_helpers,
			                                         memory_order_relaxed) > 0;
			for (int k = 0; k < LOOK_PAUSES; k++) {
				weft__cpu_relax();
				if (!weft__inbox_empty(&w->inbox) ||
				    atomic_load_explicit(&mw->nresume, memory_order_relaxed) ||
				    (loop_outside && !weft__inbox_empty(&m->injected)))
					return true;
			}
			weft__count(&w->spins, 1);
			if (look(m, mw, mw->recheck ? m->nworkers : LOOK_VICTIMS, &fresh))
				return true;
		} while (!mw->recheck && weft_clock_ns() < until);
		mw->recheck = false;
	}
	/* A searcher stops counting itself one before it announces (else
	 * posts would take it for a searcher and wake nobody). */
	(void)stop_spinning(m, mw);
	/* Announce, take the watch if it is vacant and anyone is awake, then
	 * look everywhere once more (no lost wake-up: a post makes its task
	 * visible before it reads the idle counts). */
	weft__idle_join(&m->idle, &mw->idler);
	weft__idle_awake(&m->idle, -1);
	(void)weft__watch_keep(&m->idle, &mw->idler);
	/* Every poster has now either published its task or will see this
	 * worker idle (membarrier.h); a barrier that failed leaves this round
	 * awake. */
	bool unsure = weft__membarrier_usable() && !weft__membarrier();
	fresh = false;
	bool found = look(m, mw, m->nworkers, &fresh), claimed;
	/* Until work, a timer, an fd event or a kick; the watcher in periods,
	 * looking at the deques after each. */
	if (!found && !fresh && !unsure && !atomic_load(&m->stopping))
		claimed = weft__idle_doze(&m->idle, &mw->idler, doze_sleep, &mw->fw);
	else
		claimed = weft__idle_leave(&m->idle, &mw->idler);
	weft__idle_awake(&m->idle, 1);
	if (claimed) {
		mw->spinning = true; /* claimed: counted spinning by the waker */
		if (!atomic_load_explicit(&m->stopping, memory_order_relaxed))
			weft__count(&w->wakes_received, 1); /* not destroy's last call */
	}
	mw->recheck = (fresh && !found) || unsure;
	return true;
}

/* A fiber of w's woken by another thread: onto w's resume queue, and w
 * woken if it sleeps; if w is busy (awake, not searching), a sleeper may
 * come and take it (it sits there a look first). */
static void on_wake(weft__fworker *w, weft_task *t)
{
	mn *m = model_of(w);
	resume_push(of(w), t);
	weft__fworker_wake(w);
	if (weft__idle_wanted(&m->idle) && room_for(m, 1))
		wake_one(m, NULL);
}

static const weft__fiber_ops ops = {
        .wake = on_wake,
        .ready = on_ready,
        .next = next,
        .idle = idle,
        .take_awaited = take_awaited,
};

/* ------------------------------------------------------------ model ops */

static void mn_wait_all(weft_rt *rt)
{
	mn *m = rt->model_state;
	weft__wait_quiescent(&rt->done, &sums, m);
}

static void push_injected(void *state, weft_task *t)
{
	mn *m = state;
	weft__inbox_push(&m->injected, t);
	if (weft__idle_wanted(&m->idle))
		wake_one(m, NULL);
}

static int mn_submit(weft_rt *rt, weft_task *t, bool from_task)
{
	mn *m = rt->model_state;
	weft__fworker *w = from_task ? weft__fworker_self(rt) : NULL;
	if (w) {
		weft__fworker_post_local(w, t);
		return 0;
	}
	t->fiber_ = NULL;
	push_injected(m, t);
	return 0;
}

static size_t workers_size(int n)
{
	return (size_t)n * sizeof(mn_worker);
}

static void stop_workers(mn *m, int started)
{
	atomic_store(&m->stopping, 1);
	weft__idle_claim_all(&m->idle, kick, NULL);
	for (int i = 0; i < started; i++)
		weft__fworker_wake(&m->workers[i].fw);
	for (int i = 0; i < started; i++)
		weft__fworker_join(&m->workers[i].fw);
}

static void mn_release(weft_rt *rt)
{
	mn *m = rt->model_state;
	for (int i = 0; i < m->nworkers; i++)
		weft__fworker_release(&m->workers[i].fw);
	weft__free(m->workers, workers_size(m->nworkers));
	weft__free(m, sizeof(*m));
	rt->model_state = NULL;
}

static int mn_start(weft_rt *rt)
{
	int n = rt->cfg.workers;
	mn *m = weft__alloc(sizeof(*m));
	if (!m)
		return WEFT_ENOMEM;
	memset(m, 0, sizeof(*m));
	m->workers = weft__alloc(workers_size(n));
	if (!m->workers) {
		weft__free(m, sizeof(*m));
		return WEFT_ENOMEM;
	}
	memset(m->workers, 0, workers_size(n));
	m->rt = rt;
	m->nworkers = n;
	/* Searchers: half the workers (Go keeps at most half of the busy
	 * ones: enough that short loops back to back find them awake),
	 * counted against the CPUs there are, so that 16 workers on 2 CPUs do
	 * not spin away the time slices of the busy ones. */
	int cpus = weft__rt_cpus(rt);
	m->max_spinning = (cpus < n ? cpus : n) / 2 + 1;
	m->awake_cap = weft__awake_cap(rt);
	m->any_priority = rt->cfg.policy == WEFT_POLICY_FIFO;
	weft__idle_init(&m->idle, &idle_ops, m, n);
	weft__readyq_init(&m->queue, &rt->cfg);
	(void)weft__membarrier_init(); /* posters leave out their fence if it works */
	rt->model_state = m;
	int rc = 0, started = 0;
	for (int i = 0; i < n && rc == 0; i++) {
		mn_worker *mw = &m->workers[i];
		mw->rng = rt->cfg.seed ^ ((uint64_t)i * 0x9e3779b97f4a7c15ull);
		weft__idler_init(&mw->idler, i);
		mw->rseen_victim = -1;
		rc = weft__fworker_init(&mw->fw, rt, &ops, m, i);
	}
	for (int i = 0; i < n && rc == 0; i++) {
		rc = weft__fworker_start(&m->workers[i].fw);
		started += rc == 0;
	}
	if (rc) {
		stop_workers(m, started);
		mn_release(rt);
		return rc;
	}
	return 0;
}

static void mn_stop(weft_rt *rt)
{
	mn *m = rt->model_state;
	mn_wait_all(rt);
	stop_workers(m, m->nworkers);
}

static void mn_stats(weft_rt *rt, weft_stats *s)
{
	mn *m = rt->model_state;
	for (int i = 0; i < m->nworkers; i++)
		weft__fworker_stats(&m->workers[i].fw, s);
	s->posted += atomic_load(&m->rt->done.external_posted) -
	             atomic_load(&m->rt->done.external_refused);
	s->wakeups += atomic_load(&m->idle.wakeups);
}

static void mn_print_workers(weft_rt *rt, FILE *out)
{
	mn *m = rt->model_state;
	for (int i = 0; i < m->nworkers; i++)
		weft__fworker_print_worker(&m->workers[i].fw, out);
	fprintf(out, "weft: wake-ups by outside posts %llu\n",
	        (unsigned long long)(atomic_load(&m->idle.wakeups) - sum_wakes_sent(m)));
}

static int mn_configure(weft_rt *rt)
{
	weft_policy p = rt->cfg.policy;
	if (p != WEFT_POLICY_PRIORITY && p != WEFT_POLICY_FIFO && rt->model_from_env &&
	    !rt->policy_from_env) {
		/* The program chose the policy for another model; the user moved
		 * it to mn without editing it: run it, and say what changed. */
		weft__log(WEFT_LOG_NOTICE,
		          "weft: WEFT_MODEL=mn does not support the %s policy the program sets; "
		          "using fifo (set WEFT_POLICY=priority or fifo to choose)\n",
		          weft_policy_name(p));
		rt->cfg.policy = WEFT_POLICY_FIFO;
		return 0;
	}
	if (p != WEFT_POLICY_PRIORITY && p != WEFT_POLICY_FIFO) {
		weft__log(WEFT_LOG_ERROR,
		          "weft: WEFT_MODEL=mn does not support the %s policy (it needs one queue "
		          "that "
		          "sees every task, and mn's workers steal from each other): accepted "
		          "policies are priority, fifo\n",
		          weft_policy_name(p));
		return WEFT_EINVAL;
	}
	return 0;
}

const weft__model_ops weft__model_mn = {
        .name = "mn",
        .configure = mn_configure,
        .start = mn_start,
        .submit = mn_submit,
        .wait_all = mn_wait_all,
        .stop = mn_stop,
        .release = mn_release,
        .stats = mn_stats,
        .print_stats = weft__fworker_print_stats,
        .take_back = weft__fiber_take_back,
        .print_workers = mn_print_workers,
};
