/* Runtime lifecycle and the post path shared by every model: argument and
 * state checks, capacity, then the model's submit. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/completion.h"
#include "core/futex.h"
#include "core/internal.h"
#include "core/observe.h"
#include "core/standin.h"
#include "core/testing.h"
#include "io/files.h"
#include "io/pool.h"
#include "obs/probes.h"

_Thread_local weft__thread_ctx weft__tls_storage
        __attribute__((tls_model("initial-exec"))) = {.index = -1};

int *weft__errno_now(void)
{
	int *e = &errno;
	__asm__ volatile("" : "+r"(e)); /* not a const function: see internal.h */
	return e;
}

#if !((defined(__x86_64__) || defined(__aarch64__)) && defined(__ELF__))
weft__thread_ctx *weft__tls_address(void)
{
	weft__thread_ctx *self = &weft__tls_storage;
	__asm__ volatile("" : "+r"(self)); /* not a const function: never merged */
	return self;
}
#endif

static const weft__model_ops *const models[] = {
        [WEFT_MODEL_THREADS] = &weft__model_threads,
        [WEFT_MODEL_SPAWN] = &weft__model_spawn,
        [WEFT_MODEL_FIBERS] = &weft__model_fibers,
        [WEFT_MODEL_MN] = &weft__model_mn,
};
_Static_assert(sizeof(models) / sizeof(models[0]) == WEFT_MODEL_COUNT_, "one ops table per model");

/* ------------------------------------------------------------ handles */

/* Runtime memory is never freed: destroy puts it on this list and the next
 * create takes it back. A call that races with destroy, or comes after it
 * with a stale handle, then reads a runtime marked dead (WEFT_EINVAL)
 * rather than freed memory. It comes from malloc, not weft's allocator
 * (weft_set_allocator): a destroyed runtime leaves nothing allocated there. */
static pthread_mutex_t shells_lock = PTHREAD_MUTEX_INITIALIZER;
static weft_rt *shells;

static weft_rt *shell_take(void)
{
	pthread_mutex_lock(&shells_lock);
	weft_rt *rt = shells;
	if (rt)
		shells = rt->next_shell;
	pthread_mutex_unlock(&shells_lock);
	if (!rt)
		rt = aligned_alloc(alignof(weft_rt), sizeof(weft_rt));
	if (rt)
		memset(rt, 0, sizeof(*rt));
	return rt;
}

static void shell_give(weft_rt *rt)
{
	pthread_mutex_lock(&shells_lock);
	rt->next_shell = shells;
	shells = rt;
	pthread_mutex_unlock(&shells_lock);
}

/* ------------------------------------------------------------ fork */

/* A forked child has only the thread that called fork: its copy of a
 * parent's runtime has no workers and its tasks never finish there. Every
 * call on it says so instead of hanging (libuv's loops need uv_loop_fork;
 * a child here creates a runtime of its own). */
_Atomic unsigned weft__fork_gen;
static _Atomic int fork_reported;
static pthread_once_t fork_hook_once = PTHREAD_ONCE_INIT;

/* Every process-wide lock weft has, taken in the order internal.h gives,
 * so none is held by a thread the child will not have. */
static void before_fork(void)
{
	weft__deferred_fork_prepare();
	weft__log_fork_prepare();
	pthread_mutex_lock(&shells_lock);
	weft__io_fork_prepare();
}

static void after_fork_parent(void)
{
	weft__io_fork_parent();
	pthread_mutex_unlock(&shells_lock);
	weft__log_fork_done();
	weft__deferred_fork_done();
}

