/* Tests of the seed Thread Support Library on weft
 * (include/weft/compat/tsl.h, src/compat/tsl.c).
 *
 *   test_compat_tsl <case>
 *
 * TSL is per process (tsl_init succeeds once), and each case is its own
 * process, so a case calls tsl_init once. Cases that need the process to
 * end the TSL way (tsl_exit in main), a fresh tsl_init (a replay), an
 * environment of their own or a death run in a forked child whose stdout
 * and stderr the parent reads (run_child).
 *
 * Scheduling is checked exactly: threads record (tid, step) pairs in a
 * trace and the case compares the whole trace with the one FCFS must give. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <weft/compat/tsl.h>

#include "harness.h"

/* ------------------------------------------------------------ helpers */

#define TRACE_MAX 8192

static int trace[TRACE_MAX];
static int ntrace;

/* Appends (tid, step) as tid * 1000 + step. */
static void rec(int tid, int step)
{
	if (ntrace < TRACE_MAX)
		trace[ntrace++] = tid * 1000 + step;
}

static void me(int step)
{
	rec(tsl_gettid(), step);
}

static void print_trace(const char *what, const int *t, int n)
{
	print_message("%s (%d):", what, n);
	for (int i = 0; i < n; i++)
		print_message(" %d.%d", t[i] / 1000, t[i] % 1000);
	print_message("\n");
}

static void assert_trace(const int *want, int n)
{
	if (ntrace != n || memcmp(trace, want, sizeof(int) * (size_t)n) != 0) {
		print_trace("expected", want, n);
		print_trace("got     ", trace, ntrace);
		fail_msg("the trace differs");
	}
}

typedef struct child_result {
	int status;
	char out[1 << 16]; /* stdout and stderr */
} child_result;

/* Runs fn in a forked child with stdout and stderr on a pipe; the child
 * exits with status 0 when fn returns (or however fn ends it). */
static void run_child(void (*fn)(void *), void *arg, child_result *r)
{
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(fds[0]);
		dup2(fds[1], 1);
		dup2(fds[1], 2);
		close(fds[1]);
		fn(arg);
		fflush(NULL);
		_exit(0);
	}
	close(fds[1]);
	size_t len = 0;
	ssize_t n;
	while (len < sizeof(r->out) - 1 &&
	       ((n = read(fds[0], r->out + len, sizeof(r->out) - 1 - len)) > 0 || n < 0))
		if (n > 0)
			len += (size_t)n;
	r->out[len] = 0;
	close(fds[0]);
	assert_int_equal(waitpid(pid, &r->status, 0), pid);
	if (!WIFEXITED(r->status) || WEXITSTATUS(r->status) != 0)
		print_message("[ child    ] status 0x%x, output:\n%s\n", r->status, r->out);
}

static void assert_child_ok(const child_result *r)
{
	assert_true(WIFEXITED(r->status));
	assert_int_equal(WEXITSTATUS(r->status), 0);
}

/* In a child: report a failed check on stdout and exit with status 3. */
#define CHILD_CHECK(cond)                                                                    \
	do {                                                                                 \
		if (!(cond)) {                                                               \
			printf("CHILD CHECK FAILED %s:%d: %s\n", __FILE__, __LINE__, #cond); \
			fflush(NULL);                                                        \
			_exit(3);                                                            \
		}                                                                            \
	} while (0)

/* A thread body: STEPS times record (tid, step) and yield, then record
 * (tid, 99). */
#define STEPS 3

static void stepper(void *arg)
{
	int steps = arg ? *(int *)arg : STEPS;
	for (int i = 0; i < steps; i++) {
		me(i);
		tsl_yield(TSL_ANY);
	}
	me(99);
}

static void nothing(void *arg)
{
	(void)arg;
}

static void burn_cpu_ms(int ms)
{
	struct timespec a, b;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	do
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
	while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < ms * 1000000L);
}

/* ------------------------------------------------------------ init */

static void *other_kernel_thread(void *arg)
{
	*(int *)arg = tsl_gettid();
	return NULL;
}

