/* What the applications' command lines and timings share: whole-number
 * options, "needs a value" errors and a millisecond clock. Header-only:
 * each app is one program. */
#ifndef WEFT_APPS_COMMON_CLI_H
#define WEFT_APPS_COMMON_CLI_H

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* A whole decimal number in [lo, hi] and nothing else (no sign, no
 * spaces, no suffix). */
static inline bool cli_parse_u64(const char *s, unsigned long long lo, unsigned long long hi,
                                 unsigned long long *out)
{
	char *end;
	if (!s || *s < '0' || *s > '9')
		return false;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

/* The value of option argv[*i] (advancing *i), or NULL after saying on
 * stderr that it is missing. */
static inline const char *cli_need_value(const char *prog, int argc, char **argv, int *i)
{
	if (*i + 1 >= argc) {
		fprintf(stderr, "%s: %s needs a value\n", prog, argv[*i]);
		return NULL;
	}
	return argv[++*i];
}

static inline double cli_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

#endif
