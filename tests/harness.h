/* The harness every weft test executable shares.
 *
 *   test_<name> <case> [<model> <workers>]
 *
 * runs one case (or `all` of them) as a cmocka test. Before the case a
 * counting allocator is installed with weft_set_allocator; after it the
 * harness asserts that no block weft allocated is still live (both by its own
 * count and by weft__live_allocations()), that no helper thread or task
 * reported a failure, and disarms the fault hooks.
 *
 * cmocka's assertions longjmp, so they may only be used on the thread running
 * the case. Tasks and helper threads use WT_CHECK / WT_CHECK_RC, which record
 * the first failure; the main thread reports them (wt_check_async, also
 * called by the harness after every case).
 *
 * Randomness: wt_seed() is printed at the start of every case; set
 * WEFT_TEST_SEED=<n> to replay a failing run with the same numbers. */
#ifndef WEFT_TESTS_HARNESS_H
#define WEFT_TESTS_HARNESS_H

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include <weft/weft.h>

/* ------------------------------------------------------------ cases */

typedef void (*wt_case_fn)(void);

typedef struct wt_case {
	const char *name;
	wt_case_fn fn;
} wt_case;

/* Every test source defines its table with WT_CASES(WT_CASE(a), ...). */
extern const wt_case wt_cases[];
extern const size_t wt_ncases;

#define WT_CASE(fn)     \
	{               \
#fn, fn \
	}
#define WT_CASES(...)                             \
	const wt_case wt_cases[] = {__VA_ARGS__}; \
	const size_t wt_ncases = sizeof(wt_cases) / sizeof(wt_cases[0])

/* What the command line asked for. Without <model> <workers>: threads, 2. */
typedef struct wt_params {
	const char *case_name;
	weft_model model;
	int workers;
	bool matrix; /* model and workers came from the command line */
} wt_params;

extern wt_params wt;

/* True in ASan/TSan builds: stress counts are scaled down there. */
#ifdef WEFT_TEST_UNDER_SANITIZER
#define WT_SANITIZER 1
#else
#define WT_SANITIZER 0
#endif

/* wt_config fills *cfg with the defaults, then the model and workers of the
 * command line. */
void wt_config(weft_config *cfg);

/* wt_create creates a runtime and asserts success. */
weft_rt *wt_create(const weft_config *cfg);
/* wt_create of the test's model and worker count (wt_config). */
weft_rt *wt_create_default(void);

/* wt_in_child runs body(arg) in a forked child (killed by SIGALRM after
 * alarm_s seconds: a hang fails the child, not the suite; a body that
 * returns exits 0) and returns its wait status; the child's stderr goes
 * to err (NUL-terminated, errlen bytes at most). */
int wt_in_child(void (*body)(void *), void *arg, unsigned alarm_s, char *err, size_t errlen);

/* wt_workers returns the number of workers rt really has (weft_rt_config),
 * which need not be the number asked for: `fibers` runs every task on one
 * worker whatever the configuration says. Use it, never wt.workers, wherever
 * a case holds every worker busy, expects that many tasks to run at once or
 * bounds weft_worker_index(). Main thread only (it asserts). */
int wt_workers(const weft_rt *rt);

/* wt_fiber_model is true when the command line's model runs tasks as fibers
 * (every model but `threads` and `spawn`: `fibers`, and `mn` when it comes):
 * there weft's blocking calls (weft_wait, weft_group_wait, weft_sleep_ns,
 * weft_wait_fd, the primitives of weft/sync.h) park the task and its worker
 * runs others, where a kernel-thread model blocks the worker. */
bool wt_fiber_model(void);

/* wt_blockers returns how many of rt's tasks may sit in weft's blocking
 * calls at once while more tasks still need to run: every worker under a
 * kernel-thread model, more under a fiber model, where blocked tasks park
 * (four per worker: enough to make a worker switch among parked tasks). */
int wt_blockers(const weft_rt *rt);

/* WT_SKIP(fmt, ...) says why on the log and skips the case (cmocka skip();
 * ctest reports it as skipped). Main thread only. */
#define WT_SKIP(...)                                        \
	do {                                                \
		print_message("[ skip     ] " __VA_ARGS__); \
		print_message("\n");                        \
		skip();                                     \
	} while (0)

/* Seconds on the monotonic clock. */
double wt_now(void);
void wt_sleep_ms(int ms);

