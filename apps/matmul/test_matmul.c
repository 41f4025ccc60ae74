/* Unit tests of weft-matmul's kernels (kernel.c): each micro-kernel the
 * processor runs, and the panel packing, against a naive product.
 *
 *   test_matmul_kernels <case>|all */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../common/unit_main.h"

#include "kernel.h"

static double val(size_t i, size_t j, int which)
{
	return (double)((i * 7 + j * 13 + (size_t)which * 5) % 17) - 8.0;
}

/* C (4 x 8 inside a 4 x 11 array, so the row stride is not 8) += A[4 x kc]
 * (row stride kc + 3) * B[kc x 8], both ways, exactly (small integers). */
static void check_kernel(int portable)
{
	const char *name;
	mm_kernel_fn *k = mm_kernel_pick(portable, &name);
	if (portable)
		assert_string_equal(name, "portable");
	for (size_t kc = 0; kc < 40; kc += 3) {
		size_t lda = kc + 3;
		double *a = calloc(4 * lda + 1, sizeof(double));
		double *b = calloc(kc * 8 + 1, sizeof(double));
		double c[4 * 11], want[4 * 11];
		assert_true(a && b);
		for (size_t r = 0; r < 4; r++)
			for (size_t x = 0; x < kc; x++)
				a[r * lda + x] = val(r, x, 0);
		for (size_t x = 0; x < kc; x++)
			for (size_t j = 0; j < 8; j++)
				b[8 * x + j] = val(x, j, 1);
		for (size_t i = 0; i < 4 * 11; i++)
			c[i] = want[i] = (double)i;
		for (size_t r = 0; r < 4; r++)
			for (size_t j = 0; j < 8; j++)
				for (size_t x = 0; x < kc; x++)
					want[r * 11 + j] += a[r * lda + x] * b[8 * x + j];
		k(a, lda, b, c, 11, kc);
		assert_memory_equal(c, want, sizeof(c));
		free(a);
		free(b);
	}
}

static void kernel_portable(void **state)
{
	(void)state;
	check_kernel(1);
}

static void kernel_best(void **state)
{
	(void)state;
	check_kernel(0);
}

static void pack(void **state)
{
	(void)state;
	size_t n = 5, ld = 24;
	double b[5 * 24], bp[5 * 8];
	for (size_t i = 0; i < n * ld; i++)
		b[i] = (double)i;
	mm_pack_panel(b, ld, n, 16, bp);
	for (size_t k = 0; k < n; k++)
		for (size_t c = 0; c < 8; c++)
			assert_true(bp[8 * k + c] == b[k * ld + 16 + c]);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest all[] = {
	        cmocka_unit_test(kernel_portable),
	        cmocka_unit_test(kernel_best),
	        cmocka_unit_test(pack),
	};
	return unit_main(argc, argv, "matmul_kernels", all, sizeof all / sizeof all[0]);
}
