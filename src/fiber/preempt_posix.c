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
 * psjf's charges). docs/platforms.md lists what a port adds here. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#if defined(__ELF__)
#include <link.h>
#endif

#include "core/clock.h"
#include "core/futex.h"
#include "core/internal.h"
#include "core/testing.h"
#include "fiber/preempt.h"

/* As on Linux (preempt_linux.c): ignored by default, rarely used. */
#define WEFT__TICK_SIGNAL SIGURG

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

static struct sigaction previous;
static pthread_once_t install_once = PTHREAD_ONCE_INIT;
static int install_error;

static pthread_mutex_t clock_lock = PTHREAD_MUTEX_INITIALIZER;
static tick_rec *recs;              /* under clock_lock */
static bool clock_running;          /* the clock thread exists (under clock_lock) */
static _Atomic uint32_t clock_word; /* moved to make the clock look again */

/* ------------------------------------------------------------ safe points */

#define MAX_RANGES 16

static struct {
	uintptr_t lo, hi;
} app_text[MAX_RANGES];
static int app_ranges;
/* See preempt_linux.c: a static program has libc in its own text, so it
 * has no safe point. Also true where the ranges cannot be found. */
static bool program_is_static;

#if defined(__ELF__)
static int collect_main_program(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	(void)data;
	bool dynamic = false;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			dynamic = true;
	if (!dynamic) {
		program_is_static = true;
		return 1;
	}
	for (int i = 0; i < info->dlpi_phnum && app_ranges < MAX_RANGES; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			app_text[app_ranges].lo = info->dlpi_addr + ph->p_vaddr;
			app_text[app_ranges].hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
			app_ranges++;
		}
	}
	return 1; /* the first object is the main program */
}
#endif

bool weft__pc_in_app(uintptr_t pc)
{
	for (int i = 0; i < app_ranges; i++)
		if (pc >= app_text[i].lo && pc < app_text[i].hi)
			return true;
	return false;
}

/* The interrupted instruction: the one piece of the signal context POSIX
 * leaves to each system (mcontext_t is opaque there). */
static uintptr_t interrupted_pc(void *uc_void)
{
	ucontext_t *uc = uc_void;
#if defined(__linux__) && defined(__x86_64__)
	return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__linux__) && defined(__aarch64__)
	return (uintptr_t)uc->uc_mcontext.pc;
#else
	(void)uc;
	return 0; /* unknown: never a safe point */
#endif
}

/* ------------------------------------------------------------ handler */

static void chain(int sig, siginfo_t *si, void *uc)
{
	if (previous.sa_flags & SA_SIGINFO) {
		if (previous.sa_sigaction)
			previous.sa_sigaction(sig, si, uc);
	} else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
		previous.sa_handler(sig);
	}
}

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	weft__ticker *t = tick_owner;
	tick_rec *r = t ? t->timer : NULL;
	weft__tick_fn fn = tick_fn;
	if (!r || !fn || !atomic_exchange_explicit(&r->pending, false, memory_order_acquire)) {
		chain(sig, si, uc);
		return;
	}
	int saved_errno = errno;
	if (!atomic_load_explicit(&t->idle, memory_order_relaxed))
		fn(tick_ctx, interrupted_pc(uc));
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
#if defined(__ELF__)
	dl_iterate_phdr(collect_main_program, NULL);
#else
	program_is_static = true;
#endif
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_signal;
	/* The tick is blocked while the handler runs (see preempt_linux.c);
	 * weft__ticker_unblock lifts it before the handler switches away. */
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(WEFT__TICK_SIGNAL, &sa, &previous) != 0)
		install_error = WEFT_ENOTSUP;
	else if (pthread_atfork(NULL, NULL, clock_fork_child) != 0)
		install_error = WEFT_ENOMEM;
}

/* ------------------------------------------------------------ the clock */

static void *clock_main(void *arg)
{
	(void)arg;
	/* Ticks are for workers; this thread never takes one. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, WEFT__TICK_SIGNAL);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
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

static _Atomic long fault_countdown; /* 0: disarmed */
static _Atomic int fault_errno;

void weft__fault_timer_create(long nth, int err)
{
	atomic_store(&fault_errno, err);
	atomic_store(&fault_countdown, nth);
}

static int injected_fault(void)
{
	long n = atomic_load(&fault_countdown);
	while (n > 0) {
		if (atomic_compare_exchange_weak(&fault_countdown, &n, n - 1))
			return n == 1 ? atomic_load(&fault_errno) : 0;
	}
	return 0;
}

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
	if (program_is_static) {
		static atomic_flag said = ATOMIC_FLAG_INIT;
		if (!atomic_flag_test_and_set(&said))
			weft__log(WEFT_LOG_WARN,
			          "weft: timer preemption is off in a statically linked program: "
			          "libc is part of the program there, and a tick inside malloc "
			          "or stdio would switch away holding their state\n");
		return WEFT_ENOTSUP;
	}
	int err = injected_fault();
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
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, WEFT__TICK_SIGNAL);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
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

void weft__ticker_unblock(void)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, WEFT__TICK_SIGNAL);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
}

void weft__ticker_stop(weft__ticker *t)
{
	if (!t->running)
		return;
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, WEFT__TICK_SIGNAL);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
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
