/* Edges of the process and of time, under every model and worker count
 * (MATRIX): `test_edges <case> <model> <workers>`.
 *
 *   extreme_deadlines  every timed call of the public API with the deadlines
 *                      INT64_MIN, -1, 0, now - 1, now + 1 us and INT64_MAX
 *                      (every _ns duration with 0, 1 and INT64_MAX), from a
 *                      plain thread and from a task: a deadline in the past
 *                      is a poll (WEFT_ETIMEDOUT at once while the thing is
 *                      not there), INT64_MAX is no limit (still waiting a
 *                      while later; released by its partner, it returns as
 *                      the plain wait)
 *   sleep_forever      weft_sleep_ns(INT64_MAX) in a task and on a thread
 *                      of a child process: still asleep a while later
 *   destroy_races_post_at  weft_rt_destroy_ex(WEFT_DESTROY_CANCEL) racing
 *                      weft_post_at(now + 1 h) from another thread: destroy
 *                      never waits for the hour; every post is cancelled
 *                      or refused with WEFT_ESHUTDOWN
 *   fork_holding_locks another thread holds each of weft's process-wide
 *                      locks in turn (the log hook's, the delay heaps' list,
 *                      a delay heap, the runtimes' shells) while the main
 *                      thread or a task forks: the child creates a runtime
 *                      and uses every one of them
 *   signals_reach_children  a child forked and exec'd from a task dies of
 *                      SIGTERM; SIGINT, SIGTERM and SIGCHLD reach the
 *                      program's handlers with a runtime running
 *   reduce_small_stack weft_parallel_reduce with the largest accumulator on
 *                      a 16 KiB fiber stack: done, or WEFT_ENOMEM; no abort
 *   out_of_stacks_forkjoin  fork-join tasks in a child process under
 *                      RLIMIT_AS, where no more stacks can be mapped: the
 *                      run finishes (fiber models; not under sanitizers,
 *                      which reserve terabytes of address space) */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/testing.h"
#include "harness.h"

#define MS             1000000LL
#define STILL_WAITS_MS 50  /* how long a wait with no limit must keep waiting */
#define PROMPT_S       5.0 /* a poll that never returns, not a slow one */

static weft_rt *create(void)
{
	weft_config cfg;
	wt_config(&cfg);
	return wt_create(&cfg);
}

static void nothing(void *arg)
{
	(void)arg;
}

/* ------------------------------------------------------------ deadlines */

typedef struct fixture {
	weft_rt *rt;
	weft_mutex m, cm;
	weft_cond c;
	weft_sem s;
	weft_chan ch;
	weft_task held, delayed;
	weft_group g;
	int fd[2];
} fixture;

/* One timed call. block makes what it waits for absent (main thread),
 * call waits for it with the argument, release makes it present, done
 * undoes what block and the call left (released: release ran). */
typedef struct timed_op {
	const char *name;
	bool duration; /* the argument is a timeout in ns, not a deadline */
	int poll_rc;   /* what a past deadline or a short timeout returns */
	int released_rc;
	void (*block)(fixture *);
	int (*call)(fixture *, int64_t);
	void (*release)(fixture *);
	void (*done)(fixture *, bool released);
} timed_op;

static void no_block(fixture *fx)
{
	(void)fx;
}

static void no_done(fixture *fx, bool released)
{
	(void)fx;
	(void)released;
}

static void mutex_block(fixture *fx)
{
	assert_rc(0, weft_mutex_lock(&fx->m));
}
static int mutex_call(fixture *fx, int64_t d)
{
	int rc = weft_mutex_lock_until(&fx->m, d);
	if (rc == 0)
		weft_mutex_unlock(&fx->m);
	return rc;
}
static void mutex_release(fixture *fx)
{
	assert_rc(0, weft_mutex_unlock(&fx->m));
}
static void mutex_done(fixture *fx, bool released)
{
	if (!released)
		assert_rc(0, weft_mutex_unlock(&fx->m));
}

static int cond_call(fixture *fx, int64_t d)
{
	WT_CHECK_RC(0, weft_mutex_lock(&fx->cm));
	int rc = weft_cond_wait_until(&fx->c, &fx->cm, d);
	WT_CHECK_RC(0, weft_mutex_unlock(&fx->cm));
	return rc;
}
static void cond_release(fixture *fx)
{
	assert_rc(0, weft_mutex_lock(&fx->cm));
	assert_rc(0, weft_cond_broadcast(&fx->c));
	assert_rc(0, weft_mutex_unlock(&fx->cm));
}

static int sem_call(fixture *fx, int64_t d)
{
	return weft_sem_wait_until(&fx->s, d);
}
static void sem_release(fixture *fx)
{
	assert_rc(0, weft_sem_post(&fx->s));
}

static int send_call(fixture *fx, int64_t d)
{
	int v = 7;
	return weft_chan_send_until(&fx->ch, &v, d);
}
static void send_release(fixture *fx)
{
	int v = 0;
	assert_rc(0, weft_chan_recv(&fx->ch, &v));
	assert_int_equal(7, v);
}

