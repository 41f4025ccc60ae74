/* Two small pieces of the system under the I/O layer (io/fd.c) and the
 * portable poller: a descriptor another thread writes to end a poll (a
 * kernel thread's wait on fds, a poller's wake-up), and a poll with a
 * nanosecond timeout.
 *
 * Linux (wakefd_linux.c): one eventfd is both ends, and ppoll takes the
 * timeout as a timespec. POSIX (wakefd_posix.c): a pipe, and poll(2),
 * whose timeout is in milliseconds, or select(2) (microseconds) when the
 * timeout is not a whole number of them and every fd is below FD_SETSIZE;
 * beyond, the timeout goes up to the next millisecond (docs/platforms.md).
 * Neither makes the timer slack finer (core/futex.h): a timeout ends up to
 * the kernel's default slack late (50 us on Linux). */
#ifndef WEFT_SRC_IO_WAKEFD_H
#define WEFT_SRC_IO_WAKEFD_H

#include <poll.h>
#include <stdint.h>

typedef struct weft__wakefd {
	int rd; /* polled for POLLIN */
	int wr; /* written by weft__wakefd_signal (rd itself for an eventfd) */
} weft__wakefd;

/* Opens both ends, non-blocking and close-on-exec: 0, or -1 with errno. */
int weft__wakefd_open(weft__wakefd *w);
/* Makes rd readable (async-signal-safe: one write). */
void weft__wakefd_signal(int wr);
/* Reads rd until it is empty. */
void weft__wakefd_drain(int rd);
void weft__wakefd_close(weft__wakefd *w);

/* poll(2) with a timeout in nanoseconds (negative: none): as poll, -1 with
 * errno (EINTR included) on failure. */
int weft__poll_ns(struct pollfd *fds, nfds_t n, int64_t timeout_ns);

/* POLLRDHUP (peer shut its side) where the system reports it; 0 where it
 * does not, and a reader learns it from a read of 0 bytes. */
#if defined(POLLRDHUP) && !defined(WEFT_PORTABLE)
#define WEFT__POLLRDHUP POLLRDHUP
#else
#define WEFT__POLLRDHUP 0
#endif

#endif
