/* platform_costs: what the operating-system backend costs, per operation,
 * on every model: built once with the Linux backend and once with the
 * portable POSIX one (WEFT_PORTABLE, docs/platforms.md), and the two
 * binaries run by bench/platform_costs.sh in turns, so the ratios come
 * from one run.
 *
 *   sem-pingpong   two tasks hand a turn back and forth through two
 *                  semaphores: ns per round trip (two waits, two posts)
 *   chan-pingpong  the same through two one-slot channels
 *   sock-pingpong  the same through a socketpair, one byte each way with
 *                  weft_read/weft_write (the poller, or ppoll/poll on a
 *                  kernel-thread worker): ns per round trip
 *   spawn-join     a task posts an empty task and weft_waits it: ns per
 *                  pair
 *   post-drain     the main thread posts N empty tasks, then
 *                  weft_wait_all: ns per task
 *   sleep-late     weft_sleep_ns(200 us) in a task: median lateness, ns
 *   futex-pingpong two plain threads hand a word back and forth with
 *                  weft__futex_wait / weft__futex_wake (core/futex.h), no
 *                  spinning: ns per round trip (two sleeps, two wake-ups);
 *                  model "-", once before the models
 *
 *   platform_costs [--reps R] [--rounds N] [--models threads,mn,fibers,spawn]
 *
 * Prints `<workload> <model> <workers> <median ns>` per line (medians of R
 * repetitions). Every result is checked. */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <pthread.h>

#include <weft/io.h>
#include <weft/weft.h>

#include "bench_util.h"
#include "core/futex.h"

#define PROG     "platform_costs"
#define MAX_REPS 31

static long rounds = 20000;
static weft_rt *rt;

static void die(const char *what)
{
	fprintf(stderr, PROG ": %s\n", what);
	exit(1);
}

/* ------------------------------------------------------------ ping-pongs */

typedef struct pair {
	weft_sem s[2];
	weft_chan c[2];
	int cbuf[2];
	int fd[2];
	int side_done;
} pair;

static void sem_side(pair *p, int me)
{
	for (long i = 0; i < rounds; i++) {
		if (me == 0) {
			if (weft_sem_post(&p->s[0]) || weft_sem_wait(&p->s[1]))
				die("sem");
		} else {
			if (weft_sem_wait(&p->s[0]) || weft_sem_post(&p->s[1]))
				die("sem");
		}
	}
}

static void chan_side(pair *p, int me)
{
	int v = 0;
	for (long i = 0; i < rounds; i++) {
		if (me == 0) {
			v = (int)i;
			if (weft_chan_send(&p->c[0], &v) || weft_chan_recv(&p->c[1], &v) ||
			    v != (int)i)
				die("chan");
		} else {
			if (weft_chan_recv(&p->c[0], &v) || weft_chan_send(&p->c[1], &v))
				die("chan");
		}
	}
}

static void sock_side(pair *p, int me)
{
	char b = 0;
	for (long i = 0; i < rounds; i++) {
		if (me == 0) {
			b = (char)i;
			if (weft_write(p->fd[0], &b, 1, INT64_MAX) != 1 ||
			    weft_read(p->fd[0], &b, 1, INT64_MAX) != 1 || b != (char)(i + 1))
				die("sock");
		} else {
			if (weft_read(p->fd[1], &b, 1, INT64_MAX) != 1)
				die("sock");
			b++;
			if (weft_write(p->fd[1], &b, 1, INT64_MAX) != 1)
				die("sock");
		}
	}
}

typedef struct side {
	weft_task t;
	pair *p;
	int me;
	void (*fn)(pair *, int);
} side;

static void run_side(void *arg)
{
	side *s = arg;
	s->fn(s->p, s->me);
}

static double pingpong(void (*fn)(pair *, int))
{
	pair p;
	memset(&p, 0, sizeof(p));
	weft_sem_init(&p.s[0], 0);
	weft_sem_init(&p.s[1], 0);
	weft_chan_init(&p.c[0], sizeof(int), 1, &p.cbuf[0]);
	weft_chan_init(&p.c[1], sizeof(int), 1, &p.cbuf[1]);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, p.fd) != 0)
		die("socketpair");
	side s[2] = {{.p = &p, .me = 0, .fn = fn}, {.p = &p, .me = 1, .fn = fn}};
	double t0 = bench_now_ns();
	for (int i = 1; i >= 0; i--) {
		weft_task_init(&s[i].t, run_side, &s[i]);
		if (weft_post(rt, &s[i].t))
			die("post");
	}
	if (weft_wait(&s[0].t) || weft_wait(&s[1].t))
		die("wait");
	double ns = (bench_now_ns() - t0) / (double)rounds;
	weft_close(p.fd[0]);
	weft_close(p.fd[1]);
	return ns;
}

static double sem_pingpong(void)
{
	return pingpong(sem_side);
}

static double chan_pingpong(void)
{
	return pingpong(chan_side);
}

static double sock_pingpong(void)
{
	return pingpong(sock_side);
}

/* ------------------------------------------------------------ tasks */

static void empty(void *arg)
{
	(void)arg;
}

static void spawn_join_body(void *arg)
{
	long n = *(long *)arg;
	weft_task t;
	for (long i = 0; i < n; i++) {
		weft_task_init(&t, empty, NULL);
		if (weft_post(rt, &t) || weft_wait(&t))
			die("spawn-join");
	}
}