static void after_fork_child(void)
{
	weft__futex_fork_child(); /* first: the handlers below may wait */
	weft__io_fork_child();    /* the parent's rings unmapped, its pools forgotten */
	pthread_mutex_unlock(&shells_lock);
	weft__log_fork_done();
	weft__deferred_fork_done();
	weft__thread_fork_child();
	/* A task that forked goes on in the child as a plain thread: no
	 * runtime's worker (its workers are not there), no fiber to park. It
	 * may use weft as any thread does, and must end with exec or _exit,
	 * there being no worker loop to return to. */
	weft__tls.rt = NULL;
	weft__tls.index = -1;
	weft__tls.task = NULL;
	weft__tls.fiber = NULL;
	weft__tls.nopreempt = 0;
	weft__tls.mutexes_held = 0;
	atomic_fetch_add(&weft__fork_gen, 1);
	atomic_store(&fork_reported, 0);
}

static void install_fork_hook(void)
{
	pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}

void weft__fork_hook_install(void)
{
	pthread_once(&fork_hook_once, install_fork_hook);
}

void weft__testing_lock(int which, weft_rt *rt, bool take)
{
	switch (which) {
	case WEFT__TESTING_LOCK_LOG:
		take ? weft__log_fork_prepare() : weft__log_fork_done();
		break;
	case WEFT__TESTING_LOCK_HEAPS:
	case WEFT__TESTING_LOCK_HEAP:
		weft__deferred_testing_lock(which == WEFT__TESTING_LOCK_HEAP ? rt : NULL, take);
		break;
	case WEFT__TESTING_LOCK_SHELLS:
		take ? pthread_mutex_lock(&shells_lock) : pthread_mutex_unlock(&shells_lock);
		break;
	}
}

void weft__report_fork_use(const char *what)
{
	if (!atomic_exchange(&fork_reported, 1))
		weft__log(WEFT_LOG_ERROR,
		          "weft: %s belongs to the parent process: this process was forked "
		          "from it, and a runtime's workers and tasks do not cross fork(); "
		          "create a new runtime in the child (WEFT_EINVAL)\n",
		          what);
}

int weft__rt_check(const weft_rt *rt)
{
	if (!rt || rt->magic != WEFT__RT_MAGIC)
		return WEFT_EINVAL;
	if (rt->fork_gen != atomic_load_explicit(&weft__fork_gen, memory_order_relaxed)) {
		weft__report_fork_use("the runtime");
		return WEFT_EINVAL;
	}
	return 0;
}

int weft__rt_enter(weft_rt *rt)
{
	atomic_fetch_add(&rt->callers, 1);
	if (atomic_load(&rt->closing) >= WEFT__RELEASING) {
		atomic_fetch_sub(&rt->callers, 1);
		return WEFT_ESHUTDOWN;
	}
	return 0;
}

void weft__rt_leave(weft_rt *rt)
{
	atomic_fetch_sub_explicit(&rt->callers, 1, memory_order_release);
}

/* A run under the random policy that fails should say how to replay it:
 * the seed of the last random runtime is printed if the process exits with
 * a non-zero status (a failed test, an assertion in the program). */
static _Atomic uint64_t last_random_seed;
static pthread_once_t seed_hook_once = PTHREAD_ONCE_INIT;

static void print_seed_on_failure(int status, void *arg)
{
	(void)arg;
	uint64_t seed = atomic_load(&last_random_seed);
	if (status != 0 && seed)
		weft__log(WEFT_LOG_NOTICE,
		          "weft: this run used WEFT_POLICY=random with seed %llu; "
		          "WEFT_SEED=%llu replays it\n",
		          (unsigned long long)seed, (unsigned long long)seed);
}

static void install_seed_hook(void)
{
#ifdef __GLIBC__
	on_exit(print_seed_on_failure, NULL);
#endif
}

static void remember_seed(const weft_rt *rt)
{
	if (rt->cfg.policy != WEFT_POLICY_RANDOM)
		return;
	atomic_store(&last_random_seed, rt->cfg.seed);
	pthread_once(&seed_hook_once, install_seed_hook);
}

