/* Parallel loops (weft/parallel.h): weft_parallel_for and
 * weft_parallel_reduce, on top of weft_post and weft_wait only, so they
 * work on every model without a hook of their own.
 *
 * Shape: recursive halving, as oneTBB's partitioners and Cilk's cilk_for.
 * A frame whose range is to be split posts its right half as a task that
 * lives in the frame, runs the left half itself (recursively), then waits
 * for the right half. So:
 *   - nothing is allocated, ever: one weft_task (and, for a reduction, one
 *     accumulator) per split level, on the stack of the frame that split
 *     (a caller outside the workers: in static slots, see below);
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
 * How far to split. A grain > 0 is a fixed cut (simple_partitioner): split
 * while a range holds more than the grain. weft_parallel_for's grain 0 is
 * auto_partitioner's idea: a chunk per worker, and one more level for each
 * half that starts on another thread than the one that posted it (a steal
 * says a worker was idle), down to a floor; so a loop nobody helps with
 * costs a post or two, and one whose halves are all taken spreads itself.
 * Reductions keep a fixed cut even with grain 0, because the cut is the
 * tree of combines (see reduce_range).
 *
 * Alternatives rejected:
 *   - an atomic "next chunk" counter that every participant increments
 *     (GCD's dispatch_apply, OpenMP's schedule(dynamic)): one cache line
 *     written by every core per chunk, which is what stops scaling at 16-64
 *     cores, and the caller's grain becomes a contention knob;
 *   - cutting the range into W x k tasks up front (what a weft user wrote by
 *     hand before this file): the poster posts every task through one
 *     queue, and a worker that finishes early has nothing left to split;
 *   - from the main thread, posting the whole loop as one task and sleeping
 *     until it is done: two hand-offs between threads on every loop, each a
 *     scheduler delay when the machine is loaded (measured: 1.15 ns per
 *     iteration in bench/peers' parallel-for at load 11, against 0.73 for
 *     the slots below);
 *   - per-worker accumulators for reductions: the combination order would
 *     then depend on which worker ran what, so a floating-point sum would
 *     differ from run to run. Here the tree of combines is a function of the
 *     range, the grain and the accumulator size only.
 *
 * Refused posts (a full bounded queue, spawn out of threads, a destroy under
 * way) and halves a cancelling destroy discarded run on the frame's own
 * thread, in the same place of the tree: no iteration is lost, and a
 * reduction gives the same bits. */
#include <sched.h>
#include <stdalign.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/internal.h"
#include "core/observe.h"
#include "core/spin.h"
#include "fiber/stack.h"

/* The automatic grain of weft_parallel_reduce: chunks per worker, enough
 * that a worker which finishes early finds halves left to take, few enough
 * that posts and waits (a few hundred ns each) stay a few per cent of a
 * loop worth parallelising. */
#define REDUCE_CHUNKS_PER_WORKER 8

/* The automatic grain of weft_parallel_for (oneTBB's auto_partitioner):
 * split log2(workers) levels (a chunk per worker, at least two), and a half
 * that runs on another thread than the one that posted it (a steal:
 * somebody was idle) FOR_STEAL_LEVELS more, never below chunks of
 * (end - begin) / (FOR_FLOOR_CHUNKS x workers). Starting with more chunks
 * only adds posts (and, from a thread outside the workers, one more thread
 * at work than there are CPUs): the steals cut what the idle need. */
#define FOR_STEAL_LEVELS 1
#define FOR_FLOOR_CHUNKS 64

/* Bytes of accumulators one chain of splitting frames may hold (below, a
 * frame folds its chunks into the accumulator it was given): at most
 * REDUCE_STACK_BUDGET and a quarter of the runtime's fiber stack, never
 * fewer than REDUCE_MIN_LEVELS levels that still fit in that quarter, and
 * at least one. The plan depends on the configured stack size, not on
 * where the call sits on its stack, so a reduction stays deterministic;
 * a call made with less room left on its fiber stack than the plan needs
 * (REDUCE_LEVEL_FRAME bytes of frames per level besides its accumulator,
 * REDUCE_RESERVE for the body and the calls below it) is refused with
 * WEFT_ENOMEM rather than run into the guard page, and said on the log
 * only with REDUCE_LOG_STACK left: formatting the line (and a log hook,
 * or the lazy binding of stdio's calls) would overrun it too. */
