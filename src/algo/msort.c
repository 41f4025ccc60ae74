/* weft_parallel_sort_cmp (weft/algo.h): a stable parallel merge sort
 * under the caller's comparator, on top of weft_fork_join only.
 *
 * Shape: the classic fork-join merge sort with a parallel merge (Cormen et
 * al., "Multithreaded algorithms"). msort sorts a range into either buffer
 * by sorting its halves into the other one (the two halves forked) and
 * merging them back; pmerge merges two sorted runs by taking the median
 * of the longer run, finding where it falls in the shorter one (a binary
 * search), placing it, and forking the merges of the two sides. So the
 * merges at the top of the tree, which move the whole array, are as
 * parallel as the sorts at the bottom: no serial tail, and the critical
 * path is O(log^3 n) compares.
 *
 * Stability: the left run wins ties everywhere. Splitting at a[i] of the
 * left run, the right run's elements less than a[i] go before it (lower
 * bound); splitting at b[j] of the right run, the left run's elements not
 * greater than b[j] go before it (upper bound).
 *
 * Below LEAF elements (or a share of the array per worker, if larger) a
 * range is sorted on one thread: insertion sort of runs of RUN elements,
 * then bottom-up merging between the two buffers. Element moves are memcpy
 * of the element size, instantiated for 4, 8 and 16 bytes so that the
 * common cases are plain loads and stores. The comparator is called
 * through its pointer: the price of a C interface (C++ callers get
 * weft::parallel_sort, which inlines theirs). */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/internal.h"

#define RUN               16         /* insertion-sorted run of the sequential sort */
#define LEAF              (1u << 13) /* elements below which a range sorts on one thread */
#define MERGE_LEAF        (1u << 13) /* elements below which a merge runs on one thread */
#define LEAVES_PER_WORKER 8

typedef struct msorter {
	weft_rt *rt;
	char *a, *t;
	size_t esz, leaf;
	weft_cmp_fn cmp;
	void *arg;
} msorter;

static inline __attribute__((always_inline)) void copy_elems(char *dst, const char *src, size_t n,
                                                             size_t esz)
{
	memcpy(dst, src, n * esz);
}

/* ------------------------------------------------------------ sequential */

static inline __attribute__((always_inline)) void seq_merge_k(const msorter *m, const char *x,
                                                              size_t nx, const char *y, size_t ny,
                                                              char *out, size_t esz)
{
	const char *xe = x + nx * esz, *ye = y + ny * esz;
	while (x < xe && y < ye) {
		if (m->cmp(y, x, m->arg) < 0) {
			memcpy(out, y, esz);
			y += esz;
		} else {
			memcpy(out, x, esz);
			x += esz;
		}
		out += esz;
	}
	if (x < xe)
		copy_elems(out, x, (size_t)(xe - x) / esz, esz);
	else if (y < ye)
		copy_elems(out, y, (size_t)(ye - y) / esz, esz);
}

/* Insertion sort of a[0 .. n-1] (n small); tmp holds one element. */
static inline __attribute__((always_inline)) void insertion_k(const msorter *m, char *a, size_t n,
                                                              char *tmp, size_t esz)
{
	for (size_t i = 1; i < n; i++) {
		char *e = a + i * esz;
		if (m->cmp(e - esz, e, m->arg) <= 0)
			continue;
		memcpy(tmp, e, esz);
		size_t j = i;
		while (j > 0 && m->cmp(a + (j - 1) * esz, tmp, m->arg) > 0)
			j--;
		memmove(a + (j + 1) * esz, a + j * esz, (i - j) * esz);
		memcpy(a + j * esz, tmp, esz);
	}
}

/* Sorts a[0 .. n-1] on this thread, t[0 .. n-1] as scratch; the result in
 * a. */
static inline __attribute__((always_inline)) void seq_sort_k(const msorter *m, char *a, char *t,
                                                             size_t n, size_t esz)
{
	for (size_t i = 0; i < n; i += RUN)
		insertion_k(m, a + i * esz, n - i < RUN ? n - i : RUN, t + i * esz, esz);
	char *src = a, *dst = t;
	for (size_t w = RUN; w < n; w *= 2) {
		for (size_t i = 0; i < n; i += 2 * w) {
			size_t nx = n - i < w ? n - i : w;
			size_t ny = n - i - nx < w ? n - i - nx : w;
			seq_merge_k(m, src + i * esz, nx, src + (i + nx) * esz, ny, dst + i * esz,
			            esz);
		}
		char *x = src;
		src = dst;
		dst = x;
	}
	if (src != a)
		copy_elems(a, src, n, esz);
}

static void seq_sort(const msorter *m, char *a, char *t, size_t n)
{
	switch (m->esz) {
	case 4:
		seq_sort_k(m, a, t, n, 4);
		break;
	case 8:
		seq_sort_k(m, a, t, n, 8);
		break;
	case 16:
		seq_sort_k(m, a, t, n, 16);
		break;
	default:
		seq_sort_k(m, a, t, n, m->esz);
	}
}