int weft_rt_create(weft_rt **out, const weft_config *cfg)
{
	if (!out)
		return WEFT_EINVAL;
	*out = NULL;
	weft__fork_hook_install();
	weft_rt *rt = shell_take();
	if (!rt)
		return WEFT_ENOMEM;
	rt->fork_gen = atomic_load(&weft__fork_gen);
	pthread_sigmask(SIG_SETMASK, NULL, &rt->sigmask);
	int rc = weft__config_resolve(rt, cfg);
	if (rc == 0) {
		rt->model = models[rt->cfg.model];
		rc = weft__config_model(rt); /* its configure, and what it changed */
	}
	if (rc == 0)
		weft__io_choose(rt);
	if (rc == 0)
		rc = weft__observe_create(rt);
	if (rc == 0) {
		rt->magic = WEFT__RT_MAGIC;
		rc = rt->model->start(rt);
	}
	if (rc) {
		rt->magic = WEFT__RT_DEAD;
		weft__observe_destroy(rt);
		shell_give(rt);
		return rc;
	}
	atomic_fetch_add(&weft__live_runtimes, 1);
	remember_seed(rt);
	*out = rt;
	return 0;
}

/* Until every task posted so far, deferred ones included, has finished:
 * held tasks first, since each enters the model before it stops counting
 * as held; once none is held the model sees them all. */
static void wait_quiet(weft_rt *rt)
{
	do {
		weft__deferred_wait(rt);
		rt->model->wait_all(rt);
	} while (atomic_load(&rt->deferred) > 0);
}

int weft_rt_destroy(weft_rt *rt)
{
	return weft_rt_destroy_ex(rt, WEFT_DESTROY_DRAIN, NULL);
}

/* Waits until *count reads zero: callers on their way out, a few
 * instructions each, or sleepers that were just woken. */
static void wait_for_zero(_Atomic int *count, _Atomic uint32_t *seq)
{
	while (atomic_load(count) > 0) {
		if (seq) {
			atomic_fetch_add(seq, 1);
			weft__futex_wake(seq, INT_MAX);
		}
		sched_yield();
	}
}

int weft_rt_destroy_ex(weft_rt *rt, weft_destroy_mode mode, size_t *discarded)
{
	int rc = weft__rt_check(rt);
	if (rc)
		return rc;
	if (mode != WEFT_DESTROY_DRAIN && mode != WEFT_DESTROY_CANCEL)
		return WEFT_EINVAL;
	if (weft__tls.rt == rt)
		return WEFT_EDEADLK;
	int was = 0;
	if (!atomic_compare_exchange_strong(&rt->closing, &was, WEFT__CLOSING))
		return WEFT_EINVAL; /* another thread is destroying it */
	if (mode == WEFT_DESTROY_CANCEL)
		atomic_store(&rt->cancelling, 1);
	/* Wake weft_post_wait sleepers so they see closing and give up. */
	atomic_fetch_add(&rt->room_seq, 1);
	weft__futex_wake(&rt->room_seq, INT_MAX);

	/* Every task finishes and the workers end; posts from outside that
	 * began before closing are waited for, later ones are refused.
	 * Deferred tasks are released first (cancelled under CANCEL): tasks
	 * that run meanwhile may defer more, hence the loop. */
	if (mode == WEFT_DESTROY_CANCEL)
		weft__deferred_cancel_all(rt);
	weft__deferred_cancel_periodic(rt); /* they would never end */
	weft__external_drain(&rt->done);
	wait_quiet(rt);
	rt->model->stop(rt);
	weft__standin_join_all(rt);
	weft__deferred_release(rt);
	weft_stats s;
	weft_stats_get(rt, &s);
	if (discarded)
		*discarded = (size_t)s.cancelled;
	if (rt->cfg.stats)
		weft_stats_print(rt, stderr);
	weft__pool_destroy(rt); /* no task is left to use it */
	/* Calls from outside still inside (wait_all, statistics, post_wait
	 * sleepers) leave before the model is freed; later ones are refused. */
	atomic_store(&rt->closing, WEFT__RELEASING);
	wait_for_zero(&rt->callers, &rt->done.all_seq);
	wait_for_zero(&rt->room_waiters, &rt->room_seq);
	rt->model->release(rt);
	weft__observe_destroy(rt); /* writes the trace file */
	rt->magic = WEFT__RT_DEAD;
	shell_give(rt);
	atomic_fetch_sub(&weft__live_runtimes, 1);
	return 0;
}