#define REDUCE_STACK_BUDGET 16384
#define REDUCE_MIN_LEVELS   4
#define REDUCE_LEVEL_FRAME  512
#define REDUCE_RESERVE      4096
#if defined(__SANITIZE_ADDRESS__)
#define REDUCE_LOG_STACK 16384 /* ASan's frames are several times larger */
#else
#define REDUCE_LOG_STACK 8192
#endif

/* A thread outside the workers waiting for a half a worker runs spins this
 * long (yielding the CPU after JOIN_PAUSES pauses, for when the machine is
 * oversubscribed) before it sleeps in weft_wait: halves are about as long
 * as the part the waiter just ran, and a sleep and a wake-up cost
 * microseconds each, every time. */
#define JOIN_SPIN_NS 50000
#define JOIN_PAUSES  100

/* Slots for the halves a thread that is not one of the runtime's workers
 * posts along its own path (see "Outside callers" below). */
#define STASH_SETS  16
#define STASH_DEPTH 24

#define MAX_LEVELS 64 /* more than any range of size_t can use */

/* One call: read-only while it runs; lives in the caller's frame. */
typedef struct loop {
	weft_rt *rt;
	size_t grain;
	void *arg;
	weft_range_fn body;    /* weft_parallel_for */
	const weft_reducer *r; /* weft_parallel_reduce */
	size_t acc_units;      /* reduce: accumulator size in max_align_t */
	int acc_levels;        /* reduce: split levels that hold an accumulator */
	int steal_levels;      /* for: more levels for a stolen half */
	bool post;             /* false: run every half on the calling thread */
} loop;

/* A right half: a task posted by, and living in, the frame that split. */
typedef struct half {
	weft_task task;
	const loop *l;
	size_t lo, hi;
	int level;          /* for: split levels left; reduce: levels from the top */
	const void *poster; /* for: the thread that posted it */
	void *acc;          /* reduce: folded into, then combined by the splitter */
} half;

static _Thread_local char thread_mark; /* its address names the thread */

/* n / d rounded up, without overflow near SIZE_MAX. */
static size_t ceil_div(size_t n, size_t d)
{
	return n / d + (n % d != 0);
}

static size_t mid_of(size_t lo, size_t hi)
{
	return lo + (hi - lo) / 2;
}

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Posts t; false when it was not posted (the caller then runs its half). */
static bool post(const loop *l, weft_task *t, weft_fn fn, void *arg)
{
	return l->post && weft_task_init(t, fn, arg) == 0 && weft__post_private(l->rt, t) == 0;
}

/* Who runs a half the frame posted (or meant to). */
typedef enum joined {
	JOINED, /* a worker ran it: done */
	TAKEN,  /* nobody started it: taken back, the frame runs it as a task */
	KEPT,   /* an outside caller's slot it claimed first: runs it itself */
	HERE,   /* not posted, or discarded by a cancelling destroy: runs it */
} joined;

/* Waits for a posted half; unless JOINED the caller runs it. A half no
 * worker started is taken back and run as a plain call (as
 * weft_fork_join does). A worker goes straight to weft_wait, which runs
 * queued tasks meanwhile (the halves the thief of this one posted among
 * them) or parks its fiber. A thread that is no worker cannot help: it
 * spins first, then sleeps in weft_wait. */
static joined join(const loop *l, weft_task *t)
{
	if (weft__take_back(l->rt, t))
		return TAKEN;
	if (!weft__tls.rt) {
		int64_t deadline = 0;
		for (unsigned i = 0;; i++) {
			weft_task_state s = weft_task_state_of(t);
			if (s != WEFT_TASK_QUEUED && s != WEFT_TASK_RUNNING)
				break;
			if (i % 64 == 0) {
				int64_t now = now_ns();
				if (!deadline)
					deadline = now + JOIN_SPIN_NS;
				else if (now > deadline)
					break;
			}
			if (i < JOIN_PAUSES)
				weft__cpu_relax();
			else
				sched_yield();
		}
	}
	return weft_wait(t) == 0 ? JOINED : HERE;
}

/* Around a half the caller runs itself, when observed: a half taken back
 * is still a task (statistics count it in stats.run: its latencies and its
 * slice, where its post's arrow ends); one an outside caller kept is a
 * slice of that caller's (its task runs as a no-op elsewhere). */
