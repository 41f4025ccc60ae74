/* Tests of seed 004's thread-worker API on weft
 * (include/weft/compat/thread-worker.h, src/compat/worker.c).
 *
 *   test_compat_worker <case> [<model>]
 *
 * runs one case in its own process (the library keeps one runtime per
 * process, created by the first worker_create and destroyed at exit), with
 * WEFT_MODEL=<model> when given (the default is the library's: fibers,
 * psjf, timer preemption). cmocka's assertions run on the main thread
 * only: workers record what they saw in globals the case checks after
 * joining them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <weft/compat/thread-worker.h>

/* The cases call the worker_* names; USE_WORKERS maps pthread_* onto them,
 * which the mapping case checks. */
#ifndef USE_WORKERS
#error "thread-worker.h must define USE_WORKERS by default"
#endif

static bool under_fibers(void)
{
	const char *m = getenv("WEFT_MODEL");
	return !m || strcmp(m, "fibers") == 0;
}

/* ------------------------------------------------------------ stderr */

static FILE *capture_file;
static int saved_stderr = -1;
static char capture_buf[4096];

static void capture_begin(void)
{
	fflush(stderr);
	capture_file = tmpfile();
	assert_non_null(capture_file);
	saved_stderr = dup(STDERR_FILENO);
	assert_true(saved_stderr >= 0);
	assert_true(dup2(fileno(capture_file), STDERR_FILENO) >= 0);
}

static const char *capture_end(void)
{
	fflush(stderr);
	assert_true(dup2(saved_stderr, STDERR_FILENO) >= 0);
	close(saved_stderr);
	rewind(capture_file);
	size_t n = fread(capture_buf, 1, sizeof(capture_buf) - 1, capture_file);
	capture_buf[n] = '\0';
	fclose(capture_file);
	return capture_buf;
}

typedef struct app_stats {
	long switches;
	double turnaround, response;
} app_stats;

/* Runs print_app_stats, checks the seed's exact layout and parses it. */
static app_stats read_app_stats(void)
{
	capture_begin();
	print_app_stats();
	const char *out = capture_end();
	app_stats s = {-1, -1, -1};
	char tail[64];
	int n = sscanf(out,
	               "Total context switches %ld \nAverage turnaround time %lf \n"
	               "Average response time  %lf %63s",
	               &s.switches, &s.turnaround, &s.response, tail);
	if (n != 3)
		fail_msg("print_app_stats wrote:\n%s", out);
	/* Rebuild what the seed's fprintf calls would have written. */
	char expect[512];
	snprintf(expect, sizeof(expect),
	         "Total context switches %ld \nAverage turnaround time %lf \n"
	         "Average response time  %lf \n",
	         s.switches, s.turnaround, s.response);
	assert_string_equal(out, expect);
	return s;
}

/* ------------------------------------------------------------ workers */

static void *return_arg_times_two(void *arg)
{
	return (void *)((intptr_t)arg * 2);
}

static void create_join_values(void **state)
{
	(void)state;
	enum { N = 20 };
	worker_t t[N];
	for (int i = 0; i < N; i++)
		assert_int_equal(
		        worker_create(&t[i], NULL, return_arg_times_two, (void *)(intptr_t)i), 0);
	/* Ids count from 1 in creation order. */
	for (int i = 0; i < N; i++)
		assert_int_equal(t[i], (worker_t)(i + 1));
	/* Join in reverse order, one without a value. */
	for (int i = N - 1; i >= 0; i--) {
		void *v = (void *)-1;
		if (i == 3) {
			assert_int_equal(worker_join(t[i], NULL), 0);
			continue;
		}
		assert_int_equal(worker_join(t[i], &v), 0);
		assert_int_equal((intptr_t)v, 2 * i);
	}
	/* Joined workers are gone. */
	assert_int_equal(worker_join(t[0], NULL), -1);
}

static atomic_int after_exit;

