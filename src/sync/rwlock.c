/* weft_rwlock: a reader-writer lock with one state word and the FIFO of
 * waiters every primitive has (waiter.h).
 *
 * The word (weft__sync.state, used atomically):
 *
 *   WRITER   a writer holds the lock
 *   WWAIT    writers are queued: arriving readers queue too
 *   RWAIT    readers are queued
 *   count    readers holding it (state / READER)
 *
 * The flags change only under the internal lock, with the queue, so they
 * say what the queue holds. Outside the lock only the fast paths touch the
 * word: a reader adds READER while neither WRITER nor WWAIT is set, a
 * writer turns 0 into WRITER, a reader leaves by subtracting READER, a
 * writer with nobody queued turns WRITER into 0.
 *
 * Policy (Go's sync.RWMutex, and for the same reasons). A queued writer
 * keeps new readers out, so a stream of readers cannot starve it; when a
 * writer unlocks, every reader queued behind it goes in at once, before
 * the next writer, so a stream of writers cannot starve readers. Writer
 * preference alone (glibc's PREFER_WRITER_NONRECURSIVE) starves readers
 * under steady writes; reader preference (glibc's default) starves
 * writers under steady reads. Each wait is therefore bounded by the
 * writers queued ahead of it and one batch of readers.
 *
 * Hand-off. Whoever frees the lock with waiters queued gives it to them
 * under the internal lock (WRITER set for the writer, or the readers
 * counted in), never leaving it free for a barger: the batch rule above
 * depends on it. Readers spin a little before they queue (kernel threads
 * only: a fiber's holder cannot run on its worker meanwhile), which is
 * what keeps the common case, a short write among many reads, from
 * putting every reader to sleep.
 *
 * Ordering. A waiter sets its flag with a CAS that requires the lock still
 * unavailable to it, under the internal lock, and queues before releasing
 * that lock; a holder whose leaving sees a flag takes the same lock to
 * hand over. Either the holder's fast path came first (the waiter's CAS
 * fails and it finds the lock available) or the holder sees the flag and
 * finds the waiter queued. The last reader out (the one whose subtraction
 * reaches zero with WWAIT set) is the only one that hands to a writer:
 * nothing can change the word meanwhile, since WWAIT keeps readers out and
 * the word is not 0 for writers. */
#include <stdatomic.h>
#include <string.h>

#include "core/clock.h"
#include "core/internal.h"
#include "core/spin.h"
#include "sync/waiter.h"

#define WRITER      1u
#define WWAIT       2u
#define RWAIT       4u
#define READER      8u
#define READERS(st) ((st) / READER)

#define SPINS       64 /* re-reads of the word before a kernel thread queues */
#define NO_DEADLINE INT64_MAX

enum { HANDED = 1 }; /* waiter result: the lock is ours */

/* A waiter's kind, in its data pointer. */
static char reader_tag, writer_tag;
#define IS_READER(w) ((w)->data == &reader_tag)

static _Atomic uint32_t *word(weft__sync *s)
{
	return (_Atomic uint32_t *)(void *)&s->state;
}

int weft_rwlock_init(weft_rwlock *l)
{
	if (!l)
		return WEFT_EINVAL;
	memset(l, 0, sizeof(*l));
	return 0;
}

/* ------------------------------------------------------------ queue */

/* Takes the queued readers (all) or the first queued writer off s. */
static weft__waiter *take(weft__sync *s, bool readers)
{
	weft__waiter *list = NULL, **lt = &list, *prev = NULL;
	for (weft__waiter *w = s->head, *next; w; w = next) {
		next = w->next;
		if (IS_READER(w) != readers) {
			prev = w;
			continue;
		}
		if (prev)
			prev->next = next;
		else
			s->head = next;
		if (s->tail == w)
			s->tail = prev;
		w->next = NULL;
		w->result = HANDED;
		*lt = w;
		lt = &w->next;
		if (!readers)
			break;
	}
	return list;
}

static bool queued(weft__sync *s, bool readers)
{
	for (weft__waiter *w = s->head; w; w = w->next)
		if (IS_READER(w) == readers)
			return true;
	return false;
}

