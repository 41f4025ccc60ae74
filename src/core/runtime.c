/* Runtime lifecycle and the post path shared by every model: argument and
 * state checks, capacity, then the model's submit. */
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/futex.h"
#include "core/internal.h"
#include "core/observe.h"
#include "obs/probes.h"

_Thread_local weft__thread_ctx weft__tls __attribute__((tls_model("initial-exec"))) = {.index = -1};

static const weft__model_ops *const models[] = {
        [WEFT_MODEL_THREADS] = &weft__model_threads,
        [WEFT_MODEL_SPAWN] = &weft__model_spawn,
        [WEFT_MODEL_FIBERS] = &weft__model_fibers,
        [WEFT_MODEL_MN] = &weft__model_mn,
};
_Static_assert(sizeof(models) / sizeof(models[0]) == WEFT_MODEL_COUNT_, "one ops table per model");

static bool alive(const weft_rt *rt)
{
	return rt && rt->magic == WEFT__RT_MAGIC;
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
		fprintf(stderr,
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
	weft_rt *rt = weft__alloc(sizeof(*rt));
	if (!rt)
		return WEFT_ENOMEM;
	memset(rt, 0, sizeof(*rt));
	int rc = weft__config_resolve(rt, cfg);
	if (rc == 0) {
		rt->model = models[rt->cfg.model];
		rc = weft__config_model(rt); /* its configure, and what it changed */
	}
	if (rc == 0)
		rc = weft__observe_create(rt);
	if (rc == 0) {
		rt->magic = WEFT__RT_MAGIC;
		rc = rt->model->start(rt);
	}
	if (rc) {
		rt->magic = 0;
		weft__observe_destroy(rt);
		weft__free(rt, sizeof(*rt));
		return rc;
	}
	atomic_fetch_add(&weft__live_runtimes, 1);
	remember_seed(rt);
	*out = rt;
	return 0;
}

int weft_rt_destroy(weft_rt *rt)
{
	return weft_rt_destroy_ex(rt, WEFT_DESTROY_DRAIN, NULL);
}

int weft_rt_destroy_ex(weft_rt *rt, weft_destroy_mode mode, size_t *discarded)
{
	if (!alive(rt) || (mode != WEFT_DESTROY_DRAIN && mode != WEFT_DESTROY_CANCEL))
		return WEFT_EINVAL;
	if (weft__tls.rt == rt)
		return WEFT_EDEADLK;
	int was = 0;
	if (!atomic_compare_exchange_strong(&rt->closing, &was, 1))
		return WEFT_EINVAL; /* another thread is destroying it */
	if (mode == WEFT_DESTROY_CANCEL)
		atomic_store(&rt->cancelling, 1);
	/* Wake weft_post_wait sleepers so they see closing and give up. */
	atomic_fetch_add(&rt->room_seq, 1);
	weft__futex_wake(&rt->room_seq, INT_MAX);

	rt->model->stop(rt);
	/* A weft_post_wait sleeper still inside must leave before rt is freed. */
	while (atomic_load(&rt->room_waiters) > 0) {
		atomic_fetch_add(&rt->room_seq, 1);
		weft__futex_wake(&rt->room_seq, INT_MAX);
		sched_yield();
	}

	weft_stats s;
	weft_stats_get(rt, &s);
	if (discarded)
		*discarded = (size_t)s.cancelled;
	if (rt->cfg.stats)
		weft_stats_print(rt, stderr);
	rt->model->release(rt);
	weft__observe_destroy(rt); /* writes the trace file */
	rt->magic = 0;
	weft__free(rt, sizeof(*rt));
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

/* count_rejected: a refusal counts in stats.rejected (not for the tries
 * weft_post_wait makes while it waits for room). */
static int post(weft_rt *rt, weft_group *g, weft_task *t, bool count_rejected)
{
	if (!alive(rt) || !t || !t->fn_)
		return WEFT_EINVAL;
	uint32_t old = atomic_load_explicit((_Atomic uint32_t *)&t->state_, memory_order_relaxed);
	uint32_t st = old & WEFT__STATE_MASK;
	if (st == WEFT_TASK_QUEUED || st == WEFT_TASK_RUNNING)
		return WEFT_EBUSY;
	if (!atomic_compare_exchange_strong((_Atomic uint32_t *)&t->state_, &old, WEFT_TASK_QUEUED))
		return WEFT_EBUSY; /* another thread posted it just now */
	if (!reserve_capacity(rt)) {
		atomic_store((_Atomic uint32_t *)&t->state_, old & WEFT__STATE_MASK);
		if (count_rejected)
			atomic_fetch_add_explicit(&rt->rejected, 1, memory_order_relaxed);
		return WEFT_EFULL;
	}
	t->group_ = g;
	if (rt->latency || rt->trace) { /* observed: one test when not */
		t->posted_ns_ = weft__latency_now();
		weft__trace(rt, WEFT__TRACE_POST, t, false);
	}
	WEFT__PROBE2(task__post, t, rt);
	t->quanta_ = 0;
	t->epoch_ = 0; /* mlfq: a new arrival, placed by its priority */
	if (g)
		atomic_fetch_add_explicit((_Atomic uint32_t *)&g->pending_, WEFT__GROUP_ONE,
		                          memory_order_relaxed);
	/* A refused submit has released the capacity itself: once it returns,
	 * a destroy in progress may have freed rt. */
	int rc = rt->model->submit(rt, t, weft__tls.rt == rt);
	if (rc) {
		if (g)
			atomic_fetch_sub((_Atomic uint32_t *)&g->pending_, WEFT__GROUP_ONE);
		t->group_ = NULL;
		atomic_store((_Atomic uint32_t *)&t->state_, old & WEFT__STATE_MASK);
	}
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

/* A sleeper announces itself in room_waiters before it tries to post, and
 * weft__release_capacity frees room before it reads room_waiters (both with
 * a full fence between): either the poster finds the room or the releaser
 * sees the sleeper and changes room_seq, so the futex wait cannot miss it. */
int weft_post_wait(weft_rt *rt, weft_task *t)
{
	if (!alive(rt))
		return WEFT_EINVAL;
	for (;;) {
		uint32_t seq = atomic_load(&rt->room_seq);
		atomic_fetch_add(&rt->room_waiters, 1);
		int rc = post(rt, NULL, t, false);
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
	if (!alive(rt))
		return WEFT_EINVAL;
	if (weft__tls.rt == rt)
		return WEFT_EDEADLK;
	rt->model->wait_all(rt);
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
	if (!alive(rt) || !out)
		return WEFT_EINVAL;
	*out = rt->cfg;
	return 0;
}
