/* The shared test harness: see harness.h. */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/testing.h"

wt_params wt = {.model = WEFT_MODEL_THREADS, .workers = 2};

/* ------------------------------------------------------------ time */

double wt_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void wt_sleep_ms(int ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
	}
}

int wt_closed_fd(void)
{
	/* Beyond the fd table of most processes (Linux's select ignores such
	 * an fd instead of saying EBADF), yet under FD_SETSIZE so that select
	 * is asked; downward past any the runner left open. */
	int fd = FD_SETSIZE - 1;
	while (fd > 0 && (fcntl(fd, F_GETFD) != -1 || errno != EBADF))
		fd--;
	return fd;
}

static void deadline_in(struct timespec *ts, double seconds)
{
	clock_gettime(CLOCK_REALTIME, ts);
	long whole = (long)seconds;
	ts->tv_sec += whole;
	ts->tv_nsec += (long)((seconds - (double)whole) * 1e9);
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/* ------------------------------------------------------------ errors */

void wt_assert_rc(int expected, int actual, const char *expr, const char *file, int line)
{
	if (expected == actual)
		return;
	print_error("%s:%d: %s returned %d (%s), expected %d (%s)\n", file, line, expr, actual,
	            weft_err_name(actual), expected, weft_err_name(expected));
	_fail(file, line);
}

static pthread_mutex_t async_mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic long async_failures;
static char async_first[512];

void wt_async_fail(const char *file, int line, const char *fmt, ...)
{
	if (atomic_fetch_add(&async_failures, 1) == 0) {
		pthread_mutex_lock(&async_mu);
		int n = snprintf(async_first, sizeof(async_first), "%s:%d: ", file, line);
		va_list ap;
		va_start(ap, fmt);
		if (n > 0 && (size_t)n < sizeof(async_first))
			vsnprintf(async_first + n, sizeof(async_first) - (size_t)n, fmt, ap);
		va_end(ap);
		pthread_mutex_unlock(&async_mu);
	}
}

void wt_check_async(void)
{
	long n = atomic_load(&async_failures);
	if (n == 0)
		return;
	pthread_mutex_lock(&async_mu);
	char first[sizeof(async_first)];
	memcpy(first, async_first, sizeof(first));
	pthread_mutex_unlock(&async_mu);
	fail_msg("%ld failure(s) on other threads; the first: %s", n, first);
}

/* ------------------------------------------------------------ allocator */

#define HDR       64 /* keeps the payload 64-byte aligned, as weft's structs need */
#define HDR_MAGIC 0x77656674616c6c63ull

typedef struct block_hdr {
	uint64_t magic;
	size_t size;
} block_hdr;

static _Atomic long live_blocks, live_bytes, total_allocs, fail_countdown;

static void *counting_alloc(size_t size, void *ctx)
{
	(void)ctx;
	long n = atomic_load(&fail_countdown);
	while (n > 0) {
		if (atomic_compare_exchange_weak(&fail_countdown, &n, n - 1)) {
			if (n == 1)
				return NULL;
			break;
		}
	}
	size_t total = HDR + ((size + HDR - 1) / HDR) * HDR;
	unsigned char *p = aligned_alloc(HDR, total);
	if (!p)
		return NULL;
	/* Garbage, not zeroes: weft must not rely on the allocator zeroing. */
	memset(p + HDR, 0xC3, size);
	block_hdr *h = (block_hdr *)p;
	h->magic = HDR_MAGIC;
	h->size = size;
	atomic_fetch_add(&live_blocks, 1);
	atomic_fetch_add(&live_bytes, (long)size);
	atomic_fetch_add(&total_allocs, 1);
	return p + HDR;
}

static void counting_free(void *ptr, size_t size, void *ctx)
{
	(void)ctx;
	if (!ptr) {
		wt_async_fail(__FILE__, __LINE__, "weft freed NULL through the allocator");
		return;
	}
	unsigned char *p = (unsigned char *)ptr - HDR;
	block_hdr *h = (block_hdr *)p;
	if (h->magic != HDR_MAGIC) {
		wt_async_fail(__FILE__, __LINE__,
		              "weft freed %p, which it did not allocate "
		              "(or freed twice)",
		              ptr);
		return;
	}
	if (h->size != size)
		wt_async_fail(__FILE__, __LINE__, "weft freed a block of %zu bytes as %zu bytes",
		              h->size, size);
	atomic_fetch_sub(&live_blocks, 1);
	atomic_fetch_sub(&live_bytes, (long)h->size);
	memset(p, 0xDD, HDR + h->size); /* poison: a later use reads garbage */
	free(p);
}

static const weft_allocator counting_allocator = {.alloc_fn = counting_alloc,
                                                  .free_fn = counting_free};

long wt_alloc_live_blocks(void)
{
	return atomic_load(&live_blocks);
}

long wt_alloc_live_bytes(void)
{
	return atomic_load(&live_bytes);
}

long wt_alloc_total(void)
{
	return atomic_load(&total_allocs);
}

void wt_alloc_fail_nth(long nth)
{
	atomic_store(&fail_countdown, nth);
}

void wt_assert_no_live_allocations(void)
{
	long blocks = wt_alloc_live_blocks(), bytes = wt_alloc_live_bytes();
	long internal = weft__live_allocations();
	if (blocks != 0 || bytes != 0 || internal != 0)
		fail_msg("weft left %ld block(s), %ld byte(s) allocated "
		         "(weft__live_allocations() = %ld)",
		         blocks, bytes, internal);
}

/* ------------------------------------------------------------ randomness */

static uint64_t seed;

uint64_t wt_seed(void)
{
	return seed;
}

uint64_t wt_rand(uint64_t *state)
{
	uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

uint64_t wt_rand_below(uint64_t *state, uint64_t n)
{
	return n ? wt_rand(state) % n : 0;
}

static void choose_seed(void)
{
	const char *env = getenv("WEFT_TEST_SEED");
	if (env && *env) {
		seed = strtoull(env, NULL, 0);
		return;
	}
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	uint64_t s = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ (uint64_t)getpid();
	seed = wt_rand(&s);
}

/* ------------------------------------------------------------ config */

void wt_config(weft_config *cfg)
{
	assert_rc(0, weft_config_init(cfg));
	cfg->model = wt.model;
	cfg->workers = wt.workers;
}

weft_rt *wt_create(const weft_config *cfg)
{
	weft_rt *rt = NULL;
	assert_rc(0, weft_rt_create(&rt, cfg));
	assert_non_null(rt);
	return rt;
}

weft_rt *wt_create_default(void)
{
	weft_config cfg;
	wt_config(&cfg);
	return wt_create(&cfg);
}

int wt_in_child(void (*body)(void *), void *arg, unsigned alarm_s, char *err, size_t errlen)
{
	char path[] = "/tmp/weft-child-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(fd, 2);
		alarm(alarm_s);
		body(arg);
		_exit(0);
	}
	int status = 0;
	assert_int_equal(pid, waitpid(pid, &status, 0));
	ssize_t len = pread(fd, err, errlen - 1, 0);
	err[len > 0 ? len : 0] = '\0';
	close(fd);
	unlink(path);
	return status;
}

int wt_workers(const weft_rt *rt)
{
	weft_config eff;
	assert_rc(0, weft_rt_config(rt, &eff));
	assert_true(eff.workers >= 1);
	return eff.workers;
}

bool wt_fiber_model(void)
{
	return wt.model != WEFT_MODEL_THREADS && wt.model != WEFT_MODEL_SPAWN;
}

int wt_blockers(const weft_rt *rt)
{
	int w = wt_workers(rt);
	return wt_fiber_model() ? 4 * w : w;
}

/* ------------------------------------------------------------ gates */

void wt_gate_init(wt_gate *g)
{
	memset(g, 0, sizeof(*g));
	pthread_mutex_init(&g->mu, NULL);
	pthread_cond_init(&g->cv, NULL);
}

void wt_gate_destroy(wt_gate *g)
{
	pthread_cond_destroy(&g->cv);
	pthread_mutex_destroy(&g->mu);
}

void wt_gate_fn(void *arg)
{
	wt_gate *g = arg;
	int index = weft_worker_index();
	weft_rt *rt = weft_rt_current();
	pthread_mutex_lock(&g->mu);
	if (g->started < WT_GATE_MAX) {
		g->worker_seen[g->started] = index;
		g->rt_seen[g->started] = rt;
	}
	g->started++;
	pthread_cond_broadcast(&g->cv);
	while (g->permits == 0)
		pthread_cond_wait(&g->cv, &g->mu);
	g->permits--;
	pthread_mutex_unlock(&g->mu);
	if (g->after)
		g->after(g, g->ctx);
	pthread_mutex_lock(&g->mu);
	g->finished++;
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->mu);
}

