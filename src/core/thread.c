/* Creating weft's own kernel threads, with a fault-injection hook. */
#include <signal.h>

#include "core/internal.h"
#include "core/testing.h"

static _Atomic long fault_countdown; /* 0: disarmed */

void weft__fault_thread_create(long nth)
{
	atomic_store(&fault_countdown, nth);
}

static bool injected_fault(void)
{
	long n = atomic_load(&fault_countdown);
	while (n > 0) {
		if (atomic_compare_exchange_weak(&fault_countdown, &n, n - 1))
			return n == 1;
	}
	return false;
}

int weft__thread_create(pthread_t *thread, void *(*fn)(void *), void *arg)
{
	if (injected_fault())
		return WEFT_EAGAIN;
	/* Workers block every signal, so a process-directed signal (SIGINT,
	 * SIGCHLD, a timer) is delivered to an application thread, which is
	 * what a program written for plain pthreads expects. Faults stay
	 * unblocked: they concern the thread that faulted (a fiber running
	 * into its guard page must reach the overflow handler), and a blocked
	 * fault signal kills the process without running any handler. */
	sigset_t all, old;
	sigfillset(&all);
	static const int faults[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP};
	for (size_t i = 0; i < sizeof(faults) / sizeof(faults[0]); i++)
		sigdelset(&all, faults[i]);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(thread, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc == 0 ? 0 : WEFT_EAGAIN;
}
