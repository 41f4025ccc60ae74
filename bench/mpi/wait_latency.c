/* wait_latency: what weft_mpi_wait's polling costs, against MPI_Wait.
 *
 *   mpirun -n 2 wait_latency [--msgs M] [--delay-us D]
 *
 * Rank 1 sends M small messages, each D us (default 2000) after the last
 * was received, carrying the CLOCK_MONOTONIC time of the send (one machine:
 * one clock). Rank 0 receives each with one waiter and records how late it
 * noticed (receive time minus send time), and the CPU time its process used
 * per second of waiting (getrusage), for each waiter:
 *
 *   MPI_Wait               on the main thread (Open MPI: spins)
 *   weft_mpi_wait          on the main thread (sleeps between tests)
 *   weft_mpi_wait/threads  in a task, 1 worker (sleeps between tests)
 *   weft_mpi_wait/fibers   in a task, 1 worker, nothing else to run (parks)
 *   weft_mpi_wait/fibers+busy  in a task while other tasks keep the worker
 *                          busy (yields between tests)
 *
 * Prints the median and 90th percentile latency in us and the CPU use. */
#include <getopt.h>
#include <math.h>
#include <mpi.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <weft/mpi.h>
#include <weft/weft.h>

#include "../bench_util.h"

static int msgs = 200, delay_us = 2000;

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
		for (int i = 0; i < msgs; i++) {
			int go;
			MPI_Recv(&go, 1, MPI_INT, 0, 100000 + i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			struct timespec ts = {0, delay_us * 1000L};
			nanosleep(&ts, NULL);
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
	cfg.workers = 1;
	cfg.model = mode == 2 ? WEFT_MODEL_THREADS : WEFT_MODEL_FIBERS;
	if (mode >= 2)
		weft_rt_create(&rt, &cfg);
	weft_task busy[2];
	if (mode == 4) {
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
	if (mode == 4)
		atomic_store(&stop_busy, 1);
	if (rt)
		weft_rt_destroy(rt);
	report(name, lat, mode == 4 ? NAN : c1 - c0, w1 - w0);
	free(lat);
}

int main(int argc, char **argv)
{
	cli_check_stdout_at_exit("wait_latency");
	/* Before MPI_Init: --help and --version answer without mpirun. */
	static const struct option opts[] = {{"msgs", required_argument, NULL, 'm'},
	                                     {"delay-us", required_argument, NULL, 'd'},
	                                     {"help", no_argument, NULL, 'h'},
	                                     {"version", no_argument, NULL, BENCH_OPT_VERSION},
	                                     {0}};
	static const char usage[] =
	        "usage: mpirun -n 2 wait_latency [--msgs M] [--delay-us D]\n"
	        "       wait_latency --help | --version\n"
	        "How late weft_mpi_wait notices a message, and the CPU it uses while\n"
	        "waiting, against MPI_Wait.\n";
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		if (c == 'm')
			msgs = atoi(optarg);
		else if (c == 'd')
			delay_us = atoi(optarg);
		else
			return bench_help_version_or_error("wait_latency", c, argv, opts, usage);
	}
	if (msgs < 10)
		msgs = 10;
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
	if (rank == 0)
		printf("wait_latency: %d messages, each sent %d us after the receiver asked; "
		       "poll limit 200 us\n",
		       msgs, delay_us);
	static const char *names[] = {"MPI_Wait (main thread)", "weft_mpi_wait (main thread)",
	                              "weft_mpi_wait/threads", "weft_mpi_wait/fibers (idle)",
	                              "weft_mpi_wait/fibers+busy"};
	for (int mode = 0; mode < 5; mode++)
		run(rank, names[mode], mode);
	weft_mpi_finalize();
	return 0;
}
