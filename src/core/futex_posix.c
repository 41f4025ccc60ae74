/* core/futex.h without futex(2): a wait-on-address table, as a port to a
 * system with no such call (or the portable build, WEFT_PORTABLE) needs.
 *
 * 256 buckets, each a mutex and a list of the threads waiting on words
 * that hash to it; a waiter sleeps on its own condition variable, on its
 * stack, so a wake-up for one word never wakes the threads of another word
 * that shares the bucket (one broadcast per bucket would, and would make
 * weft__futex_wake's count a lie). Cost: a lock, a signal and a context
 * switch per wake, against the kernel's single call. The signal is sent
 * after the bucket's lock is let go, so that the woken thread does not wake
 * into a held lock (a second sleep and wake-up); the waiter then waits for
 * the signal to be over (pending) before its condition variable ends with
 * its stack frame.
 *
 * No lost wake-up: a waiter compares the word with expected under its
 * bucket's lock and queues itself before it lets go, and a waker changes
 * the word before it calls weft__futex_wake, which takes the same lock;
 * so either the waiter sees the new value and returns, or the waker finds
 * it queued. A waker touches only the address (the key) and the queued
 * records (on waiting threads' stacks, which stay while they are queued,
 * since a waiter leaves the list under the lock before it returns): never
 * the word, which may be freed by then, as futex.h promises.
 *
 * Timeouts are measured on CLOCK_MONOTONIC (pthread_condattr_setclock) where
 * the system has clock selection; elsewhere (macOS has no
 * pthread_condattr_setclock) on CLOCK_REALTIME, which a clock step would
 * shorten or lengthen: a port there would use
 * pthread_cond_timedwait_relative_np or os_sync_wait_on_address instead
 * (docs/platforms.md).
 *
 * Does not support words in shared memory (nor does the Linux one), and
 * does not make timer slack finer (POSIX has no such setting). */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdalign.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "core/futex.h"

#if defined(_POSIX_CLOCK_SELECTION) && _POSIX_CLOCK_SELECTION >= 0
#define MONOTONIC_WAITS 1
#define WAIT_CLOCK      CLOCK_MONOTONIC
#else
#define WAIT_CLOCK CLOCK_REALTIME
#endif

/* Longer than this is no limit (and keeps the deadline's seconds far from
 * overflowing a 32-bit time_t's neighbourhood). */
#define FOREVER_NS (INT64_C(1) << 50) /* 13 days */

enum { NBUCKETS = 256 };

typedef struct waiter {
	struct waiter *next, *prev;
	const void *addr; /* the word waited on: the key */
	pthread_cond_t cond;
	bool woken;           /* under the bucket's lock */
	_Atomic bool pending; /* a waker is yet to signal cond (see wake) */
} waiter;

typedef struct bucket {
	alignas(64) pthread_mutex_t lock;
	waiter *head, *tail; /* FIFO: the longest waiter is woken first */
} bucket;

static bucket table[NBUCKETS];
static pthread_condattr_t cond_attr;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void init_table(void)
{
	for (int i = 0; i < NBUCKETS; i++) {
		if (pthread_mutex_init(&table[i].lock, NULL) != 0)
			abort(); /* only without memory at the first wait */
		table[i].head = table[i].tail = NULL;
	}
	if (pthread_condattr_init(&cond_attr) != 0)
		abort();
#ifdef MONOTONIC_WAITS
	if (pthread_condattr_setclock(&cond_attr, CLOCK_MONOTONIC) != 0)
		abort(); /* the system said it has clock selection */
#endif
}

static bucket *bucket_of(const void *addr)
{
	pthread_once(&once, init_table);
	/* Fibonacci hashing of the address without its low bits (words are
	 * 4-byte aligned, and neighbours often share a line). */
	uint64_t h = ((uint64_t)(uintptr_t)addr >> 2) * UINT64_C(0x9e3779b97f4a7c15);
	return &table[h >> 56];
}

void weft__timer_slack_fine(void)
{
}

void weft__futex_fork_child(void)
{
	/* The child has one thread, the one that forked, which was not in
	 * here: every record queued belongs to a thread the child does not
	 * have, and a lock may be held by one. Made anew. */
	if (pthread_once(&once, init_table) != 0)
		return;
	for (int i = 0; i < NBUCKETS; i++) {
		pthread_mutex_init(&table[i].lock, NULL);
		table[i].head = table[i].tail = NULL;
	}
}

static void unlink_waiter(bucket *b, waiter *w)
{
	if (w->prev)
		w->prev->next = w->next;
	else
		b->head = w->next;
	if (w->next)
		w->next->prev = w->prev;
	else
		b->tail = w->prev;
}

void weft__futex_wait(_Atomic uint32_t *word, uint32_t expected, int64_t timeout_ns)
{
	bucket *b = bucket_of((const void *)word);
	struct timespec deadline;
	if (timeout_ns > FOREVER_NS)
		timeout_ns = -1;
	if (timeout_ns > 0) {
		clock_gettime(WAIT_CLOCK, &deadline);
		int64_t ns = (int64_t)deadline.tv_nsec + timeout_ns % 1000000000;
		deadline.tv_sec += (time_t)(timeout_ns / 1000000000 + ns / 1000000000);
		deadline.tv_nsec = (long)(ns % 1000000000);
	}
	pthread_mutex_lock(&b->lock);
	if (atomic_load(word) != expected) {
		pthread_mutex_unlock(&b->lock);
		return;
	}
	waiter w = {.addr = (const void *)word, .next = NULL, .prev = b->tail, .woken = false};
	atomic_init(&w.pending, false);
	if (pthread_cond_init(&w.cond, &cond_attr) != 0) {
		pthread_mutex_unlock(&b->lock);
		return; /* a spurious return: the caller looks again */
	}
	if (b->tail)
		b->tail->next = &w;
	else
		b->head = &w;
	b->tail = &w;
	/* One sleep: a spurious return is allowed (the caller loops), and a
	 * wake-up for another word cannot reach this condition variable. */
	if (timeout_ns < 0)
		pthread_cond_wait(&w.cond, &b->lock);
	else if (timeout_ns > 0)
		pthread_cond_timedwait(&w.cond, &b->lock, &deadline);
	if (!w.woken)
		unlink_waiter(b, &w); /* timed out, or spurious: still queued */
	pthread_mutex_unlock(&b->lock);
	/* A waker that took us off the list may still be signalling: a few
	 * instructions, after its unlock. */
	while (atomic_load_explicit(&w.pending, memory_order_acquire))
		sched_yield();
	pthread_cond_destroy(&w.cond);
}

int weft__futex_wake(_Atomic uint32_t *word, int n)
{
	bucket *b = bucket_of((const void *)word);
	int woken = 0;
	waiter *signal = NULL; /* taken off the list, to signal after the unlock */
	pthread_mutex_lock(&b->lock);
	for (waiter *w = b->head, *next; w && woken < n; w = next) {
		next = w->next;
		if (w->addr != (const void *)word)
			continue;
		unlink_waiter(b, w);
		w->woken = true;
		atomic_store_explicit(&w->pending, true, memory_order_relaxed);
		w->next = signal;
		signal = w;
		woken++;
	}
	pthread_mutex_unlock(&b->lock);
	while (signal) {
		waiter *w = signal;
		signal = w->next; /* read before pending goes: w may end then */
		pthread_cond_signal(&w->cond);
		atomic_store_explicit(&w->pending, false, memory_order_release);
	}
	return woken;
}
