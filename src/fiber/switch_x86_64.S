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
 * It leaves with an indirect jmp, not ret: a ret here always mispredicts
 * (the return stack buffer holds the address our own call pushed, not the
 * other context's), while the jmp's target is predicted like any indirect
 * branch. Measured on the 2-vCPU EPYC: 18.5 ns per switch with ret, 10 ns
 * with jmp (bench/fiber_switch). Boost.Context's jump_fcontext does the
 * same. */
#include "fiber/switch_x86_64.h"

	.text

	.globl	weft__context_switch_asm
	.hidden	weft__context_switch_asm
	.type	weft__context_switch_asm, @function
	.p2align 4
weft__context_switch_asm:
	.cfi_startproc
	subq	$WEFT__FRAME_RET, %rsp
	.cfi_adjust_cfa_offset WEFT__FRAME_RET
	stmxcsr	WEFT__FRAME_MXCSR(%rsp)
	fnstcw	WEFT__FRAME_X87CW(%rsp)
	movq	%r15, WEFT__FRAME_R15(%rsp)
	movq	%r14, WEFT__FRAME_R14(%rsp)
	movq	%r13, WEFT__FRAME_R13(%rsp)
	movq	%r12, WEFT__FRAME_R12(%rsp)
	movq	%rbx, WEFT__FRAME_RBX(%rsp)
	movq	%rbp, WEFT__FRAME_RBP(%rsp)

	movq	%rsp, (%rdi)
	movq	%rsi, %rsp

	ldmxcsr	WEFT__FRAME_MXCSR(%rsp)
	fldcw	WEFT__FRAME_X87CW(%rsp)
	movq	WEFT__FRAME_R15(%rsp), %r15
	movq	WEFT__FRAME_R14(%rsp), %r14
	movq	WEFT__FRAME_R13(%rsp), %r13
	movq	WEFT__FRAME_R12(%rsp), %r12
	movq	WEFT__FRAME_RBX(%rsp), %rbx
	movq	WEFT__FRAME_RBP(%rsp), %rbp
	movq	WEFT__FRAME_RET(%rsp), %rcx
	addq	$WEFT__FRAME_SIZE, %rsp
	.cfi_adjust_cfa_offset -WEFT__FRAME_SIZE
	movq	%rdx, %rax
	jmp	*%rcx
	.cfi_endproc
	.size	weft__context_switch_asm, .-weft__context_switch_asm

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
