/* weft_parallel_sort and weft_parallel_sort_records (weft/algo.h): a
 * parallel radix sort, on top of weft_parallel_for only, so it runs on
 * every model without a hook of its own.
 *
 * Shape (the kernels of apps/psort, made parallel at the top and general
 * over key types): keys are read as unsigned integers of their width, made
 * order-preserving on the fly (signed: flip the sign bit; IEEE floats:
 * flip every bit of a negative, the sign bit of a positive, which gives
 * totalOrder), and split into 8-bit digits, the top one first.
 *
 *   - A region longer than LSD_MAX elements gets one MSD pass on its top
 *     unsorted digit: the region is cut into blocks, each block counts its
 *     digits (in parallel), the counts are turned into a write position
 *     per (block, bucket) on the calling thread, and each block scatters
 *     its elements to the other buffer (in parallel). Block order is kept
 *     within a bucket, so the pass is stable. A digit every element of
 *     the region shares is skipped without moving anything.
 *   - The 256 buckets are then sorted independently (weft_parallel_for
 *     over the buckets, grain 1), each by the digits below, recursively.
 *   - A region of at most LSD_MAX elements (about 2 MB of 8-byte keys: in
 *     L2 on most machines) is sorted on one thread by an LSD radix sort
 *     of its remaining digits: one pass counts every digit, then one
 *     stable scatter per digit, skipping digits all its keys share.
 *
 * For 50M random 32-bit ints that is one parallel counting pass and one
 * parallel scatter over main memory, then 256 buckets of 200K ints sorted
 * in cache: about three passes over memory, against the nine of a plain
 * LSD sort. Each region's result lands in the caller's array (a copy back
 * when the passes ended in the scratch buffer), so a region never has to
 * wait for another.
 *
 * The sort is stable and its output therefore depends only on the input:
 * how it was cut (the block count follows the worker count) changes no
 * byte. Memory: the caller's scratch or one allocation of n elements plus
 * the count table, TABLE_ROW entries per BLOCK_MIN elements: a region of
 * [lo, hi) uses rows lo / BLOCK_MIN .. hi / BLOCK_MIN - 1, so regions that
 * do not overlap never share a row, and a bucket (inside its parent's
 * region) reuses its parent's rows only after the parent's scatter has
 * read them. Stack: a frame with an MSD pass keeps its 257 bucket bounds
 * (2 KiB), an LSD sort its counts (1 KiB per digit).
 *
 * Alternatives rejected: sorting parts and merging them (apps/psort's
 * shape before this file): the merge rounds read and write the whole
 * array log2(parts) more times; an LSD sort of the whole array in parallel
 * (a histogram and scatter per digit across the workers): a pass over
 * main memory per digit, 4 or 8 of them. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/internal.h"

#define LSD_MAX           (1u << 18) /* elements a region may have for the in-cache LSD sort */
#define BLOCK_MIN         (1u << 16) /* elements per block of an MSD pass, at least */
#define TABLE_ROW         256        /* count entries per block (one per bucket) */
#define BLOCKS_PER_WORKER 4          /* MSD blocks per worker: enough to even out the load */
#define MAX_BLOCKS        64

enum { K_UNSIGNED, K_SIGNED, K_FLOAT };

/* One sort: read-only while it runs. */
typedef struct sorter {
	weft_rt *rt;
	char *a, *t;   /* the caller's array, the scratch buffer */
	size_t *table; /* count rows, TABLE_ROW per BLOCK_MIN elements */
	size_t esz, off;
	int kw, kind;   /* key width in bytes (4 or 8), K_* */
	int max_blocks; /* blocks of an MSD pass, at most */
} sorter;

/* The key at p, as an unsigned integer in the sort's order. kw and kind
 * are constants wherever it matters (the callers are instantiated per
 * shape), so this is a load and at most three ALU operations. */
static inline __attribute__((always_inline)) uint64_t key_at(const char *p, size_t off, int kw,
                                                             int kind)
{
	if (kw == 4) {
		uint32_t k;
		memcpy(&k, p + off, 4);
		if (kind == K_SIGNED)
			k ^= 0x80000000u;
		else if (kind == K_FLOAT)
			k ^= (uint32_t) - (int32_t)(k >> 31) | 0x80000000u;
		return k;
	}
	uint64_t k;
	memcpy(&k, p + off, 8);
	if (kind == K_SIGNED)
		k ^= 0x8000000000000000ull;
	else if (kind == K_FLOAT)
		k ^= (uint64_t) - (int64_t)(k >> 63) | 0x8000000000000000ull;
	return k;
}

static inline __attribute__((always_inline)) void move_elem(char *dst, const char *src, size_t esz)
{
	memcpy(dst, src, esz);
}

