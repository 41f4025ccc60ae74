/* The primitives issue 27 added: weft_rwlock, weft_once, weft_latch
 * (weft/sync.h), weft_chan_select, task-local storage (weft/local.h) and
 * periodic tasks (weft/periodic.h), under every model and worker count,
 * from tasks and from threads that are not weft workers. As in
 * test_sync.c, no task waits for work that needs a free worker: tasks wait
 * only for holders that run, or for outside threads. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"

static void *task_array(int n)
{
	weft_task *t = calloc((size_t)n, sizeof(weft_task));
	assert_non_null(t);
	return t;
}

/* ------------------------------------------------------------ rwlock */

static weft_rwlock rw;
static _Atomic int readers_in, writers_in;
static long shared_a, shared_b; /* written under the write lock only */
static _Atomic long reads_done, writes_done;
static int rw_rounds;

static void check_read(void)
{
	WT_CHECK(atomic_load(&writers_in) == 0);
	WT_CHECK(shared_a == shared_b);
}

static void rw_reader(void)
{
	for (int i = 0; i < rw_rounds; i++) {
		/* Every tenth read is a timed or a try form. */
		int rc = i % 10 == 3   ? weft_rwlock_tryrdlock(&rw)
		         : i % 10 == 7 ? weft_rwlock_rdlock_until(&rw, weft_clock_ns() + 1000000)
		                       : weft_rwlock_rdlock(&rw);
		if (rc == WEFT_EBUSY || rc == WEFT_ETIMEDOUT)
			continue;
		WT_CHECK_RC(0, rc);
		atomic_fetch_add(&readers_in, 1);
		check_read();
		atomic_fetch_sub(&readers_in, 1);
		WT_CHECK_RC(0, weft_rwlock_unlock(&rw));
		atomic_fetch_add(&reads_done, 1);
	}
}

static void rw_writer(void)
{
	for (int i = 0; i < rw_rounds / 8; i++) {
		int rc = i % 4 == 1 ? weft_rwlock_wrlock_until(&rw, weft_clock_ns() + 1000000)
		                    : weft_rwlock_wrlock(&rw);
		if (rc == WEFT_ETIMEDOUT)
			continue;
		WT_CHECK_RC(0, rc);
		WT_CHECK(atomic_fetch_add(&writers_in, 1) == 0);
		WT_CHECK(atomic_load(&readers_in) == 0);
		shared_a++;
		if (i % 16 == 0)
			weft_yield(); /* let readers queue behind a held write lock */
		shared_b++;
		atomic_fetch_sub(&writers_in, 1);
		WT_CHECK_RC(0, weft_rwlock_unlock(&rw));
		atomic_fetch_add(&writes_done, 1);
	}
}

static void rw_task(void *arg)
{
	arg ? rw_writer() : rw_reader();
}

static void *rw_thread(void *arg)
{
	arg ? rw_writer() : rw_reader();
	return NULL;
}

/* 8 readers and 2 writers as tasks, and one of each as plain threads,
 * hammering one lock; every critical section checks the invariant (no
 * writer beside anyone; the two counters equal under a read lock). */
static void rwlock_invariant(void)
{
	weft_rt *rt = wt_create_default();
	assert_rc(0, weft_rwlock_init(&rw));
	shared_a = shared_b = 0;
	atomic_store(&reads_done, 0);
	atomic_store(&writes_done, 0);
	/* 8 reader and 2 writer tasks, one of each as threads: over 1M
	 * operations in all outside the sanitizers. */
	rw_rounds = WT_SANITIZER ? 4000 : 110000;
	weft_task *t = task_array(10);
	pthread_t th[2];
	wt_thread_start(&th[0], rw_thread, NULL);
	wt_thread_start(&th[1], rw_thread, (void *)1);
	for (int i = 0; i < 10; i++) {
		assert_rc(0, weft_task_init(&t[i], rw_task, i < 2 ? (void *)1 : NULL));
		assert_rc(0, weft_post(rt, &t[i]));
	}
	assert_rc(0, weft_wait_all(rt));
	wt_thread_join(th[0]);
	wt_thread_join(th[1]);
	wt_check_async();
	assert_int_equal(shared_a, atomic_load(&writes_done));
	assert_int_equal(shared_b, shared_a);
	assert_true(atomic_load(&reads_done) > 0);
	assert_rc(0, weft_rt_destroy(rt));
	free(t);
}

