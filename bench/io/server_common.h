/* What the C echo servers of bench/io share: the command line (--port N,
 * --help, --version), the listening socket on 127.0.0.1 and the descriptor
 * limit. Header-only; each server is one program. */
#ifndef WEFT_BENCH_IO_SERVER_COMMON_H
#define WEFT_BENCH_IO_SERVER_COMMON_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../bench_util.h"

/* Parses argv: --port N (required), --help, --version. Returns the port,
 * or exits (0 after --help and --version, 2 on a usage error). usage is the
 * whole text --help prints. */
static inline int server_parse_port(const char *prog, int argc, char **argv, const char *usage)
{
	static const struct option opts[] = {{"port", required_argument, NULL, 'p'},
	                                     {"help", no_argument, NULL, 'h'},
	                                     {"version", no_argument, NULL, BENCH_OPT_VERSION},
	                                     {NULL, 0, NULL, 0}};
	unsigned long long port = 0;
	int c;
	cli_check_stdout_at_exit(prog);
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":p:h", opts, NULL)) != -1) {
		if (c == 'p') {
			if (!cli_parse_u64(optarg, 1, 65535, &port)) {
				fprintf(stderr, "%s: bad port '%s'\n%s", prog, optarg, usage);
				exit(2);
			}
			continue;
		}
		exit(bench_help_version_or_error(prog, c, argv, opts, usage));
	}
	if (optind < argc || port == 0) {
		fprintf(stderr, "%s: %s\n%s", prog,
		        port == 0 ? "--port is required" : "unexpected argument", usage);
		exit(2);
	}
	return (int)port;
}

/* Every connection is a descriptor: the soft limit raised to the hard. */
static inline void server_raise_fd_limit(void)
{
	struct rlimit r;
	if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
		r.rlim_cur = r.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &r);
	}
}

/* A non-blocking TCP socket listening on 127.0.0.1:port (SO_REUSEADDR, a
 * backlog of 4096), or exits with a message. */
static inline int server_listen(const char *prog, int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_port = htons((unsigned short)port),
	                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int one = 1;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
	    bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(fd, 4096) != 0) {
		fprintf(stderr, "%s: cannot listen on 127.0.0.1:%d: %s\n", prog, port,
		        strerror(errno));
		exit(1);
	}
	return fd;
}

/* A new connection: non-blocking, TCP_NODELAY (the load generator sets it
 * too; Go and Tokio servers set it, so every server answers at once). */
static inline void server_conn_setup(int fd)
{
	int one = 1;
	(void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

#endif
