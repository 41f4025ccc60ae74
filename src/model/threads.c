/* Model threads: N kernel workers draining one ready queue, and each
 * worker's own posts kept on a stack of its own.
 *
 * The seed's pool took one mutex for every post and every pop and
 * broadcast a condition variable on every change: several lock hand-offs,
 * often a sleep and a wake-up, per empty task. Here the work per task is
 * kept to the few cache lines that must move between cores:
 *
 * - Posting from outside the workers pushes onto an inbox, a lock-free LIFO
 *   stack, with one CAS; no lock is shared with the workers.
 * - A worker that needs work takes the scheduler lock, moves the inbox into
 *   the policy's ready queue (in post order, core/task_list.h), and takes
 *   a batch: up to 1/N of the queue, at most BATCH_MAX, so the lock and the
 *   queue's lines move once per batch. A batch is only a prefetch (see
 *   next_task): it goes back to the queue when another worker runs dry, and
 *   under priority when the worker's own tasks sent more to the queue.
 * - A worker that keeps up with a poster makes both miss on the inbox and
 *   each task's line (~300 ns per post with one worker), so workers never
 *   poll shared lines in a tight loop, and after a small batch they wait
 *   about a microsecond so the poster gets ahead (then ~55 ns per task).
 * - Completion is counted per worker, on the worker's own line. Nothing
 *   shared is written per task, so wait_all checks quiescence: the sum of
 *   finished counts equals the sum of posted counts. Each count only grows
 *   and every task is counted as posted before it can finish, so reading
 *   all finished counts first and all posted counts second, equal sums
 *   prove a moment at which everything posted had finished.
 * - Idle workers poll quietly for ~15 us (reads only, ~0.4 us apart), then
 *   sleep on their own futex word, under the rules of core/idle.h (shared
 *   with mn): the idle list, throttled wake-ups, lazy steals, the watch.
 *
 * Own posts. A fork-join child sent through the shared inbox costs two
 * writes to shared lines and, with idle workers about, a wake-up and often
 * the child taken by another worker while its parent sleeps (on 16 CPUs a
 * spawn-join cost 22x what it cost on one). So what a task posts goes onto
 * its worker's own stack (a Chase-Lev deque, core/deque.h), and:
 *   - waiting (help: weft_wait, weft_group_wait) takes the newest own post
 *     first, a push and a pop on lines no other core writes; an untaken
 *     weft_fork_join b runs as a plain call (threads_take_back);
 *   - what a task did not take back by the time it returns goes to the
 *     shared queue then (flush_own_posts), in post order, so the policy
 *     orders it; a full stack goes there before the next post. A task's
 *     own waits run its posts newest first, whatever their priority;
 *     posts from outside the workers always go through the policy;
 *   - other workers take own posts only after the shared queue came up
 *     empty, under core/idle.h's lazy-steal rule (a surplus at once, a
 *     lone task once it sat 1 us); counted as steals, with the batches.
 * The deep-nesting stand-in of core/standin.c uses the worker's own stack
 * while the worker waits for it (one owner at a time: creation and join
 * order them). A compensation stand-in (same file), beside a worker blocked
 * in a weft wait, owns nothing of the worker whose index it carries: it
 * takes from and posts to the shared queue and counts in rt->done
 * (standin_help, standin_post); the blocked worker first hands its batch
 * and own posts to the shared queue (threads_block_begin).
 *
 * When a post wakes a sleeper: a post to the shared queue, a flush, an own
 * post that leaves two or more on the stack (a fan-out) and an offer
 * (weft__tls.offering: weft_fork_join's b, a loop's half) wake as above. A
 * lone own post wakes nobody while the watch of core/idle.h is on duty,
 * unless the worker's previous lone post was taken by another worker
 * while its poster never looked for it (help_pops unchanged): such a
 * poster gets the immediate wake-up, not the watcher's delay. A poster
 * that looked and found its child gone was merely late, and stays quiet,
 * or each wake-up would get the next child taken. Statistics: wakeups are
 * sleepers claimed by posts, sleeps include the watcher's timed ones,
 * steals the batches and own posts taken, steal_attempts the searches,
 * spins the polls of idle workers.
 *
 * The shared queue (the inbox, the ready queue, the batches and waking a
 * sleeper for them) is threads_queue.c; the state both files share,
 * threads.h.
 *
 * Lost wake-ups are prevented by the publish-then-check order of
 * core/idle.h: a post to the inbox is a seq_cst CAS, an own post a push
 * then a fence; wait_all checks all_waiters against finished counts alike.
 * Destroy: closing makes external posts fail (threads_submit has the race
 * with a poster already inside); the destroyer waits for quiescence, sets
 * stopping, wakes every sleeper and joins. Cancel sets rt->cancelling
 * first: workers then complete queued tasks as cancelled. */
