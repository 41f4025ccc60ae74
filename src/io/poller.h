/* The poller a fiber worker sleeps in: it waits for armed file descriptors,
 * the next timer, or a wake-up from another thread, whichever comes first.
 * Linux uses epoll plus an eventfd (poller_epoll.c); kqueue would fill the
 * same interface on BSD and macOS.
 *
 * Interest is one-shot: an fd armed for some events reports once and must
 * be armed again. One poller per worker; only weft__poller_wake may be
 * called from other threads. */
#ifndef WEFT_SRC_IO_POLLER_H
#define WEFT_SRC_IO_POLLER_H

#include <stdint.h>

typedef struct weft__poller {
	int epfd;
	int wakefd; /* eventfd: a write makes the current or next wait return */
} weft__poller;

/* Returns 0, WEFT_EMFILE when the process or system is out of file
 * descriptors (EMFILE, ENFILE), or WEFT_ENOMEM for any other refusal; a
 * refusal is said on stderr with the call, errno's text and the limit. */
int weft__poller_init(weft__poller *p);
void weft__poller_destroy(weft__poller *p);

/* weft__poller_arm reports events (POLLIN/POLLOUT bits as in <poll.h>) on
 * fd once, passing token. WEFT_EINVAL for an fd epoll refuses (a regular
 * file, a closed fd). */
int weft__poller_arm(weft__poller *p, int fd, short events, void *token);
/* weft__poller_disarm drops fd's interest (after a timeout). */
void weft__poller_disarm(weft__poller *p, int fd);

typedef void (*weft__poller_ready_fn)(void *token, short revents, void *ctx);

/* weft__poller_wait waits at most timeout_ns (0: just look; negative: no
 * limit) and calls ready for every fd that became ready. Returns how many. */
int weft__poller_wait(weft__poller *p, int64_t timeout_ns, weft__poller_ready_fn ready, void *ctx);

/* weft__poller_wake makes a current or next weft__poller_wait return. */
void weft__poller_wake(weft__poller *p);

#endif
