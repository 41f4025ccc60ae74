/* A fiber worker's sleep (engine.h): what wakes it (its timers, its fds,
 * a kick from another thread) and how it sleeps, and its counters.
 *
 * A worker sleeps in its poller while one of its fibers waits for an fd,
 * else on a futex word (kicked): a wake-up from another thread is then
 * one futex wake, where the poller's costs an eventfd write, an epoll
 * return and a read (issue 25's bar: no more than a futex wake-up). The
 * progress duty's watching worker polls its progress functions between
 * short sleeps in the poller. */
#include <sched.h>
#include <stdio.h>

#include <weft/progress.h>

#include "core/clock.h"
#include "core/futex.h"
#include "core/observe.h"
#include "core/spin.h"
#include "fiber/engine.h"
#include "io/uring.h"

/* weft__fworker.sleeping: how the worker sleeps, so a waker knows how to
 * wake it. */
enum { SLEEP_NO, SLEEP_POLLER, SLEEP_FUTEX };

/* How long a worker with hand-offs in flight yields before it goes idle. */
#define HANDOFF_YIELD_NS 20000

static int64_t clock_now(const weft__fworker *w)
{
	return weft__fworker_now(w);
}

bool weft__fworker_progress_came(void *ctx)
{
	weft__fworker *w = ctx;
	return !weft__inbox_empty(&w->inbox) ||
	       atomic_load_explicit(&w->unparks, memory_order_relaxed) != w->progress_unparks;
}

static void fd_ready(void *token, short revents, void *ctx)
{
	weft__fworker *w = ctx;
	if (token == (void *)w->ring) { /* the ring's eventfd (io/uring.h) */
		weft__ring_event(w->ring);
		return;
	}
	weft__fiber *f = token;
	weft__timers_remove(&w->timers, &f->timer);
	f->wait_result = revents;
	f->wait_fd = -1;
	weft__fworker_fd_waits_add(w, -1);
	weft__fiber_pin_set(f, false); /* nothing of it left on w */
	weft__fiber_unpark(f);
}

void weft__fworker_expire_timers(weft__fworker *w)
{
	if (!w->timers.root)
		return;
	/* Between any two tasks: most often the earliest timer is far. */
	if (!w->virtual_time && !weft__passed(w->timers.root->deadline))
		return;
	int64_t now = clock_now(w);
	weft__timer *tm;
	while ((tm = weft__timers_pop_expired(&w->timers, now))) {
		weft__fiber *f = (weft__fiber *)((char *)tm - offsetof(weft__fiber, timer));
		if (f->due > now) {
			/* Kept from an earlier wait (engine.h: weft__fiber_timer_arm): back
			 * in at this wait's deadline, or gone between waits. */
			if (f->due != INT64_MAX)
				weft__timers_add(&w->timers, &f->timer, f->due);
			continue;
		}
		if (f->wait_fd >= 0) {
			weft__poller_disarm(&w->poller, f->wait_fd);
			f->wait_fd = -1;
			weft__fworker_fd_waits_add(w, -1);
		}
		f->wait_result = WEFT_ETIMEDOUT; /* wait_fd, park_until */
		weft__fiber_pin_set(f, false);   /* nothing of it left on w */
		weft__fiber_unpark(f);
	}
}

void weft__fworker_push_remote(weft__fworker *w, weft_task *t)
{
	weft__inbox_push(&w->inbox, t);
	weft__fworker_wake(w);
}

/* The kick, then the sleeping mode, both seq_cst; the sleeper stores its
 * mode, then reads the kick (and the inbox): either it sees the kick, or
 * the kick sees it asleep and wakes it the way it sleeps. The kick is an
 * exchange: whatever the waker queued before it is seen by the sleeper's
 * clearing exchange and the looks after it, or the kick survives that
 * clearing and ends the next sleep. */
void weft__fworker_wake(weft__fworker *w)
{
	(void)atomic_exchange(&w->kicked, 1);
	int how = atomic_load(&w->sleeping);
	if (how == SLEEP_FUTEX)
		weft__futex_wake(&w->kicked, 1);
	else if (how == SLEEP_POLLER)
		weft__poller_wake(&w->poller);
}

weft__fworker *weft__fiber_handoff_begin(void)
{
	weft__fiber *f = weft__fiber_current();
	if (!f)
		return NULL;
	weft__fworker *w = atomic_load_explicit(&f->home, memory_order_relaxed);
	atomic_fetch_add_explicit(&w->handoffs, 1, memory_order_relaxed);
	return w;
}

void weft__fiber_handoff_end(weft__fworker *w)
{
	if (w)
		atomic_fetch_sub_explicit(&w->handoffs, 1, memory_order_relaxed);
}