#include <stdio.h>

#include "core/completion.h"
#include "core/futex.h"
#include "core/observe.h"
#include "core/spin.h"
#include "core/standin.h"
#include "core/task_list.h"
#include "model/threads.h"
#include "obs/probes.h"

static size_t state_size(int nworkers)
{
	return sizeof(threads) + (size_t)nworkers * sizeof(worker);
}

/* ------------------------------------------------------------ own posts */

/* Looks at the other workers' own stacks for a task to take, under the
 * lazy-steal rule of core/idle.h: the victim's index, or -1. */
static int find_sitting(threads *m, worker *w, bool settle)
{
	weft__count(&w->attempts, 1);
	return weft__idle_find_sitting(&m->idle, &w->idler, 0, m->nworkers - 1, settle);
}

/* Takes the task find_sitting chose on v's stack, or NULL when its owner
 * or another thief took it first. */
static weft_task *take_sitting(worker *w, worker *v)
{
	weft_task *t = weft__idle_take_sitting(&w->m->idle, &w->idler, v->index);
	if (!t)
		return NULL;
	weft__count(&w->steals, 1);
	WEFT__PROBE2(task__steal, w->index, 1);
	return t;
}

/* A task from another worker's own posts (see find_sitting), or NULL. */
static weft_task *take_own_post(threads *m, worker *w, bool settle)
{
	if (m->nworkers == 1)
		return NULL;
	int v = find_sitting(m, w, settle);
	if (v < 0)
		return NULL;
	weft_task *t = take_sitting(w, &m->workers[v]);
	if (t) {
		weft__trace(m->rt, WEFT__TRACE_STEAL, NULL, false);
		weft__dequeued(m->rt, 1);
	}
	return t;
}

/* Sends what the task that just ended posted and did not take back (w's own
 * posts above mark) to the shared queue, oldest first as if posted there,
 * with one CAS: the task is done with them, and the policy orders them from
 * now on. Out of line, as the rare paths here are: the run and post paths
 * they would be inlined into stay lean. */
__attribute__((noinline)) static void flush_own_posts(threads *m, worker *w, int64_t mark)
{
	weft_task *newest = NULL, *oldest = NULL;
	uint64_t n = 0;
	while (atomic_load_explicit(&w->own.bottom, memory_order_relaxed) > mark) {
		weft_task *t = weft__deque_pop(&w->own); /* newest first */
		if (!t)
			break; /* thieves took the rest */
		t->next_ = NULL;
		if (oldest)
			oldest->next_ = t;
		else
			newest = t;
		oldest = t;
		n++;
	}
	if (!newest)
		return;
	w->own_taken += n;
	w->shared_posts += n;
	weft_task *head = atomic_load_explicit(&m->inbox.head, memory_order_relaxed);
	do
		oldest->next_ = head;
	while (!atomic_compare_exchange_weak_explicit(&m->inbox.head, &head, newest,
	                                              memory_order_seq_cst, memory_order_relaxed));
	weft__threads_wake_if_needed(m);
}

/* Runs t on w, then sends what it left on w's own stack to the queue. */
__attribute__((always_inline)) static inline void run_one(threads *m, worker *w, weft_task *t)
{
	int64_t mark = atomic_load_explicit(&w->own.bottom, memory_order_relaxed);
	uint64_t cancelled = !weft__run_task(m->rt, t);
	if (atomic_load_explicit(&w->own.bottom, memory_order_relaxed) > mark)
		flush_own_posts(m, w, mark);
	atomic_store_explicit(&w->cancelled, w->cancelled + cancelled, memory_order_relaxed);
	atomic_store_explicit(&w->finished, w->finished + 1, memory_order_release);
}