static void rwlock_misuse(void)
{
	weft_rwlock l;
	assert_rc(WEFT_EINVAL, weft_rwlock_init(NULL));
	assert_rc(WEFT_EINVAL, weft_rwlock_rdlock(NULL));
	assert_rc(WEFT_EINVAL, weft_rwlock_wrlock(NULL));
	assert_rc(WEFT_EINVAL, weft_rwlock_unlock(NULL));
	assert_rc(0, weft_rwlock_init(&l));
	assert_rc(WEFT_EINVAL, weft_rwlock_unlock(&l)); /* not held */
	assert_rc(0, weft_rwlock_rdlock(&l));
	assert_rc(0, weft_rwlock_tryrdlock(&l));
	assert_rc(WEFT_EBUSY, weft_rwlock_trywrlock(&l));
	assert_rc(WEFT_ETIMEDOUT, weft_rwlock_wrlock_until(&l, weft_clock_ns() + 2000000));
	/* The writer that gave up (it starved: it had kept readers out)
	 * lets readers in again. */
	assert_rc(0, weft_rwlock_tryrdlock(&l));
	for (int i = 0; i < 3; i++)
		assert_rc(0, weft_rwlock_unlock(&l));
	assert_rc(WEFT_EINVAL, weft_rwlock_unlock(&l));
	assert_rc(0, weft_rwlock_wrlock(&l));
	assert_rc(WEFT_EBUSY, weft_rwlock_tryrdlock(&l));
	assert_rc(WEFT_ETIMEDOUT, weft_rwlock_rdlock_until(&l, 0));
	assert_rc(0, weft_rwlock_unlock(&l));
	assert_rc(WEFT_EINVAL, weft_rwlock_unlock(&l));
	assert_rc(0, weft_rwlock_trywrlock(&l));
	assert_rc(0, weft_rwlock_unlock(&l));
}

/* Neither side starves: a writer gets in while three readers take turns
 * so that some reader always holds the lock (barging readers alone would
 * keep it out for ever, as glibc's default rwlock does), and a reader gets
 * in while two writers do the same. */
static _Atomic bool rw_stop;

static void hold_us(int us)
{
	struct timespec ts = {0, us * 1000L};
	nanosleep(&ts, NULL);
}

static void *turn_taker(void *arg)
{
	bool writer = arg != NULL;
	while (!atomic_load(&rw_stop)) {
		WT_CHECK_RC(0, writer ? weft_rwlock_wrlock(&rw) : weft_rwlock_rdlock(&rw));
		hold_us(200);
		WT_CHECK_RC(0, weft_rwlock_unlock(&rw));
	}
	return NULL;
}

static void no_starvation(bool writer_waits)
{
	assert_rc(0, weft_rwlock_init(&rw));
	atomic_store(&rw_stop, false);
	int n = writer_waits ? 3 : 2;
	pthread_t th[3];
	for (int i = 0; i < n; i++) {
		wt_thread_start(&th[i], turn_taker, writer_waits ? NULL : (void *)1);
		hold_us(70);
	}
	wt_sleep_ms(5);
	int64_t deadline = weft_clock_ns() + (int64_t)(WT_PATIENCE_S * 1e9);
	for (int i = 0; i < 20; i++) {
		assert_rc(0, writer_waits ? weft_rwlock_wrlock_until(&rw, deadline)
		                          : weft_rwlock_rdlock_until(&rw, deadline));
		assert_rc(0, weft_rwlock_unlock(&rw));
	}
	atomic_store(&rw_stop, true);
	for (int i = 0; i < n; i++)
		wt_thread_join(th[i]);
	assert_int_equal(atomic_load((_Atomic uint32_t *)&rw.state_), 0);
}

static void rwlock_no_starvation(void)
{
	no_starvation(true);
	no_starvation(false);
}

/* ------------------------------------------------------------ once */

static weft_once once = WEFT_ONCE_INIT;
static _Atomic int once_runs, once_after;

static void once_fn(void *arg)
{
	(void)arg;
	atomic_fetch_add(&once_runs, 1);
	weft_sleep_ns(2000000); /* callers pile up meanwhile */
}

static void once_caller(void)
{
	WT_CHECK_RC(0, weft_once_call(&once, once_fn, NULL));
	WT_CHECK(weft_once_done(&once));
	WT_CHECK(atomic_load(&once_runs) == 1);
	atomic_fetch_add(&once_after, 1);
}

static void once_task(void *arg)
{
	(void)arg;
	once_caller();
}

static void *once_thread(void *arg)
{
	(void)arg;
	once_caller();
	return NULL;
}

