/* Task-local storage (weft/local.h).
 *
 * Where the values live. A task's values are a table (weft__locals)
 * allocated at its first weft_tls_set, pointed to by weft__tls.locals
 * while the task runs. The pointer is saved and restored exactly where
 * weft__tls.task is: weft__run_task clears it for the task and puts the
 * outer one back after (a kernel-thread worker runs tasks nested inside
 * weft_wait), and the fiber engine's switch_away keeps it in the parked
 * fiber's frame and restores it on whichever worker resumes the fiber. So
 * the table moves with the task, never with a thread; a __thread variable
 * would stay with the worker. weft_task itself has no room for it (its
 * size is ABI: 96 bytes on LP64, core/task.c) and needs none: only the
 * running task reads its own table.
 *
 * Outside tasks the same pointer holds the thread's own table, freed (its
 * destructors run) by a pthread key's destructor when the thread exits,
 * or as soon as the thread has set every value back to NULL.
 *
 * Keys. A key is a slot index and a generation; the process-wide table of
 * keys holds each slot's current generation and destructor. Deleting a key
 * moves its generation on, so values stored under the old one read as
 * NULL and are never destroyed, also when the slot is reused. A get is a
 * thread-local load, a bounds check, a generation compare and a load. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/internal.h"

#define KEYS          WEFT_TLS_KEYS_MAX
#define GEN_SHIFT     8
#define DTOR_ROUNDS   4
#define INITIAL_SLOTS 8

_Static_assert(KEYS < (1 << GEN_SHIFT), "a slot index fits below the generation");

typedef struct slot {
	uint32_t gen; /* the key generation the value was set under */
	void *value;
} slot;

typedef struct weft__locals {
	size_t cap;  /* slots */
	bool thread; /* a thread's own table (outside tasks) */
	slot s[];
} weft__locals;

static struct {
	/* Odd: the key exists (its generation); even: free. Written under
	 * keys_lock, read anywhere. */
	_Atomic uint32_t gen;
	void (*_Atomic dtor)(void *);
} keys[KEYS];
static pthread_mutex_t keys_lock = PTHREAD_MUTEX_INITIALIZER;

static size_t table_size(size_t cap)
{
	return sizeof(weft__locals) + cap * sizeof(slot);
}

/* ------------------------------------------------------------ keys */

int weft_tls_key_create(weft_tls_key *key, void (*destructor)(void *))
{
	if (!key)
		return WEFT_EINVAL;
	pthread_mutex_lock(&keys_lock);
	for (uint32_t i = 0; i < KEYS; i++) {
		uint32_t g = atomic_load_explicit(&keys[i].gen, memory_order_relaxed);
		if (g & 1)
			continue;
		g = (g + 1) & ((1u << (32 - GEN_SHIFT)) - 1);
		if (!(g & 1))
			g++; /* wrapped to 0 */
		atomic_store_explicit(&keys[i].dtor, destructor, memory_order_relaxed);
		atomic_store_explicit(&keys[i].gen, g, memory_order_release);
		pthread_mutex_unlock(&keys_lock);
		key->id_ = (i + 1) | g << GEN_SHIFT;
		return 0;
	}
	pthread_mutex_unlock(&keys_lock);
	return WEFT_EAGAIN;
}

/* The slot index of a key that exists, or -1. */
static int index_of(weft_tls_key key)
{
	uint32_t i = (key.id_ & ((1u << GEN_SHIFT) - 1)) - 1;
	if (i >= KEYS ||
	    atomic_load_explicit(&keys[i].gen, memory_order_acquire) != key.id_ >> GEN_SHIFT)
		return -1;
	return (int)i;
}

int weft_tls_key_delete(weft_tls_key key)
{
	pthread_mutex_lock(&keys_lock);
	int i = index_of(key);
	if (i >= 0) {
		atomic_store_explicit(&keys[i].dtor, NULL, memory_order_relaxed);
		atomic_fetch_add_explicit(&keys[i].gen, 1, memory_order_release); /* even: free */
	}
	pthread_mutex_unlock(&keys_lock);
	return i >= 0 ? 0 : WEFT_EINVAL;
}

