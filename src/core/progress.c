/* Progress functions (weft/progress.h, core/progress.h).
 *
 * One table for the process: a library such as an MPI implementation is
 * one per process too, and a worker of any runtime may serve its waiters.
 * One poll at a time (the duty): a second worker that finds it taken goes
 * on, since polling twice at once only contends inside the library. */
#include <pthread.h>
#include <weft/error.h>
#include <weft/progress.h>

#include "core/internal.h"
#include "core/progress.h"
#include "core/spin.h"

#define SLOTS         4
/* The spin before sleeping: none at first; it grows when a poll before
 * sleeping completed something (completions in quick succession: a sleep
 * would add its wake-up to each) and shrinks when a whole window went by
 * without one, so a waiter whose message is milliseconds away costs no
 * spinning. */
#define SPIN_FIRST_NS 1000
#define SPIN_MAX_NS   50000
/* While nobody waits, a busy worker polls every BUSY_TICKS tasks (a
 * progress function with no waiter returns at once); while somebody does,
 * as often as the functions asked, read on the clock between tasks. */
#define BUSY_TICKS    32
#define BUSY_MAX_NS   50000

typedef struct slot {
	_Atomic(weft_progress_fn) fn;
	void *_Atomic arg;
} slot;

static slot slots[SLOTS];
_Atomic int weft__progress_count;
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER; /* add, remove */
static _Atomic int polling;                                    /* the duty */
static _Atomic int64_t last_asked = -1;                        /* what the last poll returned */
/* The calling thread holds the duty: it is inside a progress function. */
static _Thread_local bool in_poll;

int weft_progress_add(weft_progress_fn fn, void *arg)
{
	if (!fn)
		return WEFT_EINVAL;
	int rc = WEFT_ENOMEM;
	pthread_mutex_lock(&table_lock);
	slot *free_slot = NULL;
	for (int i = 0; i < SLOTS; i++) {
		weft_progress_fn f = atomic_load(&slots[i].fn);
		if (f == fn && atomic_load(&slots[i].arg) == arg) {
			free_slot = NULL;
			rc = WEFT_EINVAL;
			break;
		}
		if (!f && !free_slot)
			free_slot = &slots[i];
	}
	if (free_slot) {
		atomic_store(&free_slot->arg, arg);
		atomic_store(&free_slot->fn, fn);
		atomic_fetch_add(&weft__progress_count, 1);
		rc = 0;
	}
	pthread_mutex_unlock(&table_lock);
	return rc;
}

int weft_progress_remove(weft_progress_fn fn, void *arg)
{
	int rc = WEFT_EINVAL;
	pthread_mutex_lock(&table_lock);
	for (int i = 0; i < SLOTS; i++) {
		if (atomic_load(&slots[i].fn) == fn && atomic_load(&slots[i].arg) == arg) {
			atomic_store(&slots[i].fn, NULL);
			atomic_fetch_sub(&weft__progress_count, 1);
			rc = 0;
			break;
		}
	}
	pthread_mutex_unlock(&table_lock);
	/* A poll that read the slot before it was cleared may still run fn:
	 * wait for the duty to be free once. Not when that poll is the
	 * caller's own (a progress function removing itself, or another one):
	 * it frees the duty only after the call returns, and it does not call
	 * a slot it finds cleared. */
	while (rc == 0 && !in_poll && atomic_load(&polling))
		weft__cpu_relax();
	return rc;
}

bool weft_progress_served(void)
{
	return weft__tls.fiber != NULL;
}

int64_t weft_progress_poll(void)
{
	if (!weft__progress_on())
		return -1;
	int zero = 0;
	if (!atomic_compare_exchange_strong(&polling, &zero, 1))
		return atomic_load_explicit(&last_asked, memory_order_relaxed);
	int64_t asked = -1;
	in_poll = true;
	for (int i = 0; i < SLOTS; i++) {
		weft_progress_fn fn = atomic_load(&slots[i].fn);
		if (!fn)
			continue;
		int64_t r = fn(atomic_load(&slots[i].arg));
		if (r >= 0 && (asked < 0 || r < asked))
			asked = r;
	}
	in_poll = false;
	atomic_store_explicit(&last_asked, asked, memory_order_relaxed);
	atomic_store(&polling, 0);
	return asked;
}

bool weft__progress_idle(weft__progress_state *s, bool (*work_came)(void *ctx), void *ctx,
                         int64_t *sleep_ns)
{
	int64_t asked = weft_progress_poll();
	if (asked < 0) {
		*sleep_ns = -1;
		return work_came(ctx);
	}
	int64_t until = s->spin_ns ? weft_clock_ns() + s->spin_ns : 0;
	for (;;) {
		if (work_came(ctx)) {
			/* Completed before sleeping: the next may come as soon. */
			if (asked == 0 && s->spin_ns < SPIN_MAX_NS)
				s->spin_ns = s->spin_ns ? 2 * s->spin_ns : SPIN_FIRST_NS;
			return true;
		}
		if (!until || weft_clock_ns() >= until)
			break;
		weft__cpu_relax();
		asked = weft_progress_poll();
		if (asked < 0) {
			*sleep_ns = -1;
			return work_came(ctx);
		}
	}
	/* A whole window without a completion: spin less next time. */
	s->spin_ns = s->spin_ns > SPIN_FIRST_NS ? s->spin_ns / 2 : 0;
	*sleep_ns = asked;
	return false;
}

static _Atomic(const void *) watcher;

bool weft__progress_watch(const void *who)
{
	const void *none = NULL;
	return atomic_compare_exchange_strong(&watcher, &none, who) || none == who;
}

void weft__progress_unwatch(const void *who)
{
	const void *me = who;
	atomic_compare_exchange_strong(&watcher, &me, NULL);
}

void weft__progress_busy(weft__progress_state *s)
{
	int64_t every = atomic_load_explicit(&last_asked, memory_order_relaxed);
	if (every < 0) {
		/* Nobody waited at the last poll: look now and then whether
		 * somebody does now. */
		if (++s->ticks < BUSY_TICKS)
			return;
		s->ticks = 0;
	} else {
		/* Somebody waits: as often as asked, however long the tasks,
		 * and at least every BUSY_MAX_NS (a poll costs no wake-up
		 * here: a function that asks for long sleeps to save them
		 * does not save anything on a busy worker). */
		if (every > BUSY_MAX_NS)
			every = BUSY_MAX_NS;
		int64_t now = weft_clock_ns();
		if (now - s->last_ns < every)
			return;
		s->last_ns = now;
	}
	(void)weft_progress_poll();
}
