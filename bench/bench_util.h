/* What weft's benchmark programs share: the clock, medians and model
 * names. Header-only: each benchmark is one program of its own. */
#ifndef WEFT_BENCH_UTIL_H
#define WEFT_BENCH_UTIL_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <weft/weft.h>

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
