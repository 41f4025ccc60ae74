/* post_throughput: what one empty task costs, end to end.
 *
 * For every configuration below, one repetition posts N empty tasks and then
 * waits until all of them have run; the time from just before the first post
 * to the return of the wait, divided by N, is that repetition's "ns per task".
 * It therefore includes the post, the hand-off to a worker, running the
 * (empty) function and the completion bookkeeping that the final wait sees.
 * Creating the runtime or pool, initialising the tasks and tearing down are
 * outside the timed region.
 *
 * Configurations (names are what --only accepts):
 *
 *   threads-fifo      weft, model threads, policy fifo, all priorities 0
 *   threads-priority  weft, model threads, policy priority, random priorities 0..15
 *   spawn             weft, model spawn (a kernel thread per task), fewer tasks
 *   seed-heap         the seed scheduler's design, written here: one pthread
 *                     mutex, one condition variable shared by workers and the
 *                     waiter, a binary min-heap of task pointers keyed by
 *                     priority, pthread_cond_broadcast on every post and when
 *                     the remaining count reaches 0. Same random priorities as
 *                     threads-priority.
 *   mutex-fifo        the usual textbook pool for context: one mutex, a FIFO
 *                     linked list, pthread_cond_signal on post. It needs a
 *                     second condition variable for "all done": with one
 *                     shared cond, a signal could wake the waiting caller
 *                     instead of a worker and the task would sit unrun.
 *
 * Each runs at every worker count of --workers. The repetitions are
 * interleaved round-robin (rep 1 of every configuration, then rep 2, ...) and
 * the starting configuration rotates each repetition, so slow drifts of the
 * machine (frequency, a noisy neighbour) land on all configurations alike.
 *
 * Every task writes 1 into its own byte of an array; after each repetition
 * (untimed) the array is checked, so a runtime that dropped a task fails the
 * benchmark instead of looking fast. The task bodies are identical for weft
 * and for the baselines: no shared counter inside the timed region.
 *
 * Environment: weft_rt_create lets WEFT_* variables override weft_config
 * fields. This benchmark sets model, policy, workers and queue capacity in
 * code and compares them, so main() unsets every WEFT_* variable first (and
 * says so on stderr) and then checks the effective configuration of each
 * runtime it creates.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <weft/weft.h>

#include "bench_util.h"

#define PROG              "post_throughput"
#define DEFAULT_TASKS     1000000L
#define DEFAULT_SPAWN     20000L
#define DEFAULT_REPS      7
#define MIN_REPS          5
#define MAX_WORKER_COUNTS 16
#define PRIORITY_LEVELS   16

extern char **environ;

enum cfg_id {
	CFG_THREADS_FIFO,
	CFG_THREADS_PRIORITY,
	CFG_SPAWN,
	CFG_SEED_HEAP,
	CFG_MUTEX_FIFO,
	CFG_COUNT
};

static const char *const cfg_names[CFG_COUNT] = {
        [CFG_THREADS_FIFO] = "threads-fifo",
        [CFG_THREADS_PRIORITY] = "threads-priority",
        [CFG_SPAWN] = "spawn",
        [CFG_SEED_HEAP] = "seed-heap",
        [CFG_MUTEX_FIFO] = "mutex-fifo",
};

/* Configurations that post random priorities; the rest post priority 0. */
static bool uses_random_priority(enum cfg_id id)
{
	return id == CFG_THREADS_PRIORITY || id == CFG_SEED_HEAP;
}

struct options {
	long tasks;       /* tasks per repetition for every pool */
	long spawn_tasks; /* tasks per repetition for the spawn model */
	int reps;
	int workers[MAX_WORKER_COUNTS];
	int nworkers;
	bool only[CFG_COUNT];
	bool csv;
	uint64_t seed;
};

/* ---- failure handling ------------------------------------------------- */

static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, PROG ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

/* Every weft call goes through CHECK: anything but 0 aborts with its name. */
#define CHECK(call)                                                                 \
	do {                                                                        \
		int rc_ = (call);                                                   \
		if (rc_ != 0)                                                       \
			die("%s:%d: %s failed: %s (%s)", __FILE__, __LINE__, #call, \
			    weft_err_name(rc_), weft_strerror(rc_));                \
	} while (0)

