/* pipeline: the newcomer's four-stage pipeline of issue 25, written from
 * docs/ only (tutorial.md's channels, models.md's waiting rules): four
 * long-lived stage tasks connected by bounded weft channels, lines of text
 * flowing through.
 *
 *   read (make line i) -> parse (count words, upper-case) -> hash (FNV-1a,
 *   a few passes) -> sum (checksum of every line)
 *
 * Each stage receives until its input channel is closed and drained
 * (WEFT_ECLOSED), then closes its output: the tutorial's "producer closes"
 * rule. Timed from the four posts to weft_wait_all on each model at 1 and 2
 * workers, repetitions interleaved, medians; the checksum is checked
 * against a plain loop.
 *
 * Two channel sizes. The default gives every channel room for every line
 * (--capacity 0): a newcomer who read models.md's "What can still
 * deadlock" does so, because on threads and spawn a stage blocked on a full
 * channel holds its worker, and with fewer workers than stages the stages
 * that would drain it never start. With --capacity N (a real bounded
 * pipeline) threads and spawn need 4 workers, so their runs at 1 and 2
 * workers are skipped with a note.
 *
 * Per run it also says where the work ran: the share of the runtime's
 * worker threads' CPU time taken by each of workers 0 and 1 (each worker's
 * CPU-time clock, see sample_workers),
 * and, per stage, the share of its lines that stage handled on worker 0
 * (weft_worker_index). The bar of issue 25: mn with 2 workers no slower
 * than threads with 2. */
#define _GNU_SOURCE
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"

enum { STAGES = 4, LINE = 96, MAXW = 2 };

typedef struct item {
	uint32_t n, len, words;
	uint64_t hash;
	char text[LINE];
} item;

typedef struct run {
	weft_chan ch[STAGES - 1];
	item *buf[STAGES - 1];
	weft_task task[STAGES];
	long lines;
	int work; /* hash passes in stage 3 */
	uint64_t sum;
	long on_worker[STAGES][MAXW + 1]; /* lines per stage per worker index (last: other) */
	int failed;
} run;

static void make_line(long i, item *it)
{
	static const char *words[] = {"alpha", "bravo", "charlie", "delta", "echo", "foxtrot"};
	int len = snprintf(it->text, LINE, "line %ld: %s %s %s %ld", i, words[i % 6],
	                   words[(i / 6) % 6], words[(i / 36) % 6], i * 7919 % 100003);
	it->n = (uint32_t)i;
	it->len = (uint32_t)len;
	it->words = 0;
	it->hash = 0;
}

static void parse_line(item *it)
{
	bool in = false;
	for (uint32_t k = 0; k < it->len; k++) {
		char c = it->text[k];
		if (c >= 'a' && c <= 'z')
			it->text[k] = (char)(c - 32);
		bool word = c != ' ';
		it->words += word && !in;
		in = word;
	}
}

static void hash_line(item *it, int passes)
{
	uint64_t h = 1469598103934665603ull;
	for (int p = 0; p < passes; p++)
		for (uint32_t k = 0; k < it->len; k++)
			h = (h ^ (unsigned char)it->text[k]) * 1099511628211ull;
	it->hash = h;
}

static uint64_t fold(uint64_t sum, const item *it)
{
	return sum * 31 + it->hash + it->words * 1000003ull + it->n;
}

static void count_here(run *r, int stage)
{
	int w = weft_worker_index();
	r->on_worker[stage][w >= 0 && w < MAXW ? w : MAXW]++;
}

static void stage_read(void *arg)
{
	run *r = arg;
	item it;
	for (long i = 0; i < r->lines; i++) {
		make_line(i, &it);
		count_here(r, 0);
		if (weft_chan_send(&r->ch[0], &it) != 0) {
			r->failed = 1;
			break;
		}
	}
	weft_chan_close(&r->ch[0]);
}

static void stage_parse(void *arg)
{
	run *r = arg;
	item it;
	while (weft_chan_recv(&r->ch[0], &it) == 0) {
		parse_line(&it);
		count_here(r, 1);
		if (weft_chan_send(&r->ch[1], &it) != 0) {
			r->failed = 1;
			break;
		}
	}
	weft_chan_close(&r->ch[1]);
}

