/* weft_rwlock: a barging reader-writer lock with a starvation rule, after
 * weft_mutex (mutex.c), with one state word and the FIFO of waiters every
 * primitive has (waiter.h).
 *
 * The word (weft__sync.state, used atomically):
 *
 *   WRITER   a writer holds the lock
 *   WWAIT    writers are queued
 *   RWAIT    readers are queued
 *   WSTARVE  a queued writer starved: readers keep out, and the lock is
 *            handed to the first queued writer once it is free
 *   RSTARVE  a queued reader starved: writers keep out, and the next
 *            writer's unlock hands the lock to every queued reader
 *   count    readers holding it (state / READER)
 *
 * The flags change only under the internal lock, with the queue. Outside
 * it a reader enters by adding READER while neither WRITER nor WSTARVE is
 * set, a writer by setting WRITER while no one holds the lock and neither
 * starvation flag is set; holders leave with one atomic subtraction.
 *
 * Normal mode: barging, as glibc's default rwlock and weft_mutex. Readers
 * do not exclude each other, so a reader is kept out only by a writer that
 * holds the lock; a writer waits for the readers to leave. An unlock that
 * sees waiters wakes them to compete again (a writer's unlock: the queued
 * readers and the first writer; the last reader's: the first writer)
 * rather than handing the lock over. Handing over, as an earlier version
 * of this file did with Go's RWMutex rule (a queued writer keeps new
 * readers out, the readers queued behind it go in together), made every
 * write put the readers to sleep: with 8 threads on 2 CPUs and 10% writes
 * it cost 13,800 ns an operation against glibc's 48 (a lock convoy, as
 * mutex.c describes).
 *
 * Starvation. Barging alone lets a stream of readers keep a writer out for
 * ever (glibc's default does). A waiter woken to compete that loses queues
 * again at the front; once it has waited more than STARVE_NS since it
 * first queued it sets WSTARVE or RSTARVE as it queues (a waiter nobody
 * woke by then wakes by itself to do so: readers that overlap never let
 * the count reach zero, which is when a writer is woken). A starving writer
 * keeps new readers out and is handed the lock by whoever frees it (the
 * last reader out or a writer's unlock); a starving reader keeps writers
 * out and the next writer's unlock hands the lock to all queued readers.
 * Either flag ends with its hand-off. So no caller waits much longer than
 * STARVE_NS plus the hand-offs ahead of it, whatever the others do.
 *
 * Ordering, as in mutex.c: a waiter sets its flag with a CAS that requires
 * the lock still unavailable to it, under the internal lock, and queues
 * before releasing that lock; a holder whose leaving sees a flag takes the
 * same lock to wake or hand over. Either the holder's subtraction came
 * first (the waiter's CAS fails and it finds the lock available) or it
 * sees the flag and finds the waiter queued. A hand-off re-checks under
 * the internal lock that the lock is free (WSTARVE keeps readers and
 * writers from taking it meanwhile, so the word cannot change under it). */
#include <stdatomic.h>
#include <string.h>

#include "core/clock.h"
#include "core/internal.h"
#include "core/spin.h"
#include "sync/waiter.h"

#define WRITER      1u
#define WWAIT       2u
#define RWAIT       4u
#define WSTARVE     8u
#define RSTARVE     16u
#define READER      32u
#define READERS(st) ((st) / READER)

#define SPINS       16      /* re-reads of the word before a kernel thread queues */
#define STARVE_NS   1000000 /* a waiter older than this is handed the lock */
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

static bool can_read(uint32_t st)
{
	return !(st & (WRITER | WSTARVE));
}

static bool can_write(uint32_t st)
{
	return !(st & (WRITER | WSTARVE | RSTARVE)) && READERS(st) == 0;
}

/* ------------------------------------------------------------ queue */

/* Takes the queued readers (all) or the first queued writer off s, with
 * result set for each; caller holds the internal lock. */
static weft__waiter *take(weft__sync *s, bool readers, int result)
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
		w->result = result;
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

static weft__waiter *concat(weft__waiter *a, weft__waiter *b)
{
	if (!a)
		return b;
	weft__waiter *x = a;
	while (x->next)
		x = x->next;
	x->next = b;
	return a;
}

