/* The synchronisation primitives (weft/sync.h) under every model and worker
 * count, used from tasks and from threads that are not weft workers.
 * Cases are built so that no task waits for work that needs a free worker
 * (tasks only wait for a holder that is running, or for external threads),
 * so they finish with any number of workers, as they would on a pthread
 * pool. Where tasks block all at once (barrier, channel consumers) there
 * are wt_blockers(rt) of them: one per worker under a kernel-thread model,
 * several per worker under a fiber model, where they park.
 * primitives_in_tasks is the exception: tasks wait for each other, which
 * needs two tasks blocked at once. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* ------------------------------------------------------------ mutex */

enum { ROUNDS = 2000 };

static weft_mutex mu;
static long counter; /* guarded by mu, deliberately not atomic */
static _Atomic int inside;

static void locked_increments(void)
{
	for (int i = 0; i < ROUNDS; i++) {
		WT_CHECK_RC(0, weft_mutex_lock(&mu));
		WT_CHECK(atomic_fetch_add(&inside, 1) == 0);
		counter++;
		atomic_fetch_sub(&inside, 1);
		WT_CHECK_RC(0, weft_mutex_unlock(&mu));
	}
}

static void counter_task(void *arg)
{
	(void)arg;
	locked_increments();
}

static void *counter_thread(void *arg)
{
	(void)arg;
	locked_increments();
	return NULL;
}

static void mutex_counter(void)
{
	weft_rt *rt = wt_create_default();
	assert_rc(0, weft_mutex_init(&mu));
	counter = 0;
	int n = 4 * wt_workers(rt);
	weft_task *t = calloc((size_t)n, sizeof(*t));
	assert_non_null(t);
	pthread_t th[2];
	for (int i = 0; i < 2; i++)
		wt_thread_start(&th[i], counter_thread, NULL);
	for (int i = 0; i < n; i++) {
		assert_rc(0, weft_task_init(&t[i], counter_task, NULL));
		assert_rc(0, weft_post(rt, &t[i]));
	}
	assert_rc(0, weft_wait_all(rt));
	for (int i = 0; i < 2; i++)
		wt_thread_join(th[i]);
	assert_int_equal(counter, (long)(n + 2) * ROUNDS);
	assert_rc(0, weft_rt_destroy(rt));
	free(t);
}

static void mutex_misuse(void)
{
	weft_mutex m;
	assert_rc(WEFT_EINVAL, weft_mutex_init(NULL));
	assert_rc(WEFT_EINVAL, weft_mutex_lock(NULL));
	assert_rc(WEFT_EINVAL, weft_mutex_unlock(NULL));
	assert_rc(0, weft_mutex_init(&m));
	assert_rc(WEFT_EINVAL, weft_mutex_unlock(&m)); /* not locked */
	assert_rc(0, weft_mutex_trylock(&m));
	assert_rc(WEFT_EBUSY, weft_mutex_trylock(&m));
	assert_rc(0, weft_mutex_unlock(&m));
	assert_rc(0, weft_mutex_lock(&m));
	assert_rc(0, weft_mutex_unlock(&m));
}

/* Threads queue on a held mutex one by one, each started once the one
 * before it is queued (the mutex's waiter count, read from its private
 * state word: on a loaded machine a thread started 30 ms after another
 * can still reach lock() first); each unlock wakes the longest waiter,
 * and with nobody barging in they are served in arrival order. */
static unsigned queued_on(weft_mutex *m)
{
	/* mutex.c: the count of queued waiters is state / 8. */
	return atomic_load((_Atomic uint32_t *)&m->state_) / 8;
}

enum { FIFO_THREADS = 5 };
static int fifo_order[FIFO_THREADS], fifo_pos; /* guarded by mu */

static void *fifo_thread(void *arg)
{
	WT_CHECK_RC(0, weft_mutex_lock(&mu));
	fifo_order[fifo_pos++] = (int)(intptr_t)arg;
	WT_CHECK_RC(0, weft_mutex_unlock(&mu));
	return NULL;
}