static void init_rules(void)
{
	/* Everything fails before tsl_init, and tsl_exit returns. */
	assert_int_equal(tsl_gettid(), TSL_ERROR);
	assert_int_equal(tsl_create_thread(nothing, NULL), TSL_ERROR);
	assert_int_equal(tsl_yield(TSL_ANY), TSL_ERROR);
	assert_int_equal(tsl_join(2), TSL_ERROR);
	assert_int_equal(tsl_cancel(2), TSL_ERROR);
	assert_int_equal(tsl_exit(), TSL_ERROR);

	/* Bad algorithms and a bad WEFT_* value fail without using up the
	 * one tsl_init. */
	assert_int_equal(tsl_init(0), TSL_ERROR);
	assert_int_equal(tsl_init(4), TSL_ERROR);
	assert_int_equal(tsl_init(-1), TSL_ERROR);
	setenv("WEFT_POLICY", "bogus", 1);
	wt_capture_begin();
	int rc = tsl_init(ALG_FCFS);
	const char *err = wt_capture_end();
	unsetenv("WEFT_POLICY");
	assert_int_equal(rc, TSL_ERROR);
	assert_non_null(strstr(err, "WEFT_POLICY"));

	assert_int_equal(tsl_init(ALG_FCFS), TSL_SUCCESS);
	assert_int_equal(tsl_init(ALG_FCFS), TSL_ERROR);
	assert_int_equal(tsl_init(ALG_RANDOM), TSL_ERROR);
	assert_int_equal(tsl_gettid(), TID_MAIN);
	assert_int_equal(tsl_create_thread(NULL, NULL), TSL_ERROR);
	assert_int_equal(tsl_yield(-1), TSL_ERROR);
	assert_int_equal(tsl_yield(TSL_ANY), TID_MAIN);   /* alone: keeps the CPU */
	assert_int_equal(tsl_yield(TID_MAIN), TSL_ERROR); /* not ready: running */

	/* Another kernel thread is not a TSL thread. */
	int seen = 0;
	pthread_t t;
	wt_thread_start(&t, other_kernel_thread, &seen);
	wt_thread_join(t);
	assert_int_equal(seen, TSL_ERROR);
}

static int seen_tid[8];

static void remember_tid(void *arg)
{
	seen_tid[(intptr_t)arg] = tsl_gettid();
}

static void tids(void)
{
	assert_int_equal(tsl_init(ALG_FCFS), TSL_SUCCESS);
	for (intptr_t i = 0; i < 3; i++)
		assert_int_equal(tsl_create_thread(remember_tid, (void *)i), 2 + i);
	for (int tid = 2; tid <= 4; tid++)
		assert_int_equal(tsl_join(tid), tid);
	for (int i = 0; i < 3; i++)
		assert_int_equal(seen_tid[i], 2 + i);
	/* tids are not reused */
	assert_int_equal(tsl_create_thread(remember_tid, (void *)3), 5);
	assert_int_equal(tsl_join(5), 5);
	assert_int_equal(seen_tid[3], 5);
	assert_int_equal(tsl_gettid(), TID_MAIN);
}

/* ------------------------------------------------------------ FCFS */

/* Main and three threads take turns, STEPS each; then main joins them. */
static void fcfs_workload(void)
{
	for (int i = 0; i < 3; i++)
		assert_int_equal(tsl_create_thread(stepper, NULL), 2 + i);
	for (int i = 0; i < STEPS; i++) {
		me(i);
		tsl_yield(TSL_ANY);
	}
	for (int tid = 2; tid <= 4; tid++) {
		assert_int_equal(tsl_join(tid), tid);
		rec(1, 100 + tid);
	}
}

static const int fcfs_want[] = {
        1000,
        2000,
        3000,
        4000,
        1001,
        2001,
        3001,
        4001,
        1002,
        2002,
        3002,
        4002,
        /* main joins 2 and sleeps; 2, 3, 4 finish in turn */
        2099,
        3099,
        4099,
        1102,
        1103,
        1104,
};

static void fcfs_order(void)
{
	assert_int_equal(tsl_init(ALG_FCFS), TSL_SUCCESS);
	fcfs_workload();
	assert_trace(fcfs_want, sizeof(fcfs_want) / sizeof(fcfs_want[0]));
}

static void yield_and_record(void *arg)
{
	(void)arg;
	for (int i = 0; i < 2; i++)
		rec(tsl_gettid(), tsl_yield(TSL_ANY)); /* (me, the tid yielded to) */
}

