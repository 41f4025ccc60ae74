/* The poller a fiber worker sleeps in: it waits for armed file descriptors,
 * the next timer, or a wake-up from another thread, whichever comes first.
 * Linux uses epoll plus an eventfd (poller_epoll.c); kqueue would fill the
 * same interface on BSD and macOS.
 *
 * The timeout has nanosecond resolution, so that a fiber's sleep or
 * deadline fires within microseconds of its time rather than on the next
 * millisecond: on Linux epoll_pwait2 (5.11), found at run time, else a
 * timerfd in the epoll set. The thread that waits gets a timer slack of
 * 1 ns (weft__timer_slack_fine in core/futex.h).
 *
 * Interest is one-shot: an fd armed for some events reports once and must
 * be armed again. One poller per worker; only weft__poller_wake may be
 * called from other threads. */
#ifndef WEFT_SRC_IO_POLLER_H
#define WEFT_SRC_IO_POLLER_H

#include <stdbool.h>
#include <stdint.h>

typedef struct weft__poller {
	int epfd;
	int wakefd;       /* eventfd: a write makes the current or next wait return */
	int timerfd;      /* -1 unless the kernel lacks epoll_pwait2 */
	bool timer_armed; /* timerfd holds a timeout not yet reported */
	bool woken;       /* the last wait saw a wake-up (weft__poller_wake) */
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