static void mutex_fifo(void)
{
	assert_rc(0, weft_mutex_init(&mu));
	fifo_pos = 0;
	assert_rc(0, weft_mutex_lock(&mu));
	pthread_t th[FIFO_THREADS];
	for (int i = 0; i < FIFO_THREADS; i++) {
		wt_thread_start(&th[i], fifo_thread, (void *)(intptr_t)i);
		double end = wt_now() + WT_PATIENCE_S;
		while (queued_on(&mu) < (unsigned)i + 1 && wt_now() < end)
			wt_sleep_ms(1);
		assert_int_equal(i + 1, queued_on(&mu));
	}
	assert_rc(0, weft_mutex_unlock(&mu));
	for (int i = 0; i < FIFO_THREADS; i++)
		wt_thread_join(th[i]);
	for (int i = 0; i < FIFO_THREADS; i++)
		assert_int_equal(fifo_order[i], i);
}

/* ------------------------------------------------------------ cond */

enum { ITEMS = 4000 };
static weft_cond cv;
static long items, consumed; /* guarded by mu */
static int producers_left;   /* guarded by mu */

static void produce_task(void *arg)
{
	long n = (long)(intptr_t)arg;
	for (long i = 0; i < n; i++) {
		WT_CHECK_RC(0, weft_mutex_lock(&mu));
		items++;
		WT_CHECK_RC(0, weft_cond_signal(&cv));
		WT_CHECK_RC(0, weft_mutex_unlock(&mu));
	}
	WT_CHECK_RC(0, weft_mutex_lock(&mu));
	producers_left--;
	WT_CHECK_RC(0, weft_cond_broadcast(&cv));
	WT_CHECK_RC(0, weft_mutex_unlock(&mu));
}

static void *consume_thread(void *arg)
{
	(void)arg;
	WT_CHECK_RC(0, weft_mutex_lock(&mu));
	for (;;) {
		while (items == 0 && producers_left > 0)
			WT_CHECK_RC(0, weft_cond_wait(&cv, &mu));
		if (items == 0)
			break;
		items--;
		consumed++;
	}
	WT_CHECK_RC(0, weft_mutex_unlock(&mu));
	return NULL;
}

static void cond_producer_consumer(void)
{
	weft_rt *rt = wt_create_default();
	assert_rc(0, weft_mutex_init(&mu));
	assert_rc(0, weft_cond_init(&cv));
	int np = 2 * wt_workers(rt);
	items = consumed = 0;
	producers_left = np;
	pthread_t th[3];
	for (int i = 0; i < 3; i++)
		wt_thread_start(&th[i], consume_thread, NULL);
	weft_task *t = calloc((size_t)np, sizeof(*t));
	assert_non_null(t);
	for (int i = 0; i < np; i++) {
		assert_rc(0, weft_task_init(&t[i], produce_task, (void *)(intptr_t)(ITEMS / np)));
		assert_rc(0, weft_post(rt, &t[i]));
	}
	assert_rc(0, weft_wait_all(rt));
	for (int i = 0; i < 3; i++)
		wt_thread_join(th[i]);
	assert_int_equal(consumed, (long)(ITEMS / np) * np);
	assert_int_equal(items, 0);
	assert_rc(0, weft_rt_destroy(rt));
	free(t);
	assert_rc(WEFT_EINVAL, weft_cond_wait(&cv, NULL));
	weft_mutex unlocked;
	assert_rc(0, weft_mutex_init(&unlocked));
	assert_rc(WEFT_EINVAL, weft_cond_wait(&cv, &unlocked)); /* m not held */
}

/* ------------------------------------------------------------ sem */

enum { SEM_LIMIT = 2 };
static weft_sem sem;
static _Atomic int sem_inside, sem_max;

