/* The assembly backend of context.h (x86-64 and aarch64; CMake picks it).
 *
 * A suspended context is its stack pointer and its callee-saved registers:
 * on x86-64 the switch keeps the registers in the context itself, on
 * aarch64 in a frame it pushes on the running stack (switch_<arch>.h).
 * A new context is made to look suspended at weft__context_start_asm, so
 * the first switch into it continues in that trampoline, which calls
 * weft__context_start(prev, entry, arg) on an aligned stack.
 *
 * The switch hands one pointer across: the context switched from (NULL when
 * it finished). Only the sanitizer annotations use it, to learn the bounds of
 * a thread's own stack; it costs one register move.
 *
 * Does not save the signal mask, make system calls or touch thread-local
 * storage; see switch_<arch>.h for the registers. */
#include "fiber/context.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fiber/context_sanitizer.h"

#if defined(__x86_64__)
#include "fiber/switch_x86_64.h"
#elif defined(__aarch64__)
#include "fiber/switch_aarch64.h"
#else
#error "context.c has no switch for this architecture: CMake should have chosen context_ucontext.c"
#endif

/* switch_<arch>.h gives three: weft__arch_make (a context that has not
 * run), weft__arch_switch (from one suspended context to another, leaving
 * by ret) and weft__arch_jump (into a new context, or out of a finished
 * one, leaving by an indirect jmp: see switch_x86_64.S for why). */

/* Called by weft__context_start_asm, on the new stack, the first time a
 * context runs. Not static: the trampoline calls it (hidden, like every weft__). */
void weft__context_start(weft__context *prev, void (*entry)(void *), void *arg);

WEFT__NO_ASAN void weft__context_start(weft__context *prev, void (*entry)(void *), void *arg)
{
	weft__san_switch_in(NULL, prev);
	entry(arg);
	weft__context_entry_returned();
}

void weft__context_make(weft__context *ctx, void *stack_base, size_t stack_size,
                        void (*entry)(void *), void *arg)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->stack_base = stack_base;
	ctx->stack_size = stack_size;
	weft__san_make(ctx, stack_base, stack_size);
	weft__arch_make(ctx, stack_base, stack_size, (void *)(uintptr_t)entry, arg);
	ctx->flags |= WEFT__CONTEXT_FRESH;
}

WEFT__NO_ASAN void weft__context_switch(weft__context *from, weft__context *to)
{
	weft__san_switch_out(from, to);
	void *prev;
	if (__builtin_expect(from && !(to->flags & WEFT__CONTEXT_FRESH), 1)) {
		prev = weft__arch_switch(from, to, from);
	} else {
		/* Into a new context, or out of a finished one, whose stack
		 * pointer goes to to->sp: that means nothing while to runs (the
		 * switch has already read it). */
		to->flags &= ~WEFT__CONTEXT_FRESH;
		prev = weft__arch_jump(from, to, from);
	}
	/* Without sanitizers this is nothing and both calls are tail calls:
	 * the switch returns straight to our caller. */
	weft__san_switch_in(from, prev);
}

void weft__context_release(weft__context *ctx)
{
	weft__san_release(ctx);
	ctx->sp = NULL;
}
