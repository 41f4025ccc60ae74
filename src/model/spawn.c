/* Model spawn: one kernel thread created and joined per task — the approach
 * the seed argues against, kept so applications can be measured against it.
 *
 * cfg.workers bounds how many task threads are alive at once; each live
 * thread holds a slot whose number is its weft_worker_index(). A post with
 * a free slot creates a thread at once; otherwise the task waits in the
 * policy's ready queue. A finishing thread hands its slot to the next queued
 * task by creating that task's thread, which joins its predecessor as its
 * first act, so every thread is joined. The last thread of a chain leaves
 * itself in its slot to be joined by the next creator of that slot or by
 * destroy. Thread creation dominates the cost, so one mutex and one
 * condition variable guard everything. */
#include <stdlib.h>

#include "core/internal.h"
#include "core/standin.h"

typedef struct slot {
	struct spawn *m;
	int index;
	pthread_t thread;  /* current or last thread of this slot */
	bool joinable;     /* thread exited and nobody joined it yet */
	bool busy;         /* a task thread owns the slot */
	pthread_t to_join; /* predecessor the new thread must join */
	bool has_to_join;
	weft_task *task; /* the task the slot's thread runs */
} slot;

typedef struct spawn {
	weft_rt *rt;
	pthread_mutex_t lock;
	pthread_cond_t idle; /* signalled when finished catches up with posted */
	weft__readyq ready;  /* tasks waiting for a free slot */
	/* Posted by tasks while every slot was busy, newest first: a task
	 * waiting inside its task runs these first (spawn_help); everyone
	 * else sees them in the ready queue, in post order (take_next). */
	weft_task *recent;
	uint64_t posted, finished, cancelled, threads_created;
	/* Set by stop once every task finished, before it joins the threads:
	 * a post from outside that was admitted before destroy closed the
	 * runtime but comes this late starts nothing (WEFT_ESHUTDOWN). A
	 * deferred task destroy released earlier (closing, not stopped) is
	 * still started. */
	bool stopped;
	int nslots;
	slot slots[];
} spawn;

static size_t state_size(int nslots)
{
	return sizeof(spawn) + (size_t)nslots * sizeof(slot);
}

static void *task_thread(void *arg);

/* Moves recent posts into the ready queue, oldest first. Caller holds
 * m->lock. */
static void merge_recent(spawn *m)
{
	weft_task *in_order = NULL;
	while (m->recent) {
		weft_task *t = m->recent;
		m->recent = t->next_;
		t->next_ = in_order;
		in_order = t;
	}
	while (in_order) {
		weft_task *next = in_order->next_;
		weft__readyq_push(&m->ready, in_order);
		in_order = next;
	}
}

/* The next queued task by the policy, recent posts included. Caller holds
 * m->lock. */
static weft_task *take_next(spawn *m)
{
	merge_recent(m);
	return weft__readyq_pop(&m->ready);
}

/* Starts a thread for t in s. Caller holds m->lock. */
static int launch(spawn *m, slot *s, weft_task *t)
{
	s->task = t;
	s->busy = true;
	if (s->joinable) {
		s->to_join = s->thread;
		s->has_to_join = true;
		s->joinable = false;
	}
	int rc = weft__worker_create(&s->thread, task_thread, s, m->rt, s->index);
	if (rc) {
		s->busy = false;
		if (s->has_to_join) {
			s->thread = s->to_join;
			s->joinable = true;
			s->has_to_join = false;
		}
		return rc;
	}
	m->threads_created++;
	return 0;
}

static void *task_thread(void *arg)
{
	slot *s = arg;
	spawn *m = s->m;
	weft_rt *rt = m->rt;

	pthread_mutex_lock(&m->lock);
	weft_task *t = s->task;
	if (s->has_to_join) {
		pthread_t prev = s->to_join;
		s->has_to_join = false;
		pthread_mutex_unlock(&m->lock);
		pthread_join(prev, NULL);
	} else {
		pthread_mutex_unlock(&m->lock);
	}
	weft__tls.rt = rt;
	weft__tls.index = s->index;

	for (;;) {
		bool ran = weft__run_task(rt, t);
		pthread_mutex_lock(&m->lock);
		m->finished++;
		m->cancelled += !ran;
		weft_task *next = take_next(m);
		if (next) {
			weft__dequeued(rt, 1);
			s->joinable = true; /* this thread, for the successor to join */
			if (launch(m, s, next) == 0) {
				pthread_mutex_unlock(&m->lock);
				break;
			}
			/* No thread for the successor: run it here rather than
			 * lose it. */
			s->joinable = false;
			s->busy = true;
			pthread_mutex_unlock(&m->lock);
			t = next;
			continue;
		}
		s->busy = false;
		s->joinable = true;
		if (m->finished == m->posted)
			pthread_cond_broadcast(&m->idle);
		pthread_mutex_unlock(&m->lock);
		break;
	}
	weft__tls.rt = NULL;
	weft__tls.index = -1;
	return NULL;
}

