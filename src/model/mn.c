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
 * injection queue; then it steals from the other deques, from a random
 * victim on. With nothing found it spins a little, then joins the idle
 * list (src/core/idle.h: throttled wake-ups that ramp up one worker at a
 * time) and sleeps in its own poller until work, a timer, an fd event or
 * a wake-up.
 *
 * Lost wake-ups: a post makes its task visible (deque store, then a full
 * fence; or the inbox's seq_cst CAS) before it reads the idle counts; an
 * idle worker joins the idle list (seq_cst) before it re-checks every
 * place work can be. Wake-ups of a parked fiber go through its worker's
 * inbox, which the engine pairs with the worker's sleeping flag.
 *
 * Policies: priority and fifo order the injection queue, i.e. the tasks
 * posted from outside; tasks posted by tasks run work-first on their
 * worker and may be stolen, so their priorities are not kept (best effort:
 * a worker's own tasks before stolen ones). random, psjf and mlfq need one
 * queue that sees every task and are refused. */
#include <stdio.h>
#include <string.h>

#include "core/completion.h"
#include "core/deque.h"
#include "core/idle.h"
#include "core/internal.h"
#include "core/lock.h"
#include "core/observe.h"
#include "core/spin.h"
#include "core/task_list.h"
#include "fiber/engine.h"
#include "obs/probes.h"

#define INJECTED_EVERY 61 /* picks between looks at the injection queue first */
#define SPIN_ROUNDS    32
#define SPIN_PAUSES    16 /* between looks of an idle worker, ~0.4 us */

typedef struct mn_worker {
	weft__fworker fw;
	weft__deque deque;
	/* Owner only. */
	weft__task_list resume; /* started fibers to run again, FIFO */
	unsigned picks;
	bool prefer_new; /* last pick was a resumed fiber */
	bool spinning;   /* counted in idle.nspinning */
	uint64_t rng;
	weft__idler idler;
} mn_worker;

typedef struct mn {
	weft_rt *rt;
	int nworkers;

	WEFT__ALIGNED weft__inbox injected; /* outside posts, not yet queued */
	WEFT__ALIGNED weft__lock lock;
	weft__readyq queue; /* under lock */
	_Atomic size_t queue_len;

	weft__idle idle;
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

static void wake_one(mn *m)
{
	weft__idler *i = weft__idle_claim(&m->idle);
	if (i)
		kick(i, NULL);
}

static bool has_work(mn *m, mn_worker *self)
{
	if (self->resume.head || !weft__inbox_empty(&self->fw.inbox) ||
	    !weft__inbox_empty(&m->injected) ||
	    atomic_load_explicit(&m->queue_len, memory_order_relaxed) != 0)
		return true;
	for (int i = 0; i < m->nworkers; i++)
		if (weft__deque_size_hint(&m->workers[i].deque) > 0)
			return true;
	return false;
}

/* ------------------------------------------------------------ queues */

static void inject(mn *m, weft_task *t)
{
	weft__lock_acquire(&m->lock);
	weft__readyq_push(&m->queue, t);
	atomic_store_explicit(&m->queue_len, m->queue.len, memory_order_relaxed);
	weft__lock_release(&m->lock);
}

static weft_task *take_injected(mn *m)
{
	if (weft__inbox_empty(&m->injected) &&
	    atomic_load_explicit(&m->queue_len, memory_order_relaxed) == 0)
		return NULL;
	weft__lock_acquire(&m->lock);
	for (weft_task *t = weft__inbox_take(&m->injected); t;) {
		weft_task *next = t->next_;
		weft__readyq_push(&m->queue, t);
		t = next;
	}
	weft_task *t = weft__readyq_pop(&m->queue);
	atomic_store_explicit(&m->queue_len, m->queue.len, memory_order_relaxed);
	weft__lock_release(&m->lock);
	return t;
}

static weft_task *steal(mn *m, mn_worker *self)
{
	int n = m->nworkers;
	if (n < 2)
		return NULL;
	self->rng = self->rng * 6364136223846793005ull + 1442695040888963407ull;
	int start = (int)((self->rng >> 33) % (uint64_t)n);
	for (int i = 0; i < n; i++) {
		mn_worker *v = &m->workers[(start + i) % n];
		if (v == self)
			continue;
		bool lost;
		do {
			lost = false;
			weft_task *t = weft__deque_steal(&v->deque, &lost);
			if (t) {
				atomic_store_explicit(&self->fw.steals, self->fw.steals + 1,
				                      memory_order_relaxed);
				WEFT__PROBE2(task__steal, self->fw.index, 1);
				weft__trace(m->rt, WEFT__TRACE_STEAL, NULL, false);
				return t;
			}
		} while (lost);
	}
	return NULL;
}

/* ------------------------------------------------------------ fiber ops */

static void on_ready(weft__fworker *w, weft_task *t, weft__ready_how how)
{
	mn_worker *mw = of(w);
	mn *m = model_of(w);
	if (how != WEFT__READY_POSTED) {
		weft__task_list_append(&mw->resume, t);
		return;
	}
	if (!weft__deque_push(&mw->deque, t))
		inject(m, t);                      /* full: let every worker see it */
	atomic_thread_fence(memory_order_seq_cst); /* the task, then the idle counts */
	if (weft__idle_wanted(&m->idle))
		wake_one(m);
}

static weft_task *take_awaited(weft__fworker *w, const weft_task *t, const weft_group *g)
{
	mn_worker *mw = of(w);
	weft_task *x = weft__deque_pop(&mw->deque);
	if (!x || x == t || (g && x->group_ == g))
		return x;
	weft__deque_push(&mw->deque, x); /* back where it was: there is room */
	return NULL;
}

static weft_task *pick_local(mn *m, mn_worker *mw)
{
	weft_task *t;
	if (++mw->picks % INJECTED_EVERY == 0 && (t = take_injected(m)))
		return t;
	if (mw->resume.head && !(mw->prefer_new && weft__deque_size_hint(&mw->deque) > 0)) {
		mw->prefer_new = true;
		return weft__task_list_pop(&mw->resume);
	}
	mw->prefer_new = false;
	if ((t = weft__deque_pop(&mw->deque)))
		return t;
	if ((t = weft__task_list_pop(&mw->resume))) {
		mw->prefer_new = true;
		return t;
	}
	if ((t = take_injected(m)))
		return t;
	return steal(m, mw);
}

static weft_task *next(weft__fworker *w)
{
	mn_worker *mw = of(w);
	mn *m = model_of(w);
	weft_task *t = pick_local(m, mw);
	if (t && mw->spinning) {
		/* A woken worker found work: if it was the last one looking and
		 * more work remains, the next one wakes (ramp up). */
		mw->spinning = false;
		if (atomic_fetch_sub(&m->idle.nspinning, 1) == 1 && has_work(m, mw))
			wake_one(m);
	}
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

static const weft__worker_sums sums = {sum_finished, sum_posted};

static bool idle(weft__fworker *w)
{
	mn_worker *mw = of(w);
	mn *m = model_of(w);
	weft__notify_quiescent(&m->rt->done, &sums, m);
	if (atomic_load(&m->stopping))
		return false; /* destroy set it after quiescence: no work can come */
	/* Look quietly for a while: reads only, and seldom, since each read
	 * of another worker's line makes its next post pay to take it back. */
	for (int i = 0; i < SPIN_ROUNDS; i++) {
		if (has_work(m, mw))
			return true;
		/* Its own inbox is where a wake-up of one of its fibers lands
		 * (a hand-off from another worker): look at it at every pause,
		 * so a ping-pong across workers is not paced by the scan. */
		for (int k = 0; k < SPIN_PAUSES; k++) {
			weft__cpu_relax();
			if (!weft__inbox_empty(&w->inbox))
				return true;
		}
	}
	if (mw->spinning) {
		mw->spinning = false;
		atomic_fetch_sub(&m->idle.nspinning, 1);
	}
	weft__idle_join(&m->idle, &mw->idler);
	if (!has_work(m, mw) && !atomic_load(&m->stopping))
		weft__fworker_sleep(w); /* until work, a timer, an fd event or a kick */
	mw->spinning = weft__idle_leave(&m->idle, &mw->idler);
	return true;
}

static const weft__fiber_ops ops = {
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
		wake_one(m);
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
	weft__readyq_init(&m->queue, &rt->cfg);
	rt->model_state = m;
	int rc = 0, started = 0;
	for (int i = 0; i < n && rc == 0; i++) {
		mn_worker *mw = &m->workers[i];
		mw->rng = rt->cfg.seed ^ ((uint64_t)i * 0x9e3779b97f4a7c15ull);
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
};
