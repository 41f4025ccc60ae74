/* The ucontext backend of context.h: getcontext/makecontext/swapcontext,
 * for platforms without switch_<arch>.S, and on any platform with
 * -DWEFT_FIBER_UCONTEXT=ON (to test this file where assembly exists).
 *
 * Unlike the assembly backend it saves and restores the signal mask, so
 * every switch costs a system call (sigprocmask) and is some 20-50 times
 * slower; it also saves all registers, not only the callee-saved ones.
 *
 * Storage: no allocation. A suspended context's ucontext_t lives in the
 * frame of the weft__context_switch call it is suspended in (that frame
 * stays put until the call returns); ctx->impl points to it. A context that
 * has not run yet keeps its first ucontext_t, and the entry and argument,
 * at the top of its own stack, below which it runs.
 *
 * makecontext passes int arguments only, so the start record's address is
 * passed as two 32-bit halves. */
#include "fiber/context.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include "core/log.h"
#include "fiber/context_sanitizer.h"

typedef struct start_record {
	ucontext_t uc;
	void (*entry)(void *);
	void *arg;
} start_record;

#if defined(WEFT__CONTEXT_ASAN)
/* The context that switched to the running one (ASan's switch_in wants it;
 * swapcontext has no way to hand a value over). */
static _Thread_local weft__context *switch_prev;
#define SET_PREV(c) (switch_prev = (c))
#define GET_PREV()  switch_prev
#else
#define SET_PREV(c) ((void)0)
#define GET_PREV()  ((weft__context *)NULL)
#endif

WEFT__NO_ASAN static void start(unsigned hi, unsigned lo)
{
	start_record *r = (start_record *)(((uintptr_t)hi << 32) | (uintptr_t)lo);
	weft__san_switch_in(NULL, GET_PREV());
	r->entry(r->arg);
	weft__context_entry_returned();
}

void weft__context_make(weft__context *ctx, void *stack_base, size_t stack_size,
                        void (*entry)(void *), void *arg)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->stack_base = stack_base;
	ctx->stack_size = stack_size;
	weft__san_make(ctx, stack_base, stack_size);

	uintptr_t top = ((uintptr_t)stack_base + stack_size) & ~(uintptr_t)63;
	start_record *r = (start_record *)((top - sizeof(start_record)) & ~(uintptr_t)63);
	r->entry = entry;
	r->arg = arg;
	if (getcontext(&r->uc) != 0) {
		weft__log(WEFT_LOG_ERROR, "weft: getcontext: %s\n", strerror(errno));
		abort();
	}
	r->uc.uc_link = NULL;
	r->uc.uc_stack.ss_sp = stack_base;
	r->uc.uc_stack.ss_size = (size_t)((uintptr_t)r - (uintptr_t)stack_base);
	r->uc.uc_stack.ss_flags = 0;
	uint64_t p = (uintptr_t)r;
	makecontext(&r->uc, (void (*)(void))start, 2, (unsigned)(p >> 32), (unsigned)p);
	ctx->impl = &r->uc;
}

WEFT__NO_ASAN void weft__context_switch(weft__context *from, weft__context *to)
{
	ucontext_t *target = to->impl;
	weft__san_switch_out(from, to);
	SET_PREV(from);
	if (!from) {
		setcontext(target);
		weft__log(WEFT_LOG_ERROR, "weft: setcontext: %s\n", strerror(errno));
		abort();
	}
	ucontext_t here;
	/* ASan's swapcontext interceptor reads the target's uc_stack; the one
	 * a later switch back will read is this one, which getcontext leaves
	 * unset. */
	here.uc_stack.ss_sp = NULL;
	here.uc_stack.ss_size = 0;
	here.uc_stack.ss_flags = 0;
	from->impl = &here;
	if (swapcontext(&here, target) != 0) {
		weft__log(WEFT_LOG_ERROR, "weft: swapcontext: %s\n", strerror(errno));
		abort();
	}
	weft__san_switch_in(from, GET_PREV());
}

void weft__context_release(weft__context *ctx)
{
	weft__san_release(ctx);
	ctx->impl = NULL;
}