/* Caller holds the internal lock. Unless a writer holds the lock: with
 * prefer_writer (the last reader left) the first queued writer gets it if
 * no reader holds it by now; else, or with no writer queued, the queued
 * readers go in. Grants it, fixes the flags and
 * returns the waiters to unpark once the internal lock is released. */
static weft__waiter *grant(weft__sync *s, bool prefer_writer)
{
	_Atomic uint32_t *st = word(s);
	uint32_t old = atomic_load_explicit(st, memory_order_relaxed);
	weft__waiter *list = NULL;
	if (old & WRITER)
		return NULL; /* an earlier hand-over already gave it to a writer */
	if (prefer_writer && READERS(old) == 0 && (list = take(s, false)) != NULL) {
		uint32_t set = WRITER, clear = queued(s, false) ? 0 : WWAIT;
		/* Nothing else changes the word now (see the essay). */
		atomic_store_explicit(st, (old | set) & ~clear, memory_order_relaxed);
		return list;
	}
	if (prefer_writer && queued(s, false))
		return NULL; /* readers still hold: the last one out hands over */
	list = take(s, true);
	uint32_t n = 0;
	for (weft__waiter *w = list; w; w = w->next)
		n++;
	uint32_t clear = RWAIT | (queued(s, false) ? 0 : WWAIT), new;
	do {
		new = (old + n * READER) & ~clear;
	} while (!atomic_compare_exchange_weak_explicit(st, &old, new, memory_order_relaxed,
	                                                memory_order_relaxed));
	return list;
}

/* ------------------------------------------------------------ waiting */

/* Queues the caller as kind unless blocked(word) stopped holding; then
 * parks. Returns 0 owning the lock (handed over or taken at once),
 * WEFT_ETIMEDOUT having left the queue. */
static int queue_and_park(weft__sync *s, bool reader, int64_t deadline)
{
	_Atomic uint32_t *st = word(s);
	weft__waiter w;
	weft__waiter_init(&w, reader ? &reader_tag : &writer_tag);
	weft__lock_acquire(&s->lock);
	uint32_t old = atomic_load_explicit(st, memory_order_relaxed);
	for (;;) {
		bool free = reader ? !(old & (WRITER | WWAIT)) : old == 0;
		uint32_t new =
		        free ? (reader ? old + READER : WRITER) : old | (reader ? RWAIT : WWAIT);
		if (!atomic_compare_exchange_weak_explicit(st, &old, new, memory_order_acquire,
		                                           memory_order_relaxed))
			continue;
		if (free) {
			weft__lock_release(&s->lock);
			return 0;
		}
		break;
	}
	weft__sync_push(s, &w);
	weft__lock_release(&s->lock);
	if (deadline == NO_DEADLINE) {
		weft__waiter_park(&w);
		return 0;
	}
	if (weft__waiter_park_until(&w, WEFT__WAIT_SYNC, deadline) || !weft__sync_take_back(s, &w))
		return 0; /* handed over, maybe as the deadline came */
	/* Left the queue: fix the flags; readers a writer kept out go in. */
	weft__waiter *list = NULL;
	if (reader) {
		if (!queued(s, true))
			atomic_fetch_and_explicit(st, ~RWAIT, memory_order_relaxed);
	} else if (!queued(s, false)) {
		atomic_fetch_and_explicit(st, ~WWAIT, memory_order_relaxed);
		if (!(atomic_load_explicit(st, memory_order_relaxed) & WRITER))
			list = grant(s, false);
	}
	weft__lock_release(&s->lock);
	weft__sync_unpark_list(list);
	return WEFT_ETIMEDOUT;
}

static int lock_until(weft_rwlock *l, bool reader, int64_t deadline)
{
	if (!l)
		return WEFT_EINVAL;
	weft__sync *s = WEFT__SYNC(l);
	_Atomic uint32_t *st = word(s);
	/* A fiber does not spin: its worker cannot run the holder meanwhile. */
	int spins = weft__tls.fiber ? 0 : SPINS;
	uint32_t old = atomic_load_explicit(st, memory_order_relaxed);
	for (;;) {
		bool free = reader ? !(old & (WRITER | WWAIT)) : old == 0;
		if (free) {
			uint32_t new = reader ? old + READER : WRITER;
			if (atomic_compare_exchange_weak_explicit(
			            st, &old, new, memory_order_acquire, memory_order_relaxed))
				return 0;
			continue;
		}
		if (spins-- <= 0)
			break;
		weft__cpu_relax();
		old = atomic_load_explicit(st, memory_order_relaxed);
	}
	if (deadline != NO_DEADLINE && weft__now_ns() >= deadline)
		return WEFT_ETIMEDOUT;
	return queue_and_park(s, reader, deadline);
}

