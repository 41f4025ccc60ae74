/* weft/io.h: the socket and stream calls.
 *
 * Every call is one loop (transfer): while the fd's cached readiness says
 * it may be ready (always, on a kernel thread), make the non-blocking
 * system call; EINTR goes round again; EAGAIN, or a short transfer on a
 * stream, clears the cached bit (io/fd.h) and the next round waits
 * (weft__fd_wait: a parked fiber, or ppoll on a kernel thread). An echo
 * on a fiber so costs its recv and its send and nothing else: the recv
 * that would only say EAGAIN is not made, and the fd is watched once. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#if defined(__linux__)
#include <sys/syscall.h> /* fibers call recvfrom and sendto directly there */
#endif
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/internal.h"
#include "core/os.h"
#include "io/fd.h"
#include <weft/io.h>

typedef enum op_kind {
	OP_READ,
	OP_WRITE,
	OP_READV,
	OP_WRITEV,
	OP_RECV,
	OP_SEND,
	OP_RECVFROM,
	OP_SENDTO,
	OP_ACCEPT,
} op_kind;

typedef struct op {
	op_kind kind;
	void *buf;
	size_t len;
	size_t want; /* a stream's transfer of fewer bytes empties or fills it */
	const struct iovec *iov;
	int iovcnt;
	int flags;
	struct sockaddr *addr;
	const struct sockaddr *to;
	socklen_t *addrlen;
	socklen_t tolen;
} op;

/* A write to a pipe whose reader has gone raises SIGPIPE unless it is
 * blocked; it is blocked on this thread for the call, and one it raised is
 * taken off the pending set (unless one was pending before). */
__attribute__((noinline)) static ssize_t write_nosigpipe(int fd, const op *o)
{
	sigset_t pipe_set, old, pending;
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	sigpending(&pending);
	bool was_pending = sigismember(&pending, SIGPIPE);
	ssize_t n = o->kind == OP_WRITE ? write(fd, o->buf, o->len) : writev(fd, o->iov, o->iovcnt);
	int err = WEFT__ERRNO;
	if (n < 0 && err == EPIPE && !was_pending) {
		struct timespec zero = {0, 0};
		while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && WEFT__ERRNO == EINTR)
			;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	WEFT__ERRNO = err;
	return n;
}

/* A fiber's recv and send are made with syscall(2) on Linux, not with
 * glibc's recv and send: those are cancellation points, and in a process
 * with threads each brackets its system call with two locked
 * instructions (asynchronous cancellation on, then off), about 1% of an
 * echo server's CPU under perf. A fiber's worker is weft's thread, which
 * nobody cancels; a kernel thread keeps the cancellation point (its
 * ppoll is one too). */
static ssize_t sock_recv(int fd, void *buf, size_t len, int flags, bool raw)
{
#if defined(WEFT_OS_LINUX) && defined(SYS_recvfrom)
	if (raw)
		return syscall(SYS_recvfrom, fd, buf, len, flags, NULL, NULL);
#else
	(void)raw;
#endif
	return recv(fd, buf, len, flags);
}

static ssize_t sock_send(int fd, const void *buf, size_t len, int flags, bool raw)
{
#if defined(WEFT_OS_LINUX) && defined(SYS_sendto)
	if (raw)
		return syscall(SYS_sendto, fd, buf, len, flags, NULL, 0);
#else
	(void)raw;
#endif
	return send(fd, buf, len, flags);
}

/* Out of line, as is write_nosigpipe: a message header on the stack would
 * widen transfer's frame, which a parked fiber's stack holds between its
 * calls (io/fd.c's fiber_wait says why each line of it costs). */
