/* Linux side of src/fiber/preempt.h. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/internal.h"
#include "core/testing.h"
#include "fiber/preempt.h"
#include "fiber/tick_signal.h"

static _Thread_local weft__tick_fn tick_fn __attribute__((tls_model("initial-exec")));
static _Thread_local void *tick_ctx __attribute__((tls_model("initial-exec")));
/* The running ticker of this thread, for the handler to disarm while idle. */
static _Thread_local weft__ticker *tick_owner __attribute__((tls_model("initial-exec")));

static pthread_once_t install_once = PTHREAD_ONCE_INIT;
static int install_error;

/* ------------------------------------------------------------ handler */

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	weft__tick_fn fn = tick_fn;
	if (si->si_code != SI_TIMER || !fn) {
		weft__tick_chain(sig, si, uc);
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
		fn(tick_ctx, weft__tick_interrupted_pc(uc));
	}
	errno = saved_errno;
}

static void install(void)
{
	install_error = weft__tick_install(on_signal);
}

/* ------------------------------------------------------------ ticker */

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
	int err = weft__tick_refuse_static();
	if (err)
		return err;
	tick_ctx = ctx;
	tick_fn = fn;

	struct sigevent sev;
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = WEFT__TICK_SIGNAL;
	sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
	timer_t id;
	err = weft__tick_injected_fault();
	if (err == 0 && timer_create(CLOCK_MONOTONIC, &sev, &id) != 0)
		err = errno;
	if (err != 0) {
		tick_fn = NULL;
		return refused(err);
	}
	weft__tick_mask(false);

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

void weft__ticker_stop(weft__ticker *t)
{
	if (!t->running)
		return;
	weft__tick_mask(true);
	timer_delete((timer_t)t->timer);
	tick_fn = NULL;
	tick_ctx = NULL;
	tick_owner = NULL;
	t->running = false;
	/* A tick already pending stays blocked: it is discarded with the
	 * thread, whose mask never unblocks the signal again. */
}