/* 64 concurrent callers (60 tasks, 4 threads): the function runs once,
 * and every caller returns after it did. */
static void once_64(void)
{
	weft_rt *rt = wt_create_default();
	memset(&once, 0, sizeof(once));
	atomic_store(&once_runs, 0);
	atomic_store(&once_after, 0);
	assert_false(weft_once_done(&once));
	weft_task *t = task_array(60);
	pthread_t th[4];
	for (int i = 0; i < 4; i++)
		wt_thread_start(&th[i], once_thread, NULL);
	for (int i = 0; i < 60; i++) {
		assert_rc(0, weft_task_init(&t[i], once_task, NULL));
		assert_rc(0, weft_post(rt, &t[i]));
	}
	assert_rc(0, weft_wait_all(rt));
	for (int i = 0; i < 4; i++)
		wt_thread_join(th[i]);
	assert_int_equal(atomic_load(&once_runs), 1);
	assert_int_equal(atomic_load(&once_after), 64);
	assert_rc(WEFT_EINVAL, weft_once_call(NULL, once_fn, NULL));
	assert_rc(WEFT_EINVAL, weft_once_call(&once, NULL, NULL));
	assert_rc(0, weft_rt_destroy(rt));
	free(t);
}

/* ------------------------------------------------------------ latch */

static weft_latch latch;
static _Atomic int latch_passed;

static void latch_task(void *arg)
{
	(void)arg;
	WT_CHECK_RC(0, weft_latch_arrive_and_wait(&latch, 1));
	WT_CHECK_RC(0, weft_latch_try_wait(&latch));
	atomic_fetch_add(&latch_passed, 1);
}

static void *latch_counter(void *arg)
{
	int n = (int)(intptr_t)arg;
	for (int i = 0; i < n; i++) {
		wt_sleep_ms(1);
		WT_CHECK_RC(0, weft_latch_count_down(&latch, 1));
	}
	return NULL;
}

static void latch_wait(void)
{
	weft_rt *rt = wt_create_default();
	int n = wt_blockers(rt), extra = 5;
	assert_rc(0, weft_latch_init(&latch, (size_t)(n + extra)));
	atomic_store(&latch_passed, 0);
	assert_rc(WEFT_EBUSY, weft_latch_try_wait(&latch));
	assert_rc(WEFT_ETIMEDOUT, weft_latch_wait_until(&latch, weft_clock_ns() + 1000000));
	weft_task *t = task_array(n);
	for (int i = 0; i < n; i++) {
		assert_rc(0, weft_task_init(&t[i], latch_task, NULL));
		assert_rc(0, weft_post(rt, &t[i]));
	}
	pthread_t th;
	wt_thread_start(&th, latch_counter, (void *)(intptr_t)extra);
	assert_rc(0, weft_latch_wait(&latch));
	assert_rc(0, weft_wait_all(rt));
	wt_thread_join(th);
	assert_int_equal(atomic_load(&latch_passed), n);
	assert_rc(WEFT_EINVAL, weft_latch_count_down(&latch, 1)); /* below zero */
	assert_rc(0, weft_latch_wait_until(&latch, 0));
	assert_rc(0, weft_latch_init(&latch, 2));
	assert_rc(WEFT_EINVAL, weft_latch_count_down(&latch, 3));
	assert_rc(0, weft_latch_count_down(&latch, 2));
	assert_rc(0, weft_latch_wait(&latch));
	assert_rc(WEFT_EINVAL, weft_latch_init(NULL, 1));
	assert_rc(0, weft_rt_destroy(rt));
	free(t);
}

/* ------------------------------------------------------------ select */

enum { SEL_CH = 4, SEL_PER = 3000, SEL_CAP = 4 };
static weft_chan sel_ch[SEL_CH];
static long sel_buf[SEL_CH][SEL_CAP];
static _Atomic unsigned char *sel_seen;
static _Atomic long sel_late_sent, sel_received;

/* Channel i carries i * SEL_PER + 1 .. (i + 1) * SEL_PER, then closes;
 * channel 0 also gets values from a late sender that races the close. */
static void *sel_producer(void *arg)
{
	int i = (int)(intptr_t)arg;
	for (long v = (long)i * SEL_PER + 1; v <= (long)(i + 1) * SEL_PER; v++)
		WT_CHECK_RC(0, weft_chan_send(&sel_ch[i], &v));
	WT_CHECK_RC(0, weft_chan_close(&sel_ch[i]));
	return NULL;
}