/* A worker whose fibers wait for the blocking pool (handoffs), with
 * nothing else to run, yields its CPU for a while before it goes idle:
 * most calls handed over are short, and their fiber's wake-up then costs
 * the pool thread no futex wake and this worker no sleep, nor (under mn)
 * the barrier and the looks of going idle. It yields rather than spins: a
 * pool thread woken onto this CPU runs at once (a spin held it off, and
 * weft_blocking cost 2x a semaphore round trip). */
bool weft__fworker_await_handoff(weft__fworker *w)
{
	if (!atomic_load_explicit(&w->handoffs, memory_order_relaxed) || w->virtual_time)
		return false;
	int64_t start = weft__now_ns();
	do {
		if (atomic_load_explicit(&w->kicked, memory_order_relaxed) ||
		    !weft__inbox_empty(&w->inbox)) {
			/* Seen, as after a sleep: a full barrier before the
			 * caller looks at what it was woken for. */
			(void)atomic_exchange(&w->kicked, 0);
			return true;
		}
		sched_yield();
	} while (atomic_load_explicit(&w->handoffs, memory_order_relaxed) > 0 &&
	         weft__now_ns() - start < HANDOFF_YIELD_NS);
	return false;
}

/* After a look that woke reported fibers (engine.h: poll_every). */
static void polled(weft__fworker *w, int reported)
{
	w->picks_since_poll = 0;
	w->poll_every = reported > POLL_EVERY_PICKS ? (unsigned)reported : POLL_EVERY_PICKS;
}

void weft__fworker_poll_busy(weft__fworker *w)
{
	w->picks_since_poll = 0;
	if (!weft__fworker_fd_waiting(w))
		return;
	int64_t now = weft__now_ns();
	if (now - w->busy_polled_ns < BUSY_POLL_NS)
		return;
	w->busy_polled_ns = now;
	int reported = weft__poller_wait(&w->poller, 0, fd_ready, w);
	polled(w, reported);
	if (reported > 1 && w->ops->reported)
		w->ops->reported(w);
}

/* Sleeps in the poller until the next timer, an fd event or a wake-up.
 * Under virtual time, when no fd can wake anybody, only a post could come
 * before the next timer: look once without sleeping, then jump the clock
 * to the timer. */
void weft__fworker_sleep(weft__fworker *w)
{
	(void)weft__fworker_sleep_for(w, -1);
}

/* With no fd to wait for, a worker sleeps on a futex word rather than in
 * the poller: a wake-up is then one futex wake, where the poller's costs
 * an eventfd write, an epoll return and a read (finding e of issue 26). */
static bool sleep_on_futex(weft__fworker *w, int64_t timeout)
{
	atomic_store(&w->sleeping, SLEEP_FUTEX); /* seq_cst: pairs with wake */
	bool came = true;
	if (!atomic_load(&w->kicked) && weft__inbox_empty(&w->inbox)) {
		if (timeout > 0)
			weft__timer_slack_fine();
		if (timeout != 0)
			weft__futex_wait(&w->kicked, 0, timeout);
		came = atomic_load(&w->kicked) || !weft__inbox_empty(&w->inbox);
	}
	atomic_store_explicit(&w->sleeping, SLEEP_NO, memory_order_relaxed);
	(void)atomic_exchange(&w->kicked, 0); /* see weft__fworker_sleep_for */
	return came;
}

