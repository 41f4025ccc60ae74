/* weft_mutex: a barging mutex with a starvation rule, after Go's
 * sync.Mutex.
 *
 * The whole state is one 32-bit word (weft__sync.state, used atomically):
 *
 *   LOCKED    someone holds the mutex
 *   WOKEN     an unlock woke a waiter that has not yet taken the mutex or
 *             queued again: unlocks meanwhile wake nobody else
 *   STARVING  the head waiter starved: the next unlock hands the mutex to
 *             it instead of freeing it, and nobody else may take it
 *   count     queued waiters (state / WAITER), changed only under the
 *             internal lock together with the queue, so it is the queue's
 *             length
 *
 * Normal mode. lock() takes a free mutex with one CAS whoever is queued
 * (barging). A held one is spun on, with reads backing off from 1 to 64
 * pauses (spin_step), by a kernel thread or by a fiber of a runtime with
 * several workers, while nobody is queued or when the caller is the waiter
 * an unlock woke; then the caller queues and sleeps on a futex at once (a
 * waiter still spinning there would make every unlock pay a wake-up); a
 * fiber with one worker queues and parks at once (its holder cannot run
 * meanwhile). Queued waiters mean more contenders than CPUs, so newcomers
 * queue behind them instead of spinning where a sleeper's wake-up would
 * need the CPU. unlock() clears LOCKED with one atomic add that cannot
 * fail, as glibc's does; if waiters are queued and none is awake already,
 * it wakes the longest one, which then competes like a new arrival. A
 * running thread thus re-takes a mutex it just let go without waiting for
 * a sleeping waiter to be scheduled. The rule this replaces (every unlock
 * hands the mutex to the longest waiter, often not running) made every
 * lock cost a sleep and a wake-up once threads outnumbered CPUs: a lock
 * convoy, 700-12,000 ns a pair for 8 threads on 2 CPUs against glibc's
 * 20-40.
 *
 * Starvation. A woken waiter that loses the race queues again at the
 * front. If it has waited more than STARVE_NS since it first queued, it
 * sets STARVING as it queues, and the next unlock hands the mutex to it
 * (LOCKED is set again for it, never observed free). That ends the
 * episode: the next waiter must starve in turn to be handed the mutex.
 * Go keeps handing over until a waiter is served quickly, but with kernel
 * threads on few CPUs every waiter has waited long, and staying in
 * hand-off brings the convoy back. So a waiter waits about STARVE_NS plus
 * two wake-ups for each waiter ahead of it, however the others hammer.
 *
 * Ordering. A waiter adds itself to the count with a CAS that requires the
 * mutex taken (LOCKED or STARVING), under the internal lock, and pushes
 * itself before releasing that lock; an unlock that sees the count takes
 * the same lock to pop. Either the unlock came first (the waiter's CAS
 * fails and it sees the mutex free) or the unlock sees the waiter and
 * finds it queued: no lost wake-up. Only the waiter that owns WOKEN sets
 * STARVING, clearing WOKEN in the same CAS, and only the unlock whose
 * atomic add saw STARVING hands off: one hand-off per episode.
 *
 * Costs. Uncontended, lock is a load and a CAS and unlock one atomic add,
 * on the mutex's own word; nothing else shared is written, and nothing is
 * allocated. Left as they are, measured or weighed against the spin: the
 * clock read when a waiter first queues and after each wake-up (about
 * 30 ns against a round of microseconds), and the internal lock sharing
 * the state's cache line (the layout is weft_mutex's, fixed by the ABI;
 * only queueing and waking touch it). */
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/internal.h"
#include "core/spin.h"
#include "sync/waiter.h"

#define LOCKED   1u
#define WOKEN    2u
#define STARVING 4u
#define WAITER   8u /* one queued waiter in the count */

#define LOCK_SPINS  8       /* reads of the held word a spinning caller makes before it queues */
#define BACKOFF_MAX 6       /* 2^BACKOFF_MAX: the most pauses between two reads (191 in all) */
#define STARVE_NS   1000000 /* a waiter older than this is handed the mutex */

