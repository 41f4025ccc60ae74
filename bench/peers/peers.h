/* What every peer driver shares (C and C++): the workloads' sizes and
 * command line, the clock, the CSV line, and the data the sort sorts.
 *
 * A driver runs each of its workloads once and prints one line per
 * (workload, library):
 *
 *   workload,library,rep,n,ns_per_op
 *
 * run.sh calls every driver once per repetition, interleaved, and
 * aggregates. Options, the same for every driver:
 *
 *   --rep R        repetition number, copied into the CSV (default 1)
 *   --small        tiny sizes: checks that everything runs (numbers mean
 *                  nothing)
 *   --sort-n N     ints to sort (default 50,000,000)
 *   --fib-n N      fib-tree's n (default 25; 15 with --small)
 *   --only W       run only workload W (a name below)
 *   --help, --version
 *
 * The workloads (the unit is what ns_per_op divides by):
 *
 *   spawn-wait     the main thread spawns N empty tasks, then waits for all
 *                  (ns per task)
 *   parallel-for   PASSES parallel loops of ITERS iterations each, body
 *                  a[i] += 1 over an int array that fits in L2 (ns per
 *                  iteration, fork and join included)
 *   fiber-switch   two fibers on one thread yield to each other N times each
 *                  (ns per yield)
 *   fiber-create   a fiber creates an empty fiber and joins it, N times
 *                  (ns per create+join)
 *   ctx-switch     the raw context switch under the fibers: two contexts
 *                  resume each other (ns per switch, one way)
 *   psort          sort SORT_N random 32-bit ints (ns per element)
 *   mutex-tT       seed 004's vector_multiply: T threads (or tasks, or
 *                  fibers) take a mutex, add one product, release it;
 *                  MUTEX_N pairs in all (ns per lock/add/unlock pair)
 *   fib-tree       fib(FIB_N) as a spawn tree with no sequential cutoff:
 *                  every call with n >= 2 spawns fib(n-1) and fib(n-2) as
 *                  tasks and joins both; the root is a task too (ns per
 *                  call; calls = 2 * fib(n+1) - 1, checked with the value)
 *   spawn-join     from inside a task (never the main thread), spawn one
 *                  empty task and join it, JOIN_N times in a row (ns per
 *                  spawn+join)
 *   pingpong       two tasks (fibers, goroutines) exchange a counter over
 *                  two unbuffered (or capacity-1) channels, PING_N round
 *                  trips, on a runtime of 2 workers; where the runtime can
 *                  place them, on different workers (ns per round trip)
 *
 * Every workload checks its result and the driver exits non-zero when one
 * is wrong. Drivers in other languages (go/, rust/, java/) take the same
 * options, use the same sizes and print the same lines.
 *
 * Worker threads: as many as the CPUs the process may use, for every
 * library (each library's own default, except libuv, whose pool run.sh sizes
 * with UV_THREADPOOL_SIZE). */
#ifndef WEFT_BENCH_PEERS_H
#define WEFT_BENCH_PEERS_H

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct peers_opts {
	int rep;
	long spawn_n;    /* spawn-wait tasks */
	long for_iters;  /* parallel-for iterations per loop */
	long for_passes; /* parallel-for loops */
	long switch_n;   /* fiber-switch yields per fiber */
	long create_n;   /* fiber-create fibers */
	long ctx_n;      /* ctx-switch round trips */
	long sort_n;     /* psort ints */
	long mutex_n;    /* mutex pairs in all */
	int fib_n;       /* fib-tree's n */
	long join_n;     /* spawn-join spawns */
	long ping_n;     /* pingpong round trips */
	const char *only;
} peers_opts;

/* The thread counts of the mutex workload (seed 004 ran 2 by default). */
#define PEERS_MUTEX_T1 2
#define PEERS_MUTEX_T2 8

/* fib-tree's largest n: n = 40 is already 331 million calls, far beyond a
 * sensible run, and its value and call count still fit in 32 bits, so
 * every driver may count them in an int. */
#define PEERS_FIB_N_MAX 40

static inline double peers_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static inline void peers_die(const char *prog, const char *what)
{
	fprintf(stderr, "%s: %s\n", prog, what);
	exit(1);
}

static inline long peers_count(const char *prog, const char *opt, const char *val)
{
	char *end;
	long v = val ? strtol(val, &end, 10) : 0;
	if (!val || *end || v < 1) {
		fprintf(stderr, "%s: %s needs a positive integer\n", prog, opt);
		exit(2);
	}
	return v;
}

/* Standard output checked at exit, as apps/common/cli.h does for the C
 * programs (not included here: this header is C++ too): a run whose CSV
 * went nowhere says so on stderr and exits 1. */
static const char *peers_prog;

static inline void peers_close_stdout(void)
{
	bool failed = ferror(stdout);
	errno = 0;
	if (fclose(stdout) != 0)
		failed = true;
	if (failed) {
		fprintf(stderr, "%s: cannot write the standard output: %s\n", peers_prog,
		        errno ? strerror(errno) : "write error");
		_exit(1);
	}
}

