/* The compute kernels of weft-matmul: B packed into column panels, and a
 * register-blocked micro-kernel C[4x8] += A[4xk] * Bpanel[kx8], in a
 * portable C version and an AVX2/FMA version chosen at run time. Kept apart
 * from the program so the unit tests (test_matmul.c) check each kernel
 * against a naive product. */
#ifndef WEFT_APPS_MATMUL_KERNEL_H
#define WEFT_APPS_MATMUL_KERNEL_H

#include <stddef.h>

#define MM_MR 4 /* rows of C per micro-kernel call */
#define MM_NR 8 /* columns of C per micro-kernel call = width of a B panel */

/* C[0..3][0..7] (row stride ldc) += sum over k < kc of A[r][k] (row stride
 * lda) * bp[8 * k + c]. */
typedef void mm_kernel_fn(const double *a, size_t lda, const double *bp, double *c, size_t ldc,
                          size_t kc);

/* mm_kernel_pick returns the fastest kernel this processor runs and its
 * name ("avx2-fma" or "portable"); portable != 0 forces the portable one. */
mm_kernel_fn *mm_kernel_pick(int portable, const char **name);

/* mm_pack_panel packs columns j0 .. j0+7 of the n x ld row-major matrix b
 * (rows 0 .. n-1) into bp[8 * k + c] = b[k][j0 + c]. */
void mm_pack_panel(const double *b, size_t ld, size_t n, size_t j0, double *bp);

#endif