static int64_t half_begin(const loop *l, const weft_task *t, joined j)
{
	if (!weft__observed(l->rt))
		return 0;
	if (j == TAKEN)
		return weft__inline_begin(l->rt, t);
	if (j == KEPT)
		weft__trace(l->rt, WEFT__TRACE_HALF_BEGIN, NULL, false);
	return 0;
}

static void half_end(const loop *l, const weft_task *t, joined j, int64_t started)
{
	if (!weft__observed(l->rt))
		return;
	if (j == TAKEN)
		weft__inline_end(l->rt, t, started);
	else if (j == KEPT)
		weft__trace(l->rt, WEFT__TRACE_INLINE_END, NULL, false);
}

/* ------------------------------------------------------------ for */

static void for_range(const loop *l, size_t lo, size_t hi, int levels);

static void for_half(void *arg)
{
	half *h = arg;
	int levels = h->level;
	if (h->poster != &thread_mark)
		levels += h->l->steal_levels;
	for_range(h->l, h->lo, h->hi, levels);
}

/* Runs [lo, hi), splitting it while it holds more than the grain and
 * levels are left. */
static void for_range(const loop *l, size_t lo, size_t hi, int levels)
{
	if (hi - lo <= l->grain || levels <= 0) {
		l->body(lo, hi, l->arg);
		return;
	}
	size_t mid = mid_of(lo, hi);
	half h = {.l = l, .lo = mid, .hi = hi, .level = levels - 1, .poster = &thread_mark};
	bool posted = post(l, &h.task, for_half, &h);
	for_range(l, lo, mid, levels - 1);
	joined j = posted ? join(l, &h.task) : HERE;
	if (j != JOINED) {
		int64_t started = half_begin(l, &h.task, j);
		for_range(l, mid, hi, levels - 1);
		half_end(l, &h.task, j, started);
	}
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
	bool posted = post(l, &h.task, reduce_half, &h);
	reduce_range(l, lo, mid, level + 1, acc);
	joined j = posted ? join(l, &h.task) : HERE;
	if (j != JOINED) {
		int64_t started = half_begin(l, &h.task, j);
		reduce_range(l, mid, hi, level + 1, right);
		half_end(l, &h.task, j, started);
	}
	l->r->combine(acc, right, l->arg);
}

/* ------------------------------------------------------------ outside callers
 *
 * A thread that is not one of rt's workers (the main thread, a task of
 * another runtime) cannot run queued tasks while it waits: a half it
 * posted and no worker started (the workers are busy elsewhere, asleep, or
 * descheduled on an oversubscribed machine) would hold it up. So along its
 * own path it posts halves it can take back: each is a slot with a claim
 * word, which the task sets to CLAIMED when it starts and the caller to CLAIM_KEPT
 * when it gets there first and runs the half itself (as oneTBB's master
 * thread pops back what no worker stole). The task of a kept half is still
 * queued and will run as a no-op, so the slot cannot live in the caller's
 * frame, which returns before that: slots come from STASH_SETS static sets,
 * one per call (a set is reused once every task in it finished), and a call
 * that finds none free splits on its frames as workers do. Below
 * STASH_DEPTH levels of its own path it does too. */

enum { OPEN = 0, CLAIMED = 1, CLAIM_KEPT = 2 }; /* a slot's claim */

typedef struct slot {
	alignas(64) weft_task task;
	_Atomic int claim;
	const loop *l;
	size_t lo, hi;
	int level;
	void *acc;
} slot;

typedef struct stash {
	alignas(64) _Atomic int busy; /* a call uses it */
	slot s[STASH_DEPTH];
} stash;

static stash stashes[STASH_SETS];

static bool in_flight(const weft_task *t)
{
	weft_task_state s = weft_task_state_of(t);
	return s == WEFT_TASK_QUEUED || s == WEFT_TASK_RUNNING;
}

static stash *stash_take(void)
{
	static _Thread_local unsigned hint;
	for (unsigned i = 0; i < STASH_SETS; i++) {
		unsigned k = (hint + i) % STASH_SETS;
		stash *st = &stashes[k];
		if (atomic_load_explicit(&st->busy, memory_order_relaxed) ||
		    atomic_exchange_explicit(&st->busy, 1, memory_order_acquire))
			continue;
		bool quiet = true;
		for (int d = 0; d < STASH_DEPTH && quiet; d++)
			quiet = !in_flight(&st->s[d].task);
		if (quiet) {
			hint = k;
			return st;
		}
		atomic_store_explicit(&st->busy, 0, memory_order_release);
	}
	return NULL;
}

