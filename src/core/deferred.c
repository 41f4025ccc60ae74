/* Deferred tasks: posted now, queued later. weft_post_at holds a task until
 * a time (a min-heap served by one timer thread per runtime, started at the
 * first delayed post); weft_post_when holds it until other tasks finished
 * (a continuation record on each predecessor's waiter list).
 *
 * A deferred task is admitted like any post when it is posted (state
 * QUEUED, capacity, group): weft_wait, groups and weft_wait_all see it from
 * then on. rt->deferred counts the tasks held here; when one is released it
 * enters the model as a post from outside (weft__deferred_submit).
 *
 * While a task is held it is in no ready queue, so the fields a queue
 * would use hold its place here instead: quanta_ the predecessors still
 * running, next_ the batch the timer thread releases. Both are reset
 * before it is queued. A delayed task has DELAYED in its state word until
 * it is released, which is how weft_cancel knows to look for it here. */
#include <limits.h>
#include <string.h>

#include "core/completion.h"
#include "core/futex.h"
#include "core/internal.h"
#include "core/observe.h"
#include "sync/waiter.h"

/* A heap entry carries its keys, so that ordering never reads the tasks
 * (scattered in memory: a cache miss each). */
typedef struct held {
	int64_t due;
	uint32_t armed; /* arming order among equal deadlines */
	weft_rt *rt;
	weft_task *t;
} held;

typedef struct weft__delays {
	struct weft__delays *next_heap; /* every runtime's heap (weft_cancel) */
	pthread_mutex_t lock;
	held *heap; /* min-heap on (due, armed) */
	size_t len, cap;
	uint32_t armed; /* arming order of the next delayed post */
	bool stop, started;
	pthread_t thread;
	/* The timer thread sleeps on it until the earliest deadline; it
	 * changes when an earlier one arrives or at stop. */
	_Atomic uint32_t seq;
} weft__delays;

/* ------------------------------------------------------------ release */

static void deferred_done(weft_rt *rt)
{
	if (atomic_fetch_sub(&rt->deferred, 1) == 1)
		weft__futex_wake((_Atomic uint32_t *)&rt->deferred, INT_MAX);
}

/* Ends a held task as cancelled: it leaves its capacity, group and
 * waiters as a cancelled queued task would. */
static void cancel_held(weft_rt *rt, weft_task *t)
{
	atomic_fetch_add_explicit(&rt->deferred_cancelled, 1, memory_order_relaxed);
	weft__dequeued(rt, 1);
	weft__task_finish(t, WEFT_TASK_CANCELLED);
	deferred_done(rt);
}

/* Queues a held task that is due: a post from outside the workers as far
 * as the model and quiescence go (the model's submit may be refused only
 * when it cannot start a thread: then the task is cancelled, not lost). */
static void release_held(weft_rt *rt, weft_task *t)
{
	t->quanta_ = 0;
	t->epoch_ = 0;
	t->posted_ns_ = weft__observed(rt) ? weft__post_stamp(rt) : 0;
	uint32_t was = atomic_fetch_and((_Atomic uint32_t *)&t->state_, ~WEFT__DELAYED);
	if ((was & WEFT__CANCEL) || atomic_load(&rt->cancelling) ||
	    weft__group_cancelled(t->group_)) {
		cancel_held(rt, t);
		return;
	}
	weft__trace(rt, WEFT__TRACE_POST, t, false);
	weft__completion *c = &rt->done;
	t->seq_ = atomic_fetch_add(&c->external_posted, 1); /* its ticket, as weft_post's */
	int rc = rt->model->submit(rt, t, false);           /* releases capacity if it refuses */
	if (rc) {
		weft__external_refused(c);
		weft__task_finish(t, WEFT_TASK_CANCELLED);
	}
	atomic_fetch_add_explicit(&c->external_left, 1, memory_order_release);
	deferred_done(rt);
}

/* ------------------------------------------------------------ the heap */

