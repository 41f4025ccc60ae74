/* What both quantum clocks share (fiber/preempt.h): preempt_linux.c's
 * per-thread timers and preempt_posix.c's clock thread deliver the same
 * signal to the same kind of handler, which needs the same safe-point
 * ranges, the interrupted instruction, the handler installed before weft's
 * to chain to, and the same refusals. */
#ifndef WEFT_SRC_FIBER_TICK_SIGNAL_H
#define WEFT_SRC_FIBER_TICK_SIGNAL_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

/* SIGURG, as Go's runtime uses for the same job: its default action is to
 * ignore it, so a stray one hurts nobody, and few programs use it (out-of-
 * band socket data); a SIGURG that is not weft's tick goes to the handler
 * installed before weft's. */
#define WEFT__TICK_SIGNAL SIGURG

/* Finds the main program's executable ranges (the safe points) and
 * installs handler for the tick signal, keeping the one before it for
 * weft__tick_chain. Once per process (the caller's pthread_once); 0 or
 * WEFT_ENOTSUP. */
int weft__tick_install(void (*handler)(int sig, siginfo_t *si, void *uc));

/* Hands a signal that is not weft's tick to the handler installed before. */
void weft__tick_chain(int sig, siginfo_t *si, void *uc);

/* The instruction a tick interrupted, from the handler's context; 0 where
 * its layout is not known (never a safe point: never preempted). */
uintptr_t weft__tick_interrupted_pc(void *uc);

/* WEFT_ENOTSUP, said once, in a statically linked program (or where the
 * ranges cannot be found): libc is part of its text there, and a tick
 * inside malloc or stdio would switch away holding their state. Else 0. */
int weft__tick_refuse_static(void);

/* The errno weft__fault_timer_create (core/testing.h) makes this start of
 * a quantum clock fail with, or 0. */
int weft__tick_injected_fault(void);

/* Blocks or unblocks the tick for the calling thread. */
void weft__tick_mask(bool block);

#endif
