/* echo_load: a closed-loop load generator for the echo servers of bench/io.
 *
 * N connections to 127.0.0.1:PORT, each with exactly one message of S bytes
 * in flight: a connection sends S bytes, waits until all S have come back
 * (checking them), and sends the next. One thread, one epoll set
 * (level-triggered: a connection is either waiting for its echo or, rarely,
 * for room to finish a send), TCP_NODELAY, optionally pinned to one CPU.
 * After a warm-up (its time, and two echoes back on every connection), every
 * echo completed inside the timed window counts, and
 * its latency (from the first byte sent to the last byte received) goes into
 * the percentiles.
 *
 * Output: one machine-readable line (run.sh parses it)
 *
 *   echo_load: conns=100 size=64 seconds=2.000 requests=512345 rps=256172.5 p50_us=380.1 p99_us=612.0 total=640000 server_cpu_us=3.712
 *
 * and one for people. Exit status: 0; 1 when a connection failed or an echo
 * came back wrong; 2 on a usage error; 3 when the descriptor limit
 * (RLIMIT_NOFILE, raised to its hard limit first) is too low for N
 * connections, said on stderr. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../bench_util.h"

typedef struct conn {
	int fd;
	unsigned seq;     /* the message number: its bytes say it, so a mixed-up echo shows */
	size_t sent, got; /* bytes of the current message sent and received */
	int64_t start_ns; /* when the current message's first byte was sent */
	bool want_out;    /* registered for EPOLLOUT (a send did not finish) */
} conn;

static size_t msg_size;
static unsigned char *rxbuf;

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The byte at offset i of message seq on connection id. */
static unsigned char pattern(int id, unsigned seq, size_t i)
{
	return (unsigned char)(id * 31 + seq * 7 + i);
}

static unsigned char *txbuf(int id, unsigned seq)
{
	static unsigned char *buf;
	if (!buf && !(buf = malloc(msg_size))) {
		fprintf(stderr, "echo_load: out of memory\n");
		exit(1);
	}
	for (size_t i = 0; i < msg_size; i++)
		buf[i] = pattern(id, seq, i);
	return buf;
}

/* Latencies of the timed window, in ns, growing as needed. */
static uint32_t *lat;
static size_t nlat, caplat;

static void record(int64_t ns)
{
	if (nlat == caplat) {
		caplat = caplat ? caplat * 2 : 1 << 20;
		lat = realloc(lat, caplat * sizeof(*lat));
		if (!lat) {
			fprintf(stderr, "echo_load: out of memory\n");
			exit(1);
		}
	}
	lat[nlat++] = ns > UINT32_MAX ? UINT32_MAX : (uint32_t)ns;
}

/* utime + stime of process pid, in clock ticks (all its threads), or -1. */
static long long proc_cpu_ticks(long pid)
{
	char path[64], line[1024];
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	size_t len = fread(line, 1, sizeof(line) - 1, f);
	fclose(f);
	line[len] = '\0';
	char *p = strrchr(line, ')'); /* the command may hold spaces and ')' */
	long long ut = -1, st = -1;
	for (int field = 2; p && field <= 15; field++) {
		if (field == 14)
			ut = strtoll(p, NULL, 10);
		if (field == 15)
			st = strtoll(p, NULL, 10);
		p = strchr(p + 1, ' ');
	}
	return ut < 0 || st < 0 ? -1 : ut + st;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

static int set_out(int ep, conn *c, int id, bool on)
{
	if (c->want_out == on)
		return 0;
	struct epoll_event ev = {.events = EPOLLIN | (on ? EPOLLOUT : 0), .data.u32 = (uint32_t)id};
	c->want_out = on;
	return epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
}

/* Sends what is left of the current message: 0, or -1 on an error. */
static int push(int ep, conn *c, int id)
{
	const unsigned char *b = txbuf(id, c->seq);
	while (c->sent < msg_size) {
		ssize_t n = send(c->fd, b + c->sent, msg_size - c->sent, MSG_NOSIGNAL);
		if (n > 0) {
			c->sent += (size_t)n;
		} else if (n < 0 && errno == EINTR) {
			continue;
		} else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			return set_out(ep, c, id, true);
		} else {
			return -1;
		}
	}
	return set_out(ep, c, id, false);
}