static void yield_return(void)
{
	assert_int_equal(tsl_init(ALG_FCFS), TSL_SUCCESS);
	assert_int_equal(tsl_create_thread(yield_and_record, NULL), 2);
	assert_int_equal(tsl_create_thread(yield_and_record, NULL), 3);
	rec(1, tsl_yield(TSL_ANY));
	rec(1, tsl_yield(TSL_ANY));
	assert_int_equal(tsl_join(2), 2);
	assert_int_equal(tsl_join(3), 3);
	rec(1, tsl_yield(TSL_ANY)); /* alone */
	/* Each yield returns the next tid of the round robin: 1 -> 2 -> 3 ->
	 * 1; main's last, alone, its own. */
	static const int want[] = {1002, 2003, 3001, 1002, 2003, 3001, 1001};
	assert_trace(want, 7);
}

/* ------------------------------------------------------------ random */

typedef struct replay_arg {
	const char *seed;
} replay_arg;

static void random_step(void *arg)
{
	(void)arg;
	for (int i = 0; i < 20; i++) {
		me(i);
		tsl_yield(TSL_ANY);
	}
}

static void random_child(void *varg)
{
	const replay_arg *a = varg;
	setenv("WEFT_SEED", a->seed, 1);
	CHILD_CHECK(tsl_init(ALG_RANDOM) == TSL_SUCCESS);
	for (int i = 0; i < 6; i++)
		CHILD_CHECK(tsl_create_thread(random_step, NULL) == 2 + i);
	for (int i = 0; i < 20; i++) {
		me(i);
		tsl_yield(TSL_ANY);
	}
	for (int tid = 2; tid <= 7; tid++)
		CHILD_CHECK(tsl_join(tid) == tid);
	for (int i = 0; i < ntrace; i++)
		printf("%d ", trace[i]);
	printf("\n");
}

/* Every thread's steps 0 .. 19, each once and in order. */
static void assert_complete_interleaving(const char *out)
{
	int next[8] = {0};
	int n = 0;
	for (const char *p = out; *p && *p != '\n';) {
		int v = (int)strtol(p, (char **)&p, 10);
		while (*p == ' ')
			p++;
		int tid = v / 1000, step = v % 1000;
		assert_true(tid >= 1 && tid <= 7);
		assert_int_equal(step, next[tid]);
		next[tid]++;
		n++;
	}
	assert_int_equal(n, 7 * 20);
}

static void random_replay(void)
{
	static child_result a, b, c;
	replay_arg seed = {"12345"};
	run_child(random_child, &seed, &a);
	run_child(random_child, &seed, &b);
	assert_child_ok(&a);
	assert_child_ok(&b);
	assert_complete_interleaving(a.out);
	assert_string_equal(a.out, b.out); /* same seed, same interleaving */
	/* Another seed gives another interleaving (140 steps: the chance that
	 * some of four agree with the first is negligible). */
	const char *others[] = {"1", "2", "3", "4"};
	bool differs = false;
	for (int i = 0; i < 4; i++) {
		seed.seed = others[i];
		run_child(random_child, &seed, &c);
		assert_child_ok(&c);
		assert_complete_interleaving(c.out);
		differs |= strcmp(a.out, c.out) != 0;
	}
	assert_true(differs);
	/* Not FCFS: the first round is not 1, 2, ..., 7. */
	assert_false(strncmp(a.out, "1000 2000 3000 4000 5000 6000 7000 ", 35) == 0);
}

/* ------------------------------------------------------------ yield(tid) */

static void two_steps(void *arg)
{
	(void)arg;
	me(0);
	tsl_yield(TSL_ANY);
	me(1);
}

static void join_six(void *arg)
{
	(void)arg;
	me(0);
	rec(tsl_gettid(), tsl_join(6));
}

static void yield_five_times(void *arg)
{
	(void)arg;
	for (int i = 0; i < 5; i++)
		tsl_yield(TSL_ANY);
	me(99);
}

