/* weft/io.h's file calls and their backends (files.h).
 *
 * A call on a fiber must not block its worker. A read or write is first
 * tried with RWF_NOWAIT on the fiber itself: the page cache answers most
 * reads without waiting, for what a pread costs (1.07x; whether the file
 * is O_DIRECT, which keeps it out, is learnt once). Only what would wait goes
 * on: to the worker's io_uring, the fiber parking on the completion
 * (uring.c), or without io_uring to the blocking pool (pool.c). Measured
 * per call, interleaved, on a cached 4 KiB read: a read through io_uring
 * costs 1.57x a pread (1.67x with the ring's eventfd registered, 2.5x
 * with a linked timeout), so the ring is for the reads that wait, where
 * it saves a thread hand-off. Anything but a fiber makes the plain system
 * call. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/os.h"
#include "fiber/engine.h"
#include "io/fd.h"
#include "io/files.h"
#include "io/pool.h"
#include "io/uring.h"
#include <weft/io.h>

typedef enum file_op { OP_READ, OP_WRITE, OP_FSYNC, OP_FDATASYNC, OP_OPEN } file_op;

/* One call's arguments (open: fd is dirfd, buf the path, len the mode, off
 * the flags). */
typedef struct file_call {
	file_op op;
	int fd;
	void *buf;
	size_t len;
	off_t off;
} file_call;

static _Atomic bool nowait_off; /* tests: every call that may hand off does */
/* weft__file_cancel calls so far: a ring request that ends in EINTR was
 * interrupted by a cancel (an io-wq worker's blocking read) if this moved
 * meanwhile, and is retried otherwise. */
static _Atomic unsigned cancels;

void weft__fault_file_nowait(bool off)
{
	atomic_store(&nowait_off, off);
}

/* The system call on this thread: its result, or -1 with errno. */
static ssize_t sys_call(const file_call *c)
{
	ssize_t n;
	do {
		switch (c->op) {
		case OP_READ:
			n = pread(c->fd, c->buf, c->len, c->off);
			break;
		case OP_WRITE:
			n = pwrite(c->fd, c->buf, c->len, c->off);
			break;
		case OP_FSYNC:
			n = fsync(c->fd);
			break;
		case OP_FDATASYNC:
			n = fdatasync(c->fd);
			break;
		default:
			n = openat(c->fd, c->buf, (int)c->off | O_CLOEXEC, (mode_t)c->len);
			break;
		}
	} while (n < 0 && errno == EINTR);
	return n;
}

/* A read or write that does not wait for the device: its result, or -1
 * with errno (EAGAIN: it would; EOPNOTSUPP: the file cannot say). */
#ifdef WEFT_OS_LINUX
static ssize_t sys_nowait(const file_call *c)
{
	struct iovec iov = {.iov_base = c->buf, .iov_len = c->len};
	ssize_t n;
	do
		n = c->op == OP_READ ? preadv2(c->fd, &iov, 1, c->off, RWF_NOWAIT)
		                     : pwritev2(c->fd, &iov, 1, c->off, RWF_NOWAIT);
	while (n < 0 && errno == EINTR);
	return n;
}

/* Whether RWF_NOWAIT keeps a call off the device: not for O_DIRECT, where
 * it only refuses to wait for locks and block allocation and then waits
 * for the device read all the same (ext4, xfs). Learnt once per life of
 * fd's slot (io/fd.h), by weft_openat or by one fcntl, not per call: the
 * fcntl was a sixth of a cached read. A number closed with close(2), not
 * weft_close, and reused keeps what was learnt about the file before
 * (docs/io.md: an O_DIRECT file's read may then hold its worker). */
