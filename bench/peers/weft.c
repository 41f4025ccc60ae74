/* peers-weft: the peer workloads (peers.h) on every weft model that has a
 * meaning for them, plus plain pthreads for the mutex workload. Libraries in
 * the CSV are "weft-<model>", the model's own name (weft_model_name):
 *
 *   weft-threads  N kernel workers, one shared FIFO queue, one worker per CPU
 *   weft-fibers   every task a fiber on one worker thread (M:1)
 *   weft-mn       fibers over work-stealing workers, one per CPU (when this
 *                 build of weft has the model; policy "steal" if weft has
 *                 one, else the default)
 *   weft-spawn    one kernel thread per task, at most one per CPU at once:
 *                 the naive baseline, run only where tasks are the unit
 *   weft-context  the raw context switch under the fibers (ctx-switch,
 *                 src/fiber/context.h), no runtime at all
 *   pthread       mutex with T kernel threads and a pthread_mutex_t
 *
 * Models are found by name, looping over weft_model_name(0 ..
 * WEFT_MODEL_COUNT_ - 1), so a model added to weft is picked up by a
 * rebuild, and a model this build lacks is skipped without a word. Which
 * workload runs where:
 *
 *   spawn-wait     threads, mn, fibers, spawn (spawn: SPAWN_MODEL_N tasks)
 *   parallel-for   threads, mn (fibers has one worker: nothing to spread;
 *                  spawn would time thread creation, which spawn-wait does)
 *   fiber-switch   fibers, mn (yield between fibers; threads has none)
 *   fiber-create   fibers, mn
 *   ctx-switch     context
 *   mutex-tT       threads, fibers, mn, and pthread
 *   fib-tree       fibers, mn, threads and spawn (n at most FIB_N_BLOCKING
 *                  on the last two; see below)
 *   spawn-join     fibers, mn, threads, spawn (spawn: SPAWN_MODEL_N)
 *   pingpong       threads, mn, spawn with 2 workers (both tasks block, so
 *                  each holds a worker: necessarily different ones), fibers
 *                  (one worker: both fibers on it, so it measures a park and
 *                  a switch, not a cross-thread wake-up); on mn the two
 *                  tasks land where the scheduler puts them, and a line on
 *                  stderr says when both started on the same worker
 *
 * Fork-join under threads and spawn. There a task that waits holds its
 * worker, so a spawn tree deadlocks as soon as every worker waits (today's
 * weft: fib-tree with 2 workers never returns; spawn-join, one waiter at a
 * time, needs 2 workers). A fix is being written (a waiting task lets its
 * worker run other tasks, or the model adds a worker). Until it lands, the
 * first fork-join run of each shape on those two models is preceded by a
 * probe: the same shape, small, in a forked child given PROBE_TIMEOUT_S
 * seconds. If it does not finish, the runs of that shape on that model are
 * skipped with one line on stderr; once the fix is in, the probe passes and
 * the runs happen with nothing to change here (and the probe may go: delete
 * fork_join_ok's callers when "fib-tree skipped on threads" no longer shows
 * on a 2-CPU machine). fib-tree's n is capped at FIB_N_BLOCKING on those models even then:
 * with blocking waits and a FIFO queue the whole tree is expanded before
 * leaves finish, so a fix that adds workers would need thousands of threads.
 *
 * fib-tree is weft_fork_join (weft/parallel.h) at every call, weft's
 * structured fork-join, as the rayon driver uses rayon::join and the tbb
 * driver tbb::task_group (bench/fork_join times the same tree written with
 * weft_post_in and weft_group_wait).
 *
 * parallel-for is weft_parallel_for (weft/parallel.h) with its automatic
 * grain, called from the main thread as tbb::parallel_for is.
 * psort is not here: run.sh times apps/psort/weft-psort.
 *
 * Every run is guarded by a watchdog (WATCHDOG_S): a run that hangs kills
 * the driver with its name on stderr instead of hanging run.sh.
 *
 * WEFT_* variables would override the configuration set in code; run.sh
 * unsets them. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fiber/context.h"
#include "peers.h"
#include <weft/weft.h>

#define PROG       "peers-weft"
#define STACK_SIZE (64 * 1024)

/* Fiber stacks for the fiber models: every workload here is shallow. */
#define FIBER_STACK (16 * 1024)

