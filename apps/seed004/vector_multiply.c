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

int main(int argc, char **argv)
{
	int i = 0;

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

	struct timespec start, end;
	clock_gettime(CLOCK_MONOTONIC, &start);

	for (i = 0; i < thread_num; ++i) {
		if (pthread_create(&thread[i], NULL, &vector_multiply, &counter[i]) != 0) {
			fprintf(stderr, "cannot create thread %d\n", i);
			return 2;
		}
#if defined(USE_WORKERS) || defined(MLFQ)
		pthread_setschedprio(thread[i], i % NUMPRIO);
#endif
	}

	for (i = 0; i < thread_num; ++i)
		pthread_join(thread[i], NULL);

	clock_gettime(CLOCK_MONOTONIC, &end);

	fprintf(stderr, "***************************\n");
	printf("Total run time: %lu micro-seconds\n",
	       (unsigned long)((end.tv_sec - start.tv_sec) * 1000000L +
	                       (end.tv_nsec - start.tv_nsec) / 1000));
	fflush(stdout);

	// mutex destroy
	pthread_mutex_destroy(&mutex);

	int threaded = (int)res;
	int verified = verify();
	fprintf(stderr, "Total sum is: %d\n", threaded);
	fprintf(stderr, "Verified sum is: %d\n", verified);
#ifdef USE_WORKERS
	print_app_stats();
#endif
	fprintf(stderr, "***************************\n");

	// Free memory on Heap
	free(thread);
	free(counter);
	free(r);
	free(s);

	return threaded == verified ? 0 : 1;
}
