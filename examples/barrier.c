/* barrier: tasks that advance in lockstep, with a mutex and a condition
 * variable beside.
 *
 * Four tasks relax a one-dimensional heat bar in rounds: in each round every
 * task computes its quarter of the next array from the current one, then
 * all meet at a weft_barrier before the arrays swap. The task that
 * weft_barrier_wait tells it was last (WEFT_BARRIER_LAST) does the swap
 * and reports progress under a weft_mutex, signalling main through a
 * weft_cond. The tasks wait for each other, so each needs a thread of its
 * own under threads and spawn, where a waiting task blocks its worker (and
 * spawn runs at most WEFT_WORKERS task threads at once): there the bar is
 * cut into as many parts as there are workers (at most 4). Under fibers and
 * mn a waiting task parks, so 4 parts run even on one worker. The result
 * is the same either way. */
#include <stdio.h>
#include <weft/weft.h>

#define PARTS  4 /* at most */
#define CELLS  64
#define ROUNDS 500

static int parts;
static double bars[2][CELLS];
static int cur; /* which of bars[] is current; swapped by the last arrival */
static weft_barrier step, swapped;
static weft_mutex lock;
static weft_cond progress;
static int rounds_done;

static void relax(void *arg)
{
	int part = *(int *)arg;
	int lo = part * CELLS / parts, hi = (part + 1) * CELLS / parts;
	for (int r = 0; r < ROUNDS; r++) {
		const double *a = bars[cur];
		double *b = bars[1 - cur];
		for (int i = lo; i < hi; i++) {
			double left = i > 0 ? a[i - 1] : 100.0;        /* hot end */
			double right = i < CELLS - 1 ? a[i + 1] : 0.0; /* cold end */
			b[i] = (left + a[i] + right) / 3;
		}
		if (weft_barrier_wait(&step) == WEFT_BARRIER_LAST) {
			cur = 1 - cur;
			weft_mutex_lock(&lock);
			rounds_done++;
			weft_cond_signal(&progress);
			weft_mutex_unlock(&lock);
		}
		weft_barrier_wait(&swapped); /* nobody reads before the swap */
	}
}

int main(void)
{
	weft_rt *rt;
	if (weft_rt_create(&rt, NULL) != 0)
		return 1;
	weft_config eff; /* what the runtime runs with, after WEFT_* */
	weft_rt_config(rt, &eff);
	parts = PARTS;
	if ((eff.model == WEFT_MODEL_THREADS || eff.model == WEFT_MODEL_SPAWN) &&
	    eff.workers < PARTS)
		parts = eff.workers;
	weft_barrier_init(&step, (unsigned)parts);
	weft_barrier_init(&swapped, (unsigned)parts);
	weft_mutex_init(&lock);
	weft_cond_init(&progress);

	int ids[PARTS];
	weft_task tasks[PARTS];
	for (int p = 0; p < parts; p++) {
		ids[p] = p;
		weft_task_init(&tasks[p], relax, &ids[p]);
		weft_post(rt, &tasks[p]);
	}
	/* main waits for the halfway point through the condition variable. */
	weft_mutex_lock(&lock);
	while (rounds_done < ROUNDS / 2)
		weft_cond_wait(&progress, &lock);
	weft_mutex_unlock(&lock);
	printf("halfway: %d rounds or more\n", ROUNDS / 2);

	weft_wait_all(rt);
	printf("after %d rounds: the first cell is %.1f, the middle one %.1f\n", rounds_done,
	       bars[cur][0], bars[cur][CELLS / 2]);
	return weft_rt_destroy(rt) == 0 ? 0 : 1;
}