static void nested(int depth, intptr_t value)
{
	if (depth < 0)
		return;
	if (depth == 0)
		worker_exit((void *)value);
	nested(depth - 1, value + 1);
	atomic_fetch_add(&after_exit, 1); /* never reached */
}

static void *exits_deep(void *arg)
{
	nested(10, (intptr_t)arg);
	atomic_fetch_add(&after_exit, 1);
	return NULL;
}

static void *exits_at_once(void *arg)
{
	pthread_exit(arg); /* USE_WORKERS: worker_exit */
}

static void exit_nested(void **state)
{
	(void)state;
	enum { N = 8 };
	worker_t t[N], u;
	for (int i = 0; i < N; i++)
		assert_int_equal(
		        worker_create(&t[i], NULL, exits_deep, (void *)(intptr_t)(100 * i)), 0);
	assert_int_equal(worker_create(&u, NULL, exits_at_once, (void *)(intptr_t)77), 0);
	for (int i = 0; i < N; i++) {
		void *v = NULL;
		assert_int_equal(worker_join(t[i], &v), 0);
		assert_int_equal((intptr_t)v, 100 * i + 10);
	}
	void *v = NULL;
	assert_int_equal(worker_join(u, &v), 0);
	assert_int_equal((intptr_t)v, 77);
	assert_int_equal(atomic_load(&after_exit), 0);
}

/* ------------------------------------------------------------ mutex */

static worker_mutex_t counter_lock;
static long counter;
static atomic_int inside, overlap;

static void *count_up(void *arg)
{
	int n = (int)(intptr_t)arg;
	for (int i = 0; i < 1000; i++) {
		worker_mutex_lock(&counter_lock);
		if (atomic_fetch_add(&inside, 1) != 0)
			atomic_fetch_add(&overlap, 1);
		long c = counter;
		if ((i + n) % 97 == 0)
			worker_yield(); /* hold the lock across a switch */
		counter = c + 1;
		atomic_fetch_sub(&inside, 1);
		worker_mutex_unlock(&counter_lock);
	}
	return NULL;
}

static void mutex_counter(void **state)
{
	(void)state;
	enum { N = 100 };
	worker_t t[N];
	assert_int_equal(worker_mutex_init(&counter_lock, NULL), 0);
	for (int i = 0; i < N; i++)
		assert_int_equal(worker_create(&t[i], NULL, count_up, (void *)(intptr_t)i), 0);
	for (int i = 0; i < N; i++)
		assert_int_equal(worker_join(t[i], NULL), 0);
	assert_int_equal(counter, N * 1000);
	assert_int_equal(atomic_load(&overlap), 0);
	assert_int_equal(worker_mutex_destroy(&counter_lock), 0);
}

static void misuse(void **state)
{
	(void)state;
	worker_t t;
	worker_mutex_t m;
	assert_int_equal(worker_create(NULL, NULL, return_arg_times_two, NULL), -1);
	assert_int_equal(worker_create(&t, NULL, NULL, NULL), -1);
	assert_int_equal(worker_join(0, NULL), -1);
	assert_int_equal(worker_join(12345, NULL), -1);
	assert_int_equal(worker_setschedprio(12345, HIGH_PRIO), -1);
	assert_int_equal(worker_mutex_init(NULL, NULL), -1);
	assert_int_equal(worker_mutex_lock(NULL), -1);
	assert_int_equal(worker_mutex_unlock(NULL), -1);
	assert_int_equal(worker_mutex_destroy(NULL), -1);
	assert_int_equal(worker_mutex_init(&m, NULL), 0);
	assert_int_equal(worker_mutex_unlock(&m), -1); /* not locked */
	assert_int_equal(worker_mutex_lock(&m), 0);
	assert_int_equal(worker_mutex_destroy(&m), -1); /* locked */
	assert_int_equal(worker_mutex_unlock(&m), 0);
	assert_int_equal(worker_mutex_destroy(&m), 0);

	assert_int_equal(worker_create(&t, NULL, return_arg_times_two, NULL), 0);
	assert_int_equal(worker_setschedprio(t, HIGH_PRIO + 1), -1);
	assert_int_equal(worker_setschedprio(t, LOW_PRIO - 1), -1);
	assert_int_equal(worker_join(t, NULL), 0);
	assert_int_equal(worker_join(t, NULL), -1); /* already joined */
}

