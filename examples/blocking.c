/* blocking: calling a library that blocks, from tasks, without stalling
 * the other tasks.
 *
 * A fiber that makes a blocking system call blocks its whole worker, and
 * with it every fiber of that worker. weft_blocking(fn, arg) runs fn on a
 * helper thread while the fiber parks (on a kernel-thread worker it simply
 * calls fn). Here ten tasks each call a "legacy" function that blocks in
 * nanosleep for 50 ms; under fibers, one worker, they overlap and finish in
 * about 50 ms rather than 500. weft_sleep_ns, weft_wait_fd and the weft_*
 * primitives need none of this: they already park a fiber. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <time.h>
#include <weft/weft.h>

#define TASKS 10

/* Stands for a call into a library that blocks its thread (a DNS lookup,
 * a database client, a file on a slow disk). */
static void legacy_call(void *arg)
{
	struct timespec ts = {0, 50 * 1000000L};
	nanosleep(&ts, NULL);
	*(int *)arg = 1;
}

static void task(void *arg)
{
	weft_blocking(legacy_call, arg);
}

int main(void)
{
	weft_rt *rt;
	if (weft_rt_create(&rt, NULL) != 0)
		return 1;
	int done[TASKS] = {0};
	weft_task tasks[TASKS];
	int64_t start = weft_clock_ns();
	for (int i = 0; i < TASKS; i++) {
		weft_task_init(&tasks[i], task, &done[i]);
		weft_post(rt, &tasks[i]);
	}
	weft_wait_all(rt);
	int total = 0;
	for (int i = 0; i < TASKS; i++)
		total += done[i];
	/* Timing goes to stderr: it depends on the model and the machine. */
	fprintf(stderr, "blocking: %d calls of 50 ms in %.0f ms\n", TASKS,
	        (double)(weft_clock_ns() - start) / 1e6);
	printf("%d of %d blocking calls done\n", total, TASKS);
	return weft_rt_destroy(rt) == 0 ? 0 : 1;
}
