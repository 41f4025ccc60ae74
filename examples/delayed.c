/* delayed: tasks that run later, and tasks that run after others.
 *
 * weft_post_at queues a task no earlier than a deadline (GCD's
 * dispatch_after); weft_post_when queues it once its predecessors have
 * finished (a dependency edge, as in a TBB flow graph or OpenMP's depend):
 * no worker sits waiting for either. */
#include <stdio.h>
#include <string.h>
#include <weft/weft.h>

#define MS 1000000LL /* nanoseconds */

/* What the dependent tasks record, in the order they run. */
static weft_mutex log_lock;
static char log_text[256];

static void note(const char *what)
{
	weft_mutex_lock(&log_lock);
	strncat(log_text, what, sizeof(log_text) - strlen(log_text) - 1);
	weft_mutex_unlock(&log_lock);
}

static void say(void *arg)
{
	note(arg);
}

/* A delayed task notes when it ran. */
typedef struct timer {
	weft_task task;
	int64_t due, ran;
} timer;

static void ring(void *arg)
{
	timer *t = arg;
	t->ran = weft_clock_ns();
}

int main(void)
{
	weft_rt *rt;
	if (weft_rt_create(&rt, NULL) != 0)
		return 1;
	weft_mutex_init(&log_lock);

	/* Three delayed tasks, posted out of order. Each is queued when it
	 * comes due, never before, in deadline order (with several workers,
	 * two that come due close together may then run at the same time). */
	int64_t now = weft_clock_ns();
	timer timers[3];
	const int delay_ms[3] = {30, 10, 20};
	for (int i = 0; i < 3; i++) {
		timers[i].due = now + delay_ms[i] * MS;
		weft_task_init(&timers[i].task, ring, &timers[i]);
		weft_post_at(rt, NULL, &timers[i].task, timers[i].due);
	}
	weft_wait_all(rt);
	for (int i = 0; i < 3; i++)
		printf("delayed %d ms: %s\n", delay_ms[i],
		       timers[i].ran >= timers[i].due ? "ran when due, not before" : "EARLY");

	/* A diamond: fetch, then parse and index (in either order, perhaps at
	 * once), then publish, which depends on both. A predecessor must have
	 * been posted; one that already finished counts as done. */
	weft_task fetch, parse, index, publish;
	weft_task_init(&fetch, say, "fetch ");
	weft_task_init(&parse, say, "parse ");
	weft_task_init(&index, say, "index ");
	weft_task_init(&publish, say, "publish");
	weft_task *after_fetch[] = {&fetch};
	weft_task *after_both[] = {&parse, &index};
	weft_post(rt, &fetch);
	weft_post_when(rt, NULL, &parse, after_fetch, 1);
	weft_post_when(rt, NULL, &index, after_fetch, 1);
	weft_post_when(rt, NULL, &publish, after_both, 2);
	weft_wait(&publish);

	/* parse and index may run in either order; fetch is first, publish last. */
	int ok = strncmp(log_text, "fetch ", 6) == 0 && strstr(log_text, "publish") &&
	         strlen(strstr(log_text, "publish")) == strlen("publish");
	printf("dependent: %s\n", ok ? "fetch, then parse and index, then publish" : log_text);
	return weft_rt_destroy(rt) == 0 && ok ? 0 : 1;
}
