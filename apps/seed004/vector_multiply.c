/* Seed 004's vector_multiply benchmark (Rutgers CS416 thread-worker, Fall
 * 2024), CPU- and lock-heavy: with r[i] = s[i] = i, thread n of T adds
 * r[i] * s[i] into `res` for i = n, n+T, ..., taking and releasing the
 * mutex around every addition (3,000,000 lock/unlock pairs by default).
 *
 *   vector_multiply [threads [size]]     (default 2 threads, 3000000)
 *
 * Built on weft (USE_WORKERS) and on Linux pthreads (-DWEFT_NO_USE_WORKERS);
 * the differences from the seed are those listed in parallel_cal.c. The
 * default size's sum is 631560480. */
#include <pthread.h>

#include "thread-worker.h"

#include "seed004.h"

#define DEFAULT_THREAD_NUM 2
#define VECTOR_SIZE        3000000

pthread_mutex_t mutex;
int thread_num;
int *counter;
pthread_t *thread;
int vector_size = VECTOR_SIZE;
unsigned int *r;
unsigned int *s;
unsigned int res = 0;

/* A CPU-bound task to do vector multiplication */
void *vector_multiply(void *arg)
{
	int i = 0;
	int n = *((int *)arg);

	for (i = n; i < vector_size; i += thread_num) {
		pthread_mutex_lock(&mutex);
		res += r[i] * s[i];
		pthread_mutex_unlock(&mutex);
	}

	pthread_exit(NULL);
}

/* verification function: a single-threaded recomputation */
int verify(void)
{
	int i = 0;
	unsigned int vres = 0;

	for (i = 0; i < vector_size; i += 1) {
		vres += r[i] * s[i];
	}
	return (int)vres;
}

int main(int argc, char **argv)
{
	int i = 0;

	int first = seed004_options(
	        argc, argv, "[threads [size]]",
	        "Seed 004's lock-heavy benchmark: threads add r[i] * s[i] into one sum under\n"
	        "a mutex (default 2 threads, size 3000000); prints the run time on stdout,\n"
	        "the threaded and the verified sums on stderr. Exit status 1 if they differ.\n"
	        "On weft, WEFT_MODEL, WEFT_POLICY, WEFT_WORKERS choose the scheduler.\n");
	argc -= first - 1; /* argv[1] is the first positional argument */
	argv += first - 1;
	thread_num = argc > 1 ? arg_int(argv[1], 1, "thread number") : DEFAULT_THREAD_NUM;
	if (argc > 2)
		vector_size = arg_int(argv[2], 1, "vector size");

	// initialize counter
	counter = (int *)malloc(thread_num * sizeof(int));
	for (i = 0; i < thread_num; ++i)
		counter[i] = i;

	// initialize pthread_t
	thread = (pthread_t *)malloc(thread_num * sizeof(pthread_t));

	// initialize data array
	r = malloc((size_t)vector_size * sizeof(*r));
	s = malloc((size_t)vector_size * sizeof(*s));
	if (!counter || !thread || !r || !s) {
		fprintf(stderr, "out of memory\n");
		return 2;
	}
	for (i = 0; i < vector_size; ++i) {
		r[i] = (unsigned int)i;
		s[i] = (unsigned int)i;
	}

	// mutex init
	pthread_mutex_init(&mutex, NULL);

	long us = run_threads(thread, counter, thread_num, &vector_multiply);

	// mutex destroy
	pthread_mutex_destroy(&mutex);

	int status = report(us, (int)res, verify());

	// Free memory on Heap
	free(thread);
	free(counter);
	free(r);
	free(s);

	return status;
}