static void stage_hash(void *arg)
{
	run *r = arg;
	item it;
	while (weft_chan_recv(&r->ch[1], &it) == 0) {
		hash_line(&it, r->work);
		count_here(r, 2);
		if (weft_chan_send(&r->ch[2], &it) != 0) {
			r->failed = 1;
			break;
		}
	}
	weft_chan_close(&r->ch[2]);
}

static void stage_sum(void *arg)
{
	run *r = arg;
	item it;
	uint64_t sum = 0;
	while (weft_chan_recv(&r->ch[2], &it) == 0) {
		sum = fold(sum, &it);
		count_here(r, 3);
	}
	r->sum = sum;
}

/* ---- CPU time per worker thread: each worker's CPU-time clock, taken by
 * the worker hook (weft_config.worker_hook runs on the worker's thread when
 * it starts), read from here with clock_gettime. Precise to the
 * nanosecond, where /proc/self/task/TID/stat counts 10 ms ticks: too coarse
 * for runs of a few tens of milliseconds. */

typedef struct cpu_sample {
	unsigned long long ns[MAXW];
} cpu_sample;

static clockid_t worker_clock[MAXW];
static _Atomic int worker_clock_set[MAXW];

static void worker_hook(int event, int index, void *ctx)
{
	(void)ctx;
	if (index < 0 || index >= MAXW)
		return;
	if (event == WEFT_WORKER_START &&
	    pthread_getcpuclockid(pthread_self(), &worker_clock[index]) == 0)
		atomic_store(&worker_clock_set[index], 1);
	else if (event == WEFT_WORKER_EXIT)
		atomic_store(&worker_clock_set[index], 0);
}

static void sample_workers(cpu_sample *s)
{
	for (int w = 0; w < MAXW; w++) {
		struct timespec ts;
		s->ns[w] = 0;
		if (atomic_load(&worker_clock_set[w]) && clock_gettime(worker_clock[w], &ts) == 0)
			s->ns[w] = (unsigned long long)ts.tv_sec * 1000000000ull +
			           (unsigned long long)ts.tv_nsec;
	}
}

/* ---- One timed run */

typedef struct config {
	weft_model model;
	int workers;
	double ms[64];
	unsigned long long cpu[MAXW]; /* summed over repetitions */
	long on_worker[STAGES][MAXW + 1];
	int done;
	bool skipped;
} config;

static int one_run(config *c, long lines, size_t capacity, int work, uint64_t want)
{
	weft_config cfg;
	weft_config_init(&cfg);
	cfg.model = c->model;
	cfg.workers = c->workers;
	cfg.worker_hook = worker_hook;
	weft_rt *rt;
	int rc = weft_rt_create(&rt, &cfg);
	if (rc != 0) {
		fprintf(stderr, "chan_pipeline: weft_rt_create(%s, %d): %s\n",
		        weft_model_name(c->model), c->workers, weft_strerror(rc));
		return -1;
	}
	run *r = calloc(1, sizeof(*r));
	if (!r)
		return -1;
	r->lines = lines;
	r->work = work;
	for (int k = 0; k < STAGES - 1; k++) {
		r->buf[k] = malloc(capacity * sizeof(item));
		if (!r->buf[k] || weft_chan_init(&r->ch[k], sizeof(item), capacity, r->buf[k]) != 0)
			return -1;
	}
	static const weft_fn fns[STAGES] = {stage_read, stage_parse, stage_hash, stage_sum};
	cpu_sample before, after;
	/* The workers start inside weft_rt_create; their hooks may still be
	 * on the way: wait until every clock is known. */
	for (int w = 0; w < MAXW && w < c->workers && c->model != WEFT_MODEL_SPAWN; w++)
		while (!atomic_load(&worker_clock_set[w]))
			sched_yield();
	sample_workers(&before);
	double t0 = bench_now_ns();
	for (int k = 0; k < STAGES; k++) {
		weft_task_init(&r->task[k], fns[k], r);
		if ((rc = weft_post(rt, &r->task[k])) != 0) {
			fprintf(stderr, "chan_pipeline: weft_post: %s\n", weft_strerror(rc));
			return -1;
		}
	}
	weft_wait_all(rt);
	double t1 = bench_now_ns();
	sample_workers(&after);
	c->ms[c->done++] = (t1 - t0) / 1e6;
	for (int w = 0; w < MAXW; w++)
		c->cpu[w] += after.ns[w] - before.ns[w];
	for (int k = 0; k < STAGES; k++)
		for (int w = 0; w <= MAXW; w++)
			c->on_worker[k][w] += r->on_worker[k][w];
	int bad = r->failed || r->sum != want;
	if (bad)
		fprintf(stderr, "chan_pipeline: %s with %d workers: checksum %llx, want %llx\n",
		        weft_model_name(c->model), c->workers, (unsigned long long)r->sum,
		        (unsigned long long)want);
	for (int k = 0; k < STAGES - 1; k++)
		free(r->buf[k]);
	free(r);
	if (weft_rt_destroy(rt) != 0)
		bad = 1;
	return bad ? -1 : 0;
}

