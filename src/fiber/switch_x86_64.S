/* Context switch for x86-64 System V (Linux, the BSDs): see
 * switch_x86_64.h for the frame and for what is and is not saved. Does not
 * save the signal mask, does not make system calls, does not touch fs/gs.
 *
 * void *weft__context_switch_asm(void **save_sp, void *new_sp, void *transfer)
 *
 *   Builds a switch frame below the return address on the current stack,
 *   stores the stack pointer in *save_sp, loads new_sp (a frame made by this
 *   function or by weft__switch_frame_init), restores from that frame and
 *   continues at the frame's return address. The resumed side sees
 *   `transfer` as the return value of its own call (or, for a new context,
 *   in rax on entry to the trampoline).
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
 * context (its frame returns into the trampoline) and out of a finished one
 * (whose call never returns). The jmp's target is predicted there (fiber
 * create+run+join: about 40 ns with it, 55 to 75 ns with ret). */
#include "fiber/switch_x86_64.h"

	.text

/* The body both switches share: saves the running context's frame (callee-
 * saved registers and the control words, below the return address the
 * caller pushed) and its stack pointer in *rdi, moves to the stack at rsi
 * and restores that frame, leaving rsp at its return address.
 *
 * The control words, measured on the 2-vCPU EPYC (Zen 4): stmxcsr is the
 * dearest instruction of the switch (4.2 ns each back to back, against
 * 0.55 for ldmxcsr, fnstcw or fldcw), and a load of what it has just
 * stored waits for it, about 1.2 ns more per switch. So MXCSR is saved and
 * reloaded unconditionally and never read back, as Boost.Context does. The
 * x87 control word reads back at once, and skipping its fldcw when the
 * resumed context's word equals the running one's saves 0.4 ns per switch;
 * fnstcw goes first so that its store is done when the comparison reads
 * it. The switch before this one compared both words and skipped both
 * loads when they were equal: 6.6 ns per raw switch against 5.2 now
 * (Boost.Context 5.5 in the same runs). Either way each context resumes
 * with the MXCSR (control and status bits) and the x87 control word it
 * was suspended with: a load skipped would have changed nothing. */
.macro SWITCH_FRAMES
	subq	$WEFT__FRAME_RET, %rsp
	.cfi_adjust_cfa_offset WEFT__FRAME_RET
	fnstcw	WEFT__FRAME_X87CW(%rsp)
	stmxcsr	WEFT__FRAME_MXCSR(%rsp)
	movq	%r15, WEFT__FRAME_R15(%rsp)
	movq	%r14, WEFT__FRAME_R14(%rsp)
	movq	%r13, WEFT__FRAME_R13(%rsp)
	movq	%r12, WEFT__FRAME_R12(%rsp)
	movq	%rbx, WEFT__FRAME_RBX(%rsp)
	movq	%rbp, WEFT__FRAME_RBP(%rsp)

	movq	%rsp, (%rdi)
	movq	%rsp, %rax		/* the frame just saved */
	movq	%rsi, %rsp

	ldmxcsr	WEFT__FRAME_MXCSR(%rsp)
	movzwl	WEFT__FRAME_X87CW(%rsp), %ecx
	cmpw	WEFT__FRAME_X87CW(%rax), %cx
	je	1f
	fldcw	WEFT__FRAME_X87CW(%rsp)
1:
	movq	WEFT__FRAME_R15(%rsp), %r15
	movq	WEFT__FRAME_R14(%rsp), %r14
	movq	WEFT__FRAME_R13(%rsp), %r13
	movq	WEFT__FRAME_R12(%rsp), %r12
	movq	WEFT__FRAME_RBX(%rsp), %rbx
	movq	WEFT__FRAME_RBP(%rsp), %rbp
	addq	$WEFT__FRAME_RET, %rsp
	.cfi_adjust_cfa_offset -WEFT__FRAME_RET
	movq	%rdx, %rax
.endm

	.globl	weft__context_switch_asm
	.hidden	weft__context_switch_asm
	.type	weft__context_switch_asm, @function
	.p2align 4
weft__context_switch_asm:
	.cfi_startproc
	SWITCH_FRAMES
	ret
	.cfi_endproc
	.size	weft__context_switch_asm, .-weft__context_switch_asm

	.globl	weft__context_jump_asm
	.hidden	weft__context_jump_asm
	.type	weft__context_jump_asm, @function
	.p2align 4
weft__context_jump_asm:
	.cfi_startproc
	SWITCH_FRAMES
	popq	%rcx
	.cfi_adjust_cfa_offset -8
	jmp	*%rcx
	.cfi_endproc
	.size	weft__context_jump_asm, .-weft__context_jump_asm

/* Where a new context begins: the frame's return address, reached by the
 * switch's jmp with the frame popped. rsp is 16-byte aligned here
 * (weft__switch_frame_init), rax holds the transfer value (the context that
 * switched here), r12 and r13 what weft__context_make put in the frame.
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
