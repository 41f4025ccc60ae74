/* Context switch for aarch64 (AAPCS64, Linux): see switch_aarch64.h for
 * the frame and for what is and is not saved. Does not save the signal
 * mask, does not make system calls, does not touch tpidr_el0.
 *
 * void *weft__context_switch_asm(void **save_sp, void *new_sp, void *transfer)
 *
 *   Builds a switch frame on the current stack, stores sp in *save_sp, loads
 *   new_sp (a frame made by this function or by weft__switch_frame_init),
 *   restores from that frame and returns through its x30. The resumed side
 *   sees `transfer` as the return value of its own call (or, for a new
 *   context, in x0 on entry to the trampoline). */
#include "fiber/switch_aarch64.h"

	.text

	.globl	weft__context_switch_asm
	.hidden	weft__context_switch_asm
	.type	weft__context_switch_asm, %function
	.p2align 4
weft__context_switch_asm:
	.cfi_startproc
	sub	sp, sp, #WEFT__FRAME_SIZE
	.cfi_adjust_cfa_offset WEFT__FRAME_SIZE
	stp	x19, x20, [sp, #WEFT__FRAME_X19]
	stp	x21, x22, [sp, #WEFT__FRAME_X21]
	stp	x23, x24, [sp, #WEFT__FRAME_X23]
	stp	x25, x26, [sp, #WEFT__FRAME_X25]
	stp	x27, x28, [sp, #WEFT__FRAME_X27]
	stp	x29, x30, [sp, #WEFT__FRAME_X29]
	stp	d8, d9, [sp, #WEFT__FRAME_D8]
	stp	d10, d11, [sp, #WEFT__FRAME_D10]
	stp	d12, d13, [sp, #WEFT__FRAME_D12]
	stp	d14, d15, [sp, #WEFT__FRAME_D14]
	mrs	x9, fpcr
	str	x9, [sp, #WEFT__FRAME_FPCR]

	mov	x9, sp
	str	x9, [x0]
	mov	sp, x1

	ldr	x9, [sp, #WEFT__FRAME_FPCR]
	msr	fpcr, x9
	ldp	x19, x20, [sp, #WEFT__FRAME_X19]
	ldp	x21, x22, [sp, #WEFT__FRAME_X21]
	ldp	x23, x24, [sp, #WEFT__FRAME_X23]
	ldp	x25, x26, [sp, #WEFT__FRAME_X25]
	ldp	x27, x28, [sp, #WEFT__FRAME_X27]
	ldp	x29, x30, [sp, #WEFT__FRAME_X29]
	ldp	d8, d9, [sp, #WEFT__FRAME_D8]
	ldp	d10, d11, [sp, #WEFT__FRAME_D10]
	ldp	d12, d13, [sp, #WEFT__FRAME_D12]
	ldp	d14, d15, [sp, #WEFT__FRAME_D14]
	add	sp, sp, #WEFT__FRAME_SIZE
	.cfi_adjust_cfa_offset -WEFT__FRAME_SIZE
	mov	x0, x2
	ret
	.cfi_endproc
	.size	weft__context_switch_asm, .-weft__context_switch_asm

/* context.c calls this for switches into a new or out of a finished
 * context; x86-64 leaves those by an indirect jmp for the branch
 * predictor's sake. Not measured here on aarch64: the same switch. */
	.globl	weft__context_jump_asm
	.hidden	weft__context_jump_asm
	.set	weft__context_jump_asm, weft__context_switch_asm

/* Where a new context begins: the frame's x30. sp is 16-byte aligned, x0
 * holds the transfer value (the context that switched here), x19 and x20
 * what weft__context_make put in the frame, x29 is 0.
 * weft__context_start never returns. */
	.globl	weft__context_start_asm
	.hidden	weft__context_start_asm
	.hidden	weft__context_start
	.type	weft__context_start_asm, %function
	.p2align 4
weft__context_start_asm:
	.cfi_startproc
	.cfi_undefined x30		/* the outermost frame: unwinders stop here */
	mov	x1, x19
	mov	x2, x20
	bl	weft__context_start
	brk	#0x1
	.cfi_endproc
	.size	weft__context_start_asm, .-weft__context_start_asm

	.section .note.GNU-stack, "", %progbits
