/* fiber_switch: what a fiber context switch and a fiber's life cost, next to
 * the baselines they replace, all in one run.
 *
 *   yield        two weft contexts (src/fiber/context.h) switch to each other
 *                N times each; ns per switch, one direction
 *   swapcontext  the same ping-pong between two ucontexts with glibc's
 *                swapcontext (saves the signal mask: a system call per swap)
 *   create       weft__context_make on one preallocated stack, a switch in,
 *                the entry switches back for good, weft__context_release;
 *                ns per context. Stack allocation is the stack pool's job and
 *                is not timed here.
 *   pthread      pthread_create + pthread_join of a thread that returns at
 *                once; ns per thread
 *   task-yield   two tasks on the fibers model calling weft_yield in turn:
 *                ns per weft_yield (through the scheduler and the policy)
 *   parked       (once, not timed) RSS growth per fiber while N tasks on the
 *                fibers model are parked on a semaphore (16 KiB stacks)
 *   task-run     a task posts N empty tasks on the fibers model; ns from the
 *                first post until the last has ended (each gets a pooled
 *                stack, a context, runs, and gives the stack back)
 *
 * Repetitions are interleaved (rep 1 of every configuration, then rep 2,
 * ...) with the starting configuration rotating, so drifts of the machine
 * land on all alike; each configuration reports the median, min and max of
 * its repetitions, and the ratios are of medians from this run. The timed
 * region of yield and swapcontext starts and ends inside the first context,
 * after both contexts have started, so creation is not in it.
 *
 *   fiber_switch [--switches N] [--swaps N] [--creates N] [--threads N]
 *                [--reps R] [--csv]
 *
 * Under a sanitizer (the smoke test) the numbers mean nothing. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>

#include "fiber/context.h"
#include <getopt.h>
#include <weft/weft.h>

#include "bench_util.h"

#define PROG         "fiber_switch"
#define DEFAULT_REPS 7
#define MIN_REPS     5
#define MAX_REPS     101
#define STACK_SIZE   (64 * 1024)

enum cfg_id {
	CFG_YIELD,
	CFG_SWAPCONTEXT,
	CFG_CREATE,
	CFG_PTHREAD,
	CFG_TASK_YIELD,
	CFG_TASK_RUN,
	CFG_COUNT
};

static const char *const cfg_names[CFG_COUNT] = {
        [CFG_YIELD] = "yield",     [CFG_SWAPCONTEXT] = "swapcontext", [CFG_CREATE] = "create",
        [CFG_PTHREAD] = "pthread", [CFG_TASK_YIELD] = "task-yield",   [CFG_TASK_RUN] = "task-run",
};

static const char *const cfg_units[CFG_COUNT] = {
        [CFG_YIELD] = "ns/switch",           [CFG_SWAPCONTEXT] = "ns/switch",
        [CFG_CREATE] = "ns/create+run+join", [CFG_PTHREAD] = "ns/create+join",
        [CFG_TASK_YIELD] = "ns/weft_yield",  [CFG_TASK_RUN] = "ns/post+run+end",
};

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void *stack_map(void)
{
	void *p =
	        mmap(NULL, STACK_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror(PROG ": mmap");
		exit(1);
	}
	return p;
}

static void *stack_a, *stack_b;

/* ------------------------------------------------------------ yield */

static weft__context y_main, y_a, y_b;
static long y_n, y_count;
static double y_ns;

/* Both fibers run this loop and switch from the one call site in it, as
 * fibers that yield through the same function do. a starts the clock once
 * b has started, stops it after y_n round trips, and leaves. */
static void y_entry(void *arg)
{
	bool is_a = arg != NULL;
	weft__context *self = is_a ? &y_a : &y_b, *other = is_a ? &y_b : &y_a;
	double t0 = 0;
	for (long i = -1;; i++) {
		if (is_a && i == 0)
			t0 = now_ns();
		if (is_a && i == y_n)
			break;
		if (!is_a)
			y_count++;
		weft__context_switch(self, other);
	}
	y_ns = now_ns() - t0;
	weft__context_switch(NULL, &y_main);
}

static double run_yield(long n)
{
	y_n = n;
	y_count = 0;
	weft__context_init_thread(&y_main);
	weft__context_make(&y_a, stack_a, STACK_SIZE, y_entry, &y_a);
	weft__context_make(&y_b, stack_b, STACK_SIZE, y_entry, NULL);
	weft__context_switch(&y_main, &y_a);
	weft__context_release(&y_a);
	weft__context_release(&y_b);
	weft__context_release(&y_main);
	if (y_count != n + 1) {
		fprintf(stderr, PROG ": yield: %ld switches into b, expected %ld\n", y_count,
		        n + 1);
		exit(1);
	}
	return y_ns / (2.0 * (double)n);
}

