/* weft/algo.h and weft/combinable.h under every model and worker count
 * (MATRIX): `test_algo <case> <model> <workers>`.
 *
 * Sorts are checked against qsort of a copy (for floats, by the bits of
 * IEEE totalOrder; for records and the comparator sort, with the original
 * index as tie-break, which is what stability promises), on random,
 * sorted, reversed, constant and few-distinct inputs, sizes around the
 * sort's internal cut-offs, from the test thread and from inside a task.
 * Scans are checked against a sequential loop: exactly for integers,
 * within rounding for doubles, and bit for bit against the same scan on a
 * one-worker runtime (the determinism promise). Combinables are checked
 * against the sequential result with tasks that park between updates, and
 * with plain threads. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static bool spawn_model(void)
{
	return wt.model == WEFT_MODEL_SPAWN;
}

/* ------------------------------------------------------------ references */

/* A key's bits made order-preserving, as the sort promises (totalOrder for
 * floats). */
static uint64_t ordered(const void *p, weft_type t)
{
	uint32_t u;
	uint64_t v;
	switch (t) {
	case WEFT_TYPE_U32:
		memcpy(&u, p, 4);
		return u;
	case WEFT_TYPE_I32:
		memcpy(&u, p, 4);
		return u ^ 0x80000000u;
	case WEFT_TYPE_F32:
		memcpy(&u, p, 4);
		return u & 0x80000000u ? ~u & 0xffffffffu : u | 0x80000000u;
	case WEFT_TYPE_U64:
		memcpy(&v, p, 8);
		return v;
	case WEFT_TYPE_I64:
		memcpy(&v, p, 8);
		return v ^ 0x8000000000000000ull;
	case WEFT_TYPE_F64:
		memcpy(&v, p, 8);
		return v >> 63 ? ~v : v | 0x8000000000000000ull;
	}
	return 0;
}

/* Reference records: the key, then the original index (the tie-break a
 * stable sort must agree with). */
typedef struct ref {
	uint64_t key;
	uint64_t index;
} ref;

static int cmp_ref(const void *x, const void *y)
{
	const ref *a = x, *b = y;
	if (a->key != b->key)
		return a->key < b->key ? -1 : 1;
	return (a->index > b->index) - (a->index < b->index);
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return (a > b) - (a < b);
}

static int cmp_u64_arg(const void *x, const void *y, void *arg)
{
	(void)arg;
	return cmp_u64(x, y);
}

/* ------------------------------------------------------------ inputs */

/* TWO_TOP: random keys whose top byte is one of two values, so that the
 * two buckets of the first pass each hold more than the in-cache sort
 * takes (2^18 keys) once n is 600,000: the nested parallel pass runs. */
enum pattern { RANDOM, SORTED, REVERSED, CONSTANT, FEW, SPECIAL, TWO_TOP, PATTERNS };
static const char *pattern_names[] = {"random", "sorted",  "reversed", "constant",
                                      "few",    "special", "two-top"};

/* Fills n keys of type t at p. */
static void fill(void *p, size_t n, weft_type t, enum pattern pat, uint64_t *rng)
{
	size_t w = weft_type_size(t);
	static const double specials[] = {-0.0, 0.0,    1.0,     -1.0, INFINITY, -INFINITY, NAN,
	                                  -NAN, 1e-310, -1e-310, 3.5,  -3.5,     1e300,     -1e300};
	for (size_t i = 0; i < n; i++) {
		uint64_t r = wt_rand(rng);
		switch (pat) {
		case RANDOM:
			break;
		case SORTED:
			r = i << 20;
			break;
		case REVERSED:
			r = (n - i) << 20;
			break;
		case CONSTANT:
			r = 0x123456789abcdefull;
			break;
		case FEW:
			r = (r % 5) * 0x0101010101010101ull;
			break;
		case SPECIAL:
			break;
		case TWO_TOP:
			r = (r & 0x00ffffffffffffffull) | (r >> 63 << 63);
			break;
		default:
			break;
		}
		char *e = (char *)p + i * w;
		if (t == WEFT_TYPE_F64) {
			double d = pat == SPECIAL && r % 3 == 0 ? specials[(r >> 8) % 14]
			           : pat == TWO_TOP ? (r >> 63 ? -1.0 : 1.0) * (double)(r >> 12)
			           : pat == RANDOM || pat == SPECIAL
			                   ? ((double)(int64_t)r) * 1e-10
			                   : (double)(int64_t)(r >> 12) - 1e6;
			if (pat == SPECIAL && r % 7 == 1)
				d = -d;
			memcpy(e, &d, 8);
		} else if (t == WEFT_TYPE_F32) {
			float f = pat == SPECIAL && r % 3 == 0 ? (float)specials[(r >> 8) % 14]
			          : pat == TWO_TOP ? (r >> 63 ? -1.0f : 1.0f) * (float)(r >> 40)
			          : pat == RANDOM || pat == SPECIAL
			                  ? (float)((double)(int32_t)(r >> 32) * 1e-3)
			                  : (float)(int32_t)(r >> 40) - 1000.0f;
			memcpy(e, &f, 4);
		} else if (w == 4) {
			uint32_t u = (uint32_t)(r >> 32);
			if (pat == TWO_TOP)
				u = (uint32_t)(r >> 32 & 0x00ffffffu) | (uint32_t)(r >> 63 << 31);
			else if (pat != RANDOM && pat != SPECIAL)
				u = (uint32_t)(r >> 20);
			memcpy(e, &u, 4);
		} else {
			memcpy(e, &r, 8);
		}
	}
}

