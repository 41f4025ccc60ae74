/* The register save area of the x86-64 System V backend (switch_x86_64.S):
 * where weft__context_switch_asm keeps a suspended context. The offsets
 * are used by the assembly and checked here against weft__context, so the
 * two cannot drift apart.
 *
 *   ctx + 0    the stack pointer, at the return address (where the switch
 *              resumes, by ret or jmp)
 *   ctx + 8    rbx, rbp, r12, r13, r14, r15           6 x 8 bytes
 *   ctx + 56   MXCSR (control and status bits)        4 bytes
 *   ctx + 60   x87 control word                       2 bytes
 *
 * All in the context's first line, which the scheduler reads to resume
 * anyway (sp, flags): the suspended stack holds nothing but the return
 * address, on the line of its caller's frame. A frame on the stack (the
 * switch before this one) was one or two lines more to miss on every
 * resume of a fiber parked among thousands: cachegrind, 1,000 echo
 * connections on one worker, a 1 MiB last level: see switch_x86_64.S.
 *
 * Saved: the callee-saved registers of the ABI, the stack pointer, the
 * MXCSR and the x87 control word. Not saved: caller-saved registers (the
 * compiler already spilled them around the call), x87 status and stack,
 * AVX state, the signal mask, fs/gs (thread-local storage stays the
 * kernel thread's). Not compatible with CET: the switch leaves by an
 * indirect jmp to addresses without endbr64 (IBT) and its calls never
 * return through ret (shadow stack). The object carries no CET property
 * note, so the linker and loader keep CET off for any program linking it. */
#ifndef WEFT_SRC_FIBER_SWITCH_X86_64_H
#define WEFT_SRC_FIBER_SWITCH_X86_64_H

#define WEFT__CTX_SP    0
#define WEFT__CTX_RBX   8
#define WEFT__CTX_RBP   16
#define WEFT__CTX_R12   24
#define WEFT__CTX_R13   32
#define WEFT__CTX_R14   40
#define WEFT__CTX_R15   48
#define WEFT__CTX_MXCSR 56
#define WEFT__CTX_X87CW 60

#ifndef __ASSEMBLER__
#include <stddef.h>
#include <stdint.h>

#include "fiber/context.h"

_Static_assert(offsetof(weft__context, sp) == WEFT__CTX_SP, "ctx: sp");
_Static_assert(offsetof(weft__context, regs[0]) == WEFT__CTX_RBX, "ctx: rbx");
_Static_assert(offsetof(weft__context, regs[1]) == WEFT__CTX_RBP, "ctx: rbp");
_Static_assert(offsetof(weft__context, regs[2]) == WEFT__CTX_R12, "ctx: r12");
_Static_assert(offsetof(weft__context, regs[3]) == WEFT__CTX_R13, "ctx: r13");
_Static_assert(offsetof(weft__context, regs[4]) == WEFT__CTX_R14, "ctx: r14");
_Static_assert(offsetof(weft__context, regs[5]) == WEFT__CTX_R15, "ctx: r15");
_Static_assert(offsetof(weft__context, mxcsr) == WEFT__CTX_MXCSR, "ctx: mxcsr");
_Static_assert(offsetof(weft__context, x87cw) == WEFT__CTX_X87CW, "ctx: x87cw");

/* switch_x86_64.S. from == NULL in the jump: the running context has
 * finished, nothing is saved. */
void *weft__context_switch_asm(weft__context *from, weft__context *to, void *transfer);
void *weft__context_jump_asm(weft__context *from, weft__context *to, void *transfer);
void weft__context_start_asm(void);

static inline void *weft__arch_switch(weft__context *from, weft__context *to, void *transfer)
{
	return weft__context_switch_asm(from, to, transfer);
}

static inline void *weft__arch_jump(weft__context *from, weft__context *to, void *transfer)
{
	return weft__context_jump_asm(from, to, transfer);
}

/* Prepares ctx to start at weft__context_start_asm with a and b in r12 and
 * r13, on the stack at the top of [base, base + size). A new context
 * starts with the creator's MXCSR and x87 control word (rounding mode,
 * exception masks), as a new thread does. */
static inline void weft__arch_make(weft__context *ctx, void *base, size_t size, void *a, void *b)
{
	uintptr_t top = ((uintptr_t)base + size) & ~(uintptr_t)15;
	/* the return address sits at top - 8: once the jump pops it, rsp ==
	 * top, aligned as at a function's entry plus its call */
	void **ret = (void **)(top - 8);
	*ret = (void *)(uintptr_t)weft__context_start_asm;
	uint16_t cw;
	__asm__ volatile("fnstcw %0" : "=m"(cw));
	ctx->sp = ret;
	ctx->regs[0] = 0;            /* rbx */
	ctx->regs[1] = 0;            /* rbp: ends frame-pointer walks */
	ctx->regs[2] = (uintptr_t)a; /* r12 */
	ctx->regs[3] = (uintptr_t)b; /* r13 */
	ctx->regs[4] = 0;
	ctx->regs[5] = 0;
	ctx->mxcsr = __builtin_ia32_stmxcsr() & ~0x3fu; /* drop the exception flags */
	ctx->x87cw = cw;
}
#endif /* !__ASSEMBLER__ */

#endif