/* spawn-wait and spawn-join on the spawn model create one thread per task
 * (70-90 us each on the 2-vCPU VM): this many keeps a run under half a
 * second. */
#define SPAWN_MODEL_N 5000L

/* fib-tree's largest n on threads and spawn (3,193 calls); see the top. */
#define FIB_N_BLOCKING 16

/* The fork-join probe: fib(PROBE_FIB_N) in a child given this long. */
#define PROBE_FIB_N     8
#define PROBE_TIMEOUT_S 3

/* No single run here takes a minute on this machine even loaded. */
#define WATCHDOG_S 300

/* ------------------------------------------------------------ models */

/* The value of the model called name in this build of weft, or -1. */
static int model_of(const char *name)
{
	for (int m = 0; m < (int)WEFT_MODEL_COUNT_; m++) {
		const char *s = weft_model_name((weft_model)m);
		if (s && strcmp(s, name) == 0)
			return m;
	}
	return -1;
}

static bool is_fiber_model(weft_model m)
{
	const char *s = weft_model_name(m);
	return strcmp(s, "fibers") == 0 || strcmp(s, "mn") == 0;
}

/* Where a waiting task holds its kernel thread (see the top). */
static bool wait_blocks_worker(weft_model m)
{
	return m == WEFT_MODEL_THREADS || m == WEFT_MODEL_SPAWN;
}

/* The value of the policy called name in this build of weft, or -1. */
static int policy_of(const char *name)
{
	for (int p = 0; p < (int)WEFT_POLICY_COUNT_; p++) {
		const char *s = weft_policy_name((weft_policy)p);
		if (s && strcmp(s, name) == 0)
			return p;
	}
	return -1;
}

/* The configuration every run uses: FIFO for the models whose policy we
 * know takes it (as before mn existed); for any other model (mn) the policy
 * named "steal" when weft has one (DESIGN.md: mn's policy), else the
 * default; 16 KiB stacks on the fiber models; workers 0 (one per CPU)
 * unless given. */
static weft_config config_for(weft_model m, int workers)
{
	weft_config cfg;
	weft_config_init(&cfg);
	cfg.model = m;
	if (m == WEFT_MODEL_THREADS || m == WEFT_MODEL_FIBERS || m == WEFT_MODEL_SPAWN)
		cfg.policy = WEFT_POLICY_FIFO;
	else if (policy_of("steal") >= 0)
		cfg.policy = (weft_policy)policy_of("steal");
	if (is_fiber_model(m))
		cfg.stack_size = FIBER_STACK;
	cfg.workers = workers;
	return cfg;
}

static weft_rt *make_rt_n(weft_model m, int workers)
{
	weft_config cfg = config_for(m, workers);
	weft_rt *rt;
	int rc = weft_rt_create(&rt, &cfg);
	if (rc != 0) {
		fprintf(stderr, "%s: cannot create a %s runtime: %s\n", PROG, weft_model_name(m),
		        weft_strerror(rc));
		exit(1);
	}
	return rt;
}

static weft_rt *make_rt(weft_model m)
{
	return make_rt_n(m, 0);
}

/* Whether a runtime of model m can be created at all; checked once per
 * model, so that a new model which refuses our configuration is skipped
 * with one line rather than failing every run. */
static bool model_ok(weft_model m)
{
	static signed char known[WEFT_MODEL_COUNT_ + 1];
	if (known[m] == 0) {
		weft_config cfg = config_for(m, 0);
		weft_rt *rt;
		int rc = weft_rt_create(&rt, &cfg);
		if (rc == 0) {
			weft_rt_destroy(rt);
			known[m] = 1;
		} else {
			fprintf(stderr, "%s: model %s skipped: weft_rt_create: %s\n", PROG,
			        weft_model_name(m), weft_strerror(rc));
			known[m] = -1;
		}
	}
	return known[m] > 0;
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);
	if (!p)
		peers_die(PROG, "out of memory");
	return p;
}

