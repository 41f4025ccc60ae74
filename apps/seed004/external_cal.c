/* Seed 004's external_cal benchmark (Rutgers CS416 thread-worker, Fall
 * 2024), I/O-bound: thread n of T handles the records k = n, n+T, ... of
 * the ten files ./record/0 .. ./record/9 (threads with n >= 10 do
 * nothing). For each it reads `itr` times four ints with fscanf into
 * mem[k*4 .. k*4+3] and adds each into `sum` under the mutex.
 *
 *   external_cal [threads [itr]]     (default 2 threads, itr 262144)
 *
 * Run gen_records first: it writes the fixed record set (10 files of 4096
 * values) into ./record. As in the seed, a file holds far fewer values
 * than 4 * itr: once fscanf meets the end of the file it stores nothing,
 * so every further iteration re-adds the file's last four values. The
 * verified sum repeats the reads single-threaded; for the fixed record set
 * and the default itr it is -1884966331.
 *
 * Built on weft (USE_WORKERS) and on Linux pthreads (-DWEFT_NO_USE_WORKERS);
 * the differences from the seed are those listed in parallel_cal.c, and a
 * missing record is an error (exit status 2) reported before any thread
 * starts. */
#include <pthread.h>

#include "thread-worker.h"

#include "seed004.h"

#define DEFAULT_THREAD_NUM 2
#define RAM_SIZE           160 /* 40 ints: four per record */
#define RECORD_NUM         10
#define RECORD_SIZE        4194304

pthread_mutex_t mutex;
int thread_num;
int *counter;
pthread_t *thread;
int *mem = NULL;
unsigned int sum = 0;
int itr = RECORD_SIZE / 16;

static void record_path(char *path, size_t size, int k)
{
	snprintf(path, size, "./record/%d", k);
}

static FILE *open_record(int k)
{
	char path[32];
	record_path(path, sizeof(path), k);
	FILE *f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "failed to open file %s, please run gen_records first\n", path);
		exit(2);
	}
	return f;
}

/* One value of record k into mem, as the seed reads it. */
static void read_value(FILE *f, int k, int j)
{
	if (fscanf(f, "%d\n", &mem[k * 4 + j]) != 1) {
		/* End of file: mem keeps the value it had (the seed's behaviour). */
	}
}

/* A I/O-bound task to do external calculation */
void *external_calculate(void *arg)
{
	int i = 0, j = 0, k = 0;
	int n = *((int *)arg);

	for (k = n; k < RECORD_NUM; k += thread_num) {
		FILE *f = open_record(k);
		for (i = 0; i < itr; ++i) {
			// read 16B from nth record into memory from mem[n*4]
			for (j = 0; j < 4; ++j) {
				read_value(f, k, j);
				pthread_mutex_lock(&mutex);
				sum += (unsigned int)mem[k * 4 + j];
				pthread_mutex_unlock(&mutex);
			}
		}
		fclose(f);
	}

	pthread_exit(NULL);
}

/* verification function: a single-threaded recomputation */
int verify(void)
{
	int i = 0, j = 0, k = 0;
	unsigned int vsum = 0;

	memset(mem, 0, RAM_SIZE);
	for (k = 0; k < RECORD_NUM; ++k) {
		FILE *f = open_record(k);
		for (i = 0; i < itr; ++i) {
			for (j = 0; j < 4; ++j) {
				read_value(f, k, j);
				vsum += (unsigned int)mem[k * 4 + j];
			}
		}
		fclose(f);
	}
	return (int)vsum;
}

int main(int argc, char **argv)
{
	int i = 0, k = 0;

	int first = seed004_options(
	        argc, argv, "[threads [itr]]",
	        "Seed 004's I/O-bound benchmark: threads read ./record/0 .. ./record/9 (run\n"
	        "gen_records first) itr times (default 2 threads, itr 262144); prints the run\n"
	        "time on stdout, the threaded and the verified sums on stderr. Exit status 1\n"
	        "if they differ. On weft, WEFT_MODEL, WEFT_POLICY, WEFT_WORKERS choose the\n"
	        "scheduler.\n");
	argc -= first - 1; /* argv[1] is the first positional argument */
	argv += first - 1;
	thread_num = argc > 1 ? arg_int(argv[1], 1, "thread number") : DEFAULT_THREAD_NUM;
	if (argc > 2)
		itr = arg_int(argv[2], 1, "iteration count");

	// every record must be there before the clock starts
	for (k = 0; k < RECORD_NUM; ++k)
		fclose(open_record(k));

	// initialize counter
	counter = (int *)malloc(thread_num * sizeof(int));
	for (i = 0; i < thread_num; ++i)
		counter[i] = i;

	// initialize pthread_t
	thread = (pthread_t *)malloc(thread_num * sizeof(pthread_t));

	mem = (int *)malloc(RAM_SIZE);
	if (!counter || !thread || !mem) {
		fprintf(stderr, "out of memory\n");
		return 2;
	}
	memset(mem, 0, RAM_SIZE);

	// mutex init
	pthread_mutex_init(&mutex, NULL);

	long us = run_threads(thread, counter, thread_num, &external_calculate);

	// mutex destroy
	pthread_mutex_destroy(&mutex);

	int status = report(us, (int)sum, verify());

	// Free memory on Heap
	free(mem);
	free(thread);
	free(counter);

	return status;
}
