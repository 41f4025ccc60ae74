/* io/wakefd.h in POSIX: a pipe, and poll(2) with the sub-millisecond part
 * of a timeout slept. Does not use ppoll (POSIX.1-2024, FreeBSD; macOS has
 * none) nor pselect (its fd_set stops at FD_SETSIZE). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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

int weft__poll_ns(struct pollfd *fds, nfds_t n, int64_t timeout_ns)
{
	if (timeout_ns < 0)
		return poll(fds, n, -1);
	int64_t ms = timeout_ns / 1000000;
	int64_t rest = timeout_ns % 1000000;
	int got = poll(fds, n, ms > INT_MAX ? INT_MAX : (int)ms);
	if (got != 0 || rest == 0 || ms > INT_MAX)
		return got;
	/* The part poll cannot wait for: slept, then one more look. */
	struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)rest};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
	return poll(fds, n, 0);
}
