/* io/poller.h on Linux: epoll for readiness, an eventfd for
 * wake-ups from other threads. Watched fds (the I/O layer's) are
 * edge-triggered and stay in the set; armed ones (the engine's
 * weft__fiber_wait_fd) are EPOLLONESHOT, reported once per arm. An event's
 * data says which: bit 63 a watched fd of io/fd.c's table (fd and slot
 * sequence inside), bit 0 a weft__poll_source (pointers are aligned), else
 * a one-shot token.
 *
 * Timeouts: epoll_wait takes milliseconds, which made every timed wait of
 * an idle fiber worker end on a millisecond tick (589 us late at the
 * median for a 2.5 ms wait). epoll_pwait2 takes a timespec; it is called
 * through syscall() because glibc before 2.35 has no wrapper, and probed
 * once per process, since a kernel before 5.11 (or a seccomp filter)
 * answers ENOSYS. Without it each poller has a timerfd in its epoll set,
 * set before each wait with a timeout: one more system call per sleep. */
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "core/futex.h"
#include "core/internal.h"
#include "core/testing.h"
#include "io/poller.h"

/* What a poller holds, said when the system refuses one. */
#define NEEDS                                                                        \
	"two or three descriptors (an epoll instance, an eventfd and, before Linux " \
	"5.11, a timerfd)"

/* The kernel's struct __kernel_timespec: 64-bit fields on every ABI. */
struct ktimespec {
	int64_t tv_sec;
	long long tv_nsec;
};

static int pwait2(int epfd, struct epoll_event *evs, int n, const struct ktimespec *ts)
{
#ifdef SYS_epoll_pwait2
	return (int)syscall(SYS_epoll_pwait2, epfd, evs, n, ts, NULL, 0);
#else
	(void)epfd, (void)evs, (void)n, (void)ts;
	errno = ENOSYS;
	return -1;
#endif
}

/* 1: epoll_pwait2 works, -1: it does not, 0: not probed yet. Any thread. */
static _Atomic int have_pwait2;

static bool use_pwait2(int epfd)
{
	int known = atomic_load_explicit(&have_pwait2, memory_order_relaxed);
	if (known)
		return known > 0;
	struct epoll_event ev;
	struct ktimespec zero = {0, 0};
	known = pwait2(epfd, &ev, 1, &zero) >= 0 || errno == EINTR ? 1 : -1;
	atomic_store_explicit(&have_pwait2, known, memory_order_relaxed);
	return known > 0;
}

void weft__fault_no_pwait2(bool on)
{
	atomic_store_explicit(&have_pwait2, on ? -1 : 0, memory_order_relaxed);
}

/* The token of the timerfd in the epoll set (the wake-up's is NULL). */
static char timer_token;

/* Reports one wait takes in. Tokio asks for 1,024; here a batch of
 * fibers woken together is run before the next look (engine.h,
 * poll_every), and the smaller the batch, the more of what its fibers
 * touched is still in the cache when they run: 1,000 echo connections on
 * one fiber worker, 0.95x Tokio's requests per second with 1,024 against
 * 0.975x with 128 (medians of 11 interleaved pairs, 2026-11-28). In the
 * poller, not on the stack: a busy worker polls from whatever fiber is
 * parking (weft__fworker_poll_busy). */
#define EVENTS_PER_WAIT 128

static _Atomic uint32_t last_id;

int weft__poller_init(weft__poller *p)
{
	p->id = atomic_fetch_add_explicit(&last_id, 1, memory_order_relaxed) + 1;
	p->timerfd = -1;
	p->timer_armed = false;
	p->woken = false;
	p->set = NULL;
	p->events = malloc(EVENTS_PER_WAIT * sizeof(struct epoll_event));
	if (!p->events)
		return WEFT_ENOMEM;
	p->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (p->epfd < 0) {
		int err = errno;
		free(p->events);
		return weft__poller_refused("epoll_create1", err, NEEDS);
	}
	p->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (p->wakefd < 0) {
		int err = errno;
		close(p->epfd);
		free(p->events);
		return weft__poller_refused("eventfd", err, NEEDS);
	}
	const char *call = "epoll_ctl";
	/* Edge-triggered: every write to an eventfd is an edge, reported even
	 * while its count is not zero, so the count is never read back. A
	 * wake-up costs its write and nothing on the woken side (the count
	 * would need 2^64 wake-ups to fill). */
	struct epoll_event ev = {.events = EPOLLIN | EPOLLET, .data.ptr = NULL};
	if (epoll_ctl(p->epfd, EPOLL_CTL_ADD, p->wakefd, &ev) != 0)
		goto fail;
	ev.events = EPOLLIN;
	if (!use_pwait2(p->epfd)) {
		call = "timerfd_create";
		p->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
		if (p->timerfd < 0)
			goto fail;
		call = "epoll_ctl";
		ev.data.ptr = &timer_token;
		if (epoll_ctl(p->epfd, EPOLL_CTL_ADD, p->timerfd, &ev) != 0)
			goto fail;
	}
	return 0;
fail:;
	int err = errno;
	if (p->timerfd >= 0)
		close(p->timerfd);
	close(p->wakefd);
	close(p->epfd);
	free(p->events);
	return weft__poller_refused(call, err, NEEDS);
}

