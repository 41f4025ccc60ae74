/* seed-sort: the seed's two-way parallel sort (CMPE 180C project/sorting)
 * written on weft's seed-compatible scheduler API
 * (include/weft/compat/sched.h).
 *
 *   seed-sort [--quiet] <threads> <len>
 *
 * Fills an array of <len> ints with (rand() % len) * 3 (rand unseeded, as
 * the seed did, so the data is the same on every run with one libc),
 * prints it, sorts the two halves with two tasks drained by one
 * sched_execute, merges them with a third task (reusing the first task_t)
 * and a second sched_execute, checks the result is sorted and prints it.
 * Arrays are printed on one line each with a space after every element.
 * --quiet prints one summary line instead of the arrays (for timing).
 * WEFT_MODEL, WEFT_WORKERS and WEFT_POLICY retune it without rebuilding.
 *
 * Exit status: 0 sorted, 1 not sorted (a bug), 2 usage or start-up error. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <weft/compat/sched.h>

#include "common/cli.h"

#define MAX_LEN 100000000L

typedef struct slice {
	int *a;
	long lo, hi; /* [lo, hi) */
} slice_t;

typedef struct merge_job {
	int *a;
	long mid, len; /* merge [0, mid) and [mid, len) */
	bool ok;       /* the temporary array could be allocated */
} merge_job_t;

static int cmp_int(const void *x, const void *y)
{
	int a = *(const int *)x, b = *(const int *)y;
	return (a > b) - (a < b);
}

static void sort_task(void *arg, int worker)
{
	(void)worker;
	slice_t *s = arg;
	qsort(s->a + s->lo, (size_t)(s->hi - s->lo), sizeof(int), cmp_int);
}

static void merge_task(void *arg, int worker)
{
	(void)worker;
	merge_job_t *m = arg;
	int *tmp = malloc((size_t)m->len * sizeof(int));
	if (!tmp) {
		m->ok = false;
		return;
	}
	long i = 0, j = m->mid, k = 0;
	while (i < m->mid && j < m->len)
		tmp[k++] = m->a[j] < m->a[i] ? m->a[j++] : m->a[i++];
	while (i < m->mid)
		tmp[k++] = m->a[i++];
	while (j < m->len)
		tmp[k++] = m->a[j++];
	memcpy(m->a, tmp, (size_t)m->len * sizeof(int));
	free(tmp);
	m->ok = true;
}

static void print_array(const int *a, long len)
{
	for (long i = 0; i < len; i++)
		printf("%d ", a[i]);
	printf("\n");
}

static void usage(FILE *out, const char *prog)
{
	fprintf(out,
	        "usage: %s [--quiet] <threads> <len>\n"
	        "Sorts <len> pseudo-random ints (1..%ld): two tasks sort the halves, a third\n"
	        "merges them, on <threads> workers (1..1024) of weft's seed-compatible\n"
	        "scheduler. Prints the array before and after.\n"
	        "  --quiet   print a one-line summary instead of the arrays\n"
	        "  --help    show this help\n"
	        "  --version print the version and exit\n"
	        "WEFT_MODEL, WEFT_WORKERS and WEFT_POLICY override the model and worker count.\n"
	        "Exit status: 0 sorted, 1 not sorted, 2 usage or start-up error.\n",
	        prog, MAX_LEN);
}

static bool parse_long(const char *s, long lo, long hi, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end != '\0' || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	cli_check_stdout_at_exit("seed-sort");
	const char *prog = argv[0];
	const char *pos[2];
	int npos = 0;
	bool quiet = false;

	enum { OPT_VERSION = 256 };
	static const struct option longopts[] = {
	        {"help", no_argument, NULL, 'h'},
	        {"version", no_argument, NULL, OPT_VERSION},
	        {"quiet", no_argument, NULL, 'q'},
	        {NULL, 0, NULL, 0},
	};
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":hq", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout, prog);
			return 0;
		case OPT_VERSION:
			return cli_print_version("seed-sort");
		case 'q':
			quiet = true;
			break;
		default:
			cli_option_error(prog, c, argv, longopts);
			usage(stderr, prog);
			return 2;
		}
	}
	for (int i = optind; i < argc; i++) {
		if (npos == 2) {
			fprintf(stderr, "%s: unexpected argument '%s'\n", prog, argv[i]);
			usage(stderr, prog);
			return 2;
		}
		pos[npos++] = argv[i];
	}
	if (npos != 2) {
		fprintf(stderr, "%s: missing the number of threads or the length of the array\n",
		        prog);
		usage(stderr, prog);
		return 2;
	}
	long threads, len;
	if (!parse_long(pos[0], 1, 1024, &threads)) {
		fprintf(stderr, "%s: invalid number of threads '%s' (want 1..1024)\n", prog,
		        pos[0]);
		return 2;
	}
	if (!parse_long(pos[1], 1, MAX_LEN, &len)) {
		fprintf(stderr, "%s: invalid length '%s' (want 1..%ld)\n", prog, pos[1], MAX_LEN);
		return 2;
	}

	int *a = malloc((size_t)len * sizeof(int));
	if (!a) {
		fprintf(stderr, "%s: cannot allocate %ld ints\n", prog, len);
		return 2;
	}
	for (long i = 0; i < len; i++)
		a[i] = (int)(rand() % len * 3);
	if (!quiet)
		print_array(a, len);

	sched_t sched;
	if (!sched_init(&sched, (int)threads, 2)) {
		fprintf(stderr, "%s: cannot start the scheduler with %ld threads\n", prog, threads);
		free(a);
		return 2;
	}
	double t0 = now_ms();
	long mid = len / 2;
	slice_t halves[2] = {{a, 0, mid}, {a, mid, len}};
	task_t tasks[2];
	for (int i = 0; i < 2; i++) {
		task_init(&tasks[i], 1, sort_task, &halves[i]);
		if (!sched_post(&sched, &tasks[i], false)) {
			fprintf(stderr, "%s: could not post sort task %d\n", prog, i);
			sched_fini(&sched);
			free(a);
			return 2;
		}
	}
	sched_execute(&sched);

	merge_job_t merge = {a, mid, len, false};
	task_init(&tasks[0], 1, merge_task, &merge);
	if (!sched_post(&sched, &tasks[0], false)) {
		fprintf(stderr, "%s: could not post the merge task\n", prog);
		sched_fini(&sched);
		free(a);
		return 2;
	}
	sched_execute(&sched);
	double ms = now_ms() - t0;
	int workers = sched.num_workers;
	sched_fini(&sched);

	if (!merge.ok) {
		fprintf(stderr, "%s: cannot allocate the merge buffer\n", prog);
		free(a);
		return 2;
	}
	long bad = -1;
	for (long i = 1; i < len && bad < 0; i++)
		if (a[i - 1] > a[i])
			bad = i;
	if (!quiet)
		print_array(a, len);
	else if (bad < 0)
		printf("sorted %ld int%s with %d worker%s in %.3f ms\n", len, cli_plural(len),
		       workers, cli_plural(workers), ms);
	free(a);
	if (bad >= 0) {
		fprintf(stderr, "%s: NOT SORTED at index %ld\n", prog, bad);
		return 1;
	}
	return 0;
}