/* ------------------------------------------------------------ swapcontext */

static ucontext_t u_main, u_a, u_b;
static long u_n, u_count;
static double u_ns;

static void u_entry_a(void)
{
	swapcontext(&u_a, &u_b);
	double t0 = now_ns();
	for (long i = 0; i < u_n; i++)
		swapcontext(&u_a, &u_b);
	u_ns = now_ns() - t0;
	setcontext(&u_main);
}

static void u_entry_b(void)
{
	for (;;) {
		u_count++;
		swapcontext(&u_b, &u_a);
	}
}

static void u_make(ucontext_t *uc, void *stack, void (*fn)(void))
{
	if (getcontext(uc) != 0) {
		perror(PROG ": getcontext");
		exit(1);
	}
	uc->uc_stack.ss_sp = stack;
	uc->uc_stack.ss_size = STACK_SIZE;
	uc->uc_link = NULL;
	makecontext(uc, fn, 0);
}

static double run_swapcontext(long n)
{
	u_n = n;
	u_count = 0;
	u_make(&u_a, stack_a, u_entry_a);
	u_make(&u_b, stack_b, u_entry_b);
	if (swapcontext(&u_main, &u_a) != 0) {
		perror(PROG ": swapcontext");
		exit(1);
	}
	if (u_count != n + 1) {
		fprintf(stderr, PROG ": swapcontext: %ld swaps into b, expected %ld\n", u_count,
		        n + 1);
		exit(1);
	}
	return u_ns / (2.0 * (double)n);
}

/* ------------------------------------------------------------ create */

static weft__context c_main, c_ctx;
static long c_ran;

static void c_entry(void *arg)
{
	(void)arg;
	c_ran++;
	weft__context_switch(NULL, &c_main);
}

static double run_create(long n)
{
	c_ran = 0;
	weft__context_init_thread(&c_main);
	double t0 = now_ns();
	for (long i = 0; i < n; i++) {
		weft__context_make(&c_ctx, stack_a, STACK_SIZE, c_entry, NULL);
		weft__context_switch(&c_main, &c_ctx);
		weft__context_release(&c_ctx);
	}
	double ns = now_ns() - t0;
	weft__context_release(&c_main);
	if (c_ran != n) {
		fprintf(stderr, PROG ": create: %ld entries ran, expected %ld\n", c_ran, n);
		exit(1);
	}
	return ns / (double)n;
}

/* ------------------------------------------------------------ pthread */

static void *p_entry(void *arg)
{
	return arg;
}

static double run_pthread(long n)
{
	double t0 = now_ns();
	for (long i = 0; i < n; i++) {
		pthread_t t;
		void *ret = NULL;
		if (pthread_create(&t, NULL, p_entry, (void *)(uintptr_t)(i + 1)) != 0) {
			perror(PROG ": pthread_create");
			exit(1);
		}
		if (pthread_join(t, &ret) != 0 || ret != (void *)(uintptr_t)(i + 1)) {
			fprintf(stderr, PROG ": pthread_join failed\n");
			exit(1);
		}
	}
	return (now_ns() - t0) / (double)n;
}

/* ------------------------------------------------------------ main */

typedef struct summary {
	double median, min, max;
} summary;

/* ---- the fibers model: what applications see ---------------------------- */

static weft_rt *fibers_rt(void)
{
	weft_config cfg;
	weft_rt *rt;
	weft_config_init(&cfg);
	cfg.model = WEFT_MODEL_FIBERS;
	cfg.policy = WEFT_POLICY_FIFO;
	cfg.stack_size = 16384;
	if (weft_rt_create(&rt, &cfg) != 0) {
		fprintf(stderr, PROG ": cannot create a fibers runtime\n");
		exit(1);
	}
	return rt;
}

static long ty_n;
static double ty_t0, ty_t1;

/* Two tasks yield to each other; the first to start takes the start time,
 * the last to finish the end time. */
static void ty_task(void *arg)
{
	(void)arg;
	if (ty_t0 == 0)
		ty_t0 = now_ns();
	for (long i = 0; i < ty_n; i++)
		weft_yield();
	ty_t1 = now_ns();
}