static void stash_give(stash *st)
{
	atomic_store_explicit(&st->busy, 0, memory_order_release);
}

/* Fills slot s with a half and posts it; false when not posted. */
static bool slot_post(const loop *l, slot *s, weft_fn fn, size_t lo, size_t hi, int level,
                      void *acc)
{
	s->l = l;
	s->lo = lo;
	s->hi = hi;
	s->level = level;
	s->acc = acc;
	atomic_store_explicit(&s->claim, OPEN, memory_order_relaxed);
	return post(l, &s->task, fn, s);
}

/* Whether the caller runs the half of slot s itself (it was not posted,
 * or no worker started it: not JOINED). Otherwise it waits for it. */
static joined slot_keep(slot *s, bool posted)
{
	int open = OPEN;
	if (!posted)
		return HERE;
	if (atomic_compare_exchange_strong_explicit(&s->claim, &open, CLAIM_KEPT,
	                                            memory_order_acq_rel, memory_order_acquire))
		return KEPT;
	return join(s->l, &s->task);
}

/* The task of a slot: runs the half unless the caller kept it. */
static bool slot_start(slot *s)
{
	int open = OPEN;
	return atomic_compare_exchange_strong_explicit(&s->claim, &open, CLAIMED,
	                                               memory_order_acq_rel, memory_order_relaxed);
}

static void slot_for(void *arg)
{
	slot *s = arg;
	if (slot_start(s))
		for_range(s->l, s->lo, s->hi, s->level + s->l->steal_levels);
}

/* for_range for an outside caller: its own halves from st, kept halves run
 * by seq (l without posts: nobody came for them, so nobody is free). */
static void for_outside(const loop *l, const loop *seq, stash *st, int d, size_t lo, size_t hi,
                        int levels)
{
	if (hi - lo <= l->grain || levels <= 0) {
		l->body(lo, hi, l->arg);
		return;
	}
	if (d == STASH_DEPTH) {
		for_range(l, lo, hi, levels);
		return;
	}
	size_t mid = mid_of(lo, hi);
	slot *s = &st->s[d];
	bool posted = slot_post(l, s, slot_for, mid, hi, levels - 1, NULL);
	for_outside(l, seq, st, d + 1, lo, mid, levels - 1);
	joined j = slot_keep(s, posted);
	if (j != JOINED) {
		int64_t started = half_begin(l, &s->task, j);
		for_range(seq, mid, hi, levels - 1);
		half_end(l, &s->task, j, started);
	}
}

static void slot_reduce(void *arg)
{
	slot *s = arg;
	if (slot_start(s))
		reduce_range(s->l, s->lo, s->hi, s->level, s->acc);
}

/* reduce_range for an outside caller: the same tree, as for_outside. */
static void reduce_outside(const loop *l, const loop *seq, stash *st, int d, size_t lo, size_t hi,
                           int level, void *acc)
{
	if (hi - lo <= l->grain) {
		l->r->body(lo, hi, acc, l->arg);
		return;
	}
	if (level >= l->acc_levels) {
		reduce_fold(l, lo, hi, acc);
		return;
	}
	if (d == STASH_DEPTH) {
		reduce_range(l, lo, hi, level, acc);
		return;
	}
	max_align_t right[l->acc_units];
	size_t mid = mid_of(lo, hi);
	l->r->init(right, l->arg);
	slot *s = &st->s[d];
	bool posted = slot_post(l, s, slot_reduce, mid, hi, level + 1, right);
	reduce_outside(l, seq, st, d + 1, lo, mid, level + 1, acc);
	joined j = slot_keep(s, posted);
	if (j != JOINED) {
		int64_t started = half_begin(l, &s->task, j);
		reduce_range(seq, mid, hi, level + 1, right);
		half_end(l, &s->task, j, started);
	}
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
	*l = (loop){
	        .rt = rt,
	        .grain = grain,
	        /* A task holding a weft_mutex waits without running other
	         * tasks (task.h): its halves could wait for it forever. */
	        .post = weft__tls.mutexes_held == 0,
	};
	return 0;
}

/* The stash for this call, or NULL when the caller is one of rt's workers
 * or cannot post. */
