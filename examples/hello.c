#include <stdio.h>
#include <weft/weft.h>

static void square(void *arg)
{
	int *v = arg;
	*v = *v * *v;
}

int main(void)
{
	int values[100];
	weft_task tasks[100]; /* caller-owned: posting allocates nothing */
	weft_rt *rt;

	if (weft_rt_create(&rt, NULL) != 0) /* model, workers, policy from WEFT_* */
		return 1;
	for (int i = 0; i < 100; i++) {
		values[i] = i;
		weft_task_init(&tasks[i], square, &values[i]);
		int err = weft_post(rt, &tasks[i]);
		if (err == WEFT_EFULL) /* bounded queue full (WEFT_QUEUE_CAPACITY) */
			err = weft_post_wait(rt, &tasks[i]); /* wait for room */
		if (err != 0) {
			fprintf(stderr, "weft_post: %s\n", weft_strerror(err));
			weft_rt_destroy(rt); /* runs what was posted, then frees */
			return 1;
		}
	}
	weft_wait_all(rt); /* every task posted so far has finished */
	printf("99 squared is %d\n", values[99]);
	return weft_rt_destroy(rt) == 0 ? 0 : 1; /* drains, joins, frees */
}