static double run_task_yield(long n)
{
	weft_rt *rt = fibers_rt();
	weft_task t[2];
	ty_n = n;
	ty_t0 = 0;
	for (int i = 0; i < 2; i++) {
		weft_task_init(&t[i], ty_task, NULL);
		weft_post(rt, &t[i]);
	}
	weft_wait_all(rt);
	weft_rt_destroy(rt);
	return (ty_t1 - ty_t0) / (double)(2 * n);
}

static void tr_empty(void *arg)
{
	(void)arg;
}

static weft_task *tr_tasks;

/* One task posts n empty tasks and they all run to their end: a fiber each
 * (stack from the pool, context, run, stack back), as the scheduler sees it. */
static void tr_root(void *arg)
{
	long n = *(long *)arg;
	weft_rt *rt = weft_rt_current();
	ty_t0 = now_ns();
	for (long i = 0; i < n; i++)
		weft_post(rt, &tr_tasks[i]);
}

static double run_task_run(long n)
{
	weft_rt *rt = fibers_rt();
	weft_task root;
	tr_tasks = calloc((size_t)n, sizeof(*tr_tasks));
	if (!tr_tasks)
		exit(1);
	for (long i = 0; i < n; i++) /* outside the timed region: first touch faults */
		weft_task_init(&tr_tasks[i], tr_empty, NULL);
	weft_task_init(&root, tr_root, &n);
	weft_post(rt, &root);
	weft_wait_all(rt);
	double t1 = now_ns();
	weft_rt_destroy(rt);
	free(tr_tasks);
	return (t1 - ty_t0) / (double)n;
}

/* ---- memory: RSS per parked fiber --------------------------------------- */

static long rss_bytes(void)
{
	long pages = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (!f || fscanf(f, "%ld %ld", &pages, &resident) != 2)
		resident = 0;
	if (f)
		fclose(f);
	return resident * 4096;
}

static weft_sem park_sem;
static _Atomic long parked_now;

static void park_task(void *arg)
{
	(void)arg;
	atomic_fetch_add(&parked_now, 1);
	weft_sem_wait(&park_sem);
}

/* n tasks on the fibers model (16 KiB stacks) each park on a semaphore;
 * the RSS growth while all are parked, divided by n. Task structs are
 * allocated and touched before the first reading. */
