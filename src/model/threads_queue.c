/* Model threads' shared queue (threads.h): the inbox that outside posts
 * push onto, the policy's ready queue it is moved into under the lock, the
 * batches workers take from it and steal from each other, and waking a
 * sleeper for them. threads.c's essay says why it is shaped so. */
#include "core/futex.h"
#include "core/observe.h"
#include "core/spin.h"
#include "core/task_list.h"
#include "model/threads.h"
#include "obs/probes.h"

/* Moves the inbox into the ready queue. Caller holds m->lock, between
 * drain_begin and drain_end. */
void weft__threads_drain_inbox(threads *m)
{
	/* In post order by the keys threads_submit gave (core/task_list.h). */
	weft_task *in_order = weft__tasks_by_post_key(weft__inbox_take(&m->inbox));
	while (in_order) {
		weft_task *next = in_order->next_;
		weft__readyq_push(&m->ready, in_order);
		in_order = next;
	}
}

/* Takes the back half of the first non-empty batch after w's into out.
 * Returns how many (0 when every other batch is empty). */
static int steal(threads *m, worker *w, weft_task **out)
{
	for (int i = 1; i < m->nworkers; i++) {
		int n = weft__batch_take_back(&m->workers[(w->index + i) % m->nworkers].batch,
		                              false, out);
		if (n > 0)
			return n;
	}
	return 0;
}

/* Refills w's batch. Any unstarted rest of the old batch goes back to the
 * queue first, last task first, so each lands in front of what was behind
 * it. Then, under the lock:
 *
 * - Batches taken earlier hold older work than the queue, so half of
 *   another worker's batch comes first. Otherwise a task that waits for one
 *   held in a blocked worker's batch could wait forever while this worker
 *   ran younger tasks (the seed's one-at-a-time queue has no such trap).
 *   Every fill happens under the lock, so a batch taken just before is
 *   always seen.
 * - Else up to 1/N of the queue, at most BATCH_MAX, so the lock and the
 *   queue's lines move once per batch rather than once per task.
 *
 * Returns false if there was no work. */
static bool take_batch(threads *m, worker *w)
{
	weft_task *rest[BATCH_MAX], *got[BATCH_MAX];
	int nrest = weft__batch_take_back(&w->batch, true, rest);
	if (nrest == 0 && !weft__threads_has_work(m) && !weft__threads_stealable(m))
		return false;
	bool drain = !weft__inbox_empty(&m->inbox);
	if (drain)
		weft__threads_drain_begin(m);
	weft__lock_acquire(&m->lock);
	while (nrest > 0)
		weft__readyq_unpop(&m->ready, rest[--nrest]);
	if (drain)
		weft__threads_drain_inbox(m);
	int ngot = steal(m, w, got);
	bool stole = ngot > 0;
	if (stole) { /* under the lock a batch seen is a batch taken */
		WEFT__PROBE2(task__steal, w->index, ngot);
		weft__count(&w->steals, 1);
		weft__count(&w->attempts, 1);
	}
	if (ngot == 0) {
		size_t n = m->ready.len / (size_t)m->nworkers;
		n = n < 1 ? 1 : n > BATCH_MAX ? BATCH_MAX : n;
		weft_task *t;
		while (ngot < (int)n && (t = weft__readyq_pop(&m->ready)))
			got[ngot++] = t;
	}
	weft__batch_fill(&w->batch, got, ngot);
	weft__threads_unlock(m);
	if (drain)
		weft__threads_drain_end(m);
	if (stole)
		weft__trace(m->rt, WEFT__TRACE_STEAL, NULL, false);
	w->last_batch = ngot;
	if (ngot > 1 && weft__threads_room_for_one_more(m))
		weft__threads_wake_if_needed(m); /* an idle worker may take half */
	return ngot > 0;
}

/* Under an ordered policy, when this worker's own tasks sent more work to
 * the queue (which may be more urgent), the rest of the batch goes back and
 * the queue is asked again; arrivals from outside race with the take
 * anyway, so they are not checked, which keeps the inbox line out of this
 * path. When a small batch runs out and this worker sent nothing, it waits
 * about a microsecond before asking again, so that a poster in full flow
 * gets ahead and the next batch is bigger: chasing it task by task makes
 * every post and every take miss the cache. */
weft_task *weft__threads_next_task(threads *m, worker *w)
{
	bool own_posts = w->shared_posts != w->shared_at_take;
	weft_task *t = NULL;
	if (!(m->ordered && own_posts))
		t = weft__batch_take_front(&w->batch);
	if (!t) {
		if (w->last_batch < BATCH_MAX / 2 && !own_posts)
			weft__cpu_relax_n(BATCH_WAIT_PAUSES);
		w->shared_at_take = w->shared_posts;
		if (!take_batch(m, w) || !(t = weft__batch_take_front(&w->batch)))
			return NULL;
	}
	weft__dequeued(m->rt, 1);
	return t;
}

/* Wakes one idle worker, unless one is already spinning: the woken worker
 * counts as spinning until it finds work. */
void weft__threads_wake_one(threads *m)
{
	weft__idler *i = weft__idle_claim(&m->idle);
	if (i)
		weft__futex_wake(&i->claimed, 1);
}
