/** @file
 * Parallel scan and sort: weft_parallel_scan (prefix sums and any other
 * associative fold, inclusive or exclusive), weft_parallel_sort (a radix
 * sort of 32- and 64-bit integer and floating-point keys, alone or in
 * records), weft_parallel_sort_cmp (a merge sort of any type under the
 * caller's comparator). The calls of oneTBB's parallel_scan and
 * parallel_sort, Taskflow's inclusive_scan and sort, in C.
 *
 * They are built on weft_parallel_for and weft_fork_join (parallel.h), so
 * they run on every model and from any thread, with the same rules: the
 * calling thread takes part, nothing deadlocks at one worker, a post the
 * runtime refuses runs on the calling thread instead. Results never depend
 * on timing, the model or the worker count: a scan's order of combines
 * depends only on the length and the grain, and both sorts are stable, so
 * the sorted output is the one stable order of the input.
 *
 * Memory: a scan allocates a summary per block of the range (at most
 * WEFT_SCAN_MAX_BLOCKS accumulators); a sort needs a second buffer as
 * large as the array plus a small table, which the caller may pass
 * (weft_parallel_sort_scratch_size says how large) or weft allocates and
 * frees within the call. Either allocation failing returns WEFT_ENOMEM
 * with the array untouched. docs/parallel.md has examples and figures. */
#ifndef WEFT_ALGO_H
#define WEFT_ALGO_H

#include "export.h"
#include "runtime.h"
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The key (and scan element) types of weft_parallel_sort and
 * weft_parallel_scan_sum: unsigned and two's complement signed integers
 * of 32 and 64 bits, and IEEE 754 binary32 (float) and binary64 (double). */
typedef enum weft_type {
	WEFT_TYPE_U32 = 1, /**< uint32_t */
	WEFT_TYPE_I32,     /**< int32_t */
	WEFT_TYPE_F32,     /**< float */
	WEFT_TYPE_U64,     /**< uint64_t */
	WEFT_TYPE_I64,     /**< int64_t */
	WEFT_TYPE_F64,     /**< double */
} weft_type;

/** weft_type_size returns the size in bytes of one value of type t (4 or
 * 8), or 0 for a value that is not a weft_type. */
WEFT_EXTERN size_t weft_type_size(weft_type t);

/* ------------------------------------------------------------ scan */

/** The most blocks weft_parallel_scan cuts a range into. */
#define WEFT_SCAN_MAX_BLOCKS 256

/** What weft_parallel_scan folds with (oneTBB's parallel_scan body, in C).
 * An accumulator is size bytes (1 .. WEFT_REDUCE_MAX_SIZE) of the
 * caller's type. init sets acc to the identity. body runs the iterations
 * [lo, hi) starting from acc: with final 0 it only folds them into acc
 * (a summary of a block, computed before the prefix of the block is
 * known); with final 1 acc holds the fold of every iteration before lo
 * and body writes the outputs of [lo, hi) (before folding iteration i for
 * an exclusive scan, after it for an inclusive one), leaving acc as the
 * fold through hi - 1. combine folds `right`, the summary of the
 * iterations just after those of acc, into acc; it need only be
 * associative (up to the rounding the caller accepts). */
typedef struct weft_scanner {
	size_t size;                        /**< bytes of one accumulator */
	void (*init)(void *acc, void *arg); /**< sets acc to the identity */
	void (*body)(size_t lo, size_t hi, void *acc, int final,
	             void *arg); /**< folds (and, final, writes) [lo, hi) */
	void (*combine)(void *acc, const void *right, void *arg); /**< folds right into acc */
} weft_scanner;

/** weft_parallel_scan runs a prefix fold over [begin, end) in parallel,
 * in three phases: the range is cut into blocks of `grain` iterations (0:
 * chosen from the length alone, at least 16,384 iterations and at most
 * WEFT_SCAN_MAX_BLOCKS blocks; a grain that would make more blocks is
 * raised to make WEFT_SCAN_MAX_BLOCKS), every block but the last is
 * summarised (body with final 0) in parallel, the summaries are folded
 * left to right on the calling thread into each block's prefix, and every
 * block is run again with its prefix (body with final 1) in parallel. A
 * range of one block runs body once, final, on the calling thread. If
 * total is not NULL it receives the fold of the whole range (size bytes).
 *
 * Deterministic: the blocks and the order of every combine depend only on
 * end - begin and grain, never on the model, the worker count or timing,
 * so a floating-point prefix sum gives the same bits everywhere.
 *
 * Returns 0 (begin == end: *total is the identity, body never runs),
 * WEFT_EINVAL for a NULL rt, s, init, body or combine, a size of 0 or
 * above WEFT_REDUCE_MAX_SIZE, end < begin or a dead runtime; WEFT_ENOMEM
 * when the (blocks + 1) x size bytes of summaries cannot be allocated
 * (nothing ran). May be called from any thread, as weft_parallel_for. */
WEFT_EXTERN int weft_parallel_scan(weft_rt *rt, size_t begin, size_t end, size_t grain,
                                   const weft_scanner *s, void *arg, void *total);

/** Flags of weft_parallel_scan_sum. */
enum {
	WEFT_SCAN_INCLUSIVE = 0, /**< out[i] = in[0] + ... + in[i] */
	WEFT_SCAN_EXCLUSIVE = 1, /**< out[i] = in[0] + ... + in[i-1]; out[0] = 0 */
};