/* ------------------------------------------------------------ yield */

static atomic_int other_ran;
static atomic_int yields;

static void *waits_for_other(void *arg)
{
	(void)arg;
	while (!atomic_load(&other_ran)) {
		if (worker_yield() != 0)
			return (void *)1;
		atomic_fetch_add(&yields, 1);
	}
	return NULL;
}

static void *sets_flag(void *arg)
{
	(void)arg;
	atomic_store(&other_ran, 1);
	return NULL;
}

/* Without preemption, a fiber that spins on a flag another worker sets
 * finishes only because worker_yield lets that one run. */
static void yield(void **state)
{
	(void)state;
	setenv("WEFT_PREEMPT", "off", 1);
	worker_t a, b;
	void *va = (void *)-1;
	assert_int_equal(worker_create(&a, NULL, waits_for_other, NULL), 0);
	assert_int_equal(worker_create(&b, NULL, sets_flag, NULL), 0);
	assert_int_equal(worker_join(a, &va), 0);
	assert_int_equal(worker_join(b, NULL), 0);
	assert_null(va);
	assert_int_equal(worker_yield(), 0); /* outside a worker too */
}

/* A worker joins another worker (which may not have run yet); main joins
 * the joiner. */
static void *joins_next(void *arg)
{
	worker_t other = (worker_t)(uintptr_t)arg;
	void *v = NULL;
	if (worker_join(other, &v) != 0)
		return (void *)-1;
	return v;
}

static void join_in_worker(void **state)
{
	(void)state;
	worker_t a, b;
	assert_int_equal(worker_create(&b, NULL, return_arg_times_two, (void *)(intptr_t)21), 0);
	assert_int_equal(worker_create(&a, NULL, joins_next, (void *)(uintptr_t)b), 0);
	void *v = NULL;
	assert_int_equal(worker_join(a, &v), 0);
	assert_int_equal((intptr_t)v, 42);
}

/* ------------------------------------------------------------ mlfq */

static atomic_int order[8], order_len;

static void *record_order(void *arg)
{
	int i = atomic_fetch_add(&order_len, 1);
	if (i < 8)
		atomic_store(&order[i], (int)(intptr_t)arg);
	return NULL;
}

static void *holds_worker(void *arg)
{
	/* Keep the only fiber worker busy until the others are queued. */
	while (!atomic_load((atomic_int *)arg))
		;
	return NULL;
}

/* Under mlfq without preemption, workers given HIGH_PRIO .. LOW_PRIO while
 * queued run top level first. */
static void setschedprio(void **state)
{
	(void)state;
	setenv("WEFT_POLICY", "mlfq", 1);
	setenv("WEFT_PREEMPT", "off", 1);
	static atomic_int go;
	worker_t hold, t[4];
	assert_int_equal(worker_create(&hold, NULL, holds_worker, &go), 0);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(worker_create(&t[i], NULL, record_order, (void *)(intptr_t)i), 0);
		assert_int_equal(worker_setschedprio(t[i], i % NUMPRIO), 0);
	}
	atomic_store(&go, 1);
	assert_int_equal(worker_join(hold, NULL), 0);
	for (int i = 0; i < 4; i++)
		assert_int_equal(worker_join(t[i], NULL), 0);
	assert_int_equal(atomic_load(&order_len), 4);
	if (under_fibers()) {
		/* prio 3 (top level) first, prio 0 (bottom) last. */
		for (int i = 0; i < 4; i++)
			assert_int_equal(atomic_load(&order[i]), 3 - i);
	}
}

/* ------------------------------------------------------------ stats */

