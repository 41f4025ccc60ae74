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
#include "fiber/stack.h"
#include "harness.h"

#define MS             1000000LL
#define STILL_WAITS_MS 50  /* how long a wait with no limit must keep waiting */
#define PROMPT_S       5.0 /* a poll that never returns, not a slow one */

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
static const char *const deadline_names[] = {"INT64_MIN", "-1",         "0",
                                             "now - 1",   "now + 1 us", "INT64_MAX"};
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
		fail_msg("%s(%s) returned %s (%d), expected %s", op->name, arg, weft_err_name(r.rc),
		         r.rc, weft_err_name(forever ? op->released_rc : op->poll_rc));
	op->done(fx, forever);
}

static void extreme_deadlines(void)
{
	static fixture fx;
	memset(&fx, 0, sizeof(fx));
	fx.rt = wt_create_default();
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

/* ------------------------------------------------------------ destroy racing post_at */

typedef struct poster {
	weft_rt *rt;
	_Atomic int go;
	weft_task tasks[8];
	int rc[8];
	int posted;
} poster;

static void *post_at_later(void *arg)
{
	poster *p = arg;
	while (!atomic_load(&p->go))
		;
	int64_t hour = 3600LL * 1000 * MS;
	for (p->posted = 0; p->posted < 8; p->posted++) {
		int i = p->posted;
		p->rc[i] = weft_post_at(p->rt, NULL, &p->tasks[i], weft_clock_ns() + hour);
		if (p->rc[i] != 0) {
			p->posted++;
			break;
		}
	}
	return NULL;
}

/* A cancelling destroy cancels every delayed task accepted before it
 * closed and refuses the later ones: it never waits for their time. */
static void destroy_races_post_at(void)
{
	int rounds = WT_SANITIZER ? 200 : 1000;
	for (int r = 0; r < rounds; r++) {
		static poster p;
		memset(&p, 0, sizeof(p));
		p.rt = wt_create_default();
		for (int i = 0; i < 8; i++)
			assert_rc(0, weft_task_init(&p.tasks[i], nothing, NULL));
		pthread_t thread;
		wt_thread_start(&thread, post_at_later, &p);
		atomic_store(&p.go, 1);
		for (volatile int k = 0; k < (r % 64) * 50; k++)
			;
		double t0 = wt_now();
		size_t discarded = 0;
		assert_rc(0, weft_rt_destroy_ex(p.rt, WEFT_DESTROY_CANCEL, &discarded));
		if (wt_now() - t0 > 10.0)
			fail_msg("round %d: destroy waited %.1f s for delayed tasks", r,
			         wt_now() - t0);
		wt_thread_join(thread);
		for (int i = 0; i < p.posted; i++) {
			if (p.rc[i] == 0)
				assert_int_equal(WEFT_TASK_CANCELLED,
				                 weft_task_state_of(&p.tasks[i]));
			else if (p.rc[i] != WEFT_ESHUTDOWN && p.rc[i] != WEFT_EINVAL)
				fail_msg("round %d: weft_post_at returned %s", r,
				         weft_err_name(p.rc[i]));
		}
	}
}

/* ------------------------------------------------------------ fork with locks held */

static const char *const lock_names[] = {"the log hook's writer", "the delay heaps' list",
                                         "a delay heap", "the runtimes' shells"};

typedef struct holder {
	int which;
	weft_rt *rt;
	_Atomic int held, forked;
} holder;

/* Holds the lock long enough for the other thread to fork meanwhile; a
 * fork that waits for it (the atfork handler) waits this long. It ends
 * only after the fork: a thread ending at the moment of fork may hold the
 * sanitizer's allocator locks (ASan drains its quarantine at thread exit),
 * which the child would inherit held, whatever weft does. */
static void *hold_lock(void *arg)
{
	holder *h = arg;
	weft__testing_lock(h->which, h->rt, true);
	atomic_store(&h->held, 1);
	wt_sleep_ms(30);
	weft__testing_lock(h->which, h->rt, false);
	while (!atomic_load(&h->forked))
		wt_sleep_ms(1);
	return NULL;
}

static bool lock_held(void *arg)
{
	return atomic_load(&((holder *)arg)->held);
}

static void quiet_log(int level, const char *msg, void *ctx)
{
	(void)level;
	(void)msg;
	(void)ctx;
}

#define CHILD_CHECK(cond)                           \
	do {                                        \
		if (!(cond))                        \
			_exit(__LINE__ % 200 + 20); \
	} while (0)

/* What the child does with every lock: the log hook, a runtime of its own,
 * a delayed post cancelled (which scans every heap, the parent's too). */
static void child_uses_weft(void)
{
	alarm(20); /* a deadlock fails the child, not the suite */
	CHILD_CHECK(weft_set_log(quiet_log, NULL) == 0);
	CHILD_CHECK(weft_set_log(NULL, NULL) == 0);
	weft_task t;
	CHILD_CHECK(weft_task_init(&t, nothing, NULL) == 0);
#ifdef __SANITIZE_THREAD__
	_exit(0); /* TSan starts no thread in the child of a threaded process */
#endif
	weft_config cfg;
	weft_config_init(&cfg);
	cfg.model = wt.model;
	cfg.workers = wt.workers;
	weft_rt *rt;
	CHILD_CHECK(weft_rt_create(&rt, &cfg) == 0);
	CHILD_CHECK(weft_post_at(rt, NULL, &t, weft_clock_ns() + 3600LL * 1000 * MS) == 0);
	CHILD_CHECK(weft_cancel(&t) == 0);
	CHILD_CHECK(weft_wait(&t) == WEFT_ECANCELED);
	CHILD_CHECK(weft_post(rt, &t) == 0);
	CHILD_CHECK(weft_wait(&t) == 0);
	CHILD_CHECK(weft_rt_destroy(rt) == 0);
	_exit(0);
}

static pid_t fork_child(void)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0)
		child_uses_weft();
	return pid;
}