/* Clears the flags of kinds no longer queued (with the kind's starvation
 * flag); sets add. Caller holds the internal lock. */
static void fix_flags(weft__sync *s, uint32_t add)
{
	_Atomic uint32_t *st = word(s);
	uint32_t clear = 0;
	if (!queued(s, true))
		clear |= RWAIT | RSTARVE;
	if (!queued(s, false))
		clear |= WWAIT | WSTARVE;
	uint32_t old = atomic_load_explicit(st, memory_order_relaxed), new;
	do {
		new = (old | add) & ~clear;
	} while (new != old && !atomic_compare_exchange_weak_explicit(
	                               st, &old, new, memory_order_acq_rel, memory_order_relaxed));
}

/* The lock has just been freed by a writer (after_write) or by the last
 * reader: hands it over if a waiter starved, else wakes waiters to
 * compete. Caller holds the internal lock; returns whom to unpark. */
static weft__waiter *release(weft__sync *s, bool after_write)
{
	_Atomic uint32_t *st = word(s);
	uint32_t old = atomic_load_explicit(st, memory_order_relaxed);
	if (old & WRITER)
		return NULL; /* taken again already: its unlock will see to them */
	weft__waiter *list;
	if (after_write && (old & RSTARVE)) {
		list = take(s, true, HANDED);
		uint32_t n = 0;
		for (weft__waiter *w = list; w; w = w->next)
			n++;
		atomic_fetch_add_explicit(st, n * READER, memory_order_relaxed);
		fix_flags(s, 0);
		atomic_fetch_and_explicit(st, ~RSTARVE, memory_order_relaxed);
		return list;
	}
	if (old & WSTARVE) {
		if (READERS(old) > 0)
			return NULL; /* the last of them hands over */
		list = take(s, false, HANDED);
		/* Nothing else changes the word under WSTARVE (see above). */
		if (list)
			atomic_fetch_or_explicit(st, WRITER, memory_order_relaxed);
		fix_flags(s, 0);
		atomic_fetch_and_explicit(st, ~WSTARVE, memory_order_relaxed);
		return list;
	}
	list = after_write ? take(s, true, 0) : NULL;
	list = concat(list, take(s, false, 0));
	fix_flags(s, 0);
	return list;
}

/* ------------------------------------------------------------ waiting */

/* Queues the caller unless the lock became available; parks. Returns 0
 * having taken the lock (here or by hand-off), 1 woken to compete again,
 * WEFT_ETIMEDOUT having left the queue. */
static int queue_and_park(weft__sync *s, bool reader, int64_t *since, int64_t deadline)
{
	_Atomic uint32_t *st = word(s);
	weft__waiter w;
	weft__waiter_init(&w, reader ? &reader_tag : &writer_tag);
	bool starving = *since && weft__now_ns() - *since > STARVE_NS;
	weft__lock_acquire(&s->lock);
	uint32_t old = atomic_load_explicit(st, memory_order_relaxed);
	for (;;) {
		bool free = reader ? can_read(old) : can_write(old);
		uint32_t new = free ? (reader ? old + READER : old | WRITER)
		                    : old | (reader ? RWAIT : WWAIT) |
		                               (starving ? (reader ? RSTARVE : WSTARVE) : 0);
		if (!atomic_compare_exchange_weak_explicit(st, &old, new, memory_order_acquire,
		                                           memory_order_relaxed))
			continue;
		if (free) {
			weft__lock_release(&s->lock);
			return 0;
		}
		break;
	}
	if (*since) { /* woken before: keep our place */
		w.next = s->head;
		s->head = &w;
		if (!s->tail)
			s->tail = &w;
	} else {
		*since = weft__now_ns();
		weft__sync_push(s, &w);
	}
	weft__lock_release(&s->lock);
	/* Until it starves, a waiter also wakes by itself when STARVE_NS have
	 * passed: nobody may wake it (readers that overlap never let the
	 * count reach zero), and it must come back to set its flag. */
	int64_t until = deadline;
	if (!starving && *since + STARVE_NS + 1 < until)
		until = *since + STARVE_NS + 1;
	if (until == NO_DEADLINE) {
		weft__waiter_park_sleeping(&w); /* it spun before queueing */
		return w.result == HANDED ? 0 : 1;
	}
	if (weft__waiter_park_until(&w, WEFT__WAIT_SYNC, until) || !weft__sync_take_back(s, &w))
		return w.result == HANDED ? 0 : 1;
	if (until < deadline) { /* starved: queue again, at the front, flagged */
		fix_flags(s, 0);
		weft__lock_release(&s->lock);
		return 1;
	}
	/* Left the queue. What we kept out (a starvation flag of ours) must
	 * not stay kept out: wake everyone queued to compete again. */
	weft__waiter *list = weft__sync_take_all(s);
	for (weft__waiter *x = list; x; x = x->next)
		x->result = 0;
	fix_flags(s, 0);
	weft__lock_release(&s->lock);
	weft__sync_unpark_list(list);
	return WEFT_ETIMEDOUT;
}

