/* acceptor_share: does an M:N server spread its connections over its
 * workers? The bar of issue 25: "on mn with 2 workers, an acceptor task that
 * accepts 100 long-lived connections: both workers' threads each use at
 * least 30% of the server's CPU time under load".
 *
 * The server is a weft runtime (mn, 2 workers, unless WEFT_MODEL and
 * WEFT_WORKERS say otherwise) whose one acceptor *task* accepts connections
 * and posts a task per connection, each echoing until end of stream, written
 * on today's weft_wait_fd (non-blocking sockets, as examples/net.h). The
 * load is echo_load (--load PATH; default: echo_load beside this program),
 * started as a child with N connections. After the load's warm-up this
 * program reads every thread's CPU time (utime + stime, /proc/self/task/
 * TID/stat, where weft's workers are named weft-<model>-<index>), again when
 * the load has finished, and prints each thread's share of the process's CPU
 * time over that window. While a fiber stays on the worker that started it,
 * every connection task lives where the acceptor's worker first ran it (or
 * where a thief took it before it started).
 *
 * Exit status: 0 (whether the bar is met or not: this measures), 1 when
 * the load or the server failed, 2 on a usage error. */
#define _GNU_SOURCE
#include <dirent.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <time.h>

#include "server_common.h"

static const char usage[] =
        "usage: acceptor_share [--load PATH] [--connections N] [--size BYTES] [--seconds S]\n"
        "                      [--warmup S] [--load-cpu K]\n"
        "An mn server with 2 workers (WEFT_MODEL, WEFT_WORKERS override) whose acceptor\n"
        "task posts a task per connection, driven by echo_load; prints each worker's\n"
        "share of the server's CPU time.\n"
        "  --load PATH        echo_load (default: the one beside this program)\n"
        "  --connections N    default 100\n"
        "  --size BYTES       default 64\n"
        "  --seconds S        the load's timed window (default 2)\n"
        "  --warmup S         the load's warm-up, not measured (default 0.5)\n"
        "  --load-cpu K       pin the load to CPU K\n";

typedef struct conn {
	weft_task task;
	int fd;
	struct conn *next; /* the acceptor's list, freed after weft_wait_all */
} conn;

static int lfd;
static atomic_bool stop;
static conn *conns; /* written by the acceptor task only; read after it ended */
static atomic_int failures;

static void serve(void *arg)
{
	conn *c = arg;
	char buf[4096];
	for (;;) {
		ssize_t n = read(c->fd, buf, sizeof(buf));
		if (n == 0)
			break;
		if (n < 0) {
			if (errno != EAGAIN && errno != EINTR)
				break;
			if (weft_wait_fd(c->fd, POLLIN, -1) < 0)
				break;
			continue;
		}
		for (ssize_t off = 0; off < n;) {
			ssize_t put = send(c->fd, buf + off, (size_t)(n - off), MSG_NOSIGNAL);
			if (put > 0)
				off += put;
			else if (put < 0 && errno != EAGAIN && errno != EINTR)
				goto done;
			else if (weft_wait_fd(c->fd, POLLOUT, -1) < 0)
				goto done;
		}
	}
done:
	close(c->fd);
}

/* The acceptor: a task, so that under mn its posts are a worker's own
 * (its deque), as in a server whose main task accepts. */
static void acceptor(void *arg)
{
	(void)arg;
	weft_rt *rt = weft_rt_current();
	while (!atomic_load(&stop)) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) {
				fprintf(stderr, "acceptor_share: accept: %s\n", strerror(errno));
				atomic_fetch_add(&failures, 1);
				return;
			}
			(void)weft_wait_fd(lfd, POLLIN, 50000000); /* 50 ms: see stop */
			continue;
		}
		server_conn_setup(fd);
		conn *c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		c->fd = fd;
		c->next = conns;
		conns = c;
		weft_task_init(&c->task, serve, c);
		int rc = weft_post(rt, &c->task);
		if (rc != 0) {
			fprintf(stderr, "acceptor_share: weft_post: %s\n", weft_strerror(rc));
			close(fd);
			atomic_fetch_add(&failures, 1);
			c->fd = -1;
		}
	}
}

