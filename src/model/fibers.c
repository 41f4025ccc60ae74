/* Model fibers: every task is a fiber on one worker thread (M:1), in the
 * order of a pluggable policy, with optional timer preemption.
 *
 * The fiber engine (src/fiber/engine.h) runs the worker; this file only
 * keeps the ready work, in four places, picked in this order:
 *
 *   front   fibers woken from a join (weft_wait, weft_group_wait), FIFO;
 *   lifo    tasks posted by a task that then joined, newest first;
 *   ready   the policy's queue: posts from outside, tasks posted by a task
 *           that did not join (moved there at its next switch, in post
 *           order), fibers that yielded, were preempted or were woken from
 *           any other wait;
 *   side    posts of the running task, not yet placed (a join sends them
 *           to lifo, anything else to ready).
 *
 * Why work-first at joins: a task that waits for the tasks it posted
 * cannot go on until they finish, so running them first is what running
 * them itself would do (Cilk, oneTBB and Go's runnext do the same). Under
 * the policy's order alone (FIFO, or priority with equal priorities) a
 * fork-join tree starts every task before any finishes, and every waiting
 * task holds a stack: a fib(23) tree held 28,000 stacks at once and the
 * cost per call grew with the tree. Work-first keeps the waiting tasks to
 * about the depth of the tree. Under the random policy joins do not
 * reorder anything: random exists to explore every interleaving. */
#include <string.h>

#include "core/completion.h"
#include "core/internal.h"
#include "core/task_list.h"
#include "fiber/engine.h"

typedef struct fibers {
	weft_rt *rt;
	/* Worker only. */
	weft__task_list front, side;
	weft_task *lifo;
	weft__readyq ready;
	bool work_first;

	_Atomic int stopping;
	weft__fworker w;
} fibers;

static fibers *of(weft__fworker *w)
{
	return WEFT__CONTAINER(w, fibers, w);
}

static void place_side(fibers *m)
{
	weft_task *t;
	while ((t = weft__task_list_pop(&m->side)))
		weft__readyq_push(&m->ready, t);
}

/* Post order between a task's posts waiting on side and a post from
 * outside: each carries its post key (core/task_list.h), so the side posts
 * made before the outside one go to the queue ahead of it. */
static void place_side_before(fibers *m, uint64_t key)
{
	weft_task *t;
	while (m->side.head && m->side.head->seq_ < key && (t = weft__task_list_pop(&m->side)))
		weft__readyq_push(&m->ready, t);
}

static void on_ready(weft__fworker *w, weft_task *t, weft__ready_how how)
{
	fibers *m = of(w);
	if (how == WEFT__READY_POSTED && m->work_first) {
		weft__task_list_append(&m->side, t);
		return;
	}
	if (how == WEFT__READY_ARRIVED && !t->fiber_)
		place_side_before(m, t->seq_); /* a post from outside */
	if (how == WEFT__READY_YIELDED)
		place_side(m); /* posted before it yielded: ahead of it */
	weft__fiber *f = t->fiber_;
	if (f && f->joining && how != WEFT__READY_YIELDED)
		weft__task_list_append(&m->front, t);
	else
		weft__readyq_push(&m->ready, t);
}

static void on_join(weft__fworker *w)
{
	fibers *m = of(w);
	weft_task *t;
	while ((t = weft__task_list_pop(&m->side))) { /* the last posted ends on top */
		t->next_ = m->lifo;
		m->lifo = t;
	}
}

static weft_task *take_awaited(weft__fworker *w, const weft_task *t, const weft_group *g)
{
	fibers *m = of(w);
	weft_task *prev = NULL, *found = NULL, *found_prev = NULL;
	for (weft_task *x = m->side.head; x; prev = x, x = x->next_)
		if (x == t || (g && x->group_ == g)) { /* the newest match */
			found = x;
			found_prev = prev;
		}
	if (!found)
		return NULL;
	if (found_prev)
		found_prev->next_ = found->next_;
	else
		m->side.head = found->next_;
	if (m->side.tail == found)
		m->side.tail = found_prev;
	return found;
}

static weft_task *next(weft__fworker *w)
{
	fibers *m = of(w);
	place_side(m);
	weft_task *t = weft__task_list_pop(&m->front);
	if (t)
		return t;
	if ((t = m->lifo)) {
		m->lifo = t->next_;
		return t;
	}
	return weft__readyq_pop(&m->ready);
}

