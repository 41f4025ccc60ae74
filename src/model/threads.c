/* Model threads: N kernel workers draining one ready queue.
 *
 * The seed's pool took one mutex for every post and every pop, kept the
 * count of unfinished tasks under it, and broadcast a condition variable on
 * every change, so each empty task cost several lock hand-offs and often a
 * sleep and a wake-up. Here the work per task is kept to the few cache lines
 * that must move between cores:
 *
 * - Posting pushes the task onto an inbox, a lock-free LIFO stack, with one
 *   CAS. No lock is shared with the workers.
 * - A worker that needs work takes the scheduler lock, moves the whole inbox
 *   into the policy's ready queue (reversing the stack restores post order,
 *   which is when FIFO sequence numbers are stamped), and takes a batch: up
 *   to 1/N of the queue, at most BATCH_MAX, so the lock and the queue's
 *   lines move once per batch. A batch is only a prefetch (see next_task):
 *   it goes back to the queue when another worker runs dry, and under
 *   priority when the worker's own tasks posted more, so order and balance
 *   hold as if tasks were taken one at a time.
 * - The expensive case is a worker that keeps up with a poster: both then
 *   touch the inbox and each task's line alternately, and every access
 *   misses (measured: ~300 ns per post with one worker). So workers never
 *   poll the shared lines in a tight loop, and after a small batch they wait
 *   about a microsecond so the poster gets ahead (then ~55 ns per task).
 * - Completion is counted per worker, on the worker's own line. Nothing
 *   shared is written per task, so wait_all cannot be a counter reaching
 *   zero; instead it checks quiescence: the sum of finished counts equals the
 *   sum of posted counts. Each count only grows and every task is counted as
 *   posted before it can finish, so reading all finished counts first and
 *   all posted counts second, equal sums prove a moment at which everything
 *   posted had finished (children are posted before their parent finishes).
 * - Idle workers poll quietly for ~15 us (reads only, ~0.4 us apart), then
 *   sleep on their own futex word, through the idle list of core/idle.h
 *   (shared with mn; Go's scheduler is the model for waking):
 *   a post wakes a sleeper only when no wake-up is in flight (a woken worker
 *   counts in nspinning until it finds work; claimed by a CAS 0 -> 1), and a
 *   woken worker that finds work wakes one more if work remains, so
 *   parallelism ramps up one worker at a time rather than all at once.
 *
 * Lost wake-ups are prevented by the publish-then-check order on both
 * sides, with a full barrier in between:
 *   poster: push to inbox (seq_cst CAS); read nspinning, nidle -> maybe wake.
 *   worker: nspinning--, or join the idle list; fence; re-check for work.
 * Either the poster sees the worker idle, or the worker sees the task.
 * wait_all uses the same pattern with all_waiters against finished counts.
 *
 * Destroy: closing makes external posts fail (see threads_submit for the
 * race with a poster already inside); the destroyer waits for quiescence,
 * sets stopping, wakes every sleeper and joins. Cancel sets rt->cancelling
 * first; workers then complete queued tasks as cancelled instead of running
 * them. */
#include <stdio.h>

#include "core/completion.h"
#include "core/futex.h"
#include "core/idle.h"
#include "core/inbox.h"
#include "core/internal.h"
#include "core/lock.h"
#include "core/observe.h"
#include "core/spin.h"
#include "obs/probes.h"

#define BATCH_MAX         16
#define SPIN_ROUNDS       32
#define SPIN_PAUSES       16 /* between polls of an idle worker, ~0.4 us */
#define BATCH_WAIT_PAUSES 40 /* ~1 us: see next_task */

