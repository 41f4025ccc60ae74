/* Execution contexts for fibers: the one place that knows how to save the
 * running thread's registers and resume another stack.
 *
 * x86-64 System V and aarch64 use hand-written assembly (switch_<arch>.S,
 * frame layout in switch_<arch>.h) that saves only what the ABI says a call
 * preserves: callee-saved registers, the stack pointer and the
 * floating-point control state (x86-64: MXCSR and the x87 control word;
 * aarch64: d8-d15 and FPCR). Other platforms, and any platform built with
 * -DWEFT_FIBER_UCONTEXT=ON, use ucontext (context_ucontext.c), which also
 * saves the signal mask at the price of a system call per switch. CMake
 * compiles exactly one backend. The assembly switch does not save or
 * restore the signal mask (no system call on the switch path) and does not
 * touch thread-local storage.
 *
 * A new context starts with the floating-point control state of the thread
 * that made it (rounding mode, exception masks), as a new pthread does.
 *
 * Under AddressSanitizer and ThreadSanitizer every switch is announced to
 * the sanitizer (__sanitizer_start_switch_fiber / finish, __tsan_switch_to_
 * fiber), so their reports stay meaningful (context_sanitizer.h).
 *
 * Changes from the first draft of this interface, same four functions:
 * - weft__context_switch accepts from == NULL, meaning "the running context
 *   is finished". That is how an entry function ends: the sanitizers must
 *   hear that the old stack is gone (ASan frees the fake stack it kept for
 *   it), and nothing needs saving. Without it every finished fiber would
 *   leak its ASan fake stack.
 * - A flags field (taken from reserved[]) marks a thread's own context, so
 *   release does not destroy the TSan fiber of a kernel thread.
 *
 * Contexts are not thread-safe objects: a context is switched from by the
 * one thread running it; a suspended fiber context may be resumed by any
 * thread (the scheduler's locks order the hand-over). A thread's own context
 * (init_thread) may only be resumed on that thread. */
#ifndef WEFT_SRC_FIBER_CONTEXT_H
#define WEFT_SRC_FIBER_CONTEXT_H

#include <stddef.h>
#include <stdint.h>

typedef struct weft__context {
	void *sp; /* saved stack pointer (assembly backends) */
	/* x86-64's switch saves the callee-saved registers and control words
	 * here (switch_x86_64.h), on the line the scheduler reads anyway to
	 * resume, not in a frame on the suspended stack, where they would be
	 * one or two cold lines more per resume of a fiber parked among
	 * thousands. Unused by the other backends. */
	uint64_t regs[6]; /* rbx, rbp, r12, r13, r14, r15 */
	uint32_t mxcsr;
	uint16_t x87cw;
	uint16_t flags;         /* WEFT__CONTEXT_* */
	void *impl;             /* backend state (ucontext_t *); NULL when unused */
	const void *stack_base; /* lowest usable address, for ASan; a thread's
	                           own context learns it on its first switch */
	size_t stack_size;
	void *tsan_fiber; /* ThreadSanitizer fiber handle, or NULL */
	void *asan_fake_stack;
	void *reserved[1];
} weft__context;

#define WEFT__CONTEXT_THREAD 1u /* made by init_thread: a kernel thread's own stack */
#define WEFT__CONTEXT_FRESH  2u /* made by make, never switched into yet */

/* weft__context_init_thread describes the calling kernel thread's own
 * context (its original stack), so that fibers can switch back to it. It
 * allocates nothing (under TSan it records the thread's fiber handle). */
void weft__context_init_thread(weft__context *ctx);

/* weft__context_make prepares ctx to run entry(arg) on the stack
 * [stack_base, stack_base + stack_size) the first time something switches
 * to it. entry must never return: it ends with weft__context_switch(NULL,
 * to). The stack must hold at least a few hundred bytes for the start frame
 * (the ucontext backend keeps its ucontext_t there too) plus what entry
 * uses. Under TSan this allocates a fiber handle (freed by release). */
void weft__context_make(weft__context *ctx, void *stack_base, size_t stack_size,
                        void (*entry)(void *), void *arg);

/* weft__context_switch saves the running context into from and resumes to.
 * It returns when something switches back to from. With from == NULL the
 * running context is finished and never resumed: nothing is saved, the call
 * does not return, and the context may be released (by whoever runs next)
 * once the switch is done. to must be suspended (made, or switched from),
 * and a thread's own context may only be resumed on its thread. */
void weft__context_switch(weft__context *from, weft__context *to);

/* weft__context_release frees what make or init_thread acquired (sanitizer
 * fiber handles); the stack belongs to the caller. Never on the running
 * context. */
void weft__context_release(weft__context *ctx);

#endif
