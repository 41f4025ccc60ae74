/* What the lock benchmarks (mutex_contention.c, rwlock_contention.c)
 * share: T kernel threads released together on one gate, or T tasks of a
 * runtime; the wall time of a run from the first thread's start to the
 * last one's end; repetitions interleaved over the locks under test (rep 1
 * of every lock at every thread count, then rep 2, ..., the first lock
 * rotating) so that a drift of the machine lands on all of them alike;
 * and the table of medians with the ratio of each lock to the first, all
 * from one run. Header-only, as bench_util.h.
 *
 * A benchmark supplies the locks' names and one function that measures a
 * lock at a thread count (contention_measure); the body each thread runs
 * is its own. */
#ifndef WEFT_BENCH_CONTENTION_H
#define WEFT_BENCH_CONTENTION_H

#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

#define CONTENTION_MAX_THREADS 256
#define CONTENTION_MAX_COUNTS  16
#define CONTENTION_MAX_REPS    101
#define CONTENTION_MAX_KINDS   8

/* One hammering thread or task. */
typedef struct contention_thread {
	pthread_t th;
	weft_task task;
	void (*body)(struct contention_thread *t);
	uint64_t seed;      /* the thread's own, for its random choices */
	int64_t start, end; /* CLOCK_MONOTONIC ns around body */
	int64_t max_wait;   /* the body's longest wait, when it times them */
	char pad[64];       /* keeps the hot fields of neighbours apart */
} contention_thread;

static inline int64_t contention_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static struct {
	_Atomic int ready;
	_Atomic bool go;
} contention_gate;

static inline void contention_timed_body(contention_thread *t)
{
	t->max_wait = 0;
	t->start = contention_now_ns();
	t->body(t);
	t->end = contention_now_ns();
}

static inline void *contention_thread_main(void *arg)
{
	contention_thread *t = arg;
	atomic_fetch_add(&contention_gate.ready, 1);
	while (!atomic_load_explicit(&contention_gate.go, memory_order_acquire))
		;
	contention_timed_body(t);
	return NULL;
}

static inline void contention_task_main(void *arg)
{
	contention_timed_body(arg);
}

/* From the first start to the last end of ts[0..n); the longest wait of
 * any into *max_wait when max_wait is not NULL. */
static inline int64_t contention_span(const contention_thread *ts, int n, int64_t *max_wait)
{
	int64_t first = INT64_MAX, last = 0, worst = 0;
	for (int i = 0; i < n; i++) {
		if (ts[i].start < first)
			first = ts[i].start;
		if (ts[i].end > last)
			last = ts[i].end;
		if (ts[i].max_wait > worst)
			worst = ts[i].max_wait;
	}
	if (max_wait)
		*max_wait = worst;
	return last - first;
}

static inline void contention_prepare(contention_thread *ts, int n,
                                      void (*body)(contention_thread *))
{
	for (int i = 0; i < n; i++) {
		ts[i].body = body;
		ts[i].seed = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
		ts[i].start = ts[i].end = ts[i].max_wait = 0;
	}
}

/* Runs body on n plain kernel threads (pthread_create, no runtime), all
 * released at once when every one has started; returns the span. */
static inline int64_t contention_run_threads(const char *prog, contention_thread *ts, int n,
                                             void (*body)(contention_thread *), int64_t *max_wait)
{
	contention_prepare(ts, n, body);
	atomic_store(&contention_gate.ready, 0);
	atomic_store(&contention_gate.go, false);
	for (int i = 0; i < n; i++) {
		if (pthread_create(&ts[i].th, NULL, contention_thread_main, &ts[i]) != 0) {
			fprintf(stderr, "%s: pthread_create failed\n", prog);
			exit(1);
		}
	}
	while (atomic_load(&contention_gate.ready) < n)
		sched_yield();
	atomic_store_explicit(&contention_gate.go, true, memory_order_release);
	for (int i = 0; i < n; i++)
		pthread_join(ts[i].th, NULL);
	return contention_span(ts, n, max_wait);
}

/* Runs body as n tasks of rt and waits for them; returns the span. */
static inline int64_t contention_run_tasks(weft_rt *rt, contention_thread *ts, int n,
                                           void (*body)(contention_thread *), int64_t *max_wait)
{
	contention_prepare(ts, n, body);
	for (int i = 0; i < n; i++) {
		weft_task_init(&ts[i].task, contention_task_main, &ts[i]);
		if (weft_post(rt, &ts[i].task) != 0)
			abort();
	}
	weft_wait_all(rt);
	return contention_span(ts, n, max_wait);
}