static void post_in(weft_rt *rt, weft_group *g, weft_task *t)
{
	int rc = g ? weft_post_in(rt, g, t) : weft_post(rt, t);
	if (rc != 0) {
		fprintf(stderr, "%s: weft_post: %s\n", PROG, weft_strerror(rc));
		exit(1);
	}
}

/* ------------------------------------------------------------ watchdog */

static char wd_msg[128];
static size_t wd_len;

static void wd_fire(int sig)
{
	(void)sig;
	if (write(STDERR_FILENO, wd_msg, wd_len) < 0) {
		/* nothing more to do: we are exiting */
	}
	_exit(1);
}

static void wd_arm(const char *workload, const char *label)
{
	int n = snprintf(wd_msg, sizeof(wd_msg), "%s: %s on %s did not finish in %d s\n", PROG,
	                 workload, label, WATCHDOG_S);
	wd_len = n > 0 && (size_t)n < sizeof(wd_msg) ? (size_t)n : 0;
	signal(SIGALRM, wd_fire);
	alarm(WATCHDOG_S);
}

static void wd_disarm(void)
{
	alarm(0);
}

/* ------------------------------------------------------------ running */

typedef void (*run_fn)(const peers_opts *o, weft_model m, const char *label);

/* Runs fn for workload on each model of models (names, NULL-terminated)
 * that this weft has, under the watchdog. */
static void run_on(const peers_opts *o, const char *workload, const char *const *models, run_fn fn)
{
	if (!peers_want(o, workload))
		return;
	for (const char *const *name = models; *name; name++) {
		int m = model_of(*name);
		if (m < 0 || !model_ok((weft_model)m))
			continue;
		char label[32];
		snprintf(label, sizeof(label), "weft-%s", *name);
		wd_arm(workload, label);
		fn(o, (weft_model)m, label);
		wd_disarm();
	}
}

static const char *const all_models[] = {"threads", "mn", "fibers", "spawn", NULL};

/* ------------------------------------------------------------ spawn-wait */

static void empty(void *arg)
{
	(void)arg;
}

static void spawn_wait(const peers_opts *o, weft_model m, const char *label)
{
	long n = m == WEFT_MODEL_SPAWN && o->spawn_n > SPAWN_MODEL_N ? SPAWN_MODEL_N : o->spawn_n;
	weft_rt *rt = make_rt(m);
	weft_task *t = xcalloc((size_t)n, sizeof(*t));
	for (long i = 0; i < n; i++) /* first touch outside the timing */
		weft_task_init(&t[i], empty, NULL);
	double t0 = peers_now_ns();
	for (long i = 0; i < n; i++)
		post_in(rt, NULL, &t[i]);
	weft_wait_all(rt);
	double ns = peers_now_ns() - t0;
	for (long i = 0; i < n; i++)
		if (weft_task_state_of(&t[i]) != WEFT_TASK_DONE)
			peers_die(PROG, "spawn-wait: a task did not run");
	weft_rt_destroy(rt);
	free(t);
	peers_emit(o, "spawn-wait", label, n, ns);
}

/* ------------------------------------------------------------ parallel-for */

static void for_body(size_t lo, size_t hi, void *arg)
{
	int *a = arg;
	for (size_t i = lo; i < hi; i++)
		a[i] += 1;
}

/* weft_parallel_for with the automatic grain, called from the main thread
 * (not a task), as tbb::parallel_for is in tbb.cpp. */
static void parallel_for(const peers_opts *o, weft_model m, const char *label)
{
	weft_rt *rt = make_rt(m);
	long n = o->for_iters;
	int *a = xcalloc((size_t)n, sizeof(*a));
	double t0 = peers_now_ns();
	for (long p = 0; p < o->for_passes; p++) {
		int rc = weft_parallel_for(rt, 0, (size_t)n, 0, for_body, a);
		if (rc != 0) {
			fprintf(stderr, "%s: weft_parallel_for: %s\n", PROG, weft_strerror(rc));
			exit(1);
		}
	}
	double ns = peers_now_ns() - t0;
	for (long i = 0; i < n; i++)
		if (a[i] != o->for_passes)
			peers_die(PROG, "parallel-for: wrong count");
	weft_rt_destroy(rt);
	free(a);
	peers_emit(o, "parallel-for", label, n * o->for_passes, ns);
}