/* ------------------------------------------------------------ waking */

/* After w pushed onto its own stack (more than one worker): the rule of
 * the top for whether to wake a sleeper. */
static void own_post_made(threads *m, worker *w)
{
	atomic_thread_fence(memory_order_seq_cst); /* the push before the reads */
	if (!weft__threads_room_for_one_more(m))
		return; /* its poster, the busy workers or the loop's caller take it */
	if (weft__deque_size_hint(&w->own) > 1 || weft__tls.offering) {
		weft__threads_wake_if_needed(m); /* a fan-out, or an offer */
		return;
	}
	uint64_t stolen =
	        atomic_load_explicit(&w->own_pushed, memory_order_relaxed) - 1 - w->own_taken;
	/* Taken by another worker while this one never looked for it: a
	 * poster that blocks rather than joins. (One that looked in vain was
	 * joining and merely slow: it stays quiet; else the wake-up itself,
	 * a system call while the child sits, would get the next child taken
	 * too, and so on.) */
	bool left_sitting = stolen != w->stolen_at_lone && w->help_pops == w->helped_at_lone;
	w->stolen_at_lone = stolen;
	w->helped_at_lone = w->help_pops;
	/* Nobody on duty: the watch goes back on duty (before the reads of
	 * wake_if_needed, which a sleeper mirrors), and it wakes as a post to
	 * the queue does. */
	if (weft__watch_vacant(&m->idle) || left_sitting)
		weft__threads_wake_if_needed(m);
}

/* w, idle, found work: it stops looking, so if it was a woken worker still
 * counted spinning, or the watcher, someone else must look at what it was
 * looking after (see the top). */
static void stop_looking(threads *m, worker *w, bool *spinning)
{
	bool check = false;
	if (*spinning) {
		*spinning = false;
		check = atomic_fetch_sub(&m->idle.nspinning, 1) == 1;
	}
	if (weft__watch_leave(&m->idle, &w->idler))
		check = true;
	if (check) {
		atomic_thread_fence(memory_order_seq_cst);
		if (weft__threads_has_work(m) || weft__idle_posts_waiting(&m->idle))
			weft__threads_wake_if_needed(m);
	}
}

/* ------------------------------------------------------------ idle */

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

/* Own posts made so far, all workers: the watcher's sign of use. */
static uint64_t sum_own_pushed(void *state)
{
	threads *m = state;
	uint64_t n = 0;
	for (int i = 0; i < m->nworkers; i++)
		n += atomic_load_explicit(&m->workers[i].own_pushed, memory_order_relaxed);
	return n;
}

static weft__deque *own_of(void *state, int i)
{
	threads *m = state;
	return &m->workers[i].own;
}

static const weft__idle_ops idle_ops = {own_of, sum_own_pushed, NULL};

/* The futex sleep of weft__idle_doze: until claimed, or ns. */
static bool doze_sleep(weft__idler *me, int64_t ns, void *ctx)
{
	worker *w = ctx;
	weft__count(&w->sleeps, 1);
	weft__futex_wait(&me->claimed, 0, ns);
	return false;
}

/* Puts w on the idle list and sleeps until woken. Returns whether w is now
 * counted spinning: true when a waker claimed it; false if, after
 * publishing itself idle, w found work or the stop request and left the
 * list itself, or left to take a task that sat on an own stack. */
static bool sleep_idle(threads *m, worker *w)
{
	weft__idle_join(&m->idle, &w->idler);
	weft__idle_awake(&m->idle, -1);
	/* Before anything that may send w back to work without sleeping:
	 * holding the watch, it looks after lone own posts until it finds
	 * work (stop_looking). */
	(void)weft__watch_keep(&m->idle, &w->idler);
	bool claimed;
	if (weft__threads_has_work(m) || weft__threads_stealable(m) || atomic_load(&m->stopping))
		claimed = weft__idle_leave(&m->idle, &w->idler);
	else
		claimed = weft__idle_doze(&m->idle, &w->idler, doze_sleep, w);
	weft__idle_awake(&m->idle, 1);
	if (claimed && !atomic_load_explicit(&m->stopping, memory_order_relaxed))
		weft__count(&w->woken, 1);
	return claimed;
}