/* ------------------------------------------------------------ the run */

struct contention_run;

/* Measures lock `kind` with `threads` threads (or tasks, when r->rt[kind]
 * is a runtime) once: ns per operation, and the longest single wait in
 * *max_wait (left 0 when not timed). */
typedef double (*contention_measure)(struct contention_run *r, int kind, int threads,
                                     int64_t *max_wait);

typedef struct contention_run {
	const char *prog;
	/* The locks under test, kind 0 the reference of the ratios. A kind
	 * with a runtime runs its threads as tasks of it. */
	int kinds;
	const char *kind_names[CONTENTION_MAX_KINDS];
	weft_rt *rt[CONTENTION_MAX_KINDS];
	char model_label[CONTENTION_MAX_KINDS][24]; /* "weft-mn": a kind with a runtime */
	int counts[CONTENTION_MAX_COUNTS];          /* thread counts */
	int ncounts;
	int reps;
	double ns[CONTENTION_MAX_COUNTS][CONTENTION_MAX_KINDS][CONTENTION_MAX_REPS];
	int64_t worst[CONTENTION_MAX_COUNTS][CONTENTION_MAX_KINDS];
} contention_run;

/* Kinds named in names[0..kinds) (no runtime); thread counts 2 and 8, 5
 * repetitions. */
static inline void contention_init(contention_run *r, const char *prog, int kinds,
                                   const char *const *names)
{
	memset(r, 0, sizeof(*r));
	r->prog = prog;
	r->kinds = kinds;
	for (int k = 0; k < kinds; k++)
		r->kind_names[k] = names[k];
	r->counts[0] = 2;
	r->counts[1] = 8;
	r->ncounts = 2;
	r->reps = 5;
}

/* A list of thread counts ("2,8") into r->counts; false when malformed. */
static inline bool contention_parse_counts(contention_run *r, const char *s)
{
	int n = 0;
	for (;;) {
		char *end;
		long v = strtol(s, &end, 10);
		if (end == s || v < 1 || v > CONTENTION_MAX_THREADS || n == CONTENTION_MAX_COUNTS)
			return false;
		r->counts[n++] = (int)v;
		if (*end == '\0')
			break;
		if (*end != ',')
			return false;
		s = end + 1;
	}
	r->ncounts = n;
	return true;
}

/* The options every lock benchmark takes (--threads 't', --reps 'r'):
 * 1 when c was one of them and is applied, 0 when it is not one of them,
 * -1 when its argument is malformed. */
static inline int contention_option(contention_run *r, int c, const char *arg)
{
	char *end;
	if (c == 't')
		return contention_parse_counts(r, arg) ? 1 : -1;
	if (c != 'r')
		return 0;
	long v = strtol(arg, &end, 10);
	if (*end || v < 1 || v > CONTENTION_MAX_REPS)
		return -1;
	r->reps = (int)v;
	return 1;
}

static inline int contention_add_models(contention_run *r, const char *list, int workers);

/* Parses argv: the options every lock benchmark takes (--threads,
 * --reps, --models, --help, --version) and its own (own_opts, a
 * getopt_long table ending with {0}, at most 8), each of which goes to
 * own(c, optarg), false when its argument is malformed; then makes the
 * runtimes of the models (models: the default list; 2 workers each).
 * Returns -1 to go on, or the status to exit with (usage_text said on the
 * right stream). */