static const char usage[] =
        "usage: chan_pipeline [--lines N] [--capacity N] [--work PASSES] [--reps R]\n"
        "                     [--models LIST] [--workers LIST]\n"
        "  --lines N       lines through the pipeline (default 20000)\n"
        "  --capacity N    each channel's room in lines; 0 (the default): room for every\n"
        "                  line, so that threads and spawn cannot deadlock\n"
        "  --work PASSES   FNV passes per line in the hash stage (default 4)\n"
        "  --reps R        repetitions, interleaved; medians (default 5)\n"
        "  --models LIST   default threads,spawn,fibers,mn\n"
        "  --workers LIST  default 1,2 (fibers runs once: it has one worker)\n";

int main(int argc, char **argv)
{
	static const struct option opts[] = {{"lines", required_argument, NULL, 'n'},
	                                     {"capacity", required_argument, NULL, 'c'},
	                                     {"work", required_argument, NULL, 'k'},
	                                     {"reps", required_argument, NULL, 'r'},
	                                     {"models", required_argument, NULL, 'm'},
	                                     {"workers", required_argument, NULL, 'w'},
	                                     {"help", no_argument, NULL, 'h'},
	                                     {"version", no_argument, NULL, BENCH_OPT_VERSION},
	                                     {NULL, 0, NULL, 0}};
	unsigned long long lines = 20000, capacity = 0, work = 4, reps = 5;
	char models[128] = "threads,spawn,fibers,mn", workers[64] = "1,2";
	int c;
	cli_check_stdout_at_exit("chan_pipeline");
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":n:c:k:r:m:w:h", opts, NULL)) != -1) {
		bool ok = true;
		switch (c) {
		case 'n':
			ok = cli_parse_u64(optarg, 1, 100000000, &lines);
			break;
		case 'c':
			ok = cli_parse_u64(optarg, 0, 100000000, &capacity);
			break;
		case 'k':
			ok = cli_parse_u64(optarg, 1, 10000, &work);
			break;
		case 'r':
			ok = cli_parse_u64(optarg, 1, 64, &reps);
			break;
		case 'm':
			snprintf(models, sizeof(models), "%s", optarg);
			break;
		case 'w':
			snprintf(workers, sizeof(workers), "%s", optarg);
			break;
		default:
			return bench_help_version_or_error("chan_pipeline", c, argv, opts, usage);
		}
		if (!ok) {
			fprintf(stderr, "chan_pipeline: bad value '%s'\n%s", optarg, usage);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "chan_pipeline: unexpected argument '%s'\n%s", argv[optind], usage);
		return 2;
	}
	size_t cap = capacity ? (size_t)capacity : (size_t)lines;

	/* The answer, from a plain loop. */
	uint64_t want = 0;
	for (long i = 0; i < (long)lines; i++) {
		item it;
		make_line(i, &it);
		parse_line(&it);
		hash_line(&it, (int)work);
		want = fold(want, &it);
	}

	config cfgs[32];
	int ncfg = 0;
	char mcopy[128];
	snprintf(mcopy, sizeof(mcopy), "%s", models);
	for (char *save1, *m = strtok_r(mcopy, ",", &save1); m; m = strtok_r(NULL, ",", &save1)) {
		weft_model model;
		if (!bench_model_by_name(m, &model)) {
			fprintf(stderr, "chan_pipeline: unknown model '%s'\n", m);
			return 2;
		}
		char wcopy[64];
		snprintf(wcopy, sizeof(wcopy), "%s", workers);
		for (char *save2, *w = strtok_r(wcopy, ",", &save2); w && ncfg < 32;
		     w = strtok_r(NULL, ",", &save2)) {
			unsigned long long nw;
			if (!cli_parse_u64(w, 1, 1024, &nw)) {
				fprintf(stderr, "chan_pipeline: bad worker count '%s'\n", w);
				return 2;
			}
			if (model == WEFT_MODEL_FIBERS && ncfg && cfgs[ncfg - 1].model == model)
				continue; /* one worker whatever is asked */
			config *k = &cfgs[ncfg++];
			memset(k, 0, sizeof(*k));
			k->model = model;
			k->workers = model == WEFT_MODEL_FIBERS ? 1 : (int)nw;
			/* threads and spawn: a stage blocked on a full channel holds
			 * its worker; with fewer workers than stages and channels
			 * that cannot hold every line, the draining stages may never
			 * start (models.md, "What can still deadlock"). */
			k->skipped = (model == WEFT_MODEL_THREADS || model == WEFT_MODEL_SPAWN) &&
			             k->workers < STAGES && cap < lines;
		}
	}

	int failures = 0;
	for (unsigned long long r = 0; r < reps; r++)
		for (int i = 0; i < ncfg; i++) {
			config *k = &cfgs[(i + (int)r) % ncfg];
			if (!k->skipped && one_run(k, (long)lines, cap, (int)work, want) != 0)
				failures++;
		}

	printf("chan_pipeline: %llu lines through 4 stages (read, parse, hash x%llu, sum), "
	       "channels of "
	       "%zu lines%s; median of %llu interleaved runs\n",
	       lines, work, cap, capacity ? "" : " (room for every line)", reps);
	printf("%-8s %7s %10s %9s %9s  %-21s %s\n", "model", "workers", "median ms", "min", "max",
	       "worker CPU share 0/1", "lines on worker 0 per stage (read parse hash sum)");
	double threads2 = 0, mn2 = 0;
	for (int i = 0; i < ncfg; i++) {
		config *k = &cfgs[i];
		if (k->skipped) {
			printf("%-8s %7d  skipped: would deadlock (fewer workers than stages, "
			       "bounded "
			       "channels)\n",
			       weft_model_name(k->model), k->workers);
			continue;
		}
		if (!k->done)
			continue;
		double med = bench_median(k->ms, k->done);
		if (k->workers == 2 && k->model == WEFT_MODEL_THREADS)
			threads2 = med;
		if (k->workers == 2 && k->model == WEFT_MODEL_MN)
			mn2 = med;
		char share[32] = "-";
		unsigned long long tot = k->cpu[0] + k->cpu[1];
		if (k->workers >= 2 && k->model != WEFT_MODEL_SPAWN && tot)
			snprintf(share, sizeof(share), "%.0f%% / %.0f%%",
			         100.0 * (double)k->cpu[0] / (double)tot,
			         100.0 * (double)k->cpu[1] / (double)tot);
		char place[64] = "-";
		if (k->workers >= 2 && k->model != WEFT_MODEL_SPAWN) {
			int o = 0;
			for (int s = 0; s < STAGES; s++) {
				long all = k->on_worker[s][0] + k->on_worker[s][1] +
				           k->on_worker[s][2];
				o += snprintf(place + o, sizeof(place) - (size_t)o, "%s%.0f%%",
				              s ? " " : "",
				              all ? 100.0 * (double)k->on_worker[s][0] / (double)all
				                  : 0);
			}
		}
		printf("%-8s %7d %10.2f %9.2f %9.2f  %-21s %s\n", weft_model_name(k->model),
		       k->workers, med, k->ms[0], k->ms[k->done - 1], share, place);
	}
	if (threads2 > 0 && mn2 > 0)
		printf("mn/threads at 2 workers: %.2fx (bar: at most 1.00)\n", mn2 / threads2);
	return failures ? 1 : 0;
}
