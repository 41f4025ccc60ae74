/* weft-sudoku: the seed's sudoku validator (seed 000) written once on weft's
 * native API, plus a parallel batch mode and a generator.
 *
 *   weft-sudoku [--invalid]          the seed's grid, validated by 11 tasks
 *   weft-sudoku --grid FILE          the one grid in FILE, by 11 tasks
 *   weft-sudoku [--quiet] FILE       every grid in FILE ('-': stdin), in parallel
 *   weft-sudoku --generate N [--seed S] [--invalid-rate R] [--blocks]
 *
 * One grid: 11 tasks as the seed posted them (one per 3x3 box, one for all
 * rows, one for all columns), each writing only its own verdict; the grid is
 * printed the seed's way (every number followed by two spaces), then
 * "Valid sudoku map." or "Invalid sudoku map." and the failing units.
 *
 * Batch: the file is mapped and cut into chunks at line starts, about
 * 256 KiB each and at least 8 per worker. Pass 1 (weft_parallel_for over
 * the chunks, one chunk per iteration, inside one task) counts
 * lines and grid lines; a prefix sum gives each chunk its first line and
 * grid number and, for 9-line blocks, how many lines at its start finish the
 * previous chunk's grid. Pass 2 (another such loop) parses and checks its
 * grids, listing the invalid ones in the chunk's own array. No task touches
 * another's data, so the hot path has no shared counter; the main thread
 * adds up and prints in file order. The format is in parse.h.
 *
 * Exit status: 0 every grid valid, 1 some grid invalid, 2 usage, input or
 * start-up error (with the file and line of bad input). */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <weft/weft.h>

#include "../common/cli.h"
#include "parse.h"

#define CHUNK_BYTES (256u * 1024u)
/* Most bytes read from a pipe, a terminal or a device (standard input,
 * /dev/zero): they are copied into memory, and an endless stream must end
 * in a message, not in the OOM killer. A regular file is mapped, not
 * copied, and has no limit. */
#define MAX_STREAM  ((size_t)64 << 20)

static const char *prog = "weft-sudoku";

/* The seed's grid, row by row as it prints it. */
static const uint8_t seed_grid[81] = {
        6, 2, 4, 5, 3, 9, 1, 8, 7, 5, 1, 9, 7, 2, 8, 6, 3, 4, 8, 3, 7, 6, 1, 4, 2, 9, 5,
        1, 4, 3, 8, 6, 5, 7, 2, 9, 9, 5, 8, 2, 4, 7, 3, 6, 1, 7, 6, 2, 3, 9, 1, 4, 5, 8,
        3, 7, 1, 9, 5, 6, 8, 4, 2, 4, 9, 6, 1, 8, 2, 5, 7, 3, 2, 8, 5, 4, 7, 3, 9, 1, 6,
};

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: %s [--invalid]\n"
	        "       %s --grid FILE\n"
	        "       %s [--quiet] FILE\n"
	        "       %s --generate N [--seed S] [--invalid-rate R] [--blocks]\n"
	        "Validates sudoku grids with weft tasks.\n"
	        "  (no FILE)          the seed's grid, checked by 11 tasks (9 boxes, all rows,\n"
	        "                     all columns); prints the grid and the verdict\n"
	        "  --invalid          swap two cells of the seed's grid first\n"
	        "  --print-tasks      each of the 11 tasks prints \"Thread num: N.\" as the "
	        "seed's\n"
	        "                     did (its experiment: docs/observability.md)\n"
	        "  --repeat N         validate the one grid N times (timing, histograms)\n"
	        "  --grid FILE        the one grid in FILE, checked by the same 11 tasks\n"
	        "  FILE               every grid in FILE ('-' for stdin), checked in parallel;\n"
	        "                     prints each invalid grid with its failing units\n"
	        "  --quiet            batch: print only the summary\n"
	        "  --generate N       write N random grids to stdout (one per line, or\n"
	        "                     --blocks: 9 lines each, blank line between)\n"
	        "  --seed S           generator seed (default 1)\n"
	        "  --invalid-rate R   fraction of generated grids made invalid (0..1, default 0)\n"
	        "  -h, --help         show this help\n"
	        "  --version          print the version and exit\n"
	        "Formats: 81 cells per line, or 9 lines of 9 cells; a cell is 1-9, or 0 or '.'\n"
	        "(empty); spaces between cells, blank lines and '#' comment lines are ignored.\n"
	        "A FILE that is not a regular file (a pipe, '-') may hold at most 64 MiB.\n"
	        "Options take their value as --opt VALUE or --opt=VALUE.\n"
	        "WEFT_MODEL, WEFT_WORKERS and WEFT_POLICY choose how the tasks run.\n"
	        "Exit status: 0 all valid, 1 some grid invalid, 2 usage or input error.\n",
	        prog, prog, prog, prog);
}