bool weft__fworker_sleep_for(weft__fworker *w, int64_t max_ns)
{
	int64_t next = weft__timers_next(&w->timers);
	int64_t timeout = -1;
	if (next != INT64_MAX) {
		timeout = weft__ns_left(next, clock_now(w));
		if (w->virtual_time && !weft__fworker_fd_waiting(w))
			timeout = 0;
	}
	bool bounded = max_ns >= 0 && (timeout < 0 || max_ns < timeout);
	if (bounded)
		timeout = max_ns;
	int64_t asked = w->progress_sleep_ns;
	w->progress_sleep_ns = -1;
	bool watching =
	        asked >= 0 && !w->virtual_time && weft__progress_on() && weft__progress_watch(w);
	uint64_t unparks = atomic_load_explicit(&w->unparks, memory_order_relaxed);
	int reports = 0;
	weft__count(&w->sleeps, 1);
	weft__ticker_idle(&w->ticker, true);
	weft__idle_begin(w->rt, w->index);
	bool came = true;
	if (!watching && !weft__fworker_fd_waiting(w)) {
		came = sleep_on_futex(w, timeout) || !bounded;
		goto woke;
	}
	atomic_store(&w->sleeping, SLEEP_POLLER); /* seq_cst: pairs with wake */
	if (atomic_load(&w->kicked) || !weft__inbox_empty(&w->inbox))
		goto awake;
	/* The watching worker polls for the progress functions between short
	 * sleeps, here rather than through the loop and the model's idle op
	 * (whose search would spin at each of them), until something else
	 * ends the sleep: an fd, a wake-up, its timer or max_ns, a waiter the
	 * poll readied, or no waiter left. */
	int64_t start = watching ? clock_now(w) : 0;
	for (unsigned quick = 0;;) {
		int64_t t = timeout;
		if (watching) {
			if (timeout >= 0 && (t = timeout - (clock_now(w) - start)) < 0)
				t = 0;
			if (t < 0 || asked < t)
				t = asked;
		}
		int reported = 0;
		if (watching && t == 0 && asked == 0 && ++quick % 16 != 0) {
			/* Asked to poll again at once (inside an arrival window):
			 * no system call but one in 16, for fds and kicks; the
			 * inbox is looked at every time. */
			weft__cpu_relax();
			w->poller.woken = false;
		} else {
			reported = weft__poller_wait(&w->poller, t, fd_ready, w);
			polled(w, reported);
			reports += reported;
		}
		came = reported > 0 || w->poller.woken || !weft__inbox_empty(&w->inbox);
		if (!watching || came || (timeout >= 0 && clock_now(w) - start >= timeout))
			break;
		w->progress_unparks = atomic_load_explicit(&w->unparks, memory_order_relaxed);
		asked = weft_progress_poll();
		if (asked < 0 || weft__fworker_progress_came(w))
			break;
	}
	came |= !bounded;
	if (watching)
		weft__progress_unwatch(w);
awake:
	/* Seen: a kick from now on is for the next sleep. A full barrier
	 * (exchange) before the caller looks at what it was woken for, so a
	 * kick that this clears was published before that look. */
	atomic_store_explicit(&w->sleeping, SLEEP_NO, memory_order_relaxed);
	(void)atomic_exchange(&w->kicked, 0);
woke:
	weft__idle_end(w->rt, w->index);
	weft__ticker_idle(&w->ticker, false);
	if (w->virtual_time && next != INT64_MAX && next > w->vnow &&
	    weft__inbox_empty(&w->inbox) &&
	    atomic_load_explicit(&w->unparks, memory_order_relaxed) == unparks)
		w->vnow = next;
	if (reports > 1 && w->ops->reported)
		w->ops->reported(w);
	return came;
}

void weft__fworker_stats(weft__fworker *w, weft_stats *s)
{
	uint64_t finished = atomic_load(&w->finished), cancelled = atomic_load(&w->cancelled);
	s->posted += atomic_load(&w->posted);
	s->run += finished - cancelled;
	s->cancelled += cancelled;
	s->sleeps += atomic_load(&w->sleeps);
	s->switches += atomic_load(&w->switches);
	s->preemptions += atomic_load(&w->preemptions);
	s->parks += atomic_load(&w->parks);
	s->unparks += atomic_load(&w->unparks);
	s->steals += atomic_load(&w->steals);
	s->steal_attempts += atomic_load(&w->steal_attempts);
	s->spins += atomic_load(&w->spins);
}

void weft__fworker_print_worker(weft__fworker *w, FILE *out)
{
	fprintf(out,
	        "weft: worker %d: ran %llu, wake-ups sent %llu, received %llu, steals %llu of "
	        "%llu attempts, sleeps %llu, idle looks %llu, parks %llu, fibers moved in %llu\n",
	        w->index, (unsigned long long)atomic_load(&w->finished),
	        (unsigned long long)atomic_load(&w->wakes_sent),
	        (unsigned long long)atomic_load(&w->wakes_received),
	        (unsigned long long)atomic_load(&w->steals),
	        (unsigned long long)atomic_load(&w->steal_attempts),
	        (unsigned long long)atomic_load(&w->sleeps),
	        (unsigned long long)atomic_load(&w->spins),
	        (unsigned long long)atomic_load(&w->parks),
	        (unsigned long long)atomic_load(&w->moved_in));
}

void weft__fworker_print_stats(const weft_stats *s, FILE *out)
{
	fprintf(out, "weft: fiber switches %llu, preemptions %llu, parks %llu, unparks %llu\n",
	        (unsigned long long)s->switches, (unsigned long long)s->preemptions,
	        (unsigned long long)s->parks, (unsigned long long)s->unparks);
	if (s->workers > 1)
		fprintf(out, "weft: steals %llu of %llu attempts, idle looks %llu\n",
		        (unsigned long long)s->steals, (unsigned long long)s->steal_attempts,
		        (unsigned long long)s->spins);
}
