/* What the applications' command lines and timings share: getopt_long's
 * errors said one way, --version, whole-number options, output files
 * checked before the work starts, standard output checked at exit, posts
 * that wait for room in a bounded ready queue, and a millisecond clock.
 * Header-only: each app is one program (include it in one file of it). */
#ifndef WEFT_APPS_COMMON_CLI_H
#define WEFT_APPS_COMMON_CLI_H

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <weft/weft.h>

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

/* Says on stderr what was wrong with the option getopt_long just refused
 * (it returned c, '?' or ':'; the option string must start with ':' so
 * that a missing value is told apart, and opterr must be 0):
 * "unknown option '--x'", "option '--x' needs a value" or "option '--x'
 * takes no value". */
static inline void cli_option_error(const char *prog, int c, char **argv,
                                    const struct option *longopts)
{
	const char *a = argv[optind - 1];
	if (a[0] == '-' && a[1] != '-' && optopt) {
		if (c == ':')
			fprintf(stderr, "%s: option '-%c' needs a value\n", prog, optopt);
		else
			fprintf(stderr, "%s: unknown option '-%c'\n", prog, optopt);
		return;
	}
	if (c == ':') {
		fprintf(stderr, "%s: option '%s' needs a value\n", prog, a);
		return;
	}
	const char *eq = strchr(a, '=');
	if (a[0] == '-' && a[1] == '-' && eq) {
		size_t n = (size_t)(eq - a - 2);
		for (const struct option *o = longopts; o && o->name; o++) {
			if (strlen(o->name) >= n && !strncmp(o->name, a + 2, n) &&
			    o->has_arg == no_argument) {
				fprintf(stderr, "%s: option '--%s' takes no value\n", prog,
				        o->name);
				return;
			}
		}
	}
	fprintf(stderr, "%s: unknown option '%s'\n", prog, a);
}

/* Standard output checked at exit, as coreutils' close_stdout: a program
 * whose output went nowhere (a full disk, >/dev/full) would otherwise exit
 * 0 as if it had been written, since stdio only finds out when it flushes
 * the last buffer, after main returned. cli_check_stdout_at_exit(prog),
 * first thing in main, closes stdout at exit and, when a write failed,
 * says so on stderr and makes the status 1. A program that reports a
 * failed write itself calls cli_stdout_error instead of printing, so that
 * it is said once. */
static const char *cli__stdout_prog;
static bool cli__stdout_told;

static inline void cli_stdout_error(const char *prog, const char *what)
{
	if (!cli__stdout_told)
		fprintf(stderr, "%s: cannot write %s: %s\n", prog, what,
		        errno ? strerror(errno) : "write error");
	cli__stdout_told = true;
}

static inline void cli__close_stdout(void)
{
	bool failed = ferror(stdout);
	errno = 0;
	if (fclose(stdout) != 0)
		failed = true;
	if (!failed)
		return;
	cli_stdout_error(cli__stdout_prog, "the standard output");
	_exit(EXIT_FAILURE); /* exit() again from an atexit handler is undefined */
}

static inline void cli_check_stdout_at_exit(const char *prog)
{
	cli__stdout_prog = prog;
	atexit(cli__close_stdout);
}

/* --version: "<prog> (weft) <version>" on stdout; returns the exit status.
 * A program not linked with weft (seed 004's pthread builds, gen_records)
 * gives WEFT_VERSION, the header's. */
static inline int cli_print_version_of(const char *prog, const char *version)
{
	printf("%s (weft) %s\n", prog, version);
	if (fflush(stdout) == 0)
		return 0;
	cli_stdout_error(prog, "the standard output");
	return 1;
}

static inline int cli_print_version(const char *prog)
{
	return cli_print_version_of(prog, weft_version());
}

/* The command line of a program whose only options are --help and
 * --version (seed 004's benchmarks keep the seed's positional arguments):
 * prints "usage: prog <usage>" (and help, if not NULL) for --help, the
 * version for --version, and exits; an unknown option is an error (status
 * 2). Options stop at the first argument that is not one. Standard
 * output is checked at exit (cli_check_stdout_at_exit). Returns the index
 * of the first positional argument. */
static inline int cli_help_version_only(int argc, char **argv, const char *prog, const char *usage,
                                        const char *help)
{
	static const struct option longopts[] = {{"help", no_argument, NULL, 'h'},
	                                         {"version", no_argument, NULL, 'V'},
	                                         {NULL, 0, NULL, 0}};
	cli_check_stdout_at_exit(prog);
	opterr = 0;
	int c;
	while ((c = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1) {
		if (c == 'h') {
			printf("usage: %s %s\n%s", prog, usage, help ? help : "");
			exit(0);
		}
		if (c == 'V')
			exit(cli_print_version_of(prog, WEFT_VERSION));
		cli_option_error(prog, c, argv, longopts);
		fprintf(stderr, "usage: %s %s\n", prog, usage);
		exit(2);
	}
	return optind;
}

/* Opens path for writing ('-': stdout) before any long work, so that an
 * unwritable path fails at once; says why on stderr ("prog: what 'path':
 * strerror") and returns NULL. */
static inline FILE *cli_open_output(const char *prog, const char *what, const char *path)
{
	if (!strcmp(path, "-"))
		return stdout;
	FILE *f = fopen(path, "w");
	if (!f)
		fprintf(stderr, "%s: cannot write %s '%s': %s\n", prog, what, path,
		        strerror(errno));
	return f;
}

/* weft_post_in (g NULL: weft_post) that waits for room when the ready queue
 * is full (WEFT_QUEUE_CAPACITY) instead of failing with WEFT_EFULL. Outside
 * the runtime's tasks it waits (weft_post_wait, or retries every 50 us for
 * a group); inside one of them, where waiting could wait for the caller's
 * own worker, it runs fn(arg) on the spot instead, which fork-join work
 * allows. The task must have been initialised with fn and arg. */
static inline int cli_post(weft_rt *rt, weft_group *g, weft_task *t, weft_fn fn, void *arg)
{
	for (;;) {
		int rc = g ? weft_post_in(rt, g, t) : weft_post(rt, t);
		if (rc != WEFT_EFULL)
			return rc;
		if (weft_rt_current()) {
			fn(arg);
			return 0;
		}
		if (!g)
			return weft_post_wait(rt, t);
		struct timespec ts = {0, 50000};
		nanosleep(&ts, NULL);
	}
}

/* "s" after a count other than 1: printf("%d worker%s", n, cli_plural(n)). */
static inline const char *cli_plural(long long n)
{
	return n == 1 ? "" : "s";
}

static inline double cli_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

#endif
