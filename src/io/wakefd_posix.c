/* io/wakefd.h in POSIX: a pipe, and poll(2), or select(2) for a timeout
 * that is not a whole number of milliseconds. poll takes milliseconds;
 * select takes microseconds, but its fd_set stops at FD_SETSIZE, so an fd
 * beyond that makes the timeout go up to the next millisecond instead.
 * Does not use ppoll (POSIX.1-2024 and FreeBSD have it, macOS does not). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

#include "io/wakefd.h"

static int set_flags(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	int fdfl = fcntl(fd, F_GETFD);
	if (fl < 0 || fdfl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0 ||
	    fcntl(fd, F_SETFD, fdfl | FD_CLOEXEC) != 0)
		return -1;
	return 0;
}

int weft__wakefd_open(weft__wakefd *w)
{
	int p[2];
	/* pipe2 would set the flags atomically; a fork-exec racing the two
	 * fcntls may leak the pipe into the child, which costs it two fds. */
	if (pipe(p) != 0)
		return -1;
	if (set_flags(p[0]) != 0 || set_flags(p[1]) != 0) {
		int err = errno;
		close(p[0]);
		close(p[1]);
		errno = err;
		return -1;
	}
	w->rd = p[0];
	w->wr = p[1];
	return 0;
}

void weft__wakefd_signal(int wr)
{
	char one = 1;
	ssize_t n = write(wr, &one, 1);
	(void)n; /* EAGAIN: the pipe is full of wake-ups already */
}

void weft__wakefd_drain(int rd)
{
	char buf[64];
	while (read(rd, buf, sizeof(buf)) > 0)
		;
}

void weft__wakefd_close(weft__wakefd *w)
{
	close(w->rd);
	close(w->wr);
	w->rd = w->wr = -1;
}

/* poll's answer from select's sets (POLLIN, POLLOUT, POLLPRI: select
 * counts an end of file, a hang-up or an error as readable or writable). */
static int from_sets(struct pollfd *fds, nfds_t n, fd_set *rd, fd_set *wr, fd_set *ex)
{
	int ready = 0;
	for (nfds_t i = 0; i < n; i++) {
		fds[i].revents = 0;
		if (fds[i].fd < 0)
			continue;
		if (FD_ISSET(fds[i].fd, rd))
			fds[i].revents |= POLLIN;
		if (FD_ISSET(fds[i].fd, wr))
			fds[i].revents |= POLLOUT;
		if (FD_ISSET(fds[i].fd, ex))
			fds[i].revents |= POLLPRI;
		fds[i].revents &= (short)(fds[i].events | POLLIN | POLLOUT);
		ready += fds[i].revents != 0;
	}
	return ready;
}

/* select with a timeout in microseconds (rounded up): -1 with EINVAL when
 * an fd is beyond FD_SETSIZE; a closed fd answers as poll would
 * (POLLNVAL), at once or, past the fd table, after the timeout. */
static int select_us(struct pollfd *fds, nfds_t n, int64_t timeout_ns)
{
	fd_set rd, wr, ex;
	FD_ZERO(&rd);
	FD_ZERO(&wr);
	FD_ZERO(&ex);
	int top = -1;
	for (nfds_t i = 0; i < n; i++) {
		int fd = fds[i].fd;
		if (fd < 0)
			continue;
		if (fd >= FD_SETSIZE) {
			errno = EINVAL;
			return -1;
		}
		if (fds[i].events & POLLIN)
			FD_SET(fd, &rd);
		if (fds[i].events & POLLOUT)
			FD_SET(fd, &wr);
		if (fds[i].events & POLLPRI)
			FD_SET(fd, &ex);
		top = fd > top ? fd : top;
	}
	int64_t us = (timeout_ns + 999) / 1000;
	struct timeval tv = {.tv_sec = (time_t)(us / 1000000),
	                     .tv_usec = (suseconds_t)(us % 1000000)};
	int got = select(top + 1, &rd, &wr, &ex, &tv);
	/* A closed fd: EBADF, or, when it lies beyond the process's fd table
	 * (64 entries in a process that never opened more), nothing at all:
	 * Linux's select skips fds past the table and sleeps out the timeout.
	 * poll says which, with POLLNVAL. */
	if ((got < 0 && errno == EBADF) || got == 0)
		return poll(fds, n, 0);
	if (got < 0) {
		for (nfds_t i = 0; i < n; i++)
			fds[i].revents = 0;
		return got;
	}
	return from_sets(fds, n, &rd, &wr, &ex);
}

int weft__poll_ns(struct pollfd *fds, nfds_t n, int64_t timeout_ns)
{
	if (timeout_ns < 0)
		return poll(fds, n, -1);
	if (timeout_ns % 1000000 != 0 && timeout_ns < INT64_C(1000000000) * 3600) {
		int got = select_us(fds, n, timeout_ns);
		if (got >= 0 || errno != EINVAL)
			return got;
	}
	/* Whole milliseconds, or an fd select cannot take: up to the next
	 * millisecond, never early. */
	int64_t ms = timeout_ns / 1000000 + (timeout_ns % 1000000 != 0);
	return poll(fds, n, ms > INT_MAX ? INT_MAX : (int)ms);
}
