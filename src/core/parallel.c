/* Parallel loops (weft/parallel.h): weft_parallel_for and
 * weft_parallel_reduce, on top of weft_post and weft_wait only, so they
 * work on every model without a hook of their own.
 *
 * Shape: recursive halving, as oneTBB's simple_partitioner and Cilk's
 * cilk_for. A frame whose range holds more than `grain` iterations posts
 * its right half as a task that lives in the frame, runs the left half
 * itself (recursively), then waits for the right half. So:
 *   - nothing is allocated, ever: one weft_task (and, for a reduction, one
 *     accumulator) per split level, on the stack of the frame that split;
 *   - the caller takes part: it runs the leftmost chunk first and, while
 *     it waits, weft_wait's fork-join rule (task.h) has it run the halves
 *     it posted when nobody took them (threads, spawn: the waiting worker
 *     runs queued tasks, newest first; fibers, mn: the awaited task runs
 *     inline on the waiting fiber when it is the worker's newest post), so
 *     a loop never needs a second worker and never deadlocks at one;
 *   - nothing shared is written per chunk by this file: each half is its
 *     own task, posted once and waited for once by the frame that owns it
 *     (what the model writes per post is the model's: mn pushes onto the
 *     poster's own deque; threads CASes one shared inbox);
 *   - a worker that takes a half from another worker takes a big piece
 *     (the oldest posts are the biggest), then splits it locally.
 *
 * Alternatives rejected:
 *   - an atomic "next chunk" counter that every participant increments
 *     (GCD's dispatch_apply, OpenMP's schedule(dynamic)): one cache line
 *     written by every core per chunk, which is what stops scaling at 16-64
 *     cores, and the caller's grain becomes a contention knob;
 *   - cutting the range into W x k tasks up front (what a weft user wrote by
 *     hand before this file): the poster posts every task through one
 *     queue, and a worker that finishes early has nothing left to split;
 *   - per-worker accumulators for reductions: the combination order would
 *     then depend on which worker ran what, so a floating-point sum would
 *     differ from run to run. Here the tree of combines is a function of the
 *     range, the grain and the accumulator size only (see reduce_range).
 *
 * Refused posts (a full bounded queue, spawn out of threads, a destroy under
 * way) and halves a cancelling destroy discarded run on the frame's own
 * thread, in the same place of the tree: no iteration is lost, and a
 * reduction gives the same bits. */
#include <stdalign.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "core/internal.h"

/* Chunks per worker of the automatic grain: enough that a worker which
 * finishes early finds halves left to take, few enough that the posts and
 * waits (a few hundred ns each) stay a few per cent of a loop worth
 * parallelising. */
#define AUTO_CHUNKS_PER_WORKER 8

/* Bytes of accumulators one chain of splitting frames may hold (below, a
 * frame folds its chunks into the accumulator it was given), and the
 * fewest split levels with an accumulator of their own. */
#define REDUCE_STACK_BUDGET 16384
#define REDUCE_MIN_LEVELS   4

/* One call: read-only while it runs; lives in the caller's frame. */
typedef struct loop {
	weft_rt *rt;
	size_t grain;
	void *arg;
	weft_range_fn body;     /* weft_parallel_for */
	const weft_reducer *r;  /* weft_parallel_reduce */
	size_t acc_units;       /* reduce: accumulator size in max_align_t */
	int acc_levels;         /* reduce: split levels that hold an accumulator */
	bool post;              /* false: the caller cannot wait for tasks */
} loop;

/* A right half: a task posted by, and living in, the frame that split. */
typedef struct half {
	weft_task task;
	const loop *l;
	size_t lo, hi;
	int level;
	void *acc; /* reduce: folded into, then combined by the splitter */
} half;

static size_t mid_of(size_t lo, size_t hi)
{
	return lo + (hi - lo) / 2;
}

/* Posts h; false when the runtime refused it (the caller then runs it). */
static bool post_half(half *h, weft_fn fn)
{
	if (!h->l->post || weft_task_init(&h->task, fn, h) != 0)
		return false;
	return weft_post(h->l->rt, &h->task) == 0;
}

/* Waits for a posted half; false when it did not run (a cancelling destroy
 * discarded it), and the caller runs it. */
static bool join_half(half *h)
{
	return weft_wait(&h->task) == 0;
}

/* ------------------------------------------------------------ for */

static void for_range(const loop *l, size_t lo, size_t hi);

static void for_half(void *arg)
{
	half *h = arg;
	for_range(h->l, h->lo, h->hi);
}

