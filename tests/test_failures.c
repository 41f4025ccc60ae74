/* What happens when the system refuses something (issue 12, items 4-6):
 * every case runs in the model matrix, and the cases about fiber stacks
 * and fiber workers skip on the kernel-thread models, saying why.
 *
 *   unmappable_stack     a stack size the address space cannot hold
 *                        (RLIMIT_AS lowered in a child): an error, promptly,
 *                        naming the size and the limit; never a hang
 *   stacks_held          fibers parked on most of the stacks that can be
 *                        mapped: the queued tasks wait for them, then all
 *                        finish promptly once they are released
 *   out_of_descriptors   RLIMIT_NOFILE lowered in a child: WEFT_EMFILE and
 *                        a message naming epoll/eventfd and the limit on the
 *                        fiber models, never "create a thread"
 *   timer_refused        timer_create fails (fault hook): the message names
 *                        timer_create and errno's text; tasks still run
 *   thread_refused       pthread_create fails (fault hook): WEFT_EAGAIN from
 *                        weft_rt_create (weft_post under spawn), and the
 *                        message names pthread_create and errno's text
 *   overflow_report      a task that recurses too deep kills the process
 *                        (SIGSEGV on kernel threads, SIGABRT after the
 *                        report on fibers) and stderr names the task and
 *                        its function (by name and address), on every model
 *
 * The children reset SIGSEGV to SIG_DFL (cmocka's handler is not what a
 * program of its own would have) and arm an alarm, so a hang fails the case
 * instead of the ctest timeout. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/testing.h"
#include "fiber/symbolize.h"
#include "harness.h"

/* ------------------------------------------------------------ children */