static void yield_specific(void)
{
	assert_int_equal(tsl_init(ALG_FCFS), TSL_SUCCESS);
	for (int i = 0; i < 3; i++)
		assert_int_equal(tsl_create_thread(two_steps, NULL), 2 + i);
	/* 4 runs first; the queue is then 2, 3, main (main at the tail),
	 * then 4 after its yield. */
	rec(1, tsl_yield(4));
	assert_int_equal(tsl_yield(99), TSL_ERROR);       /* unknown */
	assert_int_equal(tsl_yield(TID_MAIN), TSL_ERROR); /* itself */
	rec(1, tsl_yield(3));                             /* 3 is ready again */
	for (int tid = 2; tid <= 4; tid++)
		assert_int_equal(tsl_join(tid), tid);
	static const int want[] = {4000, 2000, 3000, 1004, 3001, 4001, 2001, 1003};
	assert_trace(want, 8);

	/* A thread waiting in tsl_join is not ready. */
	ntrace = 0;
	assert_int_equal(tsl_create_thread(join_six, NULL), 5);
	assert_int_equal(tsl_create_thread(yield_five_times, NULL), 6);
	assert_int_equal(tsl_yield(5), 5); /* 5 joins 6; 6 yields back to main */
	assert_int_equal(tsl_yield(5), TSL_ERROR);
	assert_int_equal(tsl_join(6), TSL_ERROR); /* 5 is joining it */
	assert_int_equal(tsl_join(5), 5);
	assert_int_equal(tsl_yield(6), TSL_ERROR); /* joined by 5: gone */
	assert_int_equal(tsl_join(6), TSL_ERROR);
	static const int want2[] = {5000, 6099, 5006};
	assert_trace(want2, 3);

	/* An exited thread, not yet joined, is not ready either. */
	assert_int_equal(tsl_create_thread(nothing, NULL), 7);
	assert_int_equal(tsl_yield(7), 7);
	assert_int_equal(tsl_yield(7), TSL_ERROR);
	assert_int_equal(tsl_join(7), 7);
}

/* ------------------------------------------------------------ join, exit */

static void exit_midway(void *arg)
{
	(void)arg;
	me(0);
	tsl_yield(TSL_ANY);
	me(1);
	tsl_exit();
	me(2); /* never */
}

static void join_other(void *arg)
{
	int target = *(int *)arg;
	me(0);
	rec(tsl_gettid(), tsl_join(target)); /* (me, target) */
}

static void join_exit(void)
{
	assert_int_equal(tsl_init(ALG_FCFS), TSL_SUCCESS);
	static int target = 2;
	assert_int_equal(tsl_create_thread(exit_midway, NULL), 2);
	assert_int_equal(tsl_create_thread(join_other, &target), 3);
	assert_int_equal(tsl_create_thread(nothing, NULL), 4);
	assert_int_equal(tsl_join(3), 3);
	assert_int_equal(tsl_join(4), 4);         /* exited long ago: no wait */
	assert_int_equal(tsl_join(2), TSL_ERROR); /* 3 joined it */
	/* main joins 3: 2 runs (0) and yields, 3 joins 2, 4 ends, 2 exits,
	 * 3 reaps 2 and ends, main continues. */
	static const int want[] = {2000, 3000, 2001, 3002};
	assert_trace(want, 4);
}

static void join_main(void *arg)
{
	(void)arg;
	rec(tsl_gettid(), -tsl_join(TID_MAIN)); /* main is joining me: a cycle */
}

static void join_rules(void)
{
	assert_int_equal(tsl_init(ALG_FCFS), TSL_SUCCESS);
	assert_int_equal(tsl_join(TID_MAIN), TSL_ERROR); /* itself */
	assert_int_equal(tsl_join(0), TSL_ERROR);
	assert_int_equal(tsl_join(-1), TSL_ERROR);
	assert_int_equal(tsl_join(99), TSL_ERROR);

	/* Direct cycle: main joins 2, 2 joins main: refused. */
	assert_int_equal(tsl_create_thread(join_main, NULL), 2);
	assert_int_equal(tsl_join(2), 2);
	assert_int_equal(tsl_join(2), TSL_ERROR); /* joined already */
	static const int want[] = {2000 - TSL_ERROR};
	assert_trace(want, 1);

	/* Longer cycle: main joins 3, 3 joins 4, 4 joins main: refused. */
	ntrace = 0;
	static int four = 4;
	assert_int_equal(tsl_create_thread(join_other, &four), 3);
	assert_int_equal(tsl_create_thread(join_main, NULL), 4);
	assert_int_equal(tsl_join(3), 3);
	static const int want2[] = {3000, 4000 - TSL_ERROR, 3004};
	assert_trace(want2, 3);
}