static int start_runtime(weft_rt **rt, weft_config *cfg)
{
	int err = weft_rt_create(rt, NULL);
	if (err != 0) {
		fprintf(stderr, "%s: cannot start the weft runtime: %s\n", prog,
		        weft_strerror(err));
		return -1;
	}
	weft_rt_config(*rt, cfg);
	return 0;
}

/* ------------------------------------------------------------ one grid */

typedef struct check {
	const uint8_t *cells;
	char kind; /* 'b' one box, 'r' all rows, 'c' all columns */
	int unit;  /* the box */
	uint16_t fails;
} check_t;

/* The seed's experiment (docs/observability.md): its tasks printed
 * "Thread num: %d." and the stdout lock made 11 threads slower than one. */
static bool print_tasks;
static unsigned long long repeat = 1;

static void check_task(void *arg)
{
	check_t *c = arg;
	if (print_tasks)
		printf("Thread num: %d.\n", weft_worker_index());
	c->fails = 0;
	if (c->kind == 'b') {
		if (sudoku_unit_mask(c->cells, 'b', c->unit) != SUDOKU_UNIT_FULL)
			c->fails = (uint16_t)(1u << c->unit);
		return;
	}
	for (int i = 0; i < 9; i++)
		if (sudoku_unit_mask(c->cells, c->kind, i) != SUDOKU_UNIT_FULL)
			c->fails |= (uint16_t)(1u << i);
}

static int validate_one(const uint8_t cells[81])
{
	for (int r = 0; r < 9; r++) {
		for (int c = 0; c < 9; c++)
			printf("%d  ", cells[9 * r + c]);
		printf("\n");
	}
	fflush(stdout);

	weft_rt *rt;
	weft_config cfg;
	if (start_runtime(&rt, &cfg) != 0)
		return 2;
	weft_task tasks[11];
	check_t checks[11];
	weft_group g;
	weft_group_init(&g);
	for (unsigned long long round = 0; round < repeat; round++) {
		for (int i = 0; i < 11; i++) {
			checks[i] = (check_t){cells, i < 9 ? 'b' : i == 9 ? 'r' : 'c', i, 0};
			weft_task_init(&tasks[i], check_task, &checks[i]);
			weft_task_set_priority(&tasks[i], 1);
			int err = cli_post(rt, &g, &tasks[i], check_task, &checks[i]);
			if (err != 0) {
				fprintf(stderr, "%s: cannot post task %d: %s\n", prog, i,
				        weft_strerror(err));
				weft_group_wait(&g);
				weft_rt_destroy(rt);
				return 2;
			}
		}
		weft_group_wait(&g);
	}
	weft_rt_destroy(rt);

	sudoku_fails f = {0, 0, 0};
	for (int i = 0; i < 9; i++)
		f.boxes |= checks[i].fails;
	f.rows = checks[9].fails;
	f.cols = checks[10].fails;
	bool valid = !(f.rows | f.cols | f.boxes);
	printf("%s sudoku map.\n", valid ? "Valid" : "Invalid");
	if (!valid) {
		char what[160];
		sudoku_format_fails(f, what, sizeof(what));
		printf("Failing: %s.\n", what);
	}
	return valid ? 0 : 1;
}

/* ------------------------------------------------------------ input */

typedef struct input {
	const char *name;
	char *data;
	size_t len;
	bool mapped;
} input_t;