enum { HANDED_OFF = 1 }; /* waiter result: the unlocker made us the owner */

_Static_assert(sizeof(((weft__sync *)0)->state) == sizeof(_Atomic uint32_t),
               "the mutex state is used as an atomic word");

static _Atomic uint32_t *word(weft__sync *s)
{
	return (_Atomic uint32_t *)(void *)&s->state;
}

/* What the running task holds (weft__thread_ctx.mutexes_held): a fiber's
 * tick defers preempting a holder; a kernel thread does not run other tasks
 * while it waits holding one (task.c). Counted before the CAS that takes
 * the mutex: a tick must never find a holder uncounted. */
static void held(int delta)
{
	weft__thread_ctx *t = weft__tls_self(); /* no park in between: one address */
	if (t->mutexes_held + delta >= 0) {
		t->mutexes_held += delta;
		t->mutex_locks += delta > 0;
	}
}

int weft_mutex_init(weft_mutex *m)
{
	if (!m)
		return WEFT_EINVAL;
	memset(m, 0, sizeof(*m));
	return 0;
}

static void push_front(weft__sync *s, weft__waiter *w)
{
	w->next = s->head;
	s->head = w;
	if (!s->tail)
		s->tail = w;
}

#define NO_DEADLINE INT64_MAX

/* Queues the caller unless the mutex is free by now. Returns false when it
 * is free (take it); true when the caller waited and was woken, with
 * *owner set when the mutex was handed to it, or when its deadline came
 * while it was queued (*timed_out: it left the queue; nothing else
 * changed). */
static bool queue_and_park(weft__sync *s, int64_t *since, bool *awoke, bool starving, bool *owner,
                           int64_t deadline, bool *timed_out)
{
	_Atomic uint32_t *st = word(s);
	weft__waiter w;
	weft__waiter_init(&w, NULL);
	weft__lock_acquire(&s->lock);
	uint32_t old = atomic_load_explicit(st, memory_order_relaxed), new;
	do {
		if (!(old & (LOCKED | STARVING))) {
			weft__lock_release(&s->lock);
			return false;
		}
		new = old + WAITER;
		if (*awoke)
			new &= ~WOKEN; /* ours: we were the waiter woken */
		if (starving && (old & LOCKED))
			new |= STARVING;
	} while (!atomic_compare_exchange_weak_explicit(st, &old, new, memory_order_relaxed,
	                                                memory_order_relaxed));
	*awoke = false;
	if (*since) {
		push_front(s, &w); /* woken before: keep our place */
	} else {
		*since = weft__now_ns();
		weft__sync_push(s, &w);
	}
	weft__lock_release(&s->lock);
	if (deadline == NO_DEADLINE) {
		weft__waiter_park_sleeping(&w); /* it spun before queueing */
	} else if (!weft__waiter_park_until(&w, WEFT__WAIT_SYNC, deadline) &&
	           weft__sync_take_back(s, &w)) {
		/* Leave the count; a STARVING we set stays for the next unlock,
		 * which hands off to the new head (or clears it). */
		atomic_fetch_sub_explicit(st, WAITER, memory_order_relaxed);
		weft__lock_release(&s->lock);
		*timed_out = true;
		return true;
	}
	*owner = w.result == HANDED_OFF;
	*awoke = !*owner;
	return true;
}

/* A woken waiter (owning WOKEN) whose deadline came: takes the mutex if it
 * is free, else lets WOKEN go (the holder's unlock then wakes another). */
static int give_up_woken(weft__sync *s)
{
	_Atomic uint32_t *st = word(s);
	uint32_t old = atomic_load_explicit(st, memory_order_relaxed), new;
	bool take;
	do {
		take = !(old & (LOCKED | STARVING));
		new = (take ? old | LOCKED : old) & ~WOKEN;
	} while (!atomic_compare_exchange_weak_explicit(st, &old, new, memory_order_acquire,
	                                                memory_order_relaxed));
	return take ? 0 : WEFT_ETIMEDOUT;
}

