/* The blocking pool (pool.h).
 *
 * Hand-off: an idle thread waits on its own futex word, yielding its CPU
 * for YIELD_NS first and then asleep. A submitter takes the most recently
 * idle thread off the idle stack, gives it the job and sets its word under
 * the pool's lock, then, if the word said it sleeps, wakes it after
 * letting go of the lock: one futex wake-up reaches the one thread that
 * has work, and none is needed for a thread still yielding (a caller in a
 * loop of short calls). Setting the word under the lock is what makes
 * retirement race-free: a thread whose idle time ran out takes the lock
 * and finds either its word not HANDED (nobody chose it: it leaves the
 * idle stack and ends) or HANDED (it was chosen just now: it runs the
 * job). A thread that finishes a job looks at the queue before it goes
 * idle, so jobs queued while every thread was busy run in order without a
 * wake-up each.
 *
 * Who touches what: everything in weft__pool and pool_thread is under
 * pool->lock, except a thread's job and word, which its submitter writes
 * under the lock and the thread reads after seeing it HANDED (acquire). */
#include <pthread.h>
#include <sched.h>
#include <string.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "core/futex.h"
#include "core/lock.h"
#include "io/files.h"
#include "io/pool.h"

/* A pool thread's word. */
enum { IDLE = 0, HANDED = 1, SLEEPING = 2 };

/* How long an idle pool thread yields its CPU before it sleeps: a caller
 * in a loop of short calls hands it the next one meanwhile, without a
 * futex wake-up on either side. */
#define YIELD_NS 20000

typedef struct pool_thread {
	struct pool_thread *next_idle, *next_all;
	struct weft__pool *pool;
	weft__job *job;        /* handed over with word = 1; NULL with word = 1: end */
	_Atomic uint32_t word; /* futex: IDLE, SLEEPING (on it) or HANDED */
	bool listed;           /* on the idle stack */
	bool retired;          /* ended for idleness: to be joined and freed */
	pthread_t thread;
} pool_thread;

struct weft__pool {
	weft__lock lock;
	weft__job *head, *tail; /* queued jobs, oldest first */
	pool_thread *idle;      /* idle threads, most recently idle first */
	pool_thread *all;       /* every thread not yet joined */
	int threads, peak, max;
	int64_t idle_ns;
	bool stopping;
	uint64_t jobs, created, retired, woken;
	struct weft__pool *next; /* the registry (cancel_fd) */
};

/* Every runtime's pool, for weft__pool_cancel_fd; and the lock that makes
 * a runtime's pool once. Reset in a forked child (weft__io_fork_child). */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static weft__pool *pools;
static _Atomic int64_t testing_idle_ns;
static _Atomic int testing_max;

void weft__pool_testing_limits(int64_t idle_ns, int max_threads)
{
	atomic_store(&testing_idle_ns, idle_ns);
	atomic_store(&testing_max, max_threads);
}

static weft__pool *get_pool(weft_rt *rt)
{
	weft__pool *p = atomic_load_explicit(&rt->pool, memory_order_acquire);
	if (p)
		return p;
	pthread_mutex_lock(&registry_lock);
	p = atomic_load_explicit(&rt->pool, memory_order_relaxed);
	if (!p && (p = weft__alloc(sizeof(*p))) != NULL) {
		memset(p, 0, sizeof(*p));
		int64_t idle = atomic_load(&testing_idle_ns);
		int max = atomic_load(&testing_max);
		p->idle_ns = idle > 0 ? idle : WEFT__POOL_IDLE_NS;
		p->max = max > 0 ? max : rt->blocking_max > 0 ? rt->blocking_max : WEFT__POOL_MAX;
		p->next = pools;
		pools = p;
		atomic_store_explicit(&rt->pool, p, memory_order_release);
	}
	pthread_mutex_unlock(&registry_lock);
	return p;
}

/* ------------------------------------------------------------ threads */

static weft__job *pop(weft__pool *p)
{
	weft__job *j = p->head;
	if (j) {
		p->head = j->next;
		if (!p->head)
			p->tail = NULL;
		j->state = WEFT__JOB_RUNNING;
		p->jobs++;
	}
	return j;
}

/* Puts t on the idle stack (lock held): the next submitter hands it its
 * job directly. */
static void enlist(weft__pool *p, pool_thread *t)
{
	atomic_store_explicit(&t->word, IDLE, memory_order_relaxed);
	t->next_idle = p->idle;
	p->idle = t;
	t->listed = true;
}

/* An enlisted t, without the lock: waits until handed something or the
 * idle time runs out, yielding first (YIELD_NS), then asleep (says so in
 * its word, so that a hand-off to a thread still yielding costs no futex
 * wake). The job handed, or NULL: end (retired, or handed nothing by
 * destroy). */