static void fork_in_task(void *arg)
{
	*(pid_t *)arg = fork_child();
}

static void fork_holding_locks(void)
{
	weft_rt *rt = wt_create_default();
	/* The parent's runtime has a delay heap with a task in it. */
	weft_task later;
	assert_rc(0, weft_task_init(&later, nothing, NULL));
	assert_rc(0, weft_post_at(rt, NULL, &later, weft_clock_ns() + 3600LL * 1000 * MS));
	for (int which = 0; which < WEFT__TESTING_LOCKS; which++) {
		for (int in_task = 0; in_task < 2; in_task++) {
			holder h = {.which = which, .rt = rt};
			pthread_t thread;
			wt_thread_start(&thread, hold_lock, &h);
			assert_true(wt_poll(lock_held, &h));
			pid_t pid = -1;
			if (in_task) {
				weft_task t;
				assert_rc(0, weft_task_init(&t, fork_in_task, &pid));
				assert_rc(0, weft_post(rt, &t));
				assert_rc(0, weft_wait(&t));
			} else {
				pid = fork_child();
			}
			atomic_store(&h.forked, 1);
			assert_true(pid > 0);
			wt_thread_join(thread);
			int status;
			assert_int_equal(pid, waitpid(pid, &status, 0));
			if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
				fail_msg("forked from %s while another thread held %s: the child "
				         "%s %d",
				         in_task ? "a task" : "the main thread", lock_names[which],
				         WIFSIGNALED(status) ? "was killed by signal"
				                             : "exited with",
				         WIFSIGNALED(status) ? WTERMSIG(status)
				                             : WEXITSTATUS(status));
		}
	}
	assert_rc(0, weft_cancel(&later));
	assert_rc(WEFT_ECANCELED, weft_wait(&later));
	assert_rc(0, weft_rt_destroy(rt));
}

/* ------------------------------------------------------------ signals */

/* Set by the handlers, on whichever thread took the signal (a worker,
 * now that workers do not block it): lock-free atomics, which a handler may
 * store to. */
static _Atomic int caught[NSIG];

static void on_signal(int sig)
{
	atomic_store(&caught[sig], 1);
}

static void spawn_sleeper(void *arg)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		execl("/bin/sleep", "sleep", "30", (char *)NULL);
		_exit(99);
	}
	*(pid_t *)arg = pid;
}

/* The mask of process pid (SigBlk of /proc/<pid>/status). */
static unsigned long long blocked_of(pid_t pid)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	unsigned long long mask = ~0ull;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "SigBlk: %llx", &mask) == 1)
			break;
	fclose(f);
	return mask;
}

static bool spinning_done;

static void busy_until_told(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&spinning_done, __ATOMIC_ACQUIRE))
		weft_yield();
}

