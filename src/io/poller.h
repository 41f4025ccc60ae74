/* The poller a fiber worker sleeps in: it waits for armed file descriptors,
 * the next timer, or a wake-up from another thread, whichever comes first.
 * Linux uses epoll plus an eventfd (poller_epoll.c); the portable build
 * poll(2) plus a pipe (poller_poll.c), emulating the edge-triggered
 * watches below; kqueue would fill the same interface on BSD and macOS.
 *
 * The timeout has nanosecond resolution, so that a fiber's sleep or
 * deadline fires within microseconds of its time rather than on the next
 * millisecond: on Linux epoll_pwait2 (5.11), found at run time, else a
 * timerfd in the epoll set. The thread that waits gets a timer slack of
 * 1 ns (weft__timer_slack_fine in core/futex.h).
 *
 * Two kinds of interest. The I/O layer (io/fd.h) watches an fd once,
 * edge-triggered, for as long as weft uses it (weft__poller_watch): every
 * change of readiness reports the fd's key, and nothing is paid per wait,
 * as Go's netpoll and Tokio's driver do. weft__poller_arm is the older
 * one-shot interest (reported once, armed again per wait), left for the
 * fiber engine's own weft__fiber_wait_fd. A key says who handles the
 * report: an fd of the I/O layer's table (WEFT__POLL_KEY_FD: weft__io_ready
 * gets it), a weft__poll_source (its ready function: an eventfd of another
 * backend, a ring's completion fd), or a token passed to the ready function
 * of weft__poller_wait (one-shot arms).
 *
 * One poller per worker; weft__poller_wake, watch, rewatch and unwatch may
 * be called from any thread (epoll_ctl is), the rest only by its owner. */
#ifndef WEFT_SRC_IO_POLLER_H
#define WEFT_SRC_IO_POLLER_H

#include <stdbool.h>
#include <stdint.h>

typedef struct weft__poller {
	uint32_t id; /* unique in the process, never reused (io/fd.c: where an fd is watched) */
	bool woken;  /* the last wait saw a wake-up (weft__poller_wake) */
	/* The backend's own; nothing outside poller_*.c reads them. */
	int epfd;                  /* epoll: the instance; poll: -1 */
	int wakefd;                /* a write makes the current or next wait return */
	int timerfd;               /* epoll: -1 unless the kernel lacks epoll_pwait2 */
	bool timer_armed;          /* timerfd holds a timeout not yet reported */
	struct weft__pollset *set; /* poll: the table of interests; epoll: NULL */
	void *events;              /* epoll: what one wait takes in; poll: NULL */
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

/* A watched fd's key: an fd of the I/O layer's table and the sequence
 * number of its slot (io/fd.h), so that a report for an fd closed and
 * reused since is recognised as stale and dropped. */
#define WEFT__POLL_KEY_FD(fd, seq) \
	((UINT64_C(1) << 63) | ((uint64_t)((seq)&0x7fffffffu) << 32) | (uint32_t)(fd))

/* Something else that wants reports of an fd (an eventfd): its ready
 * function runs on the thread that polls, with the events. */
typedef struct weft__poll_source {
	void (*ready)(struct weft__poll_source *src, short revents);
} weft__poll_source;

#define WEFT__POLL_KEY_SOURCE(src) ((uint64_t)(uintptr_t)(src) | 1u)

/* weft__poller_watch registers fd once, edge-triggered, for POLLIN,
 * POLLOUT, POLLRDHUP (and POLLERR, POLLHUP), reporting key at every change;
 * an fd already in p's set gets the new key. 0; WEFT_EINVAL when the
 * kernel refuses the fd (a regular file, which is always ready, or a
 * closed fd); WEFT_ENOMEM when it is out of memory or the per-user watch
 * limit (fs.epoll.max_user_watches). */
int weft__poller_watch(weft__poller *p, int fd, uint64_t key);
/* weft__poller_rewatch sets a watched fd's key again, which makes the
 * kernel report it once more if it is ready now (a level check without a
 * poll): 0, 1 when fd is not in p's set (closed behind weft's back since,
 * or never watched), or a WEFT_E* code as watch. */
int weft__poller_rewatch(weft__poller *p, int fd, uint64_t key);
/* weft__poller_unwatch drops fd from p's set (close(2) does it too). */
void weft__poller_unwatch(weft__poller *p, int fd);
/* weft__poller_expect: a fiber is about to park waiting for events
 * (POLLIN, POLLOUT) on fd, watched in p (after weft__poller_watch or
 * rewatch, or when the cached bit said not ready). epoll's edge needs
 * nothing (an empty call); a backend that emulates the edge
 * (poller_poll.c) polls fd for these events until it reports them. */
void weft__poller_expect(weft__poller *p, int fd, short events);
/* weft__poller_forget: fd is about to be closed (weft_close). epoll drops
 * a closed file from every set by itself; a backend that keeps fds by
 * number (poller_poll.c) drops it from every poller now, so that no
 * thread asleep in poll holds the file open past its close. Any thread. */
void weft__poller_forget(int fd);

/* For the backends: a refusal of call (errno err) while making a poller,
 * said on stderr with errno's text and, for descriptors, the limit and
 * what a poller needs (needs); WEFT_EMFILE or WEFT_ENOMEM. */
int weft__poller_refused(const char *call, int err, const char *needs);

/* The I/O layer's handler of a WEFT__POLL_KEY_FD report from p's wait
 * (io/fd.c); it may unwatch fd from p. */
void weft__io_ready(weft__poller *p, int fd, uint32_t seq, short revents);
/* The loads a report of fd will make, started reports ahead (io/fd.c):
 * a poller calls _slot some reports before it hands fd's report over,
 * then _waiter, fewer reports before it. */
void weft__io_prefetch_slot(int fd);
void weft__io_prefetch_waiter(int fd);

/* weft__poller_wait waits at most timeout_ns (0: just look; negative: no
 * limit) and calls ready for every one-shot token that became ready,
 * weft__io_ready or a source's function for watched fds. Returns how many
 * reports it handled (wake-ups not counted). */
int weft__poller_wait(weft__poller *p, int64_t timeout_ns, weft__poller_ready_fn ready, void *ctx);

/* weft__poller_wake makes a current or next weft__poller_wait return. */
void weft__poller_wake(weft__poller *p);

#endif
