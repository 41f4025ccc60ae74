/* weft-matmul: seed 004's matrix-multiplication championship, written once
 * on weft's native API.
 *
 *   weft-matmul [--seed S] [--samples K | --check-all] [--portable] [n]
 *   mpirun -n R weft-matmul --mpi [--seed S] [--samples K] [n]
 *
 * Multiplies two random n x n matrices of doubles (uniform in [-1, 1), from
 * the seed) and reports the time and GFLOP/s. Every phase is a set of tasks
 * waited for as a group:
 *
 *   1. fill A and B: a task per band of rows;
 *   2. pack B: a task per band of 8-column panels, each panel stored
 *      k-major (bp[8k + c] = B[k][j0 + c]) so the micro-kernel streams it;
 *   3. multiply: a task per 64 x 256 tile of C. A task walks k in blocks of
 *      256: the 256 x 8 slice of a B panel (16 KiB) stays in L1 while the
 *      4 x 8 micro-kernel (kernel.c; AVX2/FMA when the processor has it)
 *      runs down the tile's 64 rows, whose 64 x 256 block of A (128 KiB)
 *      stays in L2. Tiles are disjoint, so tasks share nothing but the
 *      read-only inputs.
 *
 * Matrices are padded to a multiple of 8 with zeros, so any n works. The
 * result is checked against a naive dot product on K sampled entries
 * (default 1000, or every entry with --check-all, the default for n <= 256),
 * within the rounding bound 2 n eps sum |a_ik b_kj|.
 *
 * With --mpi (built when weft-mpi is, docs/mpi.md) the bands of rows are
 * spread over the MPI ranks and the bands of B passed round a ring, each
 * transfer overlapped with the tiles of the current band (mpi_main below).
 *
 * Exit status: 0 verified, 1 verification failed, 2 usage or start-up
 * error. */
#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <weft/weft.h>

#include "../common/cli.h"
#include "kernel.h"

#define MAX_N   16384
#define TILE_M  64
#define TILE_N  256
#define BLOCK_K 256

static const char *prog = "weft-matmul";

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: %s [options] [n]\n"
	        "Multiplies two random n x n matrices (default n = 1000; seed 004's size is\n"
	        "3000) with weft tasks, one per %dx%d tile of the result; verifies it and\n"
	        "reports GFLOP/s.\n"
	        "  --seed S       seed of the random matrices (default 1)\n"
	        "  --samples K    entries checked against a naive product (default 1000)\n"
	        "  --check-all    check every entry (the default for n <= 256)\n"
	        "  --portable     use the portable kernel even where AVX2/FMA exists\n"
	        "  --mpi          multiply across MPI ranks (run under mpirun): a band of\n"
	        "                 rows per rank, the bands of B passed round a ring, each\n"
	        "                 transfer overlapped with the tiles of the current band\n"
	        "  -h, --help     show this help\n"
	        "  --version      print the version and exit\n"
	        "WEFT_MODEL, WEFT_WORKERS and WEFT_POLICY choose how the tasks run.\n"
	        "Exit status: 0 verified, 1 verification failed, 2 usage or start-up error.\n",
	        prog, TILE_M, TILE_N);
}