static weft__job *wait_idle(weft__pool *p, pool_thread *t)
{
	int64_t now = weft__now_ns(), start = now;
	int64_t end = weft__sat_add(now, p->idle_ns);
	while (atomic_load_explicit(&t->word, memory_order_acquire) == IDLE &&
	       weft__now_ns() - start < YIELD_NS)
		sched_yield();
	uint32_t w = IDLE;
	if (atomic_compare_exchange_strong_explicit(&t->word, &w, SLEEPING, memory_order_acquire,
	                                            memory_order_acquire) ||
	    w == SLEEPING) {
		while (atomic_load_explicit(&t->word, memory_order_acquire) == SLEEPING) {
			int64_t left = weft__ns_left(end, weft__now_ns());
			if (left == 0)
				break;
			weft__futex_wait(&t->word, SLEEPING, left);
		}
	}
	if (atomic_load_explicit(&t->word, memory_order_acquire) != HANDED) {
		weft__lock_acquire(&p->lock);
		if (atomic_load_explicit(&t->word, memory_order_relaxed) != HANDED) {
			/* Nobody chose it: it is still on the idle stack. */
			for (pool_thread **q = &p->idle; *q; q = &(*q)->next_idle)
				if (*q == t) {
					*q = t->next_idle;
					break;
				}
			t->listed = false;
			t->retired = true;
			p->threads--;
			p->retired++;
			weft__lock_release(&p->lock);
			return NULL;
		}
		weft__lock_release(&p->lock); /* chosen just now */
	}
	weft__job *j = t->job;
	t->job = NULL;
	return j;
}

/* A pool thread. After a job it takes the next queued one, or goes back
 * on the idle stack, before it wakes the job's caller: the caller's next
 * call (a loop of weft_blocking calls) then finds it there and hands it
 * over directly, without contending for the lock it would be taking. */
static void *pool_main(void *arg)
{
	pool_thread *t = arg;
	weft__pool *p = t->pool;
	weft__lock_acquire(&p->lock);
	weft__job *j = pop(p);
	bool idle = !j && !p->stopping;
	if (idle)
		enlist(p, t);
	weft__lock_release(&p->lock);
	for (;;) {
		if (!j && (!idle || !(j = wait_idle(p, t))))
			return NULL;
		j->run(j);
		j->state = WEFT__JOB_DONE;
		weft__lock_acquire(&p->lock);
		weft__job *next = pop(p);
		idle = !next && !p->stopping;
		if (idle)
			enlist(p, t);
		weft__lock_release(&p->lock);
		weft__waiter_unpark(&j->waiter); /* j is gone once its caller resumes */
		j = next;
	}
}

/* Joins and frees the threads of list (retired or stopped: linked by
 * next_all, taken off the pool's list by the caller). */
static void join_all(pool_thread *list)
{
	while (list) {
		pool_thread *next = list->next_all;
		pthread_join(list->thread, NULL);
		weft__free(list, sizeof(*list));
		list = next;
	}
}

/* Takes the retired threads off p->all (lock held). */
static pool_thread *take_retired(weft__pool *p)
{
	pool_thread *list = NULL;
	for (pool_thread **q = &p->all; *q;) {
		pool_thread *t = *q;
		if (t->retired) {
			*q = t->next_all;
			t->next_all = list;
			list = t;
		} else {
			q = &t->next_all;
		}
	}
	return list;
}

/* A new thread for p, counted in p->threads by the caller already. */
static int grow(weft__pool *p)
{
	pool_thread *t = weft__alloc(sizeof(*t));
	if (!t)
		return WEFT_ENOMEM;
	memset(t, 0, sizeof(*t));
	t->pool = p;
	weft__lock_acquire(&p->lock);
	t->next_all = p->all; /* before it runs: destroy must find it */
	p->all = t;
	weft__lock_release(&p->lock);
	int rc = weft__thread_create(&t->thread, pool_main, t, "blocking", false);
	weft__lock_acquire(&p->lock);
	if (rc) {
		for (pool_thread **q = &p->all; *q; q = &(*q)->next_all)
			if (*q == t) {
				*q = t->next_all;
				break;
			}
	} else {
		p->created++;
	}
	weft__lock_release(&p->lock);
	if (rc)
		weft__free(t, sizeof(*t));
	return rc;
}

/* ------------------------------------------------------------ jobs */

int weft__pool_submit(weft_rt *rt, weft__job *j)
{
	weft__pool *p = get_pool(rt);
	if (!p)
		return WEFT_ENOMEM;
	j->next = NULL;
	weft__lock_acquire(&p->lock);
	pool_thread *t = p->idle;
	if (t) {
		p->idle = t->next_idle;
		t->listed = false;
		t->job = j;
		j->state = WEFT__JOB_RUNNING;
		p->jobs++;
		bool asleep = atomic_exchange_explicit(&t->word, HANDED, memory_order_acq_rel) ==
		              SLEEPING;
		p->woken += asleep;
		weft__lock_release(&p->lock);
		if (asleep)
			weft__futex_wake(&t->word, 1); /* t cannot end before it ran j */
		return 0;
	}
	j->state = WEFT__JOB_QUEUED;
	if (p->tail)
		p->tail->next = j;
	else
		p->head = j;
	p->tail = j;
	bool more = p->threads < p->max;
	if (more && ++p->threads > p->peak)
		p->peak = p->threads;
	pool_thread *retired = more ? take_retired(p) : NULL;
	weft__lock_release(&p->lock);
	join_all(retired);
	if (!more || grow(p) == 0)
		return 0;
	/* No thread: with others there (or being created), j waits for them.
	 * With none, nothing would ever run the queue: this thread runs every
	 * queued job (j and any another caller whose thread was refused too
	 * left) and wakes their callers; j's own caller then parks and
	 * returns at once. */
	weft__lock_acquire(&p->lock);
	p->threads--;
	weft__job *stranded = NULL;
	if (p->threads == 0) {
		stranded = p->head;
		p->head = p->tail = NULL;
		for (weft__job *x = stranded; x; x = x->next) {
			x->state = WEFT__JOB_RUNNING;
			p->jobs++;
		}
	}
	weft__lock_release(&p->lock);
	while (stranded) {
		weft__job *next = stranded->next;
		stranded->run(stranded);
		stranded->state = WEFT__JOB_DONE;
		weft__waiter_unpark(&stranded->waiter);
		stranded = next;
	}
	return 0;
}

