/* Waits with deadlines, under every model and worker count (MATRIX):
 * `test_timed <case> <model> <workers>`.
 *
 * A wait that times out returns WEFT_ETIMEDOUT no earlier than its
 * deadline and leaves what it waited for unchanged; one whose event comes
 * first returns as the plain wait does; a deadline racing the event has
 * exactly one of the two outcomes. How late a timeout returns is measured
 * in bench/timed_waits, not asserted here (a loaded machine makes any bound
 * flaky): the bound below only catches a timeout that never fires. */
#include <stdlib.h>

#include "harness.h"

#define MS             1000000LL
#define LATE_AT_MOST_S 5.0 /* a missing timer, not a slow one */

static void nothing(void *arg)
{
	(void)arg;
}

/* Returns how late (ns) fn returned after the deadline, asserting it
 * returned WEFT_ETIMEDOUT and not early. */
static int64_t check_timeout(int rc, int64_t deadline)
{
	int64_t now = weft_clock_ns();
	assert_rc(WEFT_ETIMEDOUT, rc);
	assert_true(now >= deadline);
	assert_true((double)(now - deadline) < LATE_AT_MOST_S * 1e9);
	return now - deadline;
}

/* ------------------------------------------------------------ from a thread */

static void task_and_group_from_thread(void)
{
	weft_rt *rt = wt_create_default();
	int n = wt_workers(rt);
	wt_gate gate;
	wt_gate_init(&gate);
	weft_task held[WT_GATE_MAX];
	wt_gate_hold(rt, &gate, held, n);
	weft_group g;
	assert_rc(0, weft_group_init(&g));
	weft_task queued;
	assert_rc(0, weft_task_init(&queued, nothing, NULL));
	assert_rc(0, weft_post_in(rt, &g, &queued));

	/* Running and queued tasks, and their group, time out unchanged. */
	int64_t d = weft_clock_ns() + 3 * MS;
	check_timeout(weft_wait_until(&held[0], d), d);
	d = weft_clock_ns() + 3 * MS;
	check_timeout(weft_wait_until(&queued, d), d);
	d = weft_clock_ns() + 3 * MS;
	check_timeout(weft_group_wait_until(&g, d), d);
	assert_int_equal(WEFT_TASK_QUEUED, weft_task_state_of(&queued));
	assert_int_equal(1, weft_group_pending(&g));
	/* A deadline already past returns at once. */
	d = weft_clock_ns() - MS;
	check_timeout(weft_wait_until(&queued, d), d);
	check_timeout(weft_group_wait_until(&g, d), d);

	wt_gate_release(&gate, n);
	/* The event before the deadline: as the plain wait. */
	d = weft_clock_ns() + 10000 * MS;
	assert_rc(0, weft_group_wait_until(&g, d));
	assert_rc(0, weft_wait_until(&queued, d));
	for (int i = 0; i < n; i++)
		assert_rc(0, weft_wait_until(&held[i], d));
	assert_true(weft_clock_ns() < d);
	/* Finished: any deadline returns 0 at once. */
	assert_rc(0, weft_wait_until(&queued, 0));
	assert_rc(0, weft_group_wait_until(&g, 0));
	weft_task never;
	assert_rc(0, weft_task_init(&never, nothing, NULL));
	assert_rc(WEFT_EINVAL, weft_wait_until(&never, d));
	assert_rc(WEFT_EINVAL, weft_wait_until(NULL, d));
	assert_rc(WEFT_EINVAL, weft_group_wait_until(NULL, d));
	assert_rc(0, weft_rt_destroy(rt));
	wt_gate_destroy(&gate);
}

/* ------------------------------------------------------------ from tasks */

typedef struct timed_child {
	weft_task self, child;
	weft_group g;
	_Atomic int *release;
	int rc_task, rc_group, rc_after;
	int64_t late;
} timed_child;

static void spins_until_released(void *arg)
{
	_Atomic int *release = arg;
	while (!atomic_load(release))
		weft_sleep_ns(100000);
}

/* Posts a child that waits for a flag, times out waiting for it (task and
 * group), then sets the flag and waits for real. */
