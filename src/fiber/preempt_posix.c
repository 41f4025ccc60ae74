/* fiber/preempt.h in POSIX (the portable build): one clock thread for the
 * process sends the tick to each ticking thread with pthread_kill.
 *
 * Why not the Linux way: timer_create with SIGEV_THREAD_ID (a timer whose
 * signal goes to a chosen thread) is Linux's; POSIX timers signal the
 * process, and macOS has no timer_create at all. setitimer is per process
 * too (ITIMER_REAL's SIGALRM goes to whichever thread has it unblocked).
 * pthread_kill reaches a chosen thread on every POSIX system, so a thread
 * that keeps the deadlines sends each worker its tick: one thread for all
 * runtimes, sleeping on a word (core/futex.h) until the next deadline, or
 * for good while every ticker is idle; it ends when the last ticker stops.
 *
 * A tick is told from a stray signal of the same number by a flag the
 * clock thread raises before it sends (si_code SI_TIMER is what the Linux
 * side checks; a pthread_kill has SI_TKILL or SI_USER, as a stray kill
 * would). An idle ticker is skipped and disarmed (the clock forgets it
 * until weft__ticker_idle(false) arms it again): an idle worker gets no
 * tick at all, where the Linux timer gives it at most one.
 *
 * The safe-point rule (preempt.h) needs the main program's executable
 * ranges (dl_iterate_phdr, which every ELF system has; a Mach-O port would
 * walk _dyld_get_image_header(0)'s segments) and the interrupted
 * instruction from the signal's ucontext, whose layout is each system's
 * own: read on Linux; elsewhere 0, which is never a safe point, so fibers
 * are then never preempted (but ticks still come, for mlfq's boosts and
 * psjf's charges). Both are fiber/tick_signal.c's, shared with the Linux
 * clock; docs/platforms.md lists what a port adds there. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/futex.h"
#include "core/internal.h"
#include "core/testing.h"
#include "fiber/preempt.h"
#include "fiber/tick_signal.h"

/* One per running ticker, on the clock's list (under clock_lock, as is
 * next_ns). */
typedef struct tick_rec {
	struct tick_rec *next;
	weft__ticker *t;
	pthread_t thread;
	int64_t next_ns;      /* the next tick's time; 0: a period from now */
	_Atomic bool pending; /* a tick was sent and not yet taken */
} tick_rec;

static _Thread_local weft__tick_fn tick_fn __attribute__((tls_model("initial-exec")));
static _Thread_local void *tick_ctx __attribute__((tls_model("initial-exec")));
static _Thread_local weft__ticker *tick_owner __attribute__((tls_model("initial-exec")));

static pthread_once_t install_once = PTHREAD_ONCE_INIT;
static int install_error;

static pthread_mutex_t clock_lock = PTHREAD_MUTEX_INITIALIZER;
static tick_rec *recs;              /* under clock_lock */
static bool clock_running;          /* the clock thread exists (under clock_lock) */
static _Atomic uint32_t clock_word; /* moved to make the clock look again */

/* ------------------------------------------------------------ handler */

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	weft__ticker *t = tick_owner;
	tick_rec *r = t ? t->timer : NULL;
	weft__tick_fn fn = tick_fn;
	if (!r || !fn || !atomic_exchange_explicit(&r->pending, false, memory_order_acquire)) {
		weft__tick_chain(sig, si, uc);
		return;
	}
	int saved_errno = errno;
	if (!atomic_load_explicit(&t->idle, memory_order_relaxed))
		fn(tick_ctx, weft__tick_interrupted_pc(uc));
	errno = saved_errno;
}

static void clock_fork_child(void)
{
	/* The clock thread is not in the child, nor are the tickers' threads
	 * (only the forking thread is, and it runs no runtime there). */
	pthread_mutex_init(&clock_lock, NULL);
	recs = NULL;
	clock_running = false;
}

static void install(void)
{
	install_error = weft__tick_install(on_signal);
	if (!install_error && pthread_atfork(NULL, NULL, clock_fork_child) != 0)
		install_error = WEFT_ENOMEM;
}

/* ------------------------------------------------------------ the clock */