static int start_msg(int ep, conn *c, int id)
{
	c->seq++;
	c->sent = c->got = 0;
	c->start_ns = now_ns();
	return push(ep, c, id);
}

static int connect_one(int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_port = htons((unsigned short)port),
	                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	int one = 1;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* A blocking connect: on loopback it returns once the server's kernel
	 * queued the connection, whether or not the server accepted it yet. */
	for (int tries = 0; connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0; tries++) {
		if (errno == EINTR)
			continue;
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static const char usage[] =
        "usage: echo_load --port N [--connections N] [--size BYTES] [--warmup SECONDS]\n"
        "                 [--seconds SECONDS] [--cpu K] [--server-pid PID] [--perf-ctl FIFO]\n"
        "  --port N           the echo server's port on 127.0.0.1\n"
        "  --connections N    connections, one message in flight on each (default 100)\n"
        "  --size BYTES       message size (default 64)\n"
        "  --warmup SECONDS   echoes before the window, not counted (default 0.5; the\n"
        "                     window waits also for two echoes on every connection)\n"
        "  --seconds SECONDS  the timed window (default 2)\n"
        "  --cpu K            pin this process to CPU K\n"
        "  --server-pid PID   also measure that process's CPU time (utime + stime, all\n"
        "                     threads) over the window: server_cpu_us per request\n"
        "  --perf-ctl FIFO    write 'enable' and 'disable' to FIFO when the window opens\n"
        "                     and closes (perf stat --control fifo:FIFO --delay=-1)\n"
        "Prints 'echo_load: conns=.. size=.. seconds=.. requests=.. rps=.. p50_us=.. "
        "p99_us=..\n"
        "total=..' (total: echoes since the first send, warm-up included)\n"
        "and a line for people. Exit 3: the descriptor limit is too low for N.\n";

static bool parse_seconds(const char *s, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= 0) || v > 3600)
		return false;
	*out = v;
	return true;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {{"port", required_argument, NULL, 'p'},
	                                     {"connections", required_argument, NULL, 'c'},
	                                     {"size", required_argument, NULL, 's'},
	                                     {"warmup", required_argument, NULL, 'w'},
	                                     {"seconds", required_argument, NULL, 't'},
	                                     {"cpu", required_argument, NULL, 'k'},
	                                     {"server-pid", required_argument, NULL, 'P'},
	                                     {"perf-ctl", required_argument, NULL, 'C'},
	                                     {"help", no_argument, NULL, 'h'},
	                                     {"version", no_argument, NULL, BENCH_OPT_VERSION},
	                                     {NULL, 0, NULL, 0}};
	unsigned long long port = 0, nconn = 100, size = 64, cpu = 0, spid = 0;
	double warmup = 0.5, seconds = 2;
	bool pin = false;
	const char *perf_ctl = NULL;
	int c;
	cli_check_stdout_at_exit("echo_load");
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":p:c:s:w:t:k:P:C:h", opts, NULL)) != -1) {
		bool ok = true;
		const char *what = NULL;
		switch (c) {
		case 'p':
			what = "port";
			ok = cli_parse_u64(optarg, 1, 65535, &port);
			break;
		case 'c':
			what = "connections";
			ok = cli_parse_u64(optarg, 1, 1000000, &nconn);
			break;
		case 's':
			what = "size";
			ok = cli_parse_u64(optarg, 1, 1 << 20, &size);
			break;
		case 'w':
			what = "warmup";
			ok = parse_seconds(optarg, &warmup);
			break;
		case 't':
			what = "seconds";
			ok = parse_seconds(optarg, &seconds) && seconds > 0;
			break;
		case 'k':
			what = "cpu";
			ok = cli_parse_u64(optarg, 0, CPU_SETSIZE - 1, &cpu);
			pin = true;
			break;
		case 'C':
			what = "perf-ctl";
			perf_ctl = optarg;
			break;
		case 'P':
			what = "server-pid";
			ok = cli_parse_u64(optarg, 1, INT32_MAX, &spid) &&
			     proc_cpu_ticks((long)spid) >= 0;
			break;
		default:
			return bench_help_version_or_error("echo_load", c, argv, opts, usage);
		}
		if (!ok) {
			fprintf(stderr, "echo_load: bad value '%s' for --%s\n%s", optarg, what,
			        usage);
			return 2;
		}
	}
	if (optind < argc || port == 0) {
		fprintf(stderr, "echo_load: %s\n%s",
		        port == 0 ? "--port is required" : "unexpected argument", usage);
		return 2;
	}
	if (pin) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET((int)cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set) != 0) {
			fprintf(stderr, "echo_load: cannot pin to CPU %llu: %s\n", cpu,
			        strerror(errno));
			return 1;
		}
	}

	/* Every connection is a descriptor, plus a few of our own. */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < nconn + 16) {
		fprintf(stderr,
		        "echo_load: %llu connections need %llu descriptors; RLIMIT_NOFILE's hard "
		        "limit is %llu\n",
		        nconn, nconn + 16, (unsigned long long)rl.rlim_cur);
		return 3;
	}

	/* perf stat --control fifo:PATH --delay=-1 waits for "enable". */
	int ctl = -1;
	if (perf_ctl && (ctl = open(perf_ctl, O_WRONLY | O_CLOEXEC)) < 0) {
		fprintf(stderr, "echo_load: cannot open %s: %s\n", perf_ctl, strerror(errno));
		return 1;
	}
	msg_size = size;
	rxbuf = malloc(msg_size);
	conn *conns = calloc(nconn, sizeof(*conns));
	int ep = epoll_create1(EPOLL_CLOEXEC);
	if (!rxbuf || !conns || ep < 0) {
		fprintf(stderr, "echo_load: out of memory or descriptors\n");
		return 1;
	}
	for (unsigned long long i = 0; i < nconn; i++) {
		conns[i].fd = connect_one((int)port);
		if (conns[i].fd < 0) {
			fprintf(stderr, "echo_load: connection %llu of %llu to port %llu: %s\n",
			        i + 1, nconn, port, strerror(errno));
			return errno == EMFILE || errno == ENFILE ? 3 : 1;
		}
		struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
		if (epoll_ctl(ep, EPOLL_CTL_ADD, conns[i].fd, &ev) != 0) {
			perror("echo_load: epoll_ctl");
			return 1;
		}
	}
	for (unsigned long long i = 0; i < nconn; i++)
		if (start_msg(ep, &conns[i], (int)i) != 0) {
			perror("echo_load: send");
			return 1;
		}

	enum { EVENTS = 512 };
	struct epoll_event evs[EVENTS];
	int64_t t0 = now_ns();
	/* The window opens once the warm-up time has passed and every
	 * connection has had two echoes back (with 10,000 connections the
	 * first round is a burst that takes longer than the warm-up), or 60 s
	 * after the warm-up whatever the stragglers do. */
	int64_t warm_until = t0 + (int64_t)(warmup * 1e9);
	int64_t win_start = INT64_MAX, win_end = INT64_MAX;
	unsigned long long warm = 0;
	uint64_t requests = 0, total = 0;
	long long cpu0 = -1;
	int64_t now = t0, last_echo = t0;
	while (now < win_end) {
		int n = epoll_wait(ep, evs, EVENTS, 100);
		if (n < 0 && errno != EINTR) {
			perror("echo_load: epoll_wait");
			return 1;
		}
		for (int e = 0; e < n; e++) {
			int id = (int)evs[e].data.u32;
			conn *k = &conns[id];
			if ((evs[e].events & EPOLLOUT) && push(ep, k, id) != 0)
				goto conn_failed;
			if (!(evs[e].events & (EPOLLIN | EPOLLERR | EPOLLHUP)))
				continue;
			ssize_t got = recv(k->fd, rxbuf, msg_size - k->got, 0);
			if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
				continue;
			if (got <= 0) {
				if (got == 0)
					errno = 0;
				goto conn_failed;
			}
			for (ssize_t i = 0; i < got; i++)
				if (rxbuf[i] != pattern(id, k->seq, k->got + (size_t)i)) {
					fprintf(stderr,
					        "echo_load: connection %d: byte %zu of message %u "
					        "came back wrong\n",
					        id, k->got + (size_t)i, k->seq);
					return 1;
				}
			k->got += (size_t)got;
			if (k->got < msg_size)
				continue;
			if (k->sent < msg_size) {
				fprintf(stderr, "echo_load: connection %d: echo before the send\n",
				        id);
				return 1;
			}
			now = now_ns();
			last_echo = now;
			total++;
			warm += k->seq == 2;
			if (now >= win_start && now < win_end) {
				requests++;
				record(now - k->start_ns);
			}
			if (start_msg(ep, k, id) != 0)
				goto conn_failed;
			continue;
		conn_failed:
			fprintf(stderr, "echo_load: connection %d: %s\n", id,
			        errno ? strerror(errno) : "closed by the server");
			return 1;
		}
		now = now_ns();
		/* A closed loop never stops on its own: no echo for 10 s means a
		 * server that stopped answering (out of descriptors, hung). */
		if (now - last_echo > 10 * (int64_t)1000000000) {
			fprintf(stderr,
			        "echo_load: no echo for 10 s on %llu connections: the server "
			        "stopped answering\n",
			        nconn);
			return 1;
		}
		if (win_start == INT64_MAX && now >= warm_until &&
		    (warm == nconn || now >= warm_until + 60 * (int64_t)1000000000)) {
			if (warm < nconn)
				fprintf(stderr,
				        "echo_load: %llu of %llu connections had no second echo 60 "
				        "s "
				        "after the warm-up; timing anyway\n",
				        nconn - warm, nconn);
			win_start = now;
			win_end = now + (int64_t)(seconds * 1e9);
			if (spid)
				cpu0 = proc_cpu_ticks((long)spid);
			if (ctl >= 0 && write(ctl, "enable\n", 7) != 7)
				perror("echo_load: perf control");
		}
	}
	if (ctl >= 0) {
		if (write(ctl, "disable\n", 8) != 8)
			perror("echo_load: perf control");
		close(ctl);
	}
	double server_us = -1;
	if (spid) {
		long long cpu1 = proc_cpu_ticks((long)spid);
		if (cpu0 >= 0 && cpu1 >= 0 && requests)
			server_us = (double)(cpu1 - cpu0) * 1e6 / (double)sysconf(_SC_CLK_TCK) /
			            (double)requests;
	}

	double p50 = 0, p99 = 0;
	if (nlat) {
		qsort(lat, nlat, sizeof(*lat), cmp_u32);
		p50 = lat[nlat / 2] / 1e3;
		p99 = lat[(size_t)((double)nlat * 0.99)] / 1e3;
	}
	double rps = (double)requests / seconds;
	printf("echo_load: conns=%llu size=%llu seconds=%.3f requests=%llu rps=%.1f p50_us=%.1f "
	       "p99_us=%.1f total=%llu",
	       nconn, size, seconds, (unsigned long long)requests, rps, p50, p99,
	       (unsigned long long)total);
	if (spid)
		printf(" server_cpu_us=%.3f", server_us);
	printf("\n");
	printf("%llu connections x %llu bytes: %.0f requests/s, p50 %.1f us, p99 %.1f us "
	       "(%llu echoes in %.2f s)\n",
	       nconn, size, rps, p50, p99, (unsigned long long)requests, seconds);
	/* Reset, not closed: a closed connection would wait out TIME_WAIT here,
	 * and runs of 10,000 connections would soon use up the ephemeral ports. */
	struct linger lg = {.l_onoff = 1, .l_linger = 0};
	for (unsigned long long i = 0; i < nconn; i++) {
		(void)setsockopt(conns[i].fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		close(conns[i].fd);
	}
	close(ep);
	free(conns);
	free(rxbuf);
	free(lat);
	return 0;
}