/* pthread functions return an errno value instead of setting errno. */
#define PCHECK(call)                                                                           \
	do {                                                                                   \
		int rc_ = (call);                                                              \
		if (rc_ != 0)                                                                  \
			die("%s:%d: %s failed: %s", __FILE__, __LINE__, #call, strerror(rc_)); \
	} while (0)

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	if (p == NULL)
		die("out of memory (%zu x %zu bytes)", n, size);
	return p;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
		die("clock_gettime(CLOCK_MONOTONIC): %s", strerror(errno));
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* xorshift64*: deterministic priorities for a given --seed. */
static uint64_t rng_next(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dull;
}

/* ---- the task body: identical for every configuration ------------------ */

static void mark_ran(void *arg)
{
	*(unsigned char *)arg = 1;
}

static void verify_ran(const unsigned char *ran, long n, enum cfg_id id, int workers)
{
	long missing = 0;

	for (long i = 0; i < n; i++)
		missing += ran[i] != 1;
	if (missing != 0)
		die("%s with %d worker(s): %ld of %ld tasks did not run", cfg_names[id], workers,
		    missing, n);
}

/* ---- baselines: tasks -------------------------------------------------- */

struct btask {
	void (*fn)(void *arg);
	void *arg;
	int pri;
	struct btask *next; /* mutex-fifo list link */
};

/* ---- baseline 1: the seed scheduler's design ---------------------------
 *
 * A binary min-heap in an array, 0-based: the parent of i is (i - 1) / 2, its
 * children 2i + 1 and 2i + 2. As in the seed, an element holds the key next to
 * the task pointer, and equal keys come out in no particular order. */

struct heap_elem {
	int key;
	struct btask *t;
};

struct heap {
	struct heap_elem *data;
	long total;
	long capacity;
};

static bool heap_push(struct heap *h, struct btask *t)
{
	long i;

	if (h->total == h->capacity)
		return false;
	i = h->total++;
	while (i > 0) {
		long parent = (i - 1) / 2;

		if (h->data[parent].key <= t->pri)
			break;
		h->data[i] = h->data[parent];
		i = parent;
	}
	h->data[i].key = t->pri;
	h->data[i].t = t;
	return true;
}

static struct btask *heap_pop(struct heap *h)
{
	struct btask *top;
	struct heap_elem last;
	long i = 0;

	if (h->total == 0)
		return NULL;
	top = h->data[0].t;
	last = h->data[--h->total];
	for (;;) {
		long child = 2 * i + 1;

		if (child >= h->total)
			break;
		if (child + 1 < h->total && h->data[child + 1].key < h->data[child].key)
			child++;
		if (last.key <= h->data[child].key)
			break;
		h->data[i] = h->data[child];
		i = child;
	}
	if (h->total > 0)
		h->data[i] = last;
	return top;
}

/* Pops come out in non-decreasing key order, and every pushed task comes out
 * once. Runs at start-up so a broken heap cannot produce a flattering number. */
static void heap_selftest(uint64_t seed)
{
	enum { N = 5000 };
	static struct heap_elem data[N];
	static struct btask tasks[N];
	static unsigned char seen[N];
	struct heap h = {data, 0, N};

	for (int round = 0; round < 4; round++) {
		long n = 1 + (long)(rng_next(&seed) % N);
		int range = round % 2 ? PRIORITY_LEVELS : 1000000;
		int prev = -1;

		memset(seen, 0, sizeof(seen));
		for (long i = 0; i < n; i++) {
			tasks[i].pri = (int)(rng_next(&seed) % (uint64_t)range);
			tasks[i].arg = &seen[i];
			if (!heap_push(&h, &tasks[i]))
				die("heap self-test: push %ld of %ld refused", i, n);
		}
		for (long i = 0; i < n; i++) {
			struct btask *t = heap_pop(&h);

			if (t == NULL || t->pri < prev)
				die("heap self-test: pop %ld of %ld out of order", i, n);
			prev = t->pri;
			*(unsigned char *)t->arg += 1;
		}
		if (heap_pop(&h) != NULL)
			die("heap self-test: heap not empty after %ld pops", n);
		for (long i = 0; i < n; i++)
			if (seen[i] != 1)
				die("heap self-test: task %ld popped %d times", i, seen[i]);
	}
}

struct seed_pool {
	pthread_mutex_t lock;
	pthread_cond_t cv; /* workers wait for work, the caller for remaining == 0 */
	struct heap heap;  /* under lock */
	long remaining;    /* posted and not finished, under lock */
	bool done;         /* under lock: workers exit once the heap is empty */
	pthread_t *threads;
	int nthreads;
};

static void *seed_worker(void *arg)
{
	struct seed_pool *p = arg;

	for (;;) {
		struct btask *t;

		PCHECK(pthread_mutex_lock(&p->lock));
		while (p->heap.total == 0 && !p->done)
			PCHECK(pthread_cond_wait(&p->cv, &p->lock));
		if (p->heap.total == 0) {
			PCHECK(pthread_mutex_unlock(&p->lock));
			return NULL;
		}
		t = heap_pop(&p->heap);
		PCHECK(pthread_mutex_unlock(&p->lock));

		t->fn(t->arg);

		PCHECK(pthread_mutex_lock(&p->lock));
		if (--p->remaining == 0)
			PCHECK(pthread_cond_broadcast(&p->cv));
		PCHECK(pthread_mutex_unlock(&p->lock));
	}
}

static void seed_init(struct seed_pool *p, int workers, struct heap_elem *storage, long capacity)
{
	memset(p, 0, sizeof(*p));
	PCHECK(pthread_mutex_init(&p->lock, NULL));
	PCHECK(pthread_cond_init(&p->cv, NULL));
	p->heap.data = storage;
	p->heap.capacity = capacity;
	p->threads = xcalloc((size_t)workers, sizeof(*p->threads));
	p->nthreads = workers;
	for (int i = 0; i < workers; i++)
		PCHECK(pthread_create(&p->threads[i], NULL, seed_worker, p));
}

/* Like the seed's sched_post: a full queue refuses the task. */
static bool seed_post(struct seed_pool *p, struct btask *t)
{
	bool ok;

	PCHECK(pthread_mutex_lock(&p->lock));
	ok = heap_push(&p->heap, t);
	if (ok) {
		p->remaining++;
		PCHECK(pthread_cond_broadcast(&p->cv));
	}
	PCHECK(pthread_mutex_unlock(&p->lock));
	return ok;
}

static void seed_execute(struct seed_pool *p)
{
	PCHECK(pthread_mutex_lock(&p->lock));
	while (p->remaining > 0)
		PCHECK(pthread_cond_wait(&p->cv, &p->lock));
	PCHECK(pthread_mutex_unlock(&p->lock));
}

static void seed_fini(struct seed_pool *p)
{
	PCHECK(pthread_mutex_lock(&p->lock));
	p->done = true;
	PCHECK(pthread_cond_broadcast(&p->cv));
	PCHECK(pthread_mutex_unlock(&p->lock));
	for (int i = 0; i < p->nthreads; i++)
		PCHECK(pthread_join(p->threads[i], NULL));
	free(p->threads);
	PCHECK(pthread_cond_destroy(&p->cv));
	PCHECK(pthread_mutex_destroy(&p->lock));
}

/* ---- baseline 2: mutex + FIFO list + cond_signal ----------------------- */

struct fifo_pool {
	pthread_mutex_t lock;
	pthread_cond_t work;       /* signalled once per post */
	pthread_cond_t idle;       /* broadcast when remaining reaches 0 */
	struct btask *head, *tail; /* under lock */
	long remaining;            /* under lock */
	bool done;                 /* under lock */
	pthread_t *threads;
	int nthreads;
};

static void *fifo_worker(void *arg)
{
	struct fifo_pool *p = arg;

	for (;;) {
		struct btask *t;

		PCHECK(pthread_mutex_lock(&p->lock));
		while (p->head == NULL && !p->done)
			PCHECK(pthread_cond_wait(&p->work, &p->lock));
		t = p->head;
		if (t == NULL) {
			PCHECK(pthread_mutex_unlock(&p->lock));
			return NULL;
		}
		p->head = t->next;
		if (p->head == NULL)
			p->tail = NULL;
		PCHECK(pthread_mutex_unlock(&p->lock));

		t->fn(t->arg);

		PCHECK(pthread_mutex_lock(&p->lock));
		if (--p->remaining == 0)
			PCHECK(pthread_cond_broadcast(&p->idle));
		PCHECK(pthread_mutex_unlock(&p->lock));
	}
}

static void fifo_init(struct fifo_pool *p, int workers)
{
	memset(p, 0, sizeof(*p));
	PCHECK(pthread_mutex_init(&p->lock, NULL));
	PCHECK(pthread_cond_init(&p->work, NULL));
	PCHECK(pthread_cond_init(&p->idle, NULL));
	p->threads = xcalloc((size_t)workers, sizeof(*p->threads));
	p->nthreads = workers;
	for (int i = 0; i < workers; i++)
		PCHECK(pthread_create(&p->threads[i], NULL, fifo_worker, p));
}

static void fifo_post(struct fifo_pool *p, struct btask *t)
{
	t->next = NULL;
	PCHECK(pthread_mutex_lock(&p->lock));
	if (p->tail != NULL)
		p->tail->next = t;
	else
		p->head = t;
	p->tail = t;
	p->remaining++;
	PCHECK(pthread_cond_signal(&p->work));
	PCHECK(pthread_mutex_unlock(&p->lock));
}

static void fifo_execute(struct fifo_pool *p)
{
	PCHECK(pthread_mutex_lock(&p->lock));
	while (p->remaining > 0)
		PCHECK(pthread_cond_wait(&p->idle, &p->lock));
	PCHECK(pthread_mutex_unlock(&p->lock));
}

static void fifo_fini(struct fifo_pool *p)
{
	PCHECK(pthread_mutex_lock(&p->lock));
	p->done = true;
	PCHECK(pthread_cond_broadcast(&p->work));
	PCHECK(pthread_mutex_unlock(&p->lock));
	for (int i = 0; i < p->nthreads; i++)
		PCHECK(pthread_join(p->threads[i], NULL));
	free(p->threads);
	PCHECK(pthread_cond_destroy(&p->idle));
	PCHECK(pthread_cond_destroy(&p->work));
	PCHECK(pthread_mutex_destroy(&p->lock));
}

/* ---- one repetition of one configuration ------------------------------- */

struct bench {
	unsigned char *ran;     /* ran[i] = 1 once task i has run */
	const int *prio;        /* random priorities 0..15, one per task */
	weft_task *wtasks;      /* weft tasks, caller-owned */
	struct btask *btasks;   /* baseline tasks */
	struct heap_elem *heap; /* seed-heap storage, capacity = tasks */
	long capacity;
};

static double run_weft(struct bench *b, enum cfg_id id, int workers, long n)
{
	weft_config cfg, eff;
	weft_rt *rt;
	uint64_t t0, t1;

	CHECK(weft_config_init(&cfg));
	cfg.model = id == CFG_SPAWN ? WEFT_MODEL_SPAWN : WEFT_MODEL_THREADS;
	/* The spawn model has no ready queue; fifo is set only to be explicit. */
	cfg.policy = id == CFG_THREADS_PRIORITY ? WEFT_POLICY_PRIORITY : WEFT_POLICY_FIFO;
	cfg.workers = workers;
	cfg.queue_capacity = 0; /* unbounded: every post of the run must succeed */
	CHECK(weft_rt_create(&rt, &cfg));
	CHECK(weft_rt_config(rt, &eff));
	/* The spawn model has no queue and may report its own policy or worker
	 * count; for it only the model has to match. */
	if (eff.model != cfg.model || (cfg.model == WEFT_MODEL_THREADS &&
	                               (eff.policy != cfg.policy || eff.workers != cfg.workers)))
		die("%s: runtime came up as model %s, policy %s, %d worker(s); asked for %s, %s, "
		    "%d",
		    cfg_names[id], weft_model_name(eff.model), weft_policy_name(eff.policy),
		    eff.workers, weft_model_name(cfg.model), weft_policy_name(cfg.policy),
		    cfg.workers);

	memset(b->ran, 0, (size_t)n);
	for (long i = 0; i < n; i++) {
		CHECK(weft_task_init(&b->wtasks[i], mark_ran, &b->ran[i]));
		if (uses_random_priority(id))
			CHECK(weft_task_set_priority(&b->wtasks[i], b->prio[i]));
	}

	t0 = now_ns();
	for (long i = 0; i < n; i++)
		CHECK(weft_post(rt, &b->wtasks[i]));
	CHECK(weft_wait_all(rt));
	t1 = now_ns();

	CHECK(weft_rt_destroy(rt));
	verify_ran(b->ran, n, id, workers);
	return (double)(t1 - t0) / (double)n;
}

static void init_btasks(struct bench *b, enum cfg_id id, long n)
{
	memset(b->ran, 0, (size_t)n);
	for (long i = 0; i < n; i++) {
		b->btasks[i].fn = mark_ran;
		b->btasks[i].arg = &b->ran[i];
		b->btasks[i].pri = uses_random_priority(id) ? b->prio[i] : 0;
		b->btasks[i].next = NULL;
	}
}

static double run_seed_heap(struct bench *b, int workers, long n)
{
	struct seed_pool p;
	uint64_t t0, t1;

	init_btasks(b, CFG_SEED_HEAP, n);
	seed_init(&p, workers, b->heap, b->capacity);

	t0 = now_ns();
	for (long i = 0; i < n; i++)
		if (!seed_post(&p, &b->btasks[i]))
			die("seed-heap: queue full at task %ld", i);
	seed_execute(&p);
	t1 = now_ns();

	seed_fini(&p);
	verify_ran(b->ran, n, CFG_SEED_HEAP, workers);
	return (double)(t1 - t0) / (double)n;
}

static double run_mutex_fifo(struct bench *b, int workers, long n)
{
	struct fifo_pool p;
	uint64_t t0, t1;

	init_btasks(b, CFG_MUTEX_FIFO, n);
	fifo_init(&p, workers);

	t0 = now_ns();
	for (long i = 0; i < n; i++)
		fifo_post(&p, &b->btasks[i]);
	fifo_execute(&p);
	t1 = now_ns();

	fifo_fini(&p);
	verify_ran(b->ran, n, CFG_MUTEX_FIFO, workers);
	return (double)(t1 - t0) / (double)n;
}

static double run_one(struct bench *b, enum cfg_id id, int workers, long n)
{
	switch (id) {
	case CFG_THREADS_FIFO:
	case CFG_THREADS_PRIORITY:
	case CFG_SPAWN:
		return run_weft(b, id, workers, n);
	case CFG_SEED_HEAP:
		return run_seed_heap(b, workers, n);
	case CFG_MUTEX_FIFO:
		return run_mutex_fifo(b, workers, n);
	case CFG_COUNT:
		break;
	}
	die("unknown configuration %d", (int)id);
	return 0;
}

/* ---- statistics and report --------------------------------------------- */

struct summary {
	double median, min, max;
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static struct summary summarize(const double *samples, int n)
{
	double *s = xcalloc((size_t)n, sizeof(*s));
	struct summary r;

	memcpy(s, samples, (size_t)n * sizeof(*s));
	qsort(s, (size_t)n, sizeof(*s), cmp_double);
	r.min = s[0];
	r.max = s[n - 1];
	r.median = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
	free(s);
	return r;
}

/* "2.31x cheaper" when this configuration beats the reference, "4.0x more
 * expensive" when it does not. ratio = reference / this. */
static void format_ratio(char *buf, size_t size, double ratio)
{
	if (ratio >= 1.0)
		snprintf(buf, size, "%.2fx cheaper", ratio);
	else
		snprintf(buf, size, "%.2fx more expensive", 1.0 / ratio);
}

static void cpu_model(char *buf, size_t size)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[512];

	snprintf(buf, size, "unknown CPU");
	if (f == NULL)
		return;
	while (fgets(line, sizeof(line), f) != NULL) {
		char *colon = strchr(line, ':');

		if (strncmp(line, "model name", 10) != 0 || colon == NULL)
			continue;
		colon++;
		while (*colon == ' ' || *colon == '\t')
			colon++;
		colon[strcspn(colon, "\n")] = '\0';
		snprintf(buf, size, "%s", colon);
		break;
	}
	fclose(f);
}

static void print_machine(FILE *out, const struct options *o)
{
	char model[256];
	cpu_set_t set;
	int affinity = -1;

	cpu_model(model, sizeof(model));
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		affinity = CPU_COUNT(&set);
	fprintf(out, "machine: nproc %ld (%d in affinity mask), %s; weft %d.%d.%d; cc %s\n",
	        sysconf(_SC_NPROCESSORS_ONLN), affinity, model, WEFT_VERSION_MAJOR,
	        WEFT_VERSION_MINOR, WEFT_VERSION_PATCH, __VERSION__);
	fprintf(out,
	        "tasks per repetition: %ld (pools), %ld (spawn); repetitions: %d, interleaved\n",
	        o->tasks, o->spawn_tasks, o->reps);
	fprintf(out,
	        "priorities: threads-priority and seed-heap post the same random priorities 0..%d "
	        "(--seed %llu); the others post 0\n",
	        PRIORITY_LEVELS - 1, (unsigned long long)o->seed);
}

/* ---- command line ------------------------------------------------------ */

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: " PROG " [options]\n"
	        "\n"
	        "Nanoseconds per empty task: post N tasks, wait until all have run, divide the\n"
	        "elapsed time by N. Compares weft's threads model (fifo and priority policies)\n"
	        "and spawn model with two baselines built into this program: the seed\n"
	        "scheduler's design (one mutex, one cond, binary min-heap, broadcast wakeups)\n"
	        "and a mutex + FIFO list pool (cond_signal). Repetitions are interleaved\n"
	        "round-robin across configurations. Every WEFT_* environment variable is unset\n"
	        "at start-up, because it would override the configuration set in code.\n"
	        "\n"
	        "options:\n"
	        "  --tasks N          tasks per repetition for the pools (default %ld)\n"
	        "  --spawn-tasks N    tasks per repetition for spawn (default min(%ld, --tasks))\n"
	        "  --reps R           repetitions (default %d; fewer than %d only for smoke "
	        "tests)\n"
	        "  --workers LIST     comma-separated worker counts (default 1,2)\n"
	        "  --only LIST        comma-separated configurations to run, from:\n"
	        "                     threads-fifo, threads-priority, spawn, seed-heap, "
	        "mutex-fifo\n"
	        "  --seed S           seed for the random priorities (default 1)\n"
	        "  --csv              print CSV on stdout (machine description goes to stderr)\n"
	        "  --help             this text\n"
	        "  --version          the weft version\n",
	        DEFAULT_TASKS, DEFAULT_SPAWN, DEFAULT_REPS, MIN_REPS);
}

