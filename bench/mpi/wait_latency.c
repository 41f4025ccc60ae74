/* wait_latency: what weft_mpi_wait's progress costs, against MPI_Wait.
 *
 *   mpirun -n 2 wait_latency [--msgs M] [--delay-us D] [--jitter-us J]
 *                            [--poll-us P]
 *
 * For each message rank 0 posts the receive, then tells rank 1 "go"; rank 1
 * waits for "go" without spinning (MPI_Test, then a 50 us sleep: a sender
 * that spun would take a CPU the waiter needs on a loaded machine, and
 * measure the machine), sleeps D us plus a random 0..J us (defaults 2370 and
 * 0: no multiple of a millisecond tick, which would hide one) with
 * clock_nanosleep, and sends the CLOCK_MONOTONIC time of the send (one
 * machine: one clock). Rank 0 records how late it noticed (receive time
 * minus send time) and the CPU time its process used per second of waiting
 * (getrusage: every thread of the rank, weft's workers and MPI's included),
 * for each waiter, all in one run:
 *
 *   MPI_Wait                   on the main thread (Open MPI: spins)
 *   weft_mpi_wait              on the main thread (polls, sleeps between)
 *   weft_mpi_wait/threads      in a task, threads, 1 worker (polls itself)
 *   weft_mpi_wait/fibers       in a task, fibers, 1 worker, nothing else to
 *                              run: parks; the idle worker's progress duty
 *   weft_mpi_wait/mn           the same under mn, 2 workers
 *   weft_mpi_wait/fibers+busy  in a task while other tasks keep the worker
 *                              busy (CPU not reported: busy on purpose)
 *
 * P sets weft_mpi_set_poll_max_ns (default: the library's). Prints the
 * median and 90th percentile latency in us and the CPU share. */
#include <getopt.h>
#include <math.h>
#include <mpi.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <weft/mpi.h>
#include <weft/weft.h>

#include "../bench_util.h"

static int msgs = 200;
static double delay_us = 2370, jitter_us = 0;

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static double cpu_us(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

typedef struct recv_job {
	int use_mpi_wait;
	double *lat;
} recv_job;

static void receive_all(void *arg)
{
	recv_job *j = arg;
	for (int i = 0; i < msgs; i++) {
		double sent;
		MPI_Request req;
		MPI_Irecv(&sent, 1, MPI_DOUBLE, 1, i, MPI_COMM_WORLD, &req);
		int go = 1;
		/* Eager: returns at once, whatever the waiter is. */
		MPI_Send(&go, 1, MPI_INT, 1, 100000 + i, MPI_COMM_WORLD);
		if (j->use_mpi_wait)
			MPI_Wait(&req, MPI_STATUS_IGNORE);
		else
			weft_mpi_wait(&req, MPI_STATUS_IGNORE);
		j->lat[i] = now_us() - sent;
	}
}

static atomic_int stop_busy;

static void busy_task(void *arg)
{
	(void)arg;
	/* 50 us of work, then the next: a worker that always has something. */
	while (!atomic_load(&stop_busy)) {
		double t0 = now_us();
		volatile unsigned x = 0;
		while (now_us() - t0 < 50)
			x++;
		weft_yield();
	}
}

static void report(const char *name, double *lat, double cpu, double wall)
{
	qsort(lat, (size_t)msgs, sizeof(double), cmp_d);
	if (cpu != cpu) /* the busy tasks use the CPU on purpose */
		printf("%-28s median %8.1f us   p90 %8.1f us\n", name, lat[msgs / 2],
		       lat[msgs * 9 / 10]);
	else
		printf("%-28s median %8.1f us   p90 %8.1f us   CPU %5.0f%% of the wait\n", name,
		       lat[msgs / 2], lat[msgs * 9 / 10], 100.0 * cpu / wall);
}

/* One waiter on rank 0 (mode), the sender on rank 1. */
static void run(int rank, const char *name, int mode)
{
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 1) {
		uint64_t x = 0x9e3779b97f4a7c15ull ^ (uint64_t)mode;
		for (int i = 0; i < msgs; i++) {
			int go, done = 0;
			MPI_Request req;
			MPI_Irecv(&go, 1, MPI_INT, 0, 100000 + i, MPI_COMM_WORLD, &req);
			while (MPI_Test(&req, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && !done)
				nanosleep(&(struct timespec){0, 50000}, NULL);
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			double d = delay_us + jitter_us * (double)(x % 1000001) / 1e6;
			struct timespec now;
			clock_gettime(CLOCK_MONOTONIC, &now);
			int64_t at =
			        (int64_t)now.tv_sec * 1000000000 + now.tv_nsec + (int64_t)(d * 1e3);
			struct timespec ts = {at / 1000000000, at % 1000000000};
			while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL))
				;
			double t = now_us();
			MPI_Send(&t, 1, MPI_DOUBLE, 0, i, MPI_COMM_WORLD);
		}
		return;
	}
	double *lat = calloc((size_t)msgs, sizeof(double));
	recv_job j = {.use_mpi_wait = mode == 0, .lat = lat};
	weft_rt *rt = NULL;
	weft_config cfg;
	weft_config_init(&cfg);
	cfg.workers = mode == 4 ? 2 : 1;
	cfg.model = mode == 2 ? WEFT_MODEL_THREADS : mode == 4 ? WEFT_MODEL_MN : WEFT_MODEL_FIBERS;
	if (mode >= 2)
		weft_rt_create(&rt, &cfg);
	weft_task busy[2];
	if (mode == 5) {
		atomic_store(&stop_busy, 0);
		for (int i = 0; i < 2; i++) {
			weft_task_init(&busy[i], busy_task, NULL);
			weft_post(rt, &busy[i]);
		}
	}
	double c0 = cpu_us(), w0 = now_us();
	if (rt) {
		weft_task t;
		weft_task_init(&t, receive_all, &j);
		weft_post(rt, &t);
		weft_wait(&t);
	} else {
		receive_all(&j);
	}
	double c1 = cpu_us(), w1 = now_us();
	if (mode == 5)
		atomic_store(&stop_busy, 1);
	if (rt)
		weft_rt_destroy(rt);
	report(name, lat, mode == 5 ? NAN : c1 - c0, w1 - w0);
	free(lat);
}