static void gate_wait_count(wt_gate *g, int n, bool finished)
{
	struct timespec dl;
	deadline_in(&dl, WT_PATIENCE_S);
	pthread_mutex_lock(&g->mu);
	int rc = 0;
	while ((finished ? g->finished : g->started) < n && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&g->cv, &g->mu, &dl);
	int have = finished ? g->finished : g->started;
	pthread_mutex_unlock(&g->mu);
	if (have < n)
		fail_msg("only %d of %d gate tasks %s within %.0f s", have, n,
		         finished ? "finished" : "started", WT_PATIENCE_S);
}

void wt_gate_wait_started(wt_gate *g, int n)
{
	gate_wait_count(g, n, false);
}

void wt_gate_wait_finished(wt_gate *g, int n)
{
	gate_wait_count(g, n, true);
}

int wt_gate_started(wt_gate *g)
{
	pthread_mutex_lock(&g->mu);
	int n = g->started;
	pthread_mutex_unlock(&g->mu);
	return n;
}

void wt_gate_release(wt_gate *g, int n)
{
	pthread_mutex_lock(&g->mu);
	g->permits += n;
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->mu);
}

void wt_gate_hold(weft_rt *rt, wt_gate *g, weft_task *tasks, int n)
{
	assert_true(n <= WT_GATE_MAX);
	int before = wt_gate_started(g);
	for (int i = 0; i < n; i++) {
		assert_rc(0, weft_task_init(&tasks[i], wt_gate_fn, g));
		assert_rc(0, weft_post_wait(rt, &tasks[i])); /* room: gates start */
	}
	wt_gate_wait_started(g, before + n);
}