int weft_rwlock_rdlock(weft_rwlock *l)
{
	return lock_until(l, true, NO_DEADLINE);
}

int weft_rwlock_wrlock(weft_rwlock *l)
{
	return lock_until(l, false, NO_DEADLINE);
}

int weft_rwlock_rdlock_until(weft_rwlock *l, int64_t deadline_ns)
{
	return lock_until(l, true, deadline_ns);
}

int weft_rwlock_wrlock_until(weft_rwlock *l, int64_t deadline_ns)
{
	return lock_until(l, false, deadline_ns);
}

int weft_rwlock_tryrdlock(weft_rwlock *l)
{
	if (!l)
		return WEFT_EINVAL;
	_Atomic uint32_t *st = word(WEFT__SYNC(l));
	uint32_t old = atomic_load_explicit(st, memory_order_relaxed);
	while (!(old & (WRITER | WWAIT)))
		if (atomic_compare_exchange_weak_explicit(
		            st, &old, old + READER, memory_order_acquire, memory_order_relaxed))
			return 0;
	return WEFT_EBUSY;
}

int weft_rwlock_trywrlock(weft_rwlock *l)
{
	if (!l)
		return WEFT_EINVAL;
	uint32_t old = 0;
	return atomic_compare_exchange_strong_explicit(word(WEFT__SYNC(l)), &old, WRITER,
	                                               memory_order_acquire, memory_order_relaxed)
	               ? 0
	               : WEFT_EBUSY;
}

/* ------------------------------------------------------------ unlock */

static void hand_over(weft__sync *s, bool prefer_writer)
{
	weft__lock_acquire(&s->lock);
	weft__waiter *list = grant(s, prefer_writer);
	weft__lock_release(&s->lock);
	weft__sync_unpark_list(list);
}

static int write_unlock(weft__sync *s, uint32_t old)
{
	_Atomic uint32_t *st = word(s);
	if (old == WRITER && atomic_compare_exchange_strong_explicit(
	                             st, &old, 0, memory_order_release, memory_order_relaxed))
		return 0;
	/* Waiters queued (the flags cannot change while WRITER is set but
	 * under the internal lock): readers first, else the next writer. */
	weft__lock_acquire(&s->lock);
	old = atomic_load_explicit(st, memory_order_relaxed);
	weft__waiter *list;
	if (queued(s, true)) {
		atomic_fetch_and_explicit(st, ~WRITER, memory_order_release);
		list = grant(s, false);
	} else if ((list = take(s, false)) != NULL) {
		/* WRITER stays set: ownership moves to it. */
		if (!queued(s, false))
			atomic_fetch_and_explicit(st, ~WWAIT, memory_order_release);
		else
			atomic_thread_fence(memory_order_release);
	} else {
		atomic_fetch_and_explicit(st, ~(WRITER | WWAIT | RWAIT), memory_order_release);
	}
	weft__lock_release(&s->lock);
	weft__sync_unpark_list(list);
	return 0;
}

static int read_unlock(weft__sync *s)
{
	_Atomic uint32_t *st = word(s);
	uint32_t old = atomic_fetch_sub_explicit(st, READER, memory_order_release);
	if (READERS(old) == 0) { /* misuse racing another unlock: undo */
		atomic_fetch_add_explicit(st, READER, memory_order_relaxed);
		return WEFT_EINVAL;
	}
	uint32_t now = old - READER;
	if (READERS(now) == 0 && (now & WWAIT))
		hand_over(s, true); /* the last reader out: to the first writer */
	return 0;
}

int weft_rwlock_unlock(weft_rwlock *l)
{
	if (!l)
		return WEFT_EINVAL;
	weft__sync *s = WEFT__SYNC(l);
	uint32_t old = atomic_load_explicit(word(s), memory_order_relaxed);
	if (old & WRITER)
		return write_unlock(s, old);
	if (READERS(old) == 0)
		return WEFT_EINVAL;
	return read_unlock(s);
}