/* ------------------------------------------------------------ values */

void *weft_tls_get(weft_tls_key key)
{
	weft__locals *l = weft__tls.locals;
	uint32_t i = (key.id_ & ((1u << GEN_SHIFT) - 1)) - 1;
	if (!l || i >= l->cap || l->s[i].gen != key.id_ >> GEN_SHIFT)
		return NULL;
	return l->s[i].value;
}

/* The thread's own table is freed at thread exit through this key. */
static pthread_key_t thread_tables;
static pthread_once_t thread_tables_once = PTHREAD_ONCE_INIT;
static void thread_exit(void *table);

static void make_thread_key(void)
{
	if (pthread_key_create(&thread_tables, thread_exit) != 0)
		abort(); /* at process start: the system has no key left for weft */
}

/* A thread's table with no value left goes at once: a thread that never
 * exits (main) then keeps nothing allocated once it cleared its values. */
static void thread_table_maybe_free(weft__locals *l)
{
	for (size_t i = 0; i < l->cap; i++)
		if (l->s[i].value)
			return;
	pthread_setspecific(thread_tables, NULL);
	weft__tls.locals = NULL;
	weft__free(l, table_size(l->cap));
}

int weft_tls_set(weft_tls_key key, void *value)
{
	int i = index_of(key);
	if (i < 0)
		return WEFT_EINVAL;
	weft__locals *l = weft__tls.locals;
	if (!l || (size_t)i >= l->cap) {
		if (!l && !value)
			return 0; /* NULL already */
		size_t cap = l ? l->cap : INITIAL_SLOTS;
		while (cap <= (size_t)i)
			cap *= 2;
		weft__locals *n = weft__alloc(table_size(cap));
		if (!n)
			return WEFT_ENOMEM;
		memset(n, 0, table_size(cap));
		n->cap = cap;
		n->thread = l ? l->thread : !weft__tls.task;
		if (l) {
			memcpy(n->s, l->s, l->cap * sizeof(slot));
			weft__free(l, table_size(l->cap));
		}
		if (n->thread) {
			pthread_once(&thread_tables_once, make_thread_key);
			pthread_setspecific(thread_tables, n);
		}
		weft__tls.locals = l = n;
	}
	l->s[i].gen = key.id_ >> GEN_SHIFT;
	l->s[i].value = value;
	if (!value && l->thread)
		thread_table_maybe_free(l);
	return 0;
}

/* Runs the destructors of the current table until no value is left (or
 * DTOR_ROUNDS passes), then frees it. */
static void end_current(void)
{
	for (int round = 0; round < DTOR_ROUNDS; round++) {
		bool ran = false;
		for (size_t i = 0; weft__tls.locals && i < weft__tls.locals->cap; i++) {
			slot *s = &weft__tls.locals->s[i];
			void *v = s->value;
			if (!v)
				continue;
			s->value = NULL;
			void (*dtor)(void *) =
			        atomic_load_explicit(&keys[i].dtor, memory_order_relaxed);
			if (atomic_load_explicit(&keys[i].gen, memory_order_acquire) != s->gen ||
			    !dtor)
				continue; /* its key was deleted: forgotten */
			dtor(v);          /* may set values again: reread the table */
			ran = true;
		}
		if (!ran)
			break;
	}
	weft__locals *l = weft__tls.locals;
	weft__tls.locals = NULL;
	if (l)
		weft__free(l, table_size(l->cap));
}

void weft__locals_end(void)
{
	end_current();
}

static void thread_exit(void *table)
{
	/* The thread is exiting outside any task: its own table is current. */
	if (weft__tls.locals != table)
		weft__tls.locals = table;
	end_current();
}
