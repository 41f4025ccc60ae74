/** @file
 * Parallel loops: weft_parallel_for runs a body over an index range cut into
 * sub-ranges, weft_parallel_reduce also folds per-sub-range results into one.
 * The shape of oneTBB's parallel_for/parallel_reduce and GCD's
 * dispatch_apply, in C: the body receives a sub-range [lo, hi) rather than
 * one index, so its inner loop is the caller's own and compiles as such.
 *
 * How the range is cut: recursive halving. The calling frame posts the
 * right half as a task (a weft_task on its own stack; a thread outside the
 * workers takes one of a few static slots instead, see weft_parallel_for),
 * runs the left half itself the same way, then waits for the right half;
 * so nothing is allocated, ever, the caller's thread or worker always takes
 * part, and no shared cache line is written per chunk. With a grain > 0 a sub-range
 * is split while it holds more than `grain` iterations, so the body sees at
 * most `grain` iterations per call and, unless the whole range is smaller,
 * more than grain / 2. A thread outside the workers that calls it works on
 * the loop too, as OpenMP's master thread and oneTBB's calling thread do:
 * the loop then runs on workers + 1 threads; to hold a program to
 * WEFT_WORKERS threads, call it from a task. docs/parallel.md has the
 * details and the numbers. */
#ifndef WEFT_PARALLEL_H
#define WEFT_PARALLEL_H

#include "export.h"
#include "runtime.h"
#include "task.h"
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A loop body: runs the iterations lo .. hi-1 (lo < hi). arg is the
 * pointer given to weft_parallel_for. */
typedef void (*weft_range_fn)(size_t lo, size_t hi, void *arg);

/** weft_parallel_for runs body over [begin, end) on rt's workers and the
 * calling thread, cut into sub-ranges, and returns after the last
 * iteration finished. Every iteration runs exactly once; the order of
 * sub-ranges and the threads they run on are unspecified. A grain > 0 is a
 * fixed cut: a sub-range is split while it holds more than grain
 * iterations. grain 0 adapts, as oneTBB's auto_partitioner does: a chunk
 * per worker first (at least two), and a half another thread takes (a
 * steal: some worker was idle) is split one level further, down to chunks
 * of (end - begin) / (64 x workers). Returns 0; 0 at once when begin == end;
 * WEFT_EINVAL for a NULL rt or body, end < begin, or a dead runtime. It
 * never fails half-way: where a post is refused (WEFT_EFULL from a bounded
 * queue, a thread the spawn model cannot create, a destroy under way),
 * that half runs on the calling thread instead, so no iteration is lost.
 *
 * May be called from any thread. From a task of rt, its worker runs chunks
 * and, while it waits for the halves it posted, runs them or other queued
 * tasks (the fork-join guarantee of weft_wait): no deadlock at one worker,
 * on any model, nested in a body or not. Under fibers (one worker) a loop
 * runs in order on that worker without a fiber switch. A thread that is
 * not one of rt's workers (the main thread, a task of another runtime)
 * runs chunks too, and runs itself each half it posted that no worker
 * started by the time it gets there; the tasks of those halves stay queued
 * and finish as no-ops when a worker reaches them, after the call returned
 * (they count in the statistics, occupy a bounded queue meanwhile, and a
 * cancelling destroy counts them as discarded). A caller holding a
 * weft_mutex runs the whole loop itself (it could not run other tasks
 * while waiting). Each split level takes about 200 bytes of the stack it
 * runs on. docs/parallel.md has more. */
WEFT_EXTERN int weft_parallel_for(weft_rt *rt, size_t begin, size_t end, size_t grain,
                                  weft_range_fn body, void *arg);