/* ------------------------------------------------------------ fiber-switch */

static long fs_n, fs_done;
static double fs_t0, fs_t1;
static pthread_mutex_t fs_lock = PTHREAD_MUTEX_INITIALIZER;

/* Under mn the two tasks may run at once on two workers: the first start
 * and the last end are taken under a lock. */
static void fs_task(void *arg)
{
	(void)arg;
	double t = peers_now_ns();
	pthread_mutex_lock(&fs_lock);
	if (fs_t0 == 0)
		fs_t0 = t;
	pthread_mutex_unlock(&fs_lock);
	for (long i = 0; i < fs_n; i++)
		weft_yield();
	t = peers_now_ns();
	pthread_mutex_lock(&fs_lock);
	fs_t1 = t > fs_t1 ? t : fs_t1;
	fs_done += fs_n;
	pthread_mutex_unlock(&fs_lock);
}

static void fiber_switch(const peers_opts *o, weft_model m, const char *label)
{
	weft_rt *rt = make_rt(m);
	weft_task t[2];
	fs_n = o->switch_n;
	fs_t0 = fs_t1 = 0;
	fs_done = 0;
	for (int i = 0; i < 2; i++) {
		weft_task_init(&t[i], fs_task, NULL);
		post_in(rt, NULL, &t[i]);
	}
	weft_wait_all(rt);
	weft_rt_destroy(rt);
	if (fs_done != 2 * o->switch_n)
		peers_die(PROG, "fiber-switch: wrong number of yields");
	peers_emit(o, "fiber-switch", label, 2 * o->switch_n, fs_t1 - fs_t0);
}

/* ------------------------------------------------------------ spawn-join
 * (and fiber-create, the same code on the fiber models) */

typedef struct join_arg {
	long n;
	long ran; /* children that ran; only the root and, in turn, its child
	             touch it, ordered by the join */
	double ns;
} join_arg;

static void join_child(void *arg)
{
	((join_arg *)arg)->ran++;
}

static void join_root(void *arg)
{
	join_arg *j = arg;
	weft_rt *rt = weft_rt_current();
	weft_task t;
	double t0 = peers_now_ns();
	for (long i = 0; i < j->n; i++) {
		weft_task_init(&t, join_child, j);
		post_in(rt, NULL, &t);
		if (weft_wait(&t) != 0)
			peers_die(PROG, "spawn-join: weft_wait failed");
	}
	j->ns = peers_now_ns() - t0;
}

/* n spawn+joins from a root task on model m, into *j. */
static void join_run_quiet(weft_model m, long n, join_arg *j)
{
	weft_rt *rt = make_rt(m);
	weft_task root;
	*j = (join_arg){n, 0, 0};
	weft_task_init(&root, join_root, j);
	post_in(rt, NULL, &root);
	weft_wait_all(rt);
	weft_rt_destroy(rt);
}

static void join_run(const peers_opts *o, weft_model m, const char *label, const char *workload,
                     long n)
{
	join_arg j;
	join_run_quiet(m, n, &j);
	if (j.ran != n)
		peers_die(PROG, "spawn-join: wrong number of children");
	peers_emit(o, workload, label, n, j.ns);
}

static void fiber_create(const peers_opts *o, weft_model m, const char *label)
{
	join_run(o, m, label, "fiber-create", o->create_n);
}

/* ------------------------------------------------------------ fib-tree */

typedef struct fib_frame {
	weft_task task;
	int n;
	long value;
} fib_frame;

static void fib_call(void *arg)
{
	fib_frame *f = arg;
	if (f->n < 2) {
		f->value = f->n;
		return;
	}
	fib_frame a = {.n = f->n - 1}, b = {.n = f->n - 2};
	if (weft_fork_join(weft_rt_current(), fib_call, &a, fib_call, &b) != 0)
		peers_die(PROG, "fib-tree: weft_fork_join failed");
	f->value = a.value + b.value;
}

/* fib(n) as a tree on model m; returns its value, *ns the time. */
static long fib_tree_value(weft_model m, int n, double *ns)
{
	weft_rt *rt = make_rt(m);
	fib_frame root = {.n = n};
	weft_task_init(&root.task, fib_call, &root);
	double t0 = peers_now_ns();
	post_in(rt, NULL, &root.task);
	if (weft_wait(&root.task) != 0)
		peers_die(PROG, "fib-tree: weft_wait failed");
	*ns = peers_now_ns() - t0;
	weft_rt_destroy(rt);
	return root.value;
}