static void signals_reach_children(void)
{
	struct sigaction sa, old[3];
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	const int sigs[3] = {SIGINT, SIGTERM, SIGCHLD};
	for (int i = 0; i < 3; i++)
		assert_int_equal(0, sigaction(sigs[i], &sa, &old[i]));
	/* SIGUSR1 blocked by the program, taken with sigtimedwait: weft's
	 * threads must not take it (its default action ends the process). */
	sigset_t usr1, prev;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	assert_int_equal(0, pthread_sigmask(SIG_BLOCK, &usr1, &prev));

	weft_rt *rt = wt_create_default();
	__atomic_store_n(&spinning_done, false, __ATOMIC_RELEASE);
	int n = wt_workers(rt);
	weft_task busy[WT_GATE_MAX];
	/* Every worker but one busy (a fiber model's yields leave room). */
	for (int i = 0; i < n - 1 && i < WT_GATE_MAX; i++) {
		assert_rc(0, weft_task_init(&busy[i], busy_until_told, NULL));
		assert_rc(0, weft_post(rt, &busy[i]));
	}

	/* A child started from a task: its mask is the program's, and
	 * SIGTERM ends it. */
	pid_t pid = -1;
	weft_task t;
	assert_rc(0, weft_task_init(&t, spawn_sleeper, &pid));
	assert_rc(0, weft_post(rt, &t));
	assert_rc(0, weft_wait(&t));
	assert_true(pid > 0);
	wt_sleep_ms(50); /* exec'd by now, most likely; the mask is the same before */
	unsigned long long want = 1ull << (SIGUSR1 - 1);
	unsigned long long mask = blocked_of(pid);
	assert_int_equal(0, kill(pid, SIGTERM));
	int status = 0;
	double t0 = wt_now();
	pid_t w;
	while ((w = waitpid(pid, &status, WNOHANG)) == 0 && wt_now() - t0 < 5.0)
		wt_sleep_ms(5);
	if (w == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		fail_msg("a child exec'd from a task ignored SIGTERM (its blocked mask: %#llx)",
		         mask);
	}
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
	if (mask != want)
		fail_msg("a child exec'd from a task blocks %#llx, the program %#llx", mask, want);
	/* The child's end reached the program's SIGCHLD handler. */
	for (int i = 0; i < 1000 && !atomic_load(&caught[SIGCHLD]); i++)
		wt_sleep_ms(1);
	assert_true(atomic_load(&caught[SIGCHLD]));

	/* Process-directed signals reach the program's handlers. */
	for (int i = 0; i < 2; i++) {
		atomic_store(&caught[sigs[i]], 0);
		assert_int_equal(0, kill(getpid(), sigs[i]));
		for (int k = 0; k < 1000 && !atomic_load(&caught[sigs[i]]); k++)
			wt_sleep_ms(1);
		if (!atomic_load(&caught[sigs[i]]))
			fail_msg("%s did not reach the program's handler", strsignal(sigs[i]));
	}
	assert_int_equal(0, kill(getpid(), SIGUSR1));
	struct timespec ts = {5, 0};
	assert_int_equal(SIGUSR1, sigtimedwait(&usr1, NULL, &ts));

	__atomic_store_n(&spinning_done, true, __ATOMIC_RELEASE);
	assert_rc(0, weft_wait_all(rt));
	assert_rc(0, weft_rt_destroy(rt));
	assert_int_equal(0, pthread_sigmask(SIG_SETMASK, &prev, NULL));
	for (int i = 0; i < 3; i++)
		assert_int_equal(0, sigaction(sigs[i], &old[i], NULL));
}

/* ------------------------------------------------------------ stacks */

#define BINS (WEFT_REDUCE_MAX_SIZE / sizeof(uint64_t))

static void bins_init(void *acc, void *arg)
{
	(void)arg;
	memset(acc, 0, WEFT_REDUCE_MAX_SIZE);
}
static void bins_body(size_t lo, size_t hi, void *acc, void *arg)
{
	(void)arg;
	uint64_t *b = acc;
	for (size_t i = lo; i < hi; i++)
		b[i % BINS] += i;
}
static void bins_combine(void *acc, const void *right, void *arg)
{
	(void)arg;
	uint64_t *a = acc;
	const uint64_t *r = right;
	for (size_t i = 0; i < BINS; i++)
		a[i] += r[i];
}

static const weft_reducer bins = {WEFT_REDUCE_MAX_SIZE, bins_init, bins_body, bins_combine};