static void times_out_then_waits(void *arg)
{
	timed_child *c = arg;
	WT_CHECK_RC(0, weft_group_init(&c->g));
	WT_CHECK_RC(0, weft_task_init(&c->child, spins_until_released, c->release));
	WT_CHECK_RC(0, weft_post_in(weft_rt_current(), &c->g, &c->child));
	int64_t d = weft_clock_ns() + 2 * MS;
	c->rc_task = weft_wait_until(&c->child, d);
	c->rc_group = weft_group_wait_until(&c->g, weft_clock_ns() + 2 * MS);
	c->late = weft_clock_ns() - d;
	atomic_store(c->release, 1);
	c->rc_after = weft_group_wait(&c->g);
}

static void from_tasks(void)
{
	weft_rt *rt = wt_create_default();
	enum { PARENTS = 4 };
	static timed_child c[PARENTS];
	static _Atomic int release[PARENTS];
	for (int i = 0; i < PARENTS; i++) {
		atomic_store(&release[i], 0);
		c[i] = (timed_child){.release = &release[i]};
		assert_rc(0, weft_task_init(&c[i].self, times_out_then_waits, &c[i]));
		assert_rc(0, weft_post(rt, &c[i].self));
	}
	assert_rc(0, weft_wait_all(rt));
	wt_check_async();
	for (int i = 0; i < PARENTS; i++) {
		/* The child waits for the flag its parent sets after the
		 * timed waits, which never run it inline: both time out. */
		assert_rc(WEFT_ETIMEDOUT, c[i].rc_task);
		assert_rc(WEFT_ETIMEDOUT, c[i].rc_group);
		assert_rc(0, c[i].rc_after);
		assert_true(c[i].late >= 0);
	}
	assert_rc(0, weft_rt_destroy(rt));
}

/* ------------------------------------------------------------ races */

/* Deadlines racing completion: many waiters (threads and tasks) with
 * random deadlines around the moment a task finishes. Each gets 0 or
 * WEFT_ETIMEDOUT; 0 only once the task finished; a timeout only when the
 * deadline had passed; nobody hangs, nothing is lost. */
enum { RACE_ROUNDS = 300, RACE_WAITERS = 6 };

typedef struct racer {
	weft_task *target;
	weft_group *group;
	int64_t deadline;
	weft_task self;
	int rc;
} racer;

static void race_wait(void *arg)
{
	racer *r = arg;
	r->rc = r->group ? weft_group_wait_until(r->group, r->deadline)
	                 : weft_wait_until(r->target, r->deadline);
	weft_task_state st = weft_task_state_of(r->target);
	if (r->rc == 0)
		WT_CHECK(st == WEFT_TASK_DONE);
	else if (r->rc == WEFT_ETIMEDOUT)
		WT_CHECK(weft_clock_ns() >= r->deadline);
	else
		WT_CHECK_RC(0, r->rc);
}

static void short_spin(void *arg)
{
	int64_t until = weft_clock_ns() + (int64_t)(intptr_t)arg;
	while (weft_clock_ns() < until)
		;
}

static void deadlines_race_completion(void)
{
	weft_rt *rt = wt_create_default();
	uint64_t rng = wt_seed();
	int rounds = WT_SANITIZER ? RACE_ROUNDS / 4 : RACE_ROUNDS;
	long timeouts = 0, done = 0;
	for (int round = 0; round < rounds; round++) {
		weft_task target;
		weft_group g;
		assert_rc(0, weft_group_init(&g));
		int64_t run = (int64_t)wt_rand_below(&rng, 200000);
		assert_rc(0, weft_task_init(&target, short_spin, (void *)(intptr_t)run));
		racer r[RACE_WAITERS];
		int64_t now = weft_clock_ns();
		for (int i = 0; i < RACE_WAITERS; i++) {
			r[i] = (racer){.target = &target, .group = i % 2 ? &g : NULL};
			r[i].deadline = now + (int64_t)wt_rand_below(&rng, 400000);
			assert_rc(0, weft_task_init(&r[i].self, race_wait, &r[i]));
		}
		assert_rc(0, weft_post_in(rt, &g, &target));
		/* Half the waiters are tasks, half wait from this thread. */
		for (int i = 0; i < RACE_WAITERS; i += 2)
			assert_rc(0, weft_post(rt, &r[i].self));
		for (int i = 1; i < RACE_WAITERS; i += 2)
			race_wait(&r[i]);
		assert_rc(0, weft_wait_all(rt));
		assert_rc(0, weft_wait(&target));
		for (int i = 0; i < RACE_WAITERS; i++) {
			timeouts += r[i].rc == WEFT_ETIMEDOUT;
			done += r[i].rc == 0;
		}
	}
	wt_check_async();
	assert_int_equal(timeouts + done, (long)rounds * RACE_WAITERS);
	print_message("[ info     ] %ld timed out, %ld saw the task finish\n", timeouts, done);
	assert_rc(0, weft_rt_destroy(rt));
}

