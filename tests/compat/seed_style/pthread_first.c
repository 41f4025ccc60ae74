/*
 * The other order: <pthread.h> first, which itself includes <sched.h> and
 * so reaches weft's compat header while <pthread.h> is still half read,
 * then <sched.h> again for the seed API.
 */
#include <pthread.h>
#include <stdio.h>

#include <sched.h>

static pthread_mutex_t order_lock = PTHREAD_MUTEX_INITIALIZER;
static int order_log[256];
static int order_len;
static bool worker_used[64];

void record_order(int id)
{
	(void)pthread_mutex_lock(&order_lock);
	if (order_len < 256)
		order_log[order_len] = id;
	order_len++;
	(void)pthread_mutex_unlock(&order_lock);
}

int recorded(int *out, int max)
{
	int i, n;

	(void)pthread_mutex_lock(&order_lock);
	n = order_len < max ? order_len : max;
	for (i = 0; i < n; i++)
		out[i] = order_log[i];
	n = order_len;
	(void)pthread_mutex_unlock(&order_lock);
	return (n);
}

static void mark_worker(void *arg, int thread_num)
{
	(void)arg;
	(void)pthread_mutex_lock(&order_lock);
	if (thread_num >= 0 && thread_num < 64)
		worker_used[thread_num] = true;
	(void)pthread_mutex_unlock(&order_lock);
}

/*
 * How many distinct worker numbers a fresh two-worker scheduler hands out
 * to a handful of tasks: at least one. Exercises the API from this file.
 */
int workers_seen(void)
{
	int i, n = 0;
	sched_t s;
	task_t t[8];

	if (!sched_init(&s, 2, 8))
		return (0);
	for (i = 0; i < 8; i++) {
		task_init(&t[i], 1, mark_worker, NULL);
		(void)sched_post(&s, &t[i], false);
	}
	sched_execute(&s);
	sched_fini(&s);
	for (i = 0; i < 64; i++)
		n += worker_used[i];
	return (n);
}