#define REDUCE_N 200000

typedef struct reduce_call {
	size_t room; /* 0: call at the top of the task; else with about this much stack left */
	int rc;
	bool right;
} reduce_call;

static uint64_t reduce_result[BINS]; /* off the stack: the room is what the call gets */

static void __attribute__((noinline)) reduce_here(reduce_call *c, uint64_t *result)
{
	c->rc = weft_parallel_reduce(weft_rt_current(), 0, REDUCE_N, 0, &bins, NULL, result);
	if (c->rc == 0) {
		uint64_t total = 0;
		for (size_t i = 0; i < BINS; i++)
			total += result[i];
		c->right = total == (uint64_t)REDUCE_N * (REDUCE_N - 1) / 2;
	}
}

static void __attribute__((noinline)) reduce_top(reduce_call *c)
{
	uint64_t result[BINS]; /* on the caller's stack, as the program had it */
	reduce_here(c, result);
}

/* Uses the fiber's stack down to about c->room bytes above its end. */
static void __attribute__((noinline)) reduce_deep(reduce_call *c)
{
	volatile char pad[256];
	pad[0] = 1;
	uintptr_t here = (uintptr_t)__builtin_frame_address(0);
	if (here - (uintptr_t)weft__current_stack->base > c->room)
		reduce_deep(c);
	else
		reduce_here(c, reduce_result);
	pad[1] = pad[0];
}

static void reduce_task(void *arg)
{
	reduce_call *c = arg;
	if (c->room)
		reduce_deep(c);
	else
		reduce_top(c);
}

/* The largest accumulator on the smallest fiber stack: done, or refused
 * with WEFT_ENOMEM where the stack left is too small; never an overflow. */
static void reduce_on_stack(size_t stack_size, reduce_call *calls, size_t n, const char **err)
{
	weft_config cfg;
	wt_config(&cfg);
	cfg.stack_size = stack_size;
	weft_rt *rt = wt_create(&cfg);
	wt_capture_begin();
	for (size_t i = 0; i < n; i++) {
		weft_task t;
		assert_rc(0, weft_task_init(&t, reduce_task, &calls[i]));
		assert_rc(0, weft_post(rt, &t));
		assert_rc(0, weft_wait(&t));
	}
	*err = wt_capture_end();
	assert_rc(0, weft_rt_destroy(rt));
}

static void reduce_small_stack(void)
{
	if (!wt_fiber_model())
		WT_SKIP("kernel-thread models run tasks on thread stacks, not WEFT_STACK_SIZE");
	/* On the smallest stack: at the top of a task the largest reduction
	 * fits; with 5 KiB left (less than one level of 4 KiB and frames,
	 * about 8.5 KiB, need) it is refused without a word: formatting the
	 * message there overran the stack. */
	reduce_call small[] = {{0, -1, false}, {5 * 1024, -1, false}};
	const char *err;
	reduce_on_stack(16384, small, 2, &err);
	assert_rc(0, small[0].rc);
	assert_true(small[0].right);
	assert_rc(WEFT_ENOMEM, small[1].rc);
	assert_null(strstr(err, "weft_parallel_reduce"));
	/* On 64 KiB, four levels need about 22 KiB: with 20 KiB left it is
	 * refused, saying so once. */
	reduce_call big[] = {{20 * 1024, -1, false}};
	reduce_on_stack(65536, big, 1, &err);
	assert_rc(WEFT_ENOMEM, big[0].rc);
	const char *said = strstr(err, "weft_parallel_reduce");
	assert_non_null(said);
	assert_null(strstr(said + 1, "weft_parallel_reduce"));
}

/* Out of stacks. In a child process (RLIMIT_AS is per process), after the
 * runtime is up, the address-space limit is set just above what the
 * process maps: the workers keep the stacks they have and get no more. */
static void limit_address_space(size_t extra)
{
	FILE *f = fopen("/proc/self/statm", "r");
	CHILD_CHECK(f != NULL);
	unsigned long pages = 0;
	CHILD_CHECK(fscanf(f, "%lu", &pages) == 1);
	fclose(f);
	rlim_t now = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE);
	struct rlimit rl = {now + extra, now + extra};
	CHILD_CHECK(setrlimit(RLIMIT_AS, &rl) == 0);
}

static void spin_us(int us)
{
	int64_t end = weft_clock_ns() + us * 1000LL;
	while (weft_clock_ns() < end)
		;
}

