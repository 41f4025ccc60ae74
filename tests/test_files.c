/* weft/io.h's file calls and weft_blocking's pool, under every model.
 *
 * Each file case runs four times: as a program runs (a RWF_NOWAIT try,
 * then io_uring as the kernel allows it), with io_uring_setup made to
 * fail at start-up (the fallback: the try, then the blocking pool), and
 * each of the two with the try skipped, so that every call goes to the
 * pool, or to the ring. On threads and spawn the four are the same plain
 * system calls. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/os.h"
#include "core/testing.h"
#include "fiber/engine.h"
#include "harness.h"
#include "io/fd.h"
#include "io/pool.h"
#include "io/uring.h"
#include <weft/io.h>

enum { VARIANTS = 4, ALL_POOL = 2, ALL_RING = 3 };
static const char *const variant_names[VARIANTS] = {"io_uring allowed", "io_uring refused",
                                                    "io_uring refused, no RWF_NOWAIT try",
                                                    "io_uring allowed, no RWF_NOWAIT try"};

static void set_variant(int v)
{
	weft__fault_uring_setup(v == 1 || v == ALL_POOL ? EPERM : 0);
	weft__fault_file_nowait(v == ALL_POOL || v == ALL_RING);
}

static void reset_hooks(void)
{
	weft__fault_uring_setup(0);
	weft__fault_file_nowait(false);
	weft__pool_testing_limits(0, 0);
}

static weft_rt *create(void)
{
	weft_config cfg;
	wt_config(&cfg);
	return wt_create(&cfg);
}

/* A temporary file of n bytes, byte i = pattern(i); returns its fd. */
static uint8_t pattern(uint64_t i)
{
	return (uint8_t)(i * 2654435761u >> 13);
}

/* What the writers write: every bit of the pattern flipped. */
static uint8_t inverse(uint64_t i)
{
	uint8_t p = pattern(i);
	return (uint8_t)(255 - p);
}

static int temp_file(size_t n)
{
	char path[] = "/tmp/weft-files-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	uint8_t *buf = malloc(n);
	assert_non_null(buf);
	for (size_t i = 0; i < n; i++)
		buf[i] = pattern(i);
	assert_int_equal(pwrite(fd, buf, n, 0), (ssize_t)n);
	free(buf);
	return fd;
}

/* Hand-offs (engine.h: weft__fiber_handoff_begin) are all over once the
 * calls returned, whichever way they ended (done, timed out while queued,
 * cancelled): a count left behind would keep its worker from ever
 * searching for work before it sleeps. The checker reads the count of the
 * worker it runs on, so only a runtime of one worker checks them all. */
static void handoffs_task(void *arg)
{
	weft__fiber *f = weft__fiber_current();
	*(int *)arg = f ? atomic_load(&atomic_load(&f->home)->handoffs) : 0;
}

static void check_handoffs(weft_rt *rt)
{
	if (!wt_fiber_model() || wt_workers(rt) != 1)
		return;
	int n = -1;
	weft_task t;
	assert_rc(0, weft_task_init(&t, handoffs_task, &n));
	assert_rc(0, weft_post(rt, &t));
	assert_rc(0, weft_wait_all(rt));
	if (n != 0)
		fail_msg("%d hand-offs still counted on the worker after every call returned", n);
}

/* ------------------------------------------------------------ read, write */

#define FILE_BYTES (1 << 20)
#define READS      32

typedef struct reader {
	int fd;
	uint64_t seed;
} reader;

static void read_task(void *arg)
{
	reader *r = arg;
	uint8_t buf[4096 + 100];
	for (int k = 0; k < READS; k++) {
		size_t len = 1 + (size_t)wt_rand_below(&r->seed, sizeof(buf));
		off_t off = (off_t)wt_rand_below(&r->seed, FILE_BYTES + 2048);
		memset(buf, 0xee, sizeof(buf));
		int64_t deadline = k % 2 ? INT64_MAX : weft_clock_ns() + 60 * 1000000000LL;
		ssize_t n = weft_pread(r->fd, buf, len, off, deadline);
		size_t want = off >= FILE_BYTES ? 0 : (size_t)(FILE_BYTES - off);
		if (want > len)
			want = len;
		if (n != (ssize_t)want) {
			wt_async_fail(__FILE__, __LINE__,
			              "weft_pread(%zu at %lld) returned %zd, not %zu", len,
			              (long long)off, n, want);
			return;
		}
		for (size_t i = 0; i < want; i++)
			if (buf[i] != pattern((uint64_t)off + i)) {
				wt_async_fail(__FILE__, __LINE__, "byte %lld read wrong",
				              (long long)off + (long long)i);
				return;
			}
		if (want < len && buf[want] != 0xee)
			wt_async_fail(__FILE__, __LINE__, "written past the count");
	}
}

typedef struct writer {
	int fd;
	int index;
} writer;