/* ------------------------------------------------------------ cancel */

static int loops[8];

static void loop_forever(void *arg)
{
	int i = *(int *)arg;
	for (;;) {
		loops[i]++;
		tsl_yield(TSL_ANY);
	}
}

static void cancel_join(void)
{
	assert_int_equal(tsl_init(ALG_FCFS), TSL_SUCCESS);
	static int idx[3] = {0, 1, 2};
	/* Cancelled before it ever ran: it never runs. */
	assert_int_equal(tsl_create_thread(loop_forever, &idx[0]), 2);
	assert_int_equal(tsl_cancel(2), TSL_SUCCESS);
	assert_int_equal(tsl_cancel(2), TSL_SUCCESS); /* terminated already */
	assert_int_equal(tsl_yield(2), TSL_ERROR);
	assert_int_equal(tsl_yield(TSL_ANY), TID_MAIN);
	assert_int_equal(loops[0], 0);
	assert_int_equal(tsl_join(2), 2);
	assert_int_equal(tsl_cancel(2), TSL_ERROR); /* joined: unknown */

	/* Cancelled while ready, after running a while. */
	assert_int_equal(tsl_create_thread(loop_forever, &idx[1]), 3);
	assert_int_equal(tsl_create_thread(loop_forever, &idx[2]), 4);
	for (int i = 0; i < 5; i++)
		tsl_yield(TSL_ANY);
	assert_int_equal(loops[1], 5);
	assert_int_equal(tsl_cancel(3), TSL_SUCCESS);
	for (int i = 0; i < 5; i++)
		assert_int_equal(tsl_yield(TSL_ANY), 4); /* 3 is out of the queue */
	assert_int_equal(loops[1], 5);
	assert_int_equal(loops[2], 10);
	assert_int_equal(tsl_cancel(4), TSL_SUCCESS);
	assert_int_equal(tsl_yield(TSL_ANY), TID_MAIN);
	assert_int_equal(tsl_join(4), 4);
	assert_int_equal(tsl_join(3), 3);

	assert_int_equal(tsl_cancel(TID_MAIN), TSL_ERROR); /* itself */
	assert_int_equal(tsl_cancel(99), TSL_ERROR);
	assert_int_equal(tsl_cancel(0), TSL_ERROR);

	/* An exited thread: nothing to do, still joinable. */
	assert_int_equal(tsl_create_thread(nothing, NULL), 5);
	assert_int_equal(tsl_yield(TSL_ANY), 5);
	assert_int_equal(tsl_cancel(5), TSL_SUCCESS);
	assert_int_equal(tsl_join(5), 5);
}

static void cancel_joiner(void)
{
	assert_int_equal(tsl_init(ALG_FCFS), TSL_SUCCESS);
	static int two = 2, five = 5, idx = 0;
	/* 3 waits in tsl_join(2) when main cancels it: 2 goes on, and main
	 * may then join 2 itself. */
	assert_int_equal(tsl_create_thread(yield_five_times, NULL), 2);
	assert_int_equal(tsl_create_thread(join_other, &two), 3);
	assert_int_equal(tsl_yield(TSL_ANY), 2);   /* 2 yields; 3 joins 2 */
	assert_int_equal(tsl_yield(3), TSL_ERROR); /* joining */
	assert_int_equal(tsl_cancel(3), TSL_SUCCESS);
	assert_int_equal(tsl_join(2), 2);
	assert_int_equal(tsl_join(3), 3);
	static const int want[] = {3000, 2099};
	assert_trace(want, 2);

	/* The target of a join is cancelled: the joiner wakes, and its
	 * tsl_join returns the target's tid. */
	ntrace = 0;
	assert_int_equal(tsl_create_thread(join_other, &five), 4);
	assert_int_equal(tsl_create_thread(loop_forever, &idx), 5);
	assert_int_equal(tsl_yield(4), 4); /* 4 joins 5; 5 yields to main */
	assert_int_equal(tsl_cancel(5), TSL_SUCCESS);
	assert_int_equal(tsl_join(4), 4);
	static const int want2[] = {4000, 4005};
	assert_trace(want2, 2);
}