static weft_sem gate_sem;
static _Atomic int gate_entered;

static void gate_waits(void *arg)
{
	(void)arg;
	atomic_store(&gate_entered, 1);
	weft_sem_wait(&gate_sem);
}

static void opens_gate(void *arg)
{
	(void)arg;
	weft_sem_post(&gate_sem);
}

/* Posts a child, works while it sits in the deque (long enough for an
 * idle worker to steal it), then waits for it. */
static void fork_join_parent(void *arg)
{
	weft_task child;
	weft_task_init(&child, arg ? opens_gate : nothing, NULL);
	if (weft_post(weft_rt_current(), &child) != 0)
		return;
	spin_us(arg ? 50000 : 20);
	weft_wait(&child);
}

/* One worker's only stack is held by a task parked until a child of a
 * task on the other worker runs: the starved worker must leave that child
 * for its parent (it used to steal it, unable to start it, and the parent's
 * worker, starved in turn, stole it back: both slept for ever). */
static void starved_worker_leaves_child(void *arg)
{
	(void)arg;
	weft_config cfg;
	weft_config_init(&cfg);
	cfg.model = wt.model;
	cfg.workers = 2;
	cfg.stack_size = 256 * 1024;
	weft_rt *rt;
	CHILD_CHECK(weft_rt_create(&rt, &cfg) == 0);
	CHILD_CHECK(weft_sem_init(&gate_sem, 0) == 0);
	limit_address_space(128 * 1024);
	static weft_task q, p;
	weft_task_init(&q, gate_waits, NULL);
	CHILD_CHECK(weft_post(rt, &q) == 0);
	while (!atomic_load(&gate_entered))
		;
	wt_sleep_ms(20);
	weft_task_init(&p, fork_join_parent, &p);
	CHILD_CHECK(weft_post(rt, &p) == 0);
	CHILD_CHECK(weft_wait(&p) == 0);
	CHILD_CHECK(weft_wait(&q) == 0);
	CHILD_CHECK(weft_rt_destroy(rt) == 0);
	_exit(0);
}

/* The program: 20,000 one-level fork-joins posted from outside. */
static void many_fork_joins(void *arg)
{
	(void)arg;
	enum { N = 20000 };
	weft_config cfg;
	weft_config_init(&cfg);
	cfg.model = wt.model;
	cfg.workers = wt.workers;
	cfg.stack_size = 256 * 1024;
	weft_rt *rt;
	CHILD_CHECK(weft_rt_create(&rt, &cfg) == 0);
	weft_task *t = calloc(N, sizeof(*t));
	CHILD_CHECK(t != NULL);
	limit_address_space(4 * 1024 * 1024); /* a dozen stacks more */
	for (int i = 0; i < N; i++) {
		weft_task_init(&t[i], fork_join_parent, NULL);
		CHILD_CHECK(weft_post(rt, &t[i]) == 0);
	}
	CHILD_CHECK(weft_wait_all(rt) == 0);
	for (int i = 0; i < N; i++)
		CHILD_CHECK(weft_task_state_of(&t[i]) == WEFT_TASK_DONE);
	CHILD_CHECK(weft_rt_destroy(rt) == 0);
	_exit(0);
}

static void out_of_stacks(void)
{
	if (!wt_fiber_model())
		WT_SKIP("tasks of kernel-thread models need no stack of weft's");
	if (WT_SANITIZER)
		WT_SKIP("sanitizers reserve terabytes of address space: RLIMIT_AS cannot apply");
	for (int k = 0; k < 2; k++) {
		if (k == 0 && (wt.model != WEFT_MODEL_MN || wt.workers < 2))
			continue; /* needs a second worker that can start tasks */
		char err[2048];
		int status = wt_in_child(k == 0 ? starved_worker_leaves_child : many_fork_joins,
		                         NULL, 60, err, sizeof(err));
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			fail_msg("%s: the child %s %d; it said: %s",
			         k == 0 ? "starved worker" : "20,000 fork-joins",
			         WIFSIGNALED(status) ? "was killed by signal" : "exited with",
			         WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status), err);
	}
}

WT_CASES(WT_CASE(extreme_deadlines), WT_CASE(sleep_forever), WT_CASE(destroy_races_post_at),
         WT_CASE(fork_holding_locks), WT_CASE(signals_reach_children), WT_CASE(reduce_small_stack),
         WT_CASE(out_of_stacks));
