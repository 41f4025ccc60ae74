/* The switch frame of the x86-64 System V backend (switch_x86_64.S): what
 * weft__context_switch_asm leaves at the saved stack pointer of a suspended
 * context, and what weft__context_make builds for one that has not started.
 * The offsets are used by the assembly and checked here against the C
 * struct, so the two cannot drift apart.
 *
 *   sp + 0   MXCSR (control and status bits)      4 bytes
 *   sp + 4   x87 control word                     2 bytes (+ 2 padding)
 *   sp + 8   r15, r14, r13, r12, rbx, rbp         6 x 8 bytes
 *   sp + 56  return address (where the switch resumes, by ret or jmp)
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

#define WEFT__FRAME_MXCSR 0
#define WEFT__FRAME_X87CW 4
#define WEFT__FRAME_R15   8
#define WEFT__FRAME_R14   16
#define WEFT__FRAME_R13   24
#define WEFT__FRAME_R12   32
#define WEFT__FRAME_RBX   40
#define WEFT__FRAME_RBP   48
#define WEFT__FRAME_RET   56
#define WEFT__FRAME_SIZE  64

#ifndef __ASSEMBLER__
#include <stddef.h>
#include <stdint.h>

typedef struct weft__switch_frame {
	uint32_t mxcsr;
	uint16_t x87cw;
	uint16_t pad;
	uint64_t r15, r14, r13, r12, rbx, rbp;
	uint64_t ret; /* the address the switch returns to */
} weft__switch_frame;

_Static_assert(offsetof(weft__switch_frame, mxcsr) == WEFT__FRAME_MXCSR, "frame: mxcsr");
_Static_assert(offsetof(weft__switch_frame, x87cw) == WEFT__FRAME_X87CW, "frame: x87cw");
_Static_assert(offsetof(weft__switch_frame, r15) == WEFT__FRAME_R15, "frame: r15");
_Static_assert(offsetof(weft__switch_frame, r14) == WEFT__FRAME_R14, "frame: r14");
_Static_assert(offsetof(weft__switch_frame, r13) == WEFT__FRAME_R13, "frame: r13");
_Static_assert(offsetof(weft__switch_frame, r12) == WEFT__FRAME_R12, "frame: r12");
_Static_assert(offsetof(weft__switch_frame, rbx) == WEFT__FRAME_RBX, "frame: rbx");
_Static_assert(offsetof(weft__switch_frame, rbp) == WEFT__FRAME_RBP, "frame: rbp");
_Static_assert(offsetof(weft__switch_frame, ret) == WEFT__FRAME_RET, "frame: ret");
_Static_assert(sizeof(weft__switch_frame) == WEFT__FRAME_SIZE, "frame: size");

/* The first switch into a new context continues in this trampoline (in
 * switch_x86_64.S), with the stack pointer 16-byte aligned: it calls
 * weft__context_start(prev, r12, r13), so that function starts with the
 * alignment the ABI gives any function (rsp + 8 a multiple of 16). */
void weft__context_start_asm(void);

/* weft__switch_frame_init builds the frame of a context that has not run
 * yet at the top of [base, base + size) and returns its stack pointer. The
 * new context starts with the creator's floating-point control state (as a
 * new thread does), without its exception flags. */
static inline void *weft__switch_frame_init(void *base, size_t size, void *a, void *b)
{
	uintptr_t top = ((uintptr_t)base + size) & ~(uintptr_t)15;
	/* ret sits at top - 8: once the switch pops it, rsp == top (aligned). */
	weft__switch_frame *f = (weft__switch_frame *)(top - WEFT__FRAME_SIZE);
	uint16_t cw;
	__asm__ volatile("fnstcw %0" : "=m"(cw));
	*f = (weft__switch_frame){
	        .mxcsr = __builtin_ia32_stmxcsr() & ~0x3fu, /* drop the exception flags */
	        .x87cw = cw,
	        .r12 = (uintptr_t)a,
	        .r13 = (uintptr_t)b,
	        .rbp = 0, /* ends frame-pointer walks */
	        .ret = (uintptr_t)weft__context_start_asm,
	};
	return f;
}
#endif /* !__ASSEMBLER__ */

#endif