/* ------------------------------------------------------------ channels */

static void chan_timeouts(void)
{
	weft_chan ch, unbuf;
	int buf[1], v = 7, out = 0;
	assert_rc(0, weft_chan_init(&ch, sizeof(int), 1, buf));
	assert_rc(0, weft_chan_init(&unbuf, sizeof(int), 0, NULL));
	int64_t d = weft_clock_ns() + 2 * MS;
	check_timeout(weft_chan_recv_until(&ch, &out, d), d);
	assert_rc(0, weft_chan_send_until(&ch, &v, weft_clock_ns() - MS)); /* room: at once */
	d = weft_clock_ns() + 2 * MS;
	check_timeout(weft_chan_send_until(&ch, &v, d), d); /* full */
	assert_rc(0, weft_chan_recv_until(&ch, &out, 0));
	assert_int_equal(7, out);
	d = weft_clock_ns() + 2 * MS;
	check_timeout(weft_chan_recv_until(&ch, &out, d), d); /* nothing was added */
	d = weft_clock_ns() + 2 * MS;
	check_timeout(weft_chan_send_until(&unbuf, &v, d), d); /* nobody receives */
	d = weft_clock_ns() + 2 * MS;
	check_timeout(weft_chan_recv_until(&unbuf, &out, d), d);
	assert_rc(0, weft_chan_close(&ch));
	assert_rc(WEFT_ECLOSED, weft_chan_recv_until(&ch, &out, weft_clock_ns() + MS));
	assert_rc(WEFT_EINVAL, weft_chan_send_until(NULL, &v, 0));
}

/* Senders and receivers with random deadlines on one unbuffered channel,
 * as tasks and as threads: every element a send reported sent was received
 * exactly once, and nothing a timed-out send offered arrives. */
enum { CHAN_ITEMS = 2000, CHAN_SIDES = 2 };

static weft_chan race_ch;
static _Atomic long sent_sum, recv_sum, sent_n, recv_n;
static _Atomic int senders_left;

static void timed_sender(void *arg)
{
	uint64_t rng = (uint64_t)(intptr_t)arg;
	for (int i = 1; i <= CHAN_ITEMS; i++) {
		int v = i;
		int64_t d = weft_clock_ns() + (int64_t)wt_rand_below(&rng, 50000);
		int rc = weft_chan_send_until(&race_ch, &v, d);
		if (rc == 0) {
			atomic_fetch_add(&sent_sum, v);
			atomic_fetch_add(&sent_n, 1);
		} else {
			WT_CHECK_RC(WEFT_ETIMEDOUT, rc);
		}
	}
	if (atomic_fetch_sub(&senders_left, 1) == 1)
		WT_CHECK_RC(0, weft_chan_close(&race_ch));
}

static void timed_receiver(void *arg)
{
	uint64_t rng = (uint64_t)(intptr_t)arg;
	for (;;) {
		int v;
		int64_t d = weft_clock_ns() + (int64_t)wt_rand_below(&rng, 50000);
		int rc = weft_chan_recv_until(&race_ch, &v, d);
		if (rc == WEFT_ECLOSED)
			return;
		if (rc == 0) {
			atomic_fetch_add(&recv_sum, v);
			atomic_fetch_add(&recv_n, 1);
		} else {
			WT_CHECK_RC(WEFT_ETIMEDOUT, rc);
		}
	}
}

static void *thread_receiver(void *arg)
{
	timed_receiver(arg);
	return NULL;
}