static bool nowait_helps(int fd)
{
	weft__fd *s = weft__fd_get(fd);
	uint32_t known = s ? atomic_load_explicit(&s->flags, memory_order_acquire) : 0;
	if (known & WEFT__FD_FILE)
		return !(known & WEFT__FD_DIRECT);
	uint32_t seq = s ? atomic_load_explicit(&s->seq, memory_order_acquire) : 0;
	int flags = fcntl(fd, F_GETFL);
	if (flags < 0)
		return true; /* a bad fd fails in the call */
	if (s)
		weft__fd_learn(s, seq, WEFT__FD_FILE | (flags & O_DIRECT ? WEFT__FD_DIRECT : 0));
	return !(flags & O_DIRECT);
}
#else
/* POSIX has no read that refuses to wait for the device: every file call
 * of a fiber goes to the pool (a cached read pays the hand-off). */
static bool nowait_helps(int fd)
{
	(void)fd;
	return false;
}

static ssize_t sys_nowait(const file_call *c)
{
	(void)c;
	errno = EOPNOTSUPP;
	return -1;
}
#endif

static ssize_t sys_result(ssize_t n)
{
	return n >= 0 ? n : WEFT_ESYSTEM; /* errno is the system's */
}

/* ------------------------------------------------------------ pool */

typedef struct file_job {
	weft__job job;
	file_call call;
	ssize_t res;
	int err;
	bool cancelled;
} file_job;

static void run_job(weft__job *j)
{
	file_job *f = (file_job *)(void *)j;
	f->res = sys_call(&f->call);
	f->err = errno;
}

static void cancel_job(weft__job *j)
{
	((file_job *)(void *)j)->cancelled = true;
}

static ssize_t on_pool(weft_rt *rt, const file_call *c, int64_t deadline)
{
	file_job f = {.call = *c, .job = {.run = run_job, .fd = c->op == OP_OPEN ? -1 : c->fd}};
	weft__waiter_init(&f.job.waiter, NULL);
	weft__fworker *w = weft__fiber_handoff_begin();
	if (weft__pool_submit(rt, &f.job) != 0) {
		run_job(&f.job); /* no thread to be had: block here */
	} else if (deadline == INT64_MAX) {
		weft__waiter_park_for(&f.job.waiter, WEFT__WAIT_FD);
	} else if (!weft__waiter_park_until(&f.job.waiter, WEFT__WAIT_FD, deadline)) {
		if (weft__pool_take_back(rt, &f.job)) {
			weft__fiber_handoff_end(w);
			return WEFT_ETIMEDOUT;
		}
		weft__waiter_park_for(&f.job.waiter, WEFT__WAIT_FD); /* it runs: wait for it */
	}
	weft__fiber_handoff_end(w);
	if (f.cancelled)
		return WEFT_ECANCELED;
	errno = f.err;
	return sys_result(f.res);
}

/* ------------------------------------------------------------ calls */

static bool is_rw(file_op op)
{
	return op == OP_READ || op == OP_WRITE;
}

static ssize_t ring_call(weft__ring *r, const file_call *c, int64_t deadline)
{
	static const weft__ring_op ops[] = {[OP_READ] = WEFT__RING_READ,
	                                    [OP_WRITE] = WEFT__RING_WRITE,
	                                    [OP_FSYNC] = WEFT__RING_FSYNC,
	                                    [OP_FDATASYNC] = WEFT__RING_FSYNC,
	                                    [OP_OPEN] = WEFT__RING_OPENAT};
	size_t len = c->op == OP_FDATASYNC ? 1 : c->len;
	off_t off = c->op == OP_OPEN ? (off_t)((int)c->off | O_CLOEXEC) : c->off;
	for (;;) {
		int err = 0;
		unsigned seen = atomic_load_explicit(&cancels, memory_order_relaxed);
		int64_t n = weft__ring_rw(r, ops[c->op], c->fd, c->buf, len, off, deadline, &err);
		if (n != WEFT_ESYSTEM)
			return (ssize_t)n; /* a result, WEFT__RING_FULL, or timed out, cancelled */
		if (err == EINTR && atomic_load(&cancels) != seen)
			return WEFT_ECANCELED;
		if (err == EINTR)
			continue;
		errno = err;
		return WEFT_ESYSTEM;
	}
}