/* Polls quietly before sleeping: no shared writes, and reads of the shared
 * lines only now and then, since each one makes the next post (or the
 * victim's next take) pay to take the line back. Returns true when work
 * showed up in the queue or a batch; *t: a task taken from an own stack. */
static bool poll_idle(threads *m, worker *w, weft_task **t)
{
	for (int i = 0; i < SPIN_ROUNDS; i++) {
		weft__cpu_relax_n(SPIN_PAUSES);
		weft__count(&w->spins, 1);
		if (weft__threads_has_work(m) || weft__threads_stealable(m))
			return true;
		if ((*t = take_own_post(m, w, false)))
			return false;
	}
	return false;
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
		weft_task *t = weft__threads_next_task(m, w);
		if (!t)
			t = take_own_post(m, w, false);
		if (!t) {
			weft__idle_begin(rt, w->index);
			weft__notify_quiescent(&m->rt->done, &sums, m);
			if (poll_idle(m, w, &t))
				continue;
		}
		if (t) {
			weft__idle_end(rt, w->index);
			stop_looking(m, w, &spinning);
			run_one(m, w, t);
			continue;
		}
		/* A woken worker that stops spinning without work: posts that saw
		 * it spinning woke nobody, so unless it goes to sleep through the
		 * watch decision it looks after their lone tasks now. */
		bool was_spinning = spinning;
		if (spinning) {
			spinning = false;
			atomic_fetch_sub(&m->idle.nspinning, 1);
		}
		atomic_thread_fence(memory_order_seq_cst);
		if (weft__threads_has_work(m) || weft__threads_stealable(m)) {
			/* Posts that saw it searching woke nobody: it takes the
			 * work as a searcher, and wakes another for the rest when
			 * it stops (stop_looking). */
			if (was_spinning) {
				weft__idle_resume_search(&m->idle);
				spinning = true;
			}
			continue;
		}
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

/* ------------------------------------------------------------ posting */

static void push_and_wake(void *state, weft_task *t)
{
	threads *m = state;
	weft__inbox_push(&m->inbox, t);
	weft__threads_wake_if_needed(m);
	weft__standin_poke(m->rt); /* every thread blocked: compensation */
}

/* w's own stack is full: what is there goes to the shared queue first, so
 * that it is queued before t, as it was posted before. */
__attribute__((noinline)) static void post_to_full_stack(threads *m, worker *w, weft_task *t)
{
	flush_own_posts(m, w, INT64_MIN);
	if (!weft__deque_push(&w->own, t)) {
		w->shared_posts++;
		push_and_wake(m, t);
		return;
	}
	weft__count(&w->own_pushed, 1);
	if (m->nworkers > 1)
		own_post_made(m, w);
}

/* A post by a task run on a stand-in (core/standin.c), which owns no
 * stack of its own: to the shared queue, counted in rt->done. */
__attribute__((noinline)) static void standin_post(threads *m, weft_task *t)
{
	t->seq_ = weft__task_post_key(m->rt);
	atomic_fetch_add(&m->rt->done.standin_posted, 1);
	push_and_wake(m, t);
}

static int threads_submit(weft_rt *rt, weft_task *t, bool from_task)
{
	threads *m = rt->model_state;
	if (!from_task) {
		t->seq_ = weft__outside_post_key(t->seq_); /* from its ticket */
		push_and_wake(m, t);
		return 0;
	}
	if (weft__tls.standin) {
		standin_post(m, t);
		return 0;
	}
	worker *w = &m->workers[weft__tls.index];
	atomic_store_explicit(&w->posted, w->posted + 1, memory_order_relaxed);
	t->seq_ = weft__task_post_key(rt);
	/* More urgent than its poster, which runs on: to the queue, where
	 * every worker sees it in the policy's order, not behind the poster
	 * on its own stack. (Equal priorities, a fork-join's children, skip
	 * the policy's call: under threads the one ordered policy is
	 * priority, which orders by priority alone.) */
	weft_task *poster = weft__tls.task;
	if (m->more_urgent && poster && t->priority_ != poster->priority_ &&
	    m->more_urgent(&m->ready, t, poster)) {
		w->shared_posts++;
		push_and_wake(m, t);
		return 0;
	}
	if (!weft__deque_push(&w->own, t)) {
		post_to_full_stack(m, w, t);
		return 0;
	}
	weft__count(&w->own_pushed, 1);
	if (m->nworkers > 1)
		own_post_made(m, w);
	return 0;
}

/* threads_help on a stand-in (core/standin.c), which owns no batch and no
 * own stack: the policy's first task of the shared queue, counted in
 * rt->done. */
__attribute__((noinline)) static bool standin_help(threads *m)
{
	weft_rt *rt = m->rt;
	if (!weft__threads_has_work(m))
		return false;
	bool drain = !weft__inbox_empty(&m->inbox);
	if (drain)
		weft__threads_drain_begin(m);
	weft__lock_acquire(&m->lock);
	if (drain)
		weft__threads_drain_inbox(m);
	weft_task *t = weft__readyq_pop(&m->ready);
	weft__threads_unlock(m);
	if (drain)
		weft__threads_drain_end(m);
	if (!t)
		return false;
	weft__dequeued(rt, 1);
	bool ran = weft__run_task(rt, t);
	if (!ran)
		atomic_fetch_add(&rt->done.standin_cancelled, 1);
	atomic_fetch_add(&rt->done.standin_finished, 1);
	weft__notify_quiescent(&rt->done, &sums, m);
	return true;
}

/* A worker whose weft wait turned long (core/standin.c): the tasks only it
 * would take, the rest of its batch and its own posts, go to the shared
 * queue, where other workers and stand-ins take them in the policy's
 * order. A stand-in holds neither. */
static void threads_block_begin(weft_rt *rt)
{
	if (weft__tls.standin)
		return;
	threads *m = rt->model_state;
	worker *w = &m->workers[weft__tls.index];
	weft_task *rest[BATCH_MAX];
	int n = weft__batch_take_back(&w->batch, true, rest);
	if (n > 0) {
		weft__lock_acquire(&m->lock);
		while (n > 0)
			weft__readyq_unpop(&m->ready, rest[--n]);
		weft__threads_unlock(m);
	}
	if (atomic_load_explicit(&w->own.bottom, memory_order_relaxed) >
	    atomic_load_explicit(&w->own.top, memory_order_relaxed))
		flush_own_posts(m, w, INT64_MIN);
	/* Whatever is queued, not only what it handed back: this worker was
	 * one that would have taken it, and an idle one sleeps until woken
	 * (tasks its take handed back to the queue woke nobody). */
	atomic_thread_fence(memory_order_seq_cst);
	if (weft__threads_has_work(m))
		weft__threads_wake_if_needed(m);
}

/* threads_help when w's own stack is empty. */
__attribute__((noinline)) static bool help_from_elsewhere(threads *m, worker *w)
{
	weft_task *t = weft__threads_next_task(m, w);
	if (!t && !(t = take_own_post(m, w, true)))
		return false;
	run_one(m, w, t);
	return true;
}

/* A worker waiting inside a task (task.c) runs one task: its own newest
 * post first, which is most likely what it waits for (a child it just
 * posted), so that nested waits go depth-first and stay as deep as the
 * fork-join tree; then as its loop would, from its batch, another's, the
 * queue, or another worker's own posts. */
static bool threads_help(weft_rt *rt)
{
	threads *m = rt->model_state;
	if (weft__tls.standin)
		return standin_help(m);
	worker *w = &m->workers[weft__tls.index];
	weft_task *t = weft__deque_pop(&w->own);
	w->help_pops++;
	if (!t)
		return help_from_elsewhere(m, w);
	w->own_taken++;
	weft__dequeued(rt, 1);
	run_one(m, w, t);
	return true;
}

/* weft_fork_join's b (core/fork_join.c), posted by the calling task and
 * not started: if it is still the newest of the caller's own posts, it
 * comes off the stack and counts as finished (the caller runs it as a
 * plain call). A pop, so a thief that takes it at the same moment wins or
 * loses cleanly. A caller outside the workers (weft_fork_join is public)
 * posted to the shared queue: nothing to take back. */
static bool threads_take_back(weft_rt *rt, weft_task *t)
{
	if (weft__tls.rt != rt || weft__tls.index < 0 || weft__tls.standin)
		return false; /* posted from outside or a stand-in: in the shared queue */
	threads *m = rt->model_state;
	worker *w = &m->workers[weft__tls.index];
	int64_t b = atomic_load_explicit(&w->own.bottom, memory_order_relaxed);
	if (b <= atomic_load_explicit(&w->own.top, memory_order_relaxed) ||
	    atomic_load_explicit(&w->own.ring[(b - 1) & (WEFT__DEQUE_SIZE - 1)],
	                         memory_order_relaxed) != t)
		return false;
	w->help_pops++; /* it looked for its post (see own_post_made) */
	if (weft__deque_pop(&w->own) != t)
		return false; /* a thief took it: the only other outcome */
	w->own_taken++;
	weft__dequeued(rt, 1);
	atomic_store_explicit(&w->finished, w->finished + 1, memory_order_release);
	return true;
}

/* ------------------------------------------------------------ lifecycle */

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
	m->awake_cap = weft__awake_cap(rt);
	weft__readyq_init(&m->ready, &rt->cfg);
	m->ordered = m->ready.ops->ordered;
	m->more_urgent = m->ordered ? m->ready.ops->more_urgent : NULL;
	weft__idle_init(&m->idle, &idle_ops, m, n);
	rt->model_state = m;
	for (int i = 0; i < n; i++) {
		worker *w = &m->workers[i];
		w->m = m;
		w->index = i;
		weft__idler_init(&w->idler, i);
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

static bool threads_has_queued(weft_rt *rt)
{
	threads *m = rt->model_state;
	return weft__threads_has_work(m) || weft__threads_stealable(m) ||
	       weft__idle_posts_waiting(&m->idle);
}

static void threads_print_stats(const weft_stats *s, FILE *out)
{
	if (s->workers > 1)
		fprintf(out, "weft: steals %llu of %llu attempts, idle looks %llu\n",
		        (unsigned long long)s->steals, (unsigned long long)s->steal_attempts,
		        (unsigned long long)s->spins);
}

static void threads_print_workers(weft_rt *rt, FILE *out)
{
	threads *m = rt->model_state;
	for (int i = 0; i < m->nworkers; i++) {
		worker *w = &m->workers[i];
		fprintf(out,
		        "weft: worker %d: ran %llu, wake-ups received %llu, steals %llu of %llu "
		        "attempts, sleeps %llu, idle looks %llu\n",
		        i, (unsigned long long)atomic_load(&w->finished),
		        (unsigned long long)atomic_load(&w->woken),
		        (unsigned long long)atomic_load(&w->steals),
		        (unsigned long long)atomic_load(&w->attempts),
		        (unsigned long long)atomic_load(&w->sleeps),
		        (unsigned long long)atomic_load(&w->spins));
	}
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
		s->steal_attempts += atomic_load(&w->attempts);
		s->spins += atomic_load(&w->spins);
	}
	s->posted += atomic_load(&m->rt->done.external_posted) -
	             atomic_load(&m->rt->done.external_refused);
	s->run += finished - s->cancelled;
	/* Tasks of stand-ins (core/standin.c). */
	uint64_t sc = atomic_load(&m->rt->done.standin_cancelled);
	s->posted += atomic_load(&m->rt->done.standin_posted);
	s->run += atomic_load(&m->rt->done.standin_finished) - sc;
	s->cancelled += sc;
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
        .print_workers = threads_print_workers,
        .help = threads_help,
        .take_back = threads_take_back,
        .has_queued = threads_has_queued,
        .block_begin = threads_block_begin,
};
