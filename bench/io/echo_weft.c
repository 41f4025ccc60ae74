/* echo_weft: a TCP echo server on weft's I/O calls (weft/io.h), for the
 * echo benchmark beside Go's, Tokio's and a plain epoll loop.
 *
 *   echo_weft --port N [--timeout S]
 *                          listen on 127.0.0.1:N and echo every connection;
 *                          with --timeout, every call has a deadline S seconds
 *                          ahead, as docs/io.md's server has (30 there)
 *   echo_weft --help | --version
 *
 * The model and the workers come from WEFT_MODEL and WEFT_WORKERS (and the
 * rest of the WEFT_* variables). An acceptor task accepts, and every
 * connection is a task of its own that reads what comes (up to 4 KiB, as the Go and Tokio servers)
 * and writes it back: written as a user would write it from the header,
 * with nothing tuned for the benchmark. SIGTERM or SIGINT ends it: the
 * main thread cancels the listening socket and every connection
 * (weft_fd_cancel), waits for the tasks and exits 0. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <weft/weft.h>

#include "../bench_util.h"

#define PROG  "echo_weft"
#define CHUNK 1024 /* connection records per allocation */

typedef struct conn {
	weft_task task;
	int fd; /* -1 once closed; under conns_lock */
} conn;

/* Connection records: never freed while the server runs (a task's record
 * must outlive the task), reused once their task has finished. */
static pthread_mutex_t conns_lock = PTHREAD_MUTEX_INITIALIZER;
static conn **chunks;
static size_t nchunks, nconns;
static int stopping;
static int64_t timeout_ns; /* 0: no deadline (INT64_MAX) */

static int64_t deadline(void)
{
	return timeout_ns ? weft_clock_ns() + timeout_ns : INT64_MAX;
}

static void serve(void *arg)
{
	conn *c = arg;
	char buf[4096];
	for (;;) {
		int64_t until = deadline();
		ssize_t n = weft_recv(c->fd, buf, sizeof(buf), 0, until);
		if (n <= 0 || weft_write_all(c->fd, buf, (size_t)n, NULL, until) < 0)
			break;
	}
	pthread_mutex_lock(&conns_lock);
	weft_close(c->fd);
	c->fd = -1;
	pthread_mutex_unlock(&conns_lock);
}

/* A record for a new connection: a finished one, or a new one. */
static conn *conn_for(int fd)
{
	pthread_mutex_lock(&conns_lock);
	conn *c = NULL;
	for (size_t i = 0; i < nconns && !c; i++) {
		conn *x = &chunks[i / CHUNK][i % CHUNK];
		if (x->fd < 0 && weft_task_state_of(&x->task) == WEFT_TASK_DONE)
			c = x;
	}
	if (!c && nconns == nchunks * CHUNK) {
		conn **more = realloc(chunks, (nchunks + 1) * sizeof(*chunks));
		conn *chunk = more ? calloc(CHUNK, sizeof(conn)) : NULL;
		if (more)
			chunks = more;
		if (chunk)
			chunks[nchunks++] = chunk;
	}
	if (!c && nconns < nchunks * CHUNK) {
		c = &chunks[nconns / CHUNK][nconns % CHUNK];
		nconns++;
	}
	if (c)
		c->fd = stopping ? -1 : fd;
	pthread_mutex_unlock(&conns_lock);
	return c && c->fd >= 0 ? c : NULL;
}

static int lfd = -1;
static weft_rt *rt;

