/* psort_omp: the baseline of bench/mpi — weft-psort --mpi's algorithm
 * written the classic way, MPI + OpenMP, for the same run:
 *
 *   mpirun -n R psort_omp [--parts K] [--seed S] N      (OMP_NUM_THREADS threads)
 *
 * Each rank generates the same share of the same N ints as weft-psort --mpi,
 * sorts it in K parts with the same radix kernel (apps/psort/kernels.c) in an
 * `omp parallel for`, merges the parts in rounds cut at merge-path split
 * points (the same pieces, each an iteration of an `omp parallel for`),
 * picks the same sampled splitters, exchanges with a blocking MPI_Alltoallv,
 * merges the runs received the same way and verifies global order and the
 * checksum. Prints the lines weft-psort --mpi prints, so bench/mpi/run.sh
 * reads both the same way. */
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <mpi.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <weft/algo.h>

#include "../bench_util.h"
#include "kernels.h"

#define SLICE_MIN        (1u << 16)
#define SAMPLES_PER_RANK 64

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int cmp_int(const void *x, const void *y)
{
	int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
	return (a > b) - (a < b);
}

static size_t lower_bound(const int32_t *a, size_t n, int32_t v)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (a[mid] < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

typedef struct piece {
	const int32_t *a, *b;
	int32_t *out;
	size_t m, n, d0, d1;
} piece_t;

/* Merges the k runs [bounds[i], bounds[i+1]) of src[0..n) in rounds (the
 * same pieces as weft-psort); returns the array holding the result. */
static int32_t *merge_runs(int32_t *src, int32_t *dst, size_t n, size_t *bounds, size_t k,
                           size_t pieces, piece_t *pc)
{
	size_t runs = k;
	while (runs > 1) {
		size_t piece = n / pieces + 1;
		if (piece < SLICE_MIN)
			piece = SLICE_MIN;
		size_t used = 0;
		for (size_t p = 0; p < runs; p += 2) {
			size_t lo = bounds[p], mid = p + 1 < runs ? bounds[p + 1] : bounds[p + 1],
			       hi = p + 1 < runs ? bounds[p + 2] : bounds[p + 1];
			if (p + 1 == runs)
				mid = hi;
			size_t len = hi - lo, cuts = (len + piece - 1) / piece;
			for (size_t c = 0; c < cuts; c++)
				pc[used++] = (piece_t){.a = src + lo,
				                       .b = src + mid,
				                       .out = dst + lo,
				                       .m = mid - lo,
				                       .n = hi - mid,
				                       .d0 = len / cuts * c + len % cuts * c / cuts,
				                       .d1 = len / cuts * (c + 1) +
				                             len % cuts * (c + 1) / cuts};
		}
#pragma omp parallel for schedule(dynamic, 1)
		for (size_t i = 0; i < used; i++) {
			piece_t *j = &pc[i];
			size_t i0 = psort_corank(j->a, j->m, j->b, j->n, j->d0);
			size_t i1 = psort_corank(j->a, j->m, j->b, j->n, j->d1);
			psort_merge(j->a + i0, i1 - i0, j->b + (j->d0 - i0),
			            (j->d1 - i1) - (j->d0 - i0), j->out + j->d0);
		}
		size_t nr = 0;
		for (size_t p = 0; p < runs; p += 2)
			bounds[nr++] = bounds[p];
		bounds[nr] = n;
		runs = nr;
		int32_t *t = src;
		src = dst;
		dst = t;
	}
	return src;
}

int main(int argc, char **argv)
{
	cli_check_stdout_at_exit("psort_omp");
	size_t n = 1000000, parts = 0;
	uint64_t seed = 1;
	/* Before MPI_Init: --help and --version answer without mpirun. */
	static const struct option opts[] = {{"parts", required_argument, NULL, 'p'},
	                                     {"seed", required_argument, NULL, 's'},
	                                     {"help", no_argument, NULL, 'h'},
	                                     {"version", no_argument, NULL, BENCH_OPT_VERSION},
	                                     {0}};
	static const char usage[] =
	        "usage: mpirun -n R psort_omp [--parts K] [--seed S] N\n"
	        "       psort_omp --help | --version\n"
	        "weft-psort --mpi's algorithm on MPI + OpenMP (OMP_NUM_THREADS threads per\n"
	        "rank), the baseline of bench/mpi/run.sh.\n";
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		if (c == 'p')
			parts = strtoull(optarg, NULL, 10);
		else if (c == 's')
			seed = strtoull(optarg, NULL, 10);
		else
			return bench_help_version_or_error("psort_omp", c, argv, opts, usage);
	}
	if (optind < argc)
		n = strtoull(argv[optind], NULL, 10);
	int provided, rank, size;
	MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	int threads = omp_get_max_threads();
	size_t lo =
	        n / (size_t)size * (size_t)rank + n % (size_t)size * (size_t)rank / (size_t)size;
	size_t hi = n / (size_t)size * (size_t)(rank + 1) +
	            n % (size_t)size * (size_t)(rank + 1) / (size_t)size;
	size_t nl = hi - lo;
	if (parts == 0)
		for (parts = 2; parts < (size_t)threads;)
			parts *= 2;
	if (parts > nl)
		parts = nl ? nl : 1;
	size_t runs_max = parts > (size_t)size ? parts : (size_t)size;
	size_t pieces = 4 * (size_t)threads < 16 ? 16 : 4 * (size_t)threads;
	size_t *bounds = calloc(runs_max + 1, sizeof(*bounds));
	piece_t *pc = calloc(pieces + 2 * runs_max + 64, sizeof(*pc));
	int32_t *a = malloc((nl ? nl : 1) * 4), *tmp = malloc((nl ? nl : 1) * 4);
	if (!bounds || !pc || !a || !tmp)
		MPI_Abort(MPI_COMM_WORLD, 2);
	if (rank == 0)
		printf("psort_omp: %zu ints over %d ranks, %zu parts per rank, %d OpenMP threads "
		       "per rank\n",
		       n, size, parts, threads);
	MPI_Barrier(MPI_COMM_WORLD);
	double t0 = now_ms();
	uint64_t before = 0;
#pragma omp parallel for reduction(+ : before) schedule(static)
	for (size_t i = 0; i < nl; i++) {
		int32_t v =
		        (int32_t)(uint32_t)(mix64(seed + 0x9e3779b97f4a7c15ull * (lo + i + 1)) >>
		                            32);
		a[i] = v;
		before += psort_hash(v);
	}
	double t1 = now_ms();
	for (size_t p = 0; p <= parts; p++)
		bounds[p] = nl / parts * p + nl % parts * p / parts;
#pragma omp parallel for schedule(dynamic, 1)
	for (size_t p = 0; p < parts; p++)
		/* weft-psort's radix sort of a part, now the library's; outside any
		 * task it runs on the calling OpenMP thread alone. */
		(void)weft_parallel_sort(NULL, a + bounds[p], bounds[p + 1] - bounds[p],
		                         WEFT_TYPE_I32, NULL);
	int32_t *sorted = nl ? merge_runs(a, tmp, nl, bounds, parts, pieces, pc) : a;
	double t2 = now_ms();

	int per = SAMPLES_PER_RANK * size;
	int32_t *samples = malloc((size_t)per * 4), *all = malloc((size_t)per * (size_t)size * 4);
	int *sc = calloc((size_t)size, sizeof(int)), *sd = calloc((size_t)size, sizeof(int));
	int *rc = calloc((size_t)size, sizeof(int)), *rd = calloc((size_t)size, sizeof(int));
	if (!samples || !all || !sc || !sd || !rc || !rd)
		MPI_Abort(MPI_COMM_WORLD, 2);
	for (int i = 0; i < per; i++)
		samples[i] = nl ? sorted[(size_t)i * nl / (size_t)per] : INT32_MAX;
	MPI_Allgather(samples, per, MPI_INT32_T, all, per, MPI_INT32_T, MPI_COMM_WORLD);
	qsort(all, (size_t)per * (size_t)size, 4, cmp_int);
	size_t prev = 0;
	for (int j = 0; j < size; j++) {
		size_t cut = j + 1 < size
		                     ? lower_bound(sorted, nl, all[(size_t)(j + 1) * (size_t)per])
		                     : nl;
		if (cut < prev)
			cut = prev;
		sc[j] = (int)(cut - prev);
		sd[j] = (int)prev;
		prev = cut;
	}
	MPI_Alltoall(sc, 1, MPI_INT, rc, 1, MPI_INT, MPI_COMM_WORLD);
	size_t nr = 0;
	for (int j = 0; j < size; j++) {
		rd[j] = (int)nr;
		nr += (size_t)rc[j];
	}
	int32_t *recv = malloc((nr ? nr : 1) * 4), *rtmp = malloc((nr ? nr : 1) * 4);
	if (!recv || !rtmp)
		MPI_Abort(MPI_COMM_WORLD, 2);
	MPI_Alltoallv(sorted, sc, sd, MPI_INT32_T, recv, rc, rd, MPI_INT32_T, MPI_COMM_WORLD);
	double t3 = now_ms();
	for (int j = 0; j < size; j++)
		bounds[j] = (size_t)rd[j];
	bounds[size] = nr;
	int32_t *res = nr ? merge_runs(recv, rtmp, nr, bounds, (size_t)size, pieces, pc) : recv;
	double t4 = now_ms();

	uint64_t after = 0;
	long unsorted = 0;
#pragma omp parallel for reduction(+ : after, unsorted) schedule(static)
	for (size_t i = 0; i < nr; i++) {
		after += psort_hash(res[i]);
		if (i > 0 && res[i - 1] > res[i])
			unsorted++;
	}
	int64_t edge[3] = {(int64_t)nr, nr ? res[0] : 0, nr ? res[nr - 1] : 0};
	int64_t *edges = malloc(3 * (size_t)size * sizeof(int64_t));
	MPI_Allgather(edge, 3, MPI_INT64_T, edges, 3, MPI_INT64_T, MPI_COMM_WORLD);
	uint64_t sums[2] = {before, after}, tot[2];
	MPI_Allreduce(sums, tot, 2, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
	long bad = 0;
	MPI_Allreduce(&unsorted, &bad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	double times[4] = {t1 - t0, t2 - t1, t3 - t2, t4 - t3}, tm[4];
	MPI_Reduce(times, tm, 4, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
	int ok = 1;
	if (rank == 0) {
		int64_t last = INT64_MIN, count = 0;
		for (int j = 0; j < size; j++) {
			count += edges[3 * j];
			if (!edges[3 * j])
				continue;
			if (edges[3 * j + 1] < last)
				ok = 0;
			last = edges[3 * j + 2];
		}
		ok = ok && bad == 0 && (size_t)count == n && tot[0] == tot[1];
		printf("generate: %.1f ms\n", tm[0]);
		printf("sort: %.1f ms (local sort %.1f ms, splitters and exchange %.1f ms, merge "
		       "%.1f ms)\n",
		       tm[1] + tm[2] + tm[3], tm[1], tm[2], tm[3]);
		if (ok)
			printf("verify: ok (sorted across %d ranks, checksum %016" PRIx64 ")\n",
			       size, tot[1]);
		else
			fprintf(stderr, "psort_omp: VERIFICATION FAILED\n");
	}
	MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
	free(a), free(tmp), free(recv), free(rtmp), free(samples), free(all), free(edges);
	free(sc), free(sd), free(rc), free(rd), free(bounds), free(pc);
	MPI_Finalize();
	return ok ? 0 : 1;
}