static int read_all(int fd, input_t *in)
{
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		if (len == cap) {
			if (cap >= MAX_STREAM) {
				free(buf);
				return -EFBIG;
			}
			char *nb = realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				return -ENOMEM;
			}
			buf = nb;
			cap *= 2;
		}
		ssize_t n = read(fd, buf + len, cap - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			int e = errno;
			free(buf);
			return -e;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	in->data = buf;
	in->len = len;
	in->mapped = false;
	return 0;
}

static int open_input(const char *name, input_t *in)
{
	in->name = name;
	int fd = strcmp(name, "-") == 0 ? STDIN_FILENO : open(name, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "%s: %s: %s\n", prog, name, strerror(errno));
		return -1;
	}
	struct stat st;
	int err = 0;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
		void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (p == MAP_FAILED) {
			err = -errno;
		} else {
			in->data = p;
			in->len = (size_t)st.st_size;
			in->mapped = true;
		}
	} else if (S_ISDIR(st.st_mode)) {
		err = -EISDIR;
	} else {
		err = read_all(fd, in);
	}
	if (fd != STDIN_FILENO)
		close(fd);
	if (err == -EFBIG) {
		fprintf(stderr,
		        "%s: %s: more than %zu MiB from a stream (a regular file has no limit)\n",
		        prog, name, MAX_STREAM >> 20);
		return -1;
	}
	if (err != 0) {
		fprintf(stderr, "%s: %s: %s\n", prog, name, strerror(-err));
		return -1;
	}
	return 0;
}

static void close_input(input_t *in)
{
	if (in->mapped)
		munmap(in->data, in->len);
	else
		free(in->data);
}

static void report_error(const input_t *in, uint64_t line0, unsigned col, const char *msg)
{
	if (col)
		fprintf(stderr, "%s: %s:%llu:%u: %s\n", prog, in->name,
		        (unsigned long long)line0 + 1, col, msg);
	else
		fprintf(stderr, "%s: %s:%llu: %s\n", prog, in->name, (unsigned long long)line0 + 1,
		        msg);
}

/* Opens a grid file and detects its format; reports bad input (with its
 * line and column) and returns 2, or returns 0 with in open. */
static int open_grids(const char *name, input_t *in, sudoku_format *fmt)
{
	if (open_input(name, in) != 0)
		return 2;
	uint64_t line;
	unsigned col;
	char msg[96];
	*fmt = sudoku_detect(in->data, in->len, &line, &col, msg, sizeof(msg));
	if (*fmt == SUDOKU_FORMAT_NONE) {
		report_error(in, line, col, msg);
		close_input(in);
		return 2;
	}
	return 0;
}

static int grid_from_file(const char *name)
{
	input_t in;
	sudoku_format fmt;
	if (open_grids(name, &in, &fmt) != 0)
		return 2;
	uint8_t cells[81];
	sudoku_chunk c = {.buf = in.data, .len = in.len, .begin = 0, .end = in.len, .fmt = fmt};
	c.first = cells;
	sudoku_chunk_parse(&c);
	if (c.error) {
		report_error(&in, c.err_line, c.err_col, c.err_msg);
		close_input(&in);
		return 2;
	}
	if (c.grids != 1) {
		fprintf(stderr,
		        "%s: %s: %llu grids; --grid checks exactly one (without --grid, all of "
		        "them)\n",
		        prog, name, (unsigned long long)c.grids);
		close_input(&in);
		return 2;
	}
	close_input(&in);
	return validate_one(cells);
}

/* ------------------------------------------------------------ batch */

/* A pass runs one function over every chunk: a parallel loop with a grain
 * of one chunk (each is about 256 KiB of input). The loop runs inside a
 * task: called from main, weft_parallel_for would have main take part too,
 * and WEFT_WORKERS=1 would then check on two CPUs. */
typedef struct pass {
	weft_rt *rt;
	sudoku_chunk *chunks;
	size_t n;
	void (*fn)(sudoku_chunk *c);
	int err;
} pass;

static void pass_range(size_t lo, size_t hi, void *arg)
{
	pass *p = arg;
	for (size_t i = lo; i < hi; i++)
		p->fn(&p->chunks[i]);
}

static void pass_task(void *arg)
{
	pass *p = arg;
	p->err = weft_parallel_for(p->rt, 0, p->n, 1, pass_range, p);
}

