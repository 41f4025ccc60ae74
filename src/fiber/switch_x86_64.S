/* Context switch for x86-64 System V (Linux, the BSDs): see
 * switch_x86_64.h for the save area and for what is and is not saved. Does
 * not save the signal mask, does not make system calls, does not touch
 * fs/gs.
 *
 * void *weft__context_switch_asm(weft__context *from, weft__context *to,
 *                                void *transfer)
 *
 *   Saves the running context's registers and its stack pointer (at the
 *   return address its caller pushed) in from, loads to's and continues
 *   at the return address on to's stack. The resumed side sees `transfer`
 *   as the return value of its own call (or, for a new context, in rax on
 *   entry to the trampoline).
 *
 * It leaves with ret, which the return stack buffer predicts with the
 * address our own call pushed: right whenever the resumed context was
 * suspended from the same call site, which is the common case (fibers
 * yield and park through the same few functions), and it keeps the buffer
 * balanced, so every return further up the resumed chain is predicted too.
 * An indirect jmp (Boost.Context's choice) leaves the call's entry in the
 * buffer: the switch itself is predicted, but then every return after it
 * mispredicts. Measured on the 2-vCPU EPYC (bench/fiber_switch, medians):
 * jmp 11 ns per raw switch and 62 ns per weft_yield between two tasks; ret
 * 33 ns per weft_yield, and a raw switch between contexts suspended at the
 * same call site (the yield row) is cheaper still, while one between two
 * different call sites pays one misprediction (about 21 ns).
 *
 * weft__context_jump_asm is the same switch leaving with an indirect jmp,
 * for the switches where no return prediction can be right: into a new
 * context (its return address is the trampoline) and out of a finished one
 * (from NULL: nothing saved; its call never returns). The jmp's target is
 * predicted there (fiber create+run+join: about 40 ns with it, 55 to 75 ns
 * with ret).
 *
 * Where the registers go: into from, not onto the stack. A fiber parked
 * among thousands of others (a server's connections) resumes on stack
 * lines that went cold while the others ran, and each costs a miss to
 * the last level or beyond; the context's line is read to resume anyway
 * (the scheduler checks its flags). Cachegrind, echo server, 1,000
 * connections on one worker, last level set to 1 MiB (what a core has
 * of L2), per echo: the frame on the stack was two such misses, the save
 * area in the context none of its own. */
#include "fiber/switch_x86_64.h"

	.text

/* The body both switches share. The control words, measured on the 2-vCPU
 * EPYC (Zen 4): stmxcsr is the dearest instruction of the switch (4.2 ns
 * each back to back, against 0.55 for ldmxcsr, fnstcw or fldcw), and a
 * load of what it has just stored waits for it, about 1.2 ns more per
 * switch. So MXCSR is saved and reloaded unconditionally and never read
 * back, as Boost.Context does. The x87 control word reads back at once,
 * and skipping its fldcw when the resumed context's word equals the
 * running one's saves 0.4 ns per switch; fnstcw goes first so that its
 * store is done when the comparison reads it. Either way each context
 * resumes with the MXCSR (control and status bits) and the x87 control
 * word it was suspended with: a load skipped would have changed nothing. */
.macro SAVE_REGS
	fnstcw	WEFT__CTX_X87CW(%rdi)
	stmxcsr	WEFT__CTX_MXCSR(%rdi)
	movq	%rbx, WEFT__CTX_RBX(%rdi)
	movq	%rbp, WEFT__CTX_RBP(%rdi)
	movq	%r12, WEFT__CTX_R12(%rdi)
	movq	%r13, WEFT__CTX_R13(%rdi)
	movq	%r14, WEFT__CTX_R14(%rdi)
	movq	%r15, WEFT__CTX_R15(%rdi)
	movq	%rsp, WEFT__CTX_SP(%rdi)
.endm

/* Loads to (rsi); rcx holds the running x87 control word. */
.macro LOAD_REGS
	ldmxcsr	WEFT__CTX_MXCSR(%rsi)
	cmpw	WEFT__CTX_X87CW(%rsi), %cx
	je	1f
	fldcw	WEFT__CTX_X87CW(%rsi)
1:
	movq	WEFT__CTX_RBX(%rsi), %rbx
	movq	WEFT__CTX_RBP(%rsi), %rbp
	movq	WEFT__CTX_R12(%rsi), %r12
	movq	WEFT__CTX_R13(%rsi), %r13
	movq	WEFT__CTX_R14(%rsi), %r14
	movq	WEFT__CTX_R15(%rsi), %r15
	movq	WEFT__CTX_SP(%rsi), %rsp
	movq	%rdx, %rax
.endm

	.globl	weft__context_switch_asm
	.hidden	weft__context_switch_asm
	.type	weft__context_switch_asm, @function
	.p2align 4
weft__context_switch_asm:
	.cfi_startproc
	SAVE_REGS
	movzwl	WEFT__CTX_X87CW(%rdi), %ecx
	LOAD_REGS
	ret
	.cfi_endproc
	.size	weft__context_switch_asm, .-weft__context_switch_asm

	.globl	weft__context_jump_asm
	.hidden	weft__context_jump_asm
	.type	weft__context_jump_asm, @function
	.p2align 4
weft__context_jump_asm:
	.cfi_startproc
	testq	%rdi, %rdi
	jz	2f
	SAVE_REGS
	movzwl	WEFT__CTX_X87CW(%rdi), %ecx
	jmp	3f
2:	/* finished: nothing to save; the running word, for the comparison */
	subq	$8, %rsp
	.cfi_adjust_cfa_offset 8
	fnstcw	(%rsp)
	movzwl	(%rsp), %ecx
	addq	$8, %rsp
	.cfi_adjust_cfa_offset -8
3:
	LOAD_REGS
	popq	%rcx
	jmp	*%rcx
	.cfi_endproc
	.size	weft__context_jump_asm, .-weft__context_jump_asm

/* Where a new context begins: the return address weft__arch_make left at
 * the top of its stack, reached by the jump's jmp with it popped. rsp is
 * 16-byte aligned here, rax holds the transfer value (the context that
 * switched here), r12 and r13 what weft__arch_make put in the context.
 * weft__context_start never returns. */
	.globl	weft__context_start_asm
	.hidden	weft__context_start_asm
	.hidden	weft__context_start
	.type	weft__context_start_asm, @function
	.p2align 4
weft__context_start_asm:
	.cfi_startproc
	.cfi_undefined rip		/* the outermost frame: unwinders stop here */
	movq	%rax, %rdi
	movq	%r12, %rsi
	movq	%r13, %rdx
	call	weft__context_start
	ud2
	.cfi_endproc
	.size	weft__context_start_asm, .-weft__context_start_asm

	.section .note.GNU-stack, "", @progbits
