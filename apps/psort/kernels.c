/* Sequential kernels of weft-psort: see kernels.h. */
#include "kernels.h"

#include <string.h>

size_t psort_corank(const int32_t *a, size_t m, const int32_t *b, size_t n, size_t d)
{
	/* The smallest i with a valid split (i from a, j = d - i from b): i is
	 * too small while a[i] <= b[j-1] (a's element must come first). */
	size_t lo = d > n ? d - n : 0, hi = d < m ? d : m;
	while (lo < hi) {
		size_t i = lo + (hi - lo) / 2, j = d - i;
		if (j > 0 && i < m && a[i] <= b[j - 1])
			lo = i + 1;
		else
			hi = i;
	}
	return lo;
}

void psort_merge(const int32_t *a, size_t m, const int32_t *b, size_t n, int32_t *out)
{
	size_t i = 0, j = 0, k = 0;
	if (m && n) {
		/* Branch-free: both loads, one conditional move, two adds. */
		while (i < m && j < n) {
			int32_t x = a[i], y = b[j];
			int take_b = y < x;
			out[k++] = take_b ? y : x;
			i += (size_t)!take_b;
			j += (size_t)take_b;
		}
	}
	if (i < m)
		memcpy(out + k, a + i, (m - i) * sizeof(*out));
	else if (j < n)
		memcpy(out + k, b + j, (n - j) * sizeof(*out));
}