static void *sel_late_sender(void *arg)
{
	(void)arg;
	/* Values above 4 * SEL_CH * SEL_PER would not fit sel_seen: stop
	 * there if the close has not come by then (it usually has). */
	for (long v = SEL_CH * SEL_PER + 1; v <= 4L * SEL_CH * SEL_PER; v++) {
		int rc = weft_chan_send(&sel_ch[0], &v);
		if (rc == WEFT_ECLOSED)
			break;
		WT_CHECK_RC(0, rc);
		atomic_fetch_add(&sel_late_sent, 1);
	}
	return NULL;
}

static void sel_consume(void)
{
	long v[SEL_CH];
	weft_chan_case c[SEL_CH];
	int open[SEL_CH], n = SEL_CH;
	for (int i = 0; i < SEL_CH; i++)
		open[i] = i;
	while (n > 0) {
		for (int k = 0; k < n; k++)
			c[k] = (weft_chan_case){&sel_ch[open[k]], WEFT_CHAN_RECV, &v[k], 0};
		int k = weft_chan_select(c, (size_t)n, INT64_MAX);
		WT_CHECK(k >= 0 && k < n);
		if (k < 0)
			return;
		if (c[k].result == WEFT_ECLOSED) {
			open[k] = open[--n];
			continue;
		}
		WT_CHECK_RC(0, c[k].result);
		long x = v[k];
		WT_CHECK(x >= 1 && x <= 4L * SEL_CH * SEL_PER);
		if (x >= 1 && x <= 4L * SEL_CH * SEL_PER)
			WT_CHECK(atomic_fetch_add(&sel_seen[x], 1) == 0); /* exactly once */
		atomic_fetch_add(&sel_received, 1);
	}
}

static void sel_task(void *arg)
{
	(void)arg;
	sel_consume();
}

static void *sel_thread(void *arg)
{
	(void)arg;
	sel_consume();
	return NULL;
}

/* Select over 4 channels (two buffered, two unbuffered) by consumer tasks
 * and a consumer thread: every value is received exactly once, every
 * consumer sees every close, and sends racing a close either arrive or
 * get WEFT_ECLOSED. */
static void select_exactly_once(void)
{
	weft_rt *rt = wt_create_default();
	for (int i = 0; i < SEL_CH; i++)
		assert_rc(0, weft_chan_init(&sel_ch[i], sizeof(long), i % 2 ? 0 : SEL_CAP,
		                            sel_buf[i]));
	sel_seen = calloc(4 * SEL_CH * SEL_PER + 1, 1);
	assert_non_null(sel_seen);
	atomic_store(&sel_late_sent, 0);
	atomic_store(&sel_received, 0);
	int consumers = wt_blockers(rt);
	weft_task *t = task_array(consumers);
	for (int i = 0; i < consumers; i++) {
		assert_rc(0, weft_task_init(&t[i], sel_task, NULL));
		assert_rc(0, weft_post(rt, &t[i]));
	}
	pthread_t prod[SEL_CH], late, cons;
	wt_thread_start(&cons, sel_thread, NULL);
	wt_thread_start(&late, sel_late_sender, NULL);
	for (int i = 0; i < SEL_CH; i++)
		wt_thread_start(&prod[i], sel_producer, (void *)(intptr_t)i);
	for (int i = 0; i < SEL_CH; i++)
		wt_thread_join(prod[i]);
	wt_thread_join(late);
	assert_rc(0, weft_wait_all(rt));
	wt_thread_join(cons);
	wt_check_async();
	assert_int_equal(atomic_load(&sel_received),
	                 SEL_CH * SEL_PER + atomic_load(&sel_late_sent));
	for (long x = 1; x <= SEL_CH * SEL_PER; x++)
		assert_int_equal(sel_seen[x], 1);
	free((void *)sel_seen);
	assert_rc(0, weft_rt_destroy(rt));
	free(t);
}

/* Poll, timeout, send cases, closed channels, misuse, and the random
 * choice among ready cases. */
