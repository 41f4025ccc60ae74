/* How late a timed wait returns WEFT_ETIMEDOUT, and how punctual delayed
 * posts are, on every model, in one run.
 *
 *   timed_waits [--reps N] [--delayed N] [--timeout-us U] [--workers W]
 *
 * For each model: a task and a plain thread each wait with a deadline
 * timeout-us ahead, reps times, on a task that never finishes in time
 * (weft_wait_until), its group (weft_group_wait_until), an empty channel
 * (weft_chan_recv_until), a mutex held throughout (weft_mutex_lock_until),
 * a condition nobody signals (weft_cond_wait_until) and an empty semaphore
 * (weft_sem_wait_until), and sleeps (weft_sleep_ns), beside a plain
 * clock_nanosleep to the same deadline as the floor the kernel gives any
 * thread (on the measuring threads, and on a fresh thread with the
 * kernel's default timer slack: "plain"); the lateness (return time - deadline) is reported as median, 99th
 * percentile and maximum. The default timeout, 2.5 ms, is no multiple of a
 * millisecond tick. Then `delayed` tasks are posted with
 * weft_post_at at random deadlines over 50 ms: how many ran early (must be
 * 0), how many out of deadline order at 1 worker, and the median and
 * maximum lateness of their start. */
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <weft/weft.h>

#include "bench_util.h"

static int reps = 200, delayed_n = 100000, workers = 2;
static int64_t timeout_ns = 2500000;

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

static void report(const char *model, const char *what, int64_t *late, int n)
{
	qsort(late, (size_t)n, sizeof(*late), cmp_i64);
	printf("%-8s %-28s median %8.1f us  p99 %8.1f us  max %8.1f us\n", model, what,
	       (double)late[n / 2] / 1e3, (double)late[(n * 99) / 100] / 1e3,
	       (double)late[n - 1] / 1e3);
}

static _Atomic int release_blocker;

static void blocker(void *arg)
{
	(void)arg;
	while (!atomic_load(&release_blocker))
		weft_sleep_ns(1000000);
}

enum { KINDS = 8 };
static const char *const kind_name[KINDS] = {
        "wait_until",      "group_wait_until", "chan_recv_until", "mutex_lock_until",
        "cond_wait_until", "sem_wait_until",   "sleep_ns",        "clock_nanosleep"};

typedef struct probe {
	weft_task *target;
	weft_group *group;
	weft_chan *chan;
	weft_mutex *held; /* locked by main for the whole measurement */
	int64_t *late;
} probe;

static void fail_if(int rc, const char *what)
{
	if (rc != WEFT_ETIMEDOUT) {
		fprintf(stderr, "timed_waits: %s did not time out (%s)\n", what, weft_err_name(rc));
		exit(1);
	}
}

/* reps timed waits of each kind; lateness into late[k * reps + i]. */
static void measure(void *arg)
{
	probe *p = arg;
	weft_mutex own;
	weft_cond cv;
	weft_sem sem;
	weft_mutex_init(&own);
	weft_cond_init(&cv);
	weft_sem_init(&sem, 0);
	for (int i = 0; i < reps; i++) {
		for (int k = 0; k < KINDS; k++) {
			int v, rc = 0;
			int64_t d = weft_clock_ns() + timeout_ns;
			switch (k) {
			case 0:
				rc = weft_wait_until(p->target, d);
				break;
			case 1:
				rc = weft_group_wait_until(p->group, d);
				break;
			case 2:
				rc = weft_chan_recv_until(p->chan, &v, d);
				break;
			case 3:
				rc = weft_mutex_lock_until(p->held, d);
				break;
			case 4:
				weft_mutex_lock(&own);
				rc = weft_cond_wait_until(&cv, &own, d);
				weft_mutex_unlock(&own);
				break;
			case 5:
				rc = weft_sem_wait_until(&sem, d);
				break;
			case 6:
				weft_sleep_ns(timeout_ns);
				rc = WEFT_ETIMEDOUT;
				break;
			default: {
				struct timespec ts = {d / 1000000000, d % 1000000000};
				while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL))
					;
				rc = WEFT_ETIMEDOUT;
				break;
			}
			}
			p->late[k * reps + i] = weft_clock_ns() - d;
			fail_if(rc, kind_name[k]);
		}
	}
}

static void *measure_thread(void *arg)
{
	measure(arg);
	return NULL;
}

/* The floor: clock_nanosleep on a fresh thread that never called weft, so
 * with the kernel's default timer slack (a thread that made a timed wait
 * through weft has a slack of 1 ns, and the kind above shows that). */
static void *plain_thread(void *arg)
{
	int64_t *late = arg;
	for (int i = 0; i < reps; i++) {
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		int64_t d = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec + timeout_ns;
		struct timespec ts = {d / 1000000000, d % 1000000000};
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL))
			;
		clock_gettime(CLOCK_MONOTONIC, &now);
		late[i] = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec - d;
	}
	return NULL;
}

typedef struct delayed {
	weft_task task;
	int64_t due, ran;
	long order;
} delayed;

static _Atomic long started;

static void record(void *arg)
{
	delayed *d = arg;
	d->ran = weft_clock_ns();
	d->order = atomic_fetch_add(&started, 1);
}

static int by_order(const void *a, const void *b)
{
	const delayed *x = a, *y = b;
	return (x->order > y->order) - (x->order < y->order);
}

