/* Seed 004's parallel_cal benchmark (Rutgers CS416 thread-worker, Fall
 * 2024), CPU-bound: thread n of T sums a[j][i] * i over the rows j = n,
 * n+T, ... of an R_SIZE x C_SIZE matrix with a[j][i] = i, then adds each
 * row's sum into `sum` under the mutex.
 *
 *   parallel_cal [threads [rows [cols]]]     (default 4 threads, 10000 x 100000)
 *
 * Built twice from this source: on weft (USE_WORKERS, the default of
 * thread-worker.h) and on Linux pthreads (-DWEFT_NO_USE_WORKERS). What
 * differs from the seed (docs/seeds/compat-worker.md):
 *  - the run time is true microseconds (the seed printed milliseconds
 *    under a "micro-seconds" label), on CLOCK_MONOTONIC;
 *  - the threaded sum and the single-threaded verified sum are both
 *    printed ("Total sum is", "Verified sum is"; the seed printed only the
 *    verified one), and the exit status is 1 when they differ;
 *  - the arithmetic wraps in unsigned ints (the seed's int overflow is
 *    undefined behaviour that gcc -O0 happened to wrap): same numbers,
 *    83842816 for the default size;
 *  - the thread count is validated and smaller sizes may be given;
 *  - under USE_WORKERS the MLFQ priority calls are always made (the policy
 *    is chosen at run time; other policies ignore them), under pthreads
 *    only with -DMLFQ as in the seed. */
#include <pthread.h>

#include "thread-worker.h"

#include "seed004.h"

#define DEFAULT_THREAD_NUM 4
#define C_SIZE             100000
#define R_SIZE             10000

pthread_mutex_t mutex;
int thread_num;
int *counter;
pthread_t *thread;
int r_size = R_SIZE, c_size = C_SIZE;
unsigned int **a;
unsigned int *pSum;
unsigned int sum = 0;

/* A CPU-bound task to do parallel array addition */
void *parallel_calculate(void *arg)
{
	int i = 0, j = 0;
	int n = *((int *)arg);

	for (j = n; j < r_size; j += thread_num) {
		for (i = 0; i < c_size; ++i) {
			pSum[j] += a[j][i] * (unsigned int)i;
		}
	}

	for (j = n; j < r_size; j += thread_num) {
		pthread_mutex_lock(&mutex);
		sum += pSum[j];
		pthread_mutex_unlock(&mutex);
	}

	pthread_exit(NULL);
}

/* verification function: a single-threaded recomputation */
int verify(void)
{
	int i = 0, j = 0;
	unsigned int vsum = 0;

	memset(pSum, 0, (size_t)r_size * sizeof(*pSum));
	for (j = 0; j < r_size; j += 1) {
		for (i = 0; i < c_size; ++i) {
			pSum[j] += a[j][i] * (unsigned int)i;
		}
	}
	for (j = 0; j < r_size; j += 1) {
		vsum += pSum[j];
	}
	return (int)vsum;
}

int main(int argc, char **argv)
{
	int i = 0, j = 0;

	int first = seed004_options(
	        argc, argv, "[threads [rows [cols]]]",
	        "Seed 004's CPU-bound benchmark: each thread sums its rows of a rows x cols\n"
	        "matrix (default 4 threads, 10000 x 100000); prints the run time on stdout,\n"
	        "the threaded and the verified sums on stderr. Exit status 1 if they differ.\n"
	        "On weft, WEFT_MODEL, WEFT_POLICY, WEFT_WORKERS choose the scheduler.\n");
	argc -= first - 1; /* argv[1] is the first positional argument */
	argv += first - 1;
	thread_num = argc > 1 ? arg_int(argv[1], 1, "thread number") : DEFAULT_THREAD_NUM;
	if (argc > 2)
		r_size = arg_int(argv[2], 1, "number of rows");
	if (argc > 3)
		c_size = arg_int(argv[3], 1, "number of columns");

	// initialize counter
	counter = (int *)malloc(thread_num * sizeof(int));
	for (i = 0; i < thread_num; ++i)
		counter[i] = i;

	// initialize pthread_t
	thread = (pthread_t *)malloc(thread_num * sizeof(pthread_t));

	// initialize data array
	a = malloc((size_t)r_size * sizeof(*a));
	pSum = calloc((size_t)r_size, sizeof(*pSum));
	if (!counter || !thread || !a || !pSum) {
		fprintf(stderr, "out of memory\n");
		return 2;
	}
	for (i = 0; i < r_size; ++i) {
		a[i] = malloc((size_t)c_size * sizeof(**a));
		if (!a[i]) {
			fprintf(stderr, "out of memory at row %d of %d x %d ints\n", i, r_size,
			        c_size);
			return 2;
		}
		for (j = 0; j < c_size; ++j)
			a[i][j] = (unsigned int)j;
	}

	// mutex init
	pthread_mutex_init(&mutex, NULL);

	long us = run_threads(thread, counter, thread_num, &parallel_calculate);

	// mutex destroy
	pthread_mutex_destroy(&mutex);

	int status = report(us, (int)sum, verify());

	// Free memory on Heap
	free(thread);
	free(counter);
	for (i = 0; i < r_size; ++i)
		free(a[i]);
	free(a);
	free(pSum);

	return status;
}