static void chan_deadline_race(void)
{
	weft_rt *rt = wt_create_default();
	assert_rc(0, weft_chan_init(&race_ch, sizeof(int), 0, NULL));
	atomic_store(&sent_sum, 0);
	atomic_store(&recv_sum, 0);
	atomic_store(&sent_n, 0);
	atomic_store(&recv_n, 0);
	atomic_store(&senders_left, CHAN_SIDES);
	uint64_t seed = wt_seed();
	weft_task t[2 * CHAN_SIDES];
	pthread_t th[2];
	/* Receivers: a thread, and a task where the senders (tasks) can run
	 * beside it (else a second thread); the receivers loop until closed. */
	bool task_receiver = wt_blockers(rt) > CHAN_SIDES;
	wt_thread_start(&th[0], thread_receiver, (void *)(intptr_t)(seed + 99));
	assert_rc(0, weft_task_init(&t[0], timed_receiver, (void *)(intptr_t)(seed + 1)));
	if (task_receiver)
		assert_rc(0, weft_post(rt, &t[0]));
	else
		wt_thread_start(&th[1], thread_receiver, (void *)(intptr_t)(seed + 1));
	for (int i = 0; i < CHAN_SIDES; i++) {
		assert_rc(0, weft_task_init(&t[1 + i], timed_sender,
		                            (void *)(intptr_t)(seed + 2 + i)));
		assert_rc(0, weft_post(rt, &t[1 + i]));
	}
	assert_rc(0, weft_wait_all(rt));
	wt_thread_join(th[0]);
	if (!task_receiver)
		wt_thread_join(th[1]);
	wt_check_async();
	assert_int_equal(atomic_load(&sent_n), atomic_load(&recv_n));
	assert_int_equal(atomic_load(&sent_sum), atomic_load(&recv_sum));
	print_message("[ info     ] %ld of %d elements went across\n", atomic_load(&sent_n),
	              CHAN_ITEMS * CHAN_SIDES);
	assert_rc(0, weft_rt_destroy(rt));
}

/* ------------------------------------------------------------ primitives */

static weft_mutex mu;
static weft_cond cv;
static weft_sem sem;

static void *lock_until_from_thread(void *arg)
{
	(void)arg;
	int64_t d = weft_clock_ns() + 2 * MS;
	int rc = weft_mutex_lock_until(&mu, d);
	WT_CHECK_RC(WEFT_ETIMEDOUT, rc);
	WT_CHECK(weft_clock_ns() >= d);
	return NULL;
}

static void primitive_timeouts(void)
{
	assert_rc(0, weft_mutex_init(&mu));
	assert_rc(0, weft_cond_init(&cv));
	assert_rc(0, weft_sem_init(&sem, 0));
	/* Free: taken whatever the deadline. */
	assert_rc(0, weft_mutex_lock_until(&mu, weft_clock_ns() - MS));
	pthread_t th;
	wt_thread_start(&th, lock_until_from_thread, NULL); /* held: times out */
	wt_thread_join(th);
	wt_check_async();
	/* cond: times out holding the mutex again. */
	int64_t d = weft_clock_ns() + 2 * MS;
	check_timeout(weft_cond_wait_until(&cv, &mu, d), d);
	assert_rc(0, weft_mutex_unlock(&mu));
	assert_rc(WEFT_EINVAL, weft_mutex_unlock(&mu));
	/* sem: the count is unchanged by a timeout. */
	d = weft_clock_ns() + 2 * MS;
	check_timeout(weft_sem_wait_until(&sem, d), d);
	assert_int_equal(0, weft_sem_value(&sem));
	assert_rc(0, weft_sem_post(&sem));
	assert_rc(0, weft_sem_wait_until(&sem, weft_clock_ns() - MS));
	assert_int_equal(0, weft_sem_value(&sem));
	assert_rc(WEFT_EINVAL, weft_mutex_lock_until(NULL, 0));
	assert_rc(WEFT_EINVAL, weft_cond_wait_until(NULL, &mu, 0));
	assert_rc(WEFT_EINVAL, weft_sem_wait_until(NULL, 0));
}

/* Tasks and threads take a mutex and a semaphore with random short
 * deadlines while others hold them briefly: every success is counted
 * under the mutex, units are conserved, and the mutex ends free. */
enum { PRIM_ROUNDS = 3000, PRIM_TASKS = 4 };