/* ------------------------------------------------------------ capacity */

static bool reserve_capacity(weft_rt *rt)
{
	long cap = rt->cfg.queue_capacity;
	if (cap == 0)
		return true;
	long n = atomic_load_explicit(&rt->queued, memory_order_relaxed);
	do {
		if (n >= cap)
			return false;
	} while (!atomic_compare_exchange_weak(&rt->queued, &n, n + 1));
	return true;
}

void weft__release_capacity(weft_rt *rt, long n)
{
	atomic_fetch_sub(&rt->queued, n);
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&rt->room_waiters, memory_order_relaxed) > 0) {
		atomic_fetch_add(&rt->room_seq, 1);
		weft__futex_wake(&rt->room_seq, INT_MAX);
	}
}

/* ------------------------------------------------------------ post */

/* t joins g: one more unfinished task, the in-flight bits of this post
 * (weft_group_wait in a forked child tells the parent's tasks by them) and
 * the mark by which weft_group_init refuses a group with tasks in flight. */
static void join_group(weft_group *g)
{
	atomic_fetch_add_explicit((_Atomic uint32_t *)&g->pending_, WEFT__GROUP_ONE,
	                          memory_order_relaxed);
	atomic_store_explicit((_Atomic uint32_t *)&g->sign_, weft__in_flight_bits(g),
	                      memory_order_relaxed);
	atomic_store_explicit(weft__group_mark_word(g), weft__group_mark(g), memory_order_relaxed);
}

/* Queues t, already marked QUEUED (state `old` before): capacity, group,
 * observation, then the model's submit. count_rejected: a refusal counts in
 * stats.rejected (not for the tries weft_post_wait makes while it waits for
 * room). */
static int enqueue(weft_rt *rt, weft_group *g, weft_task *t, uint32_t old, bool count_rejected,
                   bool from_task)
{
	if (!reserve_capacity(rt)) {
		atomic_store((_Atomic uint32_t *)&t->state_, old & WEFT__STATE_MASK);
		if (count_rejected)
			atomic_fetch_add_explicit(&rt->rejected, 1, memory_order_relaxed);
		return WEFT_EFULL;
	}
	t->group_ = g;
	if (rt->latency || rt->trace) { /* observed: one test when not */
		t->posted_ns_ = weft__post_stamp(rt);
		weft__trace(rt, WEFT__TRACE_POST, t, false);
	}
	WEFT__PROBE2(task__post, t, rt);
	t->quanta_ = 0;
	t->epoch_ = 0; /* mlfq: a new arrival, placed by its priority */
	if (g)
		join_group(g);
	int rc = rt->model->submit(rt, t, from_task); /* releases capacity if it refuses */
	if (rc) {
		if (g)
			atomic_fetch_sub((_Atomic uint32_t *)&g->pending_, WEFT__GROUP_ONE);
		t->group_ = NULL;
		atomic_store((_Atomic uint32_t *)&t->state_, old & WEFT__STATE_MASK);
	}
	return rc;
}

/* From outside the workers, a post counts itself in rt->done before it
 * looks at anything else, and its last touch of the runtime is the
 * external_left increment: destroy sets closing and then waits for that
 * count, so either it waits for this post (and its task), or the post sees
 * closing and refuses. */