static const weft_type types[] = {WEFT_TYPE_U32, WEFT_TYPE_I32, WEFT_TYPE_F32,
                                  WEFT_TYPE_U64, WEFT_TYPE_I64, WEFT_TYPE_F64};
static const char *type_names[] = {"", "u32", "i32", "f32", "u64", "i64", "f64"};

/* Sorts a copy of keys with qsort by ordered() and checks that sorted[]
 * holds the same bits in that order. */
static void check_keys(const void *input, const void *sorted, size_t n, weft_type t,
                       const char *what)
{
	size_t w = weft_type_size(t);
	ref *r = malloc((n ? n : 1) * sizeof(*r));
	assert_non_null(r);
	for (size_t i = 0; i < n; i++)
		r[i] = (ref){ordered((const char *)input + i * w, t), i};
	qsort(r, n, sizeof(*r), cmp_ref);
	for (size_t i = 0; i < n; i++) {
		uint64_t got = ordered((const char *)sorted + i * w, t);
		if (got != r[i].key)
			fail_msg("%s: n %zu type %s: element %zu is %#llx, qsort says %#llx", what,
			         n, type_names[t], i, (unsigned long long)got,
			         (unsigned long long)r[i].key);
	}
	free(r);
}

/* ------------------------------------------------------------ sort cases */

static void sort_uint64_vs_qsort(void)
{
	size_t n = WT_SANITIZER ? 300000 : 10000000;
	weft_rt *rt = wt_create_default();
	uint64_t rng = wt_seed();
	uint64_t *a = malloc(n * 8), *b = malloc(n * 8);
	assert_true(a && b);
	for (size_t i = 0; i < n; i++)
		a[i] = b[i] = wt_rand(&rng);
	assert_rc(0, weft_parallel_sort(rt, a, n, WEFT_TYPE_U64, NULL));
	qsort(b, n, 8, cmp_u64);
	assert_memory_equal(a, b, n * 8);
	/* rt NULL on this thread (no task): sorted here alone, same answer;
	 * and the comparator sort too. */
	size_t m = n < 1000000 ? n : 1000000;
	for (size_t i = 0; i < m; i++)
		a[i] = b[i] = wt_rand(&rng);
	assert_rc(0, weft_parallel_sort(NULL, a, m, WEFT_TYPE_U64, NULL));
	qsort(b, m, 8, cmp_u64);
	assert_memory_equal(a, b, m * 8);
	for (size_t i = 0; i < m; i++)
		a[i] = b[i] = wt_rand(&rng);
	assert_rc(0, weft_parallel_sort_cmp(NULL, a, m, 8, cmp_u64_arg, NULL, NULL));
	qsort(b, m, 8, cmp_u64);
	assert_memory_equal(a, b, m * 8);
	free(a);
	free(b);
	assert_rc(0, weft_rt_destroy(rt));
}

static const size_t sizes[] = {0, 1, 2, 3, 17, 1000, 70000, 300001, 600001};

static void sort_each_type(void)
{
	weft_rt *rt = wt_create_default();
	uint64_t rng = wt_seed();
	size_t max = 600001;
	void *in = malloc(max * 8), *a = malloc(max * 8);
	assert_true(in && a);
	for (size_t ti = 0; ti < sizeof(types) / sizeof(types[0]); ti++) {
		weft_type t = types[ti];
		size_t w = weft_type_size(t);
		for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
			size_t n = sizes[si];
			for (int pat = 0; pat < PATTERNS; pat++) {
				/* Keep the case short: every path of the sort still runs. */
				if (n > 70000 && pat != RANDOM && pat != TWO_TOP &&
				    pat != SPECIAL && t != WEFT_TYPE_U64 && t != WEFT_TYPE_F32)
					continue;
				if (n > 300001 &&
				    (WT_SANITIZER || (pat != TWO_TOP && pat != RANDOM)))
					continue; /* sanitizers: 300,001 spans every path already */
				fill(in, n, t, (enum pattern)pat, &rng);
				memcpy(a, in, n * w);
				assert_rc(0, weft_parallel_sort(rt, a, n, t, NULL));
				check_keys(in, a, n, t, pattern_names[pat]);
			}
		}
	}
	free(in);
	free(a);
	assert_rc(0, weft_rt_destroy(rt));
}

/* Floats: the documented order, spelled out. */
static void sort_float_order(void)
{
	weft_rt *rt = wt_create_default();
	double want[] = {-NAN, -INFINITY, -1e300, -1.0,  -1e-310,  -0.0,
	                 0.0,  1e-310,    1.0,    1e300, INFINITY, NAN};
	size_t n = sizeof(want) / sizeof(want[0]);
	double a[12];
	uint64_t rng = wt_seed();
	for (int round = 0; round < 20; round++) {
		memcpy(a, want, sizeof(a));
		for (size_t i = n - 1; i > 0; i--) { /* shuffle */
			size_t j = wt_rand_below(&rng, i + 1);
			double x = a[i];
			a[i] = a[j];
			a[j] = x;
		}
		assert_rc(0, weft_parallel_sort(rt, a, n, WEFT_TYPE_F64, NULL));
		assert_memory_equal(a, want, sizeof(a)); /* bits: -0.0 before 0.0 */
		float fw[] = {-NAN, -INFINITY, -1e30f, -1.0f, -1e-40f,  -0.0f,
		              0.0f, 1e-40f,    1.0f,   1e30f, INFINITY, NAN};
		float f[12];
		memcpy(f, fw, sizeof(f));
		for (size_t i = n - 1; i > 0; i--) {
			size_t j = wt_rand_below(&rng, i + 1);
			float x = f[i];
			f[i] = f[j];
			f[j] = x;
		}
		assert_rc(0, weft_parallel_sort(rt, f, n, WEFT_TYPE_F32, NULL));
		assert_memory_equal(f, fw, sizeof(f));
	}
	assert_rc(0, weft_rt_destroy(rt));
}

