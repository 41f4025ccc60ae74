/* The quantum clock behind timer preemption: a per-thread ticker that calls
 * a function from a signal handler every `period` while the thread has work
 * (an idle worker gets at most one tick, which stops the clock until it has
 * work again), and the safe-point test the handler uses to decide whether
 * the interrupted code may be switched away from.
 *
 * The clock is CLOCK_MONOTONIC, not the thread's CPU clock: Linux checks
 * CPU-time timers only at the scheduler tick, so their period is rounded up
 * to 1/HZ (measured here: a 100 us CPU-time timer fired 248 times a second,
 * a 1 ms one 250 times; a monotonic one 9169 and 1000 times).
 *
 * The rule (docs/fibers.md, "Preemption"): a fiber is switched at a tick
 * only when the interrupted instruction belongs to the application's own
 * code, i.e. lies in an executable segment of the main program, and weft is
 * not inside its own critical section (weft__tls.nopreempt == 0, raised by
 * every weft lock and scheduler path). Code in libc, the dynamic loader,
 * the vDSO, libweft.so, a sanitizer runtime or any other shared library is
 * never interrupted: a fiber preempted inside malloc or printf would hold
 * their locks while the next fiber wants them. A tick that lands there is
 * deferred to a later tick.
 *
 * Linux: timer_create on CLOCK_MONOTONIC delivering WEFT__TICK_SIGNAL
 * to the thread (SIGEV_THREAD_ID); the handler runs on the interrupted
 * fiber's stack with the tick blocked (a nested tick would find weft's
 * own handler code and could preempt it), and weft__ticker_unblock lifts
 * that right before the handler switches away: one sigprocmask per
 * preemption, none on any other switch path.
 * Elsewhere weft__ticker_start answers WEFT_ENOTSUP. */
#ifndef WEFT_SRC_FIBER_PREEMPT_H
#define WEFT_SRC_FIBER_PREEMPT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* Called from the signal handler on the ticking thread. pc is the
 * interrupted instruction (0 when unknown). */
typedef void (*weft__tick_fn)(void *ctx, uintptr_t pc);

typedef struct weft__ticker {
	void *timer; /* the platform's timer handle */
	int64_t period_ns;
	bool running;
	_Atomic bool idle;  /* the thread is about to sleep or sleeping */
	_Atomic bool armed; /* the timer is set (the handler disarms it when idle) */
} weft__ticker;

/* Starts ticking the calling thread every period_ns. Returns 0,
 * WEFT_ENOTSUP (no per-thread timer signals here, or the kernel refused
 * the timer for another reason) or WEFT_ENOMEM (the kernel is out of
 * timers or memory); a refusal is said on stderr first, with the call,
 * errno's text and the limit (RLIMIT_SIGPENDING). */
int weft__ticker_start(weft__ticker *t, int64_t period_ns, weft__tick_fn fn, void *ctx);

/* The thread is going to sleep (true) or has work again (false); on the
 * ticking thread. Costs nothing unless the clock was stopped meanwhile
 * (then one timer_settime). */
void weft__ticker_idle(weft__ticker *t, bool idle);

/* From the tick function, right before it switches to another context:
 * lets ticks in again (they are blocked while the handler runs, and the
 * handler will not return until this fiber runs again). One system call
 * per preemption, none on any other switch. */
void weft__ticker_unblock(void);

/* Stops it; on the thread that started it. No tick runs after it returns. */
void weft__ticker_stop(weft__ticker *t);

/* Whether pc lies in an executable segment of the main program. */
bool weft__pc_in_app(uintptr_t pc);

#endif
