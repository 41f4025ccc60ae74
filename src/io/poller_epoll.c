/* io/poller.h on Linux: epoll for readiness, an eventfd for
 * wake-ups from other threads. Does not use edge triggering: interest is
 * EPOLLONESHOT, so a ready fd is reported once per arm. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include "core/internal.h"
#include "io/poller.h"

/* What a refusal of call means to the caller, said on stderr with errno's
 * text and, for descriptors, the limit. */
static int refused(const char *call, int err)
{
	if (err == EMFILE || err == ENFILE) {
		struct rlimit nofile;
		char limit[32] = "unlimited";
		if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY)
			snprintf(limit, sizeof(limit), "%llu", (unsigned long long)nofile.rlim_cur);
		weft__log(WEFT_LOG_ERROR,
		          "weft: cannot create a fiber worker's poller (%s: %s): %s%s; a fiber "
		          "worker needs two descriptors (an epoll instance and an eventfd)\n",
		          call, strerror(err),
		          err == EMFILE
		                  ? "the process's descriptor limit (RLIMIT_NOFILE, ulimit -n) is "
		                  : "the system's limit (fs.file-max) is reached; ulimit -n is ",
		          limit);
		return WEFT_EMFILE;
	}
	weft__log(WEFT_LOG_ERROR, "weft: cannot create a fiber worker's poller (%s: %s)\n", call,
	          strerror(err));
	return WEFT_ENOMEM;
}

int weft__poller_init(weft__poller *p)
{
	p->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (p->epfd < 0)
		return refused("epoll_create1", errno);
	p->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (p->wakefd < 0) {
		int err = errno;
		close(p->epfd);
		return refused("eventfd", err);
	}
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
	if (epoll_ctl(p->epfd, EPOLL_CTL_ADD, p->wakefd, &ev) != 0) {
		int err = errno;
		close(p->wakefd);
		close(p->epfd);
		return refused("epoll_ctl", err);
	}
	return 0;
}

void weft__poller_destroy(weft__poller *p)
{
	close(p->wakefd);
	close(p->epfd);
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
	               (e & EPOLLHUP ? POLLHUP : 0));
}

int weft__poller_arm(weft__poller *p, int fd, short events, void *token)
{
	if (fd < 0 || fd == p->wakefd || !token)
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

int weft__poller_wait(weft__poller *p, int64_t timeout_ns, weft__poller_ready_fn ready, void *ctx)
{
	int ms = -1;
	if (timeout_ns >= 0) /* round up: never report a timer early */
		ms = (int)(timeout_ns > INT32_MAX * 1000000LL
		                   ? INT32_MAX
		                   : timeout_ns / 1000000 + (timeout_ns % 1000000 != 0));
	struct epoll_event evs[64];
	int n = epoll_wait(p->epfd, evs, 64, ms);
	int reported = 0;
	for (int i = 0; i < n; i++) {
		if (!evs[i].data.ptr) {
			uint64_t drain;
			while (read(p->wakefd, &drain, sizeof(drain)) > 0)
				;
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