static inline peers_opts peers_parse(const char *prog, int argc, char **argv)
{
	peers_prog = prog;
	atexit(peers_close_stdout);
	peers_opts o;
	int small = 0;
	long sort_n = 50000000, fib_n = 0;
	o.rep = 1;
	o.only = NULL;
	static const struct option opts[] = {
	        {"small", no_argument, NULL, 's'},        {"rep", required_argument, NULL, 'r'},
	        {"sort-n", required_argument, NULL, 'n'}, {"fib-n", required_argument, NULL, 'f'},
	        {"only", required_argument, NULL, 'o'},   {"help", no_argument, NULL, 'h'},
	        {"version", no_argument, NULL, 'V'},      {NULL, 0, NULL, 0}};
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		if (c == 's') {
			small = 1;
		} else if (c == 'r') {
			o.rep = (int)peers_count(prog, "--rep", optarg);
		} else if (c == 'n') {
			sort_n = peers_count(prog, "--sort-n", optarg);
		} else if (c == 'f') {
			fib_n = peers_count(prog, "--fib-n", optarg);
			if (fib_n > PEERS_FIB_N_MAX)
				peers_die(prog, "--fib-n is at most 40");
		} else if (c == 'o') {
			o.only = optarg;
		} else if (c == 'V') {
			/* WEFT_PEERS_VERSION: CMake's PROJECT_VERSION, read from weft.h
			 * (the drivers of other libraries do not include weft's headers). */
			printf("%s (weft) %s\n", prog, WEFT_PEERS_VERSION);
			exit(0);
		} else {
			FILE *to = c == 'h' ? stdout : stderr;
			if (c != 'h')
				fprintf(stderr, "%s: %s '%s'\n", prog,
				        c == ':' ? "missing the value of" : "unknown option",
				        argv[optind - 1]);
			fprintf(to,
			        "usage: %s [--rep R] [--small] [--sort-n N] [--fib-n N] "
			        "[--only WORKLOAD]\n"
			        "       %s --help | --version\n"
			        "One CSV line per workload: workload,library,rep,n,ns_per_op "
			        "(bench/peers/run.sh runs every driver).\n",
			        prog, prog);
			exit(c == 'h' ? 0 : 2);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s'\n", prog, argv[optind]);
		exit(2);
	}
	o.spawn_n = small ? 2000 : 500000;
	o.for_iters = small ? 1000 : 100000;
	o.for_passes = small ? 10 : 200;
	o.switch_n = small ? 2000 : 2000000;
	o.create_n = small ? 2000 : 1000000;
	o.ctx_n = small ? 2000 : 10000000;
	o.sort_n = small && sort_n == 50000000 ? 100000 : sort_n;
	o.mutex_n = small ? 20000 : 3000000;
	o.fib_n = fib_n ? (int)fib_n : small ? 15 : 25;
	o.join_n = small ? 2000 : 200000;
	o.ping_n = small ? 2000 : 100000;
	return o;
}

/* fib(n) by iteration, what every fib-tree run must produce. */
static inline long peers_fib(int n)
{
	long a = 0, b = 1;
	for (int i = 0; i < n; i++) {
		long c = a + b;
		a = b;
		b = c;
	}
	return a;
}

/* The number of calls (tasks) in fib-tree for n: 2 * fib(n+1) - 1. */
static inline long peers_fib_calls(int n)
{
	return 2 * peers_fib(n + 1) - 1;
}

/* Whether workload w is to run. */
static inline int peers_want(const peers_opts *o, const char *w)
{
	return o->only == NULL || strcmp(o->only, w) == 0;
}

static inline void peers_emit(const peers_opts *o, const char *workload, const char *lib, long n,
                              double ns)
{
	printf("%s,%s,%d,%ld,%.3f\n", workload, lib, o->rep, n, ns / (double)n);
	fflush(stdout);
}

/* The ints every sort sorts: the same formula as weft-psort's generator
 * (apps/psort/weft-psort.c, seed 1), so all sort the same array. */
static inline int32_t peers_sort_value(uint64_t seed, uint64_t i)
{
	uint64_t z = seed + 0x9e3779b97f4a7c15ull * (i + 1);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return (int32_t)(uint32_t)(z >> 32);
}

/* Fails loudly unless a[0 .. n-1] is ascending. */
static inline void peers_check_sorted(const char *prog, const int32_t *a, long n)
{
	for (long i = 1; i < n; i++)
		if (a[i - 1] > a[i])
			peers_die(prog, "psort: result is not sorted");
}

/* The vector_multiply data: r[i] = s[i] = i; the sum of r[i] * s[i] over
 * i < n, mod 2^32, is what every library's run must produce. */
static inline unsigned peers_mutex_expect(long n)
{
	unsigned sum = 0;
	for (long i = 0; i < n; i++)
		sum += (unsigned)i * (unsigned)i;
	return sum;
}

/* The end of every library's mutex run: fails loudly unless the threads
 * added up to the expected sum, then emits the line of workload
 * mutex-t<threads>. */
static inline void peers_mutex_report(const char *prog, const peers_opts *o, int threads,
                                      const char *lib, unsigned sum, double ns)
{
	if (sum != peers_mutex_expect(o->mutex_n))
		peers_die(prog, "mutex: wrong sum");
	char name[32];
	snprintf(name, sizeof(name), "mutex-t%d", threads);
	peers_emit(o, name, lib, o->mutex_n, ns);
}

#endif
