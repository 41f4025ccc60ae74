/* net.h: the socket helpers the network examples share (echo and
 * crawler). Every wait goes through weft_wait_fd, so a task
 * that waits for the network parks its fiber under fibers and mn (one
 * worker keeps thousands of connections open) and blocks its thread under
 * threads and spawn. */
#ifndef EXAMPLES_NET_H
#define EXAMPLES_NET_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stddef.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#include <weft/weft.h>

/* Every connection is a descriptor: allow as many as the hard limit does. */
static inline void net_raise_fd_limit(void)
{
	struct rlimit r;
	if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
		r.rlim_cur = r.rlim_max;
		setrlimit(RLIMIT_NOFILE, &r);
	}
}

static inline int net_nonblocking(int fd)
{
	int flags = fcntl(fd, F_GETFL);
	return flags < 0 ? -1 : fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

/* A non-blocking TCP socket listening on 127.0.0.1, on a port the kernel
 * picks; *port receives it. -1 on failure. */
static inline int net_listen(int *port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(fd, 4096) != 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) != 0 || net_nonblocking(fd) != 0) {
		close(fd);
		return -1;
	}
	*port = ntohs(a.sin_port);
	return fd;
}

/* accept, waiting for a connection; the new socket is non-blocking. */
static inline int net_accept(int lfd)
{
	for (;;) {
		int fd = accept(lfd, NULL, NULL);
		if (fd >= 0) {
			net_nonblocking(fd);
			return fd;
		}
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return -1;
		if (weft_wait_fd(lfd, POLLIN, -1) < 0)
			return -1;
	}
}

/* connect to 127.0.0.1:port, waiting for the handshake. -1 on failure. */
static inline int net_connect(int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_port = htons((unsigned short)port),
	                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || net_nonblocking(fd) != 0)
		goto fail;
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		int err = 0;
		socklen_t len = sizeof(err);
		if (errno != EINPROGRESS || weft_wait_fd(fd, POLLOUT, -1) < 0 ||
		    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0)
			goto fail;
	}
	return fd;
fail:
	if (fd >= 0)
		close(fd);
	return -1;
}

/* read up to n bytes, waiting until at least one came: the count, 0 at
 * end of stream, -1 on error. */
static inline ptrdiff_t net_read(int fd, void *buf, size_t n)
{
	for (;;) {
		ssize_t got = read(fd, buf, n);
		if (got >= 0)
			return got;
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return -1;
		if (weft_wait_fd(fd, POLLIN, -1) < 0)
			return -1;
	}
}

/* write all n bytes, waiting for room: 0, or -1 on error. */
static inline int net_write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	while (n > 0) {
		ssize_t put = write(fd, p, n);
		if (put > 0) {
			p += put;
			n -= (size_t)put;
		} else if (put < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
			return -1;
		} else if (weft_wait_fd(fd, POLLOUT, -1) < 0) {
			return -1;
		}
	}
	return 0;
}

#endif
