/* outside_post: how late a task posted from a thread outside the runtime
 * starts when the runtime is idle (every worker asleep) and the poster
 * keeps its CPU busy (finding e of issue 26: mn's posts started 1.8-3.8 ms
 * late), on every model, against the floor of the machine: a pthread
 * semaphore posted to a thread asleep in sem_wait, in the same run.
 *
 * Each round the poster spins for --gap-us (the runtime goes idle), stamps
 * the clock, posts a task that stamps it again, and spins until it has.
 * Rounds are interleaved over the configurations; each line reports the
 * median and p99 of the start latency.
 *
 *   outside_post [--models m1,m2] [--workers 1,2] [--rounds N] [--gap-us G] */
#define _GNU_SOURCE
#include <getopt.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <weft/weft.h>

#include "bench_util.h"

#define PROG     "outside_post"
#define MAX_CFGS 16

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void spin_until(int64_t t)
{
	while (now_ns() < t)
		;
}

static _Atomic int64_t started;

static void stamp(void *arg)
{
	(void)arg;
	atomic_store(&started, now_ns());
}

/* The control: a thread asleep in sem_wait stamps the clock when woken. */
static sem_t ctl_sem;
static _Atomic int ctl_stop;

static void *ctl_thread(void *arg)
{
	(void)arg;
	for (;;) {
		while (sem_wait(&ctl_sem) != 0)
			;
		if (atomic_load(&ctl_stop))
			return NULL;
		atomic_store(&started, now_ns());
	}
}

typedef struct cfg {
	char name[32];
	weft_rt *rt; /* NULL: the control */
	int64_t *late;
} cfg;

static int cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static int64_t one_round(cfg *c)
{
	atomic_store(&started, 0);
	int64_t t0 = now_ns(), s;
	weft_task t;
	if (c->rt) {
		weft_task_init(&t, stamp, NULL);
		if (weft_post(c->rt, &t) != 0) {
			fprintf(stderr, PROG ": weft_post failed\n");
			exit(1);
		}
	} else {
		sem_post(&ctl_sem);
	}
	while ((s = atomic_load(&started)) == 0)
		;
	if (c->rt)
		weft_wait(&t);
	return s - t0;
}

int main(int argc, char **argv)
{
	char models[128] = "threads,fibers,mn", workers[64] = "1,2";
	int rounds = 400;
	int64_t gap = 2000;
	static const struct option opts[] = {{"models", required_argument, 0, 'm'},
	                                     {"workers", required_argument, 0, 'w'},
	                                     {"rounds", required_argument, 0, 'r'},
	                                     {"gap-us", required_argument, 0, 'g'},
	                                     {"help", no_argument, 0, 'h'},
	                                     {"version", no_argument, 0, BENCH_OPT_VERSION},
	                                     {0, 0, 0, 0}};
	static const char usage[] =
	        "usage: outside_post [--models m1,m2] [--workers 1,2] [--rounds N] [--gap-us G]\n";
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
		switch (c) {
		case 'm':
			snprintf(models, sizeof(models), "%s", optarg);
			break;
		case 'w':
			snprintf(workers, sizeof(workers), "%s", optarg);
			break;
		case 'r':
			rounds = atoi(optarg);
			break;
		case 'g':
			gap = atoll(optarg);
			break;
		default:
			return bench_help_version_or_error(PROG, c, argv, opts, usage);
		}
	}
	if (rounds < 1)
		rounds = 1;
	cfg cfgs[MAX_CFGS];
	int n = 0;
	snprintf(cfgs[n].name, sizeof(cfgs[n].name), "pthread sem (control)");
	cfgs[n++].rt = NULL;
	for (char *m = strtok(models, ","); m && n < MAX_CFGS; m = strtok(NULL, ",")) {
		weft_model model;
		if (!strcmp(m, "threads"))
			model = WEFT_MODEL_THREADS;
		else if (!strcmp(m, "fibers"))
			model = WEFT_MODEL_FIBERS;
		else if (!strcmp(m, "mn"))
			model = WEFT_MODEL_MN;
		else if (!strcmp(m, "spawn"))
			model = WEFT_MODEL_SPAWN;
		else
			continue;
		char wl[64];
		snprintf(wl, sizeof(wl), "%s", workers);
		char *save = NULL;
		for (char *w = strtok_r(wl, ",", &save); w && n < MAX_CFGS;
		     w = strtok_r(NULL, ",", &save)) {
			weft_config wc;
			weft_config_init(&wc);
			wc.model = model;
			wc.workers = atoi(w);
			if (model == WEFT_MODEL_FIBERS && wc.workers != 1)
				continue;
			if (weft_rt_create(&cfgs[n].rt, &wc) != 0) {
				fprintf(stderr, PROG ": weft_rt_create failed\n");
				return 1;
			}
			snprintf(cfgs[n].name, sizeof(cfgs[n].name), "%s w%d", m, wc.workers);
			n++;
		}
	}
	sem_init(&ctl_sem, 0, 0);
	pthread_t ctl;
	pthread_create(&ctl, NULL, ctl_thread, NULL);
	for (int i = 0; i < n; i++)
		cfgs[i].late = calloc((size_t)rounds, sizeof(int64_t));
	for (int r = 0; r < rounds; r++) {
		for (int k = 0; k < n; k++) {
			cfg *x = &cfgs[(k + r) % n];
			spin_until(now_ns() + gap * 1000);
			x->late[r] = one_round(x);
		}
	}
	printf("%-24s %12s %12s  (start latency of an outside post to an idle runtime, "
	       "%d rounds, %lld us apart, poster busy)\n",
	       "", "median us", "p99 us", rounds, (long long)gap);
	for (int i = 0; i < n; i++) {
		qsort(cfgs[i].late, (size_t)rounds, sizeof(int64_t), cmp64);
		printf("%-24s %12.1f %12.1f\n", cfgs[i].name, cfgs[i].late[rounds / 2] / 1e3,
		       cfgs[i].late[(size_t)rounds * 99 / 100] / 1e3);
	}
	atomic_store(&ctl_stop, 1);
	sem_post(&ctl_sem);
	pthread_join(ctl, NULL);
	for (int i = 0; i < n; i++) {
		if (cfgs[i].rt)
			weft_rt_destroy(cfgs[i].rt);
		free(cfgs[i].late);
	}
	return 0;
}
