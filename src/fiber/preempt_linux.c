/* Linux side of src/fiber/preempt.h. */
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "core/internal.h"
#include "core/testing.h"
#include "fiber/preempt.h"

/* SIGURG, as Go's runtime uses for the same job: its default action is to
 * ignore it, so a stray one hurts nobody, and few programs use it (out-of-
 * band socket data); a SIGURG that is not weft's tick goes to the handler
 * installed before weft's. */
#define WEFT__TICK_SIGNAL SIGURG

static _Thread_local weft__tick_fn tick_fn __attribute__((tls_model("initial-exec")));
static _Thread_local void *tick_ctx __attribute__((tls_model("initial-exec")));
/* The running ticker of this thread, for the handler to disarm while idle. */
static _Thread_local weft__ticker *tick_owner __attribute__((tls_model("initial-exec")));

static struct sigaction previous;
static pthread_once_t install_once = PTHREAD_ONCE_INIT;
static int install_error;

/* ------------------------------------------------------------ safe points */

#define MAX_RANGES 16

static struct {
	uintptr_t lo, hi;
} app_text[MAX_RANGES];
static int app_ranges;

/* A statically linked program carries libc (malloc, stdio, ...) in its own
 * text, where the rule above would count it as the application's: a tick
 * inside malloc would switch away holding malloc's lock or halfway through
 * its lists (found by the aarch64 suite, whose tests are static: a double
 * free in preempt.libc_safe_points). So a static program has no safe point
 * and is never preempted; weft__ticker_start says so once. */
static bool program_is_static;

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
	/* The first object is the main program. */
	for (int i = 0; i < info->dlpi_phnum && app_ranges < MAX_RANGES; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			app_text[app_ranges].lo = info->dlpi_addr + ph->p_vaddr;
			app_text[app_ranges].hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
			app_ranges++;
		}
	}
	return 1; /* stop after the first */
}

bool weft__pc_in_app(uintptr_t pc)
{
	for (int i = 0; i < app_ranges; i++)
		if (pc >= app_text[i].lo && pc < app_text[i].hi)
			return true;
	return false;
}

static uintptr_t interrupted_pc(void *uc_void)
{
	ucontext_t *uc = uc_void;
#if defined(__x86_64__)
	return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
	return (uintptr_t)uc->uc_mcontext.pc;
#else
	(void)uc;
	return 0; /* unknown: never a safe point, so never preempted */
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
	weft__tick_fn fn = tick_fn;
	if (si->si_code != SI_TIMER || !fn) {
		chain(sig, si, uc);
		return;
	}
	int saved_errno = errno;
	weft__ticker *t = tick_owner;
	if (t && atomic_load_explicit(&t->idle, memory_order_relaxed)) {
		/* The worker sleeps: stop ticking until it has work again
		 * (timer_settime is async-signal-safe). */
		struct itimerspec off = {{0, 0}, {0, 0}};
		timer_settime((timer_t)t->timer, 0, &off, NULL);
		atomic_store_explicit(&t->armed, false, memory_order_relaxed);
	} else {
		fn(tick_ctx, interrupted_pc(uc));
	}
	errno = saved_errno;
}

static void install(void)
{
	dl_iterate_phdr(collect_main_program, NULL);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_signal;
	/* The tick is blocked while the handler runs, so the handler (weft's
	 * own code, which the program-counter rule would count as the
	 * application's in a static build) is never interrupted by the next
	 * tick; weft__ticker_unblock lifts that right before the handler
	 * switches to another fiber. */
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(WEFT__TICK_SIGNAL, &sa, &previous) != 0)
		install_error = WEFT_ENOTSUP;
}

/* ------------------------------------------------------------ ticker */

static _Atomic long fault_countdown; /* 0: disarmed */
static _Atomic int fault_errno;

void weft__fault_timer_create(long nth, int err)
{
	atomic_store(&fault_errno, err);
	atomic_store(&fault_countdown, nth);
}

/* The errno an armed hook makes this timer_create fail with, or 0. */
static int injected_fault(void)
{
	long n = atomic_load(&fault_countdown);
	while (n > 0) {
		if (atomic_compare_exchange_weak(&fault_countdown, &n, n - 1))
			return n == 1 ? atomic_load(&fault_errno) : 0;
	}
	return 0;
}

/* Says which call failed and why (errno's text, and for EAGAIN the limit
 * behind it), and what the caller gets: WEFT_ENOMEM when the kernel ran out
 * of timers (EAGAIN) or memory, WEFT_ENOTSUP otherwise. */
static int refused(int err)
{
	char why[96] = "";
	if (err == EAGAIN) {
		struct rlimit sigpending;
		if (getrlimit(RLIMIT_SIGPENDING, &sigpending) == 0 &&
		    sigpending.rlim_cur != RLIM_INFINITY)
			snprintf(why, sizeof(why),
			         "; each timer counts against RLIMIT_SIGPENDING (ulimit -i), "
			         "which is %llu",
			         (unsigned long long)sigpending.rlim_cur);
	}
	weft__log(WEFT_LOG_ERROR, "weft: cannot create the quantum clock (timer_create: %s%s)\n",
	          strerror(err), why);
	return err == EAGAIN || err == ENOMEM ? WEFT_ENOMEM : WEFT_ENOTSUP;
}

static void arm(weft__ticker *t)
{
	struct itimerspec its = {
	        .it_interval = {.tv_sec = t->period_ns / 1000000000,
	                        .tv_nsec = t->period_ns % 1000000000},
	};
	its.it_value = its.it_interval;
	atomic_store_explicit(&t->armed, true, memory_order_relaxed);
	timer_settime((timer_t)t->timer, 0, &its, NULL);
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
	tick_ctx = ctx;
	tick_fn = fn;

	struct sigevent sev;
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = WEFT__TICK_SIGNAL;
	sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
	timer_t id;
	int err = injected_fault();
	if (err == 0 && timer_create(CLOCK_MONOTONIC, &sev, &id) != 0)
		err = errno;
	if (err != 0) {
		tick_fn = NULL;
		return refused(err);
	}
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, WEFT__TICK_SIGNAL);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);

	t->timer = id;
	t->period_ns = period_ns;
	t->running = true;
	atomic_store(&t->idle, false);
	tick_owner = t;
	arm(t);
	return 0;
}

void weft__ticker_idle(weft__ticker *t, bool idle)
{
	if (!t->running)
		return;
	atomic_store_explicit(&t->idle, idle, memory_order_relaxed);
	if (!idle && !atomic_load_explicit(&t->armed, memory_order_relaxed))
		arm(t);
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
	timer_delete((timer_t)t->timer);
	tick_fn = NULL;
	tick_ctx = NULL;
	tick_owner = NULL;
	t->running = false;
	/* A tick already pending stays blocked: it is discarded with the
	 * thread, whose mask never unblocks the signal again. */
}