int main(int argc, char **argv)
{
	cli_check_stdout_at_exit("wait_latency");
	int64_t poll_ns = 0;
	/* Before MPI_Init: --help and --version answer without mpirun. */
	static const struct option opts[] = {{"msgs", required_argument, NULL, 'm'},
	                                     {"delay-us", required_argument, NULL, 'd'},
	                                     {"jitter-us", required_argument, NULL, 'j'},
	                                     {"poll-us", required_argument, NULL, 'p'},
	                                     {"help", no_argument, NULL, 'h'},
	                                     {"version", no_argument, NULL, BENCH_OPT_VERSION},
	                                     {0}};
	static const char usage[] =
	        "usage: mpirun -n 2 wait_latency [--msgs M] [--delay-us D] [--jitter-us J]\n"
	        "                                [--poll-us P]\n"
	        "       wait_latency --help | --version\n"
	        "How late weft_mpi_wait notices a message, and the CPU it uses while\n"
	        "waiting, against MPI_Wait (defaults: 200 messages, 2370 us delay, no\n"
	        "jitter, the library's poll interval).\n";
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		if (c == 'm')
			msgs = atoi(optarg);
		else if (c == 'd')
			delay_us = atof(optarg);
		else if (c == 'j')
			jitter_us = atof(optarg);
		else if (c == 'p')
			poll_ns = (int64_t)(atof(optarg) * 1e3);
		else
			return bench_help_version_or_error("wait_latency", c, argv, opts, usage);
	}
	if (msgs < 10)
		msgs = 10;
	if (delay_us < 0 || jitter_us < 0)
		delay_us = jitter_us = 0;
	int provided, rank, size;
	if (weft_mpi_init(&argc, &argv, NULL, &provided) != 0)
		return 2;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != 2) {
		if (rank == 0)
			fprintf(stderr, "wait_latency: run with 2 ranks\n");
		weft_mpi_finalize();
		return 2;
	}
	if (poll_ns && weft_mpi_set_poll_max_ns(poll_ns) < 0) {
		fprintf(stderr, "wait_latency: --poll-us out of range\n");
		weft_mpi_finalize();
		return 2;
	}
	int64_t poll = weft_mpi_set_poll_max_ns(1000);
	weft_mpi_set_poll_max_ns(poll);
	if (rank == 0)
		printf("wait_latency: %d messages, each sent %.0f-%.0f us after the receiver "
		       "asked; poll interval %.0f us\n",
		       msgs, delay_us, delay_us + jitter_us, (double)poll / 1e3);
	static const char *names[] = {"MPI_Wait (main thread)",     "weft_mpi_wait (main thread)",
	                              "weft_mpi_wait/threads",      "weft_mpi_wait/fibers (idle)",
	                              "weft_mpi_wait/mn w2 (idle)", "weft_mpi_wait/fibers+busy"};
	for (int mode = 0; mode < 6; mode++)
		run(rank, names[mode], mode);
	weft_mpi_finalize();
	return 0;
}