/* ------------------------------------------------------------ kernels
 *
 * Each is written once with esz, off, kw and kind as parameters and
 * instantiated for the shapes below with constants, so that the plain key
 * arrays get loops with no call per element. */

#define SHAPE_PARAMS size_t esz, size_t off, int kw, int kind
#define SHAPE_ARGS   esz, off, kw, kind

/* Counts digit d of n elements at src into count[256] (adds to it). */
static inline __attribute__((always_inline)) void count_digit(const char *src, size_t n, int d,
                                                              size_t *count, SHAPE_PARAMS)
{
	int shift = 8 * d;
	for (size_t i = 0; i < n; i++)
		count[(key_at(src + i * esz, off, kw, kind) >> shift) & 0xff]++;
}

/* Moves n elements from src to dst at pos[digit]++ (stable). */
static inline __attribute__((always_inline)) void
scatter_digit(const char *src, char *dst, size_t n, int d, size_t *pos, SHAPE_PARAMS)
{
	int shift = 8 * d;
	for (size_t i = 0; i < n; i++) {
		const char *e = src + i * esz;
		size_t b = (key_at(e, off, kw, kind) >> shift) & 0xff;
		move_elem(dst + pos[b]++ * esz, e, esz);
	}
}

/* LSD sort of n (<= LSD_MAX) elements at src by digits 0 .. d, other as
 * scratch; returns whichever of the two holds the result. */
static inline __attribute__((always_inline)) char *lsd(char *src, char *other, size_t n, int d,
                                                       SHAPE_PARAMS)
{
	uint32_t count[d + 1][256];
	memset(count, 0, sizeof(count));
	for (size_t i = 0; i < n; i++) {
		uint64_t k = key_at(src + i * esz, off, kw, kind);
		for (int g = 0; g <= d; g++)
			count[g][(k >> (8 * g)) & 0xff]++;
	}
	char *s = src, *o = other;
	for (int g = 0; g <= d; g++) {
		uint32_t *c = count[g];
		int shift = 8 * g;
		/* A digit every element shares: the pass would move nothing. */
		if (n == 0 || c[(key_at(s, off, kw, kind) >> shift) & 0xff] == n)
			continue;
		uint32_t sum = 0;
		for (int b = 0; b < 256; b++) {
			uint32_t x = c[b];
			c[b] = sum;
			sum += x;
		}
		for (size_t i = 0; i < n; i++) {
			const char *e = s + i * esz;
			size_t b = (key_at(e, off, kw, kind) >> shift) & 0xff;
			move_elem(o + (size_t)c[b]++ * esz, e, esz);
		}
		char *x = s;
		s = o;
		o = x;
	}
	return s;
}

/* The shapes: plain 4- and 8-byte keys of each kind, and records. */
#define SHAPES(X)                             \
	X(u32, 4, 0, 4, K_UNSIGNED)           \
	X(i32, 4, 0, 4, K_SIGNED)             \
	X(f32, 4, 0, 4, K_FLOAT)              \
	X(u64, 8, 0, 8, K_UNSIGNED)           \
	X(i64, 8, 0, 8, K_SIGNED)             \
	X(f64, 8, 0, 8, K_FLOAT)              \
	X(r4u, s->esz, s->off, 4, K_UNSIGNED) \
	X(r4s, s->esz, s->off, 4, K_SIGNED)   \
	X(r4f, s->esz, s->off, 4, K_FLOAT)    \
	X(r8u, s->esz, s->off, 8, K_UNSIGNED) \
	X(r8s, s->esz, s->off, 8, K_SIGNED)   \
	X(r8f, s->esz, s->off, 8, K_FLOAT)

enum {
#define SHAPE_ENUM(name, esz, off, kw, kind) S_##name,
	SHAPES(SHAPE_ENUM)
#undef SHAPE_ENUM
};

/* Which shape a sort has. */
static int shape_of(const sorter *s)
{
	int kind3 = s->kind; /* 0, 1, 2 */
	bool plain = s->off == 0 && s->esz == (size_t)s->kw;
	if (plain)
		return (s->kw == 4 ? S_u32 : S_u64) + kind3;
	return (s->kw == 4 ? S_r4u : S_r8u) + kind3;
}

#define SHAPE_FNS(name, ESZ, OFF, KW, KIND)                                                      \
	static void count_##name(const sorter *s, const char *src, size_t n, int d, size_t *c)   \
	{                                                                                        \
		(void)s;                                                                         \
		count_digit(src, n, d, c, ESZ, OFF, KW, KIND);                                   \
	}                                                                                        \
	static void scatter_##name(const sorter *s, const char *src, char *dst, size_t n, int d, \
	                           size_t *pos)                                                  \
	{                                                                                        \
		(void)s;                                                                         \
		scatter_digit(src, dst, n, d, pos, ESZ, OFF, KW, KIND);                          \
	}                                                                                        \
	static char *lsd_##name(const sorter *s, char *src, char *other, size_t n, int d)        \
	{                                                                                        \
		(void)s;                                                                         \
		return lsd(src, other, n, d, ESZ, OFF, KW, KIND);                                \
	}
