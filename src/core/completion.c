/* Quiescence and external posts, shared by the models (completion.h). */
#include <limits.h>
#include <sched.h>

#include "core/completion.h"
#include "core/futex.h"

bool weft__quiescent(weft__completion *c, const weft__worker_sums *s, void *state)
{
	uint64_t finished = s->finished(state) + atomic_load(&c->external_refused);
	uint64_t posted = s->posted(state) + atomic_load(&c->external_posted);
	return finished == posted;
}

void weft__external_drain(weft__completion *c)
{
	while (atomic_load_explicit(&c->external_left, memory_order_acquire) !=
	       atomic_load(&c->external_posted))
		sched_yield();
}

void weft__wait_quiescent(weft__completion *c, weft_rt *rt, const weft__worker_sums *s, void *state)
{
	for (;;) {
		uint32_t seq = atomic_load(&c->all_seq);
		atomic_fetch_add(&c->all_waiters, 1);
		if (weft__quiescent(c, s, state)) {
			atomic_fetch_sub(&c->all_waiters, 1);
			return;
		}
		/* While closing, a refused poster bumps external_refused without
		 * waking anyone (it must not touch the runtime afterwards), so
		 * poll rather than rely on a wake-up. */
		int64_t timeout = atomic_load(&rt->closing) ? 1000000 : -1;
		weft__futex_wait(&c->all_seq, seq, timeout);
		atomic_fetch_sub(&c->all_waiters, 1);
	}
}

void weft__notify_quiescent(weft__completion *c, const weft__worker_sums *s, void *state)
{
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&c->all_waiters, memory_order_relaxed) > 0 &&
	    weft__quiescent(c, s, state)) {
		atomic_fetch_add(&c->all_seq, 1);
		weft__futex_wake(&c->all_seq, INT_MAX);
	}
}