/* A record: 4 bytes of payload, the key, 4 more; 16 or 20 bytes. */
typedef struct rec {
	uint32_t before;
	int64_t key;
	uint32_t index;
} __attribute__((packed)) rec;

static void sort_records_stable(void)
{
	weft_rt *rt = wt_create_default();
	uint64_t rng = wt_seed();
	size_t n = WT_SANITIZER ? 300001 : 1100000;
	rec *a = malloc(n * sizeof(rec));
	ref *r = malloc(n * sizeof(ref));
	assert_true(a && r);
	for (int round = 0; round < 2; round++) {
		for (size_t i = 0; i < n; i++) {
			uint64_t x = wt_rand(&rng);
			/* Few keys (round 0): stability matters everywhere. */
			int64_t key = round == 0 ? (int64_t)(x % 7) - 3 : (int64_t)x;
			a[i] = (rec){(uint32_t)i * 3u, key, (uint32_t)i};
			r[i] = (ref){ordered(&key, WEFT_TYPE_I64), i};
		}
		assert_rc(0, weft_parallel_sort_records(rt, a, n, sizeof(rec), offsetof(rec, key),
		                                        WEFT_TYPE_I64, NULL));
		qsort(r, n, sizeof(*r), cmp_ref);
		for (size_t i = 0; i < n; i++) {
			if (a[i].index != r[i].index || a[i].before != r[i].index * 3u)
				fail_msg("round %d: record %zu is #%u, a stable sort has #%llu",
				         round, i, a[i].index, (unsigned long long)r[i].index);
		}
	}
	/* 8-byte records with a float key at 4: a small record shape. */
	typedef struct {
		uint32_t index;
		float key;
	} small;
	small *s = malloc(n * sizeof(small));
	assert_non_null(s);
	for (size_t i = 0; i < n; i++) {
		float f = (float)(wt_rand_below(&rng, 2001)) - 1000.0f;
		s[i] = (small){(uint32_t)i, f};
		r[i] = (ref){ordered(&f, WEFT_TYPE_F32), i};
	}
	assert_rc(0, weft_parallel_sort_records(rt, s, n, sizeof(small), offsetof(small, key),
	                                        WEFT_TYPE_F32, NULL));
	qsort(r, n, sizeof(*r), cmp_ref);
	for (size_t i = 0; i < n; i++)
		if (s[i].index != r[i].index)
			fail_msg("float records: %zu is #%u, want #%llu", i, s[i].index,
			         (unsigned long long)r[i].index);
	free(s);
	free(a);
	free(r);
	assert_rc(0, weft_rt_destroy(rt));
}

/* A 12-byte element for the comparator sort: sorts by k (descending, to
 * be sure the comparator is what decides), ties kept in index order. */
typedef struct elem12 {
	int32_t k;
	uint32_t index;
	uint32_t check;
} elem12;

static _Atomic long cmp_calls;

static int cmp_elem12(const void *x, const void *y, void *arg)
{
	(void)arg;
	const elem12 *a = x, *b = y;
	return (a->k < b->k) - (a->k > b->k);
}

static int cmp_ref_desc(const void *x, const void *y)
{
	const ref *a = x, *b = y;
	if (a->key != b->key)
		return a->key > b->key ? -1 : 1;
	return (a->index > b->index) - (a->index < b->index);
}

static int cmp_u32_arg(const void *x, const void *y, void *arg)
{
	atomic_fetch_add_explicit((_Atomic long *)arg, 1, memory_order_relaxed);
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
	return (a > b) - (a < b);
}