enum { MAX_THREADS = 64 };

typedef struct sample {
	int n;
	long tid[MAX_THREADS];
	char name[MAX_THREADS][20];
	unsigned long long ticks[MAX_THREADS]; /* utime + stime */
} sample;

/* Every thread of this process: its name and CPU ticks. */
static void take_sample(sample *s)
{
	s->n = 0;
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d)) && s->n < MAX_THREADS) {
		if (e->d_name[0] == '.')
			continue;
		char path[300], line[1024];
		snprintf(path, sizeof(path), "/proc/self/task/%s/stat", e->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		size_t len = fread(line, 1, sizeof(line) - 1, f);
		fclose(f);
		line[len] = '\0';
		char *open = strchr(line, '('), *close_ = strrchr(line, ')');
		if (!open || !close_)
			continue;
		int i = s->n;
		size_t nl = (size_t)(close_ - open - 1);
		if (nl >= sizeof(s->name[i]))
			nl = sizeof(s->name[i]) - 1;
		memcpy(s->name[i], open + 1, nl);
		s->name[i][nl] = '\0';
		/* After ')': state (field 3) ... utime (14), stime (15). */
		char *p = close_ + 2;
		unsigned long long ut = 0, st = 0;
		for (int field = 3; field <= 15 && p; field++) {
			if (field == 14)
				ut = strtoull(p, NULL, 10);
			if (field == 15)
				st = strtoull(p, NULL, 10);
			p = strchr(p, ' ');
			if (p)
				p++;
		}
		s->tid[i] = atol(e->d_name);
		s->ticks[i] = ut + st;
		s->n++;
	}
	closedir(d);
}