static void sem_task(void *arg)
{
	(void)arg;
	for (int r = 0; r < 50; r++) {
		WT_CHECK_RC(0, weft_sem_wait(&sem));
		int now = atomic_fetch_add(&sem_inside, 1) + 1;
		int m = atomic_load(&sem_max);
		while (now > m && !atomic_compare_exchange_weak(&sem_max, &m, now))
			;
		WT_CHECK(now <= SEM_LIMIT);
		atomic_fetch_sub(&sem_inside, 1);
		WT_CHECK_RC(0, weft_sem_post(&sem));
	}
}

static void sem_limit(void)
{
	weft_rt *rt = wt_create_default();
	assert_rc(WEFT_EINVAL, weft_sem_init(&sem, -1));
	assert_rc(0, weft_sem_init(&sem, SEM_LIMIT));
	atomic_store(&sem_max, 0);
	int n = 8 * wt_workers(rt);
	weft_task *t = calloc((size_t)n, sizeof(*t));
	assert_non_null(t);
	for (int i = 0; i < n; i++) {
		assert_rc(0, weft_task_init(&t[i], sem_task, NULL));
		assert_rc(0, weft_post(rt, &t[i]));
	}
	assert_rc(0, weft_wait_all(rt));
	assert_true(atomic_load(&sem_max) <= SEM_LIMIT);
	assert_int_equal(weft_sem_value(&sem), SEM_LIMIT);
	assert_rc(0, weft_sem_trywait(&sem));
	assert_rc(0, weft_sem_trywait(&sem));
	assert_rc(WEFT_EAGAIN, weft_sem_trywait(&sem));
	assert_rc(0, weft_rt_destroy(rt));
	free(t);
}

/* ------------------------------------------------------------ barrier */

enum { BARRIER_ROUNDS = 200 };
static weft_barrier bar;
static _Atomic int phase_arrivals[BARRIER_ROUNDS];
static _Atomic int lasts[BARRIER_ROUNDS];
static unsigned parties;

static void barrier_party(void)
{
	for (int r = 0; r < BARRIER_ROUNDS; r++) {
		atomic_fetch_add(&phase_arrivals[r], 1);
		int rc = weft_barrier_wait(&bar);
		WT_CHECK(rc == 0 || rc == WEFT_BARRIER_LAST);
		/* Nobody passes round r before everyone arrived at it. */
		WT_CHECK(atomic_load(&phase_arrivals[r]) == (int)parties);
		if (rc == WEFT_BARRIER_LAST)
			atomic_fetch_add(&lasts[r], 1);
	}
}

static void barrier_task(void *arg)
{
	(void)arg;
	barrier_party();
}

static void *barrier_thread(void *arg)
{
	(void)arg;
	barrier_party();
	return NULL;
}

/* Tasks (all blocked at once: wt_blockers) and two threads meet at the
 * barrier. */
static void barrier_rounds(void)
{
	weft_rt *rt = wt_create_default();
	int nt = wt_blockers(rt);
	assert_rc(WEFT_EINVAL, weft_barrier_init(&bar, 0));
	parties = (unsigned)nt + 2;
	assert_rc(0, weft_barrier_init(&bar, parties));
	memset(phase_arrivals, 0, sizeof(phase_arrivals));
	memset(lasts, 0, sizeof(lasts));
	weft_task *t = calloc((size_t)nt, sizeof(*t));
	assert_non_null(t);
	for (int i = 0; i < nt; i++) {
		assert_rc(0, weft_task_init(&t[i], barrier_task, NULL));
		assert_rc(0, weft_post(rt, &t[i]));
	}
	pthread_t th[2];
	for (int i = 0; i < 2; i++)
		wt_thread_start(&th[i], barrier_thread, NULL);
	for (int i = 0; i < 2; i++)
		wt_thread_join(th[i]);
	assert_rc(0, weft_wait_all(rt));
	for (int r = 0; r < BARRIER_ROUNDS; r++)
		assert_int_equal(atomic_load(&lasts[r]), 1);
	assert_rc(0, weft_rt_destroy(rt));
	free(t);
}