static bool on_fiber(void)
{
	return weft__tls.fiber != NULL;
}

static int lock_until(weft_rwlock *l, bool reader, int64_t deadline)
{
	if (!l)
		return WEFT_EINVAL;
	weft__sync *s = WEFT__SYNC(l);
	_Atomic uint32_t *st = word(s);
	int64_t since = 0; /* when we first queued */
	for (;;) {
		/* A fiber does not spin: its worker cannot run the holder. */
		int spins = on_fiber() ? 0 : SPINS;
		uint32_t old = atomic_load_explicit(st, memory_order_relaxed);
		for (;;) {
			if (reader ? can_read(old) : can_write(old)) {
				uint32_t new = reader ? old + READER : old | WRITER;
				if (atomic_compare_exchange_weak_explicit(st, &old, new,
				                                          memory_order_acquire,
				                                          memory_order_relaxed))
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
		int rc = queue_and_park(s, reader, &since, deadline);
		if (rc <= 0)
			return rc;
	}
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
	while (can_read(old))
		if (atomic_compare_exchange_weak_explicit(
		            st, &old, old + READER, memory_order_acquire, memory_order_relaxed))
			return 0;
	return WEFT_EBUSY;
}

int weft_rwlock_trywrlock(weft_rwlock *l)
{
	if (!l)
		return WEFT_EINVAL;
	_Atomic uint32_t *st = word(WEFT__SYNC(l));
	uint32_t old = atomic_load_explicit(st, memory_order_relaxed);
	while (can_write(old))
		if (atomic_compare_exchange_weak_explicit(
		            st, &old, old | WRITER, memory_order_acquire, memory_order_relaxed))
			return 0;
	return WEFT_EBUSY;
}

/* ------------------------------------------------------------ unlock */

static void wake(weft__sync *s, bool after_write)
{
	weft__lock_acquire(&s->lock);
	weft__waiter *list = release(s, after_write);
	weft__lock_release(&s->lock);
	weft__sync_unpark_list(list);
}

int weft_rwlock_unlock(weft_rwlock *l)
{
	if (!l)
		return WEFT_EINVAL;
	weft__sync *s = WEFT__SYNC(l);
	_Atomic uint32_t *st = word(s);
	uint32_t old = atomic_load_explicit(st, memory_order_relaxed);
	if (old & WRITER) {
		/* One RMW that cannot fail (only the holder clears WRITER). */
		old = atomic_fetch_sub_explicit(st, WRITER, memory_order_release);
		if (old & (WWAIT | RWAIT))
			wake(s, true);
		return 0;
	}
	if (READERS(old) == 0)
		return WEFT_EINVAL;
	old = atomic_fetch_sub_explicit(st, READER, memory_order_release);
	if (READERS(old) == 0) { /* misuse racing another unlock: undo */
		atomic_fetch_add_explicit(st, READER, memory_order_relaxed);
		return WEFT_EINVAL;
	}
	uint32_t now = old - READER;
	if (READERS(now) == 0 && (now & WWAIT) && !(now & WRITER))
		wake(s, false); /* the last reader out: a writer may go */
	return 0;
}