static int post_as(weft_rt *rt, weft_group *g, weft_task *t, bool count_rejected, bool private)
{
	int rc = weft__rt_check(rt);
	if (rc)
		return rc;
	if (!t || !t->fn_)
		return WEFT_EINVAL;
	uint32_t old = atomic_load_explicit((_Atomic uint32_t *)&t->state_, memory_order_relaxed);
	uint32_t st = old & WEFT__STATE_MASK;
	if (st == WEFT_TASK_QUEUED || st == WEFT_TASK_RUNNING)
		return WEFT_EBUSY;
	if (private)
		atomic_store_explicit((_Atomic uint32_t *)&t->state_,
		                      WEFT_TASK_QUEUED | weft__in_flight_bits(t),
		                      memory_order_relaxed);
	else if (!atomic_compare_exchange_strong((_Atomic uint32_t *)&t->state_, &old,
	                                         WEFT_TASK_QUEUED | weft__in_flight_bits(t)))
		return WEFT_EBUSY; /* another thread posted it just now */
	if (weft__tls.rt == rt)
		return enqueue(rt, g, t, old, count_rejected, true);
	weft__completion *c = &rt->done;
	/* Its ticket: the outside posts before it, for a model that keeps
	 * post order across its queues (threads). */
	t->seq_ = atomic_fetch_add(&c->external_posted, 1);
	if (atomic_load(&rt->closing)) {
		atomic_store((_Atomic uint32_t *)&t->state_, old & WEFT__STATE_MASK);
		rc = WEFT_ESHUTDOWN;
	} else {
		rc = enqueue(rt, g, t, old, count_rejected, false);
	}
	if (rc)
		weft__external_refused(c);
	atomic_fetch_add_explicit(&c->external_left, 1, memory_order_release);
	return rc;
}

static int post(weft_rt *rt, weft_group *g, weft_task *t, bool count_rejected)
{
	return post_as(rt, g, t, count_rejected, false);
}

int weft__post_private(weft_rt *rt, weft_task *t)
{
	weft__tls.offering = true;
	int rc = post_as(rt, NULL, t, true, true);
	weft__tls.offering = false;
	return rc;
}

int weft_post(weft_rt *rt, weft_task *t)
{
	return post(rt, NULL, t, true);
}

int weft_post_in(weft_rt *rt, weft_group *g, weft_task *t)
{
	if (!g)
		return WEFT_EINVAL;
	return post(rt, g, t, true);
}

/* ------------------------------------------------------------ deferred posts */

/* weft_post_at and weft_post_when: admitted now as a post is (state,
 * capacity, group), then held by core/deferred.c. From outside the workers
 * the admission counts itself like a post (destroy waits for it) and is
 * then counted as refused: the model sees the task only when it is
 * released. */
static int post_deferred(weft_rt *rt, weft_group *g, weft_task *t, int64_t deadline,
                         weft_task *const *after, size_t n)
{
	int rc = weft__rt_check(rt);
	if (rc)
		return rc;
	if (!t || !t->fn_ || (n && !after))
		return WEFT_EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!after[i] || after[i] == t || weft_task_state_of(after[i]) == WEFT_TASK_IDLE)
			return WEFT_EINVAL;
	bool outside = weft__tls.rt != rt;
	weft__completion *c = &rt->done;
	if (outside)
		atomic_fetch_add(&c->external_posted, 1);
	uint32_t old = atomic_load_explicit((_Atomic uint32_t *)&t->state_, memory_order_relaxed);
	uint32_t st = old & WEFT__STATE_MASK;
	if (st == WEFT_TASK_QUEUED || st == WEFT_TASK_RUNNING ||
	    !atomic_compare_exchange_strong((_Atomic uint32_t *)&t->state_, &old,
	                                    WEFT_TASK_QUEUED | weft__in_flight_bits(t)))
		rc = WEFT_EBUSY;
	else if ((outside && atomic_load(&rt->closing)) || atomic_load(&rt->cancelling))
		rc = WEFT_ESHUTDOWN;
	else if (!reserve_capacity(rt))
		rc = WEFT_EFULL;
	if (rc == 0) {
		t->group_ = g;
		if (g)
			join_group(g);
		t->epoch_ = 0;
		atomic_fetch_add(&rt->deferred, 1);
		rc = after ? weft__defer_after(rt, t, after, n)
		           : weft__defer_until(rt, t, deadline);
		if (rc) {
			/* As deferred.c's own decrements: destroy may be asleep in
			 * weft__deferred_wait on this very count (a periodic run
			 * refused while closing), and a last decrement that does not
			 * wake it leaves destroy asleep for ever. */
			if (atomic_fetch_sub(&rt->deferred, 1) == 1)
				weft__futex_wake((_Atomic uint32_t *)&rt->deferred, INT_MAX);
			if (g)
				atomic_fetch_sub((_Atomic uint32_t *)&g->pending_, WEFT__GROUP_ONE);
			t->group_ = NULL;
			weft__dequeued(rt, 1);
		}
	}
	if (rc && rc != WEFT_EBUSY)
		atomic_store((_Atomic uint32_t *)&t->state_, old & WEFT__STATE_MASK);
	if (outside) {
		weft__external_refused(c); /* the model sees it when released */
		atomic_fetch_add_explicit(&c->external_left, 1, memory_order_release);
	}
	return rc;
}