static long guarded, mutex_wins;
static _Atomic long sem_wins, sem_posts;

static void hammer_timed(void *arg)
{
	uint64_t rng = (uint64_t)(intptr_t)arg;
	int rounds = WT_SANITIZER ? PRIM_ROUNDS / 10 : PRIM_ROUNDS;
	for (int i = 0; i < rounds; i++) {
		int64_t d = weft_clock_ns() + (int64_t)wt_rand_below(&rng, 30000);
		int rc = weft_mutex_lock_until(&mu, d);
		if (rc == 0) {
			guarded++;
			mutex_wins++;
			if (wt_rand_below(&rng, 4) == 0) {
				/* Sometimes wait on the cond with a deadline too. */
				int crc = weft_cond_wait_until(&cv, &mu, weft_clock_ns() + 20000);
				WT_CHECK(crc == 0 || crc == WEFT_ETIMEDOUT);
			}
			WT_CHECK_RC(0, weft_mutex_unlock(&mu));
			weft_cond_signal(&cv);
		} else {
			WT_CHECK_RC(WEFT_ETIMEDOUT, rc);
		}
		d = weft_clock_ns() + (int64_t)wt_rand_below(&rng, 30000);
		rc = weft_sem_wait_until(&sem, d);
		if (rc == 0) {
			atomic_fetch_add(&sem_wins, 1);
			if (wt_rand_below(&rng, 2) == 0) {
				WT_CHECK_RC(0, weft_sem_post(&sem));
				atomic_fetch_add(&sem_posts, 1);
			}
		} else {
			WT_CHECK_RC(WEFT_ETIMEDOUT, rc);
		}
	}
}

static void *hammer_thread(void *arg)
{
	hammer_timed(arg);
	return NULL;
}

static void primitive_deadline_race(void)
{
	weft_rt *rt = wt_create_default();
	assert_rc(0, weft_mutex_init(&mu));
	assert_rc(0, weft_cond_init(&cv));
	enum { UNITS = 2 };
	assert_rc(0, weft_sem_init(&sem, UNITS));
	guarded = mutex_wins = 0;
	atomic_store(&sem_wins, 0);
	atomic_store(&sem_posts, 0);
	uint64_t seed = wt_seed();
	weft_task t[PRIM_TASKS];
	for (int i = 0; i < PRIM_TASKS; i++) {
		assert_rc(0, weft_task_init(&t[i], hammer_timed, (void *)(intptr_t)(seed + i)));
		assert_rc(0, weft_post(rt, &t[i]));
	}
	pthread_t th;
	wt_thread_start(&th, hammer_thread, (void *)(intptr_t)(seed + 77));
	assert_rc(0, weft_wait_all(rt));
	wt_thread_join(th);
	wt_check_async();
	assert_int_equal(guarded, mutex_wins);
	assert_rc(0, weft_mutex_trylock(&mu)); /* free */
	assert_rc(0, weft_mutex_unlock(&mu));
	assert_int_equal(UNITS - atomic_load(&sem_wins) + atomic_load(&sem_posts),
	                 weft_sem_value(&sem));
	print_message("[ info     ] mutex taken %ld times, semaphore %ld\n", mutex_wins,
	              atomic_load(&sem_wins));
	assert_rc(0, weft_rt_destroy(rt));
}

/* ------------------------------------------------------------ kept timers */

/* On the fiber models a timer outlives a wait that ends before its
 * deadline and serves the fiber's next timed wait when that deadline is
 * no earlier (engine.h: weft__fiber_timer_arm). So: a kept timer that is due before
 * the next wait's deadline must not end that wait; one due after it must
 * not hold it back; sleeps, yields and untimed waits in between keep
 * their meaning. Two tasks play ping-pong on semaphores, the waiter with
 * deadlines near (50 ms) and far (10 s) in random order. */
enum { KEPT_ROUNDS = 2000 };
static weft_sem ping, pong;