typedef struct worker {
	/* Written only by the worker itself, read by quiescence checks. */
	WEFT__ALIGNED _Atomic uint64_t finished; /* run or cancelled */
	_Atomic uint64_t posted;                 /* tasks this worker's tasks posted */
	_Atomic uint64_t cancelled;
	_Atomic uint64_t sleeps;
	_Atomic uint64_t steals; /* batches taken from another worker; this worker writes */
	uint64_t posted_at_take; /* posted when the batch was taken; owner only */
	int last_batch;          /* size of the last batch taken; owner only */

	/* The batch: tasks taken from the queue and not yet started, entries
	 * [pos, len) of batch[]. span packs gen:32 pos:16 len:16. The owner
	 * takes from the front and other workers steal from the back, both by
	 * CAS on span, so no task hides in a busy worker's batch (a task that
	 * waits for a later one in the same batch would otherwise deadlock).
	 * Entries are written only by the owner while the batch is empty, and
	 * every refill changes gen, so a thief that read entries of an older
	 * batch fails its CAS. */
	WEFT__ALIGNED _Atomic uint64_t span;
	_Atomic(weft_task *) batch[BATCH_MAX];

	weft__idler idler; /* claimed is the futex word it sleeps on */

	struct threads *m;
	int index;
	pthread_t thread;
} worker;

typedef struct threads {
	weft_rt *rt;
	int nworkers;
	bool ordered; /* the policy's order must hold across batches */

	/* Written by posters and emptied by workers. */
	WEFT__ALIGNED weft__inbox inbox;

	/* The ready queue, under lock. ready_len mirrors ready.len for lock-free
	 * "is there work?" checks. */
	WEFT__ALIGNED weft__lock lock;
	weft__readyq ready;
	_Atomic size_t ready_len;

	weft__idle idle; /* idle and spinning workers (core/idle.h) */
	_Atomic int stopping;

	worker workers[];
} threads;

static size_t state_size(int nworkers)
{
	return sizeof(threads) + (size_t)nworkers * sizeof(worker);
}

static bool has_work(threads *m)
{
	return !weft__inbox_empty(&m->inbox) ||
	       atomic_load_explicit(&m->ready_len, memory_order_relaxed) != 0;
}

/* Moves the inbox into the ready queue. Caller holds m->lock. */
static void drain_inbox(threads *m)
{
	weft_task *in_order = weft__inbox_take(&m->inbox);
	while (in_order) {
		weft_task *next = in_order->next_;
		weft__readyq_push(&m->ready, in_order);
		in_order = next;
	}
}

/* Returns the unstarted rest of w's batch to the ready queue, last first,
 * so that each goes back in front of everything queued after it. Caller
 * holds m->lock. */
#define SPAN(gen, pos, len) ((uint64_t)(gen) << 32 | (uint64_t)(pos) << 16 | (uint64_t)(len))
#define SPAN_GEN(s)         ((uint32_t)((s) >> 32))
#define SPAN_POS(s)         ((int)(((s) >> 16) & 0xffff))
#define SPAN_LEN(s)         ((int)((s)&0xffff))

static void wake_if_needed(threads *m);

/* Publishes n tasks as w's new batch. Owner only, with the batch empty. */
static void batch_fill(worker *w, weft_task *const *tasks, int n)
{
	uint64_t s = atomic_load_explicit(&w->span, memory_order_relaxed);
	for (int i = 0; i < n; i++)
		atomic_store_explicit(&w->batch[i], tasks[i], memory_order_relaxed);
	atomic_store(&w->span, SPAN(SPAN_GEN(s) + 1, 0, n)); /* seq_cst: see wake */
}

/* Takes the first unstarted task of w's own batch, or NULL. */
static weft_task *batch_take_front(worker *w)
{
	uint64_t s = atomic_load_explicit(&w->span, memory_order_acquire);
	while (SPAN_POS(s) < SPAN_LEN(s)) {
		weft_task *t = atomic_load_explicit(&w->batch[SPAN_POS(s)], memory_order_relaxed);
		if (atomic_compare_exchange_weak_explicit(&w->span, &s, s + SPAN(0, 1, 0),
		                                          memory_order_acq_rel,
		                                          memory_order_acquire))
			return t;
	}
	return NULL;
}

/* Takes the back half (rounded up) of v's batch, or all of it when whole
 * is set, into out. Returns how many. */
static int batch_take_back(worker *v, bool whole, weft_task **out)
{
	uint64_t s = atomic_load_explicit(&v->span, memory_order_acquire);
	for (;;) {
		int pos = SPAN_POS(s), len = SPAN_LEN(s);
		int k = whole ? len - pos : (len - pos + 1) / 2;
		if (k <= 0)
			return 0;
		for (int i = 0; i < k; i++)
			out[i] = atomic_load_explicit(&v->batch[len - k + i], memory_order_relaxed);
		if (atomic_compare_exchange_weak_explicit(
		            &v->span, &s, SPAN(SPAN_GEN(s), pos, len - k), memory_order_acq_rel,
		            memory_order_acquire))
			return k;
	}
}