/* Each writer owns a 4 KiB block and writes it in three pieces. */
static void write_task(void *arg)
{
	writer *w = arg;
	uint8_t buf[4096];
	off_t base = (off_t)w->index * 4096;
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = inverse((uint64_t)base + i);
	WT_CHECK(weft_pwrite(w->fd, buf, 1000, base, INT64_MAX) == 1000);
	WT_CHECK(weft_pwrite(w->fd, buf + 1000, 3000, base + 1000, INT64_MAX) == 3000);
	WT_CHECK(weft_pwrite(w->fd, buf + 4000, 96, base + 4000, weft_clock_ns() + 60000000000LL) ==
	         96);
	WT_CHECK(weft_fdatasync(w->fd, INT64_MAX) == 0);
}

static void read_write(int tasks)
{
	for (int v = 0; v < VARIANTS; v++) {
		set_variant(v);
		int fd = temp_file(FILE_BYTES);
		weft_rt *rt = create();
		weft_task *t = calloc((size_t)tasks, sizeof(*t));
		reader *r = calloc((size_t)tasks, sizeof(*r));
		writer *w = calloc((size_t)tasks, sizeof(*w));
		assert_true(t && r && w);
		uint64_t seed = wt_seed();
		for (int i = 0; i < tasks; i++) {
			r[i] = (reader){fd, wt_rand(&seed)};
			assert_rc(0, weft_task_init(&t[i], read_task, &r[i]));
			assert_rc(0, weft_post(rt, &t[i]));
		}
		assert_rc(0, weft_wait_all(rt));
		wt_check_async();
		for (int i = 0; i < tasks; i++) {
			w[i] = (writer){fd, i};
			assert_rc(0, weft_task_init(&t[i], write_task, &w[i]));
			assert_rc(0, weft_post(rt, &t[i]));
		}
		assert_rc(0, weft_wait_all(rt));
		wt_check_async();
		weft__pool_stats ps;
		weft__pool_get_stats(rt, &ps);
		int rings;
		uint64_t requests, parked;
		weft__ring_stats(rt, &rings, &requests, &parked);
		assert_rc(0, weft_rt_destroy(rt));
		if (v == ALL_RING && wt_fiber_model() && weft__ring_probe(NULL) &&
		    (rings < 1 || requests < (uint64_t)tasks * READS))
			fail_msg("%s: %d rings took %llu requests", variant_names[v], rings,
			         (unsigned long long)requests);
		uint8_t *all = malloc((size_t)tasks * 4096);
		assert_non_null(all);
		assert_int_equal(pread(fd, all, (size_t)tasks * 4096, 0), (ssize_t)tasks * 4096);
		for (size_t i = 0; i < (size_t)tasks * 4096; i++)
			if (all[i] != inverse(i))
				fail_msg("%s: byte %zu not what weft_pwrite wrote",
				         variant_names[v], i);
		free(all);
		if (v == ALL_POOL && wt_fiber_model() && ps.jobs == 0)
			fail_msg("no file call went to the blocking pool");
		free(t);
		free(r);
		free(w);
		close(fd);
	}
	reset_hooks();
}

/* 32 and 128 tasks read random ranges (random lengths, past the end too)
 * and compare every byte, then write blocks of their own. */
static void read_write_32(void)
{
	read_write(32);
}

static void read_write_128(void)
{
	read_write(WT_SANITIZER ? 64 : 128);
}

/* ------------------------------------------------------------ O_DIRECT */

typedef struct direct_reader {
	int fd;
	uint64_t seed;
	uint8_t *buf; /* 4 KiB, aligned */
} direct_reader;

static void direct_task(void *arg)
{
	direct_reader *r = arg;
	for (int k = 0; k < 8; k++) {
		off_t off = (off_t)wt_rand_below(&r->seed, FILE_BYTES / 4096) * 4096;
		ssize_t n = weft_pread(r->fd, r->buf, 4096, off, INT64_MAX);
		if (n != 4096) {
			wt_async_fail(__FILE__, __LINE__, "O_DIRECT weft_pread returned %zd", n);
			return;
		}
		for (size_t i = 0; i < 4096; i++)
			if (r->buf[i] != pattern((uint64_t)off + i)) {
				wt_async_fail(__FILE__, __LINE__, "O_DIRECT byte %lld read wrong",
				              (long long)off + (long long)i);
				return;
			}
	}
}

/* An O_DIRECT file (where /tmp allows it): 32 tasks read aligned blocks
 * and compare them. Without io_uring the reads must go to the pool:
 * RWF_NOWAIT does not keep an O_DIRECT read off the device, it would block
 * the worker for the whole read. */