/* Whether the caller may spin. A fiber whose runtime has one worker may
 * not: the holder cannot run meanwhile. With several workers the holder
 * is likely running on another one, and a park and unpark cost
 * microseconds against the holder's tens of nanoseconds: it spins as a
 * kernel thread does. */
static bool may_spin(void)
{
	if (!weft__tls.fiber)
		return true;
	weft_rt *rt = weft__tls.rt;
	return rt && rt->cfg.workers > 1;
}

/* One step of a spin on the word while it is held: waits 2^step pauses
 * (at most 2^BACKOFF_MAX), then reads the word. Each read of a spinner
 * takes the line from the holder, whose next lock or unlock then waits
 * for it: reading at every pause, as this did, slowed the holder so much
 * that two threads took turns, a cache-line transfer per lock. Backing
 * off leaves the holder running alone between reads, and the spinner
 * still catches the mutex free within a few reads when the holder's
 * critical sections are short. A spinner that queued and slept instead
 * costs the holder a futex wake-up per round, microseconds on a VM. */
static uint32_t spin_step(_Atomic uint32_t *st, int step)
{
	weft__cpu_relax_n(1 << (step < BACKOFF_MAX ? step : BACKOFF_MAX));
	return atomic_load_explicit(st, memory_order_relaxed);
}

static int lock_slow(weft__sync *s, uint32_t old, int64_t deadline)
{
	_Atomic uint32_t *st = word(s);
	bool spinner = may_spin();
	int spins = 0;
	int64_t since = 0; /* when we first queued */
	bool awoke = false, starving = false;
	for (;;) {
		if (!(old & (LOCKED | STARVING))) {
			/* Free: barge. */
			uint32_t new = (old | LOCKED) & ~(awoke ? WOKEN : 0u);
			if (atomic_compare_exchange_weak_explicit(
			            st, &old, new, memory_order_acquire, memory_order_relaxed))
				return 0;
			continue;
		}
		/* Held: spin while nobody is queued, or when we are the waiter
		 * an unlock woke to compete (spin_step says why). Waiters
		 * already asleep mean more contenders than CPUs: queue. */
		if (spinner && !(old & STARVING) && (old < WAITER || awoke) && spins < LOCK_SPINS &&
		    (deadline == NO_DEADLINE || weft__now_ns() < deadline)) {
			old = spin_step(st, spins++);
			continue;
		}
		if (deadline != NO_DEADLINE && weft__now_ns() >= deadline)
			return awoke ? give_up_woken(s) : WEFT_ETIMEDOUT;
		bool owner = false, timed_out = false;
		if (queue_and_park(s, &since, &awoke, starving, &owner, deadline, &timed_out)) {
			if (owner)
				return 0;
			if (timed_out)
				return WEFT_ETIMEDOUT;
			starving = starving || weft__now_ns() - since > STARVE_NS;
			spins = 0;
		}
		old = atomic_load_explicit(st, memory_order_relaxed);
	}
}

static int lock_until(weft_mutex *m, int64_t deadline)
{
	if (!m)
		return WEFT_EINVAL;
	weft__sync *s = WEFT__SYNC(m);
	held(1);
	/* Read first, then one CAS from what was read: a free mutex with
	 * waiters queued has their count in the word, and a CAS expecting 0
	 * would fail there, so every lock taken while others sleep cost two
	 * locked instructions (8 threads on one CPU: 16 ns a pair against
	 * glibc's 12; glibc's word is back at 0 after each wake-up). A held
	 * mutex is left to lock_slow without a write that would take the line
	 * from its holder. */
	_Atomic uint32_t *st = word(s);
	uint32_t old = atomic_load_explicit(st, memory_order_relaxed);
	if (!(old & (LOCKED | STARVING)) &&
	    atomic_compare_exchange_strong_explicit(st, &old, old | LOCKED, memory_order_acquire,
	                                            memory_order_relaxed))
		return 0;
	int rc = lock_slow(s, old, deadline);
	if (rc)
		held(-1);
	return rc;
}

int weft_mutex_lock(weft_mutex *m)
{
	return lock_until(m, NO_DEADLINE);
}

int weft_mutex_lock_until(weft_mutex *m, int64_t deadline_ns)
{
	return lock_until(m, deadline_ns);
}