/* ------------------------------------------------------------ chan */

enum { CHAN_CAP = 8, PER_PRODUCER = 5000, CHAN_PRODUCERS = 2 };
static weft_chan ch;
static long chan_buf[CHAN_CAP];
static _Atomic long chan_sum, chan_count;
static _Atomic int chan_bad_order;

static void *chan_producer(void *arg)
{
	long base = (long)(intptr_t)arg * PER_PRODUCER;
	for (long i = 1; i <= PER_PRODUCER; i++) {
		long v = base + i;
		WT_CHECK_RC(0, weft_chan_send(&ch, &v));
	}
	return NULL;
}

static void chan_consumer(void *arg)
{
	(void)arg;
	long v, last[CHAN_PRODUCERS] = {0};
	int rc;
	while ((rc = weft_chan_recv(&ch, &v)) == 0) {
		atomic_fetch_add(&chan_sum, v);
		atomic_fetch_add(&chan_count, 1);
		int p = (int)((v - 1) / PER_PRODUCER);
		if (v <= last[p]) /* one producer's values reach one consumer in order */
			atomic_store(&chan_bad_order, 1);
		last[p] = v;
	}
	WT_CHECK_RC(WEFT_ECLOSED, rc);
}

static void run_chan(size_t capacity)
{
	weft_rt *rt = wt_create_default();
	assert_rc(0, weft_chan_init(&ch, sizeof(long), capacity, chan_buf));
	atomic_store(&chan_sum, 0);
	atomic_store(&chan_count, 0);
	atomic_store(&chan_bad_order, 0);
	int consumers = wt_blockers(rt); /* all may block in recv at once */
	weft_task *t = calloc((size_t)consumers, sizeof(*t));
	assert_non_null(t);
	for (int i = 0; i < consumers; i++) {
		assert_rc(0, weft_task_init(&t[i], chan_consumer, NULL));
		assert_rc(0, weft_post(rt, &t[i]));
	}
	pthread_t th[CHAN_PRODUCERS];
	for (int i = 0; i < CHAN_PRODUCERS; i++)
		wt_thread_start(&th[i], chan_producer, (void *)(intptr_t)i);
	for (int i = 0; i < CHAN_PRODUCERS; i++)
		wt_thread_join(th[i]);
	assert_rc(0, weft_chan_close(&ch));
	assert_rc(0, weft_wait_all(rt));
	long n = (long)CHAN_PRODUCERS * PER_PRODUCER;
	assert_int_equal(atomic_load(&chan_count), n);
	assert_int_equal(atomic_load(&chan_sum), n * (n + 1) / 2);
	assert_int_equal(atomic_load(&chan_bad_order), 0);
	assert_rc(0, weft_rt_destroy(rt));
	free(t);
}

static void chan_buffered(void)
{
	run_chan(CHAN_CAP);
}

static void chan_unbuffered(void)
{
	run_chan(0);
}

static void chan_close(void)
{
	long buf[4], v;
	weft_chan c;
	assert_rc(WEFT_EINVAL, weft_chan_init(&c, 0, 4, buf));
	assert_rc(WEFT_EINVAL, weft_chan_init(&c, sizeof(long), 4, NULL));
	assert_rc(0, weft_chan_init(&c, sizeof(long), 4, buf));
	for (v = 1; v <= 3; v++)
		assert_rc(0, weft_chan_send(&c, &v));
	assert_rc(0, weft_chan_close(&c));
	assert_rc(WEFT_ECLOSED, weft_chan_close(&c));
	assert_rc(WEFT_ECLOSED, weft_chan_send(&c, &v));
	for (long want = 1; want <= 3; want++) {
		assert_rc(0, weft_chan_recv(&c, &v));
		assert_int_equal(v, want);
	}
	assert_rc(WEFT_ECLOSED, weft_chan_recv(&c, &v));
}

