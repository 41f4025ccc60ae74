/* weft-psort: the seed's parallel sort (seed 000) with the N-way split and
 * merge its report proposes, written once on weft's native API.
 *
 *   weft-psort [--parts K] [--seed S] [--no-compare] [--print] [N]
 *   weft-psort [--parts K] --file FILE [--output OUT] ...
 *   mpirun -n R weft-psort --mpi [--parts K] [--seed S] [N]
 *
 * Sorts N 32-bit ints (random from the seed, or read from FILE) in four
 * phases, each a set of tasks waited for as a group:
 *
 *   1. generate (or, for FILE, checksum): a task per slice;
 *   2. sort: the array is split into K parts, each sorted by one task
 *      with weft_parallel_sort (weft/algo.h: the library's radix sort,
 *      which splits its part's first pass and its buckets into tasks of
 *      their own, so a part a busy worker holds is helped by idle ones),
 *      in its own slice of a scratch array;
 *   3. merge: ceil(log2 K) rounds; each round merges neighbouring runs two
 *      by two, and every pair's output is cut into pieces of about the same
 *      size at merge-path split points (psort_corank), a task per piece, so
 *      the last rounds are as parallel as the first (no serial tail). Rounds
 *      alternate between the array and the scratch array;
 *   4. verify: a task per slice checks order (across slice edges too) and
 *      adds up a multiset checksum, compared with the one taken before.
 *
 * K defaults to the worker count rounded up to a power of two, at least 2,
 * so 1 and 2 workers run exactly the same tasks (the bar compares them). With --compare (the default) the same tasks are then run
 * inline on the calling thread, and qsort on a copy, and the speedups
 * printed. Tasks write disjoint slices; nothing is shared on the hot path.
 *
 * With --mpi (built when weft-mpi is, docs/mpi.md) the N ints are spread
 * over the MPI ranks: mpi_main below sorts each rank's share with the same
 * phases, exchanges by sampled splitters and merges what it received.
 *
 * Exit status: 0 sorted and verified, 1 verification failed, 2 usage, input
 * or start-up error (with the file and line of bad input). */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <weft/weft.h>

#include "../common/cli.h"
#include "kernels.h"

#define MAX_N     1000000000ull
#define MAX_PARTS 4096
#define SLICE_MIN (1u << 16) /* elements per generate / verify / merge task, at least */

static const char *prog = "weft-psort";

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: %s [options] [N]\n"
	        "Sorts N 32-bit ints (default 1000000) with weft tasks: K parts radix-sorted\n"
	        "as tasks, then merged two by two in rounds, each merge cut into tasks at\n"
	        "merge-path split points; verifies order and contents, prints the times.\n"
	        "  --parts K      number of parts sorted as tasks (1..%d; default: the\n"
	        "                 workers rounded up to a power of two, at least 2)\n"
	        "  --seed S       seed of the random ints (default 1)\n"
	        "  --file FILE    sort the ints in FILE instead (decimal, separated by\n"
	        "                 white space; '-' for stdin)\n"
	        "  --output OUT   write the sorted ints to OUT, one per line ('-': stdout)\n"
	        "  --compare      also time the same tasks inline on one thread and qsort\n"
	        "                 (the default)\n"
	        "  --no-compare   do not\n"
	        "  --print        print the array before and after, the seed's way\n"
	        "  --mpi          sort across MPI ranks (run under mpirun): each rank\n"
	        "                 generates its share of the N ints, sorts it with tasks,\n"
	        "                 exchanges by sampled splitters (MPI_Alltoallv) and merges;\n"
	        "                 order and checksum are verified across the ranks\n"
	        "  -h, --help     show this help\n"
	        "  --version      print the version and exit\n"
	        "OUT is opened (created or emptied) before the work starts: an unwritable\n"
	        "path fails at once. Options take their value as --opt VALUE or --opt=VALUE.\n"
	        "WEFT_MODEL, WEFT_WORKERS and WEFT_POLICY choose how the tasks run.\n"
	        "Exit status: 0 sorted, 1 verification failed, 2 usage or input error.\n",
	        prog, MAX_PARTS);
}

/* ------------------------------------------------------------ task runner */

/* Runs jobs as tasks of rt in a group, or, with rt NULL, inline one after
 * the other (the "same tasks on one thread" baseline). */
typedef struct runner {
	weft_rt *rt;
	weft_group g;
	weft_task *tasks;
	size_t used, cap;
	int err;
} runner_t;

static void run(runner_t *r, weft_fn fn, void *arg)
{
	if (!r->rt) {
		fn(arg);
		return;
	}
	if (r->err)
		return;
	if (r->used == r->cap) {
		r->err = WEFT_ENOMEM;
		return;
	}
	weft_task *t = &r->tasks[r->used++];
	weft_task_init(t, fn, arg);
	int err = cli_post(r->rt, &r->g, t, fn, arg);
	if (err)
		r->err = err;
}

