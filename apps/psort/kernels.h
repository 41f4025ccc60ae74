/* The sequential pieces weft-psort runs as tasks: the merge-path split of
 * two sorted runs and a branch-free merge. (The radix sort of a part that
 * lived here is the library's weft_parallel_sort now, weft/algo.h.)
 * Kept apart from the program so the unit tests (test_psort.c) call them
 * directly. */
#ifndef WEFT_APPS_PSORT_KERNELS_H
#define WEFT_APPS_PSORT_KERNELS_H

#include <stddef.h>
#include <stdint.h>

/* psort_corank returns how many of the first d elements of the stable merge
 * of sorted a[0 .. m-1] and b[0 .. n-1] come from a (ties: a first); the
 * other d minus that come from b. 0 <= d <= m + n. */
size_t psort_corank(const int32_t *a, size_t m, const int32_t *b, size_t n, size_t d);

/* psort_merge writes the stable merge of sorted a[0 .. m-1] and b[0 .. n-1]
 * to out[0 .. m+n-1] (out must not overlap the inputs). */
void psort_merge(const int32_t *a, size_t m, const int32_t *b, size_t n, int32_t *out);

/* psort_hash is the per-element hash whose sum (mod 2^64) over an array is
 * its multiset checksum: equal before and after a correct sort. */
static inline uint64_t psort_hash(int32_t v)
{
	uint64_t z = (uint64_t)(uint32_t)v + 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

#endif
