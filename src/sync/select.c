/* weft_chan_select, after Go's selectgo.
 *
 * 1. Lock every channel of the cases, in address order (two selects lock
 *    shared channels in the same order: no deadlock; a plain send or
 *    receive holds one channel's lock only).
 * 2. From a random case on, do the first case that can go without waiting
 *    (weft__chan_try_send/recv), unlock, return it. The random start is
 *    what keeps a ready case from being starved by one listed before it.
 * 3. None: with the deadline passed, unlock and time out. Else queue one
 *    waiter per case on its channel, all pointing at one selector, unlock
 *    every channel and park on the selector's own waiter.
 * 4. A channel that pops a case waiter claims the selector first (a CAS
 *    of `fired` from NONE to the case's index) under that channel's lock,
 *    then moves the element as for any waiter and unparks it; the case
 *    waiter's notify passes the wake-up on to the selector. A channel that
 *    loses the claim skips that waiter and goes on with its queue.
 * 5. Woken, or timed out (then the select claims itself with TIMED_OUT;
 *    losing that CAS means a channel won meanwhile: wait for its wake-up),
 *    lock every channel again and take the other case waiters off their
 *    queues: after that no channel holds a pointer into this frame. */
#include <stdatomic.h>
#include <stdint.h>

#include "core/clock.h"
#include "core/internal.h"
#include "sync/chan.h"
#include "sync/waiter.h"

#define MAX_CASES 64

enum { NONE = -1, TIMED_OUT = -2 };

typedef struct weft__selector {
	_Atomic int fired; /* NONE, TIMED_OUT, or the index of the case done */
	weft__waiter parked;
	weft__waiter cases[MAX_CASES];
} weft__selector;

bool weft__select_claim(weft__waiter *w)
{
	weft__selector *sel = w->sel;
	int none = NONE, index = (int)(w - sel->cases);
	return atomic_compare_exchange_strong_explicit(&sel->fired, &none, index,
	                                               memory_order_acq_rel, memory_order_acquire);
}

/* A case waiter's unpark: the channel that claimed it moved its element
 * (and set its result); wake the select. Reads nothing of w after. */
static void case_won(weft__waiter *w)
{
	weft__selector *sel = w->sel;
	sel->parked.result = w->result;
	weft__waiter_unpark(&sel->parked);
}

/* A per-thread xorshift for the random start: fairness, not secrecy. */
static _Thread_local uint64_t rnd;

static size_t random_below(size_t n)
{
	if (!rnd)
		rnd = (uint64_t)weft__now_ns() ^ (uint64_t)(uintptr_t)&rnd;
	rnd ^= rnd << 13;
	rnd ^= rnd >> 7;
	rnd ^= rnd << 17;
	return (size_t)(rnd % n);
}

static void lock_all(weft_chan_case *cases, const uint8_t *order, size_t n)
{
	for (size_t i = 0; i < n; i++)
		weft__lock_acquire(&WEFT__SYNC(cases[order[i]].ch)->lock);
}

static void unlock_all(weft_chan_case *cases, const uint8_t *order, size_t n)
{
	for (size_t i = n; i-- > 0;)
		weft__lock_release(&WEFT__SYNC(cases[order[i]].ch)->lock);
}

/* Validates the cases and sorts their indices by channel address into
 * order: false for a bad case or a channel named twice. */
static bool sort_cases(weft_chan_case *cases, size_t n, uint8_t *order)
{
	for (size_t i = 0; i < n; i++) {
		weft_chan_case *c = &cases[i];
		if (!c->ch || !c->elem || c->ch->elem_size_ == 0 ||
		    (c->op != WEFT_CHAN_SEND && c->op != WEFT_CHAN_RECV))
			return false;
		size_t j = i;
		for (; j > 0 && (uintptr_t)cases[order[j - 1]].ch > (uintptr_t)c->ch; j--)
			order[j] = order[j - 1];
		order[j] = (uint8_t)i;
	}
	for (size_t i = 1; i < n; i++)
		if (cases[order[i]].ch == cases[order[i - 1]].ch)
			return false;
	return true;
}

int weft_chan_select(weft_chan_case *cases, size_t n, int64_t deadline_ns)
{
	if ((n > 0 && !cases) || n > MAX_CASES || (n == 0 && deadline_ns == INT64_MAX))
		return WEFT_EINVAL;
	uint8_t order[MAX_CASES] = {0};
	if (!sort_cases(cases, n, order))
		return WEFT_EINVAL;
	lock_all(cases, order, n);
	size_t start = n ? random_below(n) : 0;
	for (size_t k = 0; k < n; k++) {
		size_t i = (start + k) % n;
		weft_chan_case *c = &cases[i];
		weft__waiter *wake = NULL;
		int rc = c->op == WEFT_CHAN_SEND ? weft__chan_try_send(c->ch, c->elem, &wake)
		                                 : weft__chan_try_recv(c->ch, c->elem, &wake);
		if (rc == WEFT__CHAN_WOULD_WAIT)
			continue;
		unlock_all(cases, order, n);
		if (wake)
			weft__waiter_unpark(wake);
		c->result = rc;
		return (int)i;
	}
	if (deadline_ns != INT64_MAX && weft__now_ns() >= deadline_ns) {
		unlock_all(cases, order, n);
		return WEFT_ETIMEDOUT;
	}
	weft__selector sel;
	atomic_init(&sel.fired, NONE);
	weft__waiter_init(&sel.parked, NULL);
	for (size_t i = 0; i < n; i++) {
		weft__waiter *w = &sel.cases[i];
		weft__waiter_init(w, cases[i].elem);
		w->fiber = NULL;
		w->notify = case_won;
		w->sel = &sel;
		weft__chan_enqueue(cases[i].ch, cases[i].op == WEFT_CHAN_SEND, w);
	}
	unlock_all(cases, order, n);
	if (deadline_ns == INT64_MAX) {
		weft__waiter_park(&sel.parked);
	} else if (!weft__waiter_park_until(&sel.parked, WEFT__WAIT_SYNC, deadline_ns)) {
		int none = NONE;
		if (!atomic_compare_exchange_strong(&sel.fired, &none, TIMED_OUT))
			weft__waiter_park(&sel.parked); /* a channel won: take its wake-up */
	}
	lock_all(cases, order, n);
	int fired = atomic_load_explicit(&sel.fired, memory_order_acquire);
	for (size_t i = 0; i < n; i++)
		if ((int)i != fired)
			weft__chan_dequeue(cases[i].ch, &sel.cases[i]);
	unlock_all(cases, order, n);
	if (fired < 0)
		return WEFT_ETIMEDOUT;
	cases[fired].result = sel.parked.result;
	return fired;
}
