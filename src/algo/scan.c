/* weft_parallel_scan and weft_parallel_scan_sum (weft/algo.h), on top of
 * weft_parallel_for only.
 *
 * Shape: the blocked three-phase scan (Blelloch's "reduce, scan the
 * sums, scan again" with one level of blocks). The range is cut into
 * blocks by its length and the grain alone; phase 1 folds every block but
 * the last into a summary, in parallel; phase 2 folds the summaries left
 * to right into each block's prefix, on the calling thread (at most
 * WEFT_SCAN_MAX_BLOCKS combines); phase 3 runs every block again from its
 * prefix, writing the outputs, in parallel. Each element is read twice and
 * written once, as oneTBB's parallel_scan does when its work is stolen.
 *
 * Alternatives rejected:
 *   - the up-sweep/down-sweep tree over the recursive halving of
 *     parallel.c: the partial sums of the up-sweep must outlive the frames
 *     that computed them (the down-sweep runs after every frame of the
 *     up-sweep returned), so they would be allocated anyway, one per
 *     node; and its cut would follow the reduce's, which depends on the
 *     worker count, where a scan's bits should not;
 *   - oneTBB's speculative pre-scan (a stolen right half runs a
 *     pre-scan, the left half's owner then re-runs it finally): fewer
 *     reads when nothing is stolen, but which blocks get summarised and
 *     combined depends on which were stolen, so a floating-point scan
 *     would change bits from run to run;
 *   - a decoupled look-back (single pass, GPU style): each block waits
 *     for its predecessor's prefix, so with fewer workers than blocks a
 *     worker spins on a block no one runs yet.
 *
 * Determinism: blocks, summaries and the order of every combine depend on
 * end - begin and grain only, so the same input gives the same bits on
 * every model, worker count and run. */
#include <stdalign.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/internal.h"

#define SCAN_MIN_GRAIN (1u << 14) /* iterations per block with grain 0, at least */

typedef struct scan {
	const weft_scanner *s;
	void *arg;
	size_t begin, end, grain, blocks;
	size_t stride; /* bytes from one accumulator to the next */
	char *acc;     /* blocks + 2 accumulators: summaries, then prefixes */
} scan;

static void *acc_of(const scan *sc, size_t b)
{
	return sc->acc + b * sc->stride;
}

static void block_of(const scan *sc, size_t b, size_t *lo, size_t *hi)
{
	*lo = sc->begin + b * sc->grain;
	*hi = sc->end - *lo > sc->grain ? *lo + sc->grain : sc->end;
}

static void summarise(size_t b0, size_t b1, void *arg)
{
	const scan *sc = arg;
	for (size_t b = b0; b < b1; b++) {
		size_t lo, hi;
		block_of(sc, b, &lo, &hi);
		void *acc = acc_of(sc, b);
		sc->s->init(acc, sc->arg);
		sc->s->body(lo, hi, acc, 0, sc->arg);
	}
}

static void finish(size_t b0, size_t b1, void *arg)
{
	const scan *sc = arg;
	for (size_t b = b0; b < b1; b++) {
		size_t lo, hi;
		block_of(sc, b, &lo, &hi);
		sc->s->body(lo, hi, acc_of(sc, b), 1, sc->arg);
	}
}

/* The blocks of [begin, end) for grain (0: automatic). */
static size_t grain_for(size_t n, size_t grain)
{
	size_t min_grain = (n + WEFT_SCAN_MAX_BLOCKS - 1) / WEFT_SCAN_MAX_BLOCKS;
	if (grain == 0)
		grain = SCAN_MIN_GRAIN;
	return grain < min_grain ? min_grain : grain;
}

/* Runs the scan with sc->acc holding blocks + 2 accumulators (the last
 * two: the running prefix and a summary in transit). */
static void run(weft_rt *rt, scan *sc, void *total)
{
	const weft_scanner *s = sc->s;
	size_t blocks = sc->blocks, bytes = s->size;
	if (blocks > 1)
		weft_parallel_for(rt, 0, blocks - 1, 1, summarise, sc);
	/* acc[b] becomes the prefix before block b, summaries folded left to
	 * right: acc[b] = acc[0] + ... + acc[b-1] of the summaries. */
	void *run_acc = acc_of(sc, blocks), *tmp = acc_of(sc, blocks + 1);
	s->init(run_acc, sc->arg);
	for (size_t b = 0; b < blocks; b++) {
		void *acc = acc_of(sc, b);
		if (b + 1 < blocks)
			memcpy(tmp, acc, bytes);
		memcpy(acc, run_acc, bytes);
		if (b + 1 < blocks)
			s->combine(run_acc, tmp, sc->arg);
	}
	weft_parallel_for(rt, 0, blocks, 1, finish, sc);
	/* The last block's accumulator ended as the fold of the whole range. */
	if (total)
		memcpy(total, acc_of(sc, blocks - 1), bytes);
}

