/* What seed 004's three benchmarks share, written once: argument parsing,
 * the timed create-and-join of the threads (with the MLFQ priority calls),
 * and the report block the seed prints. Included after <pthread.h> and
 * "thread-worker.h", so pthread_* mean worker_* when built on weft. */
#ifndef WEFT_APPS_SEED004_H
#define WEFT_APPS_SEED004_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/cli.h"

/* --help and --version before the seed's positional arguments (usage names
 * them); returns the index of the first one. The name is argv[0]'s, which
 * tells the weft build from the _pthread one. */
static int seed004_options(int argc, char **argv, const char *usage, const char *help)
{
	const char *prog = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
	return cli_help_version_only(argc, argv, prog, usage, help);
}

/* A whole decimal number in [min, 1e9], or exit 2 with a message. */
static int arg_int(const char *str, int min, const char *what)
{
	char *end;
	long v = strtol(str, &end, 10);
	if (*str == '\0' || *end != '\0' || v < min || v > 1000000000) {
		fprintf(stderr, "enter a valid %s (got '%s')\n", what, str);
		exit(2);
	}
	return (int)v;
}

/* Creates n threads running fn(&counter[i]) and joins them all; returns the
 * elapsed microseconds (the seed printed milliseconds under that label). */
static long run_threads(pthread_t *thread, int *counter, int n, void *(*fn)(void *))
{
	struct timespec start, end;
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (int i = 0; i < n; ++i) {
		if (pthread_create(&thread[i], NULL, fn, &counter[i]) != 0) {
			fprintf(stderr, "cannot create thread %d\n", i);
			exit(2);
		}
#if defined(USE_WORKERS) || defined(MLFQ)
		pthread_setschedprio(thread[i], i % NUMPRIO);
#endif
	}
	for (int i = 0; i < n; ++i)
		pthread_join(thread[i], NULL);
	clock_gettime(CLOCK_MONOTONIC, &end);
	return (end.tv_sec - start.tv_sec) * 1000000L + (end.tv_nsec - start.tv_nsec) / 1000;
}

/* The seed's block, with the threaded sum next to the verified one (as the
 * 2017 version printed them); returns the exit status: 1 if they differ. */
static int report(long us, int threaded, int verified)
{
	fprintf(stderr, "***************************\n");
	printf("Total run time: %lu micro-seconds\n", (unsigned long)us);
	fflush(stdout);
	fprintf(stderr, "Total sum is: %d\n", threaded);
	fprintf(stderr, "Verified sum is: %d\n", verified);
#ifdef USE_WORKERS
	print_app_stats();
#endif
	fprintf(stderr, "***************************\n");
	return threaded == verified ? 0 : 1;
}

#endif