int weft_post_at(weft_rt *rt, weft_group *g, weft_task *t, int64_t deadline_ns)
{
	return post_deferred(rt, g, t, deadline_ns, NULL, 0);
}

int weft_post_when(weft_rt *rt, weft_group *g, weft_task *t, weft_task *const *after, size_t n)
{
	if (n == 0)
		return g ? weft_post_in(rt, g, t) : weft_post(rt, t);
	return post_deferred(rt, g, t, 0, after, n);
}

int weft_cancel(weft_task *t)
{
	if (!t)
		return WEFT_EINVAL;
	uint32_t was;
	int rc = weft__task_request_cancel(t, &was);
	if (rc == 0 && (was & WEFT__DELAYED))
		weft__deferred_cancel(t); /* held until a time: ends now */
	return rc;
}

/* A sleeper announces itself in room_waiters before it tries to post, and
 * weft__release_capacity frees room before it reads room_waiters (both with
 * a full fence between): either the poster finds the room or the releaser
 * sees the sleeper and changes room_seq, so the futex wait cannot miss it. */
int weft_post_wait(weft_rt *rt, weft_task *t)
{
	int rc = weft__rt_check(rt);
	if (rc)
		return rc;
	for (;;) {
		uint32_t seq = atomic_load(&rt->room_seq);
		atomic_fetch_add(&rt->room_waiters, 1);
		rc = post(rt, NULL, t, false);
		if (rc == WEFT_EFULL && weft__tls.rt == rt)
			rc = WEFT_EDEADLK;
		else if (rc == WEFT_EFULL && atomic_load(&rt->closing))
			rc = WEFT_ESHUTDOWN;
		else if (rc == WEFT_EFULL)
			weft__futex_wait(&rt->room_seq, seq, -1);
		atomic_fetch_sub(&rt->room_waiters, 1);
		if (rc != WEFT_EFULL)
			return rc;
	}
}

/* ------------------------------------------------------------ waiting */

int weft_wait_all(weft_rt *rt)
{
	int rc = weft__rt_check(rt);
	if (rc)
		return rc;
	if (weft__tls.rt == rt)
		return WEFT_EDEADLK;
	if ((rc = weft__rt_enter(rt)) != 0)
		return rc;
	wait_quiet(rt);
	weft__rt_leave(rt);
	return 0;
}

int weft_worker_index(void)
{
	return weft__tls.rt ? weft__tls.index : -1;
}

weft_rt *weft_rt_current(void)
{
	return weft__tls.rt;
}

int weft_rt_config(const weft_rt *rt, weft_config *out)
{
	if (!out)
		return WEFT_EINVAL;
	int rc = weft__rt_check(rt);
	if (rc)
		return rc;
	*out = rt->cfg;
	return 0;
}