/** weft_fork_join runs a(a_arg) and b(b_arg), possibly at the same time,
 * and returns when both have returned: the fork-join of two functions
 * (rayon's join, oneTBB's parallel_invoke, Cilk's spawn and sync), on the
 * cheapest path weft has. b is offered to the other workers as a task (a
 * record on the caller's stack: nothing is allocated), a runs at once on
 * the calling thread, and then b runs right there too unless another
 * worker started it meanwhile, in which case the caller waits for it as
 * weft_wait does (a fiber parks, a kernel-thread worker runs other queued
 * tasks). A b that nobody took costs a push and a pop of the worker's own
 * queue and a plain call: no lock, no wake-up, no shared cache line
 * written; the same pair written with weft_post and weft_wait also
 * changes the task's state word three times.
 *
 * Both run as part of the calling task: on its stack (like a recursive
 * call: each nesting level takes a frame), under its weft_cancel_requested
 * and its worker index; only a b that another worker took runs as a task
 * of its own there. Recursion is the intended use (a divide and conquer
 * with weft_fork_join at every level needs no cutoff to be fast).
 *
 * rt NULL means the runtime whose task calls (weft_rt_current()), so a
 * recursion need not carry it. Returns 0, or WEFT_EINVAL for a dead rt, a
 * NULL rt outside any task, or a NULL function.
 * Never fails half-way: where b cannot be posted (a full bounded queue, a
 * thread the spawn model cannot create, a destroy under way) or a
 * cancelling destroy discards it, b runs on the calling thread. May be
 * called from any thread: from a task of rt on any model (no deadlock at
 * one worker, while fiber stacks can be had: docs/process.md); from elsewhere, a runs on the calling thread and b on rt's
 * workers, and the caller sleeps until b is done if it is still running. */
WEFT_EXTERN int weft_fork_join(weft_rt *rt, weft_fn a, void *a_arg, weft_fn b, void *b_arg);

/** The largest accumulator weft_parallel_reduce takes, in bytes. */
#define WEFT_REDUCE_MAX_SIZE 4096

/** What weft_parallel_reduce folds with. An accumulator is size bytes
 * (1 .. WEFT_REDUCE_MAX_SIZE) of the caller's type, aligned for any type.
 * init sets acc to the identity (0 for a sum, +inf for a min, empty bins);
 * body folds the iterations [lo, hi) into acc, and may be called several
 * times on one accumulator with consecutive, ascending sub-ranges; combine
 * folds `right`, which covers the iterations just after those of acc, into
 * acc. combine need not be commutative (it always receives left then
 * right), only associative up to the rounding the caller accepts. arg is
 * the pointer given to weft_parallel_reduce. */
typedef struct weft_reducer {
	size_t size;                                              /**< bytes of one accumulator */
	void (*init)(void *acc, void *arg);                       /**< sets acc to the identity */
	void (*body)(size_t lo, size_t hi, void *acc, void *arg); /**< folds [lo, hi) into acc */
	void (*combine)(void *acc, const void *right, void *arg); /**< folds right into acc */
} weft_reducer;

/** weft_parallel_reduce folds [begin, end) into *result (r->size bytes of
 * the caller's, which need not be initialised: weft calls init on it
 * first) in parallel, as weft_parallel_for does (same errors, contexts and
 * refused posts), except that grain 0 means a fixed cut of about eight
 * chunks per worker, (end - begin) / (8 x workers) rounded up. Returns 0, or WEFT_EINVAL for a NULL rt, r,
 * result, init, body or combine, a size of 0 or above
 * WEFT_REDUCE_MAX_SIZE, or end < begin; begin == end leaves *result at the
 * identity; WEFT_ENOMEM (nothing folded; said on the log when 8 KiB are
 * left for saying it) when called on a fiber with less stack left than the
 * accumulators below need (see Memory).
 *
 * Deterministic: how the range is cut and the order of every combine
 * depend only on begin, end, grain (with grain 0: also the runtime's
 * worker count and the configured stack size) and r->size, never on
 * timing, so a floating-point sum gives the same bits on every run and
 * thread, and with a grain > 0 on every model (with grain 0, runtimes with
 * different worker counts, such as fibers and threads with 2 workers, cut
 * differently). The tree is binary, left
 * before right, which keeps the rounding error of a sum near that of a
 * pairwise sum.
 *
 * Memory: nothing is allocated. The partial results live on the stacks of
 * the splitting frames, one accumulator per split level; so that a large
 * accumulator cannot overrun a fiber stack, the levels that hold one are
 * capped at min(16 KiB, stack size / 4) / size (at least 4 where four fit
 * in that quarter, else at least 1), and below that depth a frame folds its
 * consecutive chunks into the one accumulator it has. */
WEFT_EXTERN int weft_parallel_reduce(weft_rt *rt, size_t begin, size_t end, size_t grain,
                                     const weft_reducer *r, void *arg, void *result);

#ifdef __cplusplus
}
#endif

#endif
