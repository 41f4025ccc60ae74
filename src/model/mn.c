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
 *            under a small lock: the owner and wakers from other threads
 *            queue them, the owner and thieves take them (below);
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
 * then it steals from the other deques, then the other resume queues, from
 * a random victim on.
 *
 * Fibers that move. A woken fiber is queued on the worker it last ran on
 * (a wake-up from another thread too: op wake, which kicks that worker if
 * it sleeps), a yielded one on its own; there it resumes when that worker
 * next picks, unless another worker takes it first: a thief takes the
 * oldest movable fiber of a victim's resume queue once it saw that very
 * one there at two looks MOVE_SIT_NS apart with nothing resumed from that
 * queue in between, i.e. when its worker is busy with something else (Go
 * and Tokio move a woken task to whichever worker is free). Searchers
 * look at the resume queues after the deques, and the watcher's sleep
 * ends when one holds a fiber (the watch's sign of use counts wake-ups of
 * fibers, so a pipeline that posts nothing keeps it on duty). A wake-up
 * itself wakes no sleeper (unlike Go's ready): the waker nearly always
 * parks next (a channel, a ping-pong), and a worker woken for the fiber
 * only spun beside it (channel ping-pong went 3-8x slower). A burst from
 * the poller is the exception (on_reported): two or more fibers woken by
 * one look at it are events from outside, and wake a sleeper as a burst of
 * posts does. So
 * long-lived tasks that wait often (connections, pipeline stages) spread
 * over the workers, within a watch period, instead of staying where they
 * started. What moves is the fiber with its stack, an I/O fiber too (its
 * next wait watches the fd from its new worker's poller; the old poller
 * drops the fd at its next report); what does not: a fiber with a timer
 * armed on its worker (a sleep, any wait with a deadline, an io_uring
 * file call) is pinned until that is over, and so is a preempted one (it
 * returns through its signal frame); the engine re-reads the worker and the
 * thread's state after every switch, carrying errno (engine.h;
 * docs/fibers.md says what a __thread variable does to a task that moves).
 *
 * Searching and sleeping follow core/idle.h, shared with threads: what
 * makes a runtime slower on 16 cores than on one is work that moves
 * between cores when it need not, and lines every core writes or reads
 * per operation. So:
 *   - a join that nobody stole is a pop of the worker's own deque: the
 *     awaited task is looked for AWAITED_DEPTH deep (the plain fork, post
 *     a, post b, wait a, waits first for the one under the newest), and
 *     weft_fork_join takes its b back with one pop (model op take_back);
 *   - thieves follow the lazy rule (a surplus at once, a lone task once it
 *     sat 1 us) and a lone post (one task onto an empty deque) wakes
 *     nobody while the watch is on duty: its poster nearly always waits
 *     for it next (the chain of spawn-joins). A second task, or an offer
 *     (weft_fork_join's b, a loop's half), may wake one;
 *   - a worker that runs out of work searches (spins) for SPIN_NS, one look
 *     per microsecond at LOOK_VICTIMS random victims and the injection
 *     queue, if fewer than max_spinning (half the CPUs, plus one) already
 *     search; a post wakes a sleeper only when nobody searches, and a
 *     searcher that finds work wakes the next one only if it was the last
 *     searcher and a surplus remains (ramp-up one at a time, as Go does).
 *     So a post from a task costs a store and a few reads of lines that
 *     change only when workers sleep or wake (the fence that orders them
 *     is paid by the worker going to sleep, with a membarrier where the
 *     kernel has it), and a chain of spawn-joins wakes nobody;
 *   - a lone worker with fd waits, and a worker with hand-offs to the
 *     blocking pool in flight, do not search at all (idle says why).
 *
 * No lost wake-up, i.e. never every worker asleep while a task sits where
 * only sleepers could take it: a post makes its task visible (deque store;
 * or the inbox's seq_cst CAS) before it reads the watch and idle counts,
 * and a worker about to sleep stops counting itself a searcher, joins the
 * idle list, takes the watch if it is vacant and anyone is awake, and
 * then, after a membarrier (or with the posters' fence where the kernel
 * has none), looks everywhere once more. Either the poster saw it idle
 * and nobody searching, and wakes a sleeper, or the last look sees the
 * task; a lone task seen there for the first time keeps it awake a look
 * longer. A lone post that woke nobody is its poster's or the watcher's
 * (idle.h). A woken fiber is on its worker's resume queue before the
 * worker is kicked (engine: the kick's exchange pairs with the sleep's).
 * tests/test_join.c (lone_child_found, bursts_never_strand) and
 * tests/test_idle.c are the stresses that would catch a lost wake-up.
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
#include "core/membarrier.h"
#include "core/observe.h"
#include "core/spin.h"
#include "model/mn.h"
#include "obs/probes.h"

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

static bool own_work(mn_worker *self)
{
	return atomic_load_explicit(&self->nresume, memory_order_relaxed) ||
	       !weft__inbox_empty(&self->fw.inbox) || weft__deque_size_hint(&self->deque) > 0;
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
	if (weft__mn_injected_waiting(m))
		return true;
	weft_task *t = weft__mn_steal(m, self, victims, fresh);
	if (!t)
		return false;
	if (t->fiber_)
		weft__mn_resume_push(self, t);       /* a fiber that moves */
	else if (!weft__deque_push(&self->deque, t)) /* cannot be full: it was empty */
		weft__mn_inject(m, t);
	return true;
}

/* ------------------------------------------------------------ fiber ops */

static void on_ready(weft__fworker *w, weft_task *t, weft__ready_how how)
{
	mn_worker *mw = of(w);
	mn *m = model_of(w);
	if (how != WEFT__READY_POSTED) {
		/* Wakes nobody (unlike Go's ready): its waker nearly always
		 * parks next (a channel, a ping-pong), and a sleeper woken
		 * for it would only spin beside it; if it sits, a searcher or
		 * the watcher takes it (see "Fibers that move"). */
		weft__mn_resume_push(mw, t);
		return;
	}
	bool lone = weft__deque_size_hint(&mw->deque) == 0 && !weft__tls.offering;
	if (!weft__deque_push(&mw->deque, t))
		weft__mn_inject(m, t); /* full: let every worker see it */
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
	if (++mw->picks % INJECTED_EVERY == 0 && !weft__mn_batch_pending(mw) &&
	    weft__fworker_can_start(&mw->fw) && (t = weft__mn_take_injected(m, mw)))
		return t;
	if (!(mw->prefer_new && weft__deque_size_hint(&mw->deque) > 0) &&
	    (t = weft__mn_resume_pop(mw))) {
		mw->prefer_new = true;
		return t;
	}
	mw->prefer_new = false;
	if ((t = weft__deque_pop(&mw->deque)))
		return t;
	if ((t = weft__mn_resume_pop(mw))) {
		mw->prefer_new = true;
		return t;
	}
	if (!weft__fworker_can_start(&mw->fw))
		return NULL;
	if ((t = weft__mn_take_injected(m, mw)))
		return t;
	bool fresh = false;
	return weft__mn_steal(m, mw, m->nworkers, &fresh);
}

/* Whether work is queued that more workers could share: the injection
 * queue, or a deque holding two or more. */
static bool surplus(mn *m)
{
	if (weft__mn_injected_waiting(m))
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

/* The watch's sign of use: posts and wake-ups of fibers (a pipeline of
 * long-lived stages posts nothing, and its fibers may need moving). */
static uint64_t sum_activity(void *state)
{
	mn *m = state;
	uint64_t n = sum_posted(m);
	for (int i = 0; i < m->nworkers; i++)
		n += atomic_load_explicit(&m->workers[i].fw.unparks, memory_order_relaxed);
	return n;
}

static const weft__idle_ops idle_ops = {deque_of, sum_activity, barrier};

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
	bool elsewhere = weft__mn_injected_waiting(m);
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
	if (weft__fworker_sleep_for(ctx, ns) || weft__progress_on())
		return true;
	/* The watcher: a fiber queued on a busy worker is for the search. */
	mn *m = model_of(ctx);
	for (int i = 0; i < m->nworkers; i++)
		if (atomic_load_explicit(&m->workers[i].nresume, memory_order_relaxed))
			return true;
	return false;
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
	if (weft__fworker_await_handoff(w))
		return true;
	bool fresh = false;
	/* A lone worker whose fibers wait for fds searches nothing: nobody
	 * posts to it but outside threads, and its sleep in the poller ends
	 * at a post, a wake-up or a report alike, where a search would leave
	 * the reports in the poller until it slept (SPIN_NS late). Nor does
	 * a worker with hand-offs in flight (engine.h): its spin would take
	 * the CPU the pool thread needs (weft_blocking cost 2x a semaphore
	 * round trip with it on this 2-CPU machine). */
	bool search = (m->nworkers > 1 || !weft__fworker_fd_waiting(w)) &&
	              !atomic_load_explicit(&w->handoffs, memory_order_relaxed);
	/* Search for a while, if few others do (or once more, for a lone task
	 * seen just before sleeping): a look now and then, at a few victims. */
	if (search && (mw->recheck || mw->spinning ||
	               (room_for(m, 0) &&
	                (mw->spinning = weft__idle_start_search(&m->idle, m->max_spinning))))) {
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
	bool was_spinning = mw->spinning;
	(void)stop_spinning(m, mw);
	/* Announce, take the watch if it is vacant and anyone is awake, then
	 * look everywhere once more (no lost wake-up: a post makes its task
	 * visible before it reads the idle counts). */
	weft__idle_join(&m->idle, &mw->idler);
	weft__idle_awake(&m->idle, -1);
	(void)weft__watch_keep(&m->idle, &mw->idler);
	/* Every poster has now either published its task or will see this
	 * worker idle (membarrier.h); a barrier that failed leaves this round
	 * awake. A lone worker has no such poster (an outside post's CAS is
	 * seq_cst): no barrier, a system call less per sleep. */
	bool unsure = m->nworkers > 1 && weft__membarrier_usable() && !weft__membarrier();
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
	} else if (found && was_spinning) {
		/* Posts that saw it searching woke nobody: it takes the first
		 * task as a searcher, and wakes another for the rest (next). A
		 * sched.wait_task.mn.w8 hung so under TSan: 7 of 8 gates queued
		 * beside 7 sleeping workers, no wake-up ever made. */
		weft__idle_resume_search(&m->idle);
		mw->spinning = true;
	}
	mw->recheck = (fresh && !found) || unsure;
	return true;
}

/* A fiber of w's woken by another thread: onto w's resume queue, and w
 * woken if it sleeps; if w is busy, a searcher or the watcher takes it
 * once it sat there (see "Fibers that move"). */
static void on_wake(weft__fworker *w, weft_task *t)
{
	weft__mn_resume_push(of(w), t);
	weft__fworker_wake(w);
}

/* The poller woke several fibers here at once (a burst of fd reports after
 * a quiet spell, when the watch may be off duty): as a burst of posts, the
 * surplus may wake a sleeper, so that the fibers spread rather than wait
 * their turn on this worker. The pushes, then the idle counts. */
static void on_reported(weft__fworker *w)
{
	mn_worker *mw = of(w);
	mn *m = model_of(w);
	if (atomic_load_explicit(&mw->nresume, memory_order_relaxed) < 2 || m->nworkers < 2)
		return;
	atomic_thread_fence(memory_order_seq_cst);
	if (weft__idle_wanted(&m->idle) && room_for(m, 1))
		wake_one(m, mw);
}

static const weft__fiber_ops ops = {
        .reported = on_reported,
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