static void direct(void)
{
	int fd = temp_file(FILE_BYTES);
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	int dfd = open(path, O_RDONLY | O_DIRECT);
	close(fd);
	if (dfd < 0)
		WT_SKIP("/tmp refuses O_DIRECT (%s)", strerror(errno));
	enum { TASKS = 32 };
	for (int v = 0; v < 2; v++) {
		set_variant(v);
		weft_rt *rt = create();
		weft_task t[TASKS];
		direct_reader r[TASKS];
		uint64_t seed = wt_seed();
		for (int i = 0; i < TASKS; i++) {
			r[i] = (direct_reader){dfd, wt_rand(&seed), aligned_alloc(4096, 4096)};
			assert_non_null(r[i].buf);
			assert_rc(0, weft_task_init(&t[i], direct_task, &r[i]));
			assert_rc(0, weft_post(rt, &t[i]));
		}
		assert_rc(0, weft_wait_all(rt));
		wt_check_async();
		weft__pool_stats ps;
		weft__pool_get_stats(rt, &ps);
		if (v == 1 && wt_fiber_model() && ps.jobs != TASKS * 8)
			fail_msg("%llu of %d O_DIRECT reads went to the pool",
			         (unsigned long long)ps.jobs, TASKS * 8);
		assert_rc(0, weft_rt_destroy(rt));
		for (int i = 0; i < TASKS; i++)
			free(r[i].buf);
	}
	close(dfd);
	reset_hooks();
}

/* ------------------------------------------------------------ O_DIRECT, learnt */

/* A new runtime that has run fn(arg) as a task and checked its reports. */
static weft_rt *run_one(void (*fn)(void *), void *arg)
{
	weft_rt *rt = create();
	weft_task t;
	assert_rc(0, weft_task_init(&t, fn, arg));
	assert_rc(0, weft_post(rt, &t));
	assert_rc(0, weft_wait_all(rt));
	wt_check_async();
	return rt;
}

#ifdef WEFT_OS_LINUX
static uint32_t file_flags(int fd)
{
	const weft__fd *s = weft__fd_find(fd);
	return s ? atomic_load(&s->flags) & (WEFT__FD_FILE | WEFT__FD_DIRECT) : 0;
}

static void read_byte(void *arg)
{
	char b;
	WT_CHECK(weft_pread(*(int *)arg, &b, 1, 0, INT64_MAX) == 1);
}
#endif

/* Whether a file is O_DIRECT (which keeps its reads from the RWF_NOWAIT
 * try) is learnt once per life of its number, not asked with an fcntl
 * each call: by weft_openat, or by a fiber's first call; weft_close
 * forgets it. */
static void direct_learnt(void)
{
#ifndef WEFT_OS_LINUX
	WT_SKIP("no RWF_NOWAIT try on this backend: nothing to learn");
#else
	int fd = temp_file(4096);
	assert_rc(0, weft_rt_destroy(run_one(read_byte, &fd)));
	if (wt_fiber_model())
		assert_int_equal(file_flags(fd), WEFT__FD_FILE);
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	int dfd = weft_openat(AT_FDCWD, path, O_RDONLY | O_DIRECT, 0, INT64_MAX);
	int plain = weft_openat(AT_FDCWD, path, O_RDONLY, 0, INT64_MAX);
	assert_true(plain >= 0);
	assert_int_equal(file_flags(plain), WEFT__FD_FILE);
	if (dfd >= 0)
		assert_int_equal(file_flags(dfd), WEFT__FD_FILE | WEFT__FD_DIRECT);
	assert_rc(0, weft_close(fd));
	assert_int_equal(file_flags(fd), 0);
	assert_rc(0, weft_close(plain));
	if (dfd >= 0)
		assert_rc(0, weft_close(dfd));
#endif
}

/* ------------------------------------------------------------ misuse */

static void misuse_task(void *arg)
{
	int fd = *(int *)arg;
	char c;
	WT_CHECK_RC(WEFT_EINVAL, (int)weft_pread(-1, &c, 1, 0, INT64_MAX));
	WT_CHECK_RC(WEFT_EINVAL, (int)weft_pread(fd, NULL, 1, 0, INT64_MAX));
	WT_CHECK_RC(WEFT_EINVAL, (int)weft_pread(fd, &c, 1, -1, INT64_MAX));
	WT_CHECK_RC(WEFT_EINVAL, (int)weft_pwrite(-1, &c, 1, 0, INT64_MAX));
	WT_CHECK_RC(WEFT_EINVAL, weft_fsync(-1, INT64_MAX));
	WT_CHECK_RC(WEFT_EINVAL, weft_openat(AT_FDCWD, NULL, O_RDONLY, 0, INT64_MAX));
	WT_CHECK(weft_pread(fd, NULL, 0, 0, INT64_MAX) == 0);
	/* The system's errors: WEFT_ESYSTEM and errno. */
	int bad = dup(fd);
	close(bad);
	errno = 0;
	WT_CHECK_RC(WEFT_ESYSTEM, (int)weft_pread(bad, &c, 1, 0, INT64_MAX));
	WT_CHECK(errno == EBADF);
	int p[2];
	WT_CHECK(pipe(p) == 0);
	errno = 0;
	WT_CHECK_RC(WEFT_ESYSTEM, (int)weft_pwrite(p[0], &c, 1, 0, INT64_MAX));
	WT_CHECK(errno == EBADF || errno == ESPIPE);
	close(p[0]);
	close(p[1]);
	errno = 0;
	WT_CHECK_RC(WEFT_ESYSTEM,
	            weft_openat(AT_FDCWD, "/nonexistent/weft", O_RDONLY, 0, INT64_MAX));
	WT_CHECK(errno == ENOENT);
	int o = weft_openat(AT_FDCWD, "/proc/self/status", O_RDONLY, 0, INT64_MAX);
	WT_CHECK(o >= 0);
	if (o >= 0) {
		WT_CHECK((fcntl(o, F_GETFD) & FD_CLOEXEC) != 0);
		WT_CHECK(weft_pread(o, &c, 1, 0, INT64_MAX) == 1);
		close(o);
	}
	WT_CHECK_RC(0, weft_fsync(fd, INT64_MAX));
	/* A deadline already past: the page cache holds the file (just
	 * written), so the read succeeds without waiting (RWF_NOWAIT); fsync
	 * cannot try. POSIX has no read that refuses to wait for the device:
	 * there it times out (io/files.c). */
#ifndef WEFT_PORTABLE
	WT_CHECK(weft_pread(fd, &c, 1, 5, 0) == 1 && c == (char)pattern(5));
	WT_CHECK(weft_pread(fd, &c, 1, 6, INT64_MIN) == 1 && c == (char)pattern(6));
#else
	WT_CHECK_RC(WEFT_ETIMEDOUT, weft_pread(fd, &c, 1, 5, 0));
	WT_CHECK_RC(WEFT_ETIMEDOUT, weft_pread(fd, &c, 1, 6, INT64_MIN));
#endif
	WT_CHECK(weft_pread(fd, &c, 1, 7, INT64_MAX - 1) == 1 && c == (char)pattern(7));
	WT_CHECK_RC(WEFT_ETIMEDOUT, weft_fsync(fd, 0));
	WT_CHECK_RC(WEFT_ETIMEDOUT, weft_openat(AT_FDCWD, "/proc/self/status", O_RDONLY, 0, 0));
}

