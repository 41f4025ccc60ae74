/* weft__lock: a small mutex for short critical sections (the ready queue,
 * the idle list). Three states on one futex word, after Drepper's "Futexes
 * Are Tricky" (mutex 3): 0 free, 1 locked, 2 locked with sleepers. A brief
 * spin before sleeping, because holders keep it for tens of nanoseconds and
 * sleeping costs microseconds. Not recursive, not error-checking. A fiber
 * holding one is never preempted (weft__tls.nopreempt): the next fiber on
 * the worker could want it and would sleep on the futex for ever. */
#ifndef WEFT_SRC_CORE_LOCK_H
#define WEFT_SRC_CORE_LOCK_H

#include <stdatomic.h>
#include <stdint.h>

#include "core/futex.h"
#include "core/internal.h"
#include "core/spin.h"

#define WEFT__LOCK_SPINS 100

typedef struct weft__lock {
	_Atomic uint32_t word;
} weft__lock;

static inline void weft__lock_acquire(weft__lock *l)
{
	weft__tls.nopreempt++;
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

static inline void weft__lock_release(weft__lock *l)
{
	if (atomic_exchange_explicit(&l->word, 0, memory_order_release) == 2)
		weft__futex_wake(&l->word, 1);
	weft__tls.nopreempt--;
}

#endif