/* A receiver blocked on an empty channel is woken by close. */
static void *blocked_receiver(void *arg)
{
	long v;
	WT_CHECK_RC(WEFT_ECLOSED, weft_chan_recv(arg, &v));
	return NULL;
}

static void chan_close_wakes(void)
{
	weft_chan c;
	assert_rc(0, weft_chan_init(&c, sizeof(long), 0, NULL));
	pthread_t th;
	wt_thread_start(&th, blocked_receiver, &c);
	wt_sleep_ms(20);
	assert_rc(0, weft_chan_close(&c));
	wt_thread_join(th);
}

/* ------------------------------------------------------------ tasks only */

/* Tasks that wait for each other, no outside thread: a producer task sends
 * over an unbuffered channel to a consumer task (each send waits for the
 * receiver), while four tasks hold a mutex across weft_yield so that the
 * others run and queue on it meanwhile. Needs two tasks blocked at once:
 * two kernel-thread workers, or one fiber worker (the blocked one parks). */
enum { PAIR_ITEMS = 20000, YIELDERS = 4, YIELD_ROUNDS = 100 };
static weft_chan pair_ch;
static long pair_sum;      /* the consumer task's */
static long yield_counter; /* guarded by mu */

static void pair_producer(void *arg)
{
	(void)arg;
	for (long i = 1; i <= PAIR_ITEMS; i++)
		WT_CHECK_RC(0, weft_chan_send(&pair_ch, &i));
	WT_CHECK_RC(0, weft_chan_close(&pair_ch));
}

static void pair_consumer(void *arg)
{
	(void)arg;
	long v;
	int rc;
	while ((rc = weft_chan_recv(&pair_ch, &v)) == 0)
		pair_sum += v;
	WT_CHECK_RC(WEFT_ECLOSED, rc);
}

static void locked_yielder(void *arg)
{
	(void)arg;
	for (int i = 0; i < YIELD_ROUNDS; i++) {
		WT_CHECK_RC(0, weft_mutex_lock(&mu));
		long v = yield_counter;
		WT_CHECK_RC(0, weft_yield()); /* others run and queue on the mutex */
		yield_counter = v + 1;
		WT_CHECK_RC(0, weft_mutex_unlock(&mu));
	}
}

static void primitives_in_tasks(void)
{
	/* With one kernel-thread worker the producer blocks it in send: a
	 * stand-in runs the consumer (compensation, core/standin.c). */
	weft_rt *rt = wt_create_default();
	assert_rc(0, weft_chan_init(&pair_ch, sizeof(long), 0, NULL));
	assert_rc(0, weft_mutex_init(&mu));
	pair_sum = yield_counter = 0;
	weft_task t[2 + YIELDERS];
	assert_rc(0, weft_task_init(&t[0], pair_consumer, NULL));
	assert_rc(0, weft_task_init(&t[1], pair_producer, NULL));
	for (int i = 2; i < 2 + YIELDERS; i++)
		assert_rc(0, weft_task_init(&t[i], locked_yielder, NULL));
	for (int i = 0; i < 2 + YIELDERS; i++)
		assert_rc(0, weft_post(rt, &t[i]));
	assert_rc(0, weft_wait_all(rt));
	assert_int_equal(pair_sum, (long)PAIR_ITEMS * (PAIR_ITEMS + 1) / 2);
	assert_int_equal(yield_counter, (long)YIELDERS * YIELD_ROUNDS);
	assert_rc(0, weft_rt_destroy(rt));
}

WT_CASES(WT_CASE(mutex_counter), WT_CASE(mutex_misuse), WT_CASE(mutex_fifo),
         WT_CASE(cond_producer_consumer), WT_CASE(sem_limit), WT_CASE(barrier_rounds),
         WT_CASE(chan_buffered), WT_CASE(chan_unbuffered), WT_CASE(chan_close),
         WT_CASE(chan_close_wakes), WT_CASE(primitives_in_tasks));
