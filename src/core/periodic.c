/* weft_post_every: a chain of delayed posts, two tasks taking turns.
 *
 * A task cannot post itself while it runs (weft_post_at says WEFT_EBUSY:
 * it is still in flight), so a periodic task is two: run k is runs_[k % 2],
 * and when its function returns it posts the other with weft_post_at for
 * deadline start + (k + 1) * period. Deadlines are computed from the start,
 * never from "now", so the timer thread's lateness does not add up into
 * drift, and runs never overlap (the next is posted after the previous
 * returned). The other task may still be finishing its own epilogue on
 * another worker (it posted us, then returned): we yield until it is done.
 *
 * Overruns: with WEFT_EVERY_SKIP, a run that returns after the next
 * deadline passed moves k on to the first deadline still ahead (counting
 * the periods left out); WEFT_EVERY_CATCH_UP keeps k + 1, whose deadline
 * is past, so the runs come back to back until they are on time.
 *
 * Stopping. `stopped_` is set under the periodic's lock by cancel (and by a
 * refused post); a run reads it under the same lock before posting the
 * next, and records the task it posted in `current_`. So cancel either
 * sees the next run posted (and cancels it: a delayed task ends at once) or
 * the running one sees stopped_ and posts nothing. Then cancel waits for
 * both tasks, after which nothing of p is in use.
 *
 * Destroy. A periodic task would keep a draining destroy waiting for ever;
 * so destroy cancels the held runs (weft__deferred_cancel_periodic, which
 * knows them by their function) and the delay heap refuses to hold a
 * periodic run once the runtime is closing (under the heap's lock, so a
 * run posted meanwhile is either refused or seen by that cancel). */
#include <stdatomic.h>
#include <string.h>

#include "core/internal.h"
#include "core/lock.h"

#define PERIODIC_FLAGS WEFT_EVERY_CATCH_UP

static weft__lock *plock(weft_periodic *p)
{
	return (weft__lock *)(void *)&p->lock_;
}

_Static_assert(sizeof(weft__lock) == sizeof(uint32_t), "weft_periodic.lock_ holds a weft__lock");

static void arm_next(weft_periodic *p, int me)
{
	weft_task *next = &p->runs_[!me];
	/* The run before us posted us as its last act; it may not have
	 * finished publishing its end yet. */
	while (weft_task_state_of(next) == WEFT_TASK_RUNNING)
		weft_yield();
	weft__lock_acquire(plock(p));
	atomic_fetch_add_explicit((_Atomic uint64_t *)&p->count_, 1, memory_order_relaxed);
	if (p->stopped_) {
		weft__lock_release(plock(p));
		return;
	}
	uint64_t k = p->next_ + 1;
	if (!(p->flags_ & WEFT_EVERY_CATCH_UP)) {
		int64_t late = weft_clock_ns() - p->start_;
		if (late >= 0 && (uint64_t)(late / p->period_) >= k) {
			uint64_t ahead = (uint64_t)(late / p->period_) + 1;
			atomic_fetch_add_explicit((_Atomic uint64_t *)&p->skipped_, ahead - k,
			                          memory_order_relaxed);
			k = ahead;
		}
	}
	p->next_ = k;
	int rc = weft_post_at(p->rt_, NULL, next, p->start_ + (int64_t)k * p->period_);
	if (rc) {
		p->stopped_ = 1; /* destroy (WEFT_ESHUTDOWN), or the queue full */
		p->error_ = rc;
	} else {
		p->current_ = !me;
	}
	weft__lock_release(plock(p));
}

void weft__periodic_run(void *arg)
{
	weft_periodic *p = arg;
	int me = weft__tls.task == &p->runs_[1];
	p->fn_(p->arg_);
	arm_next(p, me);
}

int weft_post_every(weft_rt *rt, weft_periodic *p, weft_fn fn, void *arg, int64_t first_ns,
                    int64_t period_ns, unsigned flags)
{
	if (!rt || !p || !fn || period_ns < 1 || (flags & ~PERIODIC_FLAGS))
		return WEFT_EINVAL;
	/* WEFT_EBUSY, changing nothing, while p's runs are in flight. While a
	 * chain is alive one of its two tasks always is (the next is posted
	 * before the current one ends), so looking at them in turn, twice,
	 * finds it even as the turn passes from one to the other. */
	for (int i = 0; i < 4; i++)
		if (weft__task_posted_unfinished(&p->runs_[i % 2]))
			return WEFT_EBUSY;
	int rc = weft_task_init(&p->runs_[0], weft__periodic_run, p);
	if (!rc)
		rc = weft_task_init(&p->runs_[1], weft__periodic_run, p);
	if (rc)
		return rc;
	p->rt_ = rt;
	p->fn_ = fn;
	p->arg_ = arg;
	p->start_ = first_ns;
	p->period_ = period_ns;
	p->next_ = p->count_ = p->skipped_ = 0;
	p->lock_ = 0;
	p->flags_ = flags;
	p->current_ = p->stopped_ = p->error_ = 0;
	memset(p->reserved_, 0, sizeof(p->reserved_));
	rc = weft_post_at(rt, NULL, &p->runs_[0], first_ns);
	if (rc)
		p->fn_ = NULL; /* never posted */
	return rc;
}

static bool posted(const weft_periodic *p)
{
	return p->fn_ && p->runs_[0].fn_ == weft__periodic_run;
}

static bool inside(const weft_periodic *p)
{
	return weft__tls.task == &p->runs_[0] || weft__tls.task == &p->runs_[1];
}

int weft_periodic_wait(weft_periodic *p)
{
	if (!p || !posted(p))
		return WEFT_EINVAL;
	if (inside(p))
		return WEFT_EDEADLK;
	/* Until stopped, the chain moves on: wait for whichever is current,
	 * then look again. Once stopped, nothing is posted any more. */
	for (;;) {
		weft__lock_acquire(plock(p));
		int cur = p->current_, stopped = p->stopped_;
		weft__lock_release(plock(p));
		(void)weft_wait(&p->runs_[cur]);
		if (stopped)
			break;
		/* The run that ended posted the next (current_ moved) or
		 * set stopped_: either way, look again. */
	}
	(void)weft_wait(&p->runs_[0]);
	(void)weft_wait(&p->runs_[1]);
	return 0;
}

int weft_periodic_cancel(weft_periodic *p)
{
	if (!p || !posted(p))
		return WEFT_EINVAL;
	weft__lock_acquire(plock(p));
	p->stopped_ = 1;
	int cur = p->current_;
	weft__lock_release(plock(p));
	(void)weft_cancel(&p->runs_[cur]); /* delayed: ends now; running: finishes */
	if (inside(p))
		return 0;
	(void)weft_wait(&p->runs_[0]);
	(void)weft_wait(&p->runs_[1]);
	return 0;
}

uint64_t weft_periodic_runs(const weft_periodic *p)
{
	return p ? atomic_load_explicit((_Atomic uint64_t *)&p->count_, memory_order_relaxed) : 0;
}

uint64_t weft_periodic_skipped(const weft_periodic *p)
{
	return p ? atomic_load_explicit((_Atomic uint64_t *)&p->skipped_, memory_order_relaxed) : 0;
}
