/* weft__lock: a small mutex for short critical sections (the ready queue,
 * the idle list). The futex algorithm is in core/lock_raw.h; this adds the
 * preemption guard: a fiber holding one is never preempted
 * (weft__tls.nopreempt), because the next fiber on the worker could want it
 * and would sleep on the futex for ever. */
#ifndef WEFT_SRC_CORE_LOCK_H
#define WEFT_SRC_CORE_LOCK_H

#include "core/internal.h"
#include "core/lock_raw.h"

static inline void weft__lock_acquire(weft__lock *l)
{
	weft__tls.nopreempt++;
	weft__lock_acquire_raw(l);
}

static inline void weft__lock_release(weft__lock *l)
{
	weft__lock_release_raw(l);
	weft__tls.nopreempt--;
}

#endif