/** weft_parallel_scan_sum writes the prefix sums of in[0 .. n-1] (values
 * of type t) to out[0 .. n-1], inclusive or exclusive as flags says;
 * out may be in (in place) but must not otherwise overlap it. Integers
 * wrap modulo 2^32 or 2^64 (signed ones as unsigned arithmetic would), so
 * their sums are exact and equal the sequential ones; floating-point sums
 * are weft_parallel_scan's deterministic blocked order with grain 0: the
 * same bits on every model and worker count, within a few units of
 * rounding of the sequential sum. Returns 0, WEFT_EINVAL for a NULL rt,
 * in or out with n > 0, an unknown type or flag, or a dead runtime. Never
 * allocates. */
WEFT_EXTERN int weft_parallel_scan_sum(weft_rt *rt, const void *in, void *out, size_t n,
                                       weft_type t, int flags);

/* ------------------------------------------------------------ sort */

/** weft_parallel_sort_scratch_size returns the bytes of scratch a sort of
 * n elements of elem_size bytes needs (the buffer weft_parallel_sort,
 * weft_parallel_sort_records and weft_parallel_sort_cmp take): n x
 * elem_size for the second copy of the array, plus, for the radix sorts,
 * a table of 2 KiB per 65,536 elements. 0 when it would overflow size_t. */
WEFT_EXTERN size_t weft_parallel_sort_scratch_size(size_t n, size_t elem_size);

/** weft_parallel_sort sorts base[0 .. n-1], values of type t, ascending,
 * with a parallel radix sort (one pass on the top byte split across the
 * workers, then each of the 256 buckets sorted by its other bytes as a
 * task of its own, bucket by bucket in cache; bytes every key in a bucket
 * shares are skipped). Integers sort by value. Floating-point keys sort
 * by IEEE 754 totalOrder: -NaN (sign bit set) first, then -inf, the
 * negative numbers, -0.0, +0.0, the positive numbers, +inf, and +NaN
 * last; NaNs among themselves by payload.
 *
 * scratch is NULL or weft_parallel_sort_scratch_size(n, weft_type_size(t))
 * bytes of the caller's, aligned to 8 bytes, which the sort uses as its
 * second buffer (its contents on return are unspecified; it stays the
 * caller's). With NULL, weft allocates that much for the call and frees it
 * before returning.
 *
 * rt NULL means the runtime whose task calls, and outside any task a
 * sort on the calling thread alone (what a sort inside a sequential
 * program or a part of a bigger job wants).
 *
 * Returns 0; WEFT_EINVAL for a NULL base with n > 0, an unknown type, a
 * base or scratch not aligned to the key's size, or a dead runtime; WEFT_ENOMEM (base untouched) when scratch is NULL and the
 * allocation fails. Never fails half-way. May be called from any thread,
 * as weft_parallel_for (its stack rules: each level takes a few hundred
 * bytes, a task of the sort 2 KiB more for a bucket table). */
WEFT_EXTERN int weft_parallel_sort(weft_rt *rt, void *base, size_t n, weft_type t, void *scratch);

/** weft_parallel_sort_records sorts n records of size bytes at base by a
 * key of type t at key_offset bytes into each record, as
 * weft_parallel_sort does, moving whole records. Stable: records with
 * equal keys keep their order. scratch: NULL or
 * weft_parallel_sort_scratch_size(n, size) bytes, as for
 * weft_parallel_sort; rt as there. Returns 0; WEFT_EINVAL for a NULL base
 * with n > 0, a size of 0, a key that does not fit in the record
 * (key_offset + weft_type_size(t) > size), an unknown type, or a dead
 * runtime; WEFT_ENOMEM as weft_parallel_sort. The key is read with
 * memcpy, so records need no alignment. */
WEFT_EXTERN int weft_parallel_sort_records(weft_rt *rt, void *base, size_t n, size_t size,
                                           size_t key_offset, weft_type t, void *scratch);

/** A comparator of weft_parallel_sort_cmp: negative when a sorts before b,
 * positive when after, 0 when equivalent, as qsort_r's; arg is the pointer
 * given to weft_parallel_sort_cmp. It must be a strict weak order and
 * may run on several threads at once. */
typedef int (*weft_cmp_fn)(const void *a, const void *b, void *arg);

/** weft_parallel_sort_cmp sorts n elements of size bytes at base by cmp,
 * with a stable parallel merge sort: runs sorted on the workers, then
 * merged pairwise, each merge split at the median of the larger run so
 * that both halves proceed in parallel. Elements are moved with memcpy
 * (any trivially copyable type). Stable: elements cmp calls equal keep
 * their order. scratch: NULL or weft_parallel_sort_scratch_size(n, size)
 * bytes of the caller's (only n x size are used), or weft allocates n x
 * size bytes for the call. rt NULL: as weft_parallel_sort. Returns 0;
 * WEFT_EINVAL for a NULL cmp, a NULL base with n > 0, a size of 0, or a dead runtime; WEFT_ENOMEM
 * (base untouched) when the allocation fails. May be called from any
 * thread. */
WEFT_EXTERN int weft_parallel_sort_cmp(weft_rt *rt, void *base, size_t n, size_t size,
                                       weft_cmp_fn cmp, void *arg, void *scratch);

#ifdef __cplusplus
}
#endif

#endif