static void charge(weft__fworker *w, weft_task *t)
{
	fibers *m = of(w);
	m->ready.ops->charge(&m->ready, t);
}

static void boost(weft__fworker *w)
{
	fibers *m = of(w);
	m->ready.ops->boost(&m->ready);
}

static uint64_t sum_finished(void *state)
{
	return atomic_load(&((fibers *)state)->w.finished);
}

static uint64_t sum_posted(void *state)
{
	return atomic_load(&((fibers *)state)->w.posted);
}

static const weft__worker_sums sums = {sum_finished, sum_posted};

static bool idle(weft__fworker *w)
{
	fibers *m = of(w);
	weft__notify_quiescent(&m->rt->done, &sums, m);
	if (atomic_load(&m->stopping))
		return false; /* destroy set it after quiescence: no work can come */
	if (!weft__fworker_await_handoff(w))
		weft__fworker_sleep(w);
	return true;
}

static const weft__fiber_ops ops = {
        .ready = on_ready,
        .next = next,
        .idle = idle,
        .join = on_join,
        .take_awaited = take_awaited,
        .charge = charge,
        .boost = boost,
};

/* ------------------------------------------------------------ model ops */

static void fibers_wait_all(weft_rt *rt)
{
	fibers *m = rt->model_state;
	weft__wait_quiescent(&rt->done, &sums, m);
}

static void push_task(void *state, weft_task *t)
{
	weft__fworker_push_remote(&((fibers *)state)->w, t);
}

static int fibers_submit(weft_rt *rt, weft_task *t, bool from_task)
{
	fibers *m = rt->model_state;
	if (from_task) {
		t->seq_ = weft__task_post_key(rt);
		weft__fworker_post_local(&m->w, t);
		return 0;
	}
	t->seq_ = weft__outside_post_key(t->seq_); /* from its ticket */
	t->fiber_ = NULL;
	push_task(m, t);
	return 0;
}

static void fibers_release(weft_rt *rt)
{
	fibers *m = rt->model_state;
	weft__fworker_release(&m->w);
	weft__free(m, sizeof(*m));
	rt->model_state = NULL;
}

static int fibers_start(weft_rt *rt)
{
	fibers *m = weft__alloc(sizeof(*m));
	if (!m)
		return WEFT_ENOMEM;
	memset(m, 0, sizeof(*m));
	m->rt = rt;
	rt->model_state = m;
	weft__readyq_init(&m->ready, &rt->cfg);
	m->work_first = rt->cfg.policy != WEFT_POLICY_RANDOM;
	int rc = weft__fworker_init(&m->w, rt, &ops, m, 0);
	if (rc) {
		weft__free(m, sizeof(*m));
		rt->model_state = NULL;
		return rc;
	}
	m->w.charges = m->ready.ops->charge != NULL;
	m->w.boosts = m->ready.ops->boost != NULL;
	if ((rc = weft__fworker_start(&m->w)) != 0) {
		fibers_release(rt);
		return rc;
	}
	return 0;
}

static void fibers_stop(weft_rt *rt)
{
	fibers *m = rt->model_state;
	fibers_wait_all(rt);
	atomic_store(&m->stopping, 1);
	weft__fworker_wake(&m->w);
	weft__fworker_join(&m->w);
}

static void fibers_stats(weft_rt *rt, weft_stats *s)
{
	fibers *m = rt->model_state;
	weft__fworker_stats(&m->w, s);
	s->posted += atomic_load(&m->rt->done.external_posted) -
	             atomic_load(&m->rt->done.external_refused);
}

/* M:1: one worker runs every fiber, whatever was asked. */
static int fibers_configure(weft_rt *rt)
{
	rt->cfg.workers = 1;
	return 0;
}

const weft__model_ops weft__model_fibers = {
        .name = "fibers",
        .configure = fibers_configure,
        .start = fibers_start,
        .submit = fibers_submit,
        .wait_all = fibers_wait_all,
        .stop = fibers_stop,
        .release = fibers_release,
        .stats = fibers_stats,
        .print_stats = weft__fworker_print_stats,
        .take_back = weft__fiber_take_back,
};