/* Misuse is WEFT_EINVAL, the system's errors WEFT_ESYSTEM with errno,
 * from a task and from the test's own thread. */
static void errors(void)
{
	for (int v = 0; v < VARIANTS; v++) {
		set_variant(v);
		int fd = temp_file(4096);
		weft_rt *rt = run_one(misuse_task, &fd);
		misuse_task(&fd);
		wt_check_async();
		assert_rc(0, weft_rt_destroy(rt));
		close(fd);
	}
	reset_hooks();
}

/* ------------------------------------------------------------ deadlines, cancel */

/* With the pool held to one thread and that thread busy (a weft_blocking
 * call that waits for a pipe), a read queues behind it: its deadline
 * passes while it is queued, so it returns WEFT_ETIMEDOUT and its buffer
 * is never written, even after the pool thread is free again. */
static int hold_pipe[2];
static _Atomic int holding;

static void hold_pool(void *arg)
{
	(void)arg;
	atomic_store(&holding, 1);
	char c;
	while (read(hold_pipe[0], &c, 1) < 0 && errno == EINTR)
		;
}

static void holder_task(void *arg)
{
	(void)arg;
	WT_CHECK_RC(0, weft_blocking(hold_pool, NULL));
}

typedef struct late {
	int fd;
	int64_t timeout; /* the deadline is this far from the call (INT64_MAX: none) */
	ssize_t rc;
	char buf[64];
	_Atomic int done;
} late;

static void late_task(void *arg)
{
	late *l = arg;
	/* Read the clock here, not when posting: under a sanitizer the task
	 * may start later than a short deadline. */
	int64_t deadline = l->timeout == INT64_MAX ? INT64_MAX : weft_clock_ns() + l->timeout;
	l->rc = weft_pread(l->fd, l->buf, sizeof(l->buf), 0, deadline);
	atomic_store(&l->done, 1);
}

static bool is_done(void *arg)
{
	return atomic_load(&((late *)arg)->done) != 0;
}

static bool is_holding(void *arg)
{
	(void)arg;
	return atomic_load(&holding) != 0;
}

/* Cancels fd's calls until l's read returns: a cancel that comes before
 * the read is queued or submitted (a sanitizer slows the task down) finds
 * nothing, and the next one gets it. */
static void cancel_until_done(int fd, late *l)
{
	wt_sleep_ms(20);
	assert_false(is_done(l));
	double end = wt_now() + WT_PATIENCE_S;
	while (!is_done(l) && wt_now() < end) {
		weft__file_cancel(fd);
		wt_sleep_ms(10);
	}
}

/* The queued-read scene on the pool: deadline (or cancel when cancel is
 * true) ends the read while it is queued. */