static void seq_merge(const msorter *m, const char *x, size_t nx, const char *y, size_t ny,
                      char *out)
{
	switch (m->esz) {
	case 4:
		seq_merge_k(m, x, nx, y, ny, out, 4);
		break;
	case 8:
		seq_merge_k(m, x, nx, y, ny, out, 8);
		break;
	case 16:
		seq_merge_k(m, x, nx, y, ny, out, 16);
		break;
	default:
		seq_merge_k(m, x, nx, y, ny, out, m->esz);
	}
}

/* ------------------------------------------------------------ parallel */

/* First index of sorted x[0 .. n-1] whose element is not less than v
 * (upper: greater than v). */
static size_t bound(const msorter *m, const char *x, size_t n, const char *v, bool upper)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = m->cmp(x + mid * m->esz, v, m->arg);
		if (c < 0 || (upper && c == 0))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* weft_fork_join, or both calls here with no runtime (rt NULL outside
 * tasks: the calling thread sorts alone). */
static void fork2(const msorter *m, weft_fn a, void *a_arg, weft_fn b, void *b_arg)
{
	if (!m->rt || weft_fork_join(m->rt, a, a_arg, b, b_arg) != 0) {
		a(a_arg);
		b(b_arg);
	}
}

typedef struct merge_job {
	const msorter *m;
	const char *x, *y;
	size_t nx, ny;
	char *out;
} merge_job;

static void pmerge(void *arg)
{
	merge_job *j = arg;
	const msorter *m = j->m;
	size_t esz = m->esz;
	if (j->nx + j->ny <= MERGE_LEAF || j->nx == 0 || j->ny == 0) {
		seq_merge(m, j->x, j->nx, j->y, j->ny, j->out);
		return;
	}
	merge_job l = *j, r = *j;
	size_t i, k;
	if (j->nx >= j->ny) {
		i = j->nx / 2;
		k = bound(m, j->y, j->ny, j->x + i * esz, false);
		memcpy(j->out + (i + k) * esz, j->x + i * esz, esz);
		r.x = j->x + (i + 1) * esz;
		r.nx = j->nx - i - 1;
		l.nx = i;
		r.y = j->y + k * esz;
		r.ny = j->ny - k;
		l.ny = k;
	} else {
		k = j->ny / 2;
		i = bound(m, j->x, j->nx, j->y + k * esz, true);
		memcpy(j->out + (i + k) * esz, j->y + k * esz, esz);
		r.y = j->y + (k + 1) * esz;
		r.ny = j->ny - k - 1;
		l.ny = k;
		r.x = j->x + i * esz;
		r.nx = j->nx - i;
		l.nx = i;
	}
	r.out = j->out + (i + k + 1) * esz;
	fork2(m, pmerge, &l, pmerge, &r);
}

typedef struct sort_job {
	const msorter *m;
	size_t lo, n;
	bool into_t; /* the result goes to t (else to a) */
} sort_job;

static void psort(void *arg)
{
	sort_job *j = arg;
	const msorter *m = j->m;
	size_t esz = m->esz;
	char *a = m->a + j->lo * esz, *t = m->t + j->lo * esz;
	if (j->n <= m->leaf) {
		seq_sort(m, a, t, j->n);
		if (j->into_t)
			copy_elems(t, a, j->n, esz);
		return;
	}
	size_t h = j->n / 2;
	/* The halves go to the other buffer, the merge back into ours. */
	sort_job l = {m, j->lo, h, !j->into_t}, r = {m, j->lo + h, j->n - h, !j->into_t};
	fork2(m, psort, &l, psort, &r);
	char *src = j->into_t ? a : t, *dst = j->into_t ? t : a;
	merge_job mj = {m, src, src + h * esz, h, j->n - h, dst};
	pmerge(&mj);
}

int weft_parallel_sort_cmp(weft_rt *rt, void *base, size_t n, size_t size, weft_cmp_fn cmp,
                           void *arg, void *scratch)
{
	if (!cmp || !size || (n && !base))
		return WEFT_EINVAL;
	if (!rt)
		rt = weft_rt_current(); /* NULL outside tasks: this thread alone */
	int rc = rt ? weft__rt_check(rt) : 0;
	if (rc || n < 2)
		return rc;
	if (n > SIZE_MAX / size)
		return WEFT_ENOMEM;
	char *t = scratch;
	if (!t) {
		t = weft__alloc_uninit(n * size);
		if (!t)
			return WEFT_ENOMEM;
	}
	size_t workers = rt && rt->cfg.workers > 0 ? (size_t)rt->cfg.workers : 1;
	size_t leaf = n / (workers * LEAVES_PER_WORKER);
	msorter m = {.rt = rt,
	             .a = base,
	             .t = t,
	             .esz = size,
	             .leaf = leaf > LEAF ? leaf : LEAF,
	             .cmp = cmp,
	             .arg = arg};
	sort_job j = {&m, 0, n, false};
	psort(&j);
	if (!scratch)
		weft__free(t, n * size);
	return 0;
}
