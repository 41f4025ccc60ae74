/* weft-matmul's kernels: see kernel.h. The AVX2 kernel is compiled with a
 * target attribute, so the rest of the program needs no -mavx2 and runs on
 * any x86-64; mm_kernel_pick asks the processor before choosing it. */
#include "kernel.h"

#include <string.h>

static void kernel_portable(const double *a, size_t lda, const double *bp, double *c, size_t ldc,
                            size_t kc)
{
	double acc[MM_MR][MM_NR] = {{0}};
	for (size_t k = 0; k < kc; k++) {
		const double *b = bp + MM_NR * k;
		for (int r = 0; r < MM_MR; r++) {
			double av = a[r * lda + k];
			for (int j = 0; j < MM_NR; j++)
				acc[r][j] += av * b[j];
		}
	}
	for (int r = 0; r < MM_MR; r++)
		for (int j = 0; j < MM_NR; j++)
			c[r * ldc + j] += acc[r][j];
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define MM_HAVE_AVX2 1
typedef double v4d __attribute__((vector_size(32)));

__attribute__((target("avx2,fma"))) static void
kernel_avx2(const double *a, size_t lda, const double *bp, double *c, size_t ldc, size_t kc)
{
	v4d c00 = {0}, c01 = {0}, c10 = {0}, c11 = {0}, c20 = {0}, c21 = {0}, c30 = {0}, c31 = {0};
	const double *a0 = a, *a1 = a + lda, *a2 = a + 2 * lda, *a3 = a + 3 * lda;
	for (size_t k = 0; k < kc; k++) {
		v4d b0, b1;
		memcpy(&b0, bp + MM_NR * k, sizeof(b0));
		memcpy(&b1, bp + MM_NR * k + 4, sizeof(b1));
		v4d x = {a0[k], a0[k], a0[k], a0[k]};
		c00 += x * b0;
		c01 += x * b1;
		x = (v4d){a1[k], a1[k], a1[k], a1[k]};
		c10 += x * b0;
		c11 += x * b1;
		x = (v4d){a2[k], a2[k], a2[k], a2[k]};
		c20 += x * b0;
		c21 += x * b1;
		x = (v4d){a3[k], a3[k], a3[k], a3[k]};
		c30 += x * b0;
		c31 += x * b1;
	}
	v4d acc[8] = {c00, c01, c10, c11, c20, c21, c30, c31};
	for (int r = 0; r < MM_MR; r++) {
		for (int h = 0; h < 2; h++) {
			v4d cv;
			memcpy(&cv, c + r * ldc + 4 * h, sizeof(cv));
			cv += acc[2 * r + h];
			memcpy(c + r * ldc + 4 * h, &cv, sizeof(cv));
		}
	}
}
#endif

mm_kernel_fn *mm_kernel_pick(int portable, const char **name)
{
#ifdef MM_HAVE_AVX2
	if (!portable) {
		__builtin_cpu_init();
		if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
			*name = "avx2-fma";
			return kernel_avx2;
		}
	}
#endif
	(void)portable;
	*name = "portable";
	return kernel_portable;
}

void mm_pack_panel(const double *b, size_t ld, size_t n, size_t j0, double *bp)
{
	for (size_t k = 0; k < n; k++)
		memcpy(bp + MM_NR * k, b + k * ld + j0, MM_NR * sizeof(double));
}
