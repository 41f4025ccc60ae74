/* Stand-ins (standin.h): threads that run queued tasks in the place of a
 * kernel-thread worker that cannot.
 *
 * Under threads and spawn a task that waits holds its kernel thread. A
 * worker waiting for a task runs queued tasks meanwhile (task.c), which is
 * all fork-join needs; a worker blocked on a semaphore, condition, channel,
 * mutex, barrier, sleep or fd runs nothing, so a program whose waits are
 * released only by tasks still queued (a producer and a consumer on one
 * worker, a pipeline with more stages than workers) would hang. The fiber
 * models park the task and run the queued one; here a stand-in thread runs
 * it instead, as Java's ForkJoinPool does for a managed block (a spare
 * thread while a worker blocks), .NET's pool by injecting threads when
 * queued work starves, and Go by handing a blocked thread's P to another.
 *
 * When. Compensation is for what cannot otherwise progress: every thread
 * of the runtime (its workers and the stand-ins alive) has gone to sleep
 * in a weft wait while tasks are queued. The waiter's spin before it
 * sleeps (waiter.c) is the grace: most waits end within it (a mutex
 * hand-off, a channel with both ends running) and cost nothing more; one
 * that sleeps costs a futex wait and a wake-up anyway, beside which a
 * shared counter's two updates are small. A longer grace,
 * WEFT_STANDIN_GRACE_US, was 100 us by default: at one worker a condition
 * released by a queued task then took 3.1-3.5x its time at two workers,
 * against 1.9-2.2x without (bench/compensation, 2 CPUs, load 3-7). Not when any
 * thread runs or idles: a running worker takes the queued tasks after its
 * own, and an idle one is woken by the post (under threads, a blocked
 * worker's batch and own posts are handed to the shared queue when its wait
 * turns long, so they are takeable). So the number of threads running
 * tasks never exceeds the workers but by stand-ins for blocked ones.
 *
 * How a long wait is seen. Neither a monitor thread (Go's sysmon wakes
 * every 20 us to 10 ms, .NET's gate thread every 500 ms) nor a wake-up per
 * wait: as it goes to sleep (or, with a grace period set, when a timeout
 * of that length fires, a timer the kernel cancels when the wake-up comes
 * first) the thread counts itself in rt->blocked (one shared write, and one
 * when it ends), lets the model make its held tasks takeable
 * (block_begin), and if every thread is now blocked with tasks queued
 * starts a stand-in. It then sleeps without a timeout: whoever changes
 * that state looks again, so nobody polls:
 *   - a thread whose wait turns long later looks (it may be the last);
 *   - a post from outside (threads, spawn) reads rt->blocked after making
 *     its task visible, and looks when it is non-zero (weft__standin_poke);
 *   - a stand-in that retires decrements alive, then looks, and stays if
 *     it finds everybody blocked with tasks queued.
 * Each pair is publish (seq_cst), then look (seq_cst), so one of the two
 * sees the other. Tasks posted by a running task need nothing: its thread
 * runs, so it runs them or blocks later and looks then.
 *
 * Retirement. A stand-in runs tasks through the model's help, one at a
 * time in the policy's order (threads: from the shared queue), and stops
 * after a task when the threads that run (workers and stand-ins alive,
 * less the blocked ones) exceed the workers, that is when a wait it stood
 * in for has ended, or when nothing is queued. Stand-ins are at most
 * WEFT_STANDINS at once (256 by default and at most); a stand-in blocked in
 * a wait counts as blocked and may get a stand-in itself (a pipeline of
 * five stages on one worker holds four).
 *
 * What it cannot cure, weft says: a long-blocked thread that finds the cap
 * reached (or thread creation refused, or WEFT_STANDINS=0) keeps a watch
 * (a timeout of 250 ms), and when every thread has been blocked for a
 * second with tasks queued, it prints once which of the three it is.
 *
 * Shared writes per wait: none for a wait that ends while its thread
 * spins; two atomic adds on rt->blocked's line for one that sleeps, plus
 * the model's block_begin (threads: one lock of the ready queue when the
 * worker holds a batch or own posts). On 16-64 cores that line is written
 * twice per sleep, beside the futex wait and wake-up the sleep costs.
 *
 * Spares. A stand-in no longer needed waits LINGER_NS for the next need
 * (a futex wake-up calls it) before it exits: a thread creation and a
 * join per compensation cost more than the wait they cure here. */
#include <sched.h>

#include "core/clock.h"
#include "core/lock.h"
#include "core/standin.h"
#include "sync/waiter.h"

