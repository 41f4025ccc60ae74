/* seed-sudoku: the seed's sudoku validator (CMPE 180C project/sudoku) written
 * on weft's seed-compatible scheduler API (include/weft/compat/sched.h).
 *
 *   seed-sudoku [--invalid] <threads>
 *
 * Validates one 9x9 grid with 11 tasks, as the seed did: one per 3x3 box,
 * one for all rows, one for all columns, posted held (priority 1), then run
 * by one sched_execute. Prints the grid (9 lines, every number followed by
 * two spaces) and "Valid sudoku map." or "Invalid sudoku map.". --invalid
 * swaps two cells of one row first, which keeps the rows valid and breaks
 * two columns and boxes. WEFT_MODEL, WEFT_WORKERS and WEFT_POLICY retune
 * it without rebuilding.
 *
 * Exit status: 0 valid, 1 invalid, 2 usage or start-up error. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft/compat/sched.h>

#include "common/cli.h"

#define N_TASKS 11

/* The grid as printed, row by row (the seed's output). */
static const int grid_rows[9][9] = {
        {6, 2, 4, 5, 3, 9, 1, 8, 7}, {5, 1, 9, 7, 2, 8, 6, 3, 4}, {8, 3, 7, 6, 1, 4, 2, 9, 5},
        {1, 4, 3, 8, 6, 5, 7, 2, 9}, {9, 5, 8, 2, 4, 7, 3, 6, 1}, {7, 6, 2, 3, 9, 1, 4, 5, 8},
        {3, 7, 1, 9, 5, 6, 8, 4, 2}, {4, 9, 6, 1, 8, 2, 5, 7, 3}, {2, 8, 5, 4, 7, 3, 9, 1, 6},
};

typedef struct check {
	const int (*grid)[9]; /* [row][col] */
	int row0, col0;       /* top-left corner of a box */
	bool valid;           /* the task's verdict */
} check_t;

/* True when the nine values v[0..8] are exactly 1..9. */
static bool is_permutation(const int v[9])
{
	bool seen[10] = {false};
	for (int i = 0; i < 9; i++) {
		if (v[i] < 1 || v[i] > 9 || seen[v[i]])
			return false;
		seen[v[i]] = true;
	}
	return true;
}

static void check_box(void *arg, int worker)
{
	(void)worker;
	check_t *c = arg;
	int v[9];
	for (int i = 0; i < 9; i++)
		v[i] = c->grid[c->row0 + i / 3][c->col0 + i % 3];
	c->valid = is_permutation(v);
}

static void check_rows(void *arg, int worker)
{
	(void)worker;
	check_t *c = arg;
	c->valid = true;
	for (int r = 0; r < 9 && c->valid; r++)
		c->valid = is_permutation(c->grid[r]);
}

static void check_cols(void *arg, int worker)
{
	(void)worker;
	check_t *c = arg;
	c->valid = true;
	for (int col = 0; col < 9 && c->valid; col++) {
		int v[9];
		for (int r = 0; r < 9; r++)
			v[r] = c->grid[r][col];
		c->valid = is_permutation(v);
	}
}

static void usage(FILE *out, const char *prog)
{
	fprintf(out,
	        "usage: %s [--invalid] <threads>\n"
	        "Validates a 9x9 sudoku grid with 11 tasks (9 boxes, all rows, all columns)\n"
	        "on <threads> workers (1..1024) of weft's seed-compatible scheduler.\n"
	        "  --invalid   swap two cells first, so the grid is invalid\n"
	        "  --help      show this help\n"
	        "  --version   print the version and exit\n"
	        "WEFT_MODEL, WEFT_WORKERS and WEFT_POLICY override the model and worker count.\n"
	        "Exit status: 0 valid, 1 invalid, 2 usage or start-up error.\n",
	        prog);
}

static bool parse_threads(const char *s, int *out)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (end == s || *end != '\0' || v < 1 || v > 1024)
		return false;
	*out = (int)v;
	return true;
}

int main(int argc, char **argv)
{
	cli_check_stdout_at_exit("seed-sudoku");
	const char *prog = argv[0];
	const char *threads_arg = NULL;
	bool invalid = false;

	enum { OPT_VERSION = 256 };
	static const struct option longopts[] = {
	        {"help", no_argument, NULL, 'h'},
	        {"version", no_argument, NULL, OPT_VERSION},
	        {"invalid", no_argument, NULL, 'i'},
	        {NULL, 0, NULL, 0},
	};
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout, prog);
			return 0;
		case OPT_VERSION:
			return cli_print_version("seed-sudoku");
		case 'i':
			invalid = true;
			break;
		default:
			cli_option_error(prog, c, argv, longopts);
			usage(stderr, prog);
			return 2;
		}
	}
	for (int i = optind; i < argc; i++) {
		if (threads_arg) {
			fprintf(stderr, "%s: unexpected argument '%s'\n", prog, argv[i]);
			usage(stderr, prog);
			return 2;
		}
		threads_arg = argv[i];
	}
	if (!threads_arg) {
		fprintf(stderr, "%s: the number of threads must be specified\n", prog);
		usage(stderr, prog);
		return 2;
	}
	int threads;
	if (!parse_threads(threads_arg, &threads)) {
		fprintf(stderr, "%s: invalid number of threads '%s' (want 1..1024)\n", prog,
		        threads_arg);
		return 2;
	}

	int grid[9][9];
	memcpy(grid, grid_rows, sizeof(grid));
	if (invalid) {
		int tmp = grid[4][0];
		grid[4][0] = grid[4][1];
		grid[4][1] = tmp;
	}
	for (int r = 0; r < 9; r++) {
		for (int c = 0; c < 9; c++)
			printf("%d  ", grid[r][c]);
		printf("\n");
	}

	sched_t sched;
	if (!sched_init(&sched, threads, N_TASKS)) {
		fprintf(stderr, "%s: cannot start the scheduler with %d threads\n", prog, threads);
		return 2;
	}
	task_t tasks[N_TASKS];
	check_t checks[N_TASKS];
	int i = 0;
	for (int row0 = 0; row0 < 9; row0 += 3) {
		for (int col0 = 0; col0 < 9; col0 += 3, i++) {
			checks[i] = (check_t){grid, row0, col0, false};
			task_init(&tasks[i], 1, check_box, &checks[i]);
		}
	}
	checks[9] = (check_t){grid, 0, 0, false};
	task_init(&tasks[9], 1, check_rows, &checks[9]);
	checks[10] = (check_t){grid, 0, 0, false};
	task_init(&tasks[10], 1, check_cols, &checks[10]);
	for (i = 0; i < N_TASKS; i++) {
		if (!sched_post(&sched, &tasks[i], false)) {
			fprintf(stderr, "%s: could not post task %d\n", prog, i);
			sched_fini(&sched);
			return 2;
		}
	}
	sched_execute(&sched);
	sched_fini(&sched);

	bool valid = true;
	for (i = 0; i < N_TASKS; i++)
		valid = valid && checks[i].valid;
	printf("%s sudoku map.\n", valid ? "Valid" : "Invalid");
	return valid ? 0 : 1;
}