static void sort_comparator(void)
{
	weft_rt *rt = wt_create_default();
	uint64_t rng = wt_seed();
	size_t max = WT_SANITIZER ? 200000 : 1000000;
	elem12 *a = malloc(max * sizeof(*a));
	ref *r = malloc(max * sizeof(*r));
	assert_true(a && r);
	const size_t ns[] = {0, 1, 2, 15, 16, 17, 1000, 8193, 70001, max};
	for (size_t si = 0; si < sizeof(ns) / sizeof(ns[0]); si++) {
		size_t n = ns[si];
		if (spawn_model() && n > 100000)
			n = 100000; /* a thread per fork */
		for (int pat = 0; pat < 4; pat++) {
			for (size_t i = 0; i < n; i++) {
				uint64_t x = wt_rand(&rng);
				int32_t k = pat == 0   ? (int32_t)(x % 50)
				            : pat == 1 ? (int32_t)i
				            : pat == 2 ? -(int32_t)i
				                       : (int32_t)(x >> 33);
				a[i] = (elem12){k, (uint32_t)i, (uint32_t)i ^ 0x5a5a5a5au};
				r[i] = (ref){(uint64_t)(int64_t)k ^ 0x8000000000000000ull, i};
			}
			assert_rc(0, weft_parallel_sort_cmp(rt, a, n, sizeof(*a), cmp_elem12, NULL,
			                                    NULL));
			qsort(r, n, sizeof(*r), cmp_ref_desc);
			for (size_t i = 0; i < n; i++)
				if (a[i].index != r[i].index ||
				    a[i].check != (a[i].index ^ 0x5a5a5a5au))
					fail_msg("n %zu pattern %d: %zu is #%u, want #%llu", n, pat,
					         i, a[i].index, (unsigned long long)r[i].index);
		}
	}
	/* 4-byte elements with the caller's scratch, and the comparator's arg. */
	size_t n = spawn_model() ? 100000 : max;
	uint32_t *u = malloc(n * 4), *v = malloc(n * 4);
	void *scratch = malloc(weft_parallel_sort_scratch_size(n, 4));
	assert_true(u && v && scratch);
	for (size_t i = 0; i < n; i++)
		u[i] = v[i] = (uint32_t)wt_rand(&rng);
	atomic_store(&cmp_calls, 0);
	assert_rc(0, weft_parallel_sort_cmp(rt, u, n, 4, cmp_u32_arg, (void *)&cmp_calls, scratch));
	assert_true(atomic_load(&cmp_calls) > 0);
	for (size_t i = 0; i < n; i++)
		r[i] = (ref){v[i], i};
	qsort(r, n, sizeof(*r), cmp_ref);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(u[i], r[i].key);
	free(u);
	free(v);
	free(scratch);
	free(a);
	free(r);
	assert_rc(0, weft_rt_destroy(rt));
}

/* Sorts called from inside tasks, several at once, with the caller's
 * scratch (so nothing is allocated by weft). */
typedef struct sort_job {
	weft_task task;
	weft_rt *rt;
	uint32_t *a;
	void *scratch;
	size_t n;
	bool cmp;
} sort_job;

static void sort_job_fn(void *arg)
{
	sort_job *j = arg;
	if (j->cmp)
		WT_CHECK_RC(0, weft_parallel_sort_cmp(j->rt, j->a, j->n, 4, cmp_u32_arg,
		                                      (void *)&cmp_calls, j->scratch));
	else
		WT_CHECK_RC(0, weft_parallel_sort(j->rt, j->a, j->n, WEFT_TYPE_U32, j->scratch));
}

static void sort_in_tasks(void)
{
	weft_rt *rt = wt_create_default();
	uint64_t rng = wt_seed();
	enum { JOBS = 4 };
	size_t n = WT_SANITIZER || spawn_model() ? 100000 : 600000;
	sort_job jobs[JOBS];
	uint32_t *want = malloc(n * 4);
	assert_non_null(want);
	for (int k = 0; k < JOBS; k++) {
		/* Jobs 2 and 3 pass rt NULL: the runtime of their task. */
		jobs[k] = (sort_job){.rt = k < 2 ? rt : NULL, .n = n, .cmp = k % 2};
		jobs[k].a = malloc(n * 4);
		jobs[k].scratch = malloc(weft_parallel_sort_scratch_size(n, 4));
		assert_true(jobs[k].a && jobs[k].scratch);
		for (size_t i = 0; i < n; i++)
			jobs[k].a[i] = (uint32_t)wt_rand(&rng);
		weft_task_init(&jobs[k].task, sort_job_fn, &jobs[k]);
	}
	long live = wt_alloc_total();
	for (int k = 0; k < JOBS; k++)
		assert_rc(0, weft_post(rt, &jobs[k].task));
	for (int k = 0; k < JOBS; k++)
		assert_rc(0, weft_wait(&jobs[k].task));
	assert_int_equal(wt_alloc_total(), live); /* the caller's scratch: no allocation */
	wt_check_async();
	for (int k = 0; k < JOBS; k++) {
		for (size_t i = 1; i < n; i++)
			if (jobs[k].a[i - 1] > jobs[k].a[i])
				fail_msg("job %d: %zu out of order", k, i);
		free(jobs[k].a);
		free(jobs[k].scratch);
	}
	free(want);
	assert_rc(0, weft_rt_destroy(rt));
}

static int cmp_never(const void *a, const void *b, void *arg)
{
	(void)a, (void)b, (void)arg;
	return 0;
}