static void for_range(const loop *l, size_t lo, size_t hi)
{
	if (hi - lo <= l->grain) {
		l->body(lo, hi, l->arg);
		return;
	}
	size_t mid = mid_of(lo, hi);
	half h = {.l = l, .lo = mid, .hi = hi};
	bool posted = post_half(&h, for_half);
	for_range(l, lo, mid);
	if (!posted || !join_half(&h))
		for_range(l, mid, hi);
}

/* ------------------------------------------------------------ reduce */

/* Folds [lo, hi) into acc, cutting it as reduce_range would, without
 * accumulators of its own: below acc_levels, and nowhere else. */
static void reduce_fold(const loop *l, size_t lo, size_t hi, void *acc)
{
	while (hi - lo > l->grain) {
		size_t mid = mid_of(lo, hi);
		reduce_fold(l, lo, mid, acc);
		lo = mid;
	}
	l->r->body(lo, hi, acc, l->arg);
}

static void reduce_range(const loop *l, size_t lo, size_t hi, int level, void *acc);

static void reduce_half(void *arg)
{
	half *h = arg;
	reduce_range(h->l, h->lo, h->hi, h->level, h->acc);
}

/* Folds [lo, hi) into acc, which holds the fold of the iterations just
 * before lo (or the identity): acc = (acc + left) + right, right folded
 * into an accumulator of this frame. The tree depends on lo, hi, the grain
 * and acc_levels only, so every run combines the same partials in the same
 * order. */
static void reduce_range(const loop *l, size_t lo, size_t hi, int level, void *acc)
{
	if (hi - lo <= l->grain) {
		l->r->body(lo, hi, acc, l->arg);
		return;
	}
	if (level >= l->acc_levels) {
		reduce_fold(l, lo, hi, acc);
		return;
	}
	max_align_t right[l->acc_units];
	size_t mid = mid_of(lo, hi);
	l->r->init(right, l->arg);
	half h = {.l = l, .lo = mid, .hi = hi, .level = level + 1, .acc = right};
	bool posted = post_half(&h, reduce_half);
	reduce_range(l, lo, mid, level + 1, acc);
	if (!posted || !join_half(&h))
		reduce_range(l, mid, hi, level + 1, right);
	l->r->combine(acc, right, l->arg);
}

/* ------------------------------------------------------------ entry */

static int loop_init(loop *l, weft_rt *rt, size_t begin, size_t end, size_t grain)
{
	if (!rt || end < begin)
		return WEFT_EINVAL;
	int rc = weft__rt_check(rt);
	if (rc)
		return rc;
	if (grain == 0) {
		size_t chunks = (size_t)rt->cfg.workers * AUTO_CHUNKS_PER_WORKER;
		grain = (end - begin + chunks - 1) / chunks;
	}
	*l = (loop){
	        .rt = rt,
	        .grain = grain ? grain : 1,
	        /* A task holding a weft_mutex waits without running other
	         * tasks (task.h): its halves could wait for it forever. */
	        .post = weft__tls.mutexes_held == 0,
	};
	return 0;
}

int weft_parallel_for(weft_rt *rt, size_t begin, size_t end, size_t grain, weft_range_fn body,
                      void *arg)
{
	if (!body)
		return WEFT_EINVAL;
	loop l;
	int rc = loop_init(&l, rt, begin, end, grain);
	if (rc || begin == end)
		return rc;
	l.body = body;
	l.arg = arg;
	for_range(&l, begin, end);
	return 0;
}

int weft_parallel_reduce(weft_rt *rt, size_t begin, size_t end, size_t grain,
                         const weft_reducer *r, void *arg, void *result)
{
	if (!r || !result || !r->init || !r->body || !r->combine || r->size == 0 ||
	    r->size > WEFT_REDUCE_MAX_SIZE)
		return WEFT_EINVAL;
	loop l;
	int rc = loop_init(&l, rt, begin, end, grain);
	if (rc)
		return rc;
	l.r = r;
	l.arg = arg;
	l.acc_units = (r->size + sizeof(max_align_t) - 1) / sizeof(max_align_t);
	size_t levels = REDUCE_STACK_BUDGET / (l.acc_units * sizeof(max_align_t));
	l.acc_levels = levels < REDUCE_MIN_LEVELS ? REDUCE_MIN_LEVELS : levels > 64 ? 64 : (int)levels;
	r->init(result, arg);
	if (begin != end)
		reduce_range(&l, begin, end, 0, result);
	return 0;
}