enum { FREE, ALIVE, SPARE, LEAVING, EXITED };
enum { UNCALLED, CALLED, DISMISSED }; /* a spare's call word */

#define DEADLOCK_AFTER_NS 1000000000
/* How long a stand-in that is no longer needed waits as a spare: a program
 * whose waits turn long now and then (a consumer posted before its
 * producer, in a loop) gets its next stand-in with a futex wake-up instead
 * of a thread creation and a join, tens of microseconds each here. */
#define LINGER_NS         20000000
#define WATCH_NS          (DEADLOCK_AFTER_NS / 4)

/* ------------------------------------------------------------ deep nesting */

/* Kernel-thread workers run queued tasks while they wait, as oneTBB's wait
 * and OpenMP's taskwait do, so that fork-join never needs more workers
 * than there are: a parent waiting for its child runs it (or whatever is
 * queued) itself (task.c decides when). Tasks run nested, one frame set
 * per wait, and a waiter that helps takes any queued task, so the nesting
 * can grow with the number of tasks (two workers of a grain-1
 * weft_parallel_for took each other's halves some 8,000 deep under ASan).
 * Once less than STACK_RESERVE of the thread's stack is left, a stand-in
 * thread with a fresh stack and the same worker index goes on helping
 * while the worker sleeps until the stand-in has seen the wake-up: a worker
 * that merely slept there would leave its share of the queue to the
 * others, and with every worker so deep nobody would run it (the loop hung
 * in about 1 run in 20). Logically the stand-in's stack continues the
 * worker's (it owns the worker's queues while the worker waits for it), so
 * the reason nested helping cannot deadlock (every task above another on a
 * stack started after it) still holds. */
#define STACK_RESERVE (512 * 1024)
#define HELP_POLL_NS  1000000 /* a waiter that found nothing looks again */

static bool stack_has_room(void)
{
	if (!weft__tls.stack_low) {
		uintptr_t low = 0;
		size_t size = 0, guard = 0;
		if (!weft__thread_stack_bounds(&low, &size, &guard))
			low = 0;
		weft__tls.stack_low = low ? low : UINTPTR_MAX; /* unknown: never */
	}
	uintptr_t here = (uintptr_t)__builtin_frame_address(0);
	return here > weft__tls.stack_low && here - weft__tls.stack_low > STACK_RESERVE;
}

/* Whether the calling thread is rt's: what a stand-in copies. */
static void take_place(weft_rt *rt, int index, bool standin)
{
	weft__tls.rt = rt;
	weft__tls.index = index;
	weft__tls.standin = standin;
}

static void help_until_woken(weft_rt *rt, weft__waiter *rec)
{
	while (!weft__waiter_woken(rec)) {
		if (!rt->model->help(rt))
			weft__waiter_sleep(rec, HELP_POLL_NS);
	}
}

typedef struct deep {
	weft_rt *rt;
	int index;
	bool standin; /* the thread it continues is a compensation stand-in */
	weft__waiter *rec;
} deep;

static void *deep_main(void *arg)
{
	deep *s = arg;
	take_place(s->rt, s->index, s->standin);
	help_until_woken(s->rt, s->rec);
	return NULL;
}

/* Helps from a new thread in the calling thread's place until rec is
 * woken; false when no thread could be had. */
static bool help_from_fresh_stack(weft_rt *rt, weft__waiter *rec)
{
	deep s = {.rt = rt, .index = weft__tls.index, .standin = weft__tls.standin, .rec = rec};
	pthread_t thread;
	if (weft__worker_create(&thread, deep_main, &s, rt, s.index) != 0)
		return false;
	pthread_join(thread, NULL);
	return true;
}

bool weft__standin_join_help(weft_rt *rt, weft__waiter *rec)
{
	if (!stack_has_room() && !help_from_fresh_stack(rt, rec))
		return false;
	help_until_woken(rt, rec);
	return true;
}

/* ------------------------------------------------------------ compensation */

static bool compensates(const weft_rt *rt)
{
	return rt->model->block_begin != NULL;
}

/* Every thread of rt is in a long wait: its workers and the stand-ins
 * alive. */
static bool all_blocked(weft_rt *rt)
{
	return atomic_load(&rt->blocked) >= rt->cfg.workers + atomic_load(&rt->standins_alive);
}

static bool stuck(weft_rt *rt)
{
	return all_blocked(rt) && rt->model->has_queued(rt);
}

/* Whether compensation can no longer cure a stuck runtime: a thread in a
 * long wait then keeps the deadlock watch. */
