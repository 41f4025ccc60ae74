/* weft_fork_join (weft/parallel.h): the fork-join of two functions, as
 * rayon's join does it. b goes on the caller's own queue as a task whose
 * record lives in this frame; a runs at once; then b is taken back if no
 * other worker started it (the model's take_back: a pop of the caller's
 * own deque) and runs as a plain call. Only a stolen b costs what a task
 * costs: its state word, and a wait that parks (fibers) or helps (kernel
 * threads) until the thief is done.
 *
 * Why a call of its own rather than weft_post + weft_wait: the pair cannot
 * know that the task will be waited for at once on this stack, so its
 * state word goes QUEUED -> RUNNING -> DONE with a locked instruction each,
 * and the run is counted, traced and timed as a task's; here a b that
 * nobody took is known to be private from the pop on. It is still a task
 * as statistics and traces go (counted in stats.run by the model's
 * take_back): when they are on, its latencies and its slice are recorded
 * around the plain call (weft__inline_begin/end; one test when off). */
#include "core/internal.h"
#include "core/observe.h"

bool weft__take_back(weft_rt *rt, weft_task *t)
{
	if (!rt->model->take_back || !rt->model->take_back(rt, t))
		return false;
	/* Private again: finished, so that weft_task_init at this address
	 * later does not take it for a queued task. */
	atomic_store_explicit((_Atomic uint32_t *)&t->state_, WEFT_TASK_DONE, memory_order_relaxed);
	return true;
}

static void join_b(weft_rt *rt, weft_task *tb, weft_fn b, void *b_arg);

int weft_fork_join(weft_rt *rt, weft_fn a, void *a_arg, weft_fn b, void *b_arg)
{
	if (!a || !b)
		return WEFT_EINVAL;
	if (!rt)
		rt = weft__tls
		             .rt; /* the calling task's: saves a layer (weft.hpp) a lookup per call */
	int rc = weft__rt_check(rt);
	if (rc)
		return rc;
	/* Called from a thread that is none of rt's workers (the main
	 * thread): its halves are its work, a slice on its track while
	 * tracing, as a loop's are (core/parallel.c). */
	bool slice = weft__tls.rt != rt && rt->trace;
	if (slice)
		weft__trace(rt, WEFT__TRACE_JOIN_BEGIN, NULL, false);
	weft_task tb;
	weft_task_init(&tb, b, b_arg);
	bool posted = weft__post_private(rt, &tb) == 0;
	a(a_arg);
	if (!posted)
		b(b_arg);
	else
		join_b(rt, &tb, b, b_arg);
	if (slice)
		weft__trace(rt, WEFT__TRACE_INLINE_END, NULL, false);
	return 0;
}

static void join_b(weft_rt *rt, weft_task *tb, weft_fn b, void *b_arg)
{
	if (weft__take_back(rt, tb)) {
		/* Nobody took it: a task still as statistics and traces go. */
		if (weft__observed(rt)) {
			int64_t started = weft__inline_begin(rt, tb);
			b(b_arg);
			weft__inline_end(rt, tb, started);
		} else {
			b(b_arg);
		}
	} else if (weft_wait(tb) == WEFT_ECANCELED) {
		b(b_arg); /* a cancelling destroy discarded it */
	}
}
