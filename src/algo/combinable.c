/* weft_combinable (weft/combinable.h): per-worker slots folded at the end.
 *
 * Whose slot a caller gets is named by an owner key: (runtime, worker
 * index) inside a task, (NULL, a number unique to the thread) elsewhere.
 * Keying by worker rather than by kernel thread is what makes `spawn`
 * work: there a task runs on a thread of its own, and a slot per thread
 * would grow with the number of tasks; the spawn model runs at most one
 * thread per worker index at a time (the next one starts after the last
 * one's task returned), which is all a slot needs. On `threads`, `fibers`
 * and `mn` a worker is one kernel thread for its life, so the key is also
 * the thread.
 *
 * Finding the slot: a one-entry cache per kernel thread (the combinable's
 * id and the owner key it was filled for) answers the common case with
 * three compares and no shared write; a miss walks the slot list (one
 * slot per worker and outside thread: short) and pushes a new slot with a
 * CAS when none matches. Slots are never removed while the combinable is
 * in use, so the walk needs no lock. The cache is checked against the
 * owner key on every call, so a task that moved to another worker (mn)
 * or a new thread for a worker index (spawn) never gets a stale slot.
 *
 * Ids come from one process-wide counter and are never reused, so a cache
 * entry of a destroyed combinable can never match a new one at the same
 * address. */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "core/internal.h"

typedef struct cslot {
	struct cslot *next;
	const void *rt; /* owner: the runtime, or NULL for a thread outside */
	uint64_t who;   /* worker index, or the thread's number */
	size_t bytes;   /* the allocation, for weft__free */
	                /* the caller's slot follows, on its own cache line */
} cslot;

#define SLOT_OFFSET WEFT__CACHE_LINE

static _Atomic uint64_t next_id = 1, next_thread = 1;

typedef struct cache {
	uint64_t cid;
	const void *rt;
	uint64_t who;
	void *slot;
} cache;

static _Thread_local cache last;
static _Thread_local uint64_t thread_number;

static void *data_of(cslot *s)
{
	return (char *)s + SLOT_OFFSET;
}

int weft_combinable_init(weft_combinable *c, size_t size, weft_slot_init_fn init,
                         weft_slot_fini_fn fini, void *arg)
{
	if (!c || size == 0 || size > SIZE_MAX / 2)
		return WEFT_EINVAL;
	*c = (weft_combinable){.size = size, .init = init, .fini = fini, .arg = arg};
	c->id = atomic_fetch_add_explicit(&next_id, 1, memory_order_relaxed);
	return 0;
}

/* The calling thread's owner key: read afresh on every call (a fiber may
 * have moved since the last one). */
static void owner(const void **rt, uint64_t *who)
{
	/* A compensation stand-in carries its blocked worker's index, and may
	 * still finish a task when that worker's wait has ended: it keys its
	 * slot by its own thread, so two threads never share one. */
	if (weft__tls.rt && weft__tls.index >= 0 && !weft__tls.standin) {
		*rt = weft__tls.rt;
		*who = (uint64_t)weft__tls.index;
		return;
	}
	if (!thread_number)
		thread_number = atomic_fetch_add_explicit(&next_thread, 1, memory_order_relaxed);
	*rt = NULL;
	*who = thread_number;
}

static __attribute__((noinline)) void *local_slot(weft_combinable *c)
{
	const void *rt;
	uint64_t who;
	owner(&rt, &who);
	cache *k = &last;
	if (k->cid == c->id && k->rt == rt && k->who == who)
		return k->slot;
	cslot *found = __atomic_load_n((cslot **)&c->head, __ATOMIC_ACQUIRE);
	while (found && !(found->rt == rt && found->who == who))
		found = found->next;
	if (!found) {
		/* Only this owner creates its slot, so no other can appear
		 * meanwhile: push without looking again. */
		size_t bytes = SLOT_OFFSET + c->size;
		found = weft__alloc(bytes);
		if (!found)
			return NULL;
		found->rt = rt;
		found->who = who;
		found->bytes = bytes;
		if (c->init)
			c->init(data_of(found), c->arg);
		found->next = __atomic_load_n((cslot **)&c->head, __ATOMIC_RELAXED);
		while (!__atomic_compare_exchange_n((cslot **)&c->head, &found->next, found, true,
		                                    __ATOMIC_RELEASE, __ATOMIC_RELAXED))
			;
		/* init may have parked, and k be another thread's by now: the
		 * next call caches it. */
		return data_of(found);
	}
	*k = (cache){c->id, rt, who, data_of(found)};
	return data_of(found);
}

void *weft_combinable_local(weft_combinable *c)
{
	return c ? local_slot(c) : NULL;
}

int weft_combinable_update(weft_combinable *c, weft_slot_fn fn, void *arg)
{
	if (!c || !fn)
		return WEFT_EINVAL;
	/* A preemption tick between finding the slot and the end of fn would
	 * let another task of this worker update the same slot (fibers), or
	 * move this one to another worker with the slot of the first (mn). */
	weft__tls.nopreempt++;
	void *slot = local_slot(c);
	if (slot)
		fn(slot, arg);
	weft__tls.nopreempt--;
	return slot ? 0 : WEFT_ENOMEM;
}

int weft_combinable_combine(weft_combinable *c, void *result, weft_slot_fold_fn fold,
                            void *fold_arg)
{
	if (!c || !result || !fold)
		return WEFT_EINVAL;
	if (c->init)
		c->init(result, c->arg);
	else
		memset(result, 0, c->size);
	for (cslot *s = __atomic_load_n((cslot **)&c->head, __ATOMIC_ACQUIRE); s; s = s->next)
		fold(result, data_of(s), fold_arg);
	return 0;
}

int weft_combinable_each(weft_combinable *c, weft_slot_fn fn, void *arg)
{
	if (!c || !fn)
		return WEFT_EINVAL;
	int n = 0;
	for (cslot *s = __atomic_load_n((cslot **)&c->head, __ATOMIC_ACQUIRE); s; s = s->next) {
		fn(data_of(s), arg);
		n++;
	}
	return n;
}

int weft_combinable_clear(weft_combinable *c)
{
	if (!c)
		return WEFT_EINVAL;
	cslot *s = __atomic_exchange_n((cslot **)&c->head, NULL, __ATOMIC_ACQ_REL);
	while (s) {
		cslot *next = s->next;
		if (c->fini)
			c->fini(data_of(s), c->arg);
		weft__free(s, s->bytes);
		s = next;
	}
	/* Slots handed out before are gone: no thread's cache may find them. */
	c->id = atomic_fetch_add_explicit(&next_id, 1, memory_order_relaxed);
	return 0;
}

int weft_combinable_destroy(weft_combinable *c)
{
	return weft_combinable_clear(c);
}
