/* The assembly backend of context.h (x86-64 and aarch64; CMake picks it).
 *
 * A suspended context is its stack pointer: weft__context_switch_asm pushes
 * a switch frame (switch_<arch>.h) on the running stack, stores the stack
 * pointer in from->sp, loads to->sp and pops the frame found there. A new
 * context gets a frame built by weft__switch_frame_init whose return address
 * is weft__context_start_asm, so the first switch into it continues in
 * that trampoline, which calls weft__context_start(prev, entry, arg) on an aligned
 * stack.
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

/* switch_<arch>.S: the same switch, leaving by ret (from one suspended
 * context to another) or by an indirect jmp (into a new context, or out of
 * a finished one: see switch_x86_64.S for why). */
void *weft__context_switch_asm(void **save_sp, void *new_sp, void *transfer);
void *weft__context_jump_asm(void **save_sp, void *new_sp, void *transfer);

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
	ctx->sp = weft__switch_frame_init(stack_base, stack_size, (void *)(uintptr_t)entry, arg);
	ctx->flags |= WEFT__CONTEXT_FRESH;
}

WEFT__NO_ASAN void weft__context_switch(weft__context *from, weft__context *to)
{
	weft__san_switch_out(from, to);
	void *prev;
	if (__builtin_expect(from && !(to->flags & WEFT__CONTEXT_FRESH), 1)) {
		prev = weft__context_switch_asm(&from->sp, to->sp, from);
	} else {
		/* Into a new context, or out of a finished one, whose stack
		 * pointer goes to to->sp: that means nothing while to runs (the
		 * switch has already read it). */
		to->flags &= ~WEFT__CONTEXT_FRESH;
		prev = weft__context_jump_asm(from ? &from->sp : &to->sp, to->sp, from);
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
