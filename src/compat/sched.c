/* The seed scheduler's API (include/weft/compat/sched.h) on the public weft
 * API: one weft runtime per sched_t, one weft_task embedded in each task_t.
 *
 * weft has no "stopped" state, so the seed's SCHED_STOPPED is kept here: a
 * task posted while stopped waits in a FIFO list of held tasks, linked
 * through the task itself, until sched_execute, a run_now post or
 * sched_fini releases the list into the runtime. The list is stably sorted
 * by priority before it is released, because a worker may start the first
 * released task before the rest are posted: releasing in order makes one
 * worker run a batch in exact priority order, FIFO among equals, as if the
 * whole batch had been in the queue at once (the seed's model). Once
 * running, weft's own priority policy orders whatever is queued.
 *
 * queue_depth bounds the tasks that are waiting: held, or queued in the
 * runtime and not yet started. The count goes up in sched_post and down
 * when a worker starts the task (in trampoline), so a running task does not
 * occupy the queue, as in the seed, where a worker popped the heap before
 * running the task.
 *
 * Failures are said on stderr, not only returned: the seed's programs
 * ignore what sched_init returns (the seed's could fail only when memory
 * ran out), so a refused WEFT_* value or a runtime that cannot start would
 * otherwise surface as tasks that silently never ran ("Invalid sudoku map").
 * A failed sched_init leaves impl_ pointing at init_failed, so the calls
 * that follow say why nothing runs instead of failing quietly. */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include <weft/compat/sched.h>
#include <weft/weft.h>

#include "core/log.h"

struct weft_compat_sched {
	weft_rt *rt;
	pthread_mutex_t lock;          /* guards held_*, and state in sched_t */
	task_t *held_head, *held_tail; /* held tasks in post order */
	_Atomic long waiting;          /* held + queued and not started */
	long depth;
};

/* What impl_ points at after a failed sched_init: never dereferenced. */
static struct weft_compat_sched init_failed;

/* Says once per process, for each call, that sched_init had failed. */
static void report_init_failed(const char *call, atomic_flag *said)
{
	if (!atomic_flag_test_and_set(said))
		weft__log(WEFT_LOG_ERROR,
		          "weft: %s: sched_init failed (see above), so no task runs\n", call);
}

static bool init_fail(sched_t *sp, int num_workers, int queue_depth, const char *why)
{
	weft__log(WEFT_LOG_ERROR, "weft: sched_init(%d workers, queue depth %d) failed: %s\n",
	          num_workers, queue_depth, why);
	sp->impl_ = &init_failed;
	return false;
}

/* The seed's priorities are unsigned; weft's are signed. Flipping the top
 * bit maps 0 .. UINT64_MAX onto INT64_MIN .. INT64_MAX in order. */
static int64_t weft_priority(uint64_t pri)
{
	return (int64_t)(pri ^ (UINT64_C(1) << 63));
}

/* What weft runs for every compat task: the seed's call, with the worker
 * index as the second argument. */
static void trampoline(void *arg)
{
	task_t *tp = arg;
	atomic_fetch_sub_explicit(&tp->owner_->waiting, 1, memory_order_relaxed);
	tp->fptr(tp->args, weft_worker_index());
}

void task_init(task_t *tp, uint64_t pri, void (*fptr)(void *, int), void *args)
{
	if (!tp)
		return;
	memset(tp, 0, sizeof(*tp));
	tp->pri = pri;
	tp->fptr = fptr;
	tp->args = args;
	weft_task_init(&tp->task_, trampoline, tp);
}

bool sched_init(sched_t *sp, int num_workers, int queue_depth)
{
	if (!sp)
		return false;
	memset(sp, 0, sizeof(*sp));
	if (num_workers < 0)
		return init_fail(sp, num_workers, queue_depth, "num_workers is negative");
	if (queue_depth < 1)
		return init_fail(sp, num_workers, queue_depth, "queue_depth is less than 1");
	struct weft_compat_sched *s = calloc(1, sizeof(*s));
	if (!s)
		return init_fail(sp, num_workers, queue_depth, strerror(ENOMEM));
	int rc = pthread_mutex_init(&s->lock, NULL);
	if (rc != 0) {
		free(s);
		return init_fail(sp, num_workers, queue_depth, strerror(rc));
	}
	s->depth = queue_depth;

	weft_config cfg;
	weft_config_init(&cfg);
	cfg.workers = num_workers;
	/* weft frees a place when a worker takes a task, before trampoline
	 * counts it started, so this bound never refuses a post that the
	 * waiting count allowed; it only makes the statistics show the depth. */
	cfg.queue_capacity = queue_depth;
	weft_config eff;
	rc = weft_rt_create(&s->rt, &cfg);
	if (rc == 0)
		rc = weft_rt_config(s->rt, &eff);
	if (rc != 0) {
		if (s->rt)
			weft_rt_destroy(s->rt);
		pthread_mutex_destroy(&s->lock);
		free(s);
		return init_fail(sp, num_workers, queue_depth, weft_strerror(rc));
	}
	sp->num_workers = eff.workers;
	sp->queue_depth = queue_depth;
	sp->state = SCHED_STOPPED;
	sp->impl_ = s;
	return true;
}

/* ------------------------------------------------------------ held list */

static void hold(struct weft_compat_sched *s, task_t *tp)
{
	tp->held_ = 1;
	tp->held_next_ = NULL;
	if (s->held_tail)
		s->held_tail->held_next_ = tp;
	else
		s->held_head = tp;
	s->held_tail = tp;
}

