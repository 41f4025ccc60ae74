/* echo_weft_waitfd: weft's echo server as the examples write one today, the
 * *before* figure of issue 25. A task per connection on non-blocking
 * sockets, every wait a weft_wait_fd after EAGAIN, exactly as examples/echo.c
 * and examples/net.h do (net_read: read, on EAGAIN wait and read again;
 * net_write_all: write until all went), with the accept loop on the main
 * thread, which is not a worker. The model and the worker count come from
 * WEFT_MODEL and WEFT_WORKERS (weft_rt_create with no configuration).
 *
 * A connection's record lives until the process ends: a task's memory may
 * not be freed from inside its own function, and a server that runs until
 * killed has no weft_wait_all to free them after. Records come from blocks
 * of 1024 (about 100 KiB each), so a run of a few hundred thousand
 * connections costs some megabytes. Listens on 127.0.0.1 only; runs until
 * killed (SIGTERM). */
#define _GNU_SOURCE
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "server_common.h"

static const char usage[] =
        "usage: echo_weft_waitfd --port N\n"
        "weft's echo server as examples/echo.c writes one (weft_wait_fd on non-blocking\n"
        "sockets, a task per connection) on 127.0.0.1:N, until killed. WEFT_MODEL and\n"
        "WEFT_WORKERS choose the model and the workers.\n";

typedef struct conn {
	weft_task task;
	int fd;
} conn;

/* read up to n bytes, waiting until at least one came (net_read). */
static ssize_t conn_read(int fd, void *buf, size_t n)
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

/* write all n bytes, waiting for room (net_write_all). */
static int conn_write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	while (n > 0) {
		ssize_t put = send(fd, p, n, MSG_NOSIGNAL);
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

static void serve(void *arg)
{
	conn *c = arg;
	char buf[4096];
	ssize_t n;
	while ((n = conn_read(c->fd, buf, sizeof(buf))) > 0)
		if (conn_write_all(c->fd, buf, (size_t)n) != 0)
			break;
	close(c->fd);
}

static conn *new_conn(void)
{
	enum { BLOCK = 1024 };
	static conn *block;
	static size_t used = BLOCK;
	if (used == BLOCK) {
		block = calloc(BLOCK, sizeof(*block));
		if (!block)
			return NULL;
		used = 0;
	}
	return &block[used++];
}

int main(int argc, char **argv)
{
	int port = server_parse_port("echo_weft_waitfd", argc, argv, usage);
	server_raise_fd_limit();
	int lfd = server_listen("echo_weft_waitfd", port);
	weft_rt *rt;
	int rc = weft_rt_create(&rt, NULL);
	if (rc != 0) {
		fprintf(stderr, "echo_weft_waitfd: weft_rt_create: %s\n", weft_strerror(rc));
		return 1;
	}
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
			    errno != ECONNABORTED) {
				fprintf(stderr, "echo_weft_waitfd: accept: %s\n", strerror(errno));
				if (errno != EMFILE && errno != ENFILE)
					return 1;
			}
			/* The main thread is not a task: this is a poll(2). */
			(void)weft_wait_fd(lfd, POLLIN, errno == EMFILE ? 10000000 : -1);
			continue;
		}
		server_conn_setup(fd);
		conn *c = new_conn();
		if (!c) {
			close(fd);
			continue;
		}
		c->fd = fd;
		weft_task_init(&c->task, serve, c);
		rc = weft_post(rt, &c->task);
		if (rc == WEFT_EFULL) /* the ready queue is bounded: wait for room */
			rc = weft_post_wait(rt, &c->task);
		if (rc != 0) {
			fprintf(stderr, "echo_weft_waitfd: weft_post: %s\n", weft_strerror(rc));
			close(fd);
		}
	}
}