/* ------------------------------------------------------------ limits, load */

static void max_threads(void)
{
	assert_int_equal(tsl_init(ALG_FCFS), TSL_SUCCESS);
	int n = 0;
	while (tsl_create_thread(nothing, NULL) != TSL_ERROR)
		n++;
	assert_int_equal(n, TSL_MAXTHREADS - 1); /* main counts */
	/* Exited but not joined: still counted. */
	assert_int_equal(tsl_yield(TSL_ANY), 2); /* every thread runs and exits */
	assert_int_equal(tsl_yield(TSL_ANY), TID_MAIN);
	assert_int_equal(tsl_create_thread(nothing, NULL), TSL_ERROR);
	/* Joining one makes room for one. */
	assert_int_equal(tsl_join(100), 100);
	int tid = tsl_create_thread(nothing, NULL);
	assert_int_equal(tid, 2 + n);
	assert_int_equal(tsl_create_thread(nothing, NULL), TSL_ERROR);
	for (int t = 2; t <= tid; t++)
		if (t != 100)
			assert_int_equal(tsl_join(t), t);
	assert_int_equal(tsl_create_thread(nothing, NULL), tid + 1);
	assert_int_equal(tsl_join(tid + 1), tid + 1);
}

#define COUNT_TO 1000
#define YIELD_K  7

static long total;
static int counted[TSL_MAXTHREADS + 2];

static void counter(void *arg)
{
	(void)arg;
	int tid = tsl_gettid();
	for (int i = 1; i <= COUNT_TO; i++) {
		counted[tid]++;
		total++;
		if (i % YIELD_K == 0)
			tsl_yield(TSL_ANY);
	}
}

static void many_count(void)
{
	assert_int_equal(tsl_init(ALG_FCFS), TSL_SUCCESS);
	int n = TSL_MAXTHREADS - 1;
	for (int i = 0; i < n; i++)
		assert_int_equal(tsl_create_thread(counter, NULL), 2 + i);
	/* After one round each thread has counted to YIELD_K. */
	assert_int_equal(tsl_yield(TSL_ANY), 2);
	assert_int_equal(total, (long)n * YIELD_K);
	for (int tid = 2; tid < 2 + n; tid++)
		assert_int_equal(tsl_join(tid), tid);
	assert_int_equal(total, (long)n * COUNT_TO);
	for (int tid = 2; tid < 2 + n; tid++)
		assert_int_equal(counted[tid], COUNT_TO);
}

/* ------------------------------------------------------------ stacks */

/* Each frame keeps a 128-byte buffer live across the call. */
__attribute__((noinline)) static long recurse(int depth)
{
	volatile char buf[128];
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (char)(depth + (int)i);
	long below = depth > 0 ? recurse(depth - 1) : 0;
	return below + buf[depth % sizeof(buf)];
}

static long recurse_expected(int depth)
{
	long sum = 0;
	for (int d = 0; d <= depth; d++)
		sum += (char)(d + d % 128);
	return sum;
}

static int depth_arg;
static long depth_result;

static void deep(void *arg)
{
	(void)arg;
	depth_result = recurse(depth_arg);
	tsl_yield(TSL_ANY); /* and switch with a deep history */
}

static void deep_recursion(void)
{
	assert_int_equal(tsl_init(ALG_FCFS), TSL_SUCCESS);
	/* About 20 KB of the 32 KB stack (frames are larger under the
	 * sanitizers, hence fewer). */
	depth_arg = WT_SANITIZER ? 40 : 110;
	assert_int_equal(tsl_create_thread(deep, NULL), 2);
	assert_int_equal(tsl_join(2), 2);
	assert_int_equal(depth_result, recurse_expected(depth_arg));
}

static void recurse_forever(void *arg)
{
	(void)arg;
	depth_result = recurse(1 << 30);
}

