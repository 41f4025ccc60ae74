/*
 * A program written the way the seed's programs were (CMPE 180C, project/):
 * it includes <sched.h> and expects the scheduler API from it, uses bool
 * without <stdbool.h>, bzero, assert and `void main`, and also relies on
 * the system <sched.h> (sched_yield, SCHED_OTHER) and on <pthread.h>. It
 * must build against weft with only -I<weft>/include/weft/compat; see
 * tests/compat/CMakeLists.txt.
 *
 * Usage: seed_style <threads>. Posts NTASKS tasks with descending
 * priorities (held), executes, then a second burst reusing the tasks,
 * checks that every task ran once per burst with a valid thread number and, with one
 * worker, in priority order. Prints "seed-style: PASS" on success.
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>

#include <sched.h>

#define NTASKS 24

typedef struct job {
	int id;
	int runs;
	int thread_num;
} job_t;

/* In pthread_first.c, which includes <pthread.h> first. */
extern void record_order(int);
extern int recorded(int *, int);
extern int workers_seen(void);

static int nworkers;

void job_func(void *arg, int thread_num)
{
	job_t *jp = arg;

	assert(jp != NULL);

	(void)sched_yield();
	jp->runs++;
	jp->thread_num = thread_num;
	record_order(jp->id);
}

static bool check_jobs(job_t *jobs, int n, int expect_runs)
{
	int i;

	for (i = 0; i < n; i++) {
		if (jobs[i].runs != expect_runs) {
			printf("job %d ran %d times, expected %d\n", i, jobs[i].runs, expect_runs);
			return (false);
		}
		if (jobs[i].thread_num < 0 || jobs[i].thread_num >= nworkers) {
			printf("job %d got thread number %d of %d\n", i, jobs[i].thread_num,
			       nworkers);
			return (false);
		}
	}
	return (true);
}

void main(int argc, char **argv)
{
	int i, n;
	int order[2 * NTASKS];
	bool ok = true;
	sched_t sched;
	task_t tasks[NTASKS];
	job_t jobs[NTASKS];

	if (argc != 2) {
		printf("Number of threads must be specified.\n");
		exit(-1);
	}

	if (sched_get_priority_max(SCHED_OTHER) < 0) {
		printf("system sched.h is not usable\n");
		exit(-1);
	}

	bzero(jobs, sizeof(jobs));

	if (!sched_init(&sched, atoi(argv[1]), NTASKS)) {
		printf("Failed to initialize scheduler.\n");
		exit(-1);
	}
	nworkers = sched.num_workers;
	assert(sched.state == SCHED_STOPPED);

	for (i = 0; i < NTASKS; i++) {
		jobs[i].id = i;
		task_init(&tasks[i], NTASKS - i, job_func, (void *)&jobs[i]);
		(void)sched_post(&sched, &tasks[i], false);
	}
	sched_execute(&sched);
	ok = ok && check_jobs(jobs, NTASKS, 1);

	/* The second burst reuses the same tasks. */
	for (i = 0; i < NTASKS; i++)
		(void)sched_post(&sched, &tasks[i], i == NTASKS - 1);
	sched_execute(&sched);
	sched_fini(&sched);
	ok = ok && check_jobs(jobs, NTASKS, 2);

	n = recorded(order, 2 * NTASKS);
	if (n != 2 * NTASKS) {
		printf("recorded %d runs, expected %d\n", n, 2 * NTASKS);
		ok = false;
	}

	/* One worker: smaller priority first, so ids descend in each burst. */
	if (ok && nworkers == 1) {
		for (i = 1; i < n; i++) {
			if (i != NTASKS && order[i] != order[i - 1] - 1) {
				printf("out of order at %d: %d after %d\n", i, order[i],
				       order[i - 1]);
				ok = false;
			}
		}
	}

	printf("seed-style: %d workers, %d tasks, %d worker(s) used\n", nworkers, n,
	       workers_seen());
	printf("seed-style: %s\n", ok ? "PASS" : "FAIL");
	exit(ok ? 0 : 1);
}
