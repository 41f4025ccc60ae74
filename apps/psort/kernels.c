/* Sequential kernels of weft-psort: see kernels.h. */
#include "kernels.h"

#include <string.h>

/* LSD radix sort of a[0..n) over the low `digits` bytes (all higher bytes
 * equal), tmp as scratch; leaves the result in a. Digits every element
 * shares are skipped. */
static void lsd(uint32_t *a, uint32_t *tmp, size_t n, int digits)
{
	size_t count[4][256];
	memset(count, 0, sizeof(count[0]) * (size_t)digits);
	for (size_t i = 0; i < n; i++) {
		uint32_t k = a[i];
		for (int d = 0; d < digits; d++)
			count[d][(k >> (8 * d)) & 0xff]++;
	}
	uint32_t *src = a, *dst = tmp;
	for (int d = 0; d < digits; d++) {
		size_t *c = count[d];
		int shift = 8 * d;
		/* Skip a digit every element shares: the pass would not move anything. */
		if (n == 0 || c[(src[0] >> shift) & 0xff] == n)
			continue;
		size_t sum = 0;
		for (int b = 0; b < 256; b++) {
			size_t t = c[b];
			c[b] = sum;
			sum += t;
		}
		for (size_t i = 0; i < n; i++) {
			uint32_t v = src[i];
			dst[c[(v >> shift) & 0xff]++] = v;
		}
		uint32_t *t = src;
		src = dst;
		dst = t;
	}
	if (src != a)
		memcpy(a, src, n * sizeof(*a));
}

void psort_radix(int32_t *a, int32_t *tmp, size_t n)
{
	/* Keys are the ints with the sign bit flipped, so that unsigned order
	 * is signed order; flipped back at the end. */
	uint32_t *u = (uint32_t *)a, *t = (uint32_t *)tmp;
	if (n < PSORT_MSD_MIN) {
		for (size_t i = 0; i < n; i++)
			u[i] ^= 0x80000000u;
		lsd(u, t, n, 4);
		for (size_t i = 0; i < n; i++)
			u[i] ^= 0x80000000u;
		return;
	}
	/* One MSD pass on the top byte into tmp (flipping the sign bit on the
	 * way), then an LSD sort of each bucket (about n/256 keys: in cache),
	 * copied back into a unflipped. Main memory sees about three passes
	 * instead of the nine of a plain LSD sort. */
	size_t count[256] = {0}, start[257], pos[256];
	for (size_t i = 0; i < n; i++)
		count[(u[i] >> 24) ^ 0x80u]++;
	start[0] = 0;
	for (int b = 0; b < 256; b++)
		start[b + 1] = start[b] + count[b];
	memcpy(pos, start, sizeof(pos));
	for (size_t i = 0; i < n; i++) {
		uint32_t v = u[i] ^ 0x80000000u;
		t[pos[v >> 24]++] = v;
	}
	for (int b = 0; b < 256; b++) {
		size_t lo = start[b], len = start[b + 1] - lo;
		lsd(t + lo, u + lo, len, 3);
		for (size_t i = lo; i < lo + len; i++)
			u[i] = t[i] ^ 0x80000000u;
	}
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