static void overflow_child(void *arg)
{
	(void)arg;
	/* As in a program of its own: not cmocka's crash handler. */
	signal(SIGSEGV, SIG_DFL);
	signal(SIGBUS, SIG_DFL);
	CHILD_CHECK(tsl_init(ALG_FCFS) == TSL_SUCCESS);
	CHILD_CHECK(tsl_create_thread(recurse_forever, NULL) == 2);
	tsl_join(2);
	printf("survived the overflow\n");
}

static void overflow_death(void)
{
	static child_result r;
	run_child(overflow_child, NULL, &r);
	print_message("%s", r.out);
	assert_true(WIFSIGNALED(r.status));
	assert_int_equal(WTERMSIG(r.status), SIGABRT);
	assert_non_null(strstr(r.out, "weft: fiber task 0x"));
	assert_non_null(strstr(r.out, "overflowed its"));
	assert_non_null(strstr(r.out, "raise WEFT_STACK_SIZE"));
	size_t size = 0;
	const char *p = strstr(r.out, "overflowed its ");
	assert_int_equal(sscanf(p, "overflowed its %zu-byte", &size), 1);
	assert_true(size >= TSL_STACKSIZE);
	assert_null(strstr(r.out, "survived"));
}

static void env_stack_size(void)
{
	/* 1 MiB: far more than the default 32 KB would hold. */
	setenv("WEFT_STACK_SIZE", "1048576", 1);
	assert_int_equal(tsl_init(ALG_FCFS), TSL_SUCCESS);
	depth_arg = 2000; /* several hundred KB, sanitizers included */
	assert_int_equal(tsl_create_thread(deep, NULL), 2);
	assert_int_equal(tsl_join(2), 2);
	assert_int_equal(depth_result, recurse_expected(depth_arg));
}

/* ------------------------------------------------------------ main ends */

static void print_steps(void *arg)
{
	int n = *(int *)arg;
	for (int i = 0; i < n; i++) {
		printf("thread %d step %d\n", tsl_gettid(), i);
		tsl_yield(TSL_ANY);
	}
	printf("thread %d done\n", tsl_gettid());
}

static void join_main_printing(void *arg)
{
	(void)arg;
	printf("thread %d joined %d\n", tsl_gettid(), tsl_join(TID_MAIN));
}

static void main_exit_child(void *arg)
{
	(void)arg;
	static int three = 3;
	CHILD_CHECK(tsl_init(ALG_FCFS) == TSL_SUCCESS);
	CHILD_CHECK(tsl_create_thread(print_steps, &three) == 2);
	CHILD_CHECK(tsl_create_thread(print_steps, &three) == 3);
	CHILD_CHECK(tsl_create_thread(join_main_printing, NULL) == 4);
	printf("main exits\n");
	tsl_exit();
	printf("main after tsl_exit\n");
	fflush(NULL);
	_exit(7);
}

static void main_exit(void)
{
	static child_result r;
	run_child(main_exit_child, NULL, &r);
	assert_child_ok(&r); /* the last thread's exit ended the process: 0 */
	assert_string_equal(r.out, "main exits\n"
	                           "thread 2 step 0\n"
	                           "thread 3 step 0\n"
	                           "thread 4 joined 1\n"
	                           "thread 2 step 1\n"
	                           "thread 3 step 1\n"
	                           "thread 2 step 2\n"
	                           "thread 3 step 2\n"
	                           "thread 2 done\n"
	                           "thread 3 done\n");
}

static void cancel_main(void *arg)
{
	(void)arg;
	printf("cancel main: %d\n", tsl_cancel(TID_MAIN));
	printf("yield to main: %d\n", tsl_yield(TID_MAIN));
	printf("join main: %d\n", tsl_join(TID_MAIN));
	printf("thread 2 ends\n");
}

static void main_cancelled_child(void *arg)
{
	(void)arg;
	CHILD_CHECK(tsl_init(ALG_RANDOM) == TSL_SUCCESS);
	CHILD_CHECK(tsl_create_thread(cancel_main, NULL) == 2);
	printf("main yields\n");
	tsl_yield(TSL_ANY);
	printf("main runs after it was cancelled\n");
	fflush(NULL);
	_exit(7);
}

static void main_cancelled(void)
{
	static child_result r;
	run_child(main_cancelled_child, NULL, &r);
	assert_child_ok(&r);
	assert_string_equal(r.out, "main yields\n"
	                           "cancel main: 0\n"
	                           "yield to main: -1\n"
	                           "join main: 1\n"
	                           "thread 2 ends\n");
}