/* ------------------------------------------------------------ stderr */

static int saved_stderr = -1;
static FILE *capture_file;
static char capture_buf[16384];

void wt_capture_begin(void)
{
	assert_true(saved_stderr < 0);
	fflush(stderr);
	capture_file = tmpfile();
	assert_non_null(capture_file);
	saved_stderr = dup(STDERR_FILENO);
	assert_true(saved_stderr >= 0);
	assert_true(dup2(fileno(capture_file), STDERR_FILENO) >= 0);
}

const char *wt_capture_end(void)
{
	assert_true(saved_stderr >= 0);
	fflush(stderr);
	assert_true(dup2(saved_stderr, STDERR_FILENO) >= 0);
	close(saved_stderr);
	saved_stderr = -1;
	rewind(capture_file);
	size_t n = fread(capture_buf, 1, sizeof(capture_buf) - 1, capture_file);
	capture_buf[n] = '\0';
	fclose(capture_file);
	capture_file = NULL;
	/* Show it in the log too, for whoever reads a failure. */
	fprintf(stderr, "[captured stderr] %s%s", capture_buf,
	        n && capture_buf[n - 1] == '\n' ? "" : "\n");
	return capture_buf;
}

/* ------------------------------------------------------------ threads */

void wt_thread_start(pthread_t *t, void *(*fn)(void *), void *arg)
{
	int rc = pthread_create(t, NULL, fn, arg);
	if (rc != 0)
		fail_msg("pthread_create: %s", strerror(rc));
}