static bool stealable(threads *m)
{
	for (int i = 0; i < m->nworkers; i++) {
		uint64_t s = atomic_load_explicit(&m->workers[i].span, memory_order_relaxed);
		if (SPAN_POS(s) < SPAN_LEN(s))
			return true;
	}
	return false;
}

/* Takes the back half of the first non-empty batch after w's into out.
 * Returns how many (0 when every other batch is empty). */
static int steal(threads *m, worker *w, weft_task **out)
{
	for (int i = 1; i < m->nworkers; i++) {
		int n = batch_take_back(&m->workers[(w->index + i) % m->nworkers], false, out);
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
	int nrest = batch_take_back(w, true, rest);
	if (nrest == 0 && !has_work(m) && !stealable(m))
		return false;
	weft__lock_acquire(&m->lock);
	while (nrest > 0)
		weft__readyq_unpop(&m->ready, rest[--nrest]);
	int ngot = steal(m, w, got);
	bool stole = ngot > 0;
	if (stole) {
		WEFT__PROBE2(task__steal, w->index, ngot);
		atomic_store_explicit(&w->steals,
		                      atomic_load_explicit(&w->steals, memory_order_relaxed) + 1,
		                      memory_order_relaxed);
	}
	if (ngot == 0) {
		drain_inbox(m);
		size_t n = m->ready.len / (size_t)m->nworkers;
		n = n < 1 ? 1 : n > BATCH_MAX ? BATCH_MAX : n;
		weft_task *t;
		while (ngot < (int)n && (t = weft__readyq_pop(&m->ready)))
			got[ngot++] = t;
		atomic_store_explicit(&m->ready_len, m->ready.len, memory_order_relaxed);
	}
	batch_fill(w, got, ngot);
	weft__lock_release(&m->lock);
	if (stole)
		weft__trace(m->rt, WEFT__TRACE_STEAL, NULL, false);
	w->last_batch = ngot;
	if (ngot > 1)
		wake_if_needed(m); /* an idle worker may take half */
	return ngot > 0;
}

static void relax(int pauses)
{
	for (int i = 0; i < pauses; i++)
		weft__cpu_relax();
}

/* Under an ordered policy, when this worker's own tasks posted more work
 * (which may be more urgent), the rest of the batch goes back and the queue
 * is asked again; arrivals from outside race with the take anyway, so they
 * are not checked, which keeps the inbox line out of this path. When a
 * small batch runs out and this worker posted nothing, it waits about a
 * microsecond before asking again, so that a poster in full flow gets ahead
 * and the next batch is bigger: chasing it task by task makes every post
 * and every take miss the cache. */
static weft_task *next_task(threads *m, worker *w)
{
	uint64_t posted = atomic_load_explicit(&w->posted, memory_order_relaxed);
	bool own_posts = posted != w->posted_at_take;
	weft_task *t = NULL;
	if (!(m->ordered && own_posts))
		t = batch_take_front(w);
	if (!t) {
		if (w->last_batch < BATCH_MAX / 2 && !own_posts)
			relax(BATCH_WAIT_PAUSES);
		w->posted_at_take = posted;
		if (!take_batch(m, w) || !(t = batch_take_front(w)))
			return NULL;
	}
	weft__dequeued(m->rt, 1);
	return t;
}

/* Wakes one idle worker, unless one is already spinning: the woken worker
 * counts as spinning until it finds work. */
static void wake_one(threads *m)
{
	weft__idler *i = weft__idle_claim(&m->idle);
	if (i)
		weft__futex_wake(&i->claimed, 1);
}

/* Callers have made their work visible with a seq_cst operation (the
 * inbox CAS, the batch's span store), which orders it before these seq_cst
 * loads; a worker going idle does the mirror image (see sleep_idle). */
static void wake_if_needed(threads *m)
{
	if (weft__idle_wanted(&m->idle))
		wake_one(m);
}

static uint64_t sum_finished(void *state)
{
	threads *m = state;
	uint64_t n = 0;
	for (int i = 0; i < m->nworkers; i++)
		n += atomic_load(&m->workers[i].finished);
	return n;
}

static uint64_t sum_posted(void *state)
{
	threads *m = state;
	uint64_t n = 0;
	for (int i = 0; i < m->nworkers; i++)
		n += atomic_load(&m->workers[i].posted);
	return n;
}

static const weft__worker_sums sums = {sum_finished, sum_posted};

static void threads_wait_all(weft_rt *rt)
{
	threads *m = rt->model_state;
	weft__wait_quiescent(&rt->done, &sums, m);
}

/* Puts w on the idle list and sleeps until woken. Returns false if, after
 * publishing itself idle, w found work or the stop request and left the
 * list itself (then it is not spinning). */
static bool sleep_idle(threads *m, worker *w)
{
	weft__idle_join(&m->idle, &w->idler);
	if (has_work(m) || stealable(m) || atomic_load(&m->stopping))
		return weft__idle_leave(&m->idle, &w->idler);
	atomic_fetch_add_explicit(&w->sleeps, 1, memory_order_relaxed);
	while (atomic_load(&w->idler.claimed) == 0)
		weft__futex_wait(&w->idler.claimed, 0, -1);
	return true;
}

static void *worker_main(void *arg)
{
	worker *w = arg;
	threads *m = w->m;
	weft_rt *rt = m->rt;
	weft__tls.rt = rt;
	weft__tls.index = w->index;
	bool spinning = false;
	weft__worker_started(rt, w->index);

	for (;;) {
		weft_task *t = next_task(m, w);
		if (t) {
			weft__idle_end(rt, w->index);
			if (spinning) {
				spinning = false;
				if (atomic_fetch_sub(&m->idle.nspinning, 1) == 1 && has_work(m))
					wake_if_needed(m); /* the fetch_sub is the fence */
			}
			uint64_t cancelled = !weft__run_task(rt, t);
			atomic_store_explicit(&w->cancelled, w->cancelled + cancelled,
			                      memory_order_relaxed);
			atomic_store_explicit(&w->finished, w->finished + 1, memory_order_release);
			continue;
		}

		weft__idle_begin(rt, w->index);
		weft__notify_quiescent(&m->rt->done, &sums, m);
		/* Poll quietly before sleeping: no shared writes, and reads of
		 * the shared lines only now and then, since each one makes the
		 * next post (or the victim's next take) pay to take the line
		 * back. */
		bool found = false;
		for (int i = 0; i < SPIN_ROUNDS && !found; i++) {
			found = has_work(m) || stealable(m);
			if (!found)
				relax(SPIN_PAUSES);
		}
		if (found)
			continue;
		if (spinning) {
			spinning = false;
			atomic_fetch_sub(&m->idle.nspinning, 1);
		}
		atomic_thread_fence(memory_order_seq_cst);
		if (has_work(m) || stealable(m))
			continue;
		if (atomic_load(&m->stopping))
			break;
		spinning = sleep_idle(m, w);
	}
	if (spinning)
		atomic_fetch_sub(&m->idle.nspinning, 1);
	weft__worker_stopped(rt, w->index);
	weft__tls.rt = NULL;
	weft__tls.index = -1;
	return NULL;
}

static void push_and_wake(void *state, weft_task *t)
{
	threads *m = state;
	weft__inbox_push(&m->inbox, t);
	wake_if_needed(m);
}

static int threads_submit(weft_rt *rt, weft_task *t, bool from_task)
{
	threads *m = rt->model_state;
	if (!from_task) {
		push_and_wake(m, t);
		return 0;
	}
	worker *w = &m->workers[weft__tls.index];
	atomic_store_explicit(&w->posted, w->posted + 1, memory_order_relaxed);
	push_and_wake(m, t);
	return 0;
}

static void kick(weft__idler *i, void *ctx)
{
	(void)ctx;
	weft__futex_wake(&i->claimed, 1);
}

static void stop_workers(threads *m, int started)
{
	atomic_store(&m->stopping, 1);
	weft__idle_claim_all(&m->idle, kick, NULL);
	for (int i = 0; i < started; i++)
		pthread_join(m->workers[i].thread, NULL);
}

static void threads_release(weft_rt *rt)
{
	threads *m = rt->model_state;
	weft__free(m, state_size(m->nworkers));
	rt->model_state = NULL;
}

static int threads_start(weft_rt *rt)
{
	int n = rt->cfg.workers;
	threads *m = weft__alloc(state_size(n));
	if (!m)
		return WEFT_ENOMEM;
	m->rt = rt;
	m->nworkers = n;
	weft__readyq_init(&m->ready, &rt->cfg);
	m->ordered = m->ready.ops->ordered;
	rt->model_state = m;
	for (int i = 0; i < n; i++) {
		worker *w = &m->workers[i];
		w->m = m;
		w->index = i;
		int rc = weft__worker_create(&w->thread, worker_main, w, rt, i);
		if (rc) {
			stop_workers(m, i);
			threads_release(rt);
			return rc;
		}
	}
	return 0;
}

static void threads_stop(weft_rt *rt)
{
	threads *m = rt->model_state;
	threads_wait_all(rt);
	stop_workers(m, m->nworkers);
}

/* The newest post not yet in the ready queue, or NULL. Under the lock,
 * which every other taker of the inbox holds too: a task can only be
 * posted again after a taker ran it, so the CAS cannot be fooled by a head
 * that left and came back (ABA). */
static weft_task *take_newest(threads *m)
{
	if (weft__inbox_empty(&m->inbox))
		return NULL;
	weft__lock_acquire(&m->lock);
	weft_task *t = atomic_load_explicit(&m->inbox.head, memory_order_acquire);
	while (t &&
	       !atomic_compare_exchange_weak_explicit(&m->inbox.head, &t, t->next_,
	                                              memory_order_acquire, memory_order_acquire))
		;
	weft__lock_release(&m->lock);
	return t;
}

/* A worker waiting inside a task (task.c) runs one task: the newest post
 * first, which is most likely what it waits for (a child it just posted),
 * so that nested waits go depth-first and stay as deep as the fork-join
 * tree; then as its loop would, from its batch, another's, or the queue. */
static bool threads_help(weft_rt *rt)
{
	threads *m = rt->model_state;
	worker *w = &m->workers[weft__tls.index];
	weft_task *t = take_newest(m);
	if (t)
		weft__dequeued(rt, 1);
	else if (!(t = next_task(m, w)))
		return false;
	uint64_t cancelled = !weft__run_task(rt, t);
	atomic_store_explicit(&w->cancelled, w->cancelled + cancelled, memory_order_relaxed);
	atomic_store_explicit(&w->finished, w->finished + 1, memory_order_release);
	return true;
}

static bool threads_has_queued(weft_rt *rt)
{
	threads *m = rt->model_state;
	return has_work(m) || stealable(m);
}

static void threads_print_stats(const weft_stats *s, FILE *out)
{
	fprintf(out, "weft: steals %llu\n", (unsigned long long)s->steals);
}

static void threads_stats(weft_rt *rt, weft_stats *s)
{
	threads *m = rt->model_state;
	uint64_t finished = 0;
	for (int i = 0; i < m->nworkers; i++) {
		worker *w = &m->workers[i];
		finished += atomic_load(&w->finished);
		s->posted += atomic_load(&w->posted);
		s->cancelled += atomic_load(&w->cancelled);
		s->sleeps += atomic_load(&w->sleeps);
		s->steals += atomic_load(&w->steals);
	}
	s->posted += atomic_load(&m->rt->done.external_posted) -
	             atomic_load(&m->rt->done.external_refused);
	s->run += finished - s->cancelled;
	s->wakeups += atomic_load(&m->idle.wakeups);
}

const weft__model_ops weft__model_threads = {
        .name = "threads",
        .configure = weft__config_run_to_completion,
        .start = threads_start,
        .submit = threads_submit,
        .wait_all = threads_wait_all,
        .stop = threads_stop,
        .release = threads_release,
        .stats = threads_stats,
        .print_stats = threads_print_stats,
        .help = threads_help,
        .has_queued = threads_has_queued,
};