static bool cannot_cure(weft_rt *rt)
{
	return atomic_load(&rt->standins_alive) >= rt->standin_cap ||
	       atomic_load_explicit(&rt->standin_refused, memory_order_relaxed);
}

/* Runs queued tasks while the runtime needs a stand-in. */
static void stand_in(weft_rt *rt)
{
	for (;;) {
		/* While no more threads run than there are workers, and tasks
		 * are queued. */
		while (atomic_load(&rt->standins_alive) <= atomic_load(&rt->blocked) &&
		       rt->model->help(rt))
			;
		/* Leave, then look: a post that saw this stand-in alive
		 * started no other. */
		atomic_fetch_sub(&rt->standins_alive, 1);
		if (!stuck(rt))
			break;
		weft__lock_acquire(&rt->standin_lock);
		bool stay = atomic_load(&rt->standins_alive) < rt->standin_cap;
		if (stay)
			atomic_fetch_add(&rt->standins_alive, 1);
		weft__lock_release(&rt->standin_lock);
		if (!stay)
			break;
	}
}

/* Waits LINGER_NS as a spare; true when start called it again (it is then
 * ALIVE and counted), false when it is to leave (LEAVING). */
static bool linger(weft_rt *rt, weft__standin_slot *s)
{
	weft__lock_acquire(&rt->standin_lock);
	bool closing = rt->standins_closing;
	atomic_store_explicit(&s->call, UNCALLED, memory_order_relaxed);
	atomic_store_explicit(&s->state, closing ? LEAVING : SPARE, memory_order_relaxed);
	weft__lock_release(&rt->standin_lock);
	if (closing)
		return false;
	int64_t until = weft__now_ns() + LINGER_NS, left;
	while (atomic_load_explicit(&s->call, memory_order_acquire) == UNCALLED &&
	       (left = until - weft__now_ns()) > 0)
		weft__futex_wait(&s->call, UNCALLED, left);
	/* Called, dismissed or timed out: under the lock, so that a start
	 * either called it before this or finds it LEAVING. */
	weft__lock_acquire(&rt->standin_lock);
	bool called = atomic_load_explicit(&s->call, memory_order_relaxed) == CALLED;
	if (!called)
		atomic_store_explicit(&s->state, LEAVING, memory_order_relaxed);
	weft__lock_release(&rt->standin_lock);
	return called;
}

static void *standin_main(void *arg)
{
	weft__standin_slot *s = arg;
	weft_rt *rt = s->rt;
	do {
		take_place(rt, s->index, true);
		stand_in(rt);
		take_place(NULL, -1, false);
	} while (linger(rt, s));
	atomic_store_explicit(&s->state, EXITED, memory_order_release); /* rt's last touch */
	return NULL;
}

/* Joins the stand-ins that exited. Caller holds rt->standin_lock. */
static void reap(weft_rt *rt)
{
	for (int i = 0; i < WEFT__MAX_STANDINS; i++) {
		weft__standin_slot *s = &rt->standin[i];
		if (atomic_load_explicit(&s->state, memory_order_acquire) == EXITED) {
			pthread_join(s->thread, NULL);
			atomic_store_explicit(&s->state, FREE, memory_order_relaxed);
		}
	}
}

/* Starts a stand-in carrying index when rt is stuck and below its cap.
 * Under the lock, so that two threads that see the same need start one. */
static void start(weft_rt *rt, int index)
{
	if (rt->standin_cap == 0)
		return;
	weft__lock_acquire(&rt->standin_lock);
	reap(rt);
	/* A spare is called only for the index it carries: its thread ran the
	 * worker hook with that index (config.h), and weft_worker_index() on
	 * it must keep saying so. */
	index = index >= 0 && index < rt->cfg.workers ? index : 0;
	weft__standin_slot *s = NULL, *spare = NULL;
	if (atomic_load(&rt->standins_alive) < rt->standin_cap && stuck(rt)) {
		for (int i = 0; i < WEFT__MAX_STANDINS && !spare; i++) {
			weft__standin_slot *x = &rt->standin[i];
			int state = atomic_load_explicit(&x->state, memory_order_relaxed);
			if (state == SPARE && x->index == index)
				spare = x;
			else if (state == FREE && !s)
				s = x;
		}
	}
	if (spare) {
		atomic_store_explicit(&spare->state, ALIVE, memory_order_relaxed);
		atomic_fetch_add(&rt->standins_alive, 1);
		atomic_fetch_add_explicit(&rt->standins_started, 1, memory_order_relaxed);
		atomic_store_explicit(&spare->call, CALLED, memory_order_release);
		weft__futex_wake(&spare->call, 1);
	} else if (s) {
		s->rt = rt;
		s->index = index;
		atomic_store_explicit(&s->state, ALIVE, memory_order_relaxed);
		atomic_fetch_add(&rt->standins_alive, 1);
		if (weft__worker_create(&s->thread, standin_main, s, rt, s->index) == 0) {
			atomic_fetch_add_explicit(&rt->standins_started, 1, memory_order_relaxed);
		} else {
			atomic_fetch_sub(&rt->standins_alive, 1);
			atomic_store_explicit(&s->state, FREE, memory_order_relaxed);
			atomic_store(&rt->standin_refused, 1);
		}
	}
	weft__lock_release(&rt->standin_lock);
}