static void queued_read(bool cancel)
{
	set_variant(ALL_POOL);
	weft__pool_testing_limits(0, 1);
	int fd = temp_file(4096);
	assert_int_equal(pipe(hold_pipe), 0);
	atomic_store(&holding, 0);
	weft_rt *rt = create();
	weft_task h, t;
	late l = {.fd = fd, .timeout = cancel ? INT64_MAX : 20 * 1000000LL};
	memset(l.buf, 0x5a, sizeof(l.buf));
	assert_rc(0, weft_task_init(&h, holder_task, NULL));
	assert_rc(0, weft_post(rt, &h));
	assert_true(wt_poll(is_holding, NULL));
	assert_rc(0, weft_task_init(&t, late_task, &l));
	assert_rc(0, weft_post(rt, &t));
	if (cancel)
		cancel_until_done(fd, &l);
	assert_true(wt_poll(is_done, &l));
	assert_int_equal(l.rc, cancel ? WEFT_ECANCELED : WEFT_ETIMEDOUT);
	assert_int_equal(write(hold_pipe[1], "x", 1), 1); /* the pool thread is free */
	assert_rc(0, weft_wait_all(rt));
	check_handoffs(rt);
	wt_sleep_ms(20);
	for (size_t i = 0; i < sizeof(l.buf); i++)
		assert_int_equal((uint8_t)l.buf[i], 0x5a); /* never written */
	assert_rc(0, weft_rt_destroy(rt));
	close(hold_pipe[0]);
	close(hold_pipe[1]);
	close(fd);
	reset_hooks();
}

/* A read that waits for the kernel: io_uring reads a pipe at offset 0 (it
 * ignores the offset of a stream; the RWF_NOWAIT try, which would say
 * ESPIPE, is skipped), which has no data until the test writes some. Its deadline or a cancel ends it; the call returns only
 * after the kernel let go of the buffer, which then stays untouched when
 * the data comes. */
static _Atomic int ticks;

/* Ticks every millisecond until l's read returned. */
static void ticker(void *arg)
{
	late *l = arg;
	while (!is_done(l)) {
		atomic_fetch_add(&ticks, 1);
		WT_CHECK_RC(0, weft_sleep_ns(1000000));
	}
}

static bool ticked(void *arg)
{
	(void)arg;
	return atomic_load(&ticks) >= 3;
}

static void ring_read(bool cancel)
{
	set_variant(ALL_RING);
	int p[2];
	assert_int_equal(pipe(p), 0);
	atomic_store(&ticks, 0);
	weft_rt *rt = create();
	late l = {.fd = p[0], .timeout = cancel ? INT64_MAX : 20 * 1000000LL};
	memset(l.buf, 0x5a, sizeof(l.buf));
	weft_task t, tick;
	assert_rc(0, weft_task_init(&t, late_task, &l));
	assert_rc(0, weft_post(rt, &t));
	/* On the same worker (fibers: there is one): it runs while the read
	 * waits, which a read that blocked its worker would not let it. The
	 * cancel comes only once it ticked 3 times, the read still waiting. */
	assert_rc(0, weft_task_init(&tick, ticker, &l));
	assert_rc(0, weft_post(rt, &tick));
	if (cancel) {
		assert_true(wt_poll(ticked, NULL));
		cancel_until_done(p[0], &l);
	}
	assert_true(wt_poll(is_done, &l));
	assert_int_equal(l.rc, cancel ? WEFT_ECANCELED : WEFT_ETIMEDOUT);
	if (cancel && atomic_load(&ticks) < 3)
		fail_msg("the worker ran nothing else while the read waited (%d ticks)",
		         atomic_load(&ticks));
	assert_int_equal(write(p[1], "abc", 3), 3);
	wt_sleep_ms(20);
	for (size_t i = 0; i < sizeof(l.buf); i++)
		assert_int_equal((uint8_t)l.buf[i], 0x5a);
	assert_rc(0, weft_wait_all(rt));
	assert_rc(0, weft_rt_destroy(rt));
	close(p[0]);
	close(p[1]);
	reset_hooks();
}

/* Whether this kernel gives the process io_uring, and reads a pipe
 * through it (data first: no wait). */
static bool ring_usable(void)
{
	set_variant(ALL_RING);
	if (!wt_fiber_model() || !weft__ring_probe(NULL))
		return false;
	int p[2];
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], "z", 1), 1);
	weft_rt *rt = create();
	late l = {.fd = p[0], .timeout = INT64_MAX};
	weft_task t;
	assert_rc(0, weft_task_init(&t, late_task, &l));
	assert_rc(0, weft_post(rt, &t));
	assert_rc(0, weft_wait_all(rt));
	assert_rc(0, weft_rt_destroy(rt));
	close(p[0]);
	close(p[1]);
	return l.rc == 1;
}

/* A deadline ends a read queued for the pool, and one the kernel waits
 * on in io_uring: WEFT_ETIMEDOUT, and the buffer is not written after. */
static void deadline(void)
{
	if (!wt_fiber_model())
		WT_SKIP("kernel-thread workers make the plain system call, which a deadline "
		        "does not interrupt");
	queued_read(false);
	if (ring_usable())
		ring_read(false);
	else
		print_message("io_uring not usable here: the ring's deadline not tested\n");
}

/* weft__file_cancel (weft_fd_cancel's part for files) ends the same two
 * reads with WEFT_ECANCELED. */
static void cancel(void)
{
	if (!wt_fiber_model())
		WT_SKIP("kernel-thread workers make the plain system call, which nothing cancels");
	queued_read(true);
	if (ring_usable())
		ring_read(true);
	else
		print_message("io_uring not usable here: the ring's cancel not tested\n");
}