static void sort_errors(void)
{
	weft_rt *rt = wt_create_default();
	uint64_t k[4] = {3, 1, 2, 0};
	char odd[40] __attribute__((aligned(8)));
	/* rt NULL outside tasks: the calling thread sorts alone. */
	assert_rc(0, weft_parallel_sort(NULL, k, 4, WEFT_TYPE_U64, NULL));
	assert_true(k[0] == 0 && k[1] == 1 && k[2] == 2 && k[3] == 3);
	k[0] = 3, k[3] = 0;
	assert_rc(WEFT_EINVAL, weft_parallel_sort(rt, NULL, 4, WEFT_TYPE_U64, NULL));
	assert_rc(WEFT_EINVAL, weft_parallel_sort(rt, k, 4, (weft_type)0, NULL));
	assert_rc(WEFT_EINVAL, weft_parallel_sort(rt, k, 4, (weft_type)99, NULL));
	assert_rc(WEFT_EINVAL, weft_parallel_sort(rt, odd + 4, 4, WEFT_TYPE_U64, NULL));
	assert_rc(WEFT_EINVAL, weft_parallel_sort(rt, k, 4, WEFT_TYPE_U64, odd + 1));
	assert_rc(0, weft_parallel_sort(rt, NULL, 0, WEFT_TYPE_U64, NULL));
	assert_rc(WEFT_EINVAL, weft_parallel_sort_records(rt, k, 4, 8, 4, WEFT_TYPE_U64, NULL));
	assert_rc(WEFT_EINVAL, weft_parallel_sort_records(rt, k, 4, 8, 9, WEFT_TYPE_U32, NULL));
	assert_rc(WEFT_EINVAL, weft_parallel_sort_records(rt, k, 4, 0, 0, WEFT_TYPE_U32, NULL));
	assert_rc(WEFT_EINVAL, weft_parallel_sort_cmp(rt, k, 4, 8, NULL, NULL, NULL));
	assert_rc(WEFT_EINVAL, weft_parallel_sort_cmp(rt, k, 4, 0, cmp_never, NULL, NULL));
	assert_rc(WEFT_EINVAL, weft_parallel_sort_cmp(rt, NULL, 4, 8, cmp_never, NULL, NULL));
	assert_int_equal(weft_type_size((weft_type)0), 0);
	assert_int_equal(weft_parallel_sort_scratch_size(SIZE_MAX / 2, 8), 0);
	/* Out of memory: nothing happens to the array. */
	wt_alloc_fail_nth(1);
	assert_rc(WEFT_ENOMEM, weft_parallel_sort(rt, k, 4, WEFT_TYPE_U64, NULL));
	wt_alloc_fail_nth(0);
	assert_true(k[0] == 3 && k[1] == 1 && k[2] == 2 && k[3] == 0);
	wt_alloc_fail_nth(1);
	assert_rc(WEFT_ENOMEM, weft_parallel_sort_cmp(rt, k, 4, 8, cmp_never, NULL, NULL));
	wt_alloc_fail_nth(0);
	assert_true(k[0] == 3 && k[1] == 1 && k[2] == 2 && k[3] == 0);
	assert_rc(0, weft_parallel_sort(rt, k, 4, WEFT_TYPE_U64, NULL));
	assert_true(k[0] == 0 && k[1] == 1 && k[2] == 2 && k[3] == 3);
	assert_rc(0, weft_rt_destroy(rt));
}

/* ------------------------------------------------------------ scan cases */

static weft_rt *one_worker(void)
{
	weft_config cfg;
	weft_config_init(&cfg);
	cfg.model = WEFT_MODEL_THREADS;
	cfg.workers = 1;
	return wt_create(&cfg);
}

static void scan_doubles(void)
{
	size_t n = WT_SANITIZER ? 300000 : 10000000;
	weft_rt *rt = wt_create_default(), *rt1 = one_worker();
	uint64_t rng = wt_seed();
	double *in = malloc(n * 8), *out = malloc(n * 8), *ref1 = malloc(n * 8);
	assert_true(in && out && ref1);
	for (size_t i = 0; i < n; i++)
		in[i] = (double)(wt_rand(&rng) >> 11) * 0x1p-53 - 0.25;
	for (int ex = 0; ex < 2; ex++) {
		int flags = ex ? WEFT_SCAN_EXCLUSIVE : WEFT_SCAN_INCLUSIVE;
		assert_rc(0, weft_parallel_scan_sum(rt, in, out, n, WEFT_TYPE_F64, flags));
		assert_rc(0, weft_parallel_scan_sum(rt1, in, ref1, n, WEFT_TYPE_F64, flags));
		/* Deterministic: the same bits as on one worker of another model. */
		assert_memory_equal(out, ref1, n * 8);
		double seq = 0, abs_sum = 0;
		for (size_t i = 0; i < n; i++) {
			if (ex) {
				if (fabs(out[i] - seq) > 1e-12 * (abs_sum + 1))
					fail_msg("exclusive %zu: %.17g, sequential %.17g", i,
					         out[i], seq);
			}
			seq += in[i];
			abs_sum += fabs(in[i]);
			if (!ex && fabs(out[i] - seq) > 1e-12 * (abs_sum + 1))
				fail_msg("inclusive %zu: %.17g, sequential %.17g", i, out[i], seq);
		}
		if (ex)
			assert_true(out[0] == 0.0);
	}
	/* In place. */
	memcpy(out, in, n * 8);
	assert_rc(0, weft_parallel_scan_sum(rt, out, out, n, WEFT_TYPE_F64, WEFT_SCAN_INCLUSIVE));
	assert_rc(0, weft_parallel_scan_sum(rt1, in, ref1, n, WEFT_TYPE_F64, WEFT_SCAN_INCLUSIVE));
	assert_memory_equal(out, ref1, n * 8);
	free(in);
	free(out);
	free(ref1);
	assert_rc(0, weft_rt_destroy(rt1));
	assert_rc(0, weft_rt_destroy(rt));
}