__attribute__((noinline)) static ssize_t sock_vec(int fd, const op *o)
{
	struct msghdr m = {.msg_iov = (struct iovec *)o->iov, .msg_iovlen = (size_t)o->iovcnt};
	if (o->kind == OP_READV)
		return recvmsg(fd, &m, MSG_DONTWAIT);
	return sendmsg(fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
}

static inline __attribute__((always_inline)) ssize_t call(int fd, op_kind kind, const op *o,
                                                          uint32_t flags, bool raw)
{
	bool sock = flags & WEFT__FD_SOCKET;
	switch (kind) {
	case OP_READ:
		/* On a socket, MSG_DONTWAIT: never blocks, even if the flag
		 * was cleared behind weft's back. */
		if (sock)
			return sock_recv(fd, o->buf, o->len, MSG_DONTWAIT, raw);
		return read(fd, o->buf, o->len);
	case OP_WRITE:
		if (sock)
			return sock_send(fd, o->buf, o->len, MSG_NOSIGNAL | MSG_DONTWAIT, raw);
		return write_nosigpipe(fd, o);
	case OP_READV:
		if (sock)
			return sock_vec(fd, o);
		return readv(fd, o->iov, o->iovcnt);
	case OP_WRITEV:
		if (sock)
			return sock_vec(fd, o);
		return write_nosigpipe(fd, o);
	case OP_RECV:
		return sock_recv(fd, o->buf, o->len, o->flags | MSG_DONTWAIT, raw);
	case OP_SEND:
		return sock_send(fd, o->buf, o->len, o->flags | MSG_NOSIGNAL | MSG_DONTWAIT, raw);
	case OP_RECVFROM:
		return recvfrom(fd, o->buf, o->len, o->flags | MSG_DONTWAIT, o->addr, o->addrlen);
	case OP_SENDTO:
		return sendto(fd, o->buf, o->len, o->flags | MSG_NOSIGNAL | MSG_DONTWAIT, o->to,
		              o->tolen);
	case OP_ACCEPT:
		return accept4(fd, o->addr, o->addrlen, o->flags | SOCK_NONBLOCK);
	}
	return -1;
}

static bool is_write(op_kind k)
{
	return k == OP_WRITE || k == OP_WRITEV || k == OP_SEND || k == OP_SENDTO;
}

/* The slot of fd, ready for non-blocking calls; NULL with *rc set. */
static weft__fd *slot_for(int fd, int *rc)
{
	weft__fd *s = weft__fd_get(fd);
	if (!s) {
		*rc = fd < 0 ? WEFT_EINVAL : WEFT_ENOMEM;
		return NULL;
	}
	uint32_t fl = atomic_load_explicit(&s->flags, memory_order_acquire);
	if (__builtin_expect(!(fl & WEFT__FD_KNOWN), 0) && (*rc = weft__fd_prepare(s, fd)) != 0)
		return NULL;
	if (fl & WEFT__FD_CANCELLED) {
		*rc = WEFT_ECANCELED;
		return NULL;
	}
	return s;
}

/* Inlined into each call, with call(): the kind is a constant there, the
 * other kinds fold away and o's fields stay in registers, so the frame a
 * parked fiber's stack holds is one of 160 bytes, not the call's op and
 * this loop's frame (io/iowait.h says why each line of it costs). */
static inline __attribute__((always_inline)) ssize_t transfer(int fd, const op *o, int64_t deadline)
{
	const op_kind kind = o->kind; /* read first: a constant where inlined */
	int rc = 0;
	weft__fd *s = slot_for(fd, &rc);
	if (!s)
		return rc;
	uint32_t seq = atomic_load_explicit(&s->seq, memory_order_relaxed);
	uint32_t flags = atomic_load_explicit(&s->flags, memory_order_relaxed);
	bool fiber = weft__tls.fiber != NULL;
	bool out = is_write(kind);
	short events = out ? POLLOUT : POLLIN;
	uint32_t bit = out ? WEFT__WR : WEFT__RD;
	uint32_t mask = weft__fd_mask(events);
	bool stream = flags & WEFT__FD_STREAM;
	bool tried = false;
	for (;;) {
		uint32_t seen = atomic_load_explicit(&s->ready, memory_order_acquire);
		/* A deadline already past still tries once, whatever the cache
		 * says (a fiber's cache may be behind a report not yet polled). */
		if (fiber && !(seen & mask) &&
		    (tried || deadline == INT64_MAX || deadline > weft__now_ns())) {
			if ((rc = weft__fd_wait(s, fd, seq, events, deadline)) != 0)
				return rc;
			continue;
		}
		tried = true;
		ssize_t n = call(fd, kind, o, flags, fiber);
		if (n >= 0) {
			if (fiber && stream && (size_t)n < o->want)
				weft__fd_clear(s, seen, bit);
			return n;
		}
		if (WEFT__ERRNO == EINTR)
			continue;
		if (WEFT__ERRNO == ENOTSOCK && (flags & WEFT__FD_SOCKET)) {
			/* Once a socket, now not: the number was closed with
			 * close(2) and reused. Learn it again. */
			atomic_fetch_and_explicit(&s->flags, WEFT__FD_CANCELLED,
			                          memory_order_relaxed);
			if ((rc = weft__fd_prepare(s, fd)) != 0)
				return rc;
			flags = atomic_load_explicit(&s->flags, memory_order_relaxed);
			stream = flags & WEFT__FD_STREAM;
			continue;
		}
		if (WEFT__ERRNO != EAGAIN && WEFT__ERRNO != EWOULDBLOCK)
			return WEFT_ESYSTEM;
		if (fiber) {
			weft__fd_clear(s, seen, bit); /* the next round waits */
			if (weft__passed(deadline))
				return WEFT_ETIMEDOUT;
		} else if ((rc = weft__fd_wait(s, fd, seq, events, deadline)) != 0) {
			return rc;
		}
	}
}

static size_t iov_len(const struct iovec *iov, int n)
{
	size_t len = 0;
	for (int i = 0; i < n; i++)
		len += iov[i].iov_len;
	return len;
}

ssize_t weft_read(int fd, void *buf, size_t len, int64_t deadline)
{
	if (fd < 0 || (!buf && len))
		return WEFT_EINVAL;
	op o = {.kind = OP_READ, .buf = buf, .len = len, .want = len};
	return transfer(fd, &o, deadline);
}

ssize_t weft_write(int fd, const void *buf, size_t len, int64_t deadline)
{
	if (fd < 0 || (!buf && len))
		return WEFT_EINVAL;
	op o = {.kind = OP_WRITE, .buf = (void *)buf, .len = len, .want = len};
	return transfer(fd, &o, deadline);
}

ssize_t weft_readv(int fd, const struct iovec *iov, int iovcnt, int64_t deadline)
{
	if (fd < 0 || iovcnt < 0 || iovcnt > IOV_MAX || (!iov && iovcnt))
		return WEFT_EINVAL;
	op o = {.kind = OP_READV, .iov = iov, .iovcnt = iovcnt, .want = iov_len(iov, iovcnt)};
	return transfer(fd, &o, deadline);
}

ssize_t weft_writev(int fd, const struct iovec *iov, int iovcnt, int64_t deadline)
{
	if (fd < 0 || iovcnt < 0 || iovcnt > IOV_MAX || (!iov && iovcnt))
		return WEFT_EINVAL;
	op o = {.kind = OP_WRITEV, .iov = iov, .iovcnt = iovcnt, .want = iov_len(iov, iovcnt)};
	return transfer(fd, &o, deadline);
}

ssize_t weft_recv(int fd, void *buf, size_t len, int flags, int64_t deadline)
{
	if (fd < 0 || (!buf && len))
		return WEFT_EINVAL;
	op o = {.kind = OP_RECV, .buf = buf, .len = len, .flags = flags};
	o.want = flags & MSG_PEEK ? 0 : len; /* a peek empties nothing */
	return transfer(fd, &o, deadline);
}

ssize_t weft_send(int fd, const void *buf, size_t len, int flags, int64_t deadline)
{
	if (fd < 0 || (!buf && len))
		return WEFT_EINVAL;
	op o = {.kind = OP_SEND, .buf = (void *)buf, .len = len, .want = len, .flags = flags};
	return transfer(fd, &o, deadline);
}

ssize_t weft_recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *from,
                      socklen_t *fromlen, int64_t deadline)
{
	if (fd < 0 || (!buf && len) || (from && !fromlen))
		return WEFT_EINVAL;
	op o = {.kind = OP_RECVFROM,
	        .buf = buf,
	        .len = len,
	        .flags = flags,
	        .addr = from,
	        .addrlen = from ? fromlen : NULL};
	return transfer(fd, &o, deadline);
}