void weft__poller_destroy(weft__poller *p)
{
	if (p->timerfd >= 0)
		close(p->timerfd);
	close(p->wakefd);
	close(p->epfd);
	free(p->events);
}

static uint32_t to_epoll(short events)
{
	return (events & POLLIN ? EPOLLIN : 0) | (events & POLLOUT ? EPOLLOUT : 0) |
	       (events & POLLPRI ? EPOLLPRI : 0) | EPOLLONESHOT;
}

static short from_epoll(uint32_t e)
{
	return (short)((e & EPOLLIN ? POLLIN : 0) | (e & EPOLLOUT ? POLLOUT : 0) |
	               (e & EPOLLPRI ? POLLPRI : 0) | (e & EPOLLERR ? POLLERR : 0) |
	               (e & EPOLLHUP ? POLLHUP : 0) | (e & EPOLLRDHUP ? POLLRDHUP : 0));
}

int weft__poller_arm(weft__poller *p, int fd, short events, void *token)
{
	if (fd < 0 || fd == p->wakefd || fd == p->timerfd || !token)
		return WEFT_EINVAL;
	struct epoll_event ev = {.events = to_epoll(events), .data.ptr = token};
	if (epoll_ctl(p->epfd, EPOLL_CTL_MOD, fd, &ev) == 0)
		return 0;
	if (errno == ENOENT && epoll_ctl(p->epfd, EPOLL_CTL_ADD, fd, &ev) == 0)
		return 0;
	return errno == ENOMEM || errno == ENOSPC ? WEFT_ENOMEM : WEFT_EINVAL;
}

void weft__poller_disarm(weft__poller *p, int fd)
{
	epoll_ctl(p->epfd, EPOLL_CTL_DEL, fd, NULL);
}

#define WATCHED (EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLPRI | EPOLLET)

static int ctl_error(int err)
{
	return err == ENOMEM || err == ENOSPC ? WEFT_ENOMEM : WEFT_EINVAL;
}

int weft__poller_watch(weft__poller *p, int fd, uint64_t key)
{
	if (fd < 0 || fd == p->wakefd || fd == p->timerfd)
		return WEFT_EINVAL;
	struct epoll_event ev = {.events = WATCHED, .data.u64 = key};
	if (epoll_ctl(p->epfd, EPOLL_CTL_ADD, fd, &ev) == 0)
		return 0;
	if (errno == EEXIST && epoll_ctl(p->epfd, EPOLL_CTL_MOD, fd, &ev) == 0)
		return 0;
	return ctl_error(errno);
}

int weft__poller_rewatch(weft__poller *p, int fd, uint64_t key)
{
	if (fd < 0 || fd == p->wakefd || fd == p->timerfd)
		return WEFT_EINVAL;
	struct epoll_event ev = {.events = WATCHED, .data.u64 = key};
	if (epoll_ctl(p->epfd, EPOLL_CTL_MOD, fd, &ev) == 0)
		return 0;
	return errno == ENOENT ? 1 : ctl_error(errno);
}

/* Called by the worker whose poller reported fd after its fiber moved to
 * another worker, so by a thread that does not own fd: the program may be
 * closing it with close(2) at that moment (weft_wait_fd allows that), and
 * the number may already name a new file. Harmless: under the slot's lock
 * (weft__io_ready), with the slot saying another poller watches it, so a
 * new file with that number is not in this set (its watch, under the same
 * lock, made the slot say this poller and no unwatch comes), and a closed
 * one has left every set; the call then fails, unheard. But
 * ThreadSanitizer counts any fd call beside a close as a race, so this one
 * goes to the kernel without its interceptor. */
void weft__poller_unwatch(weft__poller *p, int fd)
{
	(void)syscall(SYS_epoll_ctl, p->epfd, EPOLL_CTL_DEL, fd, NULL);
}

void weft__poller_expect(weft__poller *p, int fd, short events)
{
	(void)p, (void)fd, (void)events; /* the edge comes when it comes */
}

void weft__poller_forget(int fd)
{
	(void)fd; /* epoll drops a closed file from every set by itself */
}