static void scan_integers(void)
{
	weft_rt *rt = wt_create_default();
	uint64_t rng = wt_seed();
	size_t max = WT_SANITIZER ? 300000 : 3000000;
	uint64_t *in = malloc(max * 8), *out = malloc(max * 8);
	assert_true(in && out);
	const size_t ns[] = {0, 1, 2, 16383, 16384, 16385, 100000, max};
	for (size_t si = 0; si < sizeof(ns) / sizeof(ns[0]); si++) {
		size_t n = ns[si];
		for (size_t i = 0; i < n; i++)
			in[i] = wt_rand(&rng);
		for (int ex = 0; ex < 2; ex++) {
			/* 64-bit: wraps, exact. */
			assert_rc(0, weft_parallel_scan_sum(rt, in, out, n, WEFT_TYPE_U64, ex));
			uint64_t s = 0;
			for (size_t i = 0; i < n; i++) {
				uint64_t before = s;
				s += in[i];
				if (out[i] != (ex ? before : s))
					fail_msg("u64 n %zu ex %d: %zu wrong", n, ex, i);
			}
			/* 32-bit signed, read from the same bits. */
			const int32_t *in32 = (const int32_t *)in;
			int32_t *out32 = (int32_t *)out;
			assert_rc(0, weft_parallel_scan_sum(rt, in32, out32, n, WEFT_TYPE_I32, ex));
			uint32_t s32 = 0;
			for (size_t i = 0; i < n; i++) {
				uint32_t before = s32;
				s32 += (uint32_t)in32[i];
				if ((uint32_t)out32[i] != (ex ? before : s32))
					fail_msg("i32 n %zu ex %d: %zu wrong", n, ex, i);
			}
		}
	}
	free(in);
	free(out);
	assert_rc(0, weft_rt_destroy(rt));
}

/* A generic scan with a 24-byte accumulator: a running sum, count and max
 * of i*i mod 1000, written as an inclusive scan; grains of every kind. */
typedef struct stat3 {
	uint64_t sum, count, max;
} stat3;

static void st_init(void *acc, void *arg)
{
	(void)arg;
	*(stat3 *)acc = (stat3){0, 0, 0};
}

static void st_combine(void *acc, const void *right, void *arg)
{
	(void)arg;
	stat3 *a = acc;
	const stat3 *b = right;
	a->sum += b->sum;
	a->count += b->count;
	if (b->max > a->max)
		a->max = b->max;
}

static void st_body(size_t lo, size_t hi, void *accp, int final, void *arg)
{
	stat3 *out = arg, *acc = accp;
	for (size_t i = lo; i < hi; i++) {
		uint64_t v = (uint64_t)i * i % 1000;
		acc->sum += v;
		acc->count++;
		if (v > acc->max)
			acc->max = v;
		if (final)
			out[i] = *acc;
	}
}

static void scan_generic(void)
{
	weft_rt *rt = wt_create_default();
	size_t n = 200000;
	stat3 *out = calloc(n, sizeof(*out));
	assert_non_null(out);
	const weft_scanner s = {sizeof(stat3), st_init, st_body, st_combine};
	const size_t grains[] = {0, 1, 7, 1000, 100000, SIZE_MAX};
	for (size_t g = 0; g < sizeof(grains) / sizeof(grains[0]); g++) {
		stat3 total;
		memset(out, 0, n * sizeof(*out));
		assert_rc(0, weft_parallel_scan(rt, 0, n, grains[g], &s, out, &total));
		stat3 want = {0, 0, 0};
		for (size_t i = 0; i < n; i++) {
			uint64_t v = (uint64_t)i * i % 1000;
			want.sum += v;
			want.count++;
			if (v > want.max)
				want.max = v;
			if (memcmp(&out[i], &want, sizeof(want)))
				fail_msg("grain %zu: %zu is {%llu %llu %llu}", grains[g], i,
				         (unsigned long long)out[i].sum,
				         (unsigned long long)out[i].count,
				         (unsigned long long)out[i].max);
		}
		assert_memory_equal(&total, &want, sizeof(want));
	}
	/* An offset range and an empty one. */
	stat3 total = {9, 9, 9};
	assert_rc(0, weft_parallel_scan(rt, 5, 5, 0, &s, out, &total));
	assert_true(total.sum == 0 && total.count == 0 && total.max == 0);
	assert_rc(0, weft_parallel_scan(rt, 1000, n, 333, &s, out, NULL));
	assert_int_equal(out[n - 1].count, n - 1000);
	free(out);
	assert_rc(0, weft_rt_destroy(rt));
}

static void scan_errors(void)
{
	weft_rt *rt = wt_create_default();
	double d[4] = {1, 2, 3, 4};
	const weft_scanner s = {sizeof(stat3), st_init, st_body, st_combine};
	weft_scanner bad = s;
	assert_rc(WEFT_EINVAL, weft_parallel_scan(NULL, 0, 4, 0, &s, NULL, NULL));
	assert_rc(WEFT_EINVAL, weft_parallel_scan(rt, 4, 0, 0, &s, NULL, NULL));
	assert_rc(WEFT_EINVAL, weft_parallel_scan(rt, 0, 4, 0, NULL, NULL, NULL));
	bad.size = 0;
	assert_rc(WEFT_EINVAL, weft_parallel_scan(rt, 0, 4, 0, &bad, NULL, NULL));
	bad.size = WEFT_REDUCE_MAX_SIZE + 1;
	assert_rc(WEFT_EINVAL, weft_parallel_scan(rt, 0, 4, 0, &bad, NULL, NULL));
	bad = s;
	bad.body = NULL;
	assert_rc(WEFT_EINVAL, weft_parallel_scan(rt, 0, 4, 0, &bad, NULL, NULL));
	assert_rc(WEFT_EINVAL, weft_parallel_scan_sum(NULL, d, d, 4, WEFT_TYPE_F64, 0));
	assert_rc(WEFT_EINVAL, weft_parallel_scan_sum(rt, NULL, d, 4, WEFT_TYPE_F64, 0));
	assert_rc(WEFT_EINVAL, weft_parallel_scan_sum(rt, d, NULL, 4, WEFT_TYPE_F64, 0));
	assert_rc(WEFT_EINVAL, weft_parallel_scan_sum(rt, d, d, 4, (weft_type)42, 0));
	assert_rc(WEFT_EINVAL, weft_parallel_scan_sum(rt, d, d, 4, WEFT_TYPE_F64, 2));
	assert_rc(0, weft_parallel_scan_sum(rt, NULL, NULL, 0, WEFT_TYPE_F64, 0));
	wt_alloc_fail_nth(1);
	stat3 out[4];
	assert_rc(WEFT_ENOMEM, weft_parallel_scan(rt, 0, 4, 0, &s, out, NULL));
	wt_alloc_fail_nth(0);
	assert_rc(0, weft_parallel_scan_sum(rt, d, d, 4, WEFT_TYPE_F64, WEFT_SCAN_EXCLUSIVE));
	assert_true(d[0] == 0 && d[1] == 1 && d[2] == 3 && d[3] == 6);
	assert_rc(0, weft_rt_destroy(rt));
}