/* The fork-join shapes the probe tries: a fib tree, and a spawn-join. */
typedef enum fork_join_kind { FJ_FIB_TREE, FJ_SPAWN_JOIN, FJ_KINDS_ } fork_join_kind;
static const char *const fj_names[FJ_KINDS_] = {"fib-tree", "spawn-join"};

/* Whether a small run of kind finishes on model m: fib(PROBE_FIB_N), or
 * PROBE_FIB_N spawn+joins, in a forked child given PROBE_TIMEOUT_S seconds.
 * Only called between runs, when every runtime of this process is destroyed
 * and its threads joined, so the child starts from a single-threaded copy. */
static bool fork_join_finishes(weft_model m, fork_join_kind kind)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		peers_die(PROG, "fork failed");
	if (pid == 0) {
		alarm(0);
		if (kind == FJ_FIB_TREE) {
			double ns;
			_exit(fib_tree_value(m, PROBE_FIB_N, &ns) == peers_fib(PROBE_FIB_N) ? 0
			                                                                    : 3);
		}
		join_arg j;
		join_run_quiet(m, PROBE_FIB_N, &j);
		_exit(j.ran == PROBE_FIB_N ? 0 : 3);
	}
	int status = 0;
	for (int waited_ms = 0;; waited_ms += 10) {
		pid_t r = waitpid(pid, &status, WNOHANG);
		if (r == pid)
			break;
		if (r < 0 && errno != EINTR)
			peers_die(PROG, "waitpid failed");
		if (waited_ms >= PROBE_TIMEOUT_S * 1000) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return false;
		}
		struct timespec ts = {0, 10 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "%s: %s probe on %s: wrong result or crash\n", PROG, fj_names[kind],
		        weft_model_name(m));
		exit(1);
	}
	return true;
}

/* Whether fork-join runs of kind may go ahead on m: always on the fiber
 * models, after the probe on threads and spawn (see the top), once per
 * model and kind. */
static bool fork_join_ok(weft_model m, fork_join_kind kind)
{
	static signed char known[WEFT_MODEL_COUNT_ + 1][FJ_KINDS_];
	if (!wait_blocks_worker(m))
		return true;
	if (known[m][kind] == 0) {
		known[m][kind] = fork_join_finishes(m, kind) ? 1 : -1;
		if (known[m][kind] < 0)
			fprintf(stderr,
			        "%s: %s skipped on %s: a task waiting for the tasks it posted "
			        "holds "
			        "its worker, and the probe deadlocked (not done in %d s)\n",
			        PROG, fj_names[kind], weft_model_name(m), PROBE_TIMEOUT_S);
	}
	return known[m][kind] > 0;
}

static void fib_tree(const peers_opts *o, weft_model m, const char *label)
{
	int n = o->fib_n;
	if (!fork_join_ok(m, FJ_FIB_TREE))
		return;
	if (wait_blocks_worker(m) && n > FIB_N_BLOCKING)
		n = FIB_N_BLOCKING;
	double ns;
	if (fib_tree_value(m, n, &ns) != peers_fib(n))
		peers_die(PROG, "fib-tree: wrong value");
	peers_emit(o, "fib-tree", label, peers_fib_calls(n), ns);
}

static void spawn_join(const peers_opts *o, weft_model m, const char *label)
{
	long n = m == WEFT_MODEL_SPAWN && o->join_n > SPAWN_MODEL_N ? SPAWN_MODEL_N : o->join_n;
	if (fork_join_ok(m, FJ_SPAWN_JOIN))
		join_run(o, m, label, "spawn-join", n);
}

/* ------------------------------------------------------------ pingpong */

typedef struct ping {
	weft_chan there, back; /* unbuffered: every send meets a receive */
	long n;
	long bad; /* replies that were not the request plus one */
	int worker[2];
	double ns;
} ping;

