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

/* What the tasks record, in the order they run. */
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

int main(void)
{
	weft_rt *rt;
	if (weft_rt_create(&rt, NULL) != 0)
		return 1;
	weft_mutex_init(&log_lock);

	/* Three delayed tasks posted out of order run in deadline order. */
	weft_task late, early, middle;
	int64_t now = weft_clock_ns();
	weft_task_init(&late, say, "30ms ");
	weft_task_init(&early, say, "10ms ");
	weft_task_init(&middle, say, "20ms ");
	weft_post_at(rt, NULL, &late, now + 30 * MS);
	weft_post_at(rt, NULL, &early, now + 10 * MS);
	weft_post_at(rt, NULL, &middle, now + 20 * MS);
	weft_wait_all(rt);
	printf("delayed: %s\n", log_text);

	/* A diamond: fetch, then parse and index (in either order, perhaps at
	 * once), then publish, which depends on both. A predecessor must have
	 * been posted; one that already finished counts as done. */
	log_text[0] = '\0';
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