static int recv_call(fixture *fx, int64_t d)
{
	int v = 0;
	int rc = weft_chan_recv_until(&fx->ch, &v, d);
	if (rc == 0 && v != 9)
		rc = WEFT_EINVAL;
	return rc;
}
static void recv_release(fixture *fx)
{
	int v = 9;
	assert_rc(0, weft_chan_send(&fx->ch, &v));
}

/* A task held until INT64_MAX never runs: what weft_wait_until and
 * weft_group_wait_until wait for; weft_cancel ends it. */
static void held_block(fixture *fx)
{
	assert_rc(0, weft_task_init(&fx->held, nothing, NULL));
	assert_rc(0, weft_group_init(&fx->g));
	assert_rc(0, weft_post_at(fx->rt, &fx->g, &fx->held, INT64_MAX));
}
static int task_call(fixture *fx, int64_t d)
{
	return weft_wait_until(&fx->held, d);
}
static int group_call(fixture *fx, int64_t d)
{
	return weft_group_wait_until(&fx->g, d);
}
static void held_release(fixture *fx)
{
	assert_rc(0, weft_cancel(&fx->held));
}
static void held_done(fixture *fx, bool released)
{
	if (!released)
		assert_rc(0, weft_cancel(&fx->held));
	assert_rc(WEFT_ECANCELED, weft_wait(&fx->held));
	assert_rc(0, weft_group_wait(&fx->g));
}

/* weft_post_at: a past deadline runs the task now; INT64_MAX holds it
 * until it is cancelled. */
static int post_at_call(fixture *fx, int64_t d)
{
	int rc = weft_post_at(fx->rt, NULL, &fx->delayed, d);
	return rc ? rc : weft_wait(&fx->delayed);
}
static void post_at_block(fixture *fx)
{
	assert_rc(0, weft_task_init(&fx->delayed, nothing, NULL));
}
static void post_at_release(fixture *fx)
{
	assert_rc(0, weft_cancel(&fx->delayed));
}

static int fd_call(fixture *fx, int64_t ns)
{
	return weft_wait_fd(fx->fd[0], POLLIN, ns);
}
static void fd_release(fixture *fx)
{
	assert_int_equal(1, write(fx->fd[1], "x", 1));
}
static void fd_done(fixture *fx, bool released)
{
	char c;
	if (released)
		assert_int_equal(1, read(fx->fd[0], &c, 1));
}

static int sleep_call(fixture *fx, int64_t ns)
{
	(void)fx;
	return weft_sleep_ns(ns);
}

static const timed_op timed_ops[] = {
        {"weft_mutex_lock_until", false, WEFT_ETIMEDOUT, 0, mutex_block, mutex_call, mutex_release,
         mutex_done},
        {"weft_cond_wait_until", false, WEFT_ETIMEDOUT, 0, no_block, cond_call, cond_release,
         no_done},
        {"weft_sem_wait_until", false, WEFT_ETIMEDOUT, 0, no_block, sem_call, sem_release, no_done},
        {"weft_chan_send_until", false, WEFT_ETIMEDOUT, 0, no_block, send_call, send_release,
         no_done},
        {"weft_chan_recv_until", false, WEFT_ETIMEDOUT, 0, no_block, recv_call, recv_release,
         no_done},
        {"weft_wait_until", false, WEFT_ETIMEDOUT, WEFT_ECANCELED, held_block, task_call,
         held_release, held_done},
        {"weft_group_wait_until", false, WEFT_ETIMEDOUT, 0, held_block, group_call, held_release,
         held_done},
        {"weft_post_at", false, 0, WEFT_ECANCELED, post_at_block, post_at_call, post_at_release,
         no_done},
        {"weft_wait_fd", true, WEFT_ETIMEDOUT, POLLIN, no_block, fd_call, fd_release, fd_done},
        /* INT64_MAX: sleep_forever (nothing can end that sleep) */
        {"weft_sleep_ns", true, 0, 0, no_block, sleep_call, NULL, no_done},
};

enum { D_MIN, D_MINUS_1, D_ZERO, D_NOW_MINUS_1, D_NOW_PLUS_1US, D_MAX, D_COUNT };
static const char *const deadline_names[] = {"INT64_MIN",  "-1",       "0",
                                             "now - 1",    "now + 1 us", "INT64_MAX"};
enum { N_ZERO, N_ONE, N_MAX, N_COUNT };
static const char *const duration_names[] = {"0", "1", "INT64_MAX"};

typedef struct timed_run {
	const timed_op *op;
	fixture *fx;
	int kind;
	weft_task task;
	_Atomic int entered, finished;
	int rc;
} timed_run;

/* The argument, computed by the caller right before the call. */
static int64_t argument(const timed_run *r)
{
	if (r->op->duration)
		return r->kind == N_ZERO ? 0 : r->kind == N_ONE ? 1 : INT64_MAX;
	switch (r->kind) {
	case D_MIN:
		return INT64_MIN;
	case D_MINUS_1:
		return -1;
	case D_ZERO:
		return 0;
	case D_NOW_MINUS_1:
		return weft_clock_ns() - 1;
	case D_NOW_PLUS_1US:
		return weft_clock_ns() + 1000;
	default:
		return INT64_MAX;
	}
}