/* epoll_wait for the timeout through the timerfd (no epoll_pwait2). */
static int wait_timerfd(weft__poller *p, struct epoll_event *evs, int n, int64_t timeout_ns)
{
	if (timeout_ns > 0) {
		struct itimerspec its = {.it_value = {.tv_sec = timeout_ns / 1000000000,
		                                      .tv_nsec = timeout_ns % 1000000000}};
		if (timerfd_settime(p->timerfd, 0, &its, NULL) == 0) {
			p->timer_armed = true;
			return epoll_wait(p->epfd, evs, n, -1);
		}
		/* Cannot happen with a valid fd; a millisecond timeout then. */
		return epoll_wait(
		        p->epfd, evs, n,
		        timeout_ns > INT32_MAX * 1000000LL
		                ? INT32_MAX
		                : (int)(timeout_ns / 1000000 + (timeout_ns % 1000000 != 0)));
	}
	if (p->timer_armed) { /* a stale timeout would end this wait early */
		struct itimerspec off = {{0, 0}, {0, 0}};
		timerfd_settime(p->timerfd, 0, &off, NULL);
		p->timer_armed = false;
	}
	return epoll_wait(p->epfd, evs, n, timeout_ns == 0 ? 0 : -1);
}

/* How many reports ahead of its own a report's loads start (poller.h):
 * the slot's line, then its waiter's (which needs the slot's), each far
 * enough ahead to have arrived (docs/io.md: with engine.c's
 * prefetch_resume, a fiber echo server's user-space CPU an echo at 1,000
 * connections went down by a quarter; one report ahead still stalled). */
#define AHEAD_SLOT   8
#define AHEAD_WAITER 4

static inline int fd_of(const struct epoll_event *ev)
{
	return ev->data.u64 >> 63 ? (int)(uint32_t)ev->data.u64 : -1;
}

/* Before report 0: the slots of the reports the loop's look-ahead skips. */
static void prefetch_first(const struct epoll_event *evs, int n)
{
	int fd;
	for (int k = 0; k < AHEAD_SLOT && k < n; k++)
		if ((fd = fd_of(&evs[k])) >= 0)
			weft__io_prefetch_slot(fd);
}

static inline void prefetch_ahead(const struct epoll_event *evs, int i, int n)
{
	int fd;
	if (i + AHEAD_SLOT < n && (fd = fd_of(&evs[i + AHEAD_SLOT])) >= 0)
		weft__io_prefetch_slot(fd);
	if (i + AHEAD_WAITER < n && (fd = fd_of(&evs[i + AHEAD_WAITER])) >= 0)
		weft__io_prefetch_waiter(fd);
}

int weft__poller_wait(weft__poller *p, int64_t timeout_ns, weft__poller_ready_fn ready, void *ctx)
{
	struct epoll_event *evs = p->events;
	int n;
	if (timeout_ns > 0)
		weft__timer_slack_fine();
	if (p->timerfd >= 0) {
		n = wait_timerfd(p, evs, EVENTS_PER_WAIT, timeout_ns);
	} else if (timeout_ns < 0) {
		n = epoll_wait(p->epfd, evs, EVENTS_PER_WAIT, -1);
	} else {
		struct ktimespec ts = {timeout_ns / 1000000000, timeout_ns % 1000000000};
		n = pwait2(p->epfd, evs, EVENTS_PER_WAIT, &ts);
	}
	int reported = 0;
	p->woken = false;
	prefetch_first(evs, n);
	for (int i = 0; i < n; i++) {
		uint64_t drain, key = evs[i].data.u64;
		prefetch_ahead(evs, i, n);
		if (key >> 63) {
			weft__io_ready(p, (int)(uint32_t)key, (uint32_t)(key >> 32) & 0x7fffffffu,
			               from_epoll(evs[i].events));
			reported++;
			continue;
		}
		if (key & 1) {
			weft__poll_source *src =
			        (weft__poll_source *)(uintptr_t)(key & ~(uint64_t)1);
			src->ready(src, from_epoll(evs[i].events));
			reported++;
			continue;
		}
		if (!evs[i].data.ptr) {
			p->woken = true; /* edge-triggered: nothing to drain */
			continue;
		}
		if (evs[i].data.ptr == &timer_token) {
			while (read(p->timerfd, &drain, sizeof(drain)) > 0)
				;
			p->timer_armed = false;
			continue;
		}
		ready(evs[i].data.ptr, from_epoll(evs[i].events), ctx);
		reported++;
	}
	return reported;
}

void weft__poller_wake(weft__poller *p)
{
	uint64_t one = 1;
	ssize_t rc = write(p->wakefd, &one, sizeof(one));
	(void)rc; /* EAGAIN: the counter is already non-zero, a wake is pending */
}
