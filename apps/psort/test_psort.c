/* Unit tests of weft-psort's kernels (kernels.c): the merge-path split and
 * a merge cut into pieces at split points equal to one whole merge, ties
 * included; and the part sort weft-psort calls (weft_parallel_sort of the
 * library, on this thread alone: rt NULL outside tasks) against qsort.
 *
 *   test_psort_kernels <case>|all */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../common/unit_main.h"

#include <weft/weft.h>

#include "kernels.h"

static uint64_t rng = 88172645463325252ull;

static uint32_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 16);
}

static int cmp_int(const void *x, const void *y)
{
	int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
	return (a > b) - (a < b);
}

static void check_radix(int32_t *v, size_t n)
{
	int32_t *want = malloc((n + 1) * sizeof(*want)), *tmp = malloc((n + 1) * sizeof(*tmp));
	assert_non_null(want);
	assert_non_null(tmp);
	memcpy(want, v, n * sizeof(*v));
	qsort(want, n, sizeof(*want), cmp_int);
	assert_int_equal(weft_parallel_sort(NULL, v, n, WEFT_TYPE_I32, NULL), 0);
	assert_memory_equal(v, want, n * sizeof(*v));
	free(want);
	free(tmp);
}

static void radix_random(void **state)
{
	(void)state;
	static const size_t sizes[] = {0, 1, 2, 3, 17, 256, 1000, 65535, 65536, 300000};
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		int32_t *v = malloc((sizes[s] + 1) * sizeof(*v));
		assert_non_null(v);
		for (size_t i = 0; i < sizes[s]; i++)
			v[i] = (int32_t)next();
		check_radix(v, sizes[s]);
		free(v);
	}
}

static void radix_edges(void **state)
{
	(void)state;
	/* Extremes, duplicates, and digits shared by every element (skipped
	 * passes: an odd number of moves must still leave the result in a). */
	int32_t v[] = {INT32_MAX, INT32_MIN, 0, -1, 1, 255, 256, -256, INT32_MIN, INT32_MAX, 0};
	check_radix(v, sizeof(v) / sizeof(v[0]));
	int32_t same[100];
	for (int i = 0; i < 100; i++)
		same[i] = 0x01020300 | (i % 7);
	check_radix(same, 100);
	/* MSD path: one top byte for all (one bucket), and a narrow range
	 * (skipped digits inside the buckets). */
	size_t big = 2 * (1u << 18) + 7; /* past the library's in-cache sort */
	int32_t *w = malloc(big * sizeof(*w));
	assert_non_null(w);
	for (size_t i = 0; i < big; i++)
		w[i] = 0x12000000 + (int32_t)(next() & 0xffffff);
	check_radix(w, big);
	for (size_t i = 0; i < big; i++)
		w[i] = (int32_t)(next() % 1000) - 500;
	check_radix(w, big);
	free(w);
	int32_t two[200];
	for (int i = 0; i < 200; i++)
		two[i] = (i % 2 ? 0x7f000000 : -0x7f000000) + (i % 3) * 0x10000;
	check_radix(two, 200);
}

static void merge_pieces(void **state)
{
	(void)state;
	for (int round = 0; round < 200; round++) {
		size_t m = next() % 300, n = next() % 300;
		int32_t *a = malloc((m + 1) * sizeof(*a)), *b = malloc((n + 1) * sizeof(*b));
		int32_t *whole = malloc((m + n + 1) * sizeof(*whole));
		int32_t *cut = malloc((m + n + 1) * sizeof(*cut));
		assert_true(a && b && whole && cut);
		int range = 1 + (int)(next() % 20); /* many ties */
		for (size_t i = 0; i < m; i++)
			a[i] = (int32_t)(next() % (unsigned)range);
		for (size_t i = 0; i < n; i++)
			b[i] = (int32_t)(next() % (unsigned)range);
		qsort(a, m, sizeof(*a), cmp_int);
		qsort(b, n, sizeof(*b), cmp_int);
		psort_merge(a, m, b, n, whole);
		for (size_t i = 1; i < m + n; i++)
			assert_true(whole[i - 1] <= whole[i]);
		size_t pieces = 1 + next() % 9, total = m + n;
		for (size_t p = 0; p < pieces; p++) {
			size_t d0 = total * p / pieces, d1 = total * (p + 1) / pieces;
			size_t i0 = psort_corank(a, m, b, n, d0), i1 = psort_corank(a, m, b, n, d1);
			assert_true(i0 <= i1 && i1 <= m && d0 - i0 <= d1 - i1 && d1 - i1 <= n);
			psort_merge(a + i0, i1 - i0, b + (d0 - i0), (d1 - i1) - (d0 - i0),
			            cut + d0);
		}
		assert_memory_equal(cut, whole, total * sizeof(*cut));
		free(a);
		free(b);
		free(whole);
		free(cut);
	}
}

static void corank_ties(void **state)
{
	(void)state;
	/* Stable: on ties every element of a comes before those of b. */
	int32_t a[] = {1, 2, 2, 2, 5}, b[] = {2, 2, 3};
	assert_int_equal(psort_corank(a, 5, b, 3, 0), 0);
	assert_int_equal(psort_corank(a, 5, b, 3, 1), 1);
	assert_int_equal(psort_corank(a, 5, b, 3, 4), 4);
	assert_int_equal(psort_corank(a, 5, b, 3, 5), 4);
	assert_int_equal(psort_corank(a, 5, b, 3, 7), 4);
	assert_int_equal(psort_corank(a, 5, b, 3, 8), 5);
	assert_int_equal(psort_corank(a, 0, b, 3, 2), 0);
	assert_int_equal(psort_corank(a, 5, b, 0, 3), 3);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest all[] = {
	        cmocka_unit_test(radix_random),
	        cmocka_unit_test(radix_edges),
	        cmocka_unit_test(merge_pieces),
	        cmocka_unit_test(corank_ties),
	};
	return unit_main(argc, argv, "psort_kernels", all, sizeof all / sizeof all[0]);
}