/* A descriptor number that is not open: the highest closed one under
 * FD_SETSIZE, so that fds the runtime opens lowest-first meanwhile do not
 * take it, past any the test runner left open (CI hands its own pipes and
 * files down), and beyond the fd table of a process that opened few (where
 * select(2) ignores it instead of saying EBADF). */
int wt_closed_fd(void);

/* The longest a test waits for something that must happen soon (a gate
 * task starting, a helper thread blocking) before it fails. */
#define WT_PATIENCE_S 30.0

/* ------------------------------------------------------------ errors */

/* assert_rc(expected, actual): like assert_int_equal, printing code names. */
#define assert_rc(expected, actual) wt_assert_rc((expected), (actual), #actual, __FILE__, __LINE__)
void wt_assert_rc(int expected, int actual, const char *expr, const char *file, int line);

/* Failure reports from threads other than the case's own. */
void wt_async_fail(const char *file, int line, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
#define WT_CHECK(cond)                                                  \
	do {                                                            \
		if (!(cond))                                            \
			wt_async_fail(__FILE__, __LINE__, "%s", #cond); \
	} while (0)
#define WT_CHECK_RC(expected, actual)                                                             \
	do {                                                                                      \
		int wt_rc_ = (actual), wt_exp_ = (expected);                                      \
		if (wt_rc_ != wt_exp_)                                                            \
			wt_async_fail(__FILE__, __LINE__, "%s returned %s, expected %s", #actual, \
			              weft_err_name(wt_rc_), weft_err_name(wt_exp_));             \
	} while (0)
/* Fails the case if any thread reported a failure. */
void wt_check_async(void);

/* ------------------------------------------------------------ allocator */

/* The counting allocator: every block carries its size, checked at free
 * against the size weft passes; freed memory is poisoned first. */
long wt_alloc_live_blocks(void);
long wt_alloc_live_bytes(void);
long wt_alloc_total(void); /* successful allocations since the case began */
/* Makes the nth allocation from now fail (1 = the next one); 0 disarms. */
void wt_alloc_fail_nth(long nth);
/* Asserts that nothing weft allocated is live. */
void wt_assert_no_live_allocations(void);

/* ------------------------------------------------------------ randomness */

uint64_t wt_seed(void);
/* splitmix64: the next number of the sequence in *state. */
uint64_t wt_rand(uint64_t *state);
/* A number in [0, n). */
uint64_t wt_rand_below(uint64_t *state, uint64_t n);

/* ------------------------------------------------------------ gates */

/* A gate holds workers busy: each gate task counts itself started (and
 * records its worker index), then waits for a permit. wt_gate_release hands
 * out permits, one per task to let go. The wait is on a pthread condition
 * variable on purpose: it holds the worker under every model, fibers
 * included (a fiber parked in a weft primitive would free it), so hold at
 * most wt_workers(rt) gates at once. */
#define WT_GATE_MAX 64

typedef struct wt_gate {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int started, finished, permits;
	int worker_seen[WT_GATE_MAX]; /* weft_worker_index() of the nth to start */
	weft_rt *rt_seen[WT_GATE_MAX];
	/* Called by a gate task after it got its permit, outside the lock. */
	void (*after)(struct wt_gate *g, void *ctx);
	void *ctx;
} wt_gate;

void wt_gate_init(wt_gate *g);
void wt_gate_destroy(wt_gate *g);
void wt_gate_fn(void *arg); /* the task function; arg is the wt_gate */
/* Asserts that n gate tasks start (or n finish) within WT_PATIENCE_S. */
void wt_gate_wait_started(wt_gate *g, int n);
void wt_gate_wait_finished(wt_gate *g, int n);
int wt_gate_started(wt_gate *g);
void wt_gate_release(wt_gate *g, int n);

/* Posts n gate tasks from tasks[0..n) and waits until all n run, i.e. n
 * workers are held. */
void wt_gate_hold(weft_rt *rt, wt_gate *g, weft_task *tasks, int n);

/* ------------------------------------------------------------ stderr */

/* Redirects stderr (fd 2) into a temporary file until wt_capture_end, which
 * returns what was written (static buffer, NUL-terminated). */
void wt_capture_begin(void);
const char *wt_capture_end(void);

/* ------------------------------------------------------------ threads */

/* pthread_create that asserts success. */
void wt_thread_start(pthread_t *t, void *(*fn)(void *), void *arg);
void wt_thread_join(pthread_t t);

/* Polls cond() until true or WT_PATIENCE_S passed; returns whether it held. */
bool wt_poll(bool (*cond)(void *), void *arg);

#endif