static int run_model(weft_model model)
{
	const char *name = weft_model_name(model);
	weft_config cfg;
	weft_config_init(&cfg);
	cfg.model = model;
	cfg.workers = workers;
	weft_rt *rt;
	int rc = weft_rt_create(&rt, &cfg);
	if (rc) {
		fprintf(stderr, "timed_waits: %s: %s\n", name, weft_strerror(rc));
		return 1;
	}
	atomic_store(&release_blocker, 0);
	weft_task block;
	weft_group g;
	weft_group_init(&g);
	weft_task_init(&block, blocker, NULL);
	weft_post_in(rt, &g, &block);
	weft_chan ch;
	weft_chan_init(&ch, sizeof(int), 0, NULL);
	weft_mutex held;
	weft_mutex_init(&held);
	weft_mutex_lock(&held);
	int64_t *late = malloc(sizeof(int64_t) * KINDS * (size_t)reps * 2);
	probe in_task = {&block, &g, &ch, &held, late};
	probe in_thread = {&block, &g, &ch, &held, late + KINDS * reps};
	weft_task t;
	weft_task_init(&t, measure, &in_task);
	weft_post(rt, &t);
	pthread_t th;
	pthread_create(&th, NULL, measure_thread, &in_thread);
	weft_wait(&t);
	pthread_join(th, NULL);
	weft_mutex_unlock(&held);
	int64_t *floor = malloc(sizeof(int64_t) * (size_t)reps);
	pthread_create(&th, NULL, plain_thread, floor);
	pthread_join(th, NULL);
	char label[64];
	for (int k = 0; k < KINDS; k++) {
		snprintf(label, sizeof(label), "%s (task)", kind_name[k]);
		report(name, label, in_task.late + k * reps, reps);
		snprintf(label, sizeof(label), "%s (thread)", kind_name[k]);
		report(name, label, in_thread.late + k * reps, reps);
	}
	report(name, "clock_nanosleep (plain)", floor, reps);
	free(floor);
	atomic_store(&release_blocker, 1);
	weft_wait_all(rt);
	free(late);

	int n = model == WEFT_MODEL_SPAWN && delayed_n > 5000 ? 5000 : delayed_n;
	delayed *d = calloc((size_t)n, sizeof(*d));
	atomic_store(&started, 0);
	uint64_t x = 88172645463325252ull;
	int64_t base = weft_clock_ns() + 500000000;
	for (int i = 0; i < n; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		d[i].due = base + (int64_t)(x % 50000000);
		weft_task_init(&d[i].task, record, &d[i]);
		if ((rc = weft_post_at(rt, NULL, &d[i].task, d[i].due)) != 0) {
			fprintf(stderr, "timed_waits: weft_post_at: %s\n", weft_strerror(rc));
			return 1;
		}
	}
	bool all_in = weft_clock_ns() < base;
	weft_wait_all(rt);
	long early = 0, disorder = 0;
	int64_t *lat = malloc(sizeof(int64_t) * (size_t)n);
	for (int i = 0; i < n; i++) {
		early += d[i].ran < d[i].due;
		lat[i] = d[i].ran - d[i].due;
	}
	qsort(d, (size_t)n, sizeof(*d), by_order);
	for (int i = 1; i < n; i++)
		disorder += d[i].due < d[i - 1].due;
	snprintf(label, sizeof(label), "%d delayed posts", n);
	report(name, label, lat, n);
	printf("%-8s %-28s %ld early, %ld started out of deadline order%s\n", name, "", early,
	       disorder,
	       all_in ? (workers == 1 ? "" : " (several workers)") : " (posting overran)");
	free(lat);
	free(d);
	weft_rt_destroy(rt);
	return early != 0;
}

int main(int argc, char **argv)
{
	cli_check_stdout_at_exit("timed_waits");
	static const struct option opts[] = {{"reps", required_argument, NULL, 'r'},
	                                     {"delayed", required_argument, NULL, 'd'},
	                                     {"timeout-us", required_argument, NULL, 't'},
	                                     {"workers", required_argument, NULL, 'w'},
	                                     {"help", no_argument, NULL, 'h'},
	                                     {"version", no_argument, NULL, BENCH_OPT_VERSION},
	                                     {NULL, 0, NULL, 0}};
	static const char usage[] =
	        "usage: timed_waits [--reps N] [--delayed N] [--timeout-us U] [--workers W]\n"
	        "       timed_waits --help | --version\n"
	        "How late timed waits return WEFT_ETIMEDOUT and how punctual weft_post_at is,\n"
	        "on every model.\n";
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":r:d:t:w:h", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			reps = atoi(optarg);
			break;
		case 'd':
			delayed_n = atoi(optarg);
			break;
		case 't':
			timeout_ns = (int64_t)atoi(optarg) * 1000;
			break;
		case 'w':
			workers = atoi(optarg);
			break;
		default:
			return bench_help_version_or_error("timed_waits", c, argv, opts, usage);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "timed_waits: unexpected argument '%s'\n%s", argv[optind], usage);
		return 2;
	}
	if (reps < 1 || delayed_n < 2 || timeout_ns < 0 || workers < 1) {
		fprintf(stderr, "timed_waits: bad argument\n");
		return 2;
	}
	int failed = 0;
	for (int m = 0; m < WEFT_MODEL_COUNT_; m++)
		failed |= run_model((weft_model)m);
	return failed;
}