static int run_pass(weft_rt *rt, sudoku_chunk *chunks, size_t n, void (*fn)(sudoku_chunk *c))
{
	pass p = {.rt = rt, .chunks = chunks, .n = n, .fn = fn};
	weft_task t;
	int err = weft_task_init(&t, pass_task, &p);
	if (err == 0)
		err = weft_post_wait(rt, &t);
	if (err == 0)
		err = weft_wait(&t);
	if (err == 0)
		err = p.err;
	if (err != 0)
		fprintf(stderr, "%s: cannot run the pass: %s\n", prog, weft_strerror(err));
	return err;
}

static int batch(const char *name, bool quiet)
{
	double t0 = cli_now_ms();
	input_t in;
	sudoku_format fmt;
	if (open_grids(name, &in, &fmt) != 0)
		return 2;

	weft_rt *rt;
	weft_config cfg;
	if (start_runtime(&rt, &cfg) != 0) {
		close_input(&in);
		return 2;
	}
	size_t n = in.len / CHUNK_BYTES;
	size_t want = 8 * (size_t)cfg.workers;
	if (n < want)
		n = want < in.len / 4096 ? want : in.len / 4096;
	if (n == 0)
		n = 1;
	size_t *bounds = malloc((n + 1) * sizeof(*bounds));
	sudoku_chunk *chunks = calloc(n, sizeof(*chunks));
	int status = 2;
	if (!bounds || !chunks) {
		fprintf(stderr, "%s: out of memory\n", prog);
		goto out;
	}
	sudoku_split(in.data, in.len, n, bounds);
	for (size_t i = 0; i < n; i++)
		chunks[i] = (sudoku_chunk){.buf = in.data,
		                           .len = in.len,
		                           .begin = bounds[i],
		                           .end = bounds[i + 1],
		                           .fmt = fmt,
		                           .keep_invalid = !quiet};
	if (run_pass(rt, chunks, n, sudoku_chunk_count) != 0)
		goto out;
	uint64_t gridlines = 0;
	for (size_t i = 0; i < n; i++) {
		chunks[i].skip = (unsigned)((9 - gridlines % 9) % 9);
		gridlines += chunks[i].gridlines;
	}
	if (run_pass(rt, chunks, n, sudoku_chunk_parse) != 0)
		goto out;
	double t1 = cli_now_ms();

	uint64_t grids = 0, invalid = 0, lines = 0;
	for (size_t i = 0; i < n; i++) {
		sudoku_chunk *c = &chunks[i];
		if (c->error) {
			report_error(&in, lines + c->err_line, c->err_col, c->err_msg);
			goto out;
		}
		for (size_t k = 0; k < (quiet ? 0 : c->invalid_count); k++) {
			char what[160];
			sudoku_format_fails(c->invalid[k].fails, what, sizeof(what));
			printf("%s:%llu: grid %llu invalid: %s\n", in.name,
			       (unsigned long long)(lines + c->invalid[k].line + 1),
			       (unsigned long long)(grids + c->invalid[k].grid + 1), what);
		}
		grids += c->grids;
		invalid += c->invalid_count;
		lines += c->lines;
	}
	printf("%s: %llu grid%s, %llu valid, %llu invalid\n", in.name, (unsigned long long)grids,
	       cli_plural((long long)grids), (unsigned long long)(grids - invalid),
	       (unsigned long long)invalid);
	printf("checked in %.1f ms (%zu chunk%s, model %s, %d worker%s)\n", t1 - t0, n,
	       cli_plural((long long)n), weft_model_name(cfg.model), cfg.workers,
	       cli_plural(cfg.workers));
	status = invalid ? 1 : 0;
out:
	weft_rt_destroy(rt);
	if (chunks)
		for (size_t i = 0; i < n; i++)
			sudoku_chunk_free(&chunks[i]);
	free(chunks);
	free(bounds);
	close_input(&in);
	return status;
}

/* ------------------------------------------------------------ generator */

static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static unsigned rng_below(uint64_t *s, unsigned n)
{
	return (unsigned)(rng_next(s) % n);
}