void weft__pool_run(weft_rt *rt, weft__job *j, weft__wait_reason why)
{
	weft__waiter_init(&j->waiter, NULL);
	weft__fworker *w = weft__fiber_handoff_begin();
	if (weft__pool_submit(rt, j) != 0)
		j->run(j);
	else
		weft__waiter_park_for(&j->waiter, why);
	weft__fiber_handoff_end(w);
}

/* Unlinks j from p's queue (lock held); false when it is not there. */
static bool unlink_job(weft__pool *p, weft__job *j)
{
	weft__job *prev = NULL;
	for (weft__job *x = p->head; x; prev = x, x = x->next) {
		if (x != j)
			continue;
		if (prev)
			prev->next = j->next;
		else
			p->head = j->next;
		if (p->tail == j)
			p->tail = prev;
		return true;
	}
	return false;
}

bool weft__pool_take_back(weft_rt *rt, weft__job *j)
{
	weft__pool *p = atomic_load_explicit(&rt->pool, memory_order_acquire);
	if (!p)
		return false;
	weft__lock_acquire(&p->lock);
	bool taken = j->state == WEFT__JOB_QUEUED && unlink_job(p, j);
	weft__lock_release(&p->lock);
	return taken;
}

int weft__pool_cancel_fd(int fd, void (*done)(weft__job *j))
{
	weft__job *list = NULL;
	int n = 0;
	pthread_mutex_lock(&registry_lock);
	for (weft__pool *p = pools; p; p = p->next) {
		weft__lock_acquire(&p->lock);
		for (weft__job *x = p->head, *next; x; x = next) {
			next = x->next;
			if (x->fd == fd && unlink_job(p, x)) {
				x->state = WEFT__JOB_DONE;
				x->next = list;
				list = x;
				n++;
			}
		}
		weft__lock_release(&p->lock);
	}
	pthread_mutex_unlock(&registry_lock);
	while (list) {
		weft__job *next = list->next;
		done(list);
		weft__waiter_unpark(&list->waiter);
		list = next;
	}
	return n;
}

void weft__pool_get_stats(weft_rt *rt, weft__pool_stats *s)
{
	memset(s, 0, sizeof(*s));
	weft__pool *p = atomic_load_explicit(&rt->pool, memory_order_acquire);
	if (!p)
		return;
	weft__lock_acquire(&p->lock);
	s->threads = p->threads;
	s->max = p->max;
	s->peak = p->peak;
	s->jobs = p->jobs;
	s->created = p->created;
	s->retired = p->retired;
	s->woken = p->woken;
	weft__lock_release(&p->lock);
}

void weft__pool_destroy(weft_rt *rt)
{
	weft__pool *p = atomic_load_explicit(&rt->pool, memory_order_acquire);
	if (!p)
		return;
	pthread_mutex_lock(&registry_lock);
	for (weft__pool **q = &pools; *q; q = &(*q)->next)
		if (*q == p) {
			*q = p->next;
			break;
		}
	atomic_store(&rt->pool, NULL);
	pthread_mutex_unlock(&registry_lock);
	weft__lock_acquire(&p->lock);
	p->stopping = true;
	pool_thread *idle = p->idle;
	p->idle = NULL;
	for (pool_thread *t = idle; t; t = t->next_idle) {
		t->listed = false;
		t->job = NULL;
		atomic_store_explicit(&t->word, HANDED, memory_order_release);
	}
	pool_thread *all = p->all;
	p->all = NULL;
	weft__lock_release(&p->lock);
	for (pool_thread *t = idle; t; t = t->next_idle)
		weft__futex_wake(&t->word, 1); /* freed only after the join below */
	join_all(all);
	weft__free(p, sizeof(*p));
}

void weft__pool_fork_prepare(void)
{
	pthread_mutex_lock(&registry_lock);
}

void weft__pool_fork_parent(void)
{
	pthread_mutex_unlock(&registry_lock);
}

void weft__pool_fork_child(void)
{
	/* The parent's pools belong to runtimes the child cannot use. */
	pools = NULL;
	pthread_mutex_unlock(&registry_lock);
}