static int spawn_submit(weft_rt *rt, weft_task *t, bool from_task)
{
	spawn *m = rt->model_state;
	int rc = 0;
	pthread_mutex_lock(&m->lock);
	if (m->stopped) {
		rc = WEFT_ESHUTDOWN;
		goto out;
	}
	slot *free_slot = NULL;
	for (int i = 0; i < m->nslots && !free_slot; i++)
		if (!m->slots[i].busy)
			free_slot = &m->slots[i];
	if (free_slot && m->ready.len == 0 && !m->recent) {
		if ((rc = launch(m, free_slot, t)) != 0)
			goto out;
		weft__dequeued(rt, 1);
	} else if (from_task) {
		t->next_ = m->recent;
		m->recent = t;
	} else {
		/* Tasks' posts waiting on recent were made before this one:
		 * into the queue first, so that it keeps post order. */
		merge_recent(m);
		weft__readyq_push(&m->ready, t);
	}
	m->posted++;
out:
	if (rc)
		weft__dequeued(rt, 1); /* under the lock: destroy may free rt after it */
	pthread_mutex_unlock(&m->lock);
	if (!rc && !from_task)
		weft__standin_poke(rt); /* every thread blocked: compensation */
	return rc;
}

static void spawn_wait_all(weft_rt *rt)
{
	spawn *m = rt->model_state;
	pthread_mutex_lock(&m->lock);
	while (m->finished != m->posted)
		pthread_cond_wait(&m->idle, &m->lock);
	pthread_mutex_unlock(&m->lock);
}

static void join_all(spawn *m)
{
	for (int i = 0; i < m->nslots; i++) {
		slot *s = &m->slots[i];
		if (s->joinable) {
			pthread_join(s->thread, NULL);
			s->joinable = false;
		}
	}
}

static void spawn_stop(weft_rt *rt)
{
	spawn *m = rt->model_state;
	pthread_mutex_lock(&m->lock);
	while (m->finished != m->posted)
		pthread_cond_wait(&m->idle, &m->lock);
	m->stopped = true;
	pthread_mutex_unlock(&m->lock);
	join_all(m);
}

static void spawn_release(weft_rt *rt)
{
	spawn *m = rt->model_state;
	pthread_cond_destroy(&m->idle);
	pthread_mutex_destroy(&m->lock);
	weft__free(m, state_size(m->nslots));
	rt->model_state = NULL;
}

static int spawn_start(weft_rt *rt)
{
	int n = rt->cfg.workers;
	spawn *m = weft__alloc(state_size(n));
	if (!m)
		return WEFT_ENOMEM;
	m->rt = rt;
	m->nslots = n;
	weft__readyq_init(&m->ready, &rt->cfg);
	for (int i = 0; i < n; i++) {
		m->slots[i].m = m;
		m->slots[i].index = i;
	}
	if (pthread_mutex_init(&m->lock, NULL) != 0) {
		weft__free(m, state_size(n));
		return WEFT_ENOMEM;
	}
	if (pthread_cond_init(&m->idle, NULL) != 0) {
		pthread_mutex_destroy(&m->lock);
		weft__free(m, state_size(n));
		return WEFT_ENOMEM;
	}
	rt->model_state = m;
	return 0;
}

/* A task thread waiting inside its task (task.c) runs a queued task
 * itself: tasks are queued only while every slot is busy, which is when
 * waiting parents would otherwise wait for ever. The newest post from a
 * task first (most likely the child it waits for), so nested waits go
 * depth-first and stay as deep as the fork-join tree. A stand-in
 * (core/standin.c) runs it too, taking tasks in the policy's order. */
static bool spawn_help(weft_rt *rt)
{
	spawn *m = rt->model_state;
	pthread_mutex_lock(&m->lock);
	weft_task *t = weft__tls.standin ? NULL : m->recent;
	if (t)
		m->recent = t->next_;
	else
		t = take_next(m); /* a stand-in waits for nothing: the policy's order */
	if (t)
		weft__dequeued(rt, 1);
	pthread_mutex_unlock(&m->lock);
	if (!t)
		return false;
	bool ran = weft__run_task(rt, t);
	pthread_mutex_lock(&m->lock);
	m->finished++;
	m->cancelled += !ran;
	if (m->finished == m->posted)
		pthread_cond_broadcast(&m->idle);
	pthread_mutex_unlock(&m->lock);
	return true;
}

/* A task thread whose weft wait turned long (core/standin.c) holds no
 * task that others could not take: stand-ins run spawn_help, which takes
 * from the queue anyone may. */
static void spawn_block_begin(weft_rt *rt)
{
	(void)rt;
}

static bool spawn_has_queued(weft_rt *rt)
{
	spawn *m = rt->model_state;
	pthread_mutex_lock(&m->lock);
	bool queued = m->ready.len > 0 || m->recent;
	pthread_mutex_unlock(&m->lock);
	return queued;
}

static void spawn_stats(weft_rt *rt, weft_stats *s)
{
	spawn *m = rt->model_state;
	pthread_mutex_lock(&m->lock);
	s->posted += m->posted;
	s->run += m->finished - m->cancelled;
	s->cancelled += m->cancelled;
	pthread_mutex_unlock(&m->lock);
}

const weft__model_ops weft__model_spawn = {
        .name = "spawn",
        .configure = weft__config_run_to_completion,
        .start = spawn_start,
        .submit = spawn_submit,
        .wait_all = spawn_wait_all,
        .stop = spawn_stop,
        .release = spawn_release,
        .stats = spawn_stats,
        .help = spawn_help,
        .has_queued = spawn_has_queued,
        .block_begin = spawn_block_begin,
};