static void ping_a(void *arg)
{
	ping *p = arg;
	p->worker[0] = weft_worker_index();
	double t0 = peers_now_ns();
	for (long i = 0; i < p->n; i++) {
		long v = i, w;
		if (weft_chan_send(&p->there, &v) != 0 || weft_chan_recv(&p->back, &w) != 0)
			peers_die(PROG, "pingpong: channel failed");
		p->bad += w != i + 1;
	}
	p->ns = peers_now_ns() - t0;
}

static void ping_b(void *arg)
{
	ping *p = arg;
	p->worker[1] = weft_worker_index();
	for (long i = 0; i < p->n; i++) {
		long v;
		if (weft_chan_recv(&p->there, &v) != 0)
			peers_die(PROG, "pingpong: channel failed");
		v++;
		if (weft_chan_send(&p->back, &v) != 0)
			peers_die(PROG, "pingpong: channel failed");
	}
}

static void pingpong(const peers_opts *o, weft_model m, const char *label)
{
	weft_rt *rt = make_rt_n(m, 2);
	weft_config eff;
	weft_rt_config(rt, &eff);
	ping p = {.n = o->ping_n};
	weft_chan_init(&p.there, sizeof(long), 0, NULL);
	weft_chan_init(&p.back, sizeof(long), 0, NULL);
	weft_task a, b;
	weft_task_init(&a, ping_a, &p);
	weft_task_init(&b, ping_b, &p);
	post_in(rt, NULL, &a);
	post_in(rt, NULL, &b);
	weft_wait_all(rt);
	weft_rt_destroy(rt);
	if (p.bad != 0)
		peers_die(PROG, "pingpong: wrong reply");
	if (eff.workers > 1 && p.worker[0] == p.worker[1])
		fprintf(stderr, "%s: pingpong on %s: both tasks started on worker %d of %d\n", PROG,
		        weft_model_name(m), p.worker[0], eff.workers);
	peers_emit(o, "pingpong", label, p.n, p.ns);
}

/* ------------------------------------------------------------ ctx-switch */

static weft__context cx_main, cx_a, cx_b;
static long cx_n, cx_count;
static double cx_ns;

/* As bench/fiber_switch.c's yield: both contexts switch from one call site;
 * a times n round trips after both have started. */
static void cx_entry(void *arg)
{
	bool is_a = arg != NULL;
	weft__context *self = is_a ? &cx_a : &cx_b, *other = is_a ? &cx_b : &cx_a;
	double t0 = 0;
	for (long i = -1;; i++) {
		if (is_a && i == 0)
			t0 = peers_now_ns();
		if (is_a && i == cx_n)
			break;
		if (!is_a)
			cx_count++;
		weft__context_switch(self, other);
	}
	cx_ns = peers_now_ns() - t0;
	weft__context_switch(NULL, &cx_main);
}