static double parked_rss(long n)
{
	weft_task *t = calloc((size_t)n, sizeof(*t));
	if (!t)
		exit(1);
	for (long i = 0; i < n; i++)
		weft_task_init(&t[i], park_task, NULL);
	weft_sem_init(&park_sem, 0);
	atomic_store(&parked_now, 0);
	weft_rt *rt = fibers_rt();
	long before = rss_bytes();
	for (long i = 0; i < n; i++)
		weft_post(rt, &t[i]);
	while (atomic_load(&parked_now) < n) { /* until every task has parked */
		struct timespec ts = {0, 10 * 1000000};
		nanosleep(&ts, NULL);
	}
	long after = rss_bytes();
	for (long i = 0; i < n; i++)
		weft_sem_post(&park_sem);
	weft_wait_all(rt);
	weft_rt_destroy(rt);
	free(t);
	return (double)(after - before) / (double)n;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static summary summarize(const double *v, int n)
{
	double s[MAX_REPS];
	memcpy(s, v, (size_t)n * sizeof(*s));
	qsort(s, (size_t)n, sizeof(*s), cmp_double);
	summary r = {n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2, s[0], s[n - 1]};
	return r;
}

static long parse_count(const char *opt, const char *val)
{
	char *end;
	long v = val ? strtol(val, &end, 10) : 0;
	if (!val || *end || v < 1) {
		fprintf(stderr, PROG ": --%s needs a positive integer\n", opt);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	cli_check_stdout_at_exit(PROG);
	long counts[CFG_COUNT] = {
	        [CFG_YIELD] = 10000000, [CFG_SWAPCONTEXT] = 500000, [CFG_CREATE] = 2000000,
	        [CFG_PTHREAD] = 5000,   [CFG_TASK_YIELD] = 2000000, [CFG_TASK_RUN] = 1000000,
	};
	int reps = DEFAULT_REPS, csv = 0;
	long parked = 100000;
	enum { OPT_REPS = CFG_COUNT, OPT_PARKED, OPT_CSV, OPT_VERSION = BENCH_OPT_VERSION };
	static const struct option opts[] = {
	        {"switches", required_argument, NULL, CFG_YIELD},
	        {"swaps", required_argument, NULL, CFG_SWAPCONTEXT},
	        {"creates", required_argument, NULL, CFG_CREATE},
	        {"threads", required_argument, NULL, CFG_PTHREAD},
	        {"task-yields", required_argument, NULL, CFG_TASK_YIELD},
	        {"tasks", required_argument, NULL, CFG_TASK_RUN},
	        {"parked", required_argument, NULL, OPT_PARKED},
	        {"reps", required_argument, NULL, OPT_REPS},
	        {"csv", no_argument, NULL, OPT_CSV},
	        {"help", no_argument, NULL, 'h'},
	        {"version", no_argument, NULL, OPT_VERSION},
	        {0}};
	static const char usage[] =
	        "usage: " PROG " [--switches N] [--swaps N] [--creates N] [--threads N]\n"
	        "       [--task-yields N] [--tasks N] [--parked N] [--reps R] [--csv]\n"
	        "       " PROG " --help | --version\n"
	        "ns per fiber switch and per fiber create+run+join against swapcontext and\n"
	        "pthread_create+join; medians of R repetitions (default 7).\n";
	int c, li;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, &li)) != -1) {
		if (c >= 0 && c < CFG_COUNT)
			counts[c] = parse_count(opts[li].name, optarg);
		else if (c == OPT_PARKED)
			parked = parse_count("parked", optarg);
		else if (c == OPT_REPS)
			reps = (int)parse_count("reps", optarg);
		else if (c == OPT_CSV)
			csv = 1;
		else
			return bench_help_version_or_error(PROG, c, argv, opts, usage);
	}
	if (optind < argc) {
		fprintf(stderr, PROG ": unexpected argument '%s'\n%s", argv[optind], usage);
		return 2;
	}
	if (reps > MAX_REPS) {
		fprintf(stderr, PROG ": --reps is at most %d\n", MAX_REPS);
		return 2;
	}
	if (reps < MIN_REPS)
		fprintf(stderr,
		        PROG ": warning: --reps %d is below %d; the medians are not meaningful\n",
		        reps, MIN_REPS);

	stack_a = stack_map();
	stack_b = stack_map();
	double (*const run[CFG_COUNT])(long) = {
	        [CFG_YIELD] = run_yield,           [CFG_SWAPCONTEXT] = run_swapcontext,
	        [CFG_CREATE] = run_create,         [CFG_PTHREAD] = run_pthread,
	        [CFG_TASK_YIELD] = run_task_yield, [CFG_TASK_RUN] = run_task_run,
	};
	double ns[CFG_COUNT][MAX_REPS];
	for (int r = 0; r < reps; r++)
		for (int k = 0; k < CFG_COUNT; k++) {
			int id = (r + k) % CFG_COUNT;
			ns[id][r] = run[id](counts[id]);
		}

	double parked_bytes = parked_rss(parked);
	summary sum[CFG_COUNT];
	for (int id = 0; id < CFG_COUNT; id++)
		sum[id] = summarize(ns[id], reps);
	double swap_over_yield = sum[CFG_SWAPCONTEXT].median / sum[CFG_YIELD].median;
	double pthread_over_create = sum[CFG_PTHREAD].median / sum[CFG_CREATE].median;

	if (csv) {
		printf("config,count,reps,median_ns,min_ns,max_ns\n");
		for (int id = 0; id < CFG_COUNT; id++)
			printf("%s,%ld,%d,%.2f,%.2f,%.2f\n", cfg_names[id], counts[id], reps,
			       sum[id].median, sum[id].min, sum[id].max);
		printf("parked_rss_bytes,%ld,1,%.0f,,\n", parked, parked_bytes);
		printf("ratio,swapcontext/yield,,%.1f,,\n", swap_over_yield);
		printf("ratio,pthread/create,,%.1f,,\n", pthread_over_create);
	} else {
		printf("%-12s %10s %10s %10s %10s  %s\n", "config", "count", "median", "min", "max",
		       "unit");
		for (int id = 0; id < CFG_COUNT; id++)
			printf("%-12s %10ld %10.2f %10.2f %10.2f  %s\n", cfg_names[id], counts[id],
			       sum[id].median, sum[id].min, sum[id].max, cfg_units[id]);
		printf("\nparked: %ld fibers (16 KiB stacks) on the fibers model: %.0f bytes "
		       "of RSS each\n",
		       parked, parked_bytes);
		printf("\nratios of medians, %d interleaved repetitions:\n", reps);
		printf("  swapcontext / yield   %8.1fx\n", swap_over_yield);
		printf("  pthread / create      %8.1fx\n", pthread_over_create);
	}
	munmap(stack_a, STACK_SIZE);
	munmap(stack_b, STACK_SIZE);
	return 0;
}