static int finish(runner_t *r)
{
	if (r->rt)
		weft_group_wait(&r->g);
	r->used = 0;
	if (r->err) {
		fprintf(stderr, "%s: cannot post a task: %s\n", prog, weft_strerror(r->err));
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------ jobs */

typedef struct job {
	int32_t *a, *b, *out; /* per kind */
	size_t lo, hi;        /* slice [lo, hi) of the array (generate, verify, sort) */
	size_t m, n;          /* merge: run lengths */
	size_t d0, d1;        /* merge: output range of this piece */
	size_t base;          /* generate: global index of a[0] (--mpi: the rank's offset) */
	uint64_t seed;
	uint64_t sum;     /* checksum of the slice */
	bool unsorted;    /* verify: found a pair out of order */
	size_t first_bad; /* its index */
} job_t;

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void generate_job(void *arg)
{
	job_t *j = arg;
	uint64_t sum = 0;
	for (size_t i = j->lo; i < j->hi; i++) {
		int32_t v = (int32_t)(uint32_t)(mix64(j->seed +
		                                      0x9e3779b97f4a7c15ull * (j->base + i + 1)) >>
		                                32);
		j->a[i] = v;
		sum += psort_hash(v);
	}
	j->sum = sum;
}

static void checksum_job(void *arg)
{
	job_t *j = arg;
	uint64_t sum = 0;
	for (size_t i = j->lo; i < j->hi; i++)
		sum += psort_hash(j->a[i]);
	j->sum = sum;
}

static void verify_job(void *arg)
{
	job_t *j = arg;
	uint64_t sum = 0;
	j->unsorted = false;
	for (size_t i = j->lo; i < j->hi; i++) {
		sum += psort_hash(j->a[i]);
		if (i > 0 && j->a[i - 1] > j->a[i] && !j->unsorted) {
			j->unsorted = true;
			j->first_bad = i;
		}
	}
	j->sum = sum;
}

/* b is the part's own scratch (weft_parallel_sort_scratch_size bytes);
 * rt NULL: the runtime of the task, or, for the inline baseline (no task),
 * this thread alone. It cannot fail with its scratch given. */
static void sort_job(void *arg)
{
	job_t *j = arg;
	weft_parallel_sort(NULL, j->a + j->lo, j->hi - j->lo, WEFT_TYPE_I32, j->b);
}

/* A piece of a merge: outputs d0 .. d1 of merging a[0..m) and b[0..n). */
static void merge_job(void *arg)
{
	job_t *j = arg;
	size_t i0 = psort_corank(j->a, j->m, j->b, j->n, j->d0);
	size_t i1 = psort_corank(j->a, j->m, j->b, j->n, j->d1);
	psort_merge(j->a + i0, i1 - i0, j->b + (j->d0 - i0), (j->d1 - i1) - (j->d0 - i0),
	            j->out + j->d0);
}

/* ------------------------------------------------------------ the sort */

typedef struct sorter {
	size_t n, parts, pieces; /* pieces: merge tasks per round, about */
	job_t *jobs;             /* enough for any phase */
	size_t *bounds;          /* run boundaries, parts + 1 */
	double t_parts, t_merge;
	int rounds;
} sorter_t;

static int32_t *merge_runs(sorter_t *s, runner_t *r, int32_t *src, int32_t *dst, size_t k);

/* The bytes of scratch psort needs for n ints in k parts: each part's
 * weft_parallel_sort scratch, one after the other (at least n ints: the
 * merge rounds use it as a plain array). */
static size_t scratch_bytes(size_t n, size_t k)
{
	size_t sum = 0;
	for (size_t p = 0; p < k; p++)
		sum += weft_parallel_sort_scratch_size(n / k * (p + 1) + n % k * (p + 1) / k -
		                                               (n / k * p + n % k * p / k),
		                                       sizeof(int32_t));
	return sum > n * sizeof(int32_t) ? sum : n * sizeof(int32_t);
}

/* Sorts a[0..n) using tmp (scratch_bytes(n, parts) bytes); returns the
 * array that holds the result (a or tmp), or NULL if a task could not be
 * posted. */
static int32_t *psort(sorter_t *s, runner_t *r, int32_t *a, int32_t *tmp)
{
	size_t n = s->n, k = s->parts;
	double t0 = cli_now_ms();
	for (size_t p = 0; p <= k; p++)
		s->bounds[p] = n / k * p + n % k * p / k;
	size_t off = 0;
	for (size_t p = 0; p < k; p++) {
		size_t len = s->bounds[p + 1] - s->bounds[p];
		s->jobs[p] = (job_t){.a = a,
		                     .b = (int32_t *)(void *)((char *)tmp + off),
		                     .lo = s->bounds[p],
		                     .hi = s->bounds[p + 1]};
		off += weft_parallel_sort_scratch_size(len, sizeof(int32_t));
		run(r, sort_job, &s->jobs[p]);
	}
	if (finish(r) != 0)
		return NULL;
	double t1 = cli_now_ms();
	int32_t *res = merge_runs(s, r, a, tmp, k);
	s->t_parts = t1 - t0;
	s->t_merge = cli_now_ms() - t1;
	return res;
}

/* Merges the k sorted runs [bounds[i], bounds[i+1]) of src[0..n) in rounds,
 * using dst as scratch; returns the array that holds the result (src or
 * dst), or NULL if a task could not be posted. */
static int32_t *merge_runs(sorter_t *s, runner_t *r, int32_t *src, int32_t *dst, size_t k)
{
	size_t n = s->n;
	size_t runs = k;
	s->rounds = 0;
	while (runs > 1) {
		size_t piece = n / s->pieces + 1;
		if (piece < SLICE_MIN)
			piece = SLICE_MIN;
		size_t used = 0;
		for (size_t p = 0; p + 1 < runs; p += 2) {
			size_t lo = s->bounds[p], mid = s->bounds[p + 1], hi = s->bounds[p + 2];
			size_t len = hi - lo, cuts = (len + piece - 1) / piece;
			for (size_t c = 0; c < cuts; c++)
				s->jobs[used++] = (job_t){
				        .a = src + lo,
				        .b = src + mid,
				        .out = dst + lo,
				        .m = mid - lo,
				        .n = hi - mid,
				        .d0 = len / cuts * c + len % cuts * c / cuts,
				        .d1 = len / cuts * (c + 1) + len % cuts * (c + 1) / cuts};
		}
		if (runs % 2) {
			/* The odd run out is "merged" with nothing: copied across. */
			size_t lo = s->bounds[runs - 1], hi = s->bounds[runs];
			size_t len = hi - lo, cuts = (len + piece - 1) / piece;
			for (size_t c = 0; c < cuts; c++)
				s->jobs[used++] = (job_t){
				        .a = src + lo,
				        .b = src + hi,
				        .out = dst + lo,
				        .m = len,
				        .n = 0,
				        .d0 = len / cuts * c + len % cuts * c / cuts,
				        .d1 = len / cuts * (c + 1) + len % cuts * (c + 1) / cuts};
		}
		for (size_t i = 0; i < used; i++)
			run(r, merge_job, &s->jobs[i]);
		if (finish(r) != 0)
			return NULL;
		size_t nr = 0;
		for (size_t p = 0; p < runs; p += 2)
			s->bounds[nr++] = s->bounds[p];
		s->bounds[nr] = n;
		runs = nr;
		int32_t *t = src;
		src = dst;
		dst = t;
		s->rounds++;
	}
	return src;
}

/* Slices of about equal size for generate / verify, at most max_jobs. */
static size_t slices(size_t n, size_t want)
{
	size_t k = n / SLICE_MIN;
	if (k > want)
		k = want;
	return k ? k : 1;
}

/* ------------------------------------------------------------ input, output */

static int read_file(const char *name, int32_t **out, size_t *count)
{
	FILE *f = strcmp(name, "-") == 0 ? stdin : fopen(name, "r");
	if (!f) {
		fprintf(stderr, "%s: %s: %s\n", prog, name, strerror(errno));
		return -1;
	}
	size_t cap = 1024, n = 0;
	int32_t *v = malloc(cap * sizeof(*v));
	unsigned long long line = 1, col = 0;
	int ch, status = 0;
	if (!v)
		goto oom;
	ch = getc(f);
	col = 1;
	for (;;) {
		while (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n') {
			if (ch == '\n') {
				line++;
				col = 0;
			}
			ch = getc(f);
			col++;
		}
		if (ch == EOF)
			break;
		unsigned long long start = col;
		bool neg = false;
		if (ch == '-' || ch == '+') {
			neg = ch == '-';
			ch = getc(f);
			col++;
		}
		if (ch < '0' || ch > '9') {
			if (ch == EOF)
				fprintf(stderr, "%s: %s:%llu:%llu: a sign without a number\n", prog,
				        name, line, col);
			else if (ch >= 0x21 && ch < 0x7f)
				fprintf(stderr,
				        "%s: %s:%llu:%llu: unexpected '%c' (want an integer)\n",
				        prog, name, line, col, ch);
			else
				fprintf(stderr,
				        "%s: %s:%llu:%llu: unexpected byte 0x%02x (want an "
				        "integer)\n",
				        prog, name, line, col, (unsigned)ch);
			status = -1;
			goto out;
		}
		long long val = 0;
		bool range = false;
		while (ch >= '0' && ch <= '9') {
			if (val <= 3000000000LL)
				val = val * 10 + (ch - '0');
			ch = getc(f);
			col++;
		}
		if (neg)
			val = -val;
		if (val < INT32_MIN || val > INT32_MAX)
			range = true;
		if (ch != EOF && ch != ' ' && ch != '\t' && ch != '\r' && ch != '\n') {
			fprintf(stderr, "%s: %s:%llu:%llu: unexpected character after a number\n",
			        prog, name, line, col);
			status = -1;
			goto out;
		}
		if (range) {
			fprintf(stderr, "%s: %s:%llu:%llu: out of range for a 32-bit int\n", prog,
			        name, line, start);
			status = -1;
			goto out;
		}
		if (n == MAX_N) {
			fprintf(stderr, "%s: %s:%llu: more than %llu numbers\n", prog, name, line,
			        MAX_N);
			status = -1;
			goto out;
		}
		if (n == cap) {
			int32_t *nv = realloc(v, 2 * cap * sizeof(*v));
			if (!nv)
				goto oom;
			v = nv;
			cap *= 2;
		}
		v[n++] = (int32_t)val;
	}
	if (ferror(f)) {
		fprintf(stderr, "%s: %s: read error\n", prog, name);
		status = -1;
	} else if (n == 0) {
		fprintf(stderr, "%s: %s:%llu: no numbers\n", prog, name, line);
		status = -1;
	}
	goto out;
oom:
	fprintf(stderr, "%s: %s: out of memory\n", prog, name);
	status = -1;
out:
	if (f != stdin)
		fclose(f);
	if (status != 0) {
		free(v);
		return -1;
	}
	*out = v;
	*count = n;
	return 0;
}

/* Writes the ints to f (opened by cli_open_output before the work) and
 * closes it (or flushes stdout). */
static int write_file(FILE *f, const char *name, const int32_t *a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%" PRId32 "\n", a[i]);
	int bad = ferror(f) | (f == stdout ? fflush(f) : fclose(f));
	if (bad && f == stdout)
		cli_stdout_error(prog, name);
	else if (bad)
		fprintf(stderr, "%s: cannot write %s: %s\n", prog, name, strerror(errno));
	return bad ? -1 : 0;
}

static void print_array(const int32_t *a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		printf("%" PRId32 " ", a[i]);
	printf("\n");
}

static int cmp_int(const void *x, const void *y)
{
	int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
	return (a > b) - (a < b);
}

/* ------------------------------------------------------------ --mpi */

#ifdef WEFT_HAVE_MPI
#include <weft/mpi.h>

#define SAMPLES_PER_RANK 64 /* splitter candidates each rank contributes, per rank */

/* First index of sorted a[0..n) whose value is >= v. */
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

static int cmp_int(const void *x, const void *y);

#define MPI_TRY(call)                                   \
	do {                                            \
		if (weft_mpi_error((call), #call) != 0) \
			goto out;                       \
	} while (0)

/* The distributed sort: each rank generates its share of the same N ints
 * (element i is the one a single process would generate at i), sorts it
 * with the tasks above, picks size-1 splitters from an all-gathered regular
 * sample, exchanges with MPI_Ialltoallv (waited for with weft_mpi_wait),
 * merges the size runs it received with the same merge rounds, and verifies
 * local order, the order across rank boundaries and a checksum summed over
 * the ranks. Rank 0 prints; times are the slowest rank's. */
static int mpi_main(int *argc, char ***argv, size_t n, size_t parts_arg, uint64_t seed)
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
	int rank = 0, size = 1, status = 2;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	weft_config cfg;
	weft_rt_config(rt, &cfg);
	weft_mpi_check(rt, MPI_COMM_WORLD, NULL); /* warns when ranks run differently */

	size_t lo =
	        n / (size_t)size * (size_t)rank + n % (size_t)size * (size_t)rank / (size_t)size;
	size_t hi = n / (size_t)size * (size_t)(rank + 1) +
	            n % (size_t)size * (size_t)(rank + 1) / (size_t)size;
	size_t nl = hi - lo, parts = parts_arg;
	if (parts == 0)
		for (parts = 2; parts < (size_t)cfg.workers && parts < MAX_PARTS;)
			parts *= 2;
	if (parts > nl)
		parts = nl ? nl : 1;
	size_t runs_max = parts > (size_t)size ? parts : (size_t)size;
	sorter_t s = {.n = nl, .parts = parts};
	s.pieces = 4 * (size_t)cfg.workers < 16 ? 16 : 4 * (size_t)cfg.workers;
	size_t max_jobs = s.pieces + 2 * runs_max + 64 < 256 ? 256 : s.pieces + 2 * runs_max + 64;
	s.jobs = calloc(max_jobs, sizeof(*s.jobs));
	s.bounds = calloc(runs_max + 1, sizeof(*s.bounds));
	runner_t r = {.rt = rt, .cap = max_jobs};
	r.tasks = calloc(max_jobs, sizeof(*r.tasks));
	weft_group_init(&r.g);
	int32_t *a = malloc((nl ? nl : 1) * sizeof(*a)),
	        *tmp = malloc(scratch_bytes(nl, parts) + sizeof(*tmp));
	int32_t *recv = NULL, *recv_tmp = NULL, *samples = NULL, *all_samples = NULL;
	int *scount = calloc((size_t)size, sizeof(int)),
	    *sdispl = calloc((size_t)size, sizeof(int));
	int *rcount = calloc((size_t)size, sizeof(int)),
	    *rdispl = calloc((size_t)size, sizeof(int));
	int bad = !s.jobs || !s.bounds || !r.tasks || !a || !tmp || !scount || !sdispl || !rcount ||
	          !rdispl;
	int any_bad = 0;
	MPI_TRY(MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
	if (any_bad) {
		if (bad)
			fprintf(stderr, "%s: rank %d: out of memory for %zu ints\n", prog, rank,
			        nl);
		goto out;
	}
	if (rank == 0)
		printf("%s: %zu int%s over %d rank%s, %zu part%s per rank, model %s, %d worker%s "
		       "per "
		       "rank, %s\n",
		       prog, n, cli_plural((long long)n), size, cli_plural(size), parts,
		       cli_plural((long long)parts), weft_model_name(cfg.model), cfg.workers,
		       cli_plural(cfg.workers),
		       provided >= MPI_THREAD_MULTIPLE     ? "MPI_THREAD_MULTIPLE"
		       : provided == MPI_THREAD_SERIALIZED ? "MPI_THREAD_SERIALIZED"
		                                           : "MPI below SERIALIZED");

	/* 1. generate this rank's share */
	MPI_TRY(MPI_Barrier(MPI_COMM_WORLD));
	double t0 = cli_now_ms();
	size_t ns = slices(nl, 4 * (size_t)cfg.workers < 64 ? 64 : 4 * (size_t)cfg.workers);
	for (size_t i = 0; i < ns; i++) {
		s.jobs[i] = (job_t){.a = a,
		                    .lo = nl / ns * i + nl % ns * i / ns,
		                    .hi = nl / ns * (i + 1) + nl % ns * (i + 1) / ns,
		                    .base = lo,
		                    .seed = seed};
		run(&r, generate_job, &s.jobs[i]);
	}
	if (finish(&r) != 0)
		goto out;
	uint64_t before = 0;
	for (size_t i = 0; i < ns; i++)
		before += s.jobs[i].sum;
	double t1 = cli_now_ms();

	/* 2. sort locally */
	int32_t *sorted = nl ? psort(&s, &r, a, tmp) : a;
	if (!sorted)
		goto out;
	double t2 = cli_now_ms();
	int32_t *result = sorted;
	size_t nr = nl;
	double t3 = t2, t4 = t2;
	if (size == 1) /* one rank holds every int: nothing to exchange or merge */
		goto verify;

	/* 3. splitters from a regular sample of every rank's sorted share */
	int per = SAMPLES_PER_RANK * size;
	samples = malloc((size_t)per * sizeof(*samples));
	all_samples = malloc((size_t)per * (size_t)size * sizeof(*all_samples));
	if (!samples || !all_samples) {
		fprintf(stderr, "%s: rank %d: out of memory for the samples\n", prog, rank);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	for (int i = 0; i < per; i++) /* an empty share samples INT32_MAX: harmless */
		samples[i] = nl ? sorted[(size_t)i * nl / (size_t)per] : INT32_MAX;
	MPI_TRY(MPI_Allgather(samples, per, MPI_INT32_T, all_samples, per, MPI_INT32_T,
	                      MPI_COMM_WORLD));
	qsort(all_samples, (size_t)per * (size_t)size, sizeof(int32_t), cmp_int);
	/* Rank j receives the values in [splitter j-1, splitter j). */
	size_t prev = 0;
	for (int j = 0; j < size; j++) {
		size_t cut = j + 1 < size ? lower_bound(sorted, nl,
		                                        all_samples[(size_t)(j + 1) * (size_t)per])
		                          : nl;
		if (cut < prev)
			cut = prev;
		scount[j] = (int)(cut - prev);
		sdispl[j] = (int)prev;
		prev = cut;
	}
	MPI_TRY(MPI_Alltoall(scount, 1, MPI_INT, rcount, 1, MPI_INT, MPI_COMM_WORLD));
	nr = 0;
	for (int j = 0; j < size; j++) {
		if (nr + (size_t)rcount[j] > INT32_MAX) {
			fprintf(stderr, "%s: rank %d would receive more than 2^31 ints\n", prog,
			        rank);
			MPI_Abort(MPI_COMM_WORLD, 2);
		}
		rdispl[j] = (int)nr;
		nr += (size_t)rcount[j];
	}
	recv = malloc((nr ? nr : 1) * sizeof(*recv));
	recv_tmp = malloc((nr ? nr : 1) * sizeof(*recv_tmp));
	if (!recv || !recv_tmp) {
		fprintf(stderr, "%s: rank %d: out of memory for %zu received ints\n", prog, rank,
		        nr);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	MPI_Request req;
	MPI_TRY(MPI_Ialltoallv(sorted, scount, sdispl, MPI_INT32_T, recv, rcount, rdispl,
	                       MPI_INT32_T, MPI_COMM_WORLD, &req));
	if (weft_mpi_wait(&req, MPI_STATUS_IGNORE) != 0)
		goto out;
	t3 = cli_now_ms();

	/* 4. merge the size runs received */
	s.n = nr;
	for (int j = 0; j < size; j++)
		s.bounds[j] = (size_t)rdispl[j];
	s.bounds[size] = nr;
	result = merge_runs(&s, &r, recv, recv_tmp, (size_t)size);
	if (!result)
		goto out;
	t4 = cli_now_ms();

verify:
	/* 5. verify: local order and checksum, then across ranks */
	size_t nv = slices(nr, 4 * (size_t)cfg.workers < 64 ? 64 : 4 * (size_t)cfg.workers);
	for (size_t i = 0; i < nv && nr; i++) {
		s.jobs[i] = (job_t){.a = result,
		                    .lo = nr / nv * i + nr % nv * i / nv,
		                    .hi = nr / nv * (i + 1) + nr % nv * (i + 1) / nv};
		run(&r, verify_job, &s.jobs[i]);
	}
	if (finish(&r) != 0)
		goto out;
	uint64_t after = 0;
	int local_ok = 1;
	for (size_t i = 0; i < nv && nr; i++) {
		after += s.jobs[i].sum;
		if (s.jobs[i].unsorted && local_ok) {
			fprintf(stderr, "%s: rank %d: NOT SORTED at local index %zu\n", prog, rank,
			        s.jobs[i].first_bad);
			local_ok = 0;
		}
	}
	/* edges: (count, first, last) of every rank */
	int64_t edge[3] = {(int64_t)nr, nr ? result[0] : 0, nr ? result[nr - 1] : 0};
	int64_t *edges = malloc(3 * (size_t)size * sizeof(*edges));
	if (!edges)
		MPI_Abort(MPI_COMM_WORLD, 2);
	MPI_TRY(MPI_Allgather(edge, 3, MPI_INT64_T, edges, 3, MPI_INT64_T, MPI_COMM_WORLD));
	uint64_t sums[2] = {before, after}, total_sums[2];
	MPI_TRY(MPI_Allreduce(sums, total_sums, 2, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD));
	int all_ok = 0;
	MPI_TRY(MPI_Allreduce(&local_ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
	double times[4] = {t1 - t0, t2 - t1, t3 - t2, t4 - t3}, tmax[4];
	MPI_TRY(MPI_Reduce(times, tmax, 4, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD));
	size_t min_n = SIZE_MAX, max_n = 0;
	if (rank == 0) {
		int64_t last = INT64_MIN, count = 0;
		for (int j = 0; j < size; j++) {
			int64_t c = edges[3 * j], first = edges[3 * j + 1], l = edges[3 * j + 2];
			count += c;
			min_n = (size_t)c < min_n ? (size_t)c : min_n;
			max_n = (size_t)c > max_n ? (size_t)c : max_n;
			if (!c)
				continue;
			if (first < last) {
				fprintf(stderr,
				        "%s: NOT SORTED across ranks %d and the one before\n", prog,
				        j);
				all_ok = 0;
			}
			last = l;
		}
		if ((size_t)count != n) {
			fprintf(stderr, "%s: %" PRId64 " ints after the exchange, not %zu\n", prog,
			        count, n);
			all_ok = 0;
		}
		if (total_sums[0] != total_sums[1]) {
			fprintf(stderr,
			        "%s: the ranks do not hold the same ints (checksum %016" PRIx64
			        " before, %016" PRIx64 " after)\n",
			        prog, total_sums[0], total_sums[1]);
			all_ok = 0;
		}
	}
	free(edges);
	MPI_TRY(MPI_Bcast(&all_ok, 1, MPI_INT, 0, MPI_COMM_WORLD));
	if (rank == 0) {
		printf("generate: %.1f ms\n", tmax[0]);
		printf("sort: %.1f ms (local sort %.1f ms, splitters and exchange %.1f ms, merge "
		       "%.1f ms)\n",
		       tmax[1] + tmax[2] + tmax[3], tmax[1], tmax[2], tmax[3]);
		if (all_ok)
			printf("verify: ok (sorted across %d rank%s, %zu..%zu ints per rank, "
			       "checksum "
			       "%016" PRIx64 ")\n",
			       size, cli_plural(size), min_n, max_n, total_sums[1]);
	}
	status = all_ok ? 0 : 1;
out:
	weft_rt_destroy(rt);
	free(r.tasks);
	free(s.jobs);
	free(s.bounds);
	free(a);
	free(tmp);
	free(recv);
	free(recv_tmp);
	free(samples);
	free(all_samples);
	free(scount);
	free(sdispl);
	free(rcount);
	free(rdispl);
	if (status == 2)
		MPI_Abort(MPI_COMM_WORLD, 2);
	weft_mpi_finalize();
	return status;
}
#endif

/* ------------------------------------------------------------ main */

int main(int argc, char **argv)
{
	cli_check_stdout_at_exit(prog);
	unsigned long long n_arg = 1000000, parts = 0, seed = 1;
	const char *file = NULL, *output = NULL, *n_str = NULL;
	bool compare = true, print = false, mpi = false, compare_set = false;

	enum {
		OPT_VERSION = 256,
		OPT_PARTS,
		OPT_SEED,
		OPT_FILE,
		OPT_OUTPUT,
		OPT_COMPARE,
		OPT_NO_COMPARE,
		OPT_PRINT,
		OPT_MPI
	};
	static const struct option longopts[] = {
	        {"help", no_argument, NULL, 'h'},
	        {"version", no_argument, NULL, OPT_VERSION},
	        {"parts", required_argument, NULL, OPT_PARTS},
	        {"seed", required_argument, NULL, OPT_SEED},
	        {"file", required_argument, NULL, OPT_FILE},
	        {"output", required_argument, NULL, OPT_OUTPUT},
	        {"compare", no_argument, NULL, OPT_COMPARE},
	        {"no-compare", no_argument, NULL, OPT_NO_COMPARE},
	        {"print", no_argument, NULL, OPT_PRINT},
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
		case OPT_PARTS:
			if (!cli_parse_u64(v, 1, MAX_PARTS, &parts)) {
				fprintf(stderr, "%s: invalid number of parts '%s' (want 1..%d)\n",
				        prog, v, MAX_PARTS);
				return 2;
			}
			break;
		case OPT_SEED:
			if (!cli_parse_u64(v, 1, UINT64_MAX, &seed)) {
				fprintf(stderr, "%s: invalid seed '%s'\n", prog, v);
				return 2;
			}
			break;
		case OPT_FILE:
			file = v;
			break;
		case OPT_OUTPUT:
			output = v;
			break;
		case OPT_COMPARE:
			compare = true;
			compare_set = true;
			break;
		case OPT_NO_COMPARE:
			compare = false;
			break;
		case OPT_PRINT:
			print = true;
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
	if (n_str && file) {
		fprintf(stderr, "%s: give N or --file, not both\n", prog);
		return 2;
	}
	if (n_str && !cli_parse_u64(n_str, 1, MAX_N, &n_arg)) {
		fprintf(stderr, "%s: invalid number of ints '%s' (want 1..%llu)\n", prog, n_str,
		        MAX_N);
		return 2;
	}

	if (mpi) {
		if (file || output || print || compare_set) {
			fprintf(stderr,
			        "%s: --mpi generates the ints on every rank: it takes no "
			        "--file, --output, --print or --compare\n",
			        prog);
			return 2;
		}
#ifdef WEFT_HAVE_MPI
		return mpi_main(&argc, &argv, (size_t)n_arg, (size_t)parts, seed);
#else
		fprintf(stderr,
		        "%s: --mpi is unavailable: weft was built without MPI "
		        "(Debian: libopenmpi-dev openmpi-bin, then configure again)\n",
		        prog);
		return 2;
#endif
	}

	int32_t *a = NULL, *tmp = NULL, *orig = NULL;
	size_t n = (size_t)n_arg;
	FILE *out_fp = NULL;
	if (output && !(out_fp = cli_open_output(prog, "--output", output)))
		return 2;
	if (file && read_file(file, &a, &n) != 0) {
		if (out_fp && out_fp != stdout)
			fclose(out_fp);
		return 2;
	}
	weft_rt *rt;
	int err = weft_rt_create(&rt, NULL);
	if (err) {
		fprintf(stderr, "%s: cannot start the weft runtime: %s\n", prog,
		        weft_strerror(err));
		free(a);
		if (out_fp && out_fp != stdout)
			fclose(out_fp);
		return 2;
	}
	weft_config cfg;
	weft_rt_config(rt, &cfg);
	if (parts == 0)
		for (parts = 2; parts < (unsigned long long)cfg.workers && parts < MAX_PARTS;)
			parts *= 2;
	if (parts > n)
		parts = n;

	int status = 2;
	sorter_t s = {.n = n, .parts = parts};
	s.pieces = 4 * (size_t)cfg.workers;
	if (s.pieces < 16)
		s.pieces = 16;
	size_t max_jobs = s.pieces + 2 * parts + 64;
	if (max_jobs < 256)
		max_jobs = 256;
	s.jobs = calloc(max_jobs, sizeof(*s.jobs));
	s.bounds = calloc(parts + 1, sizeof(*s.bounds));
	runner_t r = {.rt = rt, .cap = max_jobs};
	r.tasks = calloc(max_jobs, sizeof(*r.tasks));
	weft_group_init(&r.g);
	if (!a)
		a = malloc(n * sizeof(*a));
	tmp = malloc(scratch_bytes(n, parts));
	if (compare)
		orig = malloc(n * sizeof(*orig));
	if (!s.jobs || !s.bounds || !r.tasks || !a || !tmp || (compare && !orig)) {
		fprintf(stderr, "%s: out of memory for %zu ints\n", prog, n);
		goto out;
	}

	printf("%s: %zu int%s, %zu part%s, model %s, %d worker%s\n", prog, n,
	       cli_plural((long long)n), s.parts, cli_plural((long long)s.parts),
	       weft_model_name(cfg.model), cfg.workers, cli_plural(cfg.workers));

	/* 1. generate or checksum */
	double t0 = cli_now_ms();
	size_t ns = slices(n, 4 * (size_t)cfg.workers < 64 ? 64 : 4 * (size_t)cfg.workers);
	for (size_t i = 0; i < ns; i++) {
		s.jobs[i] = (job_t){.a = a,
		                    .lo = n / ns * i + n % ns * i / ns,
		                    .hi = n / ns * (i + 1) + n % ns * (i + 1) / ns,
		                    .seed = seed};
		run(&r, file ? checksum_job : generate_job, &s.jobs[i]);
	}
	if (finish(&r) != 0)
		goto out;
	uint64_t before = 0;
	for (size_t i = 0; i < ns; i++)
		before += s.jobs[i].sum;
	double t1 = cli_now_ms();
	printf("%s: %.1f ms\n", file ? "checksum" : "generate", t1 - t0);
	if (compare)
		memcpy(orig, a, n * sizeof(*a));
	if (print)
		print_array(a, n);

	/* 2, 3. sort and merge */
	int32_t *sorted = psort(&s, &r, a, tmp);
	if (!sorted)
		goto out;
	double t_sort = s.t_parts + s.t_merge;
	printf("sort: %.1f ms (parts %.1f ms, merge %.1f ms in %d round%s)\n", t_sort, s.t_parts,
	       s.t_merge, s.rounds, cli_plural(s.rounds));

	/* 4. verify */
	for (size_t i = 0; i < ns; i++) {
		s.jobs[i] = (job_t){.a = sorted,
		                    .lo = n / ns * i + n % ns * i / ns,
		                    .hi = n / ns * (i + 1) + n % ns * (i + 1) / ns};
		run(&r, verify_job, &s.jobs[i]);
	}
	if (finish(&r) != 0)
		goto out;
	uint64_t after = 0;
	bool ok = true;
	for (size_t i = 0; i < ns; i++) {
		after += s.jobs[i].sum;
		if (s.jobs[i].unsorted && ok) {
			fprintf(stderr, "%s: NOT SORTED at index %zu\n", prog, s.jobs[i].first_bad);
			ok = false;
		}
	}
	if (after != before) {
		fprintf(stderr,
		        "%s: the sorted array does not hold the same ints (checksum %016" PRIx64
		        " before, %016" PRIx64 " after)\n",
		        prog, before, after);
		ok = false;
	}
	if (!ok) {
		status = 1;
		goto out;
	}
	printf("verify: ok (sorted, checksum %016" PRIx64 ")\n", after);
	if (print)
		print_array(sorted, n);
	if (out_fp) {
		int bad = write_file(out_fp, output, sorted, n);
		out_fp = NULL;
		if (bad)
			goto out;
	}

	if (compare) {
		/* The same tasks, inline on this thread. */
		runner_t inl = {.rt = NULL};
		memcpy(a, orig, n * sizeof(*a));
		double s0 = cli_now_ms();
		int32_t *res = psort(&s, &inl, a, tmp);
		double s1 = cli_now_ms();
		memcpy(tmp == res ? a : tmp, orig, n * sizeof(*a));
		int32_t *q = tmp == res ? a : tmp;
		double q0 = cli_now_ms();
		qsort(q, n, sizeof(*q), cmp_int);
		double q1 = cli_now_ms();
		if (memcmp(q, res, n * sizeof(*q)) != 0) {
			fprintf(stderr, "%s: qsort and the inline sort disagree\n", prog);
			status = 1;
			goto out;
		}
		printf("same tasks inline on 1 thread: %.1f ms (speedup %.2fx)\n", s1 - s0,
		       (s1 - s0) / t_sort);
		printf("qsort: %.1f ms (speedup %.2fx)\n", q1 - q0, (q1 - q0) / t_sort);
	}
	status = 0;
out:
	if (out_fp && out_fp != stdout)
		fclose(out_fp);
	weft_rt_destroy(rt);
	free(r.tasks);
	free(s.jobs);
	free(s.bounds);
	free(orig);
	free(tmp);
	free(a);
	return status;
}
