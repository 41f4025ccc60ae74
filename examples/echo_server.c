/* echo_server: a TCP echo server, one task per connection.
 *
 *   echo_server PORT_FILE CONNECTIONS
 *
 * Listens on 127.0.0.1 (a port the kernel picks, written to PORT_FILE),
 * serves CONNECTIONS connections, then waits for them to finish and exits.
 * Each connection is a task that reads and writes with non-blocking
 * sockets and weft_wait_fd: under WEFT_MODEL=mn (or fibers) a waiting
 * connection is a parked fiber, a few hundred bytes of state in the
 * worker's epoll set, so a handful of workers hold thousands of
 * connections open at once. Under threads a connection holds a worker
 * while it waits, so connections are served WEFT_WORKERS at a time.
 * echo_client is the other side; examples/echo_test.sh runs both. */
#define _POSIX_C_SOURCE 200809L
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "net.h"

typedef struct conn {
	weft_task task; /* must stay alive until the task finished: see main */
	int fd;
} conn;

static atomic_long echoed; /* bytes, over every connection */

static void serve(void *arg)
{
	conn *c = arg;
	char buf[4096];
	ptrdiff_t n;
	while ((n = net_read(c->fd, buf, sizeof(buf))) > 0) {
		if (net_write_all(c->fd, buf, (size_t)n) != 0)
			break;
		atomic_fetch_add(&echoed, (long)n);
	}
	close(c->fd);
}

int main(int argc, char **argv)
{
	if (argc != 3 || atoi(argv[2]) <= 0) {
		fprintf(stderr, "usage: echo_server PORT_FILE CONNECTIONS\n");
		return 2;
	}
	int max = atoi(argv[2]), port;
	net_raise_fd_limit();
	int lfd = net_listen(&port);
	/* One record per connection, freed after weft_wait_all: a task's
	 * memory may not be released from inside its own function. */
	conn *conns = calloc((size_t)max, sizeof(*conns));
	weft_rt *rt;
	if (lfd < 0 || !conns || weft_rt_create(&rt, NULL) != 0)
		return 1;

	/* Publish the port atomically: write a temporary file, rename it. */
	char tmp[4096];
	snprintf(tmp, sizeof(tmp), "%s.tmp", argv[1]);
	FILE *f = fopen(tmp, "w");
	if (!f || fprintf(f, "%d\n", port) < 0 || fclose(f) != 0 || rename(tmp, argv[1]) != 0)
		return 1;

	/* The main thread accepts (it is not one of the workers, so it never
	 * takes a worker away from the connections). */
	for (int i = 0; i < max; i++) {
		conns[i].fd = net_accept(lfd);
		if (conns[i].fd < 0) {
			perror("accept");
			return 1;
		}
		weft_task_init(&conns[i].task, serve, &conns[i]);
		if (weft_post(rt, &conns[i].task) != 0)
			return 1;
	}
	weft_wait_all(rt);
	printf("echo_server: served %d connections\n", max);
	fprintf(stderr, "echo_server: echoed %ld bytes\n", atomic_load(&echoed));
	close(lfd);
	free(conns);
	return weft_rt_destroy(rt) == 0 ? 0 : 1;
}