static void kept_poster(void *arg)
{
	(void)arg;
	int rounds = WT_SANITIZER ? KEPT_ROUNDS / 10 : KEPT_ROUNDS;
	for (int i = 0; i < rounds + 1; i++) { /* the rounds and the near one */
		WT_CHECK_RC(0, weft_sem_wait(&ping));
		WT_CHECK_RC(0, weft_sem_post(&pong));
	}
	WT_CHECK_RC(0, weft_sem_wait(&ping));
	WT_CHECK_RC(0, weft_sleep_ns(100 * MS)); /* past the near timer kept */
	WT_CHECK_RC(0, weft_sem_post(&pong));
	WT_CHECK_RC(0, weft_sem_wait(&ping)); /* the far one */
	WT_CHECK_RC(0, weft_sem_post(&pong));
}

/* A wait on pong with a deadline ns ahead that the poster answers. */
static void kept_round(int64_t ns)
{
	WT_CHECK_RC(0, weft_sem_post(&ping));
	int64_t d = weft_clock_ns() + ns;
	int rc = weft_sem_wait_until(&pong, d);
	if (rc == WEFT_ETIMEDOUT) { /* a stalled host: legal, and not early */
		WT_CHECK(weft_clock_ns() >= d);
		WT_CHECK_RC(0, weft_sem_wait(&pong));
	} else {
		WT_CHECK_RC(0, rc);
	}
}

static void kept_waiter(void *arg)
{
	uint64_t rng = (uint64_t)(intptr_t)arg;
	int rounds = WT_SANITIZER ? KEPT_ROUNDS / 10 : KEPT_ROUNDS;
	for (int i = 0; i < rounds; i++) {
		kept_round(wt_rand_below(&rng, 2) ? 10000 * MS : 50 * MS);
		switch (wt_rand_below(&rng, 8)) {
		case 0:
			WT_CHECK_RC(0, weft_yield());
			break;
		case 1: {
			int64_t t0 = weft_clock_ns(), ns = (int64_t)wt_rand_below(&rng, 200000);
			WT_CHECK_RC(0, weft_sleep_ns(ns));
			WT_CHECK(weft_clock_ns() - t0 >= ns);
			break;
		}
		}
	}
	/* A near timer kept, due long before this wait's deadline and before
	 * the post (100 ms on): the wait still ends by the post. */
	kept_round(50 * MS);
	int64_t t0 = weft_clock_ns(); /* before the poster can start its sleep */
	WT_CHECK_RC(0, weft_sem_post(&ping));
	WT_CHECK_RC(0, weft_sem_wait_until(&pong, t0 + 60000 * MS));
	WT_CHECK(weft_clock_ns() - t0 >= 100 * MS);
	/* A far timer kept (10 s): a nearer deadline and a short sleep still
	 * end in time (check_timeout's bound is 5 s). */
	kept_round(10000 * MS);
	int64_t d = weft_clock_ns() + 3 * MS;
	int rc = weft_sem_wait_until(&pong, d);
	int64_t late = weft_clock_ns() - d;
	WT_CHECK_RC(WEFT_ETIMEDOUT, rc);
	WT_CHECK(late >= 0 && (double)late < LATE_AT_MOST_S * 1e9);
	t0 = weft_clock_ns();
	WT_CHECK_RC(0, weft_sleep_ns(3 * MS));
	int64_t slept = weft_clock_ns() - t0;
	WT_CHECK(slept >= 3 * MS && (double)slept < LATE_AT_MOST_S * 1e9);
}

static void kept_timers(void)
{
	weft_rt *rt = wt_create_default();
	assert_rc(0, weft_sem_init(&ping, 0));
	assert_rc(0, weft_sem_init(&pong, 0));
	weft_task waiter, poster;
	assert_rc(0, weft_task_init(&waiter, kept_waiter, (void *)(intptr_t)wt_seed()));
	assert_rc(0, weft_task_init(&poster, kept_poster, NULL));
	assert_rc(0, weft_post(rt, &waiter));
	assert_rc(0, weft_post(rt, &poster));
	assert_rc(0, weft_wait_all(rt));
	wt_check_async();
	assert_int_equal(0, weft_sem_value(&pong));
	assert_rc(0, weft_rt_destroy(rt));
}

WT_CASES(WT_CASE(task_and_group_from_thread), WT_CASE(from_tasks),
         WT_CASE(deadlines_race_completion), WT_CASE(chan_timeouts), WT_CASE(chan_deadline_race),
         WT_CASE(primitive_timeouts), WT_CASE(primitive_deadline_race), WT_CASE(kept_timers));