static void sleep_s(double s)
{
	struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
	}
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {{"load", required_argument, NULL, 'l'},
	                                     {"connections", required_argument, NULL, 'c'},
	                                     {"size", required_argument, NULL, 's'},
	                                     {"seconds", required_argument, NULL, 't'},
	                                     {"warmup", required_argument, NULL, 'w'},
	                                     {"load-cpu", required_argument, NULL, 'k'},
	                                     {"help", no_argument, NULL, 'h'},
	                                     {"version", no_argument, NULL, BENCH_OPT_VERSION},
	                                     {NULL, 0, NULL, 0}};
	char load[PATH_MAX] = "";
	const char *conns_arg = "100", *size_arg = "64", *secs_arg = "2", *warm_arg = "0.5";
	const char *cpu_arg = NULL;
	unsigned long long tmp;
	double warmup;
	int c;
	cli_check_stdout_at_exit("acceptor_share");
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":l:c:s:t:w:k:h", opts, NULL)) != -1) {
		switch (c) {
		case 'l':
			snprintf(load, sizeof(load), "%s", optarg);
			break;
		case 'c':
			conns_arg = optarg;
			break;
		case 's':
			size_arg = optarg;
			break;
		case 't':
			secs_arg = optarg;
			break;
		case 'w':
			warm_arg = optarg;
			break;
		case 'k':
			cpu_arg = optarg;
			break;
		default:
			return bench_help_version_or_error("acceptor_share", c, argv, opts, usage);
		}
	}
	char *end;
	warmup = strtod(warm_arg, &end);
	if (optind < argc || !cli_parse_u64(conns_arg, 1, 100000, &tmp) || *end ||
	    !(warmup >= 0 && warmup < 3600)) {
		fprintf(stderr, "acceptor_share: bad arguments\n%s", usage);
		return 2;
	}
	if (!load[0]) { /* echo_load beside this program */
		ssize_t n = readlink("/proc/self/exe", load, sizeof(load) - 16);
		if (n <= 0) {
			fprintf(stderr, "acceptor_share: give --load PATH\n");
			return 2;
		}
		load[n] = '\0';
		char *slash = strrchr(load, '/');
		strcpy(slash ? slash + 1 : load, "echo_load");
	}

	server_raise_fd_limit();
	/* Port 0: the kernel picks one, told to the load. */
	lfd = server_listen("acceptor_share", 0);
	struct sockaddr_in a;
	socklen_t alen = sizeof(a);
	if (getsockname(lfd, (struct sockaddr *)&a, &alen) != 0) {
		perror("acceptor_share: getsockname");
		return 1;
	}
	char port[16];
	snprintf(port, sizeof(port), "%d", ntohs(a.sin_port));

	weft_config cfg;
	weft_config_init(&cfg);
	cfg.model = WEFT_MODEL_MN;
	cfg.workers = 2;
	weft_rt *rt;
	int rc = weft_rt_create(&rt, &cfg);
	if (rc != 0) {
		fprintf(stderr, "acceptor_share: weft_rt_create: %s\n", weft_strerror(rc));
		return 1;
	}
	weft_task acc;
	weft_task_init(&acc, acceptor, NULL);
	if ((rc = weft_post(rt, &acc)) != 0) {
		fprintf(stderr, "acceptor_share: weft_post: %s\n", weft_strerror(rc));
		return 1;
	}

	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		char *args[16];
		int n = 0;
		args[n++] = load;
		args[n++] = "--port";
		args[n++] = port;
		args[n++] = "--connections";
		args[n++] = (char *)conns_arg;
		args[n++] = "--size";
		args[n++] = (char *)size_arg;
		args[n++] = "--seconds";
		args[n++] = (char *)secs_arg;
		args[n++] = "--warmup";
		args[n++] = (char *)warm_arg;
		if (cpu_arg) {
			args[n++] = "--cpu";
			args[n++] = (char *)cpu_arg;
		}
		args[n] = NULL;
		execv(load, args);
		fprintf(stderr, "acceptor_share: cannot run %s: %s\n", load, strerror(errno));
		_exit(127);
	}
	if (pid < 0) {
		perror("acceptor_share: fork");
		return 1;
	}
	/* The window: from the end of the load's warm-up (connecting 100
	 * sockets takes well under its 0.5 s) to the load's exit. */
	static sample before, after;
	sleep_s(warmup);
	take_sample(&before);
	int status;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
	}
	take_sample(&after);

	atomic_store(&stop, true);
	weft_wait_all(rt); /* the acceptor sees stop; the load closed every connection */
	int fails = atomic_load(&failures);
	int nconns = 0;
	while (conns) {
		conn *next = conns->next;
		free(conns);
		conns = next;
		nconns++;
	}
	close(lfd);
	if (weft_rt_destroy(rt) != 0)
		fails++;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "acceptor_share: the load failed (status %d)\n",
		        WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		return 1;
	}

	unsigned long long total = 0, d[MAX_THREADS];
	for (int i = 0; i < after.n; i++) {
		d[i] = after.ticks[i];
		for (int j = 0; j < before.n; j++)
			if (before.tid[j] == after.tid[i])
				d[i] -= before.ticks[j];
		total += d[i];
	}
	long hz = sysconf(_SC_CLK_TCK);
	printf("acceptor_share: %d connections accepted by one task on %s, %s workers; CPU time "
	       "of the server's threads over the load's window (%.2f s in all):\n",
	       nconns, getenv("WEFT_MODEL") ? getenv("WEFT_MODEL") : "mn",
	       getenv("WEFT_WORKERS") ? getenv("WEFT_WORKERS") : "2", (double)total / (double)hz);
	bool met = true;
	int workers = 0;
	for (int i = 0; i < after.n; i++) {
		double share = total ? 100.0 * (double)d[i] / (double)total : 0;
		printf("%-16s %5.1f%%  %.2f s\n", after.name[i], share, (double)d[i] / (double)hz);
		if (strncmp(after.name[i], "weft-", 5) == 0 &&
		    strcmp(after.name[i], "weft-timer")) {
			workers++;
			if (share < 30)
				met = false;
		}
	}
	printf("bar (each of %d worker threads >= 30%% of the server's CPU): %s\n", workers,
	       workers >= 2 && met ? "met" : "not met");
	return fails ? 1 : 0;
}