static int check(weft_rt *rt, size_t begin, size_t end)
{
	if (!rt || end < begin)
		return WEFT_EINVAL;
	return weft__rt_check(rt);
}

int weft_parallel_scan(weft_rt *rt, size_t begin, size_t end, size_t grain, const weft_scanner *s,
                       void *arg, void *total)
{
	if (!s || !s->init || !s->body || !s->combine || s->size == 0 ||
	    s->size > WEFT_REDUCE_MAX_SIZE)
		return WEFT_EINVAL;
	int rc = check(rt, begin, end);
	if (rc)
		return rc;
	if (begin == end) {
		if (total)
			s->init(total, arg);
		return 0;
	}
	scan sc = {.s = s, .arg = arg, .begin = begin, .end = end};
	sc.grain = grain_for(end - begin, grain);
	sc.blocks = (end - begin - 1) / sc.grain + 1;
	sc.stride = (s->size + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
	size_t bytes = (sc.blocks + 2) * sc.stride;
	sc.acc = weft__alloc(bytes);
	if (!sc.acc)
		return WEFT_ENOMEM;
	run(rt, &sc, total);
	weft__free(sc.acc, bytes);
	return 0;
}

/* ------------------------------------------------------------ sums */

/* The typed bodies of weft_parallel_scan_sum: acc is one value of the
 * type (integers as unsigned, so that overflow wraps as documented). */
typedef struct sum_args {
	const void *in;
	void *out;
	bool exclusive;
} sum_args;

#define SUM_TYPES(X)                    \
	X(u32, uint32_t, WEFT_TYPE_U32) \
	X(i32, uint32_t, WEFT_TYPE_I32) \
	X(f32, float, WEFT_TYPE_F32)    \
	X(u64, uint64_t, WEFT_TYPE_U64) \
	X(i64, uint64_t, WEFT_TYPE_I64) \
	X(f64, double, WEFT_TYPE_F64)

#define SUM_FNS(name, T, type)                                                          \
	static void init_##name(void *acc, void *arg)                                   \
	{                                                                               \
		(void)arg;                                                              \
		*(T *)acc = 0;                                                          \
	}                                                                               \
	static void combine_##name(void *acc, const void *right, void *arg)             \
	{                                                                               \
		(void)arg;                                                              \
		*(T *)acc += *(const T *)right;                                         \
	}                                                                               \
	static void body_##name(size_t lo, size_t hi, void *accp, int final, void *arg) \
	{                                                                               \
		const sum_args *a = arg;                                                \
		const T *in = a->in;                                                    \
		T acc = *(T *)accp;                                                     \
		if (!final) {                                                           \
			for (size_t i = lo; i < hi; i++)                                \
				acc += in[i];                                           \
		} else if (a->exclusive) {                                              \
			T *out = a->out;                                                \
			for (size_t i = lo; i < hi; i++) {                              \
				T x = in[i];                                            \
				out[i] = acc;                                           \
				acc += x;                                               \
			}                                                               \
		} else {                                                                \
			T *out = a->out;                                                \
			for (size_t i = lo; i < hi; i++) {                              \
				acc += in[i];                                           \
				out[i] = acc;                                           \
			}                                                               \
		}                                                                       \
		*(T *)accp = acc;                                                       \
	}                                                                               \
	static const weft_scanner sum_##name = {sizeof(T), init_##name, body_##name,    \
	                                        combine_##name};
SUM_TYPES(SUM_FNS)
#undef SUM_FNS

int weft_parallel_scan_sum(weft_rt *rt, const void *in, void *out, size_t n, weft_type t, int flags)
{
	const weft_scanner *s = NULL;
	switch (t) {
#define SUM_CASE(name, T, type)  \
	case type:               \
		s = &sum_##name; \
		break;
		SUM_TYPES(SUM_CASE)
#undef SUM_CASE
	}
	if (!s || (flags & ~WEFT_SCAN_EXCLUSIVE) || (n && (!in || !out)))
		return WEFT_EINVAL;
	int rc = check(rt, 0, n);
	if (rc || n == 0)
		return rc;
	sum_args a = {in, out, (flags & WEFT_SCAN_EXCLUSIVE) != 0};
	/* Summaries on this frame: 8-byte values, at most
	 * WEFT_SCAN_MAX_BLOCKS + 2 of them (2 KiB), so nothing is allocated. */
	alignas(8) char acc[(WEFT_SCAN_MAX_BLOCKS + 2) * 8];
	scan sc = {.s = s, .arg = &a, .begin = 0, .end = n};
	sc.grain = grain_for(n, 0);
	sc.blocks = (n - 1) / sc.grain + 1;
	sc.stride = 8;
	sc.acc = acc;
	run(rt, &sc, NULL);
	return 0;
}
