/* The parking lot behind weft__word_wait for fibers (see parking.h).
 *
 * A fiber announces itself in its bucket's count before it checks the word,
 * and a waker changes the word before it reads the count; both sides are
 * sequentially consistent, so either the waker sees the count and takes the
 * bucket lock (by then the fiber is queued: it queues under that lock) or
 * the fiber sees the new word and does not park. A waker that sees a zero
 * count touches nothing else: weft_wait's finisher pays one load. */
#include <limits.h>

#include "core/futex.h"
#include "core/internal.h"
#include "core/lock.h"
#include "core/parking.h"

#define LOT_BUCKETS 64

typedef struct parked {
	struct parked *next;
	const void *key;
	void *fiber;
} parked;

typedef struct bucket {
	WEFT__ALIGNED weft__lock lock;
	_Atomic uint32_t count; /* fibers announced or queued here */
	parked *head;
} bucket;

static bucket lot[LOT_BUCKETS];

static bucket *bucket_of(const void *key)
{
	uintptr_t k = (uintptr_t)key;
	return &lot[((k >> 3) ^ (k >> 11)) % LOT_BUCKETS];
}

void weft__word_wait(_Atomic uint32_t *word, uint32_t expected)
{
	void *fiber = weft__tls.fiber;
	if (!fiber) {
		weft__futex_wait(word, expected, -1);
		return;
	}
	bucket *b = bucket_of(word);
	parked p = {.key = word, .fiber = fiber};
	weft__lock_acquire(&b->lock);
	atomic_fetch_add(&b->count, 1);
	if (atomic_load(word) != expected) {
		atomic_fetch_sub(&b->count, 1);
		weft__lock_release(&b->lock);
		return;
	}
	p.next = b->head;
	b->head = &p;
	weft__lock_release(&b->lock);
	weft__fiber_park(fiber);
}

void weft__word_wake_all(_Atomic uint32_t *word)
{
	weft__futex_wake(word, INT_MAX);
	bucket *b = bucket_of(word);
	if (atomic_load(&b->count) == 0)
		return;
	parked *woken = NULL;
	uint32_t n = 0;
	weft__lock_acquire(&b->lock);
	for (parked **pp = &b->head; *pp;) {
		parked *p = *pp;
		if (p->key == word) {
			*pp = p->next;
			p->next = woken;
			woken = p;
			n++;
		} else {
			pp = &p->next;
		}
	}
	atomic_fetch_sub(&b->count, n);
	weft__lock_release(&b->lock);
	while (woken) { /* read both fields first: the fiber may end at once */
		parked *next = woken->next;
		void *fiber = woken->fiber;
		weft__fiber_unpark(fiber);
		woken = next;
	}
}
