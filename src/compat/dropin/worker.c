/* libweft-worker.a: the Rutgers thread-worker API's own function names
 * (worker_create, worker_yield, worker_exit, worker_join, worker_mutex_*,
 * worker_setschedprio, print_app_stats), for a benchmark compiled against
 * its own thread-worker.h. Each forwards to weft's (src/compat/worker.c).
 * See dropin.h.
 *
 * worker_t is the seed's `uint` in both headers, and the thread functions'
 * signatures are the seed's, so those calls forward as they are. The mutex
 * is the exception: the seed's skeleton left `worker_mutex_t` for the
 * student to fill in, so its size is whatever the program's header says
 * (the skeleton's empty struct is 0 bytes in GNU C), and weft cannot keep
 * its weft_mutex inside it. The program's mutex is therefore only a key:
 * weft's mutex lives in a node of a side table found from the program
 * mutex's address, and the program's bytes are never read or written.
 *
 * The table: a fixed array of buckets, each a singly linked list of nodes
 * that are never unlinked or freed (a destroyed mutex's node is marked free
 * and reused by a later worker_mutex_init), so that lookups, which every
 * lock and unlock does, take no lock: they walk the bucket with acquire
 * loads and compare keys. A node is published by storing its key last
 * (release), after its mutex is initialised. New nodes are pushed with a
 * compare-and-swap on the bucket head that expects the head the walk
 * started from, so two threads locking the same never-initialised mutex
 * cannot both add a node for it. No kernel mutex is taken anywhere: the
 * callers are fibers that the timer may preempt. */
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#define WEFT_NO_USE_WORKERS 1 /* no pthread_* -> worker_* renaming here */
#include <weft/compat/thread-worker.h>

#include "dropin.h"

enum {
	BUCKETS = 256,
	KEY_FREE = 0,   /* node free for reuse (its mutex was destroyed) */
	KEY_CLAIMED = 1 /* being reinitialised by worker_mutex_init */
};

struct node {
	_Atomic uintptr_t key; /* program mutex's address, KEY_FREE or KEY_CLAIMED */
	worker_mutex_t m;      /* weft's mutex (src/compat/worker.c) */
	struct node *next;     /* written once, before the node is pushed */
};

static _Atomic(struct node *) buckets[BUCKETS];

static _Atomic(struct node *) *bucket_of(uintptr_t key)
{
	uint64_t h = (uint64_t)key * UINT64_C(0x9E3779B97F4A7C15);
	return &buckets[h >> 56]; /* 8 bits: BUCKETS */
}

static struct node *find(struct node *n, uintptr_t key, struct node **free_node)
{
	for (; n; n = n->next) {
		uintptr_t k = atomic_load_explicit(&n->key, memory_order_acquire);
		if (k == key)
			return n;
		if (k == KEY_FREE && free_node && !*free_node)
			*free_node = n;
	}
	return NULL;
}

/* The node of mutex `key`, or NULL. */
static worker_mutex_t *lookup(const void *mutex)
{
	uintptr_t key = (uintptr_t)mutex;
	struct node *n =
	        find(atomic_load_explicit(bucket_of(key), memory_order_acquire), key, NULL);
	return n ? &n->m : NULL;
}

/* The node of mutex `key`, made (with an unlocked mutex) when there is
 * none. reinit: worker_mutex_init, which also resets a node that exists
 * and may reuse a free node. NULL when memory runs out. */
static worker_mutex_t *lookup_or_add(const void *mutex, bool reinit)
{
	uintptr_t key = (uintptr_t)mutex;
	_Atomic(struct node *) *b = bucket_of(key);
	struct node *head = atomic_load_explicit(b, memory_order_acquire);
	struct node *fresh = NULL;
	for (;;) {
		struct node *free_node = NULL;
		struct node *n = find(head, key, reinit ? &free_node : NULL);
		if (n) {
			free(fresh); /* lost a race to add it: use theirs */
			if (reinit)
				worker_mutex_init(&n->m, NULL);
			return &n->m;
		}
		uintptr_t expect = KEY_FREE;
		if (free_node && !fresh &&
		    atomic_compare_exchange_strong(&free_node->key, &expect, KEY_CLAIMED)) {
			worker_mutex_init(&free_node->m, NULL);
			atomic_store_explicit(&free_node->key, key, memory_order_release);
			return &free_node->m;
		}
		if (!fresh) {
			fresh = calloc(1, sizeof(*fresh));
			if (!fresh)
				return NULL;
			worker_mutex_init(&fresh->m, NULL);
			atomic_init(&fresh->key, key);
		}
		fresh->next = head;
		if (atomic_compare_exchange_weak_explicit(b, &head, fresh, memory_order_release,
		                                          memory_order_acquire))
			return &fresh->m;
		/* head now holds the new head: walk again. */
	}
}