static ssize_t waited_call(weft__fiber *f, const file_call *c, size_t done, int64_t deadline);

static ssize_t file_call_run(file_call *c, int64_t deadline)
{
	if (deadline != INT64_MAX && weft__now_ns() >= deadline) {
		/* Try once without waiting; only reads and writes can, and not
		 * of O_DIRECT files. */
		if (!is_rw(c->op) || !nowait_helps(c->fd))
			return WEFT_ETIMEDOUT;
		ssize_t n = sys_nowait(c);
		if (n >= 0)
			return n;
		return errno == EAGAIN || errno == EOPNOTSUPP ? WEFT_ETIMEDOUT : WEFT_ESYSTEM;
	}
	weft__fiber *f = weft__fiber_current();
	if (!f || !f->task) /* a kernel thread: it may block */
		return sys_result(sys_call(c));
	/* First a try without waiting (not for O_DIRECT: nowait_helps). */
	size_t done = 0;
	if (is_rw(c->op) && !atomic_load_explicit(&nowait_off, memory_order_relaxed) &&
	    nowait_helps(c->fd)) {
		ssize_t n = sys_nowait(c);
		if (n < 0 && errno != EAGAIN && errno != EOPNOTSUPP)
			return WEFT_ESYSTEM;
		if (n == (ssize_t)c->len || (n == 0 && c->op == OP_READ))
			return n;
		done = n > 0 ? (size_t)n : 0; /* a read the page cache held in part */
	}
	/* The request is on this worker's ring, reaped by this worker: the
	 * fiber does not move while it waits (engine.h, pins). */
	weft__fiber_pins_add(f, 1);
	ssize_t m = waited_call(f, c, done, deadline);
	weft__fiber_pins_add(f, -1);
	if (done == 0)
		return m;
	return m > 0 ? (ssize_t)done + m : (ssize_t)done; /* an error after a part: the part */
}

static ssize_t waited_call(weft__fiber *f, const file_call *c, size_t done, int64_t deadline)
{
	file_call rest = *c;
	rest.buf = (char *)c->buf + done;
	rest.len -= done;
	rest.off += (off_t)done;
	weft_rt *rt = weft__tls.rt;
	ssize_t m = (ssize_t)WEFT__RING_FULL;
	if (rt->io_uring) {
		/* The ring of the worker the fiber runs on now (f->home: a fiber
		 * that moves between workers must have it follow). */
		weft__ring *r = weft__ring_of(f->home);
		if (r)
			m = ring_call(r, &rest, deadline);
	}
	if (m == (ssize_t)WEFT__RING_FULL)
		m = on_pool(rt, &rest, deadline);
	return m;
}

ssize_t weft_pread(int fd, void *buf, size_t len, off_t off, int64_t deadline)
{
	if (fd < 0 || off < 0 || (!buf && len))
		return WEFT_EINVAL;
	file_call c = {OP_READ, fd, buf, len > SSIZE_MAX ? SSIZE_MAX : len, off};
	return file_call_run(&c, deadline);
}

ssize_t weft_pwrite(int fd, const void *buf, size_t len, off_t off, int64_t deadline)
{
	if (fd < 0 || off < 0 || (!buf && len))
		return WEFT_EINVAL;
	file_call c = {OP_WRITE, fd, (void *)(uintptr_t)buf, len > SSIZE_MAX ? SSIZE_MAX : len,
	               off};
	return file_call_run(&c, deadline);
}

int weft_fsync(int fd, int64_t deadline)
{
	if (fd < 0)
		return WEFT_EINVAL;
	file_call c = {OP_FSYNC, fd, NULL, 0, 0};
	return (int)file_call_run(&c, deadline);
}

