/* libweft-worker.a against a student's own thread-worker.h
 * (worker/thread-worker.h: a 4-byte worker_mutex_t), beyond what the
 * benchmark exercises: many mutexes (bucket collisions in the side table),
 * destroy and reuse, a lock before any init, misuse, and a counter that the
 * mutex must protect under the model the environment picks.
 *
 *   test_compat_worker_dropin      prints "worker-dropin: PASS", exit 0 */
#include "thread-worker.h"

/* The seed defined it in thread-worker.c only, under #ifdef MLFQ. */
int worker_setschedprio(worker_t thread, int prio);

#define NMUTEX  300
#define WORKERS 8
#define ROUNDS  2000

static int failures;

#define CHECK(cond)                                                                     \
	do {                                                                            \
		if (!(cond)) {                                                          \
			fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); \
			failures++;                                                     \
		}                                                                       \
	} while (0)

static worker_mutex_t many[NMUTEX];
static worker_mutex_t never_inited; /* locked without worker_mutex_init */
static long counter;

static void *hammer(void *arg)
{
	worker_mutex_t *m = arg;
	for (int i = 0; i < ROUNDS; i++) {
		pthread_mutex_lock(m);
		long v = counter;
		if (i % 97 == 0)
			worker_yield(); /* inside the critical section */
		counter = v + 1;
		pthread_mutex_unlock(m);
	}
	return NULL;
}

int main(void)
{
	/* The side table must never write into the program's mutex. */
	for (int i = 0; i < NMUTEX; i++)
		many[i].locked = 0x5a5a5a5a;
	for (int i = 0; i < NMUTEX; i++)
		CHECK(pthread_mutex_init(&many[i], NULL) == 0);
	for (int i = 0; i < NMUTEX; i++)
		CHECK(pthread_mutex_lock(&many[i]) == 0); /* all held at once: distinct */
	CHECK(pthread_mutex_destroy(&many[7]) == -1);     /* held */
	for (int i = 0; i < NMUTEX; i++)
		CHECK(pthread_mutex_unlock(&many[i]) == 0);
	CHECK(pthread_mutex_unlock(&many[0]) == -1); /* not held */
	for (int i = 0; i < NMUTEX; i++) {
		CHECK(many[i].locked == 0x5a5a5a5a);
		CHECK(pthread_mutex_destroy(&many[i]) == 0);
	}
	/* Destroyed: unknown again, and their nodes are reused by new inits. */
	CHECK(pthread_mutex_unlock(&many[3]) == -1);
	for (int i = 0; i < NMUTEX; i += 2)
		CHECK(pthread_mutex_init(&many[i], NULL) == 0);
	CHECK(pthread_mutex_init(NULL, NULL) == -1);
	CHECK(pthread_mutex_lock(NULL) == -1);
	CHECK(pthread_mutex_unlock(NULL) == -1);
	CHECK(pthread_mutex_destroy(NULL) == -1);

	/* A counter guarded by a mutex never initialised, then by one that
	 * was re-initialised, from WORKERS workers. */
	worker_mutex_t *guards[2] = {&never_inited, &many[10]};
	for (int g = 0; g < 2; g++) {
		counter = 0;
		pthread_t t[WORKERS];
		for (int i = 0; i < WORKERS; i++)
			CHECK(pthread_create(&t[i], NULL, hammer, guards[g]) == 0);
		for (int i = 0; i < WORKERS; i++)
			CHECK(pthread_join(t[i], NULL) == 0);
		CHECK(counter == (long)WORKERS * ROUNDS);
	}
	CHECK(pthread_mutex_destroy(&never_inited) == 0);
	CHECK(worker_setschedprio(999999, HIGH_PRIO) == -1); /* no such worker */

	if (failures)
		return 1;
	printf("worker-dropin: PASS\n");
	return 0;
}
