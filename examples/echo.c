/* echo: a TCP echo server with a task per connection, and a client that
 * opens thousands of connections at once.
 *
 *   echo server PORT_FILE CONNECTIONS   serve CONNECTIONS connections on a
 *                                       port the kernel picks (written to
 *                                       PORT_FILE), then exit
 *   echo client PORT CONNECTIONS        open CONNECTIONS connections at
 *                                       once, send a line on each, check
 *                                       the echo
 *   echo                                both, in one process, 1000 connections
 *
 * Every read, write, accept and connect is a call of weft/io.h (weft_recv,
 * weft_write_all, weft_accept, weft_connect). Under WEFT_MODEL=mn (or fibers) a waiting
 * connection is a parked fiber, a few hundred bytes of state in its
 * worker's epoll set, so a handful of workers hold thousands of
 * connections open at once. Under threads a connection holds a worker
 * while it waits, so connections are served WEFT_WORKERS at a time.
 * echo_test.sh runs a server and a client as two processes. */
#define _POSIX_C_SOURCE 200809L
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#include <weft/weft.h>

/* Every connection is a descriptor: allow as many as the hard limit does. */
static void raise_fd_limit(void)
{
	struct rlimit r;
	if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
		r.rlim_cur = r.rlim_max;
		setrlimit(RLIMIT_NOFILE, &r);
	}
}

/* A TCP socket listening on 127.0.0.1, on a port the kernel picks (in
 * *port); -1 on failure. weft's calls make it non-blocking on first use. */
static int listen_local(int *port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(fd, 4096) != 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
		close(fd);
		return -1;
	}
	*port = ntohs(a.sin_port);
	return fd;
}

/* A socket connected to 127.0.0.1:port (weft_connect waits for the
 * handshake), or -1. */
static int connect_local(int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_port = htons((unsigned short)port),
	                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && weft_connect(fd, (struct sockaddr *)&a, sizeof(a), INT64_MAX) != 0) {
		weft_close(fd);
		fd = -1;
	}
	return fd;
}

/* ------------------------------------------------------------- the server */

typedef struct conn {
	weft_task task; /* must stay alive until the task finished: see serve_all */
	int fd;
} conn;

static void serve(void *arg)
{
	conn *c = arg;
	char buf[4096];
	ssize_t n;
	while ((n = weft_recv(c->fd, buf, sizeof(buf), 0, INT64_MAX)) > 0)
		if (weft_write_all(c->fd, buf, (size_t)n, NULL, INT64_MAX) < 0)
			break;
	weft_close(c->fd);
}

/* Accepts n connections on lfd, a task each on rt, and waits for them. The
 * calling thread accepts: it is not one of the workers, so it never takes
 * a worker away from the connections. */
static int serve_all(weft_rt *rt, int lfd, int n)
{
	/* One record per connection, freed after weft_wait_all: a task's
	 * memory may not be released from inside its own function. */
	conn *conns = calloc((size_t)n, sizeof(*conns));
	if (!conns)
		return -1;
	for (int i = 0; i < n; i++) {
		conns[i].fd = weft_accept(lfd, NULL, NULL, SOCK_CLOEXEC, INT64_MAX);
		if (conns[i].fd < 0) {
			perror("accept");
			exit(1);
		}
		weft_task_init(&conns[i].task, serve, &conns[i]);
		if (weft_post(rt, &conns[i].task) != 0)
			exit(1);
	}
	weft_wait_all(rt);
	free(conns);
	printf("echo server: served %d connections\n", n);
	return 0;
}

/* ------------------------------------------------------------- the client */

typedef struct client {
	weft_task task;
	int port, id;
} client;

static atomic_int matched;

static void talk(void *arg)
{
	client *c = arg;
	char line[64], back[64];
	int len = snprintf(line, sizeof(line), "hello from connection %d\n", c->id);
	int fd = connect_local(c->port);
	if (fd < 0)
		return;
	size_t got = 0;
	/* A deadline as a real client would have one: 30 s for the round trip. */
	int64_t deadline = weft_clock_ns() + 30 * 1000000000LL;
	if (weft_write_all(fd, line, (size_t)len, NULL, deadline) == len)
		weft_read_all(fd, back, (size_t)len, &got, deadline);
	weft_close(fd); /* the server sees end of stream and finishes this connection */
	if (got == (size_t)len && memcmp(line, back, (size_t)len) == 0)
		atomic_fetch_add(&matched, 1);
}

/* Posts n connections to port on rt. *out receives the records, to free
 * after the client's tasks finished. */
static int connect_all(weft_rt *rt, int port, int n, client **out)
{
	client *clients = calloc((size_t)n, sizeof(*clients));
	if (!clients)
		return -1;
	for (int i = 0; i < n; i++) {
		clients[i].port = port;
		clients[i].id = i;
		weft_task_init(&clients[i].task, talk, &clients[i]);
		if (weft_post(rt, &clients[i].task) != 0)
			return -1;
	}
	*out = clients;
	return 0;
}

static int client_report(int n)
{
	printf("echo client: %d connections, %d echoes matched\n", n, atomic_load(&matched));
	return atomic_load(&matched) == n ? 0 : 1;
}

/* ------------------------------------------------------------------- main */

static int usage(void)
{
	fprintf(stderr, "usage: echo server PORT_FILE CONNECTIONS | echo client PORT "
	                "CONNECTIONS | echo\n");
	return 2;
}

int main(int argc, char **argv)
{
	weft_rt *rt;
	client *clients = NULL;
	int port, rc = 0;
	raise_fd_limit(); /* every connection is a descriptor */

	if (argc == 4 && strcmp(argv[1], "server") == 0 && atoi(argv[3]) > 0) {
		int lfd = listen_local(&port);
		if (lfd < 0 || weft_rt_create(&rt, NULL) != 0)
			return 1;
		/* Publish the port atomically: write a temporary file, rename it. */
		char tmp[4096];
		snprintf(tmp, sizeof(tmp), "%s.tmp", argv[2]);
		FILE *f = fopen(tmp, "w");
		if (!f || fprintf(f, "%d\n", port) < 0 || fclose(f) != 0 ||
		    rename(tmp, argv[2]) != 0)
			return 1;
		rc = serve_all(rt, lfd, atoi(argv[3])) != 0;
		weft_close(lfd);
	} else if (argc == 4 && strcmp(argv[1], "client") == 0 && atoi(argv[2]) > 0 &&
	           atoi(argv[3]) > 0) {
		int n = atoi(argv[3]);
		if (weft_rt_create(&rt, NULL) != 0 ||
		    connect_all(rt, atoi(argv[2]), n, &clients) != 0)
			return 1;
		weft_wait_all(rt);
		rc = client_report(n);
	} else if (argc == 1) {
		/* Both sides in one process: the clients are tasks of a second
		 * runtime (runtimes are independent), the server's accept loop is
		 * the main thread. */
		enum { N = 1000 };
		weft_rt *client_rt;
		int lfd = listen_local(&port);
		if (lfd < 0 || weft_rt_create(&rt, NULL) != 0 ||
		    weft_rt_create(&client_rt, NULL) != 0 ||
		    connect_all(client_rt, port, N, &clients) != 0)
			return 1;
		rc = serve_all(rt, lfd, N) != 0;
		weft_wait_all(client_rt);
		rc |= client_report(N);
		rc |= weft_rt_destroy(client_rt) != 0;
		weft_close(lfd);
	} else {
		return usage();
	}
	free(clients);
	return weft_rt_destroy(rt) == 0 ? rc : 1;
}
