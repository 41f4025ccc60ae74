/* libweft-sched.a against the seed's own sched.h (sched/sched.h: the
 * seed's task_t and sched_t layouts), beyond what the sudoku exercises:
 * the struct fields the seed's programs could read, a task_t reused at once
 * after sched_post (the drop-in posts a copy), run_now posts, bursts of
 * post/execute, more posts than a queue's worth between executes (the
 * copies are reaped), a full queue, and a failed sched_init.
 *
 *   test_compat_sched_dropin <workers>   prints "sched-dropin: PASS" */
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>

static int failures;

#define CHECK(cond)                                                                     \
	do {                                                                            \
		if (!(cond)) {                                                          \
			fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); \
			failures++;                                                     \
		}                                                                       \
	} while (0)

static atomic_long sum;
static atomic_int bad_index;
static int g_workers;

static void add(void *arg, int thread_num)
{
	if (thread_num < 0 || thread_num >= g_workers)
		atomic_store(&bad_index, 1);
	atomic_fetch_add(&sum, (long)(intptr_t)arg);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 2;
	sched_t s;
	task_t t;

	/* task_init writes the seed's three fields. */
	task_init(&t, 7, add, (void *)(intptr_t)1);
	CHECK(t.pri == 7 && t.fptr == add && t.args == (void *)(intptr_t)1);

	CHECK(sched_init(&s, n, 4));
	g_workers = s.num_workers;
	CHECK(s.num_workers >= 1);
	CHECK(s.state == SCHED_STOPPED);

	/* One task_t, reposted at once with new arguments: each post is a
	 * copy, so all four run with their own. */
	for (long v = 1; v <= 4; v++) {
		task_init(&t, 1, add, (void *)(intptr_t)v);
		CHECK(sched_post(&s, &t, false));
	}
	CHECK(!sched_post(&s, &t, false)); /* queue_depth 4 tasks waiting */
	CHECK(atomic_load(&sum) == 0);     /* held while stopped */
	sched_execute(&s);
	CHECK(atomic_load(&sum) == 10);
	CHECK(s.state == SCHED_STOPPED);

	/* run_now: running until the next execute. */
	task_init(&t, 1, add, (void *)(intptr_t)100);
	CHECK(sched_post(&s, &t, true));
	CHECK(s.state == SCHED_RUNNING);
	sched_execute(&s);
	CHECK(atomic_load(&sum) == 110);

	/* Many bursts, and many posts in running state between executes:
	 * the copies must be reaped, not pile up (ASan's leak check at exit
	 * and the count below). */
	atomic_store(&sum, 0);
	task_init(&t, 1, add, (void *)(intptr_t)1);
	CHECK(sched_post(&s, &t, true));
	long posted = 1;
	for (int i = 0; i < 1000; i++) {
		task_init(&t, (uint64_t)i, add, (void *)(intptr_t)1);
		while (!sched_post(&s, &t, false))
			; /* full: workers are draining */
		posted++;
	}
	sched_execute(&s);
	CHECK(atomic_load(&sum) == posted);
	for (int b = 0; b < 50; b++) {
		for (int i = 0; i < 4; i++) {
			task_init(&t, 1, add, (void *)(intptr_t)1);
			CHECK(sched_post(&s, &t, false));
		}
		sched_execute(&s);
	}
	CHECK(atomic_load(&sum) == posted + 200);
	CHECK(atomic_load(&bad_index) == 0);
	sched_fini(&s);
	CHECK(s.state == SCHED_DONE);
	CHECK(!sched_post(&s, &t, false)); /* after fini */

	/* A failed init: false, said on stderr; posts then fail, execute
	 * returns, fini releases it. */
	CHECK(!sched_init(&s, -1, 4));
	CHECK(!sched_post(&s, &t, false));
	sched_execute(&s);
	sched_fini(&s);

	if (failures)
		return 1;
	printf("sched-dropin: PASS\n");
	return 0;
}