/* Stable merge sort of a held list by pri: equal priorities keep post
 * order. Allocates nothing; O(n log n). */
static task_t *sort_by_pri(task_t *list)
{
	if (!list || !list->held_next_)
		return list;
	task_t *slow = list, *fast = list->held_next_;
	while (fast && fast->held_next_) {
		slow = slow->held_next_;
		fast = fast->held_next_->held_next_;
	}
	task_t *right = slow->held_next_;
	slow->held_next_ = NULL;
	task_t *a = sort_by_pri(list), *b = sort_by_pri(right);
	task_t head, *tail = &head;
	while (a && b) {
		if (b->pri < a->pri) {
			tail->held_next_ = b;
			b = b->held_next_;
		} else {
			tail->held_next_ = a;
			a = a->held_next_;
		}
		tail = tail->held_next_;
	}
	tail->held_next_ = a ? a : b;
	return head.held_next_;
}

/* Hands tp to the runtime. weft refuses only when WEFT_QUEUE_CAPACITY was
 * set below queue_depth (the bound sched_init asks for never refuses, see
 * there); the caller then keeps the task held for the next release rather
 * than block with the lock held. */
static int submit(struct weft_compat_sched *s, task_t *tp)
{
	return weft_post(s->rt, &tp->task_);
}

/* Releases every held task, in priority order. Caller holds s->lock. Tasks
 * the runtime cannot take now stay held, in order, for the next release. */
static void release_held(struct weft_compat_sched *s)
{
	task_t *t = sort_by_pri(s->held_head);
	s->held_head = s->held_tail = NULL;
	while (t) {
		task_t *next = t->held_next_;
		t->held_ = 0;
		if (submit(s, t) != 0) {
			s->held_head = t;
			while (t->held_next_)
				t = t->held_next_;
			s->held_tail = t;
			for (t = s->held_head; t; t = t->held_next_)
				t->held_ = 1;
			return;
		}
		t = next;
	}
}

/* ------------------------------------------------------------ API */

bool sched_post(sched_t *sp, task_t *tp, bool run_now)
{
	static atomic_flag said = ATOMIC_FLAG_INIT;
	if (sp && sp->impl_ == &init_failed) {
		report_init_failed("sched_post", &said);
		return false;
	}
	if (!sp || !sp->impl_ || !tp || !tp->fptr)
		return false;
	struct weft_compat_sched *s = sp->impl_;
	bool ok = false;

	pthread_mutex_lock(&s->lock);
	weft_task_state st = weft_task_state_of(&tp->task_);
	if (tp->held_ || st == WEFT_TASK_QUEUED || st == WEFT_TASK_RUNNING)
		goto out; /* already posted and not finished */
	if (atomic_load(&s->waiting) >= s->depth)
		goto out; /* full: the seed's heap_full */

	/* (Re)bind the embedded weft task: task_init may have been skipped
	 * for a zeroed task, and pri may have changed since the last post. */
	weft_task_init(&tp->task_, trampoline, tp);
	weft_task_set_priority(&tp->task_, weft_priority(tp->pri));
	tp->owner_ = s;
	atomic_fetch_add(&s->waiting, 1);

	if (run_now) {
		sp->state = SCHED_RUNNING;
		hold(s, tp); /* released with the rest, in priority order */
		release_held(s);
	} else if (sp->state == SCHED_STOPPED) {
		hold(s, tp);
	} else if (submit(s, tp) != 0) {
		/* Only when WEFT_QUEUE_CAPACITY < queue_depth: keep it for
		 * the next release rather than lose it. */
		hold(s, tp);
	}
	ok = true;
out:
	pthread_mutex_unlock(&s->lock);
	return ok;
}

void sched_execute(sched_t *sp)
{
	static atomic_flag said = ATOMIC_FLAG_INIT;
	if (sp && sp->impl_ == &init_failed) {
		report_init_failed("sched_execute", &said);
		return;
	}
	if (!sp || !sp->impl_)
		return;
	struct weft_compat_sched *s = sp->impl_;
	pthread_mutex_lock(&s->lock);
	sp->state = SCHED_RUNNING;
	for (;;) {
		release_held(s);
		pthread_mutex_unlock(&s->lock);
		if (weft_wait_all(s->rt) != 0)
			return; /* from one of its own tasks: cannot wait here */
		pthread_mutex_lock(&s->lock);
		if (!s->held_head)
			break;
		/* Left over by a full weft queue (WEFT_QUEUE_CAPACITY), or
		 * posted while we waited and kept back: go round again. */
	}
	sp->state = SCHED_STOPPED;
	pthread_mutex_unlock(&s->lock);
}

void sched_fini(sched_t *sp)
{
	if (sp && sp->impl_ == &init_failed)
		sp->impl_ = NULL; /* nothing was acquired */
	if (!sp || !sp->impl_)
		return;
	struct weft_compat_sched *s = sp->impl_;
	if (weft_rt_current() == s->rt)
		return;
	pthread_mutex_lock(&s->lock);
	sp->state = SCHED_DONE;
	while (s->held_head) {
		release_held(s);
		if (s->held_head) {
			pthread_mutex_unlock(&s->lock);
			weft_wait_all(s->rt);
			pthread_mutex_lock(&s->lock);
		}
	}
	pthread_mutex_unlock(&s->lock);

	weft_rt_destroy(s->rt); /* drains, joins the workers */
	pthread_mutex_destroy(&s->lock);
	free(s);
	sp->impl_ = NULL;
}