static void select_cases(void)
{
	long b0[2], b1[2], v = 7, out = 0;
	weft_chan a, b;
	assert_rc(0, weft_chan_init(&a, sizeof(long), 2, b0));
	assert_rc(0, weft_chan_init(&b, sizeof(long), 2, b1));
	weft_chan_case c[2] = {{&a, WEFT_CHAN_RECV, &out, 0}, {&b, WEFT_CHAN_RECV, &out, 0}};
	assert_rc(WEFT_ETIMEDOUT, weft_chan_select(c, 2, 0)); /* poll: nothing */
	assert_rc(WEFT_ETIMEDOUT, weft_chan_select(c, 2, weft_clock_ns() + 2000000));
	assert_rc(WEFT_ETIMEDOUT, weft_chan_select(NULL, 0, weft_clock_ns() + 1000000));
	/* Sends into room. */
	weft_chan_case s[2] = {{&a, WEFT_CHAN_SEND, &v, 0}, {&b, WEFT_CHAN_SEND, &v, 0}};
	int sent[2] = {0, 0};
	for (int i = 0; i < 4; i++) {
		int k = weft_chan_select(s, 2, 0);
		assert_true(k == 0 || k == 1);
		sent[k]++;
	}
	assert_int_equal(sent[0], 2); /* both full now: each took 2 */
	assert_int_equal(sent[1], 2);
	assert_rc(WEFT_ETIMEDOUT, weft_chan_select(s, 2, 0));
	/* Fairness: both ready 2000 times (refilled), each chosen often. */
	int got[2] = {0, 0};
	for (int i = 0; i < 2000; i++) {
		int k = weft_chan_select(c, 2, 0);
		assert_true(k == 0 || k == 1);
		got[k]++;
		assert_rc(0, weft_chan_send(k ? &b : &a, &v));
	}
	assert_true(got[0] > 600 && got[1] > 600);
	/* A closed channel is ready: at once for a send, once drained for a
	 * receive. */
	assert_rc(0, weft_chan_close(&a));
	long x;
	assert_rc(0, weft_chan_recv(&b, &x));
	assert_rc(0, weft_chan_recv(&b, &x));
	weft_chan_case sa = {&a, WEFT_CHAN_SEND, &v, 0};
	assert_int_equal(weft_chan_select(&sa, 1, 0), 0);
	assert_rc(WEFT_ECLOSED, sa.result);
	int closed = 0, values = 0;
	for (int i = 0; i < 3; i++) {
		int k = weft_chan_select(c, 2, INT64_MAX);
		assert_int_equal(k, 0); /* b is empty, a has 2 then closed */
		if (c[0].result == WEFT_ECLOSED)
			closed++;
		else
			values++;
	}
	assert_int_equal(values, 2);
	assert_int_equal(closed, 1);
	/* Misuse. */
	weft_chan_case dup[2] = {{&b, WEFT_CHAN_RECV, &out, 0}, {&b, WEFT_CHAN_SEND, &v, 0}};
	assert_rc(WEFT_EINVAL, weft_chan_select(dup, 2, 0));
	weft_chan_case bad = {&b, (weft_chan_op)9, &out, 0};
	assert_rc(WEFT_EINVAL, weft_chan_select(&bad, 1, 0));
	assert_rc(WEFT_EINVAL, weft_chan_select(NULL, 1, 0));
	assert_rc(WEFT_EINVAL, weft_chan_select(c, 65, 0));
	assert_rc(WEFT_EINVAL, weft_chan_select(NULL, 0, INT64_MAX));
}

/* A select parked on two channels is woken by a send on either, and a
 * select that timed out leaves nothing queued behind (a later send must
 * not vanish into it). */
static weft_chan wake_a, wake_b;

static void *later_send(void *arg)
{
	long v = 42;
	wt_sleep_ms(10);
	WT_CHECK_RC(0, weft_chan_send(arg, &v));
	return NULL;
}

static void select_wakes(void)
{
	assert_rc(0, weft_chan_init(&wake_a, sizeof(long), 0, NULL));
	assert_rc(0, weft_chan_init(&wake_b, sizeof(long), 0, NULL));
	long out = 0;
	weft_chan_case c[2] = {{&wake_a, WEFT_CHAN_RECV, &out, 0},
	                       {&wake_b, WEFT_CHAN_RECV, &out, 0}};
	assert_rc(WEFT_ETIMEDOUT, weft_chan_select(c, 2, weft_clock_ns() + 1000000));
	for (int i = 0; i < 2; i++) {
		pthread_t th;
		wt_thread_start(&th, later_send, i ? &wake_b : &wake_a);
		out = 0;
		assert_int_equal(weft_chan_select(c, 2, INT64_MAX), i);
		assert_int_equal(out, 42);
		wt_thread_join(th);
	}
	/* After the timeout above nothing of ours is queued: a receive by
	 * another party is the one a send meets. */
	pthread_t th;
	wt_thread_start(&th, later_send, &wake_a);
	assert_rc(0, weft_chan_recv(&wake_a, &out));
	wt_thread_join(th);
}

