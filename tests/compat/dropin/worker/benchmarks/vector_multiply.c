/* A benchmark of the Rutgers thread-worker project in its authors' style
 * (vector_multiply; seed 004 in the README's section "Where weft came
 * from: the seeds"), as it sits in the project's benchmarks/ directory:
 * <pthread.h> first, then "../thread-worker.h",
 * pthread_* calls renamed by that header's USE_WORKERS macros, the MLFQ
 * priority call behind #ifdef MLFQ, and the seed's report block. Built
 * unmodified two ways by tests/compat/dropin (docs/seeds/compat-worker.md):
 * against weft's header with -I<weft>/include/weft/compat/benchmarks, and
 * against the student's own ../thread-worker.h with -lweft-worker.
 *
 *   vector_multiply [threads] [size]      (default 2 threads, 300000)
 *
 * Unlike the seed, it also checks (exit status 1 when the threaded sum is
 * not the single-threaded one) and sums in unsigned arithmetic: the seed's
 * int overflowed, which the sanitizer builds rightly report. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "../thread-worker.h"

#define DEFAULT_THREAD_NUM 2
#define VECTOR_SIZE        300000

pthread_mutex_t mutex;

int thread_num;
int vector_size = VECTOR_SIZE;
int *counter;
pthread_t *thread;
unsigned int r[VECTOR_SIZE * 10];
unsigned int s[VECTOR_SIZE * 10];
unsigned int res = 0;

void vector_multiply(void *arg)
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

int verify()
{
	int i = 0;
	unsigned int vres = 0;

	for (i = 0; i < vector_size; i += 1)
		vres += r[i] * s[i];
	return (int)vres;
}

int main(int argc, char **argv)
{
	int i = 0;

	if (argc < 2) {
		thread_num = DEFAULT_THREAD_NUM;
	} else {
		thread_num = atoi(argv[1]);
		if (thread_num <= 0) {
			printf("enter a valid thread number\n");
			return 0;
		}
	}
	if (argc > 2)
		vector_size = atoi(argv[2]);
	if (vector_size <= 0 || vector_size > VECTOR_SIZE * 10)
		vector_size = VECTOR_SIZE;

	counter = (int *)malloc(thread_num * sizeof(int));
	for (i = 0; i < thread_num; ++i)
		counter[i] = i;
	thread = (pthread_t *)malloc(thread_num * sizeof(pthread_t));
	for (i = 0; i < vector_size; ++i) {
		r[i] = i;
		s[i] = i;
	}

	pthread_mutex_init(&mutex, NULL);

	struct timespec start, end;
	clock_gettime(CLOCK_REALTIME, &start);

	for (i = 0; i < thread_num; ++i) {
		pthread_create(&thread[i], NULL, (void *)&vector_multiply, &counter[i]);
#ifdef MLFQ
		pthread_setschedprio(thread[i], i % NUMPRIO);
#endif
	}

	for (i = 0; i < thread_num; ++i)
		pthread_join(thread[i], NULL);

	fprintf(stderr, "***************************\n");
	clock_gettime(CLOCK_REALTIME, &end);
	printf("Total run time: %lu micro-seconds\n",
	       (end.tv_sec - start.tv_sec) * 1000000 + (end.tv_nsec - start.tv_nsec) / 1000);

	pthread_mutex_destroy(&mutex);

	int threaded = (int)res;
	int verified = verify();
	printf("Total sum is: %d\n", threaded);
	printf("Verified sum is: %d\n", verified);
#ifdef USE_WORKERS
	print_app_stats();
	fprintf(stderr, "***************************\n");
#endif

	free(thread);
	free(counter);
	return threaded == verified ? 0 : 1;
}
