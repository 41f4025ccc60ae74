/* io/wakefd.h on Linux: an eventfd, and ppoll. */
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "io/wakefd.h"

int weft__wakefd_open(weft__wakefd *w)
{
	int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (fd < 0)
		return -1;
	w->rd = w->wr = fd;
	return 0;
}

void weft__wakefd_signal(int wr)
{
	uint64_t one = 1;
	ssize_t n = write(wr, &one, sizeof(one));
	(void)n; /* EAGAIN: the count is full, a wake-up is pending anyway */
}

void weft__wakefd_drain(int rd)
{
	uint64_t drain;
	ssize_t n = read(rd, &drain, sizeof(drain)); /* one read empties the count */
	(void)n;
}

void weft__wakefd_close(weft__wakefd *w)
{
	close(w->rd);
	w->rd = w->wr = -1;
}

int weft__poll_ns(struct pollfd *fds, nfds_t n, int64_t timeout_ns)
{
	struct timespec ts = {.tv_sec = (time_t)(timeout_ns / 1000000000),
	                      .tv_nsec = (long)(timeout_ns % 1000000000)};
	return ppoll(fds, n, timeout_ns < 0 ? NULL : &ts, NULL);
}