/* ------------------------------------------------------------ the seed's names */

WEFT_DROPIN int dropin_worker_create(worker_t *thread, pthread_attr_t *attr,
                                     void *(*function)(void *), void *arg)
        WEFT__DROPIN_SYM(worker_create);
WEFT_DROPIN int dropin_worker_yield(void) WEFT__DROPIN_SYM(worker_yield);
WEFT_DROPIN __attribute__((noreturn)) void dropin_worker_exit(void *value_ptr)
        WEFT__DROPIN_SYM(worker_exit);
WEFT_DROPIN int dropin_worker_join(worker_t thread, void **value_ptr) WEFT__DROPIN_SYM(worker_join);
WEFT_DROPIN int dropin_worker_mutex_init(void *mutex, const pthread_mutexattr_t *mutexattr)
        WEFT__DROPIN_SYM(worker_mutex_init);
WEFT_DROPIN int dropin_worker_mutex_lock(void *mutex) WEFT__DROPIN_SYM(worker_mutex_lock);
WEFT_DROPIN int dropin_worker_mutex_unlock(void *mutex) WEFT__DROPIN_SYM(worker_mutex_unlock);
WEFT_DROPIN int dropin_worker_mutex_destroy(void *mutex) WEFT__DROPIN_SYM(worker_mutex_destroy);
WEFT_DROPIN int dropin_worker_setschedprio(worker_t thread, int prio)
        WEFT__DROPIN_SYM(worker_setschedprio);
WEFT_DROPIN void dropin_print_app_stats(void) WEFT__DROPIN_SYM(print_app_stats);

int dropin_worker_create(worker_t *thread, pthread_attr_t *attr, void *(*function)(void *),
                         void *arg)
{
	return worker_create(thread, attr, function, arg);
}

int dropin_worker_yield(void)
{
	return worker_yield();
}

void dropin_worker_exit(void *value_ptr)
{
	worker_exit(value_ptr);
}

int dropin_worker_join(worker_t thread, void **value_ptr)
{
	return worker_join(thread, value_ptr);
}

/* Returns 0, or -1 for NULL or when memory runs out. */
int dropin_worker_mutex_init(void *mutex, const pthread_mutexattr_t *mutexattr)
{
	(void)mutexattr;
	return mutex && lookup_or_add(mutex, true) ? 0 : -1;
}

/* A mutex never initialised is taken as an unlocked one, as a zeroed
 * pthread_mutex_t is (the seed's own code may well have worked that way). */
int dropin_worker_mutex_lock(void *mutex)
{
	if (!mutex)
		return -1;
	worker_mutex_t *m = lookup(mutex);
	if (!m)
		m = lookup_or_add(mutex, false);
	return m ? worker_mutex_lock(m) : -1;
}

int dropin_worker_mutex_unlock(void *mutex)
{
	worker_mutex_t *m = mutex ? lookup(mutex) : NULL;
	return m ? worker_mutex_unlock(m) : -1;
}

/* Fails, as weft's does, while the mutex is locked; otherwise frees the
 * node for reuse. Destroying a mutex never initialised succeeds. */
int dropin_worker_mutex_destroy(void *mutex)
{
	if (!mutex)
		return -1;
	worker_mutex_t *m = lookup(mutex);
	if (!m)
		return 0;
	if (worker_mutex_destroy(m) != 0)
		return -1;
	struct node *n = (struct node *)((char *)m - offsetof(struct node, m));
	atomic_store_explicit(&n->key, KEY_FREE, memory_order_release);
	return 0;
}

int dropin_worker_setschedprio(worker_t thread, int prio)
{
	return worker_setschedprio(thread, prio);
}

void dropin_print_app_stats(void)
{
	print_app_stats();
}