static long parse_long(const char *opt, const char *s, long lo, long hi)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
		die("%s: expected an integer in %ld..%ld, got '%s'", opt, lo, hi, s);
	return v;
}

static void parse_workers(struct options *o, const char *arg)
{
	char *copy = strdup(arg), *save = NULL;

	if (copy == NULL)
		die("out of memory");
	o->nworkers = 0;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (o->nworkers == MAX_WORKER_COUNTS)
			die("--workers: at most %d worker counts", MAX_WORKER_COUNTS);
		o->workers[o->nworkers++] = (int)parse_long("--workers", tok, 1, 1024);
	}
	free(copy);
	if (o->nworkers == 0)
		die("--workers: empty list");
}

static void parse_only(struct options *o, const char *arg)
{
	char *copy = strdup(arg), *save = NULL;
	bool any = false;

	if (copy == NULL)
		die("out of memory");
	memset(o->only, 0, sizeof(o->only));
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int id;

		for (id = 0; id < CFG_COUNT; id++)
			if (strcmp(tok, cfg_names[id]) == 0)
				break;
		if (id == CFG_COUNT)
			die("--only: unknown configuration '%s' (see --help)", tok);
		o->only[id] = true;
		any = true;
	}
	free(copy);
	if (!any)
		die("--only: empty list");
}

