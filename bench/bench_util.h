/* What weft's benchmark programs share: the clock, medians, model names,
 * and --help, --version and option errors said as the applications say
 * them (apps/common/cli.h). Header-only: each benchmark is one program of
 * its own. */
#ifndef WEFT_BENCH_UTIL_H
#define WEFT_BENCH_UTIL_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <weft/weft.h>

#include "../apps/common/cli.h"

/* getopt_long's val for --version (longopts: {"version", no_argument,
 * NULL, BENCH_OPT_VERSION}; --help is 'h'). */
#define BENCH_OPT_VERSION 256

/* What a benchmark's getopt_long loop does with 'h' (usage on stdout),
 * BENCH_OPT_VERSION (the version) and a refused option (the error and the
 * usage on stderr, status 2; the option string must start with ':' and
 * opterr be 0): returns the exit status. usage ends with a newline. */
static inline int bench_help_version_or_error(const char *prog, int c, char **argv,
                                              const struct option *longopts, const char *usage)
{
	if (c == 'h') {
		fputs(usage, stdout);
		if (fflush(stdout) == 0)
			return 0;
		cli_stdout_error(prog, "the standard output");
		return 1;
	}
	if (c ==
	    BENCH_OPT_VERSION) /* the header's: bench/mpi's baselines are not linked with weft */
		return cli_print_version_of(prog, WEFT_VERSION);
	cli_option_error(prog, c, argv, longopts);
	fputs(usage, stderr);
	return 2;
}

/* CLOCK_MONOTONIC in nanoseconds, as a double (differences of runs). */
static inline double bench_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The median of v[0..n) (n >= 1); sorts v. */
static inline double bench_median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), bench_cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The model named name (weft_model_name's spelling) into *out. */
static inline bool bench_model_by_name(const char *name, weft_model *out)
{
	for (int m = 0; m < WEFT_MODEL_COUNT_; m++)
		if (strcmp(name, weft_model_name((weft_model)m)) == 0) {
			*out = (weft_model)m;
			return true;
		}
	return false;
}

#endif