#define CHILD_CHECK(cond)                                                                   \
	do {                                                                                \
		if (!(cond)) {                                                              \
			dprintf(2, "child check failed at %s:%d: %s\n", __FILE__, __LINE__, \
			        #cond);                                                     \
			_exit(3);                                                           \
		}                                                                           \
	} while (0)

typedef struct child_result {
	int status;
	double seconds;
	char err[16384]; /* the child's stderr */
} child_result;

static const char *describe_status(int status)
{
	static char buf[64];
	if (WIFSIGNALED(status))
		snprintf(buf, sizeof(buf), "killed by signal %d (%s)", WTERMSIG(status),
		         strsignal(WTERMSIG(status)));
	else if (WIFEXITED(status))
		snprintf(buf, sizeof(buf), "exited %d", WEXITSTATUS(status));
	else
		snprintf(buf, sizeof(buf), "status %#x", status);
	return buf;
}

/* Runs fn(arg) in a child with its stderr on a pipe and an alarm of
 * `alarm_s`; the child exits 0 when fn returns. */
static void run_child(void (*fn)(void *), void *arg, unsigned alarm_s, child_result *r)
{
	int fds[2];
	if (pipe(fds) != 0)
		fail_msg("pipe: %s", strerror(errno));
	fflush(NULL);
	double start = wt_now();
	pid_t pid = fork();
	if (pid < 0)
		fail_msg("fork: %s", strerror(errno));
	if (pid == 0) {
		close(fds[0]);
		dup2(fds[1], 2);
		close(fds[1]);
		signal(SIGSEGV, SIG_DFL);
		signal(SIGBUS, SIG_DFL);
		signal(SIGALRM, SIG_DFL);
		alarm(alarm_s);
		fn(arg);
		_exit(0);
	}
	close(fds[1]);
	size_t len = 0;
	ssize_t n;
	while ((n = read(fds[0], r->err + len, sizeof(r->err) - 1 - len)) > 0 ||
	       (n < 0 && errno == EINTR))
		if (n > 0)
			len += (size_t)n;
	r->err[len] = 0;
	close(fds[0]);
	while (waitpid(pid, &r->status, 0) < 0)
		if (errno != EINTR)
			fail_msg("waitpid: %s", strerror(errno));
	r->seconds = wt_now() - start;
	print_message("[ child    ] %s after %.2f s, stderr:\n%s", describe_status(r->status),
	              r->seconds, r->err);
}

static void expect_exit_0(const child_result *r)
{
	if (!WIFEXITED(r->status) || WEXITSTATUS(r->status) != 0)
		fail_msg("the child %s", describe_status(r->status));
}

static void skip_unless_fibers(void)
{
	if (!wt_fiber_model())
		WT_SKIP("about fiber stacks and fiber workers: %s has none",
		        weft_model_name(wt.model));
}

/* The address space this process has mapped, in bytes (VmSize), or -1. */
static long long vm_size(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return -1;
	char line[256];
	long long kb = -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmSize: %lld kB", &kb) == 1)
			break;
	fclose(f);
	return kb < 0 ? -1 : kb * 1024;
}

/* Lowers RLIMIT_AS to what is mapped now plus room: sanitizers map
 * terabytes of shadow up front, so a fixed limit would not do. */
static void limit_address_space(long long room)
{
	long long now = vm_size();
	CHILD_CHECK(now > 0);
	struct rlimit as = {.rlim_cur = (rlim_t)(now + room), .rlim_max = RLIM_INFINITY};
	getrlimit(RLIMIT_AS, &as);
	as.rlim_cur = (rlim_t)(now + room);
	CHILD_CHECK(setrlimit(RLIMIT_AS, &as) == 0);
}

static void noop(void *arg)
{
	(void)arg;
}

/* ------------------------------------------------------------ item 4 */

#define HUGE_STACK ((size_t)1 << 30) /* the largest WEFT_STACK_SIZE */

static void unmappable_child(void *unused)
{
	(void)unused;
	limit_address_space(256ll << 20); /* a quarter of one stack */
	weft_config cfg;
	wt_config(&cfg);
	cfg.stack_size = HUGE_STACK;
	weft_rt *rt = NULL;
	int rc = weft_rt_create(&rt, &cfg);
	dprintf(2, "create: %s\n", weft_err_name(rc));
	if (rc != 0)
		return;
	/* Created after all: the task must then end in an error. */
	weft_task t;
	CHILD_CHECK(weft_task_init(&t, noop, NULL) == 0);
	rc = weft_post(rt, &t);
	dprintf(2, "post: %s\n", weft_err_name(rc));
	if (rc == 0)
		dprintf(2, "wait: %s\n", weft_err_name(weft_wait(&t)));
	weft_rt_destroy(rt);
}

static void unmappable_stack(void)
{
	skip_unless_fibers();
	child_result r;
	run_child(unmappable_child, NULL, 20, &r);
	expect_exit_0(&r);
	assert_true(r.seconds < 10);
	/* Refused at create: nothing was posted that could hang. */
	assert_non_null(strstr(r.err, "create: WEFT_ENOMEM\n"));
	/* The size it tried: the usable size, at least what was asked. */
	const char *said = strstr(r.err, "cannot map a ");
	assert_non_null(said);
	size_t size = 0;
	assert_int_equal(sscanf(said, "cannot map a %zu-byte fiber stack", &size), 1);
	assert_true(size >= HUGE_STACK && size < HUGE_STACK + 65536);
	assert_non_null(strstr(r.err, strerror(ENOMEM)));
	assert_non_null(strstr(r.err, "RLIMIT_AS"));
	assert_non_null(strstr(r.err, "WEFT_STACK_SIZE"));
}

/* Sanitizers map memory of their own as the program runs (ASan's fake
 * stacks, TSan's shadow): under them, room for that, and stacks so large
 * that the room holds at most two more. */
#if WT_SANITIZER
#define HELD_STACK   ((size_t)256 << 20)
#define HELD_SLACK_B (512ll << 20)
#else
#define HELD_STACK   ((size_t)64 << 20)
#define HELD_SLACK_B (32ll << 20)
#endif
#define HOLDERS   16 /* more than the workers (each maps a reserve) plus three */
#define FOLLOWERS 32

typedef struct held {
	weft_sem gate;
	_Atomic int parked, done;
} held;

static void holder(void *arg)
{
	held *h = arg;
	atomic_fetch_add(&h->parked, 1);
	CHILD_CHECK(weft_sem_wait(&h->gate) == 0);
	atomic_fetch_add(&h->done, 1);
}

static void follower(void *arg)
{
	held *h = arg;
	atomic_fetch_add(&h->done, 1);
}

static void stacks_held_child(void *unused)
{
	(void)unused;
	weft_config cfg;
	wt_config(&cfg);
	cfg.stack_size = HELD_STACK;
	weft_rt *rt;
	CHILD_CHECK(weft_rt_create(&rt, &cfg) == 0);
	/* Room for about three more stacks than each worker's reserve. */
	limit_address_space(3 * (long long)HELD_STACK + HELD_SLACK_B);
	static held h;
	CHILD_CHECK(weft_sem_init(&h.gate, 0) == 0);
	static weft_task holders[HOLDERS], followers[FOLLOWERS];
	for (int i = 0; i < HOLDERS; i++) {
		CHILD_CHECK(weft_task_init(&holders[i], holder, &h) == 0);
		CHILD_CHECK(weft_post(rt, &holders[i]) == 0);
	}
	/* Holders park on every stack there is (the rest cannot start). */
	double start = wt_now();
	int parked = 0;
	/* Until no more start for a while (longer under a sanitizer, whose
	 * workers are slower to take the rest). */
	double settle = WT_SANITIZER ? 1.5 : 0.3;
	for (double still = wt_now(); wt_now() - still < settle && wt_now() - start < 15;) {
		wt_sleep_ms(5);
		int now = atomic_load(&h.parked);
		if (now != parked || now == 0) {
			parked = now;
			still = wt_now();
		}
	}
	CHILD_CHECK(parked >= 1 && parked < HOLDERS);
	/* Tasks that come first in the policy's order and need a stack:
	 * they must let the holders run once those are released. */
	for (int i = 0; i < FOLLOWERS; i++) {
		CHILD_CHECK(weft_task_init(&followers[i], follower, &h) == 0);
		CHILD_CHECK(weft_task_set_priority(&followers[i], -1) == 0);
		CHILD_CHECK(weft_post(rt, &followers[i]) == 0);
	}
	wt_sleep_ms(50);
	dprintf(2, "parked %d of %d, done %d\n", atomic_load(&h.parked), HOLDERS,
	        atomic_load(&h.done));
	start = wt_now();
	for (int i = 0; i < HOLDERS; i++)
		CHILD_CHECK(weft_sem_post(&h.gate) == 0);
	for (int i = 0; i < HOLDERS; i++)
		CHILD_CHECK(weft_wait(&holders[i]) == 0);
	for (int i = 0; i < FOLLOWERS; i++)
		CHILD_CHECK(weft_wait(&followers[i]) == 0);
	double took = wt_now() - start;
	dprintf(2, "all %d done %.3f s after the release\n", atomic_load(&h.done), took);
	CHILD_CHECK(atomic_load(&h.done) == HOLDERS + FOLLOWERS);
	CHILD_CHECK(took < 2.0);
	CHILD_CHECK(weft_rt_destroy(rt) == 0);
}

static void stacks_held(void)
{
	skip_unless_fibers();
	child_result r;
	run_child(stacks_held_child, NULL, 30, &r);
	expect_exit_0(&r);
	/* The limit was reached (else this tested nothing), and said. */
	assert_non_null(strstr(r.err, "cannot map a"));
	assert_non_null(strstr(r.err, "RLIMIT_AS"));
}

/* ------------------------------------------------------------ item 5 */

static void descriptors_child(void *unused)
{
	(void)unused;
	int high = 0;
	for (int fd = 0; fd < 4096; fd++)
		if (fcntl(fd, F_GETFD) >= 0)
			high = fd;
	struct rlimit nofile;
	CHILD_CHECK(getrlimit(RLIMIT_NOFILE, &nofile) == 0);
	nofile.rlim_cur = (rlim_t)high + 1;
	CHILD_CHECK(setrlimit(RLIMIT_NOFILE, &nofile) == 0);
	while (dup(0) >= 0) /* fill the holes below: no descriptor left */
		;
	CHILD_CHECK(errno == EMFILE);
	weft_config cfg;
	wt_config(&cfg);
	weft_rt *rt = NULL;
	int rc = weft_rt_create(&rt, &cfg);
	dprintf(2, "create: %s (%s)\n", weft_err_name(rc), weft_strerror(rc));
	if (rc == 0)
		weft_rt_destroy(rt);
}

static void out_of_descriptors(void)
{
	child_result r;
	run_child(descriptors_child, NULL, 20, &r);
	expect_exit_0(&r);
	assert_null(strstr(r.err, "create a thread"));
	if (!wt_fiber_model()) {
		/* threads and spawn need no descriptor of their own. */
		assert_non_null(strstr(r.err, "create: WEFT_OK"));
		return;
	}
	assert_non_null(strstr(r.err, "create: WEFT_EMFILE (too many open files"));
	assert_non_null(strstr(r.err, strerror(EMFILE)));
	/* The call that failed: epoll's, or the portable poller's pipe. */
	assert_true(strstr(r.err, "epoll_create1") || strstr(r.err, "(pipe: "));
	assert_non_null(strstr(r.err, "RLIMIT_NOFILE"));
}

static void timer_refused(void)
{
	skip_unless_fibers();
	weft_config cfg;
	wt_config(&cfg);
	cfg.preempt = WEFT_PREEMPT_TIMER;
	weft__fault_timer_create(1, EAGAIN);
	wt_capture_begin();
	weft_rt *rt = wt_create(&cfg);
	weft_task t;
	assert_rc(0, weft_task_init(&t, noop, NULL));
	assert_rc(0, weft_post(rt, &t));
	assert_rc(0, weft_wait(&t)); /* tasks run, cooperatively */
	assert_rc(0, weft_rt_destroy(rt));
	const char *err = wt_capture_end();
	weft__fault_timer_create(0, 0);
	/* Linux names timer_create and the limit behind EAGAIN; the portable
	 * clock (preempt_posix.c) names its thread. */
	if (!strstr(err, "(the clock thread: ")) {
		assert_non_null(strstr(err, "timer_create: "));
		assert_non_null(strstr(err, "RLIMIT_SIGPENDING"));
	}
	assert_non_null(strstr(err, strerror(EAGAIN)));
	assert_null(strstr(err, "create a thread"));
}

static void thread_refused(void)
{
	weft_config cfg;
	wt_config(&cfg);
	char want[160];
	snprintf(want, sizeof(want), "cannot create a thread (pthread_create: %s",
	         strerror(EAGAIN));
	weft_rt *rt = NULL;
	if (wt.model != WEFT_MODEL_SPAWN) {
		weft__fault_thread_create(1);
		wt_capture_begin();
		int rc = weft_rt_create(&rt, &cfg);
		const char *err = wt_capture_end();
		weft__fault_thread_create(0);
		assert_rc(WEFT_EAGAIN, rc);
		assert_non_null(strstr(err, want));
		assert_non_null(strstr(err, "RLIMIT_NPROC"));
		return;
	}
	/* spawn creates a thread per task, at the post. */
	rt = wt_create(&cfg);
	weft_task t;
	assert_rc(0, weft_task_init(&t, noop, NULL));
	weft__fault_thread_create(1);
	wt_capture_begin();
	int rc = weft_post(rt, &t);
	const char *err = wt_capture_end();
	weft__fault_thread_create(0);
	assert_rc(WEFT_EAGAIN, rc);
	assert_non_null(strstr(err, want));
	assert_rc(0, weft_post(rt, &t)); /* the next one works */
	assert_rc(0, weft_wait(&t));
	assert_rc(0, weft_rt_destroy(rt));
}

/* ------------------------------------------------------------ item 6 */

static volatile int depth_limit = 1 << 30;

static int recurse(int depth)
{
	volatile char frame[512];
	frame[0] = (char)depth;
	if (depth >= depth_limit)
		return frame[0];
	return recurse(depth + 1) + frame[0];
}

static void deep(void *arg)
{
	(void)arg;
	dprintf(2, "returned %d\n", recurse(0));
}

static weft_task deep_task;

static void overflow_child(void *unused)
{
	(void)unused;
	weft_config cfg;
	wt_config(&cfg);
	weft_rt *rt;
	CHILD_CHECK(weft_rt_create(&rt, &cfg) == 0);
	CHILD_CHECK(weft_task_init(&deep_task, deep, NULL) == 0);
	CHILD_CHECK(weft_post(rt, &deep_task) == 0);
	/* No weft_wait: under threads and spawn it may run the task on this
	 * thread, which is not weft's. */
	for (;;)
		pause();
}

static void overflow_report(void)
{
	child_result r;
	run_child(overflow_child, NULL, 60, &r);
	assert_true(WIFSIGNALED(r.status));
	/* Fibers abort after the report, as they always have; kernel
	 * threads die of the fault itself. */
	assert_int_equal(WTERMSIG(r.status), wt_fiber_model() ? SIGABRT : SIGSEGV);
	char want[96];
	snprintf(want, sizeof(want), "task %p", (void *)&deep_task);
	assert_non_null(strstr(r.err, want));
	assert_non_null(strstr(r.err, "-byte stack (fault at 0x"));
	if (wt_fiber_model()) {
		assert_non_null(strstr(r.err, "weft: fiber task "));
		assert_non_null(strstr(r.err, "raise WEFT_STACK_SIZE"));
	} else {
		assert_non_null(strstr(r.err, "overflowed its worker thread's "));
		assert_non_null(strstr(r.err, "ulimit -s"));
	}
	/* The task's function by name (the test program's .symtab: deep is
	 * static) and address, on every model; by address alone where weft
	 * cannot name functions (the portable build: fiber/symbolize.h). */
	char name[32];
	uintptr_t off;
	if (weft__symbolize((uintptr_t)deep, name, sizeof(name), &off))
		snprintf(want, sizeof(want), "(function deep at %p)", (void *)deep);
	else
		snprintf(want, sizeof(want), "(function %p)", (void *)deep);
	assert_non_null(strstr(r.err, want));
	assert_null(strstr(r.err, "returned"));
}

WT_CASES(WT_CASE(unmappable_stack), WT_CASE(stacks_held), WT_CASE(out_of_descriptors),
         WT_CASE(timer_refused), WT_CASE(thread_refused), WT_CASE(overflow_report));