static void stats_format(void **state)
{
	(void)state;
	/* Before any worker: zeros, in the seed's exact layout. */
	capture_begin();
	print_app_stats();
	assert_string_equal(capture_end(), "Total context switches 0 \n"
	                                   "Average turnaround time 0.000000 \n"
	                                   "Average response time  0.000000 \n");
	worker_t t;
	assert_int_equal(worker_create(&t, NULL, return_arg_times_two, NULL), 0);
	assert_int_equal(worker_join(t, NULL), 0);
	app_stats s = read_app_stats();
	assert_true(s.switches >= 1);
}

static void *spin_ms(void *arg)
{
	struct timespec start, now;
	clock_gettime(CLOCK_MONOTONIC, &start);
	long ms = (long)(intptr_t)arg;
	do {
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 >=
		    ms / 2)
			worker_yield();
	} while ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 < ms);
	return NULL;
}

/* The averages are microseconds: workers spinning 20 ms each take at least
 * that long from creation to completion; responses come before. */
static void stats_sanity(void **state)
{
	(void)state;
	enum { N = 6 };
	worker_t t[N];
	for (int i = 0; i < N; i++)
		assert_int_equal(worker_create(&t[i], NULL, spin_ms, (void *)(intptr_t)20), 0);
	for (int i = 0; i < N; i++)
		assert_int_equal(worker_join(t[i], NULL), 0);
	app_stats s = read_app_stats();
	assert_true(s.response >= 0);
	assert_true(s.response <= s.turnaround);
	assert_true(s.turnaround >= 20000.0);
	assert_true(s.turnaround < 60e6);
	assert_true(s.switches >= N);
	if (under_fibers())
		assert_true(s.switches > N); /* the yields switch too */
}

/* vector_multiply's shape: threads that run to their end without yielding,
 * waiting or being preempted. The seed's library counted a switch each time
 * it scheduled a thread, so at least one per thread; weft's own `switches`
 * does not count a task that never leaves the fiber it started on (the
 * count read 1 for 10 such threads). */
static _Atomic long no_yield_sum;

static void *add_up(void *arg)
{
	long n = (long)(intptr_t)arg, sum = 0;
	for (long i = 0; i < n; i++)
		sum += i;
	atomic_fetch_add(&no_yield_sum, sum);
	return NULL;
}

static void stats_no_yield(void **state)
{
	(void)state;
	enum { N = 10 };
	worker_t t[N];
	for (int i = 0; i < N; i++)
		assert_int_equal(worker_create(&t[i], NULL, add_up, (void *)(intptr_t)1000), 0);
	for (int i = 0; i < N; i++)
		assert_int_equal(worker_join(t[i], NULL), 0);
	assert_int_equal(atomic_load(&no_yield_sum), N * (999L * 1000 / 2));
	app_stats s = read_app_stats();
	assert_true(s.switches >= N);
}

/* ------------------------------------------------------------ mapping */

static pthread_mutex_t mapped_lock; /* a worker_mutex_t */
static int mapped_sum;

static void *mapped_add(void *arg)
{
	pthread_mutex_lock(&mapped_lock);
	mapped_sum += *(int *)arg;
	pthread_mutex_unlock(&mapped_lock);
	pthread_exit(NULL);
}

