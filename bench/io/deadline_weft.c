/* deadline_weft: how late a recv deadline fires on weft while many idle
 * connections are parked on the same worker.
 *
 *   deadline_weft [--idle N] [--samples M] [--wait-us U]
 *   deadline_weft --help | --version
 *
 * N tasks (default 10,000) each park in weft_recv on a UDP socket of their
 * own that never receives (one descriptor each), then one task makes M
 * (default 2,000) weft_recv calls with a deadline U µs ahead (default
 * 1,000) on another silent socket and records how late each returned
 * WEFT_ETIMEDOUT. Prints p50, p99 and the worst lateness in µs. The model
 * (fibers or mn: under threads an idle task would hold a worker) and the
 * workers come from WEFT_MODEL and WEFT_WORKERS. A measurement, not a
 * test: this machine's noise decides the tail. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <getopt.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <weft/weft.h>

#include "../bench_util.h"

#define PROG "deadline_weft"

static int udp_socket(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

typedef struct idle {
	weft_task task;
	int fd;
} idle;

static void park_idle(void *arg)
{
	idle *i = arg;
	char b[16];
	weft_recv(i->fd, b, sizeof(b), 0, INT64_MAX); /* until cancelled */
}

typedef struct measure {
	weft_task task;
	int samples;
	int64_t wait_ns;
	double *late_us;
	int bad;
} measure;

static void measure_fn(void *arg)
{
	measure *m = arg;
	int fd = udp_socket();
	char b[16];
	for (int i = 0; i < m->samples; i++) {
		int64_t deadline = weft_clock_ns() + m->wait_ns;
		ssize_t rc = weft_recv(fd, b, sizeof(b), 0, deadline);
		int64_t now = weft_clock_ns();
		if (rc != WEFT_ETIMEDOUT)
			m->bad++;
		m->late_us[i] = (double)(now - deadline) / 1000.0;
	}
	weft_close(fd);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {{"idle", required_argument, NULL, 'n'},
	                                     {"samples", required_argument, NULL, 's'},
	                                     {"wait-us", required_argument, NULL, 'w'},
	                                     {"help", no_argument, NULL, 'h'},
	                                     {"version", no_argument, NULL, BENCH_OPT_VERSION},
	                                     {NULL, 0, NULL, 0}};
	const char *usage = "usage: " PROG " [--idle N] [--samples M] [--wait-us U]\n"
	                    "       " PROG " --help | --version\n"
	                    "How late a weft_recv deadline fires with N idle connections parked.\n";
	unsigned long long n = 10000, samples = 2000, wait_us = 1000;
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		unsigned long long *dst = c == 'n'   ? &n
		                          : c == 's' ? &samples
		                          : c == 'w' ? &wait_us
		                                     : NULL;
		if (dst) {
			if (!cli_parse_u64(optarg, c == 'n' ? 0 : 1, 1000000, dst)) {
				fprintf(stderr, "%s: bad number '%s'\n", PROG, optarg);
				return 2;
			}
			continue;
		}
		return bench_help_version_or_error(PROG, c, argv, opts, usage);
	}
	struct rlimit r;
	if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
		r.rlim_cur = r.rlim_max;
		setrlimit(RLIMIT_NOFILE, &r);
	}
	weft_rt *rt;
	int rc = weft_rt_create(&rt, NULL);
	if (rc != 0) {
		fprintf(stderr, "%s: weft_rt_create: %s\n", PROG, weft_strerror(rc));
		return 1;
	}
	weft_config cfg;
	weft_rt_config(rt, &cfg);
	if (cfg.model == WEFT_MODEL_THREADS || cfg.model == WEFT_MODEL_SPAWN) {
		/* Every idle task would hold a kernel thread for ever. */
		fprintf(stderr, "%s: needs a fiber model (WEFT_MODEL=fibers or mn), not %s\n", PROG,
		        weft_model_name(cfg.model));
		weft_rt_destroy(rt);
		return 2;
	}
	idle *idles = calloc(n ? n : 1, sizeof(*idles));
	double *late = calloc(samples, sizeof(*late));
	if (!idles || !late)
		return 1;
	for (size_t i = 0; i < n; i++) {
		idles[i].fd = udp_socket();
		if (idles[i].fd < 0) {
			fprintf(stderr, "%s: socket %zu: %s (raise ulimit -n)\n", PROG, i,
			        strerror(errno));
			return 1;
		}
		weft_task_init(&idles[i].task, park_idle, &idles[i]);
		if (weft_post(rt, &idles[i].task) != 0)
			return 1;
	}
	weft_sleep_ns(200 * 1000000LL); /* let every idle task park */
	measure m = {.samples = (int)samples, .wait_ns = (int64_t)wait_us * 1000, .late_us = late};
	weft_task_init(&m.task, measure_fn, &m);
	if (weft_post(rt, &m.task) != 0 || weft_wait(&m.task) != 0)
		return 1;
	for (size_t i = 0; i < n; i++)
		weft_fd_cancel(idles[i].fd);
	weft_wait_all(rt);
	for (size_t i = 0; i < n; i++)
		weft_close(idles[i].fd);
	double worst = 0;
	for (size_t i = 0; i < samples; i++)
		worst = late[i] > worst ? late[i] : worst;
	qsort(late, samples, sizeof(*late), bench_cmp_double);
	printf("%s, %d worker(s), %llu idle connections parked: recv deadline %llu us ahead, %llu "
	       "samples: late p50 %.1f us, p99 %.1f us, worst %.1f us%s\n",
	       weft_model_name(cfg.model), cfg.workers, n, wait_us, samples, late[samples / 2],
	       late[samples * 99 / 100], worst, m.bad ? " (some did not time out!)" : "");
	weft_rt_destroy(rt);
	free(idles);
	free(late);
	return m.bad ? 1 : 0;
}