static stash *outside_stash(const loop *l)
{
	if (!l->post || weft__tls.rt == l->rt)
		return NULL;
	return stash_take();
}

/* A loop called from a thread that is none of rt's workers is a slice on
 * that thread's track while tracing (the chunks it runs itself are its
 * work: no task's slice holds them). True when it began one. */
static bool loop_begin(const loop *l)
{
	if (!l->rt->trace || weft__tls.rt == l->rt)
		return false;
	weft__trace(l->rt, WEFT__TRACE_LOOP_BEGIN, NULL, false);
	return true;
}

static void loop_end(const loop *l, bool began)
{
	if (began)
		weft__trace(l->rt, WEFT__TRACE_INLINE_END, NULL, false);
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
	int levels = MAX_LEVELS;
	if (grain == 0) {
		size_t workers = (size_t)rt->cfg.workers, chunks = workers * FOR_FLOOR_CHUNKS;
		l.grain = ceil_div(end - begin, chunks);
		levels = 1;
		while (((size_t)1 << levels) < workers)
			levels++;
		l.steal_levels = FOR_STEAL_LEVELS;
	}
	bool outside = loop_begin(&l);
	stash *st = outside_stash(&l);
	if (st) {
		loop seq = l;
		seq.post = false;
		atomic_fetch_add(&rt->outside_helpers, 1);
		for_outside(&l, &seq, st, 0, begin, end, levels);
		atomic_fetch_sub(&rt->outside_helpers, 1);
		stash_give(st);
	} else {
		for_range(&l, begin, end, levels);
	}
	loop_end(&l, outside);
	return 0;
}

int weft_parallel_reduce(weft_rt *rt, size_t begin, size_t end, size_t grain, const weft_reducer *r,
                         void *arg, void *result)
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
	if (grain == 0) {
		size_t chunks = (size_t)rt->cfg.workers * REDUCE_CHUNKS_PER_WORKER;
		l.grain = ceil_div(end - begin, chunks);
	}
	l.acc_units = (r->size + sizeof(max_align_t) - 1) / sizeof(max_align_t);
	size_t acc_bytes = l.acc_units * sizeof(max_align_t);
	size_t stack = rt->cfg.stack_size ? rt->cfg.stack_size : (size_t)WEFT__DEFAULT_STACK;
	size_t budget = stack / 4 < REDUCE_STACK_BUDGET ? stack / 4 : REDUCE_STACK_BUDGET;
	size_t levels = budget / acc_bytes;
	if (levels < REDUCE_MIN_LEVELS)
		levels = REDUCE_MIN_LEVELS * acc_bytes <= stack / 4 ? REDUCE_MIN_LEVELS
		         : levels < 1                               ? 1
		                                                    : levels;
	l.acc_levels = levels > MAX_LEVELS ? MAX_LEVELS : (int)levels;
	const weft__stack *fs = weft__current_stack;
	size_t need = (size_t)l.acc_levels * (acc_bytes + REDUCE_LEVEL_FRAME) + REDUCE_RESERVE;
	uintptr_t here = (uintptr_t)__builtin_frame_address(0);
	size_t left = fs ? (size_t)(here - (uintptr_t)fs->base) : SIZE_MAX;
	if (left < need) {
		if (left < REDUCE_LOG_STACK)
			return WEFT_ENOMEM;
		weft__log(WEFT_LOG_ERROR,
		          "weft: weft_parallel_reduce needs about %zu bytes of stack for "
		          "accumulators of %zu bytes and this fiber has %zu left: raise "
		          "WEFT_STACK_SIZE (now %zu) or fold into a smaller accumulator "
		          "(WEFT_ENOMEM)\n",
		          need, r->size, left, stack);
		return WEFT_ENOMEM;
	}
	r->init(result, arg);
	if (begin == end)
		return 0;
	bool outside = loop_begin(&l);
	stash *st = outside_stash(&l);
	if (st) {
		loop seq = l;
		seq.post = false;
		atomic_fetch_add(&rt->outside_helpers, 1);
		reduce_outside(&l, &seq, st, 0, begin, end, 0, result);
		atomic_fetch_sub(&rt->outside_helpers, 1);
		stash_give(st);
	} else {
		reduce_range(&l, begin, end, 0, result);
	}
	loop_end(&l, outside);
	return 0;
}
