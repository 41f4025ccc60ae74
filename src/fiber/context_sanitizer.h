/* Sanitizer annotations shared by the context backends (context.c,
 * context_ucontext.c): every switch is announced before it happens and
 * completed right after, on the new stack. They compile to nothing unless
 * the translation unit is built with -fsanitize=address or thread.
 *
 * ASan: before the switch __sanitizer_start_switch_fiber(save, bottom,
 * size) names the stack being entered and parks the old stack's fake stack
 * in *save (save == NULL when the old context is finished: ASan frees it);
 * right after, __sanitizer_finish_switch_fiber(fake_stack, &bottom_old,
 * &size_old) restores the new one's fake stack and reports the stack we
 * came from. A thread's own context has no known bounds until then, so its
 * stack_base/stack_size are filled from that report (prev is the context
 * that switched here, handed over by the switch itself).
 *
 * TSan: each made context has its own fiber (__tsan_create_fiber), a thread
 * context uses the thread's (__tsan_get_current_fiber); switches use flag 0,
 * so a switch orders what ran before it with what runs after it, as handing
 * a fiber from one worker to another does. */
#ifndef WEFT_SRC_FIBER_CONTEXT_SANITIZER_H
#define WEFT_SRC_FIBER_CONTEXT_SANITIZER_H

#include "fiber/context.h"

#if defined(__SANITIZE_ADDRESS__)
#define WEFT__CONTEXT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WEFT__CONTEXT_ASAN 1
#endif
#endif

#if defined(__SANITIZE_THREAD__)
#define WEFT__CONTEXT_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define WEFT__CONTEXT_TSAN 1
#endif
#endif

#ifdef WEFT__CONTEXT_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#ifdef WEFT__CONTEXT_TSAN
#include <sanitizer/tsan_interface.h>
#endif

/* For the functions that call switch_out/switch_in: between the two, ASan's
 * idea of the current stack is in transition, so those frames must not keep
 * locals on ASan's fake stack. */
#ifdef WEFT__CONTEXT_ASAN
#define WEFT__NO_ASAN __attribute__((no_sanitize_address))
#else
#define WEFT__NO_ASAN
#endif

static inline void weft__san_thread(weft__context *ctx)
{
	(void)ctx;
#ifdef WEFT__CONTEXT_TSAN
	ctx->tsan_fiber = __tsan_get_current_fiber();
#endif
}

static inline void weft__san_make(weft__context *ctx, void *stack_base, size_t stack_size)
{
	(void)ctx;
	(void)stack_base;
	(void)stack_size;
#ifdef WEFT__CONTEXT_ASAN
	/* A reused stack still carries the redzones of frames that never
	 * returned (a finished fiber's last frames). */
	__asan_unpoison_memory_region(stack_base, stack_size);
#endif
#ifdef WEFT__CONTEXT_TSAN
	ctx->tsan_fiber = __tsan_create_fiber(0);
#endif
}

static inline void weft__san_release(weft__context *ctx)
{
	(void)ctx;
#ifdef WEFT__CONTEXT_TSAN
	if (ctx->tsan_fiber && !(ctx->flags & WEFT__CONTEXT_THREAD))
		__tsan_destroy_fiber(ctx->tsan_fiber);
	ctx->tsan_fiber = NULL;
#endif
}

/* Before the switch from `from` (NULL: finished) to `to`. */
WEFT__NO_ASAN static inline void weft__san_switch_out(weft__context *from, weft__context *to)
{
	(void)from;
	(void)to;
#ifdef WEFT__CONTEXT_ASAN
	__sanitizer_start_switch_fiber(from ? &from->asan_fake_stack : NULL, to->stack_base,
	                               to->stack_size);
#endif
#ifdef WEFT__CONTEXT_TSAN
	__tsan_switch_to_fiber(to->tsan_fiber, 0);
#endif
}

/* Right after arriving in self (NULL: a context's first run) from prev
 * (NULL: a finished context). */
WEFT__NO_ASAN static inline void weft__san_switch_in(weft__context *self, weft__context *prev)
{
	(void)self;
	(void)prev;
#ifdef WEFT__CONTEXT_ASAN
	const void *bottom = NULL;
	size_t size = 0;
	__sanitizer_finish_switch_fiber(self ? self->asan_fake_stack : NULL, &bottom, &size);
	if (prev && (prev->flags & WEFT__CONTEXT_THREAD) && !prev->stack_base) {
		prev->stack_base = bottom;
		prev->stack_size = size;
	}
#endif
}

/* Both backends' start routines end here if an entry function returns,
 * which the context.h contract forbids: say so and abort. */
__attribute__((noreturn)) void weft__context_entry_returned(void);

#endif