ssize_t weft_sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *to,
                    socklen_t tolen, int64_t deadline)
{
	if (fd < 0 || (!buf && len))
		return WEFT_EINVAL;
	op o = {.kind = OP_SENDTO,
	        .buf = (void *)buf,
	        .len = len,
	        .flags = flags,
	        .to = to,
	        .tolen = to ? tolen : 0};
	return transfer(fd, &o, deadline);
}

int weft_accept(int fd, struct sockaddr *addr, socklen_t *addrlen, int flags, int64_t deadline)
{
	if (fd < 0 || (flags & ~(SOCK_CLOEXEC | SOCK_NONBLOCK)) || (addr && !addrlen))
		return WEFT_EINVAL;
	op o = {.kind = OP_ACCEPT,
	        .addr = addr,
	        .addrlen = addr ? addrlen : NULL,
	        .flags = flags & SOCK_CLOEXEC};
	ssize_t n = transfer(fd, &o, deadline);
	if (n < 0)
		return (int)n;
	weft__fd *s = weft__fd_get((int)n);
	/* A new life for the number: what weft knew of it is stale. A new
	 * connection has rarely sent anything yet: its first read waits for
	 * the poller's report (as Tokio's does) rather than hear EAGAIN. */
	if (s)
		weft__fd_renew(s, WEFT__FD_KNOWN | WEFT__FD_STREAM | WEFT__FD_SOCKET, WEFT__WR);
	return (int)n;
}