static bool earlier(const held *a, const held *b)
{
	return a->due < b->due || (a->due == b->due && (int32_t)(a->armed - b->armed) < 0);
}

static void place(weft__delays *d, size_t i, held h)
{
	d->heap[i] = h;
}

static void sift_up(weft__delays *d, size_t i)
{
	held h = d->heap[i];
	while (i > 0) {
		size_t parent = (i - 1) / 2;
		if (!earlier(&h, &d->heap[parent]))
			break;
		place(d, i, d->heap[parent]);
		i = parent;
	}
	place(d, i, h);
}

static void sift_down(weft__delays *d, size_t i)
{
	held h = d->heap[i];
	for (;;) {
		size_t child = 2 * i + 1;
		if (child >= d->len)
			break;
		if (child + 1 < d->len && earlier(&d->heap[child + 1], &d->heap[child]))
			child++;
		if (!earlier(&d->heap[child], &h))
			break;
		place(d, i, d->heap[child]);
		i = child;
	}
	place(d, i, h);
}

static void remove_at(weft__delays *d, size_t i)
{
	held last = d->heap[--d->len];
	if (i == d->len)
		return;
	d->heap[i] = last;
	if (i > 0 && earlier(&last, &d->heap[(i - 1) / 2]))
		sift_up(d, i);
	else
		sift_down(d, i);
}

/* ------------------------------------------------------------ the timer thread */

/* Pops every due task (linked through next_, in deadline order) in one
 * hold of the lock, then queues them outside it. */
