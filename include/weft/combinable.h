/** @file
 * Per-worker storage with a combine step: a weft_combinable holds one slot
 * of the caller's type per worker (and per other thread that asks),
 * created the first time that worker asks for it, and folds every slot
 * into one result at the end. oneTBB's combinable and
 * enumerable_thread_specific, in C: the shape for a reduction whose
 * partial result owns memory (a hash table of word counts) or is too big
 * for weft_parallel_reduce's accumulator, or for counting without a shared
 * cache line.
 *
 * Whose slot: inside a task of a runtime, the slot of that runtime's
 * worker running the task (weft_worker_index()); on any other thread, the
 * thread's own. So two tasks that run at the same time never share a
 * slot; tasks that run one after the other on one worker (every fiber of
 * the `fibers` model, a task and the tasks its worker runs while it waits)
 * do, one at a time.
 *
 * What a slot pointer may be held across: only code that cannot switch
 * the task away. Under `mn` a task that parks may resume on another
 * worker, and under every model its worker runs other tasks while it is
 * parked or waiting, which use the same slot; so a pointer from
 * weft_combinable_local is good until the task next calls something that
 * may park, wait or yield (weft_wait, weft_group_wait, weft_fork_join,
 * weft_parallel_*, weft_yield, weft_sleep_ns, weft_wait_fd, weft_blocking,
 * any primitive of sync.h), and must be asked for again after it. With
 * timer preemption (WEFT_PREEMPT=timer) a fiber may be switched away
 * anywhere in the program's own code: update slots there with
 * weft_combinable_update, which holds preemption off around the update. */
#ifndef WEFT_COMBINABLE_H
#define WEFT_COMBINABLE_H

#include "export.h"
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Sets a new slot to its initial value (the identity of the fold). */
typedef void (*weft_slot_init_fn)(void *slot, void *arg);
/** Releases what a slot owns, at clear or destroy (not the slot itself). */
typedef void (*weft_slot_fini_fn)(void *slot, void *arg);
/** Visits a slot (weft_combinable_each) or updates it
 * (weft_combinable_update). */
typedef void (*weft_slot_fn)(void *slot, void *arg);
/** Folds slot into result (weft_combinable_combine). */
typedef void (*weft_slot_fold_fn)(void *result, const void *slot, void *arg);

/** A combinable: caller-owned storage, set up by weft_combinable_init.
 * The fields are private. */
typedef struct weft_combinable {
	/** @cond WEFT_PRIVATE */
	size_t size;
	weft_slot_init_fn init;
	weft_slot_fini_fn fini;
	void *arg;
	uint64_t id; /* unique for the process's life: names it in caches */
	void *head;  /* slots, newest first; pushed with a CAS */
	void *reserved[4];
	/** @endcond */
} weft_combinable;

/** weft_combinable_init sets c up for slots of size bytes (aligned to a
 * cache line, so slots of different workers never share one). init, if
 * not NULL, sets each new slot (else it starts zeroed); fini, if not NULL,
 * releases what a slot owns when c is cleared or destroyed; arg is passed
 * to both. No slot exists until one is asked for. Returns 0, or
 * WEFT_EINVAL for a NULL c or a size of 0. Allocates nothing. */
WEFT_EXTERN int weft_combinable_init(weft_combinable *c, size_t size, weft_slot_init_fn init,
                                     weft_slot_fini_fn fini, void *arg);

/** weft_combinable_local returns the calling worker's slot of c (or the
 * calling thread's, outside tasks), creating and initialising it on the
 * first call from that worker or thread: a few ns once it exists. NULL
 * for a NULL c, or when memory for a new slot cannot be had. The pointer
 * stays valid until weft_combinable_clear or weft_combinable_destroy, but
 * it is the calling task's to use only until it next parks, waits or
 * yields (see the header's comment). May be called from any thread. */
WEFT_EXTERN void *weft_combinable_local(weft_combinable *c);

/** weft_combinable_update calls fn(slot, arg) on the caller's slot (as
 * weft_combinable_local finds it) with timer preemption held off, so the
 * update is never interleaved with another task's on the same worker
 * under WEFT_PREEMPT=timer. fn must not park, wait or yield. Returns 0,
 * WEFT_EINVAL for a NULL c or fn, WEFT_ENOMEM when a new slot cannot be
 * allocated (fn not called). */
WEFT_EXTERN int weft_combinable_update(weft_combinable *c, weft_slot_fn fn, void *arg);

/** weft_combinable_combine folds every slot of c into result: first
 * init(result, arg) of weft_combinable_init (zeroes with none), then
 * fold(result, slot, fold_arg) for each slot, in an unspecified order (so
 * fold should be commutative, and a floating-point sum may differ in its
 * last bits from run to run). Call it when no other thread uses c (after
 * the work that filled it was waited for). Returns 0, or WEFT_EINVAL for a
 * NULL c, result or fold. */
WEFT_EXTERN int weft_combinable_combine(weft_combinable *c, void *result, weft_slot_fold_fn fold,
                                        void *fold_arg);

/** weft_combinable_each calls fn(slot, arg) for every slot of c, in an
 * unspecified order; as weft_combinable_combine, when no other thread
 * uses c. Returns the number of slots, or WEFT_EINVAL for a NULL c or fn. */
WEFT_EXTERN int weft_combinable_each(weft_combinable *c, weft_slot_fn fn, void *arg);

/** weft_combinable_clear releases every slot of c (fini first, if set);
 * the next weft_combinable_local creates them afresh. When no other thread
 * uses c. Returns 0, or WEFT_EINVAL for a NULL c. */
WEFT_EXTERN int weft_combinable_clear(weft_combinable *c);

/** weft_combinable_destroy releases every slot of c, as
 * weft_combinable_clear; c may be initialised again. When no other thread
 * uses c. Returns 0, or WEFT_EINVAL for a NULL c. */
WEFT_EXTERN int weft_combinable_destroy(weft_combinable *c);

#ifdef __cplusplus
}
#endif

#endif
