/* The switch frame of the aarch64 (AAPCS64) backend (switch_aarch64.S):
 * what weft__context_switch_asm leaves at the saved stack pointer of a
 * suspended context, and what weft__context_make builds for one that has
 * not started. The offsets are used by the assembly and checked here
 * against the C struct.
 *
 *   sp + 0    x19 ... x28                          10 x 8 bytes
 *   sp + 80   x29 (frame pointer), x30 (lr: where the switch resumes)
 *   sp + 96   d8 ... d15                            8 x 8 bytes
 *   sp + 160  FPCR                                  8 bytes (+ 8 padding)
 *
 * Saved: the callee-saved registers of AAPCS64 (x19-x29, the low 64 bits
 * of v8-v15), the link register, the stack pointer and FPCR. Not saved:
 * caller-saved registers, FPSR (exception flags), the signal mask,
 * tpidr_el0 (thread-local storage stays the kernel thread's). No pointer
 * authentication or BTI on the switch path: lr is restored as saved. */
#ifndef WEFT_SRC_FIBER_SWITCH_AARCH64_H
#define WEFT_SRC_FIBER_SWITCH_AARCH64_H

#define WEFT__FRAME_X19  0
#define WEFT__FRAME_X21  16
#define WEFT__FRAME_X23  32
#define WEFT__FRAME_X25  48
#define WEFT__FRAME_X27  64
#define WEFT__FRAME_X29  80
#define WEFT__FRAME_D8   96
#define WEFT__FRAME_D10  112
#define WEFT__FRAME_D12  128
#define WEFT__FRAME_D14  144
#define WEFT__FRAME_FPCR 160
#define WEFT__FRAME_SIZE 176 /* sp stays 16-byte aligned */

#ifndef __ASSEMBLER__
#include <stddef.h>
#include <stdint.h>

#include "fiber/context.h"

typedef struct weft__switch_frame {
	uint64_t x[10]; /* x19 ... x28 */
	uint64_t x29, x30;
	uint64_t d[8]; /* d8 ... d15 */
	uint64_t fpcr;
	uint64_t pad;
} weft__switch_frame;

_Static_assert(offsetof(weft__switch_frame, x[0]) == WEFT__FRAME_X19, "frame: x19");
_Static_assert(offsetof(weft__switch_frame, x[2]) == WEFT__FRAME_X21, "frame: x21");
_Static_assert(offsetof(weft__switch_frame, x[4]) == WEFT__FRAME_X23, "frame: x23");
_Static_assert(offsetof(weft__switch_frame, x[6]) == WEFT__FRAME_X25, "frame: x25");
_Static_assert(offsetof(weft__switch_frame, x[8]) == WEFT__FRAME_X27, "frame: x27");
_Static_assert(offsetof(weft__switch_frame, x29) == WEFT__FRAME_X29, "frame: x29");
_Static_assert(offsetof(weft__switch_frame, d[0]) == WEFT__FRAME_D8, "frame: d8");
_Static_assert(offsetof(weft__switch_frame, d[2]) == WEFT__FRAME_D10, "frame: d10");
_Static_assert(offsetof(weft__switch_frame, d[4]) == WEFT__FRAME_D12, "frame: d12");
_Static_assert(offsetof(weft__switch_frame, d[6]) == WEFT__FRAME_D14, "frame: d14");
_Static_assert(offsetof(weft__switch_frame, fpcr) == WEFT__FRAME_FPCR, "frame: fpcr");
_Static_assert(sizeof(weft__switch_frame) == WEFT__FRAME_SIZE, "frame: size");

/* The first switch into a new context returns (through lr) into this trampoline
 * (in switch_aarch64.S), which calls weft__context_start(prev, x19, x20)
 * with sp 16-byte aligned, as it always is on aarch64. */
void weft__context_start_asm(void);

/* weft__switch_frame_init builds the frame of a context that has not run
 * yet at the top of [base, base + size) and returns its stack pointer. The
 * new context starts with the creator's FPCR (rounding mode, flush to zero),
 * as a new thread does. */
static inline void *weft__switch_frame_init(void *base, size_t size, void *a, void *b)
{
	uintptr_t top = ((uintptr_t)base + size) & ~(uintptr_t)15;
	weft__switch_frame *f = (weft__switch_frame *)(top - WEFT__FRAME_SIZE);
	uint64_t fpcr;
	__asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
	*f = (weft__switch_frame){
	        .x = {[0] = (uintptr_t)a, [1] = (uintptr_t)b},
	        .x29 = 0, /* ends frame-pointer walks */
	        .x30 = (uintptr_t)weft__context_start_asm,
	        .fpcr = fpcr,
	};
	return f;
}

/* switch_aarch64.S: saves a frame on the running stack and its stack
 * pointer in *save_sp, then resumes the frame at new_sp. */
void *weft__context_switch_asm(void **save_sp, void *new_sp, void *transfer);
void *weft__context_jump_asm(void **save_sp, void *new_sp, void *transfer);

static inline void *weft__arch_switch(weft__context *from, weft__context *to, void *transfer)
{
	return weft__context_switch_asm(&from->sp, to->sp, transfer);
}

/* from NULL: the running context has finished; its stack pointer is
 * stored where nothing reads it (to's, which the switch has read). */
static inline void *weft__arch_jump(weft__context *from, weft__context *to, void *transfer)
{
	return weft__context_jump_asm(from ? &from->sp : &to->sp, to->sp, transfer);
}

static inline void weft__arch_make(weft__context *ctx, void *base, size_t size, void *a, void *b)
{
	ctx->sp = weft__switch_frame_init(base, size, a, b);
}
#endif /* !__ASSEMBLER__ */

#endif