static void shuffle(uint64_t *s, int *v, int n)
{
	for (int i = n - 1; i > 0; i--) {
		int j = (int)rng_below(s, (unsigned)i + 1), t = v[i];
		v[i] = v[j];
		v[j] = t;
	}
}

/* A permutation of 0..8 that keeps bands of three together. */
static void band_perm(uint64_t *s, int out[9])
{
	int bands[3] = {0, 1, 2};
	shuffle(s, bands, 3);
	for (int b = 0; b < 3; b++) {
		int in[3] = {0, 1, 2};
		shuffle(s, in, 3);
		for (int k = 0; k < 3; k++)
			out[3 * b + k] = 3 * bands[b] + in[k];
	}
}

/* A random valid grid (the seed's, with validity-preserving shuffles), made
 * invalid when `bad`: two cells of a row swapped, a cell changed, or a cell
 * emptied. */
static void make_grid(uint64_t *s, bool bad, uint8_t out[81])
{
	int digits[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
	shuffle(s, digits + 1, 9);
	int rows[9], cols[9];
	band_perm(s, rows);
	band_perm(s, cols);
	bool transpose = rng_next(s) & 1;
	for (int r = 0; r < 9; r++)
		for (int c = 0; c < 9; c++) {
			int v = seed_grid[9 * rows[r] + cols[c]];
			out[transpose ? 9 * c + r : 9 * r + c] = (uint8_t)digits[v];
		}
	if (!bad)
		return;
	int r = (int)rng_below(s, 9), c = (int)rng_below(s, 9);
	switch (rng_below(s, 3)) {
	case 0: {
		int c2 = (c + 1 + (int)rng_below(s, 8)) % 9;
		uint8_t t = out[9 * r + c];
		out[9 * r + c] = out[9 * r + c2];
		out[9 * r + c2] = t;
		break;
	}
	case 1:
		out[9 * r + c] = (uint8_t)(1 + (out[9 * r + c] + rng_below(s, 8)) % 9);
		break;
	default:
		out[9 * r + c] = 0;
		break;
	}
}

static int generate(uint64_t n, uint64_t seed, double rate, bool blocks)
{
	uint64_t s = seed, bad_count = 0;
	size_t cap = 1 << 20, used = 0;
	char *buf = malloc(cap);
	if (!buf) {
		fprintf(stderr, "%s: out of memory\n", prog);
		return 2;
	}
	for (uint64_t i = 0; i < n; i++) {
		bool bad = (double)(rng_next(&s) >> 11) * 0x1.0p-53 < rate;
		uint8_t g[81];
		make_grid(&s, bad, g);
		bad_count += bad;
		if (cap - used < 256) {
			if (fwrite(buf, 1, used, stdout) != used)
				break;
			used = 0;
		}
		if (!blocks) {
			for (int k = 0; k < 81; k++)
				buf[used++] = g[k] ? (char)('0' + g[k]) : '.';
			buf[used++] = '\n';
			continue;
		}
		if (i > 0)
			buf[used++] = '\n';
		for (int r = 0; r < 9; r++) {
			for (int c = 0; c < 9; c++) {
				buf[used++] = (char)('0' + g[9 * r + c]);
				buf[used++] = ' ';
				buf[used++] = ' ';
			}
			buf[used++] = '\n';
		}
	}
	int failed = fwrite(buf, 1, used, stdout) != used || fflush(stdout) != 0;
	free(buf);
	if (failed) {
		cli_stdout_error(prog, "the grids");
		return 2;
	}
	fprintf(stderr, "%s: generated %llu grid%s, %llu invalid (seed %llu)\n", prog,
	        (unsigned long long)n, cli_plural((long long)n), (unsigned long long)bad_count,
	        (unsigned long long)seed);
	return 0;
}

/* ------------------------------------------------------------ main */

int main(int argc, char **argv)
{
	cli_check_stdout_at_exit(prog);
	bool invalid = false, quiet = false, blocks = false, gen = false, have_seed = false,
	     have_rate = false;
	const char *grid_file = NULL, *file = NULL;
	unsigned long long gen_n = 0, seed = 1;
	double rate = 0;

	enum {
		OPT_VERSION = 256,
		OPT_PRINT_TASKS,
		OPT_REPEAT,
		OPT_BLOCKS,
		OPT_GRID,
		OPT_GENERATE,
		OPT_SEED,
		OPT_RATE
	};
	static const struct option longopts[] = {
	        {"help", no_argument, NULL, 'h'},
	        {"version", no_argument, NULL, OPT_VERSION},
	        {"invalid", no_argument, NULL, 'i'},
	        {"print-tasks", no_argument, NULL, OPT_PRINT_TASKS},
	        {"repeat", required_argument, NULL, OPT_REPEAT},
	        {"quiet", no_argument, NULL, 'q'},
	        {"blocks", no_argument, NULL, OPT_BLOCKS},
	        {"grid", required_argument, NULL, OPT_GRID},
	        {"generate", required_argument, NULL, OPT_GENERATE},
	        {"seed", required_argument, NULL, OPT_SEED},
	        {"invalid-rate", required_argument, NULL, OPT_RATE},
	        {NULL, 0, NULL, 0},
	};
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":hq", longopts, NULL)) != -1) {
		const char *v = optarg;
		switch (c) {
		case 'h':
			usage(stdout);
			return 0;
		case OPT_VERSION:
			return cli_print_version(prog);
		case 'i':
			invalid = true;
			break;
		case OPT_PRINT_TASKS:
			print_tasks = true;
			break;
		case OPT_REPEAT:
			if (!cli_parse_u64(v, 1, 100000000, &repeat)) {
				fprintf(stderr, "%s: invalid repeat count '%s'\n", prog, v);
				return 2;
			}
			break;
		case 'q':
			quiet = true;
			break;
		case OPT_BLOCKS:
			blocks = true;
			break;
		case OPT_GRID:
			grid_file = v;
			break;
		case OPT_GENERATE:
			if (!cli_parse_u64(v, 0, UINT64_C(1) << 40, &gen_n)) {
				fprintf(stderr, "%s: invalid number of grids '%s'\n", prog, v);
				return 2;
			}
			gen = true;
			break;
		case OPT_SEED:
			if (!cli_parse_u64(v, 0, UINT64_MAX, &seed)) {
				fprintf(stderr, "%s: invalid seed '%s'\n", prog, v);
				return 2;
			}
			have_seed = true;
			break;
		case OPT_RATE: {
			char *end;
			errno = 0;
			rate = strtod(v, &end);
			if (end == v || *end || errno || !(rate >= 0 && rate <= 1)) {
				fprintf(stderr, "%s: invalid rate '%s' (want 0..1)\n", prog, v);
				return 2;
			}
			have_rate = true;
			break;
		}
		default:
			cli_option_error(prog, c, argv, longopts);
			usage(stderr);
			return 2;
		}
	}
	for (int i = optind; i < argc; i++) {
		if (file) {
			fprintf(stderr, "%s: unexpected argument '%s'\n", prog, argv[i]);
			return 2;
		}
		file = argv[i];
	}

	if (gen) {
		if (file || grid_file || invalid || quiet) {
			fprintf(stderr,
			        "%s: --generate takes only --seed, --invalid-rate, --blocks\n",
			        prog);
			return 2;
		}
		return generate(gen_n, seed, rate, blocks);
	}
	if (have_seed || have_rate || blocks) {
		fprintf(stderr, "%s: --seed, --invalid-rate and --blocks go with --generate\n",
		        prog);
		return 2;
	}
	if (grid_file) {
		if (file || invalid || quiet) {
			fprintf(stderr, "%s: --grid takes one file and no other option\n", prog);
			return 2;
		}
		return grid_from_file(grid_file);
	}
	if (file) {
		if (invalid) {
			fprintf(stderr, "%s: --invalid applies to the seed's grid, not to a file\n",
			        prog);
			return 2;
		}
		return batch(file, quiet);
	}
	if (quiet) {
		fprintf(stderr, "%s: --quiet applies to a batch FILE\n", prog);
		return 2;
	}
	uint8_t cells[81];
	memcpy(cells, seed_grid, sizeof(cells));
	if (invalid) {
		uint8_t t = cells[36];
		cells[36] = cells[37];
		cells[37] = t;
	}
	return validate_one(cells);
}