int weft_mutex_trylock(weft_mutex *m)
{
	if (!m)
		return WEFT_EINVAL;
	_Atomic uint32_t *st = word(WEFT__SYNC(m));
	held(1);
	/* Not while STARVING either: between the unlock that saw it and the
	 * hand-off the word is not LOCKED, but the mutex is the starved
	 * waiter's (a trylock there made two owners). */
	uint32_t old = atomic_load_explicit(st, memory_order_relaxed);
	while (!(old & (LOCKED | STARVING))) {
		if (atomic_compare_exchange_weak_explicit(
		            st, &old, old | LOCKED, memory_order_acquire, memory_order_relaxed))
			return 0;
	}
	held(-1);
	return WEFT_EBUSY;
}

/* Hand-offs so far, for the tests (core/testing.h): a rare path. */
static _Atomic uint64_t handoffs;

uint64_t weft__mutex_handoffs(void)
{
	return atomic_load_explicit(&handoffs, memory_order_relaxed);
}

/* Starvation: LOCKED was cleared by our unlock and STARVING keeps everyone
 * else out. The mutex goes to the head waiter (the one that starved) and
 * the mode ends with this one hand-off. */
static void hand_off(weft__sync *s)
{
	_Atomic uint32_t *st = word(s);
	weft__lock_acquire(&s->lock);
	weft__waiter *w = weft__sync_pop(s);
	if (w) {
		atomic_fetch_add_explicit(st, LOCKED - WAITER - STARVING, memory_order_relaxed);
		w->result = HANDED_OFF;
	} else { /* cannot happen (STARVING has a waiter): free it */
		atomic_fetch_and_explicit(st, ~STARVING, memory_order_relaxed);
	}
	weft__lock_release(&s->lock);
	if (w) {
		atomic_fetch_add_explicit(&handoffs, 1, memory_order_relaxed);
		weft__waiter_unpark(w);
	}
}

/* Normal mode, after setting WOKEN: wakes the longest waiter to compete. */
static void wake_one(weft__sync *s)
{
	_Atomic uint32_t *st = word(s);
	weft__lock_acquire(&s->lock);
	weft__waiter *w = weft__sync_pop(s);
	if (w)
		atomic_fetch_sub_explicit(st, WAITER, memory_order_relaxed);
	else
		atomic_fetch_and_explicit(st, ~WOKEN, memory_order_relaxed);
	weft__lock_release(&s->lock);
	if (w)
		weft__waiter_unpark(w);
}

static void unlock_slow(weft__sync *s, uint32_t old)
{
	_Atomic uint32_t *st = word(s);
	if (old & STARVING) {
		hand_off(s); /* STARVING was set while we held it: ours to hand over */
		return;
	}
	old -= LOCKED;
	/* Wake one waiter unless one is awake, someone barged in (their unlock
	 * will see to it) or hand-off began. */
	while (old >= WAITER && !(old & (LOCKED | WOKEN | STARVING))) {
		if (atomic_compare_exchange_weak_explicit(
		            st, &old, old | WOKEN, memory_order_relaxed, memory_order_relaxed)) {
			wake_one(s);
			return;
		}
	}
}

int weft_mutex_unlock(weft_mutex *m)
{
	if (!m)
		return WEFT_EINVAL;
	weft__sync *s = WEFT__SYNC(m);
	_Atomic uint32_t *st = word(s);
	if (!(atomic_load_explicit(st, memory_order_relaxed) & LOCKED))
		return WEFT_EINVAL;
	/* One RMW that never fails, as glibc's unlock: under contention a CAS
	 * would fail and retry on a line other CPUs keep taking. */
	uint32_t old = atomic_fetch_sub_explicit(st, LOCKED, memory_order_release);
	if (!(old & LOCKED)) {
		/* Misuse racing with another unlock: undo the borrow. */
		atomic_fetch_add_explicit(st, LOCKED, memory_order_relaxed);
		return WEFT_EINVAL;
	}
	if (old != LOCKED)
		unlock_slow(s, old);
	held(-1);
	return 0;
}
