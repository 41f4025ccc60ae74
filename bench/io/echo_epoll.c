/* echo_epoll: the floor. A plain single-threaded echo server on one
 * edge-triggered epoll set, in C, with no library between it and the
 * kernel: what any runtime's echo server is measured against.
 *
 * Each socket is registered once (EPOLLIN | EPOLLOUT | EPOLLET) and never
 * re-armed. On readiness it reads and writes back what it read; a read that
 * fills less than the buffer drained the socket (a TCP socket's receive
 * queue was empty at that moment, and any later byte raises a new edge), so
 * it does not read again only to learn EAGAIN. Two system calls per echo:
 * recv and send, plus epoll_wait shared by every socket ready at once. A
 * send that does not finish keeps the rest and stops reading that socket
 * until EPOLLOUT says there is room. Listens on 127.0.0.1 only; runs until
 * killed. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "server_common.h"

static const char usage[] = "usage: echo_epoll --port N\n"
                            "A single-threaded edge-triggered epoll echo server on "
                            "127.0.0.1:N (bench/io), until killed.\n";

enum { BUF = 65536 };

typedef struct pending {
	size_t len, off;
	unsigned char *data; /* NULL: nothing waits to be sent */
} pending;

static pending *pend; /* by descriptor */
static size_t npend;

static pending *pending_of(int fd)
{
	if ((size_t)fd >= npend) {
		size_t n = npend ? npend : 1024;
		while (n <= (size_t)fd)
			n *= 2;
		pending *p = realloc(pend, n * sizeof(*p));
		if (!p) {
			fprintf(stderr, "echo_epoll: out of memory\n");
			exit(1);
		}
		memset(p + npend, 0, (n - npend) * sizeof(*p));
		pend = p;
		npend = n;
	}
	return &pend[fd];
}

static void drop(int fd)
{
	pending *p = pending_of(fd);
	free(p->data);
	p->data = NULL;
	close(fd); /* also leaves the epoll set */
}

/* Sends what p holds: true when all of it went, false to wait for room. */
static int flush(int fd, pending *p)
{
	while (p->off < p->len) {
		ssize_t n = send(fd, p->data + p->off, p->len - p->off, MSG_NOSIGNAL);
		if (n > 0)
			p->off += (size_t)n;
		else if (n < 0 && errno == EINTR)
			continue;
		else if (n < 0 && errno == EAGAIN)
			return 0;
		else
			return -1;
	}
	free(p->data);
	p->data = NULL;
	return 1;
}

/* Echoes what fd has to say: -1 when the connection is over. */
static int serve(int fd, unsigned char *buf)
{
	pending *p = pending_of(fd);
	if (p->data) {
		int r = flush(fd, p);
		if (r <= 0)
			return r;
	}
	for (;;) {
		ssize_t got = recv(fd, buf, BUF, 0);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0 && errno == EAGAIN)
			return 0;
		if (got <= 0)
			return -1;
		size_t off = 0;
		while (off < (size_t)got) {
			ssize_t n = send(fd, buf + off, (size_t)got - off, MSG_NOSIGNAL);
			if (n > 0) {
				off += (size_t)n;
			} else if (n < 0 && errno == EINTR) {
				continue;
			} else if (n < 0 && errno == EAGAIN) {
				p->len = (size_t)got - off;
				p->off = 0;
				p->data = malloc(p->len);
				if (!p->data)
					return -1;
				memcpy(p->data, buf + off, p->len);
				return 0; /* EPOLLOUT's edge brings us back */
			} else {
				return -1;
			}
		}
		if (got < BUF)
			return 0; /* drained: the next byte raises a new edge */
	}
}

int main(int argc, char **argv)
{
	int port = server_parse_port("echo_epoll", argc, argv, usage);
	server_raise_fd_limit();
	int lfd = server_listen("echo_epoll", port);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	unsigned char *buf = malloc(BUF);
	struct epoll_event lev = {.events = EPOLLIN | EPOLLET, .data.fd = lfd};
	if (ep < 0 || !buf || epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &lev) != 0) {
		perror("echo_epoll");
		return 1;
	}
	enum { EVENTS = 512 };
	struct epoll_event evs[EVENTS];
	for (;;) {
		int n = epoll_wait(ep, evs, EVENTS, -1);
		if (n < 0 && errno != EINTR) {
			perror("echo_epoll: epoll_wait");
			return 1;
		}
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;
			if (fd == lfd) {
				int c;
				while ((c = accept4(lfd, NULL, NULL,
				                    SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
					server_conn_setup(c);
					struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT |
					                                   EPOLLRDHUP | EPOLLET,
					                         .data.fd = c};
					if (epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev) != 0)
						close(c);
				}
				if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
					fprintf(stderr, "echo_epoll: accept: %s\n",
					        strerror(errno));
				continue;
			}
			if (serve(fd, buf) < 0)
				drop(fd);
		}
	}
}