/* ------------------------------------------------------------ task-local */

static weft_tls_key key_a, key_b;
static _Atomic int dtor_calls, dtor_again;
enum { PARKS = 2000 }; /* half of them sleeps (1,000 parks), half yields */

static void count_dtor(void *v)
{
	atomic_fetch_add(&dtor_calls, 1);
	free(v);
}

/* Sets a value under key_a again once: the next round destroys it. */
static void again_dtor(void *v)
{
	(void)v;
	if (atomic_fetch_add(&dtor_again, 1) == 0)
		WT_CHECK_RC(0, weft_tls_set(key_a, malloc(8)));
}

static _Atomic int moved;

static void local_task(void *arg)
{
	long me = (long)(intptr_t)arg;
	WT_CHECK(weft_tls_get(key_a) == NULL); /* fresh for every task */
	long *v = malloc(sizeof(long));
	*v = me;
	WT_CHECK_RC(0, weft_tls_set(key_a, v));
	WT_CHECK_RC(0, weft_tls_set(key_b, (void *)(intptr_t)(me + 1)));
	int w0 = weft_worker_index();
	for (int i = 0; i < PARKS; i++) {
		if (i % 2 == 0)
			weft_sleep_ns(1000); /* parks on a fiber model */
		else
			weft_yield(); /* requeues: on mn, any worker may resume it */
		long *got = weft_tls_get(key_a);
		WT_CHECK(got == v && *got == me);
		WT_CHECK((intptr_t)weft_tls_get(key_b) == me + 1);
		if (weft_worker_index() != w0)
			atomic_store(&moved, 1);
	}
}

/* A parent's value is its own while a child runs inside its weft_wait
 * (kernel-thread models run it on the same thread). */
static void local_child(void *arg)
{
	(void)arg;
	WT_CHECK(weft_tls_get(key_b) == NULL);
	WT_CHECK_RC(0, weft_tls_set(key_b, (void *)7));
}

static void local_parent(void *arg)
{
	(void)arg;
	WT_CHECK_RC(0, weft_tls_set(key_b, (void *)3));
	weft_task child;
	WT_CHECK_RC(0, weft_task_init(&child, local_child, NULL));
	WT_CHECK_RC(0, weft_post(weft_rt_current(), &child));
	WT_CHECK_RC(0, weft_wait(&child));
	WT_CHECK((intptr_t)weft_tls_get(key_b) == 3);
}

static void *local_thread(void *arg)
{
	(void)arg;
	WT_CHECK(weft_tls_get(key_a) == NULL);
	WT_CHECK_RC(0, weft_tls_set(key_a, malloc(8)));
	WT_CHECK(weft_tls_get(key_a) != NULL);
	return NULL; /* destroyed at exit */
}

static void tls_values(void)
{
	weft_rt *rt = wt_create_default();
	assert_rc(0, weft_tls_key_create(&key_a, count_dtor));
	assert_rc(0, weft_tls_key_create(&key_b, NULL));
	atomic_store(&dtor_calls, 0);
	atomic_store(&moved, 0);
	int n = 2 * wt_workers(rt) + 2;
	weft_task *t = task_array(n + 4);
	for (int i = 0; i < n; i++) {
		assert_rc(0, weft_task_init(&t[i], local_task, (void *)(intptr_t)i));
		assert_rc(0, weft_post(rt, &t[i]));
	}
	for (int i = n; i < n + 4; i++) {
		assert_rc(0, weft_task_init(&t[i], local_parent, NULL));
		assert_rc(0, weft_post(rt, &t[i]));
	}
	assert_rc(0, weft_wait_all(rt));
	wt_check_async();
	assert_int_equal(atomic_load(&dtor_calls), n); /* one per task, at its end */
	pthread_t th;
	wt_thread_start(&th, local_thread, NULL);
	wt_thread_join(th);
	assert_int_equal(atomic_load(&dtor_calls), n + 1);
	if (atomic_load(&moved))
		print_message("[ info     ] a task changed worker with its values intact\n");
	assert_rc(0, weft_tls_key_delete(key_a));
	assert_rc(0, weft_tls_key_delete(key_b));
	assert_rc(0, weft_rt_destroy(rt));
	free(t);
}

static void again_task(void *arg)
{
	(void)arg;
	WT_CHECK_RC(0, weft_tls_set(key_b, (void *)1));
}