static void *stack_map(void)
{
	void *p =
	        mmap(NULL, STACK_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		peers_die(PROG, "mmap failed");
	return p;
}

static void ctx_switch(const peers_opts *o)
{
	void *sa = stack_map(), *sb = stack_map();
	cx_n = o->ctx_n;
	cx_count = 0;
	weft__context_init_thread(&cx_main);
	weft__context_make(&cx_a, sa, STACK_SIZE, cx_entry, &cx_a);
	weft__context_make(&cx_b, sb, STACK_SIZE, cx_entry, NULL);
	weft__context_switch(&cx_main, &cx_a);
	weft__context_release(&cx_a);
	weft__context_release(&cx_b);
	weft__context_release(&cx_main);
	munmap(sa, STACK_SIZE);
	munmap(sb, STACK_SIZE);
	if (cx_count != cx_n + 1)
		peers_die(PROG, "ctx-switch: wrong number of switches");
	peers_emit(o, "ctx-switch", "weft-context", 2 * cx_n, cx_ns);
}

/* ------------------------------------------------------------ mutex */

typedef struct mx_arg {
	long first, step, n;
	int kind; /* 0: weft_mutex, 1: pthread_mutex_t */
} mx_arg;

static weft_mutex mx_weft;
static pthread_mutex_t mx_pthread = PTHREAD_MUTEX_INITIALIZER;
static unsigned *mx_r, *mx_s, mx_res;
static int mx_threads;

static void mx_body(void *arg)
{
	const mx_arg *m = arg;
	if (m->kind == 0) {
		for (long i = m->first; i < m->n; i += m->step) {
			weft_mutex_lock(&mx_weft);
			mx_res += mx_r[i] * mx_s[i];
			weft_mutex_unlock(&mx_weft);
		}
	} else {
		for (long i = m->first; i < m->n; i += m->step) {
			pthread_mutex_lock(&mx_pthread);
			mx_res += mx_r[i] * mx_s[i];
			pthread_mutex_unlock(&mx_pthread);
		}
	}
}

static void *mx_thread(void *arg)
{
	mx_body(arg);
	return NULL;
}

/* One mutex run of mx_threads tasks on model m, or of kernel threads when
 * label is "pthread". */
static void mutex_run(const peers_opts *o, weft_model m, const char *label)
{
	int threads = mx_threads;
	mx_arg *args = xcalloc((size_t)threads, sizeof(*args));
	int kind = strcmp(label, "pthread") == 0;
	for (int i = 0; i < threads; i++)
		args[i] = (mx_arg){i, threads, o->mutex_n, kind};
	mx_res = 0;
	weft_mutex_init(&mx_weft);
	double ns;
	if (kind) {
		pthread_t *th = xcalloc((size_t)threads, sizeof(*th));
		double t0 = peers_now_ns();
		for (int i = 0; i < threads; i++)
			if (pthread_create(&th[i], NULL, mx_thread, &args[i]) != 0)
				peers_die(PROG, "pthread_create failed");
		for (int i = 0; i < threads; i++)
			pthread_join(th[i], NULL);
		ns = peers_now_ns() - t0;
		free(th);
	} else {
		weft_rt *rt = make_rt(m);
		weft_task *t = xcalloc((size_t)threads, sizeof(*t));
		double t0 = peers_now_ns();
		for (int i = 0; i < threads; i++) {
			weft_task_init(&t[i], mx_body, &args[i]);
			post_in(rt, NULL, &t[i]);
		}
		weft_wait_all(rt);
		ns = peers_now_ns() - t0;
		weft_rt_destroy(rt);
		free(t);
	}
	free(args);
	peers_mutex_report(PROG, o, threads, label, mx_res, ns);
}

static void mutex_all(const peers_opts *o)
{
	static const int ts[] = {PEERS_MUTEX_T1, PEERS_MUTEX_T2};
	static const char *const models[] = {"threads", "mn", "fibers", NULL};
	mx_r = xcalloc((size_t)o->mutex_n, sizeof(*mx_r));
	mx_s = xcalloc((size_t)o->mutex_n, sizeof(*mx_s));
	for (long i = 0; i < o->mutex_n; i++)
		mx_r[i] = mx_s[i] = (unsigned)i;
	for (int ti = 0; ti < 2; ti++) {
		char name[32];
		snprintf(name, sizeof(name), "mutex-t%d", ts[ti]);
		mx_threads = ts[ti];
		run_on(o, name, models, mutex_run);
		if (peers_want(o, name)) {
			wd_arm(name, "pthread");
			mutex_run(o, WEFT_MODEL_THREADS, "pthread");
			wd_disarm();
		}
	}
	free(mx_r);
	free(mx_s);
}

int main(int argc, char **argv)
{
	static const char *const loop_models[] = {"threads", "mn", NULL};
	static const char *const fiber_models[] = {"fibers", "mn", NULL};
	peers_opts o = peers_parse(PROG, argc, argv);
	run_on(&o, "spawn-wait", all_models, spawn_wait);
	run_on(&o, "parallel-for", loop_models, parallel_for);
	run_on(&o, "fiber-switch", fiber_models, fiber_switch);
	run_on(&o, "fiber-create", fiber_models, fiber_create);
	if (peers_want(&o, "ctx-switch")) {
		wd_arm("ctx-switch", "weft-context");
		ctx_switch(&o);
		wd_disarm();
	}
	mutex_all(&o);
	run_on(&o, "fib-tree", all_models, fib_tree);
	run_on(&o, "spawn-join", all_models, spawn_join);
	run_on(&o, "pingpong", all_models, pingpong);
	return 0;
}