/* ------------------------------------------------------------ policies */

static void env_policy(void)
{
	/* The environment beats the code: FCFS although the program asks
	 * for random. */
	setenv("WEFT_POLICY", "fifo", 1);
	assert_int_equal(tsl_init(ALG_RANDOM), TSL_SUCCESS);
	fcfs_workload();
	assert_trace(fcfs_want, sizeof(fcfs_want) / sizeof(fcfs_want[0]));
}

static void hog(void *arg)
{
	(void)arg;
	for (int i = 0; i < 3; i++) {
		me(i);
		burn_cpu_ms(5);
		tsl_yield(TSL_ANY);
	}
}

static void myalgorithm(void)
{
	setenv("WEFT_QUANTUM_US", "1000", 1);
	assert_int_equal(tsl_init(ALG_MYALGORITHM), TSL_SUCCESS);
	static int four = 4;
	assert_int_equal(tsl_create_thread(hog, NULL), 2);
	assert_int_equal(tsl_create_thread(stepper, &four), 3);
	assert_int_equal(tsl_create_thread(stepper, &four), 4);
	for (int tid = 2; tid <= 4; tid++)
		assert_int_equal(tsl_join(tid), tid);
	/* The hog used five quanta in its first turn: the light threads,
	 * which used none, run to the end before it runs again (under FCFS
	 * it would take every third turn). */
	static const int want[] = {2000, 3000, 4000, 3001, 4001, 3002, 4002,
	                           3003, 4003, 3099, 4099, 2001, 2002};
	assert_trace(want, sizeof(want) / sizeof(want[0]));
}

/* Under every policy: yields (any and specific), cancels and joins leave
 * every thread with its full count, and nothing lost in the queue. */
static void policy_child(void *arg)
{
	const char *policy = arg;
	setenv("WEFT_POLICY", policy, 1);
	setenv("WEFT_QUANTUM_US", "100", 1);
	setenv("WEFT_MLFQ_BOOST_US", "200", 1);
	CHILD_CHECK(tsl_init(ALG_FCFS) == TSL_SUCCESS);
	enum { N = 40 };
	for (int i = 0; i < N; i++)
		CHILD_CHECK(tsl_create_thread(counter, NULL) == 2 + i);
	for (int round = 0; round < 20; round++) {
		int to = 2 + (round * 7) % N;
		int rc = tsl_yield(to);
		CHILD_CHECK(rc == to || rc == TSL_ERROR);
		burn_cpu_ms(round % 3 == 0);
		tsl_yield(TSL_ANY);
	}
	CHILD_CHECK(tsl_cancel(2 + N - 1) == TSL_SUCCESS);
	CHILD_CHECK(tsl_cancel(2 + N - 2) == TSL_SUCCESS);
	for (int tid = 2; tid < 2 + N; tid++)
		CHILD_CHECK(tsl_join(tid) == tid);
	for (int tid = 2; tid < 2 + N - 2; tid++)
		CHILD_CHECK(counted[tid] == COUNT_TO);
	printf("%s ok\n", policy);
}

static void policies(void)
{
	static const char *const names[] = {"fifo", "random", "priority", "psjf", "mlfq"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		static child_result r;
		run_child(policy_child, (void *)names[i], &r);
		assert_child_ok(&r);
		char want[32];
		snprintf(want, sizeof(want), "%s ok\n", names[i]);
		assert_string_equal(r.out, want);
	}
}

WT_CASES(WT_CASE(init_rules), WT_CASE(tids), WT_CASE(fcfs_order), WT_CASE(yield_return),
         WT_CASE(random_replay), WT_CASE(yield_specific), WT_CASE(join_exit), WT_CASE(join_rules),
         WT_CASE(cancel_join), WT_CASE(cancel_joiner), WT_CASE(max_threads), WT_CASE(many_count),
         WT_CASE(deep_recursion), WT_CASE(overflow_death), WT_CASE(main_exit),
         WT_CASE(main_cancelled), WT_CASE(env_policy), WT_CASE(env_stack_size),
         WT_CASE(myalgorithm), WT_CASE(policies));