/* ------------------------------------------------------------ fork */

static int fork_fd;

static void nothing(void *arg)
{
	(void)arg;
}

/* The child's tasks read, and use the child's own blocking pool. */
static void child_reader(void *arg)
{
	reader *r = arg;
	read_task(r);
	WT_CHECK_RC(0, weft_blocking(nothing, NULL));
}

static void fork_child(void *arg)
{
	(void)arg;
	/* The forked thread is a plain thread: the calls are plain. */
	char c;
	if (weft_pread(fork_fd, &c, 1, 7, INT64_MAX) != 1 || (uint8_t)c != pattern(7))
		_exit(3);
		/* A runtime of the child's own: rings made afresh (not under TSan,
	 * which cannot start threads in the child of a multi-threaded
	 * process). */
#ifdef __SANITIZE_THREAD__
	_exit(0);
#endif
	/* Nor under ASan, where the child's first threads have hung (60 s)
	 * behind the parent's threads at the fork: once in 196 runs on spawn,
	 * once in a full run on mn w8 (ASan's own locks, as in
	 * edges.fork_holding_locks). The release build tests the rings the
	 * child makes afresh. */
	if (WT_SANITIZER)
		_exit(0);
	weft_config cfg;
	wt_config(&cfg);
	weft_rt *rt;
	if (weft_rt_create(&rt, &cfg) != 0)
		_exit(4);
	reader r[8];
	weft_task t[8];
	for (int i = 0; i < 8; i++) {
		r[i] = (reader){fork_fd, (uint64_t)i + 1};
		weft_task_init(&t[i], child_reader, &r[i]);
		if (weft_post(rt, &t[i]) != 0)
			_exit(5);
	}
	weft_wait_all(rt);
	weft_rt_destroy(rt);
	wt_check_async();
	_exit(0);
}

/* fork(2) while the parent's workers have rings open: the child reads the
 * file from its plain thread and from a runtime of its own; the parent's
 * rings go on working after. */
static void fork_rings(void)
{
#ifdef __SANITIZE_THREAD__
	if (wt.model == WEFT_MODEL_SPAWN)
		WT_SKIP("TSan reports the parent's ended task threads as leaked in the child");
#endif
	for (int v = 0; v < VARIANTS; v++) {
		set_variant(v);
		fork_fd = temp_file(FILE_BYTES);
		weft_rt *rt = create();
		int n = wt_workers(rt) * 2;
		weft_task t[16];
		reader r[16];
		for (int i = 0; i < n; i++) {
			r[i] = (reader){fork_fd, (uint64_t)i + 100};
			assert_rc(0, weft_task_init(&t[i], read_task, &r[i]));
			assert_rc(0, weft_post(rt, &t[i]));
		}
		assert_rc(0, weft_wait_all(rt));
		char err[512];
		int status = wt_in_child(fork_child, NULL, 60, err, sizeof(err));
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			fail_msg("%s: the child %s %d; it said: %s", variant_names[v],
			         WIFSIGNALED(status) ? "was killed by signal" : "exited with",
			         WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status), err);
		for (int i = 0; i < n; i++)
			assert_rc(0, weft_post(rt, &t[i]));
		assert_rc(0, weft_wait_all(rt));
		wt_check_async();
		assert_rc(0, weft_rt_destroy(rt));
		close(fork_fd);
	}
	reset_hooks();
}

/* ------------------------------------------------------------ the fallback */

static const char *stats_line(weft_rt *rt)
{
	wt_capture_begin();
	weft_stats_print(rt, stderr);
	return wt_capture_end();
}

static void one_read(void *arg)
{
	reader *r = arg;
	char c;
	WT_CHECK(weft_pread(r->fd, &c, 1, 9, INT64_MAX) == 1 && (uint8_t)c == pattern(9));
}

/* io_uring_setup fails at start-up (EPERM, as kernel.io_uring_disabled or
 * a seccomp filter would make it): the statistics say the pool serves the
 * files and why, and reads work. WEFT_IO=epoll says so too; WEFT_IO=uring
 * where the ring is refused says it on stderr and falls back; a bad value
 * is refused. */