/* ------------------------------------------------------------ combinable */

typedef struct counter {
	uint64_t sum, calls;
} counter;

static void count_body(size_t lo, size_t hi, void *arg)
{
	counter *c = weft_combinable_local(arg);
	WT_CHECK(c != NULL);
	if (!c)
		return;
	for (size_t i = lo; i < hi; i++)
		c->sum += i;
	c->calls++;
}

static void fold_counter(void *result, const void *slot, void *arg)
{
	(void)arg;
	counter *r = result;
	const counter *s = slot;
	r->sum += s->sum;
	r->calls += s->calls;
}

static void combinable_fold(void)
{
	weft_rt *rt = wt_create_default();
	weft_combinable c;
	assert_rc(0, weft_combinable_init(&c, sizeof(counter), NULL, NULL, NULL));
	size_t n = 3000000;
	for (int round = 0; round < 3; round++) {
		assert_rc(0, weft_parallel_for(rt, 0, n, 1000, count_body, &c));
		counter total;
		assert_rc(0, weft_combinable_combine(&c, &total, fold_counter, NULL));
		wt_check_async();
		assert_int_equal(total.sum, (uint64_t)(round + 1) * (n * (n - 1) / 2));
		assert_int_equal(total.calls > 0, 1);
	}
	assert_rc(0, weft_combinable_destroy(&c));
	assert_rc(0, weft_rt_destroy(rt));
}

static void noop_slot(void *slot, void *arg)
{
	(void)slot;
	atomic_fetch_add((_Atomic int *)arg, 1);
}

/* Tasks that park between updates: each re-asks for its slot after every
 * park (the rule), so the fold is exact on every model, mn's moves
 * included; slots never outnumber workers plus the test thread. */
typedef struct parker {
	weft_task task;
	weft_combinable *c;
	weft_mutex *mu;
	int id;
} parker;

enum { PARKERS = 16, PARK_ROUNDS = 200 };

static void add_one(void *slot, void *arg)
{
	counter *c = slot;
	c->sum += (uintptr_t)arg;
	c->calls++;
}

static void parker_fn(void *arg)
{
	parker *p = arg;
	for (int r = 0; r < PARK_ROUNDS; r++) {
		counter *c = weft_combinable_local(p->c);
		WT_CHECK(c != NULL);
		if (!c)
			return;
		c->sum += (uint64_t)p->id;
		c->calls++;
		switch (r % 3) {
		case 0:
			weft_yield();
			break;
		case 1:
			weft_sleep_ns(r % 2 ? 1000 : 0);
			break;
		default:
			weft_mutex_lock(p->mu);
			WT_CHECK_RC(0, weft_combinable_update(p->c, add_one, (void *)(uintptr_t)1));
			weft_mutex_unlock(p->mu);
		}
	}
}

static void combinable_park(void)
{
	weft_rt *rt = wt_create_default();
	weft_combinable c;
	weft_mutex mu;
	assert_rc(0, weft_mutex_init(&mu));
	assert_rc(0, weft_combinable_init(&c, sizeof(counter), NULL, NULL, NULL));
	parker p[PARKERS];
	for (int i = 0; i < PARKERS; i++) {
		p[i] = (parker){.c = &c, .mu = &mu, .id = i + 1};
		weft_task_init(&p[i].task, parker_fn, &p[i]);
		assert_rc(0, weft_post(rt, &p[i].task));
	}
	/* The test thread takes part too, as a thread outside the workers. */
	counter *mine = weft_combinable_local(&c);
	assert_non_null(mine);
	mine->sum += 1000000;
	for (int i = 0; i < PARKERS; i++)
		assert_rc(0, weft_wait(&p[i].task));
	wt_check_async();
	counter total;
	assert_rc(0, weft_combinable_combine(&c, &total, fold_counter, NULL));
	uint64_t want = 1000000;
	int updates = PARK_ROUNDS / 3; /* rounds with r % 3 == 2 */
	for (int i = 0; i < PARKERS; i++)
		want += (uint64_t)(i + 1) * PARK_ROUNDS + (uint64_t)updates;
	assert_int_equal(total.sum, want);
	_Atomic int visited = 0;
	int slots = weft_combinable_each(&c, noop_slot, (void *)&visited);
	assert_int_equal(slots, atomic_load(&visited));
	/* Under spawn a worker index is a slot of concurrency, one thread at a
	 * time: still one slot per worker. A stand-in (threads, spawn: tasks
	 * asleep on the mutex with others queued) keys one by its own thread. */
	weft_stats stats;
	assert_rc(0, weft_stats_get(rt, &stats));
	assert_true(slots >= 1 && slots <= wt_workers(rt) + 1 + (int)stats.standins);
	assert_rc(0, weft_combinable_destroy(&c));
	assert_rc(0, weft_rt_destroy(rt));
}

