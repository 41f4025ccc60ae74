/* weft_sem: a counting semaphore whose units go to whoever asks while
 * running (barging), with the mutex's starvation rule (mutex.c).
 *
 * Everything is under the internal lock: the count, the FIFO of waiters
 * and STARVING (in weft__sync.state). A post with waiters raises the count
 * and wakes the longest waiter, which then competes for the unit like any
 * caller of weft_sem_wait; a running thread that asks first takes it.
 * Handing every unit to the longest waiter instead, as this file did,
 * made a semaphore that threads take and give back in a loop cost a sleep
 * and a wake-up per unit once threads outnumbered CPUs (a convoy: about
 * 1,600 ns per wait/post against glibc's 30-55 for 8 threads on 2 CPUs).
 *
 * A woken waiter that finds no unit queues again at the front; if it has
 * waited more than STARVE_NS since it first queued it sets STARVING, and
 * the next post hands its unit straight to the head waiter instead of
 * counting it (so no one can take it first) and clears STARVING. */
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/internal.h"
#include "sync/waiter.h"

#define STARVING  1u
#define STARVE_NS 1000000 /* as in mutex.c */

enum { HANDED_OFF = 1 }; /* waiter result: the poster gave us its unit */

int weft_sem_init(weft_sem *s, long count)
{
	if (!s || count < 0)
		return WEFT_EINVAL;
	memset(s, 0, sizeof(*s));
	s->count_ = count;
	return 0;
}

#define NO_DEADLINE INT64_MAX

/* A wait whose deadline came: takes w back (0 if it was still queued) or,
 * if a post popped it, receives that wake-up and its result. Caller does
 * not hold the lock; returns with it held when w was queued. */
static bool took_back(weft__sync *s, weft__waiter *w)
{
	if (!weft__sync_take_back(s, w))
		return false;
	if (!s->head)
		s->state &= ~STARVING; /* it was ours */
	return true;
}

static int take(weft_sem *sem, bool wait, int64_t deadline)
{
	if (!sem)
		return WEFT_EINVAL;
	weft__sync *s = WEFT__SYNC(sem);
	weft__lock_acquire(&s->lock);
	if (sem->count_ > 0) {
		sem->count_--;
		weft__lock_release(&s->lock);
		return 0;
	}
	if (!wait || (deadline != NO_DEADLINE && weft__now_ns() >= deadline)) {
		weft__lock_release(&s->lock);
		return wait ? WEFT_ETIMEDOUT : WEFT_EAGAIN;
	}
	int64_t since = weft__now_ns();
	weft__waiter w;
	weft__waiter_init(&w, NULL);
	weft__sync_push(s, &w);
	for (;;) {
		weft__lock_release(&s->lock);
		if (deadline == NO_DEADLINE) {
			weft__waiter_park(&w);
		} else if (!weft__waiter_park_until(&w, WEFT__WAIT_SYNC, deadline) &&
		           took_back(s, &w)) {
			weft__lock_release(&s->lock);
			return WEFT_ETIMEDOUT;
		}
		if (w.result == HANDED_OFF)
			return 0;
		/* Woken to compete: the post counted its unit. */
		weft__lock_acquire(&s->lock);
		if (sem->count_ > 0) {
			sem->count_--;
			weft__lock_release(&s->lock);
			return 0;
		}
		if (deadline != NO_DEADLINE && weft__now_ns() >= deadline) {
			weft__lock_release(&s->lock);
			return WEFT_ETIMEDOUT; /* not queued: nothing to undo */
		}
		if (weft__now_ns() - since > STARVE_NS)
			s->state |= STARVING;
		weft__waiter_init(&w, NULL);
		w.next = s->head; /* back at the front: keep our place */
		s->head = &w;
		if (!s->tail)
			s->tail = &w;
	}
}

int weft_sem_wait(weft_sem *s)
{
	return take(s, true, NO_DEADLINE);
}

int weft_sem_wait_until(weft_sem *s, int64_t deadline_ns)
{
	return take(s, true, deadline_ns);
}

int weft_sem_trywait(weft_sem *s)
{
	return take(s, false, NO_DEADLINE);
}

int weft_sem_post(weft_sem *sem)
{
	if (!sem)
		return WEFT_EINVAL;
	weft__sync *s = WEFT__SYNC(sem);
	weft__lock_acquire(&s->lock);
	weft__waiter *w = weft__sync_pop(s);
	if (w && (s->state & STARVING)) {
		s->state &= ~STARVING;
		w->result = HANDED_OFF;
	} else {
		sem->count_++;
	}
	weft__lock_release(&s->lock);
	if (w)
		weft__waiter_unpark(w);
	return 0;
}

long weft_sem_value(const weft_sem *sem)
{
	if (!sem)
		return 0;
	weft__sync *s = WEFT__SYNC((weft_sem *)sem);
	weft__lock_acquire(&s->lock);
	long v = sem->count_;
	weft__lock_release(&s->lock);
	return v;
}
