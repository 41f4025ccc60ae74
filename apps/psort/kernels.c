/* Sequential kernels of weft-psort: see kernels.h. */
#include "kernels.h"

#include <string.h>

void psort_radix(int32_t *a, int32_t *tmp, size_t n)
{
	/* One pass builds all four histograms; the sign bit is flipped so
	 * that unsigned digit order is signed order. */
	size_t count[4][256];
	memset(count, 0, sizeof(count));
	const uint32_t *u = (const uint32_t *)a;
	for (size_t i = 0; i < n; i++) {
		uint32_t k = u[i] ^ 0x80000000u;
		count[0][k & 0xff]++;
		count[1][(k >> 8) & 0xff]++;
		count[2][(k >> 16) & 0xff]++;
		count[3][k >> 24]++;
	}
	uint32_t *src = (uint32_t *)a, *dst = (uint32_t *)tmp;
	for (int d = 0; d < 4; d++) {
		size_t *c = count[d];
		int shift = 8 * d;
		/* Skip a digit every element shares: the pass would not move anything. */
		if (n == 0 || c[((src[0] ^ 0x80000000u) >> shift) & 0xff] == n)
			continue;
		size_t sum = 0;
		for (int b = 0; b < 256; b++) {
			size_t t = c[b];
			c[b] = sum;
			sum += t;
		}
		for (size_t i = 0; i < n; i++) {
			uint32_t v = src[i];
			dst[c[((v ^ 0x80000000u) >> shift) & 0xff]++] = v;
		}
		uint32_t *t = src;
		src = dst;
		dst = t;
	}
	if (src != (uint32_t *)a)
		memcpy(a, src, n * sizeof(*a));
}

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