static double spawn_join(void)
{
	long n = rounds / 4;
	weft_task t;
	weft_task_init(&t, spawn_join_body, &n);
	double t0 = bench_now_ns();
	if (weft_post(rt, &t) || weft_wait(&t))
		die("spawn-join");
	return (bench_now_ns() - t0) / (double)n;
}

static double post_drain(void)
{
	long n = rounds;
	weft_task *t = malloc((size_t)n * sizeof(*t));
	if (!t)
		die("out of memory");
	double t0 = bench_now_ns();
	for (long i = 0; i < n; i++) {
		weft_task_init(&t[i], empty, NULL);
		if (weft_post(rt, &t[i]))
			die("post");
	}
	if (weft_wait_all(rt))
		die("wait_all");
	double ns = (bench_now_ns() - t0) / (double)n;
	free(t);
	return ns;
}

enum { SLEEPS = 41 };

static void sleep_body(void *arg)
{
	double *late = arg;
	for (int i = 0; i < SLEEPS; i++) {
		double t0 = bench_now_ns();
		weft_sleep_ns(200000);
		late[i] = bench_now_ns() - t0 - 200000.0;
	}
}

static double sleep_late(void)
{
	double late[SLEEPS];
	weft_task t;
	weft_task_init(&t, sleep_body, late);
	if (weft_post(rt, &t) || weft_wait(&t))
		die("sleep");
	return bench_median(late, SLEEPS);
}

/* ------------------------------------------------------------ futex */

static _Atomic uint32_t turn; /* 0: the main thread's, 1: the other's */

static void *futex_other(void *arg)
{
	(void)arg;
	for (long i = 0; i < rounds; i++) {
		while (atomic_load(&turn) != 1)
			weft__futex_wait(&turn, 0, -1);
		atomic_store(&turn, 0);
		weft__futex_wake(&turn, 1);
	}
	return NULL;
}

static double futex_pingpong(void)
{
	atomic_store(&turn, 0);
	pthread_t th;
	if (pthread_create(&th, NULL, futex_other, NULL) != 0)
		die("pthread_create");
	double t0 = bench_now_ns();
	for (long i = 0; i < rounds; i++) {
		atomic_store(&turn, 1);
		weft__futex_wake(&turn, 1);
		while (atomic_load(&turn) != 0)
			weft__futex_wait(&turn, 1, -1);
	}
	double ns = (bench_now_ns() - t0) / (double)rounds;
	pthread_join(th, NULL);
	return ns;
}

/* ------------------------------------------------------------ main */

static const struct {
	const char *name;
	double (*fn)(void);
} workloads[] = {
        {"sem-pingpong", sem_pingpong},   {"chan-pingpong", chan_pingpong},
        {"sock-pingpong", sock_pingpong}, {"spawn-join", spawn_join},
        {"post-drain", post_drain},       {"sleep-late", sleep_late},
};

static const char usage[] =
        "usage: platform_costs [--reps R] [--rounds N] [--models LIST]\n"
        "  ns per operation of each workload on each model (median of R runs)\n";

int main(int argc, char **argv)
{
	int reps = 5;
	char models[128] = "threads,mn,fibers,spawn";
	static const struct option longopts[] = {
	        {"reps", required_argument, NULL, 'r'},
	        {"rounds", required_argument, NULL, 'n'},
	        {"models", required_argument, NULL, 'm'},
	        {"help", no_argument, NULL, 'h'},
	        {"version", no_argument, NULL, BENCH_OPT_VERSION},
	        {NULL, 0, NULL, 0},
	};
	opterr = 0;
	int c;
	while ((c = getopt_long(argc, argv, ":r:n:m:h", longopts, NULL)) != -1) {
		if (c == 'r')
			reps = atoi(optarg);
		else if (c == 'n')
			rounds = atol(optarg);
		else if (c == 'm')
			snprintf(models, sizeof(models), "%s", optarg);
		else
			return bench_help_version_or_error(PROG, c, argv, longopts, usage);
	}
	if (reps < 1 || reps > MAX_REPS || rounds < 4)
		die("--reps must be 1 to 31, --rounds at least 4");
	{
		double v[MAX_REPS];
		for (int r = 0; r < reps; r++)
			v[r] = futex_pingpong();
		printf("futex-pingpong - 2 %.0f\n", bench_median(v, reps));
		fflush(stdout);
	}
	for (char *save = NULL, *m = strtok_r(models, ",", &save); m;
	     m = strtok_r(NULL, ",", &save)) {
		weft_config cfg;
		weft_config_init(&cfg);
		if (strcmp(m, "threads") == 0)
			cfg.model = WEFT_MODEL_THREADS;
		else if (strcmp(m, "mn") == 0)
			cfg.model = WEFT_MODEL_MN;
		else if (strcmp(m, "fibers") == 0)
			cfg.model = WEFT_MODEL_FIBERS;
		else if (strcmp(m, "spawn") == 0)
			cfg.model = WEFT_MODEL_SPAWN;
		else
			die("--models: threads, mn, fibers, spawn");
		cfg.workers = cfg.model == WEFT_MODEL_FIBERS ? 1 : 2;
		if (weft_rt_create(&rt, &cfg))
			die("weft_rt_create");
		for (size_t w = 0; w < sizeof(workloads) / sizeof(workloads[0]); w++) {
			double v[MAX_REPS];
			for (int r = 0; r < reps; r++)
				v[r] = workloads[w].fn();
			printf("%s %s %d %.0f\n", workloads[w].name, m, (int)cfg.workers,
			       bench_median(v, reps));
			fflush(stdout);
		}
		if (weft_rt_destroy(rt))
			die("weft_rt_destroy");
	}
	return 0;
}