static inline int contention_start(contention_run *r, int argc, char **argv,
                                   const struct option *own_opts,
                                   bool (*own)(int c, const char *arg), const char *models,
                                   const char *usage_text)
{
	static const struct option common[] = {{"reps", required_argument, NULL, 'r'},
	                                       {"threads", required_argument, NULL, 't'},
	                                       {"models", required_argument, NULL, 'm'},
	                                       {"help", no_argument, NULL, 'h'},
	                                       {"version", no_argument, NULL, BENCH_OPT_VERSION}};
	enum { COMMON = sizeof(common) / sizeof(common[0]), OWN_MAX = 8 };
	struct option opts[COMMON + OWN_MAX + 1] = {{0}};
	int n = 0;
	for (; n < COMMON; n++)
		opts[n] = common[n];
	for (int i = 0; own_opts[i].name && i < OWN_MAX; i++)
		opts[n++] = own_opts[i];
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		int done = contention_option(r, c, optarg);
		bool ok = done >= 0;
		if (done == 0 && c == 'm')
			models = optarg;
		else if (done == 0 && c != 'h' && c != BENCH_OPT_VERSION && c != '?' && c != ':')
			ok = own(c, optarg);
		else if (done == 0)
			return bench_help_version_or_error(r->prog, c, argv, opts, usage_text);
		if (!ok) {
			fputs(usage_text, stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fputs(usage_text, stderr);
		return 2;
	}
	int rc = contention_add_models(r, models, 2);
	return rc ? rc : -1;
}

/* Adds a kind for each model named in list (comma-separated, "" for none):
 * the lock hammered by tasks of a runtime of that model with `workers`
 * workers, made now and kept until contention_end. Returns 0; 2 for a
 * name that is no model or too many kinds, 1 when a runtime cannot be
 * made (both said on stderr). */
static inline int contention_add_models(contention_run *r, const char *list, int workers)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", list);
	char *save = NULL;
	for (char *m = strtok_r(buf, ",", &save); m; m = strtok_r(NULL, ",", &save)) {
		weft_config cfg;
		weft_config_init(&cfg);
		if (!bench_model_by_name(m, &cfg.model) || r->kinds == CONTENTION_MAX_KINDS) {
			fprintf(stderr, "%s: unknown model %s, or too many\n", r->prog, m);
			return 2;
		}
		cfg.workers = workers;
		weft_rt *rt;
		int rc = weft_rt_create(&rt, &cfg);
		if (rc != 0) {
			fprintf(stderr, "%s: cannot create a %s runtime: %s\n", r->prog, m,
			        weft_strerror(rc));
			return 1;
		}
		snprintf(r->model_label[r->kinds], sizeof(r->model_label[0]), "weft-%s",
		         weft_model_name(cfg.model));
		r->kind_names[r->kinds] = r->model_label[r->kinds];
		r->rt[r->kinds++] = rt;
	}
	return 0;
}

/* Destroys the runtimes of contention_add_models. */
static inline void contention_end(contention_run *r)
{
	for (int k = 0; k < r->kinds; k++)
		if (r->rt[k])
			weft_rt_destroy(r->rt[k]);
}

/* Runs body on `threads` kernel threads, or as tasks of r->rt[kind];
 * returns the span. */
static inline int64_t contention_run_kind(contention_run *r, int kind, contention_thread *ts,
                                          int threads, void (*body)(contention_thread *),
                                          int64_t *max_wait)
{
	if (r->rt[kind])
		return contention_run_tasks(r->rt[kind], ts, threads, body, max_wait);
	return contention_run_threads(r->prog, ts, threads, body, max_wait);
}

/* Every repetition of every lock at every thread count, interleaved. */
static inline void contention_measure_all(contention_run *r, contention_measure measure)
{
	for (int rep = 0; rep < r->reps; rep++)
		for (int c = 0; c < r->ncounts; c++)
			for (int k = 0; k < r->kinds; k++) {
				int kind = (k + rep) % r->kinds;
				int64_t w = 0;
				r->ns[c][kind][rep] = measure(r, kind, r->counts[c], &w);
				if (w > r->worst[c][kind])
					r->worst[c][kind] = w;
			}
}

/* The table: per thread count, each lock's median ns per `unit`, then the
 * ratio of each other lock's median to the first's; with timed, a column
 * of the longest wait seen (µs). */
static inline void contention_print(contention_run *r, const char *unit, bool timed)
{
	printf("%-8s %-12s %12s", "threads", "lock", unit);
	if (timed)
		printf(" %14s", "max wait us");
	putchar('\n');
	for (int c = 0; c < r->ncounts; c++) {
		double med[CONTENTION_MAX_KINDS];
		for (int k = 0; k < r->kinds; k++) {
			double v[CONTENTION_MAX_REPS];
			memcpy(v, r->ns[c][k], sizeof(double) * (size_t)r->reps);
			med[k] = bench_median(v, r->reps);
			printf("%-8d %-12s %12.1f", r->counts[c], r->kind_names[k], med[k]);
			if (timed)
				printf(" %14.1f", (double)r->worst[c][k] / 1000.0);
			putchar('\n');
		}
		for (int k = 1; k < r->kinds; k++)
			printf("%-8d %-12s %12.2fx  %s / %s\n", r->counts[c], "ratio",
			       med[k] / med[0], r->kind_names[k], r->kind_names[0]);
	}
}

#endif
