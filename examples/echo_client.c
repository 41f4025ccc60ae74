/* echo_client: opens many connections to echo_server at once, one task
 * each, sends a line on each and checks that the same line comes back.
 *
 *   echo_client PORT CONNECTIONS
 *
 * Under WEFT_MODEL=mn or fibers every connection's task parks in
 * weft_wait_fd while the server answers, so all of them are open at the
 * same time; under threads, WEFT_WORKERS of them are. */
#define _POSIX_C_SOURCE 200809L
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "net.h"

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
	int fd = net_connect(c->port);
	if (fd < 0)
		return;
	size_t got = 0;
	if (net_write_all(fd, line, (size_t)len) == 0) {
		ptrdiff_t n;
		while (got < (size_t)len && (n = net_read(fd, back + got, sizeof(back) - got)) > 0)
			got += (size_t)n;
	}
	close(fd); /* the server sees end of stream and finishes this connection */
	if (got == (size_t)len && memcmp(line, back, (size_t)len) == 0)
		atomic_fetch_add(&matched, 1);
}

int main(int argc, char **argv)
{
	if (argc != 3 || atoi(argv[1]) <= 0 || atoi(argv[2]) <= 0) {
		fprintf(stderr, "usage: echo_client PORT CONNECTIONS\n");
		return 2;
	}
	int port = atoi(argv[1]), n = atoi(argv[2]);
	net_raise_fd_limit();
	client *clients = calloc((size_t)n, sizeof(*clients));
	weft_rt *rt;
	if (!clients || weft_rt_create(&rt, NULL) != 0)
		return 1;
	for (int i = 0; i < n; i++) {
		clients[i].port = port;
		clients[i].id = i;
		weft_task_init(&clients[i].task, talk, &clients[i]);
		if (weft_post(rt, &clients[i].task) != 0)
			return 1;
	}
	weft_wait_all(rt);
	printf("echo_client: %d connections, %d echoes matched\n", n, atomic_load(&matched));
	free(clients);
	return weft_rt_destroy(rt) == 0 && matched == n ? 0 : 1;
}
