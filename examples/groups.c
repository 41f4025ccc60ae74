/* groups: waiting for a batch of tasks, and for tasks that post tasks.
 *
 * A weft_group counts the unfinished tasks posted into it (weft_post_in);
 * weft_group_wait returns when the count is zero, including tasks posted
 * into the group while it waits. Here a directory tree is walked: a task
 * per directory posts a task per subdirectory into the same group, and
 * main waits for the group, not for each task. Priorities order what is
 * queued under the default policy (smaller first). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <weft/weft.h>

#define FANOUT 3
#define DEPTH  6    /* levels below the root */
#define DIRS   1093 /* 1 + 3 + 9 + ... + 3^6 */

typedef struct dir {
	weft_task task;
	int depth;
} dir;

static weft_rt *rt;
static weft_group all;
static dir dirs[DIRS]; /* tasks must outlive their run: no malloc needed */
static atomic_int used = 1, visited;

static void walk(void *arg)
{
	dir *d = arg;
	atomic_fetch_add(&visited, 1);
	if (d->depth == DEPTH)
		return;
	for (int i = 0; i < FANOUT; i++) {
		dir *sub = &dirs[atomic_fetch_add(&used, 1)];
		sub->depth = d->depth + 1;
		weft_task_init(&sub->task, walk, sub);
		weft_task_set_priority(&sub->task, sub->depth); /* shallow ones first */
		if (weft_post_in(rt, &all, &sub->task) != 0)
			abort();
	}
}

int main(void)
{
	if (weft_rt_create(&rt, NULL) != 0)
		return 1;
	weft_group_init(&all);

	dirs[0].depth = 0;
	weft_task_init(&dirs[0].task, walk, &dirs[0]);
	weft_post_in(rt, &all, &dirs[0].task);
	weft_group_wait(&all); /* also waits for the tasks the tasks posted */
	printf("visited %d directories, %ld still pending\n", atomic_load(&visited),
	       weft_group_pending(&all));
	return weft_rt_destroy(rt) == 0 ? 0 : 1;
}