int weft_fdatasync(int fd, int64_t deadline)
{
	if (fd < 0)
		return WEFT_EINVAL;
	file_call c = {OP_FDATASYNC, fd, NULL, 0, 0};
	return (int)file_call_run(&c, deadline);
}

int weft_openat(int dirfd, const char *path, int flags, mode_t mode, int64_t deadline)
{
	if (!path)
		return WEFT_EINVAL;
	file_call c = {OP_OPEN, dirfd, (void *)(uintptr_t)path, mode, flags};
	ssize_t n = file_call_run(&c, deadline);
#ifdef WEFT_OS_LINUX
	weft__fd *s = n >= 0 ? weft__fd_get((int)n) : NULL;
	if (s) /* a new life for the number, and what its calls need to know */
		weft__fd_renew(s, WEFT__FD_FILE | (flags & O_DIRECT ? WEFT__FD_DIRECT : 0),
		               WEFT__RD | WEFT__WR);
#endif
	return (int)n;
}

/* ------------------------------------------------------------ backends */

void weft__io_choose(weft_rt *rt)
{
	rt->io_uring = false;
	rt->io_refused = 0;
	bool fibers = rt->cfg.model == WEFT_MODEL_FIBERS || rt->cfg.model == WEFT_MODEL_MN;
	if (!fibers || rt->io_want == WEFT__IO_EPOLL)
		return;
	int err = 0;
	rt->io_uring = weft__ring_probe(&err);
	rt->io_refused = err;
	if (!rt->io_uring && rt->io_want == WEFT__IO_URING)
		weft__log(WEFT_LOG_WARN,
		          "weft: WEFT_IO=uring, but this process may not use io_uring "
		          "(io_uring_setup: %s): files go to the blocking pool\n",
		          strerror(err));
}

static const char *const want_names[] = {"auto", "uring", "epoll"};

void weft__io_print_stats(weft_rt *rt, FILE *out)
{
	weft__pool_stats p;
	weft__pool_get_stats(rt, &p);
	bool fibers = rt->cfg.model == WEFT_MODEL_FIBERS || rt->cfg.model == WEFT_MODEL_MN;
	char why[96] = "";
	if (fibers && !rt->io_uring)
		snprintf(why, sizeof(why), " (%s)",
		         rt->io_want == WEFT__IO_EPOLL ? "WEFT_IO=epoll"
		         : rt->io_refused              ? strerror(rt->io_refused)
		                                       : "io_uring refused");
	char ring[96] = "";
	if (rt->io_uring) {
		int n;
		uint64_t requests, parked;
		weft__ring_stats(rt, &n, &requests, &parked);
		snprintf(ring, sizeof(ring), " (%d rings, %llu requests, %llu waited for)", n,
		         (unsigned long long)requests, (unsigned long long)parked);
	}
	fprintf(out,
	        "weft: files %s%s%s, WEFT_IO=%s; blocking pool: %d threads (peak %d, at most %d), "
	        "%llu jobs, %llu threads created, %llu retired\n",
	        !fibers        ? "by plain system calls on the workers"
	        : rt->io_uring ? "on io_uring"
	                       : "on the blocking pool",
	        ring, why, want_names[rt->io_want], p.threads, p.peak,
	        p.max ? p.max : rt->blocking_max, (unsigned long long)p.jobs,
	        (unsigned long long)p.created, (unsigned long long)p.retired);
}

int weft__file_cancel(int fd)
{
	if (fd < 0)
		return 0;
	atomic_fetch_add(&cancels, 1);
	return weft__pool_cancel_fd(fd, cancel_job) + weft__ring_cancel_fd(fd);
}

void weft__io_fork_prepare(void)
{
	weft__pool_fork_prepare();
	weft__ring_fork_prepare();
}

void weft__io_fork_parent(void)
{
	weft__ring_fork_parent();
	weft__pool_fork_parent();
}

void weft__io_fork_child(void)
{
	weft__ring_fork_child();
	weft__pool_fork_child();
}
