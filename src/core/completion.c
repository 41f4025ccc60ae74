/* Quiescence and external posts, shared by the models (completion.h). */
#include <limits.h>
#include <sched.h>

#include "core/completion.h"
#include "core/futex.h"

bool weft__quiescent(weft__completion *c, const weft__worker_sums *s, void *state)
{
	uint64_t finished = s->finished(state) + atomic_load(&c->external_refused) +
	                    atomic_load(&c->standin_finished);
	uint64_t posted = s->posted(state) + atomic_load(&c->external_posted) +
	                  atomic_load(&c->standin_posted);
	return finished == posted;
}

void weft__external_refused(weft__completion *c)
{
	atomic_fetch_add(&c->external_refused, 1);
	if (atomic_load(&c->all_waiters) > 0) {
		atomic_fetch_add(&c->all_seq, 1);
		weft__futex_wake(&c->all_seq, INT_MAX);
	}
}

void weft__external_drain(weft__completion *c)
{
	while (atomic_load_explicit(&c->external_left, memory_order_acquire) !=
	       atomic_load(&c->external_posted))
		sched_yield();
}

void weft__wait_quiescent(weft__completion *c, const weft__worker_sums *s, void *state)
{
	for (;;) {
		uint32_t seq = atomic_load(&c->all_seq);
		atomic_fetch_add(&c->all_waiters, 1);
		if (weft__quiescent(c, s, state)) {
			atomic_fetch_sub(&c->all_waiters, 1);
			return;
		}
		weft__futex_wait(&c->all_seq, seq, -1);
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