static void acceptor(void *arg)
{
	(void)arg;
	for (;;) {
		int fd = weft_accept(lfd, NULL, NULL, SOCK_CLOEXEC, INT64_MAX);
		if (fd < 0) {
			if (fd == WEFT_ESYSTEM && errno != EMFILE && errno != ENFILE &&
			    errno != ENOMEM && errno != ENOBUFS)
				continue; /* ECONNABORTED and the like: that connection only */
			if (fd == WEFT_ESYSTEM) {
				weft_sleep_ns(1000000); /* out of fds: let connections end */
				continue;
			}
			return; /* cancelled: stopping */
		}
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		conn *c = conn_for(fd);
		if (!c) {
			weft_close(fd);
			continue;
		}
		weft_task_init(&c->task, serve, c);
		if (weft_post(rt, &c->task) != 0) {
			pthread_mutex_lock(&conns_lock);
			weft_close(c->fd);
			c->fd = -1;
			pthread_mutex_unlock(&conns_lock);
		}
	}
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {{"port", required_argument, NULL, 'p'},
	                                     {"timeout", required_argument, NULL, 't'},
	                                     {"help", no_argument, NULL, 'h'},
	                                     {"version", no_argument, NULL, BENCH_OPT_VERSION},
	                                     {NULL, 0, NULL, 0}};
	const char *usage = "usage: " PROG " --port N [--timeout S]\n"
	                    "       " PROG " --help | --version\n"
	                    "A TCP echo server on weft's I/O calls, listening on 127.0.0.1:N;\n"
	                    "the model and workers come from WEFT_MODEL and WEFT_WORKERS.\n"
	                    "--timeout S gives every call a deadline S seconds ahead (1 to\n"
	                    "3600), as the server of docs/io.md does; default none.\n"
	                    "SIGTERM or SIGINT ends it (status 0).\n";
	unsigned long long port = 0;
	bool have_port = false;
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		if (c == 'p') {
			if (!cli_parse_u64(optarg, 1, 65535, &port)) {
				fprintf(stderr,
				        "%s: --port wants a number from 1 to 65535, not '%s'\n",
				        PROG, optarg);
				return 2;
			}
			have_port = true;
			continue;
		}
		if (c == 't') {
			unsigned long long s;
			if (!cli_parse_u64(optarg, 1, 3600, &s)) {
				fprintf(stderr,
				        "%s: --timeout wants seconds from 1 to 3600, not '%s'\n",
				        PROG, optarg);
				return 2;
			}
			timeout_ns = (int64_t)s * 1000000000;
			continue;
		}
		return bench_help_version_or_error(PROG, c, argv, opts, usage);
	}
	if (!have_port || optind != argc) {
		fputs(usage, stderr);
		return 2;
	}
	struct rlimit r;
	if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
		r.rlim_cur = r.rlim_max; /* a descriptor per connection */
		setrlimit(RLIMIT_NOFILE, &r);
	}
	/* The signals go to the main thread's sigwait only: blocked before
	 * any worker exists, so every worker inherits the mask. */
	sigset_t stop;
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);

	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_port = htons((unsigned short)port),
	                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int one = 1;
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
	    bind(lfd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(lfd, 4096) != 0) {
		fprintf(stderr, "%s: cannot listen on 127.0.0.1:%llu: %s\n", PROG, port,
		        strerror(errno));
		return 1;
	}
	weft_config cfg;
	weft_config_init(&cfg);
	int rc = weft_rt_create(&rt, &cfg);
	if (rc != 0) {
		fprintf(stderr, "%s: weft_rt_create: %s\n", PROG, weft_strerror(rc));
		return 1;
	}
	weft_task acc;
	weft_task_init(&acc, acceptor, NULL);
	if ((rc = weft_post(rt, &acc)) != 0) {
		fprintf(stderr, "%s: weft_post: %s\n", PROG, weft_strerror(rc));
		return 1;
	}
	int sig;
	while (sigwait(&stop, &sig) != 0)
		;
	pthread_mutex_lock(&conns_lock);
	stopping = 1;
	for (size_t i = 0; i < nconns; i++) {
		conn *x = &chunks[i / CHUNK][i % CHUNK];
		if (x->fd >= 0)
			weft_fd_cancel(x->fd);
	}
	pthread_mutex_unlock(&conns_lock);
	weft_fd_cancel(lfd);
	weft_wait_all(rt);
	weft_rt_destroy(rt);
	weft_close(lfd);
	for (size_t i = 0; i < nchunks; i++)
		free(chunks[i]);
	free(chunks);
	return 0;
}