static void parse_args(struct options *o, int argc, char **argv)
{
	bool spawn_set = false;

	o->tasks = DEFAULT_TASKS;
	o->spawn_tasks = DEFAULT_SPAWN;
	o->reps = DEFAULT_REPS;
	o->workers[0] = 1;
	o->workers[1] = 2;
	o->nworkers = 2;
	for (int i = 0; i < CFG_COUNT; i++)
		o->only[i] = true;
	o->csv = false;
	o->seed = 1;

	static const struct option opts[] = {{"tasks", required_argument, NULL, 't'},
	                                     {"spawn-tasks", required_argument, NULL, 's'},
	                                     {"reps", required_argument, NULL, 'r'},
	                                     {"workers", required_argument, NULL, 'w'},
	                                     {"only", required_argument, NULL, 'o'},
	                                     {"seed", required_argument, NULL, 'S'},
	                                     {"csv", no_argument, NULL, 'c'},
	                                     {"help", no_argument, NULL, 'h'},
	                                     {"version", no_argument, NULL, BENCH_OPT_VERSION},
	                                     {0}};
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			o->tasks = parse_long("--tasks", optarg, 1, 1L << 30);
			break;
		case 's':
			o->spawn_tasks = parse_long("--spawn-tasks", optarg, 1, 1L << 30);
			spawn_set = true;
			break;
		case 'r':
			o->reps = (int)parse_long("--reps", optarg, 1, 1000);
			break;
		case 'w':
			parse_workers(o, optarg);
			break;
		case 'o':
			parse_only(o, optarg);
			break;
		case 'S':
			o->seed = (uint64_t)parse_long("--seed", optarg, 1, 0x7fffffffL);
			break;
		case 'c':
			o->csv = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			if (c != BENCH_OPT_VERSION)
				usage(stderr);
			exit(bench_help_version_or_error(PROG, c, argv, opts, ""));
		}
	}
	if (optind < argc) {
		usage(stderr);
		fprintf(stderr, PROG ": unexpected argument '%s'\n", argv[optind]);
		exit(2);
	}
	if (!spawn_set && o->spawn_tasks > o->tasks)
		o->spawn_tasks = o->tasks;
	if (o->reps < MIN_REPS)
		fprintf(stderr,
		        PROG
		        ": warning: --reps %d is below %d; the medians below are not meaningful "
		        "(use this only as a smoke test)\n",
		        o->reps, MIN_REPS);
}

