/* deadline: waiting with a deadline, and cancelling.
 *
 * Every wait in weft has a _until form taking a CLOCK_MONOTONIC deadline in
 * nanoseconds (weft_clock_ns() + a timeout): it returns WEFT_ETIMEDOUT and
 * leaves the thing waited for unaffected. weft_cancel stops a task that has
 * not started; a running task is not interrupted, it asks
 * weft_cancel_requested() and stops itself. */
#include <stdio.h>
#include <weft/weft.h>

#define MS 1000000LL /* nanoseconds */

typedef struct job {
	weft_sem started;
	int steps; /* how many 1 ms steps it ran before it stopped */
} job;

/* A long job: up to 10 s in 1 ms steps, unless cancelled. */
static void long_job(void *arg)
{
	job *j = arg;
	weft_sem_post(&j->started);
	for (j->steps = 0; j->steps < 10000 && !weft_cancel_requested(); j->steps++)
		weft_sleep_ns(1 * MS); /* parks a fiber, sleeps a thread */
}

static void never(void *arg)
{
	(void)arg;
	printf("never printed\n");
}

int main(void)
{
	weft_rt *rt;
	if (weft_rt_create(&rt, NULL) != 0)
		return 1;

	/* 1. A wait that times out, then a cancel of a running task. */
	job j;
	weft_task t;
	weft_sem_init(&j.started, 0);
	weft_task_init(&t, long_job, &j);
	weft_post(rt, &t);
	weft_sem_wait(&j.started); /* it is running now */
	int rc = weft_wait_until(&t, weft_clock_ns() + 20 * MS);
	printf("wait 20 ms: %s\n", weft_err_name(rc));
	rc = weft_cancel(&t); /* too late to stop it from starting: WEFT_EBUSY */
	printf("cancel a running task: %s\n", weft_err_name(rc));
	rc = weft_wait(&t); /* it sees weft_cancel_requested() and returns */
	printf("it stopped by itself: %s, %s\n", weft_err_name(rc),
	       j.steps < 10000 ? "early" : "after all its steps");

	/* 2. A task delayed by an hour, cancelled before it starts. */
	weft_task later;
	weft_task_init(&later, never, NULL);
	weft_post_at(rt, NULL, &later, weft_clock_ns() + 3600 * 1000 * MS);
	printf("cancel a task that has not started: %s\n", weft_err_name(weft_cancel(&later)));
	printf("waiting for it: %s\n", weft_err_name(weft_wait(&later)));

	/* 3. A receive that times out on an empty channel. */
	weft_chan ch;
	int buf[1], v;
	weft_chan_init(&ch, sizeof(int), 1, buf);
	rc = weft_chan_recv_until(&ch, &v, weft_clock_ns() + 5 * MS);
	printf("receive from an empty channel, 5 ms: %s\n", weft_err_name(rc));

	return weft_rt_destroy(rt) == 0 ? 0 : 1;
}