void weft__standin_consider(weft_rt *rt)
{
	if (compensates(rt) && all_blocked(rt))
		start(rt, -1);
}

void weft__standin_join_all(weft_rt *rt)
{
	if (!compensates(rt))
		return;
	weft__lock_acquire(&rt->standin_lock);
	rt->standins_closing = true; /* a stand-in leaving now lingers no more */
	for (int i = 0; i < WEFT__MAX_STANDINS; i++) {
		weft__standin_slot *s = &rt->standin[i];
		if (atomic_load_explicit(&s->state, memory_order_relaxed) == SPARE) {
			atomic_store_explicit(&s->state, LEAVING, memory_order_relaxed);
			atomic_store_explicit(&s->call, DISMISSED, memory_order_release);
			weft__futex_wake(&s->call, 1);
		}
	}
	weft__lock_release(&rt->standin_lock);
	for (int i = 0; i < WEFT__MAX_STANDINS; i++) {
		weft__standin_slot *s = &rt->standin[i];
		/* Every task has finished: an alive stand-in is on its way out,
		 * and a spare was dismissed above. */
		int state;
		while ((state = atomic_load_explicit(&s->state, memory_order_acquire)) == ALIVE ||
		       state == LEAVING)
			sched_yield();
		if (atomic_load_explicit(&s->state, memory_order_acquire) == EXITED) {
			pthread_join(s->thread, NULL);
			atomic_store_explicit(&s->state, FREE, memory_order_relaxed);
		}
	}
}

static void report_deadlock(weft_rt *rt)
{
	int no = 0;
	if (!atomic_compare_exchange_strong(&rt->deadlock_reported, &no, 1))
		return;
	char why[256];
	if (rt->standin_cap == 0)
		snprintf(why, sizeof(why),
		         "compensation is off (WEFT_STANDINS=0), so no stand-in thread runs them");
	else if (atomic_load(&rt->standin_refused))
		snprintf(why, sizeof(why), "the system refused a stand-in thread to run them");
	else
		snprintf(why, sizeof(why),
		         "all %d stand-in threads (WEFT_STANDINS) are blocked too: more tasks wait "
		         "at once than that, or the waits form a cycle",
		         rt->standin_cap);
	weft__log(WEFT_LOG_WARN,
	          "weft: every worker of this runtime (model %s, %d worker%s) has been blocked in "
	          "a weft wait for a second while tasks are queued that no worker can take, and "
	          "%s: likely a deadlock (docs/models.md, \"Waiting inside tasks\")\n",
	          rt->model->name, rt->cfg.workers, rt->cfg.workers == 1 ? "" : "s", why);
}

int64_t weft__block_begin(weft__block *b)
{
	weft_rt *rt = weft__tls.rt; /* a worker's runtime outlives its workers */
	b->rt = NULL;
	b->counted = false;
	b->since = -1;
	if (!rt || !compensates(rt))
		return -1;
	b->rt = rt;
	return rt->standin_grace_ns;
}

int64_t weft__block_tick(weft__block *b)
{
	weft_rt *rt = b->rt;
	if (!rt)
		return -1;
	if (!b->counted) {
		b->counted = true;
		atomic_fetch_add(&rt->blocked, 1); /* before the looks: see the top */
		rt->model->block_begin(rt);
	}
	if (all_blocked(rt))
		start(rt, weft__tls.index);
	if (!cannot_cure(rt)) {
		b->since = -1;
		return -1; /* whoever makes the runtime stuck looks (see the top) */
	}
	if (!stuck(rt)) {
		b->since = -1;
	} else {
		int64_t now = weft__now_ns();
		if (b->since < 0)
			b->since = now;
		else if (now - b->since >= DEADLOCK_AFTER_NS)
			report_deadlock(rt);
	}
	return WATCH_NS;
}

void weft__block_end(weft__block *b)
{
	if (b->counted)
		atomic_fetch_sub(&b->rt->blocked, 1);
}