/* A program in the seed's style: pthread names, worker implementation. */
static void pthread_mapping(void **state)
{
	(void)state;
	_Static_assert(sizeof(pthread_t) == sizeof(worker_t), "pthread_t is worker_t");
	_Static_assert(sizeof(pthread_mutex_t) == sizeof(worker_mutex_t),
	               "pthread_mutex_t is worker_mutex_t");
	enum { N = 50 };
	pthread_t t[N];
	int counter_arg[N];
	assert_int_equal(pthread_mutex_init(&mapped_lock, NULL), 0);
	for (int i = 0; i < N; i++) {
		counter_arg[i] = i;
		assert_int_equal(pthread_create(&t[i], NULL, mapped_add, &counter_arg[i]), 0);
		assert_int_equal(pthread_setschedprio(t[i], i % NUMPRIO), 0);
	}
	for (int i = 0; i < N; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	assert_int_equal(pthread_mutex_destroy(&mapped_lock), 0);
	assert_int_equal(mapped_sum, N * (N - 1) / 2);
}

static atomic_int done_count;

static void *count_done(void *arg)
{
	(void)arg;
	atomic_fetch_add(&done_count, 1);
	return NULL;
}

/* Ids stay sequential and everything is released over many workers: the
 * last round is left unjoined for the exit handler to free (the sanitizer
 * builds check for leaks at exit). */
static void many(void **state)
{
	(void)state;
	enum { ROUNDS = 10, N = 100 };
	worker_t t[N];
	worker_t expect = 1;
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < N; i++) {
			assert_int_equal(worker_create(&t[i], NULL, count_done, NULL), 0);
			assert_int_equal(t[i], expect++);
		}
		if (r == ROUNDS - 1)
			break;
		for (int i = 0; i < N; i++)
			assert_int_equal(worker_join(t[i], NULL), 0);
	}
	for (int i = 0; i < 30000 && atomic_load(&done_count) < ROUNDS * N; i++) {
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	assert_int_equal(atomic_load(&done_count), ROUNDS * N);
}

/* A configuration weft refuses (WEFT_MODEL=mn with a policy mn cannot
 * run): the seed's programs ignore worker_create's result and would print
 * their results as if the workers had run (issue 26), so the layer must
 * end the process with a failure status. The child calls worker_create as
 * the seed's vector_multiply does, ignoring what it returns. */
static void *set_flag(void *arg)
{
	*(volatile int *)arg = 1;
	return NULL;
}

static void refused_config(void **state)
{
	(void)state;
	static const char *const policies[] = {"mlfq", "psjf", "random"};
	for (size_t i = 0; i < sizeof(policies) / sizeof(policies[0]); i++) {
		fflush(NULL);
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			setenv("WEFT_MODEL", "mn", 1);
			setenv("WEFT_WORKERS", "2", 1);
			setenv("WEFT_POLICY", policies[i], 1);
			int fd = open("/dev/null", O_WRONLY);
			if (fd >= 0)
				dup2(fd, STDERR_FILENO);
			volatile int ran = 0;
			worker_t t = 0;
			(void)worker_create(&t, NULL, set_flag, (void *)&ran);
			(void)worker_join(t, NULL);
			_exit(ran ? 0 : 3); /* 3: no worker ran, and nothing said so */
		}
		int status = 0;
		assert_int_equal(waitpid(pid, &status, 0), pid);
		print_message("WEFT_POLICY=%s: child status %d\n", policies[i], status);
		assert_true(WIFEXITED(status));
		/* 0: it fell back and ran the worker; any other status but the
		 * silent 3 fails loudly. */
		assert_int_not_equal(WEXITSTATUS(status), 3);
	}
}

int main(int argc, char **argv)
{
	const struct CMUnitTest cases[] = {
	        cmocka_unit_test(create_join_values),
	        cmocka_unit_test(exit_nested),
	        cmocka_unit_test(mutex_counter),
	        cmocka_unit_test(misuse),
	        cmocka_unit_test(yield),
	        cmocka_unit_test(join_in_worker),
	        cmocka_unit_test(setschedprio),
	        cmocka_unit_test(stats_format),
	        cmocka_unit_test(stats_sanity),
	        cmocka_unit_test(stats_no_yield),
	        cmocka_unit_test(pthread_mapping),
	        cmocka_unit_test(many),
	        cmocka_unit_test(refused_config),
	};
	if (argc != 2 && argc != 3) {
		fprintf(stderr, "usage: %s <case> [<model>]\n", argv[0]);
		return 2;
	}
	if (argc == 3)
		setenv("WEFT_MODEL", argv[2], 1);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (strcmp(cases[i].name, argv[1]) != 0)
			continue;
		const struct CMUnitTest one[] = {cases[i]};
		return cmocka_run_group_tests_name("compat_worker", one, NULL, NULL);
	}
	fprintf(stderr, "%s: no case '%s'\n", argv[0], argv[1]);
	return 2;
}