static void uring_refused(void)
{
	int fd = temp_file(4096);
	reader r = {fd, 1};
	weft_task t;
	for (int v = 0; v < 4; v++) {
		weft__fault_uring_setup(v == 0 || v == 3 ? EPERM : 0);
		if (v == 1)
			setenv("WEFT_IO", "epoll", 1);
		if (v == 2)
			setenv("WEFT_IO", "auto", 1);
		if (v == 3)
			setenv("WEFT_IO", "uring", 1);
		wt_capture_begin();
		weft_rt *rt = create();
		char said[512]; /* wt_capture_end's buffer is reused by stats_line */
		snprintf(said, sizeof(said), "%s", wt_capture_end());
		assert_rc(0, weft_task_init(&t, one_read, &r));
		assert_rc(0, weft_post(rt, &t));
		assert_rc(0, weft_wait_all(rt));
		wt_check_async();
		const char *line = stats_line(rt);
		if (!wt_fiber_model()) {
			assert_non_null(strstr(line, "files by plain system calls"));
		} else if (v == 0 || v == 3) {
			assert_non_null(strstr(
			        line, "files on the blocking pool (Operation not permitted)"));
			if (v == 3)
				assert_non_null(strstr(said, "WEFT_IO=uring, but"));
		} else if (v == 1) {
			assert_non_null(strstr(line, "files on the blocking pool (WEFT_IO=epoll)"));
		} else if (weft__ring_probe(NULL)) {
			assert_non_null(strstr(line, "files on io_uring"));
		}
		assert_rc(0, weft_rt_destroy(rt));
		unsetenv("WEFT_IO");
	}
	setenv("WEFT_IO", "io_uring", 1);
	weft_config cfg;
	wt_config(&cfg);
	weft_rt *rt = NULL;
	wt_capture_begin();
	int rc = weft_rt_create(&rt, &cfg);
	const char *said = wt_capture_end();
	unsetenv("WEFT_IO");
	assert_rc(WEFT_EINVAL, rc);
	assert_non_null(strstr(said, "WEFT_IO"));
	close(fd);
	reset_hooks();
}

/* ------------------------------------------------------------ the pool */

static _Atomic int in_call, in_call_max, calls_done;

static void counted_call(void *arg)
{
	(void)arg;
	int n = atomic_fetch_add(&in_call, 1) + 1;
	int m = atomic_load(&in_call_max);
	while (n > m && !atomic_compare_exchange_weak(&in_call_max, &m, n))
		;
	wt_sleep_ms(5);
	atomic_fetch_sub(&in_call, 1);
	atomic_fetch_add(&calls_done, 1);
}

static void calls_task(void *arg)
{
	(void)arg;
	for (int i = 0; i < 3; i++)
		WT_CHECK_RC(0, weft_blocking(counted_call, NULL));
}

static bool pool_empty(void *arg)
{
	weft__pool_stats s;
	weft__pool_get_stats(arg, &s);
	return s.threads == 0;
}

/* 64 tasks call weft_blocking at once, 3 times each, on a pool held to 4
 * threads: every call runs, never more than 4 at once on fibers (the pool
 * grew to its bound and no further), and with an idle time of 50 ms every
 * thread ends once the calls are over; destroy joins them (the harness
 * checks nothing is left allocated). */
static void blocking_pool(void)
{
	weft__pool_testing_limits(50 * 1000000LL, 4);
	weft_rt *rt = create();
	enum { TASKS = 64 };
	weft_task t[TASKS];
	atomic_store(&in_call_max, 0);
	atomic_store(&calls_done, 0);
	for (int i = 0; i < TASKS; i++) {
		assert_rc(0, weft_task_init(&t[i], calls_task, NULL));
		assert_rc(0, weft_post(rt, &t[i]));
	}
	assert_rc(0, weft_wait_all(rt));
	wt_check_async();
	assert_int_equal(atomic_load(&calls_done), TASKS * 3);
	weft__pool_stats s;
	weft__pool_get_stats(rt, &s);
	if (wt_fiber_model()) {
		assert_true(atomic_load(&in_call_max) <= 4);
		assert_true(s.peak <= 4 && s.peak >= 1);
		assert_int_equal(s.jobs, TASKS * 3);
		if (s.peak < 2)
			fail_msg("the pool did not grow while 64 calls waited (peak %d)", s.peak);
		assert_true(wt_poll(pool_empty, rt)); /* idle threads retire */
		weft__pool_get_stats(rt, &s);
		assert_int_equal(s.retired, s.created);
		/* And it grows again afterwards (the new threads may have
		 * retired again by the time the statistics are read). */
		uint64_t created = s.created;
		for (int i = 0; i < 8; i++)
			assert_rc(0, weft_post(rt, &t[i]));
		assert_rc(0, weft_wait_all(rt));
		weft__pool_get_stats(rt, &s);
		assert_true(s.created > created);
		assert_int_equal(s.jobs, (TASKS + 8) * 3);
		check_handoffs(rt);
	} else {
		assert_int_equal(s.jobs, 0); /* kernel threads: the call runs right there */
	}
	assert_rc(0, weft_rt_destroy(rt));
	reset_hooks();
}

/* WEFT_BLOCKING_THREADS=2 holds the pool to 2 threads (64 tasks calling
 * at once: never more than 2 calls run, and the statistics say 2); a bad
 * value is refused at create. */