static uint64_t mix64(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

typedef struct problem {
	size_t n, np; /* size, padded size (multiple of 8) */
	double *a, *b, *bp, *c;
	uint64_t seed;
	mm_kernel_fn *kernel;
} problem_t;

typedef struct job {
	const problem_t *p;
	size_t lo, hi; /* rows (fill), panels (pack) */
	size_t i0, j0; /* tile corner (multiply) */
} job_t;

/* Entry (i, j) of matrix `which` (0 = A, 1 = B): uniform in [-1, 1). */
static double entry(uint64_t seed, int which, size_t i, size_t j)
{
	uint64_t h = mix64(seed * 2 + (uint64_t)which);
	h = mix64(h ^ ((uint64_t)i << 32 | (uint64_t)j));
	return (double)(h >> 11) * 0x1.0p-52 - 1.0;
}

static void fill_job(void *arg)
{
	job_t *j = arg;
	const problem_t *p = j->p;
	for (size_t i = j->lo; i < j->hi; i++)
		for (size_t k = 0; k < p->n; k++) {
			p->a[i * p->np + k] = entry(p->seed, 0, i, k);
			p->b[i * p->np + k] = entry(p->seed, 1, i, k);
		}
}

static void pack_job(void *arg)
{
	job_t *j = arg;
	const problem_t *p = j->p;
	for (size_t q = j->lo; q < j->hi; q++)
		mm_pack_panel(p->b, p->np, p->np, q * MM_NR, p->bp + q * MM_NR * p->np);
}

static void tile_job(void *arg)
{
	job_t *j = arg;
	const problem_t *p = j->p;
	size_t np = p->np;
	size_t i1 = j->i0 + TILE_M < np ? j->i0 + TILE_M : np;
	size_t j1 = j->j0 + TILE_N < np ? j->j0 + TILE_N : np;
	for (size_t k0 = 0; k0 < np; k0 += BLOCK_K) {
		size_t kc = np - k0 < BLOCK_K ? np - k0 : BLOCK_K;
		for (size_t jj = j->j0; jj < j1; jj += MM_NR) {
			const double *bp = p->bp + jj * np + k0 * MM_NR;
			for (size_t ii = j->i0; ii < i1; ii += MM_MR)
				p->kernel(p->a + ii * np + k0, np, bp, p->c + ii * np + jj, np, kc);
		}
	}
}

/* Posts jobs[0 .. n-1] with fn in one group and waits for them. */
static int run_jobs(weft_rt *rt, weft_task *tasks, job_t *jobs, size_t n, weft_fn fn)
{
	weft_group g;
	weft_group_init(&g);
	int err = 0;
	for (size_t i = 0; i < n && !err; i++) {
		weft_task_init(&tasks[i], fn, &jobs[i]);
		err = cli_post(rt, &g, &tasks[i], fn, &jobs[i]);
	}
	weft_group_wait(&g);
	if (err)
		fprintf(stderr, "%s: cannot post a task: %s\n", prog, weft_strerror(err));
	return err;
}

/* Checks entry (i, j) of C; returns its error relative to the bound. */
static double check_entry(const problem_t *p, size_t i, size_t j)
{
	double sum = 0, abs_sum = 0;
	for (size_t k = 0; k < p->n; k++) {
		double t = p->a[i * p->np + k] * p->b[k * p->np + j];
		sum += t;
		abs_sum += fabs(t);
	}
	double bound = 2.0 * (double)p->n * DBL_EPSILON * abs_sum + DBL_MIN;
	return fabs(p->c[i * p->np + j] - sum) / bound;
}

/* ------------------------------------------------------------ --mpi */

#ifdef WEFT_HAVE_MPI
#include <weft/mpi.h>

/* The distributed multiply: C = A B with the rows of A and C, and the
 * rows of B, cut into one band per rank (multiples of 8 rows). Rank r
 * packs its band of B into panels once; then, in `size` steps, it
 * multiplies its band of A (the columns matching the band of B it holds)
 * into its band of C while the band of B it holds is sent to rank r-1 and
 * the next is received from rank r+1 (a ring): the tile tasks of a step
 * run on the workers while the calling thread drives the transfer with
 * weft_mpi_waitall, so communication overlaps computation. */
typedef struct dist {
	size_t n, np, size;
	size_t row0;   /* this rank's first row */
	double *a, *c; /* this rank's band of A and C: rows x np */
	uint64_t seed;
	mm_kernel_fn *kernel;
} dist_t;

typedef struct djob {
	const dist_t *d;
	const double *bp; /* packed band of B: panel q at bp + q * 8 * kb */
	size_t k0, kb;    /* its rows of B: [k0, k0 + kb) */
	size_t rows;      /* rows of this rank's band */
	size_t lo, hi;    /* fill: rows of the band; pack: panels */
	size_t i0, j0;    /* tile corner (local row, column) */
	double *out;      /* pack: destination; fill B: the band's rows */
} djob_t;

static void dist_fill_job(void *arg)
{
	djob_t *j = arg;
	const dist_t *d = j->d;
	for (size_t i = j->lo; i < j->hi; i++) {
		size_t gi = d->row0 + i;
		for (size_t k = 0; k < d->n && gi < d->n; k++) {
			d->a[i * d->np + k] = entry(d->seed, 0, gi, k);
			j->out[i * d->np + k] = entry(d->seed, 1, gi, k);
		}
	}
}

static void dist_pack_job(void *arg)
{
	djob_t *j = arg;
	for (size_t q = j->lo; q < j->hi; q++)
		mm_pack_panel(j->bp, j->d->np, j->kb, q * MM_NR, j->out + q * MM_NR * j->kb);
}

static void dist_tile_job(void *arg)
{
	djob_t *j = arg;
	const dist_t *d = j->d;
	size_t np = d->np;
	size_t i1 = j->i0 + TILE_M < j->rows ? j->i0 + TILE_M : j->rows;
	size_t j1 = j->j0 + TILE_N < np ? j->j0 + TILE_N : np;
	for (size_t k = 0; k < j->kb; k += BLOCK_K) {
		size_t kc = j->kb - k < BLOCK_K ? j->kb - k : BLOCK_K;
		for (size_t jj = j->j0; jj < j1; jj += MM_NR) {
			const double *bp = j->bp + jj * j->kb + k * MM_NR;
			for (size_t ii = j->i0; ii < i1; ii += MM_MR)
				d->kernel(d->a + ii * np + j->k0 + k, np, bp, d->c + ii * np + jj,
				          np, kc);
		}
	}
}

/* Posts jobs[0 .. n-1] with fn in group g (not waited for). */
static int post_jobs(weft_rt *rt, weft_group *g, weft_task *tasks, djob_t *jobs, size_t n,
                     weft_fn fn)
{
	for (size_t i = 0; i < n; i++) {
		weft_task_init(&tasks[i], fn, &jobs[i]);
		int err = cli_post(rt, g, &tasks[i], fn, &jobs[i]);
		if (err) {
			fprintf(stderr, "%s: cannot post a task: %s\n", prog, weft_strerror(err));
			return err;
		}
	}
	return 0;
}

#define MPI_TRY(call)                                   \
	do {                                            \
		if (weft_mpi_error((call), #call) != 0) \
			goto out;                       \
	} while (0)

static int mpi_main(int *argc, char ***argv, size_t n, uint64_t seed, uint64_t samples,
                    bool portable)
{
	weft_rt *rt;
	int err = weft_rt_create(&rt, NULL);
	if (err) {
		fprintf(stderr, "%s: cannot start the weft runtime: %s\n", prog,
		        weft_strerror(err));
		return 2;
	}
	int provided;
	if (weft_mpi_init(argc, argv, rt, &provided) != 0) {
		weft_rt_destroy(rt);
		return 2;
	}
	int rank = 0, isize = 1, status = 2;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &isize);
	size_t size = (size_t)isize, r = (size_t)rank;
	weft_config cfg;
	weft_rt_config(rt, &cfg);
	weft_mpi_check(rt, MPI_COMM_WORLD, NULL); /* warns when ranks run differently */
	const char *kname;
	dist_t d = {.n = n, .np = (n + 7) / 8 * 8, .size = size, .seed = seed};
	d.kernel = mm_kernel_pick(portable, &kname);
	size_t np = d.np, units = np / 8;
	size_t *bands = calloc(size + 1, sizeof(*bands));
	if (!bands) {
		fprintf(stderr, "%s: out of memory\n", prog);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	for (size_t k = 0; k <= size; k++)
		bands[k] = units * k / size * 8;
	size_t row0 = bands[r], rows = bands[r + 1] - bands[r], maxkb = 0;
	for (size_t k = 0; k < size; k++)
		maxkb = bands[k + 1] - bands[k] > maxkb ? bands[k + 1] - bands[k] : maxkb;
	d.row0 = row0;
	size_t tiles_m = (rows + TILE_M - 1) / TILE_M, tiles_n = (np + TILE_N - 1) / TILE_N;
	size_t ntiles = tiles_m * tiles_n, panels = np / MM_NR;
	size_t nbands = 8 * (size_t)cfg.workers < 64 ? 64 : 8 * (size_t)cfg.workers;
	size_t max_jobs = ntiles > nbands ? ntiles : nbands;
	size_t relems = (rows ? rows : 1) * np, belems = (maxkb ? maxkb : 1) * np;
	d.a = calloc(relems, sizeof(double));
	d.c = calloc(relems, sizeof(double));
	double *braw = calloc(relems, sizeof(double));
	double *buf[2] = {calloc(belems, sizeof(double)), calloc(belems, sizeof(double))};
	djob_t *jobs = calloc(max_jobs, sizeof(*jobs));
	weft_task *tasks = calloc(max_jobs, sizeof(*tasks));
	int bad = !d.a || !d.c || !braw || !buf[0] || !buf[1] || !jobs || !tasks, any_bad = 0;
	MPI_TRY(MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
	if (any_bad) {
		if (bad)
			fprintf(stderr, "%s: rank %d: out of memory for n = %zu\n", prog, rank, n);
		goto out;
	}
	if (rank == 0)
		printf("%s: n = %zu over %zu rank%s (bands of %zu..%zu rows), kernel %s, model %s, "
		       "%d worker%s per rank, %s\n",
		       prog, n, size, cli_plural((long long)size), bands[1] - bands[0],
		       bands[size] - bands[size - 1], kname, weft_model_name(cfg.model),
		       cfg.workers, cli_plural(cfg.workers),
		       provided >= MPI_THREAD_MULTIPLE     ? "MPI_THREAD_MULTIPLE"
		       : provided == MPI_THREAD_SERIALIZED ? "MPI_THREAD_SERIALIZED"
		                                           : "MPI below SERIALIZED");
	MPI_TRY(MPI_Barrier(MPI_COMM_WORLD));
	double t0 = cli_now_ms();

	/* 1. fill this rank's bands of A and B, 2. pack its band of B */
	weft_group g;
	weft_group_init(&g);
	size_t nb = nbands < rows ? nbands : rows;
	for (size_t i = 0; i < nb; i++)
		jobs[i] = (djob_t){
		        .d = &d, .lo = rows * i / nb, .hi = rows * (i + 1) / nb, .out = braw};
	if (post_jobs(rt, &g, tasks, jobs, nb, dist_fill_job) != 0)
		goto out;
	weft_group_wait(&g);
	nb = nbands < panels ? nbands : panels;
	for (size_t i = 0; i < nb && rows; i++)
		jobs[i] = (djob_t){.d = &d,
		                   .bp = braw,
		                   .kb = rows,
		                   .lo = panels * i / nb,
		                   .hi = panels * (i + 1) / nb,
		                   .out = buf[0]};
	if (rows && post_jobs(rt, &g, tasks, jobs, nb, dist_pack_job) != 0)
		goto out;
	weft_group_wait(&g);
	MPI_TRY(MPI_Barrier(MPI_COMM_WORLD));
	double t1 = cli_now_ms();
	int exposed = 0;

	/* 3. the ring: step t multiplies band (r + t) % size */
	size_t left = (r + size - 1) % size, right = (r + 1) % size;
	for (size_t t = 0; t < size; t++) {
		size_t k = (r + t) % size, next = (k + 1) % size;
		size_t kb = bands[k + 1] - bands[k], nkb = bands[next + 1] - bands[next];
		double *cur = buf[t % 2], *nxt = buf[(t + 1) % 2];
		MPI_Request reqs[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
		if (t + 1 < size) {
			MPI_TRY(MPI_Irecv(nxt, (int)(nkb * np), MPI_DOUBLE, (int)right, (int)t,
			                  MPI_COMM_WORLD, &reqs[0]));
			MPI_TRY(MPI_Isend(cur, (int)(kb * np), MPI_DOUBLE, (int)left, (int)t,
			                  MPI_COMM_WORLD, &reqs[1]));
		}
		size_t used = 0;
		for (size_t q = 0; q < ntiles && kb; q++)
			jobs[used++] = (djob_t){.d = &d,
			                        .bp = cur,
			                        .k0 = bands[k],
			                        .kb = kb,
			                        .rows = rows,
			                        .i0 = (q / tiles_n) * TILE_M,
			                        .j0 = (q % tiles_n) * TILE_N};
		if (post_jobs(rt, &g, tasks, jobs, used, dist_tile_job) != 0)
			goto out;
		/* This thread drives the transfer (MPI progresses only inside MPI
		 * calls) while the workers run the tiles. */
		if (weft_mpi_waitall(2, reqs, MPI_STATUSES_IGNORE) != 0)
			goto out;
		if (t + 1 < size && weft_group_pending(&g) == 0)
			exposed++; /* the tiles were done before the transfer */
		weft_group_wait(&g);
	}
	double t2 = cli_now_ms();

	/* 4. verify sampled entries of this rank's rows against the definition */
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
		double bound = 2.0 * (double)n * DBL_EPSILON * abs_sum + DBL_MIN;
		double e = fabs(d.c[(i - row0) * np + j] - sum) / bound;
		if (!(e <= worst))
			worst = e; /* NaN sticks */
		checked++;
	}
	double times[2] = {t1 - t0, t2 - t1}, tmax[2], gworst = 0;
	uint64_t gchecked = 0;
	int gexposed = 0;
	MPI_TRY(MPI_Reduce(&exposed, &gexposed, 1, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD));
	if (worst != worst)
		worst = INFINITY;
	MPI_TRY(MPI_Reduce(times, tmax, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD));
	MPI_TRY(MPI_Allreduce(&worst, &gworst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
	MPI_TRY(MPI_Reduce(&checked, &gchecked, 1, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD));
	if (rank == 0) {
		double flops = 2.0 * (double)n * (double)n * (double)n;
		printf("fill and pack: %.1f ms\n", tmax[0]);
		printf("multiply: %.1f ms in %zu ring steps, %.2f GFLOP/s (transfer outlasted the "
		       "tiles in %d of %zu steps)\n",
		       tmax[1], size, flops / (tmax[1] * 1e6), gexposed, size - 1);
		if (gworst <= 1.0)
			printf("verify: ok (%" PRIu64
			       " sampled entries, worst error %.3f of the rounding bound)\n",
			       gchecked, gworst);
		else
			fprintf(stderr, "%s: WRONG RESULT (error %.3g of the bound)\n", prog,
			        gworst);
	}
	status = gworst <= 1.0 ? 0 : 1;
out:
	weft_rt_destroy(rt);
	free(tasks);
	free(jobs);
	free(d.a);
	free(d.c);
	free(braw);
	free(buf[0]);
	free(buf[1]);
	free(bands);
	if (status == 2)
		MPI_Abort(MPI_COMM_WORLD, 2);
	weft_mpi_finalize();
	return status;
}
#endif

int main(int argc, char **argv)
{
	cli_check_stdout_at_exit(prog);
	unsigned long long n_arg = 1000, seed = 1, samples = 1000;
	bool check_all = false, portable = false, samples_set = false, mpi = false;
	const char *n_str = NULL;

	enum { OPT_VERSION = 256, OPT_SEED, OPT_SAMPLES, OPT_CHECK_ALL, OPT_PORTABLE, OPT_MPI };
	static const struct option longopts[] = {
	        {"help", no_argument, NULL, 'h'},
	        {"version", no_argument, NULL, OPT_VERSION},
	        {"seed", required_argument, NULL, OPT_SEED},
	        {"samples", required_argument, NULL, OPT_SAMPLES},
	        {"check-all", no_argument, NULL, OPT_CHECK_ALL},
	        {"portable", no_argument, NULL, OPT_PORTABLE},
	        {"mpi", no_argument, NULL, OPT_MPI},
	        {NULL, 0, NULL, 0},
	};
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		const char *v = optarg;
		switch (c) {
		case 'h':
			usage(stdout);
			return 0;
		case OPT_VERSION:
			return cli_print_version(prog);
		case OPT_SEED:
			if (!cli_parse_u64(v, 0, UINT64_MAX, &seed)) {
				fprintf(stderr, "%s: invalid seed '%s'\n", prog, v);
				return 2;
			}
			break;
		case OPT_SAMPLES:
			if (!cli_parse_u64(v, 0, 100000000, &samples)) {
				fprintf(stderr, "%s: invalid number of samples '%s'\n", prog, v);
				return 2;
			}
			samples_set = true;
			break;
		case OPT_CHECK_ALL:
			check_all = true;
			break;
		case OPT_PORTABLE:
			portable = true;
			break;
		case OPT_MPI:
			mpi = true;
			break;
		default:
			cli_option_error(prog, c, argv, longopts);
			usage(stderr);
			return 2;
		}
	}
	for (int i = optind; i < argc; i++) {
		if (n_str) {
			fprintf(stderr, "%s: unexpected argument '%s'\n", prog, argv[i]);
			return 2;
		}
		n_str = argv[i];
	}
	if (n_str && !cli_parse_u64(n_str, 1, MAX_N, &n_arg)) {
		fprintf(stderr, "%s: invalid size '%s' (want 1..%d)\n", prog, n_str, MAX_N);
		return 2;
	}
	if (check_all && samples_set) {
		fprintf(stderr, "%s: give --samples or --check-all, not both\n", prog);
		return 2;
	}
	if (mpi) {
		if (check_all) {
			fprintf(stderr,
			        "%s: --mpi checks sampled entries: it takes no --check-all\n",
			        prog);
			return 2;
		}
#ifdef WEFT_HAVE_MPI
		return mpi_main(&argc, &argv, (size_t)n_arg, seed, samples, portable);
#else
		fprintf(stderr,
		        "%s: --mpi is unavailable: weft was built without MPI "
		        "(Debian: libopenmpi-dev openmpi-bin, then configure again)\n",
		        prog);
		return 2;
#endif
	}
	if (n_arg <= 256 && !samples_set)
		check_all = true;

	problem_t p = {.n = (size_t)n_arg, .seed = seed};
	p.np = (p.n + 7) / 8 * 8;
	const char *kname;
	p.kernel = mm_kernel_pick(portable, &kname);

	weft_rt *rt;
	int err = weft_rt_create(&rt, NULL);
	if (err) {
		fprintf(stderr, "%s: cannot start the weft runtime: %s\n", prog,
		        weft_strerror(err));
		return 2;
	}
	weft_config cfg;
	weft_rt_config(rt, &cfg);

	size_t np = p.np, elems = np * np;
	size_t tiles_m = (np + TILE_M - 1) / TILE_M, tiles_n = (np + TILE_N - 1) / TILE_N;
	size_t ntiles = tiles_m * tiles_n, panels = np / MM_NR;
	size_t bands = 8 * (size_t)cfg.workers < 64 ? 64 : 8 * (size_t)cfg.workers;
	size_t max_jobs = ntiles > bands ? ntiles : bands;
	int status = 2;
	/* calloc: the padding must be zero; pages are touched first by tasks. */
	p.a = calloc(elems, sizeof(double));
	p.b = calloc(elems, sizeof(double));
	p.bp = calloc(elems, sizeof(double));
	p.c = calloc(elems, sizeof(double));
	job_t *jobs = calloc(max_jobs, sizeof(*jobs));
	weft_task *tasks = calloc(max_jobs, sizeof(*tasks));
	if (!p.a || !p.b || !p.bp || !p.c || !jobs || !tasks) {
		fprintf(stderr, "%s: out of memory for n = %zu\n", prog, p.n);
		goto out;
	}
	printf("%s: n = %zu, %zu tile%s of %dx%d, kernel %s, model %s, %d worker%s\n", prog, p.n,
	       ntiles, cli_plural((long long)ntiles), TILE_M, TILE_N, kname,
	       weft_model_name(cfg.model), cfg.workers, cli_plural(cfg.workers));

	/* 1. fill */
	double t0 = cli_now_ms();
	size_t nb = bands < p.n ? bands : p.n;
	for (size_t i = 0; i < nb; i++)
		jobs[i] = (job_t){.p = &p, .lo = p.n * i / nb, .hi = p.n * (i + 1) / nb};
	if (run_jobs(rt, tasks, jobs, nb, fill_job))
		goto out;
	double t1 = cli_now_ms();

	/* 2. pack B, 3. multiply */
	nb = bands < panels ? bands : panels;
	for (size_t i = 0; i < nb; i++)
		jobs[i] = (job_t){.p = &p, .lo = panels * i / nb, .hi = panels * (i + 1) / nb};
	if (run_jobs(rt, tasks, jobs, nb, pack_job))
		goto out;
	double t2 = cli_now_ms();
	for (size_t t = 0; t < ntiles; t++)
		jobs[t] = (job_t){
		        .p = &p, .i0 = (t / tiles_n) * TILE_M, .j0 = (t % tiles_n) * TILE_N};
	if (run_jobs(rt, tasks, jobs, ntiles, tile_job))
		goto out;
	double t3 = cli_now_ms();
	double flops = 2.0 * (double)p.n * (double)p.n * (double)p.n;
	printf("fill: %.1f ms\n", t1 - t0);
	printf("multiply: %.1f ms (pack B %.1f ms, tiles %.1f ms), %.2f GFLOP/s\n", t3 - t1,
	       t2 - t1, t3 - t2, flops / ((t3 - t1) * 1e6));

	/* 4. verify */
	double worst = 0;
	size_t checked = 0, wi = 0, wj = 0;
	if (check_all) {
		for (size_t i = 0; i < p.n; i++)
			for (size_t j = 0; j < p.n; j++, checked++) {
				double e = check_entry(&p, i, j);
				if (e > worst) {
					worst = e;
					wi = i;
					wj = j;
				}
			}
	} else {
		for (uint64_t s = 0; s < samples; s++, checked++) {
			uint64_t h = mix64(seed ^ mix64(s + 12345));
			size_t i = (size_t)(h % p.n), j = (size_t)((h >> 32) % p.n);
			double e = check_entry(&p, i, j);
			if (e > worst) {
				worst = e;
				wi = i;
				wj = j;
			}
		}
	}
	if (!(worst <= 1.0)) { /* NaN too */
		fprintf(stderr, "%s: WRONG RESULT at C[%zu][%zu] = %g (error %.3g of the bound)\n",
		        prog, wi, wj, p.c[wi * np + wj], worst);
		status = 1;
		goto out;
	}
	printf("verify: ok (%s%zu%s entries, worst error %.3f of the rounding bound)\n",
	       check_all ? "all " : "", checked, check_all ? "" : " sampled", worst);
	status = 0;
out:
	weft_rt_destroy(rt);
	free(tasks);
	free(jobs);
	free(p.a);
	free(p.b);
	free(p.bp);
	free(p.c);
	return status;
}