SHAPES(SHAPE_FNS)
#undef SHAPE_FNS

typedef struct shape_ops {
	void (*count)(const sorter *s, const char *src, size_t n, int d, size_t *c);
	void (*scatter)(const sorter *s, const char *src, char *dst, size_t n, int d, size_t *pos);
	char *(*lsd)(const sorter *s, char *src, char *other, size_t n, int d);
} shape_ops;

static const shape_ops shapes[] = {
#define SHAPE_OPS(name, esz, off, kw, kind) {count_##name, scatter_##name, lsd_##name},
        SHAPES(SHAPE_OPS)
#undef SHAPE_OPS
};

/* ------------------------------------------------------------ the sort */

/* A region [lo, lo + len) of the array, now in the scratch buffer or not,
 * sorted by every digit above d already. */
typedef struct region {
	const sorter *s;
	const shape_ops *ops;
	bool in_t;
	size_t lo, len;
	int d;
	/* an MSD pass over the region */
	size_t *rows; /* its count rows */
	int blocks;
	size_t *start; /* bucket bounds, relative to lo: 257 */
} region;

static void sort_region(const sorter *s, const shape_ops *ops, bool in_t, size_t lo, size_t len,
                        int d);

/* weft_parallel_for, or a plain call with no runtime (rt NULL outside
 * tasks: the calling thread sorts alone). */
static void pfor(const sorter *s, size_t n, weft_range_fn body, void *arg)
{
	if (!s->rt || weft_parallel_for(s->rt, 0, n, 1, body, arg) != 0)
		body(0, n, arg);
}

static char *buf(const sorter *s, bool t)
{
	return t ? s->t : s->a;
}

static void block_range(const region *r, size_t b, size_t *lo, size_t *hi)
{
	size_t n = r->len, k = (size_t)r->blocks;
	*lo = r->lo + n / k * b + n % k * b / k;
	*hi = r->lo + n / k * (b + 1) + n % k * (b + 1) / k;
}

static void count_body(size_t b0, size_t b1, void *arg)
{
	region *r = arg;
	const sorter *s = r->s;
	for (size_t b = b0; b < b1; b++) {
		size_t lo, hi;
		block_range(r, b, &lo, &hi);
		size_t *row = r->rows + b * TABLE_ROW;
		memset(row, 0, TABLE_ROW * sizeof(*row));
		r->ops->count(s, buf(s, r->in_t) + lo * s->esz, hi - lo, r->d, row);
	}
}

static void scatter_body(size_t b0, size_t b1, void *arg)
{
	region *r = arg;
	const sorter *s = r->s;
	for (size_t b = b0; b < b1; b++) {
		size_t lo, hi;
		block_range(r, b, &lo, &hi);
		/* Positions in the row are relative to the region. */
		r->ops->scatter(s, buf(s, r->in_t) + lo * s->esz, buf(s, !r->in_t) + r->lo * s->esz,
		                hi - lo, r->d, r->rows + b * TABLE_ROW);
	}
}

static void bucket_body(size_t b0, size_t b1, void *arg)
{
	region *r = arg;
	for (size_t b = b0; b < b1; b++) {
		size_t lo = r->start[b], len = r->start[b + 1] - lo;
		if (len)
			sort_region(r->s, r->ops, !r->in_t, r->lo + lo, len, r->d - 1);
	}
}

/* Puts the region's elements, now in t when in_t, in the caller's array. */
static void settle(const sorter *s, bool in_t, size_t lo, size_t len)
{
	if (in_t)
		memcpy(s->a + lo * s->esz, s->t + lo * s->esz, len * s->esz);
}