int weft_connect(int fd, const struct sockaddr *addr, socklen_t addrlen, int64_t deadline)
{
	if (fd < 0 || !addr)
		return WEFT_EINVAL;
	weft__fd *s = weft__fd_get(fd);
	if (!s)
		return WEFT_ENOMEM;
	weft__fd_renew(s, 0, WEFT__RD | WEFT__WR); /* a socket's life starts here */
	int rc = weft__fd_prepare(s, fd);
	if (rc != 0)
		return rc;
	uint32_t seq = atomic_load_explicit(&s->seq, memory_order_relaxed);
	uint32_t seen = atomic_load_explicit(&s->ready, memory_order_relaxed);
	if (connect(fd, addr, addrlen) == 0)
		return 0;
	if (WEFT__ERRNO != EINPROGRESS && WEFT__ERRNO != EINTR)
		return WEFT_ESYSTEM;
	/* Not writable until the handshake ends: the optimistic bit goes. */
	weft__fd_clear(s, seen, WEFT__WR);
	for (;;) {
		if (!weft__tls.fiber || !(atomic_load_explicit(&s->ready, memory_order_acquire) &
		                          weft__fd_mask(POLLOUT))) {
			rc = weft__fd_wait(s, fd, seq, POLLOUT, deadline);
			if (rc != 0)
				return rc;
		}
		int err = 0;
		socklen_t len = sizeof(err);
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
			return WEFT_ESYSTEM;
		if (err == 0) {
			/* Writable, or woken by a report that was not the end of
			 * the handshake: ask the socket. */
			struct sockaddr_storage peer;
			socklen_t plen = sizeof(peer);
			if (getpeername(fd, (struct sockaddr *)&peer, &plen) == 0)
				return 0;
			if (WEFT__ERRNO != ENOTCONN)
				return WEFT_ESYSTEM;
			seen = atomic_load_explicit(&s->ready, memory_order_relaxed);
			weft__fd_clear(s, seen, WEFT__WR);
			if (!weft__tls.fiber && deadline <= weft__now_ns())
				return WEFT_ETIMEDOUT;
			continue;
		}
		WEFT__ERRNO = err;
		return WEFT_ESYSTEM;
	}
}

ssize_t weft_read_all(int fd, void *buf, size_t len, size_t *moved, int64_t deadline)
{
	size_t done = 0;
	ssize_t rc = 0;
	if (fd < 0 || (!buf && len)) {
		rc = WEFT_EINVAL;
	} else {
		while (done < len) {
			rc = weft_read(fd, (char *)buf + done, len - done, deadline);
			if (rc <= 0)
				break;
			done += (size_t)rc;
		}
	}
	if (moved)
		*moved = done;
	return rc < 0 ? rc : (ssize_t)done;
}

ssize_t weft_write_all(int fd, const void *buf, size_t len, size_t *moved, int64_t deadline)
{
	size_t done = 0;
	ssize_t rc = 0;
	if (fd < 0 || (!buf && len)) {
		rc = WEFT_EINVAL;
	} else {
		while (done < len) {
			rc = weft_write(fd, (const char *)buf + done, len - done, deadline);
			if (rc < 0)
				break;
			done += (size_t)rc;
		}
	}
	if (moved)
		*moved = done;
	return rc < 0 ? rc : (ssize_t)done;
}
