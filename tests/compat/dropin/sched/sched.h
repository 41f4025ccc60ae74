/* The seed scheduler's sched.h (CMPE 180C project/sched), rewritten here
 * from its documented interface (seed 000 in the README's section "Where
 * weft came from: the seeds"): its own task_t and sched_t layouts and the
 * five functions, nothing of weft. The seed's programs find it with
 * -I ../sched (it shadows the system <sched.h>, as the seed's did). The
 * drop-in tests copy it to sched/ next to sudoku/ and link libweft-sched.a
 * in place of the seed's libsched.a. */
#ifndef __SCHED_H__
#define __SCHED_H__

#include <assert.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heap.h"

typedef struct task {
	uint64_t pri;
	void (*fptr)(void *, int);
	void *args;
} task_t;

void task_init(task_t *tp, uint64_t pri, void (*fptr)(void *, int), void *args);

typedef enum sched_state {
	SCHED_STOPPED, /* tasks can be posted but are not processed */
	SCHED_RUNNING, /* posted tasks are processed immediately */
	SCHED_DONE     /* all workers exit */
} sched_state_t;

typedef struct priority_queue {
	pthread_cond_t cv;
	pthread_mutex_t lock;
	heap_t *heap;
	int remaining_tasks;
} priority_queue_t;

typedef struct sched {
	priority_queue_t pq;
	pthread_t *workers;
	int num_workers;
	sched_state_t state;
} sched_t;

bool sched_init(sched_t *sp, int num_workers, int queue_depth);
bool sched_post(sched_t *sp, task_t *tp, bool run_now);
void sched_execute(sched_t *sp);
void sched_fini(sched_t *sp);

#endif