/* Sorts the region by digits d .. 0, leaving the result in the array. */
static void sort_region(const sorter *s, const shape_ops *ops, bool in_t, size_t lo, size_t len,
                        int d)
{
	while (d >= 0 && len > LSD_MAX) {
		size_t row0 = lo / BLOCK_MIN, row1 = (lo + len) / BLOCK_MIN;
		size_t blocks = row1 - row0;
		if (blocks > (size_t)s->max_blocks)
			blocks = (size_t)s->max_blocks;
		size_t start[257];
		region r = {.s = s,
		            .ops = ops,
		            .in_t = in_t,
		            .lo = lo,
		            .len = len,
		            .d = d,
		            .rows = s->table + row0 * TABLE_ROW,
		            .blocks = (int)blocks,
		            .start = start};
		pfor(s, blocks, count_body, &r);
		/* Write positions: bucket by bucket, block by block within one
		 * (which keeps the pass stable). */
		size_t pos = 0;
		bool one_bucket = false;
		for (int k = 0; k < 256; k++) {
			start[k] = pos;
			for (size_t b = 0; b < blocks; b++) {
				size_t *c = &r.rows[b * TABLE_ROW + (size_t)k];
				size_t x = *c;
				*c = pos;
				pos += x;
			}
			one_bucket |= pos - start[k] == len;
		}
		start[256] = pos;
		if (one_bucket) {
			/* Every element shares this digit: nothing to move. */
			d--;
			continue;
		}
		pfor(s, blocks, scatter_body, &r);
		r.in_t = !in_t;
		if (d == 0) {
			/* Sorted: each bucket holds one key. */
			settle(s, r.in_t, lo, len);
			return;
		}
		/* The buckets' frames need this one's start[]: wait here. */
		r.in_t = in_t; /* bucket_body flips it */
		pfor(s, 256, bucket_body, &r);
		return;
	}
	if (d < 0) {
		settle(s, in_t, lo, len);
		return;
	}
	char *src = buf(s, in_t) + lo * s->esz, *other = buf(s, !in_t) + lo * s->esz;
	char *res = ops->lsd(s, src, other, len, d);
	if (res != s->a + lo * s->esz)
		memcpy(s->a + lo * s->esz, res, len * s->esz);
}

/* ------------------------------------------------------------ entry */

size_t weft_type_size(weft_type t)
{
	switch (t) {
	case WEFT_TYPE_U32:
	case WEFT_TYPE_I32:
	case WEFT_TYPE_F32:
		return 4;
	case WEFT_TYPE_U64:
	case WEFT_TYPE_I64:
	case WEFT_TYPE_F64:
		return 8;
	}
	return 0;
}

static size_t table_bytes(size_t n)
{
	return (n / BLOCK_MIN + 1) * TABLE_ROW * sizeof(size_t);
}

size_t weft_parallel_sort_scratch_size(size_t n, size_t elem_size)
{
	if (elem_size && n > (SIZE_MAX - table_bytes(n) - 64) / elem_size)
		return 0;
	/* The table starts on an 8-byte boundary after the elements. */
	return (n * elem_size + 7) / 8 * 8 + table_bytes(n);
}

static int kind_of(weft_type t)
{
	return t == WEFT_TYPE_U32 || t == WEFT_TYPE_U64   ? K_UNSIGNED
	       : t == WEFT_TYPE_I32 || t == WEFT_TYPE_I64 ? K_SIGNED
	                                                  : K_FLOAT;
}

/* The sort both entries share, arguments checked. */
static int radix_sort(weft_rt *rt, void *base, size_t n, size_t size, size_t off, weft_type t,
                      void *scratch)
{
	if (!rt)
		rt = weft_rt_current(); /* NULL outside tasks: this thread alone */
	int rc = rt ? weft__rt_check(rt) : 0;
	if (rc)
		return rc;
	if (n < 2)
		return 0;
	size_t bytes = weft_parallel_sort_scratch_size(n, size);
	if (!bytes)
		return WEFT_ENOMEM;
	char *mem = scratch;
	if (!mem) {
		mem = weft__alloc_uninit(bytes);
		if (!mem)
			return WEFT_ENOMEM;
	}
	int workers = rt && rt->cfg.workers > 0 ? rt->cfg.workers : 1;
	sorter s = {
	        .rt = rt,
	        .a = base,
	        .t = mem,
	        .table = (size_t *)(void *)(mem + (n * size + 7) / 8 * 8),
	        .esz = size,
	        .off = off,
	        .kw = (int)weft_type_size(t),
	        .kind = kind_of(t),
	        .max_blocks = workers * BLOCKS_PER_WORKER > MAX_BLOCKS
	                              ? MAX_BLOCKS
	                              : workers * BLOCKS_PER_WORKER,
	};
	sort_region(&s, &shapes[shape_of(&s)], false, 0, n, s.kw - 1);
	if (!scratch)
		weft__free(mem, bytes);
	return 0;
}

int weft_parallel_sort(weft_rt *rt, void *base, size_t n, weft_type t, void *scratch)
{
	size_t kw = weft_type_size(t);
	if (!kw || (n && !base) || (uintptr_t)base % kw || (uintptr_t)scratch % 8)
		return WEFT_EINVAL;
	return radix_sort(rt, base, n, kw, 0, t, scratch);
}

int weft_parallel_sort_records(weft_rt *rt, void *base, size_t n, size_t size, size_t key_offset,
                               weft_type t, void *scratch)
{
	size_t kw = weft_type_size(t);
	if (!kw || !size || (n && !base) || key_offset > size || size - key_offset < kw ||
	    (uintptr_t)scratch % 8)
		return WEFT_EINVAL;
	return radix_sort(rt, base, n, size, key_offset, t, scratch);
}