/* Plain threads: a slot each; slots that own memory are released by fini. */
enum { THREADS = 6, PER_THREAD = 100000 };

typedef struct owned {
	uint64_t *buf;
	uint64_t sum;
} owned;

static _Atomic int inits, finis;

static void owned_init(void *slot, void *arg)
{
	owned *o = slot;
	o->buf = malloc(64);
	o->sum = (uint64_t)(uintptr_t)arg; /* the identity is whatever init says */
	atomic_fetch_add(&inits, 1);
}

static void owned_fini(void *slot, void *arg)
{
	(void)arg;
	owned *o = slot;
	free(o->buf);
	atomic_fetch_add(&finis, 1);
}

static void *thread_fn(void *arg)
{
	weft_combinable *c = arg;
	for (int i = 0; i < PER_THREAD; i++) {
		owned *o = weft_combinable_local(c);
		WT_CHECK(o != NULL && o->buf != NULL);
		if (o)
			o->sum += 2;
	}
	return NULL;
}

static void fold_owned(void *result, const void *slot, void *arg)
{
	(void)arg;
	((owned *)result)->sum += ((const owned *)slot)->sum;
}

static void combinable_threads(void)
{
	weft_combinable c;
	atomic_store(&inits, 0);
	atomic_store(&finis, 0);
	assert_rc(0, weft_combinable_init(&c, sizeof(owned), owned_init, owned_fini, NULL));
	pthread_t th[THREADS];
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, thread_fn, &c), 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	wt_check_async();
	assert_int_equal(atomic_load(&inits), THREADS);
	owned total;
	assert_rc(0, weft_combinable_combine(&c, &total, fold_owned, NULL));
	assert_int_equal(atomic_load(&inits), THREADS + 1); /* result got init too */
	free(total.buf);
	assert_int_equal(total.sum, (uint64_t)THREADS * PER_THREAD * 2);
	assert_rc(0, weft_combinable_clear(&c));
	assert_int_equal(atomic_load(&finis), THREADS);
	/* After clear: fresh slots. */
	owned *o = weft_combinable_local(&c);
	assert_non_null(o);
	assert_int_equal(o->sum, 0);
	assert_rc(0, weft_combinable_destroy(&c));
	assert_int_equal(atomic_load(&finis), THREADS + 1);
}

static void combinable_errors(void)
{
	weft_combinable c;
	assert_rc(WEFT_EINVAL, weft_combinable_init(NULL, 8, NULL, NULL, NULL));
	assert_rc(WEFT_EINVAL, weft_combinable_init(&c, 0, NULL, NULL, NULL));
	assert_null(weft_combinable_local(NULL));
	assert_rc(WEFT_EINVAL, weft_combinable_update(NULL, add_one, NULL));
	assert_rc(0, weft_combinable_init(&c, sizeof(counter), NULL, NULL, NULL));
	assert_rc(WEFT_EINVAL, weft_combinable_update(&c, NULL, NULL));
	counter r;
	assert_rc(WEFT_EINVAL, weft_combinable_combine(NULL, &r, fold_counter, NULL));
	assert_rc(WEFT_EINVAL, weft_combinable_combine(&c, NULL, fold_counter, NULL));
	assert_rc(WEFT_EINVAL, weft_combinable_combine(&c, &r, NULL, NULL));
	assert_rc(WEFT_EINVAL, weft_combinable_each(NULL, noop_slot, NULL));
	assert_rc(WEFT_EINVAL, weft_combinable_each(&c, NULL, NULL));
	assert_rc(WEFT_EINVAL, weft_combinable_clear(NULL));
	assert_rc(WEFT_EINVAL, weft_combinable_destroy(NULL));
	/* Out of memory for a new slot. */
	wt_alloc_fail_nth(1);
	assert_null(weft_combinable_local(&c));
	wt_alloc_fail_nth(1);
	assert_rc(WEFT_ENOMEM, weft_combinable_update(&c, add_one, NULL));
	wt_alloc_fail_nth(0);
	assert_non_null(weft_combinable_local(&c));
	assert_rc(0, weft_combinable_combine(&c, &r, fold_counter, NULL));
	assert_rc(0, weft_combinable_destroy(&c));
}

WT_CASES(WT_CASE(sort_uint64_vs_qsort), WT_CASE(sort_each_type), WT_CASE(sort_float_order),
         WT_CASE(sort_records_stable), WT_CASE(sort_comparator), WT_CASE(sort_in_tasks),
         WT_CASE(sort_errors), WT_CASE(scan_doubles), WT_CASE(scan_integers), WT_CASE(scan_generic),
         WT_CASE(scan_errors), WT_CASE(combinable_fold), WT_CASE(combinable_park),
         WT_CASE(combinable_threads), WT_CASE(combinable_errors));