/* weft_rt_create lets WEFT_* variables override weft_config; the numbers here
 * must describe the configuration set in code, so drop all of them. */
static void unset_weft_env(void)
{
	char names[64][64];
	int n = 0;

	for (char **e = environ; e != NULL && *e != NULL && n < 64; e++) {
		size_t len = strcspn(*e, "=");

		if (strncmp(*e, "WEFT_", 5) != 0 || len >= sizeof(names[0]))
			continue;
		memcpy(names[n], *e, len);
		names[n][len] = '\0';
		n++;
	}
	for (int i = 0; i < n; i++) {
		fprintf(stderr, PROG ": note: unsetting %s (config is set in code)\n", names[i]);
		if (unsetenv(names[i]) != 0)
			die("unsetenv(%s): %s", names[i], strerror(errno));
	}
}

/* ---- main -------------------------------------------------------------- */

int main(int argc, char **argv)
{
	cli_check_stdout_at_exit(PROG);
	struct options o;
	struct bench b;
	long max_n;
	int *prio;
	uint64_t rng;
	double *samples; /* [cfg][worker index][rep] */
	struct summary sum[CFG_COUNT][MAX_WORKER_COUNTS];
	bool progress = isatty(STDERR_FILENO);

	unset_weft_env();
	parse_args(&o, argc, argv);
	heap_selftest(o.seed);

	max_n = o.tasks > o.spawn_tasks ? o.tasks : o.spawn_tasks;
	b.capacity = max_n;
	b.ran = xcalloc((size_t)max_n, 1);
	prio = xcalloc((size_t)max_n, sizeof(*prio));
	rng = o.seed * 0x9e3779b97f4a7c15ull + 1;
	for (long i = 0; i < max_n; i++)
		prio[i] = (int)(rng_next(&rng) % PRIORITY_LEVELS);
	b.prio = prio;
	b.wtasks = xcalloc((size_t)max_n, sizeof(*b.wtasks));
	b.btasks = xcalloc((size_t)max_n, sizeof(*b.btasks));
	b.heap = xcalloc((size_t)max_n, sizeof(*b.heap));
	samples = xcalloc((size_t)CFG_COUNT * MAX_WORKER_COUNTS * (size_t)o.reps, sizeof(*samples));
#define SAMPLE(c, w, r) \
	samples[((size_t)(c)*MAX_WORKER_COUNTS + (size_t)(w)) * (size_t)o.reps + (size_t)(r)]

	for (int r = 0; r < o.reps; r++) {
		for (int wi = 0; wi < o.nworkers; wi++) {
			for (int k = 0; k < CFG_COUNT; k++) {
				enum cfg_id id = (enum cfg_id)((k + r) % CFG_COUNT);
				long n = id == CFG_SPAWN ? o.spawn_tasks : o.tasks;

				if (!o.only[id])
					continue;
				SAMPLE(id, wi, r) = run_one(&b, id, o.workers[wi], n);
			}
		}
		if (progress)
			fprintf(stderr, PROG ": repetition %d/%d done\n", r + 1, o.reps);
	}

	for (int id = 0; id < CFG_COUNT; id++)
		for (int wi = 0; wi < o.nworkers; wi++)
			if (o.only[id])
				sum[id][wi] = summarize(&SAMPLE(id, wi, 0), o.reps);

	if (o.csv) {
		print_machine(stderr, &o);
		printf("config,workers,tasks,reps,median_ns,min_ns,max_ns,seed_heap_over_this\n");
		for (int id = 0; id < CFG_COUNT; id++) {
			for (int wi = 0; wi < o.nworkers; wi++) {
				if (!o.only[id])
					continue;
				printf("%s,%d,%ld,%d,%.2f,%.2f,%.2f,", cfg_names[id], o.workers[wi],
				       id == CFG_SPAWN ? o.spawn_tasks : o.tasks, o.reps,
				       sum[id][wi].median, sum[id][wi].min, sum[id][wi].max);
				if (o.only[CFG_SEED_HEAP])
					printf("%.4f",
					       sum[CFG_SEED_HEAP][wi].median / sum[id][wi].median);
				printf("\n");
			}
		}
	} else {
		printf("ns per empty task: post -> run -> completion seen by the final wait; "
		       "median of %d\n",
		       o.reps);
		print_machine(stdout, &o);
		printf("\n%-18s %7s %12s %10s %10s   %s\n", "config", "workers", "median ns",
		       "min ns", "max ns", "vs seed-heap (same workers)");
		for (int wi = 0; wi < o.nworkers; wi++) {
			for (int id = 0; id < CFG_COUNT; id++) {
				char ratio[64] = "-";

				if (!o.only[id])
					continue;
				if (id == CFG_SEED_HEAP)
					snprintf(ratio, sizeof(ratio), "baseline");
				else if (o.only[CFG_SEED_HEAP])
					format_ratio(ratio, sizeof(ratio),
					             sum[CFG_SEED_HEAP][wi].median /
					                     sum[id][wi].median);
				printf("%-18s %7d %12.1f %10.1f %10.1f   %s\n", cfg_names[id],
				       o.workers[wi], sum[id][wi].median, sum[id][wi].min,
				       sum[id][wi].max, ratio);
			}
		}
		if (o.only[CFG_SPAWN] && o.only[CFG_THREADS_FIFO]) {
			printf("\n");
			for (int wi = 0; wi < o.nworkers; wi++) {
				char ratio[64];

				format_ratio(ratio, sizeof(ratio),
				             sum[CFG_THREADS_FIFO][wi].median /
				                     sum[CFG_SPAWN][wi].median);
				printf("spawn vs threads-fifo, %d worker%s: %s per task\n",
				       o.workers[wi], cli_plural(o.workers[wi]), ratio);
			}
		}
	}
#undef SAMPLE

	free(samples);
	free(b.heap);
	free(b.btasks);
	free(b.wtasks);
	free(prio);
	free(b.ran);
	return 0;
}
