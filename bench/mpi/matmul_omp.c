/* matmul_omp: the baseline of bench/mpi — weft-matmul --mpi's algorithm
 * written the classic way, MPI + OpenMP, for the same run:
 *
 *   mpirun -n R matmul_omp [--seed S] [--samples K] n    (OMP_NUM_THREADS threads)
 *
 * The same bands (rows of A, B and C in multiples of 8 per rank), the same
 * fill, packing and micro-kernel (apps/matmul/kernel.c), the same ring: at
 * each step MPI_Irecv/MPI_Isend of the next band of B, the tiles of the
 * current band in an `omp parallel for`, then MPI_Waitall. The classic
 * pairing makes no MPI call during the parallel loop, so the transfer
 * progresses only as far as the network layer takes it alone. Prints the
 * lines weft-matmul --mpi prints, so bench/mpi/run.sh reads both alike. */
#include <float.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <mpi.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../bench_util.h"
#include "kernel.h"

#define TILE_M  64
#define TILE_N  256
#define BLOCK_K 256

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static uint64_t mix64(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double entry(uint64_t seed, int which, size_t i, size_t j)
{
	uint64_t h = mix64(seed * 2 + (uint64_t)which);
	h = mix64(h ^ ((uint64_t)i << 32 | (uint64_t)j));
	return (double)(h >> 11) * 0x1.0p-52 - 1.0;
}

int main(int argc, char **argv)
{
	cli_check_stdout_at_exit("matmul_omp");
	size_t n = 1000, samples = 1000;
	uint64_t seed = 1;
	/* Before MPI_Init: --help and --version answer without mpirun. */
	static const struct option opts[] = {{"seed", required_argument, NULL, 's'},
	                                     {"samples", required_argument, NULL, 'S'},
	                                     {"help", no_argument, NULL, 'h'},
	                                     {"version", no_argument, NULL, BENCH_OPT_VERSION},
	                                     {0}};
	static const char usage[] =
	        "usage: mpirun -n R matmul_omp [--seed S] [--samples M] N\n"
	        "       matmul_omp --help | --version\n"
	        "weft-matmul --mpi's algorithm on MPI + OpenMP (OMP_NUM_THREADS threads per\n"
	        "rank), the baseline of bench/mpi/run.sh.\n";
	int opt;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		if (opt == 's')
			seed = strtoull(optarg, NULL, 10);
		else if (opt == 'S')
			samples = strtoull(optarg, NULL, 10);
		else
			return bench_help_version_or_error("matmul_omp", opt, argv, opts, usage);
	}
	if (optind < argc)
		n = strtoull(argv[optind], NULL, 10);
	int provided, irank, isize;
	MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
	MPI_Comm_rank(MPI_COMM_WORLD, &irank);
	MPI_Comm_size(MPI_COMM_WORLD, &isize);
	size_t r = (size_t)irank, size = (size_t)isize, np = (n + 7) / 8 * 8, units = np / 8;
	const char *kname;
	mm_kernel_fn *kernel = mm_kernel_pick(0, &kname);
	size_t *bands = calloc(size + 1, sizeof(*bands));
	for (size_t k = 0; k <= size; k++)
		bands[k] = units * k / size * 8;
	size_t row0 = bands[r], rows = bands[r + 1] - bands[r], maxkb = 0;
	for (size_t k = 0; k < size; k++)
		maxkb = bands[k + 1] - bands[k] > maxkb ? bands[k + 1] - bands[k] : maxkb;
	size_t relems = (rows ? rows : 1) * np, belems = (maxkb ? maxkb : 1) * np;
	double *a = calloc(relems, 8), *c = calloc(relems, 8), *braw = calloc(relems, 8);
	double *buf[2] = {calloc(belems, 8), calloc(belems, 8)};
	if (!a || !c || !braw || !buf[0] || !buf[1])
		MPI_Abort(MPI_COMM_WORLD, 2);
	if (irank == 0)
		printf("matmul_omp: n = %zu over %zu ranks, kernel %s, %d OpenMP threads per "
		       "rank\n",
		       n, size, kname, omp_get_max_threads());
	MPI_Barrier(MPI_COMM_WORLD);
	double t0 = now_ms();
#pragma omp parallel for schedule(static)
	for (size_t i = 0; i < rows; i++) {
		size_t gi = row0 + i;
		for (size_t k = 0; k < n && gi < n; k++) {
			a[i * np + k] = entry(seed, 0, gi, k);
			braw[i * np + k] = entry(seed, 1, gi, k);
		}
	}
	size_t panels = np / MM_NR;
	if (rows) {
#pragma omp parallel for schedule(static)
		for (size_t q = 0; q < panels; q++)
			mm_pack_panel(braw, np, rows, q * MM_NR, buf[0] + q * MM_NR * rows);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	double t1 = now_ms();
	size_t tiles_m = (rows + TILE_M - 1) / TILE_M, tiles_n = (np + TILE_N - 1) / TILE_N;
	size_t ntiles = tiles_m * tiles_n;
	size_t left = (r + size - 1) % size, right = (r + 1) % size;
	for (size_t t = 0; t < size; t++) {
		size_t k = (r + t) % size, next = (k + 1) % size;
		size_t kb = bands[k + 1] - bands[k], nkb = bands[next + 1] - bands[next],
		       k0 = bands[k];
		double *cur = buf[t % 2], *nxt = buf[(t + 1) % 2];
		MPI_Request reqs[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
		if (t + 1 < size) {
			MPI_Irecv(nxt, (int)(nkb * np), MPI_DOUBLE, (int)right, (int)t,
			          MPI_COMM_WORLD, &reqs[0]);
			MPI_Isend(cur, (int)(kb * np), MPI_DOUBLE, (int)left, (int)t,
			          MPI_COMM_WORLD, &reqs[1]);
		}
#pragma omp parallel for schedule(dynamic, 1)
		for (size_t q = 0; q < ntiles; q++) {
			size_t i0 = (q / tiles_n) * TILE_M, j0 = (q % tiles_n) * TILE_N;
			size_t i1 = i0 + TILE_M < rows ? i0 + TILE_M : rows;
			size_t j1 = j0 + TILE_N < np ? j0 + TILE_N : np;
			for (size_t kk = 0; kk < kb; kk += BLOCK_K) {
				size_t kc = kb - kk < BLOCK_K ? kb - kk : BLOCK_K;
				for (size_t jj = j0; jj < j1; jj += MM_NR) {
					const double *bp = cur + jj * kb + kk * MM_NR;
					for (size_t ii = i0; ii < i1; ii += MM_MR)
						kernel(a + ii * np + k0 + kk, np, bp,
						       c + ii * np + jj, np, kc);
				}
			}
		}
		MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
	}
	double t2 = now_ms();
	double worst = 0;
	uint64_t checked = 0;
	for (uint64_t s = 0; s < samples; s++) {
		uint64_t h = mix64(seed ^ mix64(s + 12345));
		size_t i = (size_t)(h % n), j = (size_t)((h >> 32) % n);
		if (i < row0 || i >= row0 + rows)
			continue;
		double sum = 0, abs_sum = 0;
		for (size_t k = 0; k < n; k++) {
			double x = entry(seed, 0, i, k) * entry(seed, 1, k, j);
			sum += x;
			abs_sum += fabs(x);
		}
		double e = fabs(c[(i - row0) * np + j] - sum) /
		           (2.0 * (double)n * DBL_EPSILON * abs_sum + DBL_MIN);
		if (!(e <= worst))
			worst = e;
		checked++;
	}
	if (worst != worst)
		worst = INFINITY;
	double times[2] = {t1 - t0, t2 - t1}, tm[2], gworst;
	uint64_t gchecked;
	MPI_Reduce(times, tm, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
	MPI_Allreduce(&worst, &gworst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	MPI_Reduce(&checked, &gchecked, 1, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
	if (irank == 0) {
		printf("fill and pack: %.1f ms\n", tm[0]);
		printf("multiply: %.1f ms in %zu ring steps, %.2f GFLOP/s\n", tm[1], size,
		       2.0 * (double)n * (double)n * (double)n / (tm[1] * 1e6));
		if (gworst <= 1.0)
			printf("verify: ok (%" PRIu64 " sampled entries, worst error %.3f of the "
			       "rounding bound)\n",
			       gchecked, gworst);
		else
			fprintf(stderr, "matmul_omp: WRONG RESULT\n");
	}
	free(a), free(c), free(braw), free(buf[0]), free(buf[1]), free(bands);
	MPI_Finalize();
	return gworst <= 1.0 ? 0 : 1;
}