static void blocking_env(void)
{
	setenv("WEFT_BLOCKING_THREADS", "2", 1);
	weft_rt *rt = create();
	unsetenv("WEFT_BLOCKING_THREADS");
	enum { TASKS = 64 };
	weft_task t[TASKS];
	atomic_store(&in_call_max, 0);
	atomic_store(&calls_done, 0);
	for (int i = 0; i < TASKS; i++) {
		assert_rc(0, weft_task_init(&t[i], calls_task, NULL));
		assert_rc(0, weft_post(rt, &t[i]));
	}
	assert_rc(0, weft_wait_all(rt));
	wt_check_async();
	assert_int_equal(atomic_load(&calls_done), TASKS * 3);
	weft__pool_stats s;
	weft__pool_get_stats(rt, &s);
	if (wt_fiber_model()) {
		assert_true(atomic_load(&in_call_max) <= 2);
		assert_true(s.peak <= 2 && s.max == 2);
		assert_non_null(strstr(stats_line(rt), "at most 2)"));
	}
	assert_rc(0, weft_rt_destroy(rt));
	setenv("WEFT_BLOCKING_THREADS", "0", 1);
	weft_config cfg;
	wt_config(&cfg);
	weft_rt *bad = NULL;
	wt_capture_begin();
	int rc = weft_rt_create(&bad, &cfg);
	const char *said = wt_capture_end();
	unsetenv("WEFT_BLOCKING_THREADS");
	assert_rc(WEFT_EINVAL, rc);
	assert_non_null(strstr(said, "WEFT_BLOCKING_THREADS"));
}

/* The pool cannot create a thread: the call runs on the caller's thread
 * (it blocks the worker, as before the pool), and a later call, when
 * threads can be created again, goes to the pool. */
static void blocking_no_thread(void)
{
	if (!wt_fiber_model())
		WT_SKIP("weft_blocking runs on the caller's kernel thread here: no pool");
	weft_rt *rt = create();
	weft_task t;
	atomic_store(&calls_done, 0);
	weft__fault_thread_create(1);
	assert_rc(0, weft_task_init(&t, calls_task, NULL));
	assert_rc(0, weft_post(rt, &t));
	assert_rc(0, weft_wait_all(rt));
	weft__fault_thread_create(0);
	wt_check_async();
	assert_int_equal(atomic_load(&calls_done), 3);
	weft__pool_stats s;
	weft__pool_get_stats(rt, &s);
	if (wt_fiber_model())
		assert_true(s.jobs >= 2); /* the first ran on the caller */
	assert_rc(0, weft_rt_destroy(rt));
}

/* A fiber making short calls one after another: each hand-off finds the
 * pool thread still yielding after the last (no futex wake), and the
 * worker yields until the call comes back (no sleep): well under one
 * wake-up per call on either side, where each call cost both a sleep and
 * a cross-CPU wake-up (7-12x a semaphore round trip here, now 0.7-0.8x:
 * bench/blocking_pool). Both yields last 20 us, so on a machine whose CPUs
 * are all taken (ctest -j2 here) a burst of calls can outlast them and
 * sleep every time: bursts of 100 are tried for up to 10 s, and one burst
 * under half a wake-up per call on both sides passes. Without the yields
 * every burst sleeps and wakes on every call. Not under the sanitizers,
 * whose calls outlast the yields. */
enum { SHORT_CALLS = 100 };

static void short_calls_task(void *arg)
{
	(void)arg;
	for (int i = 0; i < SHORT_CALLS; i++)
		WT_CHECK_RC(0, weft_blocking(nothing, NULL));
}

static void blocking_short_calls(void)
{
	if (!wt_fiber_model())
		WT_SKIP("weft_blocking runs on the caller's kernel thread here: no pool");
	if (WT_SANITIZER)
		WT_SKIP("sanitized calls take longer than the pool thread yields");
	weft_rt *rt = create();
	weft_task t;
	uint64_t woken = 0, sleeps = 0, jobs = 0;
	int bursts = 0;
	bool quiet = false;
	for (double give_up = wt_now() + 10.0; !quiet && wt_now() < give_up; bursts++) {
		assert_rc(0, weft_task_init(&t, short_calls_task, NULL));
		assert_rc(0, weft_post(rt, &t));
		assert_rc(0, weft_wait_all(rt));
		wt_check_async();
		weft__pool_stats s;
		weft__pool_get_stats(rt, &s);
		weft_stats st;
		assert_rc(0, weft_stats_get(rt, &st));
		quiet = s.woken - woken < SHORT_CALLS / 2 && st.sleeps - sleeps < SHORT_CALLS / 2;
		print_message("[ info     ] %d calls: %llu pool wake-ups, %llu worker sleeps\n",
		              SHORT_CALLS, (unsigned long long)(s.woken - woken),
		              (unsigned long long)(st.sleeps - sleeps));
		woken = s.woken;
		sleeps = st.sleeps;
		assert_int_equal(s.jobs - jobs, SHORT_CALLS);
		jobs = s.jobs;
	}
	if (!quiet)
		fail_msg("%d bursts of %d short calls in 10 s, each with a wake-up or a sleep for "
		         "half its calls or more",
		         bursts, SHORT_CALLS);
	assert_rc(0, weft_rt_destroy(rt));
}

WT_CASES(WT_CASE(read_write_32), WT_CASE(read_write_128), WT_CASE(direct), WT_CASE(direct_learnt),
         WT_CASE(errors), WT_CASE(deadline), WT_CASE(cancel), WT_CASE(fork_rings),
         WT_CASE(uring_refused), WT_CASE(blocking_pool), WT_CASE(blocking_env),
         WT_CASE(blocking_no_thread), WT_CASE(blocking_short_calls));