static void timed_call(void *arg)
{
	timed_run *r = arg;
	int64_t a = argument(r);
	atomic_store(&r->entered, 1);
	r->rc = r->op->call(r->fx, a);
	atomic_store(&r->finished, 1);
}

static void *timed_thread(void *arg)
{
	timed_call(arg);
	return NULL;
}

static bool entered(void *arg)
{
	return atomic_load(&((timed_run *)arg)->entered);
}

static bool finished(void *arg)
{
	return atomic_load(&((timed_run *)arg)->finished);
}

static void run_timed(fixture *fx, const timed_op *op, int kind, bool in_task)
{
	bool forever = op->duration ? kind == N_MAX : kind == D_MAX;
	if (forever && !op->release)
		return;
	const char *arg = op->duration ? duration_names[kind] : deadline_names[kind];
	print_message("  %s(%s) from a %s\n", op->name, arg, in_task ? "task" : "thread");
	timed_run r = {.op = op, .fx = fx, .kind = kind};
	op->block(fx);
	pthread_t thread;
	if (in_task) {
		assert_rc(0, weft_task_init(&r.task, timed_call, &r));
		assert_rc(0, weft_post(fx->rt, &r.task));
	} else {
		wt_thread_start(&thread, timed_thread, &r);
	}
	assert_true(wt_poll(entered, &r));
	if (forever) {
		wt_sleep_ms(STILL_WAITS_MS);
		if (finished(&r))
			fail_msg("%s(%s) returned %s at once: it has no time limit", op->name, arg,
			         weft_err_name(r.rc));
		/* The cond variable's waiter may not be queued yet: signal
		 * until it is through. */
		op->release(fx);
		while (op->release == cond_release && !finished(&r)) {
			wt_sleep_ms(1);
			op->release(fx);
		}
	}
	double t0 = wt_now();
	while (!finished(&r) && wt_now() - t0 < PROMPT_S)
		wt_sleep_ms(1);
	if (!finished(&r))
		fail_msg("%s(%s) did not return within %.0f s", op->name, arg, PROMPT_S);
	if (in_task)
		assert_rc(0, weft_wait(&r.task));
	else
		wt_thread_join(thread);
	if (r.rc != (forever ? op->released_rc : op->poll_rc))
		fail_msg("%s(%s) returned %s (%d), expected %s", op->name, arg,
		         weft_err_name(r.rc), r.rc,
		         weft_err_name(forever ? op->released_rc : op->poll_rc));
	op->done(fx, forever);
}

static void extreme_deadlines(void)
{
	static fixture fx;
	memset(&fx, 0, sizeof(fx));
	fx.rt = create();
	assert_rc(0, weft_mutex_init(&fx.m));
	assert_rc(0, weft_mutex_init(&fx.cm));
	assert_rc(0, weft_cond_init(&fx.c));
	assert_rc(0, weft_sem_init(&fx.s, 0));
	assert_rc(0, weft_chan_init(&fx.ch, sizeof(int), 0, NULL));
	assert_int_equal(0, pipe(fx.fd));
	for (size_t i = 0; i < sizeof(timed_ops) / sizeof(timed_ops[0]); i++) {
		const timed_op *op = &timed_ops[i];
		int kinds = op->duration ? N_COUNT : D_COUNT;
		for (int k = 0; k < kinds; k++) {
			run_timed(&fx, op, k, false);
			run_timed(&fx, op, k, true);
		}
	}
	close(fx.fd[0]);
	close(fx.fd[1]);
	assert_rc(0, weft_rt_destroy(fx.rt));
}

/* ------------------------------------------------------------ sleep forever */

static void sleep_max(void *arg)
{
	(void)arg;
	weft_sleep_ns(INT64_MAX);
	_exit(3); /* woke: the sleep had an end */
}

/* In a child, so that the sleep can be ended: by SIGKILL. */
static void sleep_forever(void)
{
	for (int in_task = 0; in_task < 2; in_task++) {
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			if (!in_task)
				sleep_max(NULL);
			weft_config cfg;
			wt_config(&cfg);
			weft_rt *rt;
			if (weft_rt_create(&rt, &cfg) != 0)
				_exit(4);
			static weft_task t;
			weft_task_init(&t, sleep_max, NULL);
			if (weft_post(rt, &t) != 0)
				_exit(5);
			weft_wait(&t);
			_exit(3);
		}
		wt_sleep_ms(200);
		int status;
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			fail_msg("weft_sleep_ns(INT64_MAX) on a %s ended (status %d)",
			         in_task ? "task" : "thread", status);
		assert_int_equal(0, w);
		assert_int_equal(0, kill(pid, SIGKILL));
		assert_int_equal(pid, waitpid(pid, &status, 0));
		assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	}
}

WT_CASES(WT_CASE(extreme_deadlines), WT_CASE(sleep_forever));