static void tls_keys(void)
{
	weft_tls_key k, keys[WEFT_TLS_KEYS_MAX];
	assert_rc(WEFT_EINVAL, weft_tls_key_create(NULL, NULL));
	assert_rc(0, weft_tls_key_create(&k, NULL));
	assert_null(weft_tls_get(k));
	assert_rc(0, weft_tls_set(k, (void *)5));
	assert_ptr_equal(weft_tls_get(k), (void *)5);
	assert_rc(0, weft_tls_set(k, NULL));
	assert_rc(0, weft_tls_key_delete(k));
	assert_rc(WEFT_EINVAL, weft_tls_key_delete(k));
	assert_rc(WEFT_EINVAL, weft_tls_set(k, (void *)5));
	assert_null(weft_tls_get(k));
	assert_rc(WEFT_EINVAL, weft_tls_set((weft_tls_key){0}, (void *)5));
	/* Up to the limit, then WEFT_EAGAIN; a slot reused by a new key
	 * does not show the old key's value. */
	int made = 0;
	while (made < WEFT_TLS_KEYS_MAX && weft_tls_key_create(&keys[made], NULL) == 0)
		made++;
	assert_true(made >= WEFT_TLS_KEYS_MAX - 8); /* other cases may hold some */
	weft_tls_key extra;
	assert_rc(WEFT_EAGAIN, weft_tls_key_create(&extra, NULL));
	for (int i = 0; i < made; i++)
		assert_rc(0, weft_tls_key_delete(keys[i]));
	/* A destructor that sets a value again gets another round. */
	weft_rt *rt = wt_create_default();
	assert_rc(0, weft_tls_key_create(&key_a, count_dtor));
	assert_rc(0, weft_tls_key_create(&key_b, again_dtor));
	atomic_store(&dtor_calls, 0);
	atomic_store(&dtor_again, 0);
	weft_task t;
	assert_rc(0, weft_task_init(&t, again_task, NULL));
	assert_rc(0, weft_post(rt, &t));
	assert_rc(0, weft_wait(&t));
	assert_int_equal(atomic_load(&dtor_again), 1);
	assert_int_equal(atomic_load(&dtor_calls), 1); /* the value it set */
	assert_rc(0, weft_tls_key_delete(key_a));
	assert_rc(0, weft_tls_key_delete(key_b));
	assert_rc(0, weft_rt_destroy(rt));
}

/* ------------------------------------------------------------ periodic */

static _Atomic int tick_running, tick_after_cancel;
static _Atomic bool cancelled_flag;
static weft_periodic per;

static void tick(void *arg)
{
	(void)arg;
	WT_CHECK(atomic_fetch_add(&tick_running, 1) == 0); /* runs never overlap */
	if (atomic_load(&cancelled_flag))
		atomic_fetch_add(&tick_after_cancel, 1);
	if (weft_periodic_runs(&per) % 7 == 3)
		weft_sleep_ns(100000);
	atomic_fetch_sub(&tick_running, 1);
}

static bool runs_reached(void *arg)
{
	return weft_periodic_runs(&per) >= (uint64_t)(intptr_t)arg;
}

/* A 1 ms periodic task runs at least 30 times, never twice at once, and
 * not once after weft_periodic_cancel returned. */
static void periodic_cancel(void)
{
	weft_rt *rt = wt_create_default();
	atomic_store(&tick_after_cancel, 0);
	atomic_store(&cancelled_flag, false);
	assert_rc(0,
	          weft_post_every(rt, &per, tick, NULL, weft_clock_ns(), 1000000, WEFT_EVERY_SKIP));
	assert_rc(WEFT_EBUSY, weft_post_every(rt, &per, tick, NULL, 0, 1000000, 0));
	assert_true(wt_poll(runs_reached, (void *)(intptr_t)30));
	assert_rc(0, weft_periodic_cancel(&per));
	atomic_store(&cancelled_flag, true);
	uint64_t runs = weft_periodic_runs(&per);
	wt_sleep_ms(20);
	assert_int_equal(weft_periodic_runs(&per), runs);
	assert_int_equal(atomic_load(&tick_after_cancel), 0);
	assert_rc(0, weft_periodic_cancel(&per)); /* again: nothing left */
	assert_rc(0, weft_periodic_wait(&per));
	assert_rc(0, weft_wait_all(rt));
	/* p may be posted again. */
	assert_rc(0, weft_post_every(rt, &per, tick, NULL, weft_clock_ns(), 500000,
	                             WEFT_EVERY_CATCH_UP));
	assert_true(wt_poll(runs_reached, (void *)(intptr_t)5));
	assert_rc(0, weft_periodic_cancel(&per));
	assert_rc(0, weft_rt_destroy(rt));
}

