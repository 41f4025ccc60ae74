/* weft__lock's algorithm without the preemption guard (core/lock.h adds
 * it): three states on one futex word, after Drepper's "Futexes Are Tricky"
 * (mutex 3): 0 free, 1 locked, 2 locked with sleepers. A brief spin before
 * sleeping, because holders keep it for tens of nanoseconds and sleeping
 * costs microseconds. Not recursive, not error-checking.
 *
 * Knows nothing of the runtime, so lower layers (obs/) can use it. It does
 * not hold off preemption: a fiber that takes it must have done so itself
 * (weft__tls.nopreempt, as core/lock.h and core/observe.h do), or the next
 * fiber on the worker could want it and sleep on the futex for ever. */
#ifndef WEFT_SRC_CORE_LOCK_RAW_H
#define WEFT_SRC_CORE_LOCK_RAW_H

#include <stdatomic.h>
#include <stdint.h>

#include "core/futex.h"
#include "core/spin.h"

#define WEFT__LOCK_SPINS 100

typedef struct weft__lock {
	_Atomic uint32_t word;
} weft__lock;

static inline void weft__lock_acquire_raw(weft__lock *l)
{
	uint32_t c = 0;
	if (atomic_compare_exchange_strong_explicit(&l->word, &c, 1, memory_order_acquire,
	                                            memory_order_relaxed))
		return;
	for (int i = 0; i < WEFT__LOCK_SPINS; i++) {
		weft__cpu_relax();
		c = atomic_load_explicit(&l->word, memory_order_relaxed);
		if (c == 0 && atomic_compare_exchange_weak_explicit(
		                      &l->word, &c, 1, memory_order_acquire, memory_order_relaxed))
			return;
	}
	if (c != 2)
		c = atomic_exchange_explicit(&l->word, 2, memory_order_acquire);
	while (c != 0) {
		weft__futex_wait(&l->word, 2, -1);
		c = atomic_exchange_explicit(&l->word, 2, memory_order_acquire);
	}
}

static inline void weft__lock_release_raw(weft__lock *l)
{
	if (atomic_exchange_explicit(&l->word, 0, memory_order_release) == 2)
		weft__futex_wake(&l->word, 1);
}

#endif