void wt_thread_join(pthread_t t)
{
	int rc = pthread_join(t, NULL);
	if (rc != 0)
		fail_msg("pthread_join: %s", strerror(rc));
}

bool wt_poll(bool (*cond)(void *), void *arg)
{
	double end = wt_now() + WT_PATIENCE_S;
	while (!cond(arg)) {
		if (wt_now() > end)
			return false;
		wt_sleep_ms(1);
	}
	return true;
}

/* ------------------------------------------------------------ running */

/* Threads of this process, from /proc/self/task. */
static int thread_count(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	if (!f)
		return -1;
	char line[256];
	int n = -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Threads: %d", &n) == 1)
			break;
	fclose(f);
	return n;
}

static int threads_before;

static void *nothing(void *arg)
{
	return arg;
}

static int setup(void **state)
{
	(void)state;
	weft__fault_thread_create(0);
	wt_alloc_fail_nth(0);
	int rc = weft_set_allocator(&counting_allocator);
	if (rc != 0) {
		print_error("weft_set_allocator: %s\n", weft_err_name(rc));
		return -1;
	}
	atomic_store(&total_allocs, 0);
	/* A sanitizer runtime may start a thread of its own at the first
	 * pthread_create: have that happen before counting. */
	pthread_t t;
	if (pthread_create(&t, NULL, nothing, NULL) == 0)
		pthread_join(t, NULL);
	wt_sleep_ms(2);
	threads_before = thread_count();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	weft__fault_thread_create(0);
	wt_alloc_fail_nth(0);
	wt_check_async();
	wt_assert_no_live_allocations();
	assert_rc(0, weft_set_allocator(NULL));
	/* Every thread weft started is gone (an exiting thread may linger in
	 * the count for a moment after pthread_join returns). */
	double end = wt_now() + 5.0;
	int now;
	while ((now = thread_count()) > threads_before && wt_now() < end)
		wt_sleep_ms(1);
	if (now > threads_before)
		fail_msg("%d thread(s) still running after the case (%d before it)", now,
		         threads_before);
	return 0;
}

static void run_case(void **state)
{
	const wt_case *c = *state;
	print_message("[ case     ] %s, model %s, %d worker(s), seed %" PRIu64
	              " (replay: WEFT_TEST_SEED=%" PRIu64 ")\n",
	              c->name, weft_model_name(wt.model), wt.workers, seed, seed);
	c->fn();
	wt_check_async();
}

static int usage(const char *prog)
{
	fprintf(stderr, "usage: %s <case>|all [<model> <workers>]\ncases:", prog);
	for (size_t i = 0; i < wt_ncases; i++)
		fprintf(stderr, " %s", wt_cases[i].name);
	fprintf(stderr, "\n");
	return 2;
}

int main(int argc, char **argv)
{
	if (argc != 2 && argc != 4)
		return usage(argv[0]);
	wt.case_name = argv[1];
	if (argc == 4) {
		bool found = false;
		for (int m = 0; m < WEFT_MODEL_COUNT_; m++) {
			if (strcmp(argv[2], weft_model_name((weft_model)m)) == 0) {
				wt.model = (weft_model)m;
				found = true;
			}
		}
		char *end;
		long n = strtol(argv[3], &end, 10);
		if (!found || *end || n < 1 || n > 1024)
			return usage(argv[0]);
		wt.workers = (int)n;
		wt.matrix = true;
	}
	choose_seed();

	struct CMUnitTest tests[256];
	size_t ntests = 0;
	for (size_t i = 0; i < wt_ncases && ntests < 256; i++) {
		if (strcmp(wt.case_name, "all") != 0 && strcmp(wt.case_name, wt_cases[i].name) != 0)
			continue;
		tests[ntests++] = (struct CMUnitTest)cmocka_unit_test_prestate_setup_teardown(
		        run_case, setup, teardown, (void *)&wt_cases[i]);
		tests[ntests - 1].name = wt_cases[i].name;
	}
	if (ntests == 0)
		return usage(argv[0]);
	return _cmocka_run_group_tests(wt.case_name, tests, ntests, NULL, NULL);
}