static weft_periodic self_stop;
static _Atomic int self_runs;

static void stops_itself(void *arg)
{
	(void)arg;
	if (atomic_fetch_add(&self_runs, 1) + 1 == 50)
		WT_CHECK_RC(0, weft_periodic_cancel(&self_stop));
	WT_CHECK_RC(WEFT_EDEADLK, weft_periodic_wait(&self_stop));
}

/* 50 runs that cancel themselves at the 50th: weft_periodic_wait returns
 * after exactly 50. */
static void periodic_self_cancel(void)
{
	weft_rt *rt = wt_create_default();
	atomic_store(&self_runs, 0);
	assert_rc(0, weft_post_every(rt, &self_stop, stops_itself, NULL, weft_clock_ns(), 200000,
	                             WEFT_EVERY_CATCH_UP));
	assert_rc(0, weft_periodic_wait(&self_stop));
	assert_int_equal(atomic_load(&self_runs), 50);
	assert_int_equal(weft_periodic_runs(&self_stop), 50);
	assert_rc(0, weft_wait_all(rt));
	assert_rc(0, weft_rt_destroy(rt));
}

static weft_periodic over;

static void overruns(void *arg)
{
	(void)arg;
	if (weft_periodic_runs(&over) == 2)
		weft_sleep_ns(6 * 1000000); /* 6 periods */
}

static bool runs_reached_over(void *arg)
{
	return weft_periodic_runs(&over) >= (uint64_t)(intptr_t)arg;
}

/* Skip: an overrun of six periods skips at least four (deadlines computed
 * from the start: the run after it is the first still ahead). Catch up:
 * none skipped. Then destroy ends a periodic task by itself, whether its
 * next run is held (long period) or due soon. */
static void periodic_overrun_destroy(void)
{
	weft_rt *rt = wt_create_default();
	assert_rc(WEFT_EINVAL, weft_post_every(rt, &over, overruns, NULL, 0, 0, 0));
	assert_rc(WEFT_EINVAL, weft_post_every(rt, &over, overruns, NULL, 0, 1000, 8));
	assert_rc(WEFT_EINVAL, weft_post_every(NULL, &over, overruns, NULL, 0, 1000, 0));
	assert_rc(0, weft_post_every(rt, &over, overruns, NULL, weft_clock_ns(), 1000000,
	                             WEFT_EVERY_SKIP));
	assert_true(wt_poll(runs_reached_over, (void *)(intptr_t)6));
	assert_rc(0, weft_periodic_cancel(&over));
	assert_true(weft_periodic_skipped(&over) >= 4);
	assert_rc(0, weft_post_every(rt, &over, overruns, NULL, weft_clock_ns(), 1000000,
	                             WEFT_EVERY_CATCH_UP));
	assert_true(wt_poll(runs_reached_over, (void *)(intptr_t)10));
	assert_rc(0, weft_periodic_cancel(&over));
	assert_int_equal(weft_periodic_skipped(&over), 0);
	/* Destroy with one periodic held an hour ahead and one running. */
	weft_periodic far;
	assert_rc(0, weft_post_every(rt, &far, overruns, NULL, weft_clock_ns() + 3600000000000LL,
	                             3600000000000LL, 0));
	assert_rc(0, weft_post_every(rt, &over, overruns, NULL, weft_clock_ns(), 300000, 0));
	assert_true(wt_poll(runs_reached_over, (void *)(intptr_t)3));
	assert_rc(0, weft_rt_destroy(rt));
	assert_int_equal(weft_periodic_runs(&far), 0);
	uint64_t runs = weft_periodic_runs(&over);
	assert_rc(0, weft_periodic_cancel(&over)); /* ended already: fine */
	assert_rc(0, weft_periodic_cancel(&far));
	assert_int_equal(weft_periodic_runs(&over), runs);
}

WT_CASES(WT_CASE(rwlock_invariant), WT_CASE(rwlock_misuse), WT_CASE(rwlock_no_starvation),
         WT_CASE(once_64), WT_CASE(latch_wait), WT_CASE(select_exactly_once), WT_CASE(select_cases),
         WT_CASE(select_wakes), WT_CASE(tls_values), WT_CASE(tls_keys), WT_CASE(periodic_cancel),
         WT_CASE(periodic_self_cancel), WT_CASE(periodic_overrun_destroy));