static void *clock_main(void *arg)
{
	(void)arg;
	weft__tick_mask(true); /* ticks are for workers; this thread never takes one */
	pthread_mutex_lock(&clock_lock);
	for (;;) {
		if (!recs) {
			/* The last ticker stopped: the thread ends (a process
			 * with no runtime keeps no thread of weft's), and the next
			 * start makes another. */
			clock_running = false;
			pthread_mutex_unlock(&clock_lock);
			return NULL;
		}
		uint32_t seen = atomic_load(&clock_word);
		int64_t now = weft__now_ns(), due = INT64_MAX;
		for (tick_rec *r = recs; r; r = r->next) {
			weft__ticker *t = r->t;
			if (!atomic_load_explicit(&t->armed, memory_order_acquire))
				continue;
			if (atomic_load(&t->idle)) {
				/* Asleep: forgotten until it has work. Disarm, then
				 * look again (seq_cst both sides, with ticker_idle's
				 * store then load): either it sees the disarm and arms
				 * again, or this sees it awake and keeps it. */
				atomic_store(&t->armed, false);
				if (atomic_load(&t->idle))
					continue;
				atomic_store(&t->armed, true);
			}
			if (r->next_ns == 0)
				r->next_ns = now + t->period_ns; /* armed again: a whole period */
			if (now >= r->next_ns) {
				atomic_store_explicit(&r->pending, true, memory_order_release);
				pthread_kill(r->thread, WEFT__TICK_SIGNAL);
				r->next_ns += t->period_ns;
				if (r->next_ns <= now) /* late (a loaded machine): no burst */
					r->next_ns = now + t->period_ns;
			}
			if (r->next_ns < due)
				due = r->next_ns;
		}
		pthread_mutex_unlock(&clock_lock);
		weft__futex_wait(&clock_word, seen,
		                 due == INT64_MAX ? -1 : weft__ns_left(due, now));
		pthread_mutex_lock(&clock_lock);
	}
}

/* Makes the clock thread look at its list again. */
static void poke(void)
{
	atomic_fetch_add(&clock_word, 1);
	weft__futex_wake(&clock_word, 1);
}

/* ------------------------------------------------------------ ticker */

static int refused(const char *call, int err)
{
	weft__log(WEFT_LOG_ERROR, "weft: cannot create the quantum clock (%s: %s)\n", call,
	          strerror(err));
	return err == EAGAIN || err == ENOMEM ? WEFT_ENOMEM : WEFT_ENOTSUP;
}

int weft__ticker_start(weft__ticker *t, int64_t period_ns, weft__tick_fn fn, void *ctx)
{
	pthread_once(&install_once, install);
	if (install_error)
		return install_error;
	int err = weft__tick_refuse_static();
	if (err)
		return err;
	err = weft__tick_injected_fault();
	if (err != 0)
		return refused("the clock thread", err);
	tick_rec *r = calloc(1, sizeof(*r));
	if (!r)
		return refused("calloc", ENOMEM);
	r->t = t;
	r->thread = pthread_self();
	atomic_init(&r->pending, false);
	t->timer = r;
	t->period_ns = period_ns;
	atomic_store(&t->idle, false);
	atomic_store(&t->armed, true);
	tick_ctx = ctx;
	tick_fn = fn;
	tick_owner = t;

	pthread_mutex_lock(&clock_lock);
	if (!clock_running) {
		pthread_t th;
		pthread_attr_t attr;
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		err = pthread_create(&th, &attr, clock_main, NULL);
		pthread_attr_destroy(&attr);
		clock_running = err == 0;
	}
	if (err == 0) {
		r->next = recs;
		recs = r;
	}
	pthread_mutex_unlock(&clock_lock);
	if (err != 0) {
		tick_fn = NULL;
		tick_owner = NULL;
		t->timer = NULL;
		free(r);
		return refused("pthread_create", err);
	}
	weft__tick_mask(false);
	t->running = true;
	poke();
	return 0;
}

void weft__ticker_idle(weft__ticker *t, bool idle)
{
	if (!t->running)
		return;
	if (idle) {
		atomic_store_explicit(&t->idle, true, memory_order_relaxed);
		return;
	}
	atomic_store(&t->idle, false);
	if (!atomic_load(&t->armed)) {
		/* The clock forgot it while it slept: a whole period from now. */
		pthread_mutex_lock(&clock_lock);
		((tick_rec *)t->timer)->next_ns = 0;
		atomic_store(&t->armed, true);
		pthread_mutex_unlock(&clock_lock);
		poke();
	}
}

void weft__ticker_stop(weft__ticker *t)
{
	if (!t->running)
		return;
	weft__tick_mask(true);
	tick_rec *r = t->timer;
	pthread_mutex_lock(&clock_lock);
	for (tick_rec **q = &recs; *q; q = &(*q)->next)
		if (*q == r) {
			*q = r->next;
			break;
		}
	pthread_mutex_unlock(&clock_lock);
	poke(); /* the last one: the clock thread ends */
	/* No tick is sent after this; one already sent stays blocked and is
	 * discarded with the thread, as on Linux. */
	tick_fn = NULL;
	tick_ctx = NULL;
	tick_owner = NULL;
	t->timer = NULL;
	t->running = false;
	free(r);
}