static void *timer_main(void *arg)
{
	weft_rt *rt = arg;
	weft__delays *d = rt->delays;
	pthread_mutex_lock(&d->lock);
	while (!d->stop) {
		int64_t now = weft_clock_ns(), wait = -1;
		weft_task *due = NULL, **tail = &due;
		while (d->len > 0 && d->heap[0].due <= now) {
			weft_task *t = d->heap[0].t;
			remove_at(d, 0);
			t->next_ = NULL;
			*tail = t;
			tail = &t->next_;
		}
		if (due) {
			pthread_mutex_unlock(&d->lock);
			while (due) {
				weft_task *next = due->next_;
				release_held(rt, due);
				due = next;
			}
			pthread_mutex_lock(&d->lock);
			continue;
		}
		if (d->len > 0)
			wait = d->heap[0].due - now;
		uint32_t seq = atomic_load(&d->seq);
		pthread_mutex_unlock(&d->lock);
		weft__futex_wait(&d->seq, seq, wait);
		pthread_mutex_lock(&d->lock);
	}
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

/* Every runtime's heap, for weft_cancel, which knows the task only. */
static pthread_mutex_t heaps_lock = PTHREAD_MUTEX_INITIALIZER;
static weft__delays *heaps;

/* Held across fork (runtime.c), in weft_cancel's order: the list, then
 * every heap on it. The child's weft_cancel scans the parent's heaps too. */
void weft__deferred_fork_prepare(void)
{
	pthread_mutex_lock(&heaps_lock);
	for (weft__delays *d = heaps; d; d = d->next_heap)
		pthread_mutex_lock(&d->lock);
}

void weft__deferred_fork_done(void)
{
	for (weft__delays *d = heaps; d; d = d->next_heap)
		pthread_mutex_unlock(&d->lock);
	pthread_mutex_unlock(&heaps_lock);
}

static weft__delays *delays_of(weft_rt *rt);

void weft__deferred_testing_lock(weft_rt *rt, bool take)
{
	pthread_mutex_t *l = &heaps_lock;
	if (rt) {
		weft__delays *d = delays_of(rt);
		if (!d)
			return;
		l = &d->lock;
	}
	take ? pthread_mutex_lock(l) : pthread_mutex_unlock(l);
}

/* The runtime's delay heap, made on first use. */
static weft__delays *delays_of(weft_rt *rt)
{
	weft__delays *d = atomic_load(&rt->delays);
	if (d)
		return d;
	d = weft__alloc(sizeof(*d));
	if (!d)
		return NULL;
	memset(d, 0, sizeof(*d));
	if (pthread_mutex_init(&d->lock, NULL) != 0) {
		weft__free(d, sizeof(*d));
		return NULL;
	}
	weft__delays *none = NULL;
	if (!atomic_compare_exchange_strong(&rt->delays, &none, d)) {
		pthread_mutex_destroy(&d->lock);
		weft__free(d, sizeof(*d));
		return none;
	}
	pthread_mutex_lock(&heaps_lock);
	d->next_heap = heaps;
	heaps = d;
	pthread_mutex_unlock(&heaps_lock);
	return d;
}

int weft__defer_until(weft_rt *rt, weft_task *t, int64_t deadline_ns)
{
	weft__delays *d = delays_of(rt);
	if (!d)
		return WEFT_ENOMEM;
	pthread_mutex_lock(&d->lock);
	/* A cancelling destroy sets cancelling, then empties the heap under
	 * this lock: a post that checked before it was set but comes here
	 * after the heap was emptied would be held until its deadline, and
	 * destroy with it. Seen here, under the lock, either the heap is
	 * emptied after this task is in it, or this post is refused. */
	if (atomic_load(&rt->cancelling) ||
	    (t->fn_ == weft__periodic_run && atomic_load(&rt->closing))) {
		pthread_mutex_unlock(&d->lock);
		return WEFT_ESHUTDOWN;
	}
	if (!d->started) {
		int rc = weft__thread_create(&d->thread, timer_main, rt, "timer", true);
		if (rc) {
			pthread_mutex_unlock(&d->lock);
			return rc;
		}
		d->started = true;
	}
	if (d->len == d->cap) {
		size_t cap = d->cap ? 2 * d->cap : 64;
		held *heap = weft__alloc(cap * sizeof(*heap));
		if (!heap) {
			pthread_mutex_unlock(&d->lock);
			return WEFT_ENOMEM;
		}
		if (d->len)
			memcpy(heap, d->heap, d->len * sizeof(*heap));
		if (d->heap)
			weft__free(d->heap, d->cap * sizeof(*heap));
		d->heap = heap;
		d->cap = cap;
	}
	atomic_fetch_or((_Atomic uint32_t *)&t->state_, WEFT__DELAYED);
	place(d, d->len++, (held){deadline_ns, d->armed++, rt, t});
	sift_up(d, d->len - 1);
	if (d->heap[0].t == t) {
		atomic_fetch_add(&d->seq, 1);
		weft__futex_wake(&d->seq, 1);
	}
	pthread_mutex_unlock(&d->lock);
	return 0;
}

/* Looks for t in every runtime's heap: a scan, cheap next to a timer's
 * life, and it reads no field of t, which a worker may be writing if the
 * timer thread released t meanwhile. */
void weft__deferred_cancel(weft_task *t)
{
	pthread_mutex_lock(&heaps_lock);
	for (weft__delays *d = heaps; d; d = d->next_heap) {
		pthread_mutex_lock(&d->lock);
		for (size_t i = 0; i < d->len; i++) {
			if (d->heap[i].t != t)
				continue;
			weft_rt *rt = d->heap[i].rt;
			remove_at(d, i);
			pthread_mutex_unlock(&d->lock);
			pthread_mutex_unlock(&heaps_lock);
			cancel_held(rt, t);
			return;
		}
		pthread_mutex_unlock(&d->lock);
	}
	pthread_mutex_unlock(&heaps_lock);
	/* Not held: the timer thread took it and cancels it itself. */
}

void weft__deferred_cancel_all(weft_rt *rt)
{
	weft__delays *d = atomic_load(&rt->delays);
	if (!d)
		return;
	pthread_mutex_lock(&d->lock);
	while (d->len > 0) {
		weft_task *t = d->heap[0].t;
		remove_at(d, 0);
		pthread_mutex_unlock(&d->lock);
		cancel_held(rt, t);
		pthread_mutex_lock(&d->lock);
	}
	pthread_mutex_unlock(&d->lock);
}

/* Destroy: the held runs of periodic tasks end now (closing is set, so
 * no more are held after this; core/periodic.c). */
void weft__deferred_cancel_periodic(weft_rt *rt)
{
	weft__delays *d = atomic_load(&rt->delays);
	if (!d)
		return;
	pthread_mutex_lock(&d->lock);
	for (size_t i = 0; i < d->len;) {
		weft_task *t = d->heap[i].t;
		if (t->fn_ != weft__periodic_run) {
			i++;
			continue;
		}
		remove_at(d, i); /* what moved into i is looked at next */
		pthread_mutex_unlock(&d->lock);
		cancel_held(rt, t);
		pthread_mutex_lock(&d->lock);
		i = 0;
	}
	pthread_mutex_unlock(&d->lock);
}

void weft__deferred_release(weft_rt *rt)
{
	weft__delays *d = atomic_load(&rt->delays);
	if (!d)
		return;
	pthread_mutex_lock(&d->lock);
	d->stop = true;
	bool started = d->started;
	atomic_fetch_add(&d->seq, 1);
	weft__futex_wake(&d->seq, 1);
	pthread_mutex_unlock(&d->lock);
	if (started)
		pthread_join(d->thread, NULL);
	pthread_mutex_lock(&heaps_lock);
	for (weft__delays **p = &heaps; *p; p = &(*p)->next_heap) {
		if (*p == d) {
			*p = d->next_heap;
			break;
		}
	}
	pthread_mutex_unlock(&heaps_lock);
	if (d->heap)
		weft__free(d->heap, d->cap * sizeof(*d->heap));
	pthread_mutex_destroy(&d->lock);
	weft__free(d, sizeof(*d));
	rt->delays = NULL;
}

void weft__deferred_wait(weft_rt *rt)
{
	for (;;) {
		int n = atomic_load(&rt->deferred);
		if (n == 0)
			return;
		weft__futex_wait((_Atomic uint32_t *)&rt->deferred, (uint32_t)n, -1);
	}
}

/* ------------------------------------------------------------ predecessors */

/* One block per weft_post_when: a continuation record per predecessor. The
 * task's quanta_ counts the predecessors still running, plus one while
 * weft_post_when is still attaching records; whoever brings it to zero
 * releases the task and frees the block. */
typedef struct edges {
	weft_rt *rt;
	weft_task *t;
	size_t n;
	weft__waiter rec[];
} edges;

static size_t edges_size(size_t n)
{
	return sizeof(edges) + n * sizeof(weft__waiter);
}

static void one_done(edges *e, bool cancelled)
{
	weft_task *t = e->t;
	weft_rt *rt = e->rt;
	uint32_t was;
	if (cancelled) /* what it needed will not be there: cancel it too */
		(void)weft__task_request_cancel(t, &was);
	if (atomic_fetch_sub((_Atomic uint32_t *)&t->quanta_, 1) != 1)
		return;
	weft__free(e, edges_size(e->n));
	release_held(rt, t);
}

static void predecessor_finished(weft__waiter *w)
{
	one_done(w->data, w->result == WEFT_ECANCELED);
}

int weft__defer_after(weft_rt *rt, weft_task *t, weft_task *const *after, size_t n)
{
	edges *e = weft__alloc(edges_size(n));
	if (!e)
		return WEFT_ENOMEM;
	e->rt = rt;
	e->t = t;
	e->n = n;
	atomic_store((_Atomic uint32_t *)&t->quanta_, (uint32_t)n + 1);
	for (size_t i = 0; i < n; i++) {
		weft__waiter *w = &e->rec[i];
		weft__waiter_init(w, e);
		w->fiber = NULL;
		w->notify = predecessor_finished;
		weft_task_state end = weft__task_add_waiter(after[i], w);
		if (end != WEFT_TASK_QUEUED) /* finished already */
			one_done(e, end == WEFT_TASK_CANCELLED);
	}
	one_done(e, false); /* the attaching is over */
	return 0;
}
