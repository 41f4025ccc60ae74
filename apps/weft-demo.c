/* weft-demo: what weft does today, in a few seconds (`make demo`).
 *
 *   weft-demo [--quick]
 *   weft-demo --version
 *
 * 1. The same two workloads (CPU-bound tasks, and tiny tasks that show the
 *    per-task cost) through the native API under the threads model with 1
 *    and 2 workers, the spawn model, the fibers model and the mn model
 *    with 2 workers, with timings.
 * 2. Priority order: smaller first, FIFO among equals, under every model,
 *    and what the fifo policy does instead.
 * 3. Run-time selection: a runtime configured in code is retuned by
 *    WEFT_MODEL / WEFT_WORKERS, read when the runtime is created.
 * 4. Waiting: tasks that sleep hold a worker each under threads, but park
 *    and overlap under fibers and mn; then the case mn is for: many
 *    sleeping fibers and a fork-join computation in one runtime, where
 *    fibers overlaps the sleeps on one core and mn also uses both cores.
 * 5. The seed's programs ported to the seed-compatible API (seed-sudoku,
 *    seed-sort, built next to this program), run as they are and retuned
 *    through the environment.
 *
 * --quick shrinks the workloads (for tests, and for sanitizer builds). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <weft/weft.h>

#include "common/cli.h"

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void die(const char *what, int rc)
{
	fprintf(stderr, "weft-demo: %s: %s\n", what, weft_strerror(rc));
	exit(1);
}

static weft_rt *start(weft_model model, int workers, weft_policy policy)
{
	weft_config cfg;
	weft_config_init(&cfg);
	cfg.model = model;
	cfg.workers = workers;
	cfg.policy = policy;
	weft_rt *rt;
	int rc = weft_rt_create(&rt, &cfg);
	if (rc)
		die("weft_rt_create", rc);
	return rt;
}

/* ------------------------------------------------------------ 1. workloads */

typedef struct work {
	uint64_t seed;
	uint64_t result;
	long iters;
} work_t;

static void compute(void *arg)
{
	work_t *w = arg;
	uint64_t x = w->seed | 1;
	for (long i = 0; i < w->iters; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
	}
	w->result = x;
}

static _Atomic long tiny_runs;

static void tiny(void *arg)
{
	(void)arg;
	atomic_fetch_add_explicit(&tiny_runs, 1, memory_order_relaxed);
}

/* Posts n tasks of fn over args (stride bytes apart) and waits. */
static double run_batch(weft_rt *rt, weft_task *tasks, long n, weft_fn fn, char *args,
                        size_t stride)
{
	double t0 = now_ms();
	for (long i = 0; i < n; i++) {
		weft_task_init(&tasks[i], fn, args ? args + (size_t)i * stride : NULL);
		int rc = weft_post_wait(rt, &tasks[i]);
		if (rc)
			die("weft_post", rc);
	}
	weft_wait_all(rt);
	return now_ms() - t0;
}

static void workloads(bool quick)
{
	long n_compute = quick ? 100 : 800, iters = quick ? 20000 : 150000;
	long n_tiny = quick ? 2000 : 20000;
	long n_max = n_compute > n_tiny ? n_compute : n_tiny;
	weft_task *tasks = calloc((size_t)n_max, sizeof(*tasks));
	work_t *work = calloc((size_t)n_compute, sizeof(*work));
	if (!tasks || !work)
		die("calloc", WEFT_ENOMEM);

	printf("1. The same workloads, configured in code (weft_config), native API\n");
	printf("   compute: %ld tasks of %ld xorshift rounds; tiny: %ld empty tasks\n\n", n_compute,
	       iters, n_tiny);
	printf("   %-8s %7s  %-8s %11s %9s %14s  %s\n", "model", "workers", "policy", "compute ms",
	       "tiny ms", "us/tiny task", "checksum");

	static const struct {
		weft_model model;
		int workers;
	} runs[] = {{WEFT_MODEL_THREADS, 1},
	            {WEFT_MODEL_THREADS, 2},
	            {WEFT_MODEL_SPAWN, 2},
	            {WEFT_MODEL_FIBERS, 1},
	            {WEFT_MODEL_MN, 2}};
	_Static_assert(sizeof(runs) / sizeof(runs[0]) == 5, "N_RUNS");
	enum { R_THREADS2 = 1, R_SPAWN = 2, R_FIBERS = 3, R_MN = 4, N_RUNS = 5 };
	double compute_ms[N_RUNS], us_tiny[N_RUNS];
	uint64_t first_sum = 0;
	bool same = true;
	for (size_t r = 0; r < N_RUNS; r++) {
		weft_rt *rt = start(runs[r].model, runs[r].workers, WEFT_POLICY_PRIORITY);
		weft_config eff;
		weft_rt_config(rt, &eff);
		for (long i = 0; i < n_compute; i++)
			work[i] = (work_t){(uint64_t)i * 0x9e3779b97f4a7c15u, 0, iters};
		double c_ms = run_batch(rt, tasks, n_compute, compute, (char *)work, sizeof(*work));
		atomic_store(&tiny_runs, 0);
		double t_ms = run_batch(rt, tasks, n_tiny, tiny, NULL, 0);
		weft_rt_destroy(rt);

		uint64_t sum = 0;
		for (long i = 0; i < n_compute; i++)
			sum ^= work[i].result;
		if (r == 0)
			first_sum = sum;
		same = same && sum == first_sum && atomic_load(&tiny_runs) == n_tiny;
		compute_ms[r] = c_ms;
		us_tiny[r] = t_ms * 1e3 / (double)n_tiny;
		printf("   %-8s %7d  %-8s %11.1f %9.1f %14.2f  %016llx\n",
		       weft_model_name(eff.model), eff.workers, weft_policy_name(eff.policy), c_ms,
		       t_ms, us_tiny[r], (unsigned long long)sum);
	}
	printf("\n   %s\n", same ? "Same results under every configuration."
	                         : "RESULTS DIFFER between configurations!");
	/* Read from the table above, not assumed: a loaded machine can turn
	 * any of these around. */
	printf("   spawn creates and joins a kernel thread per task: %.2f us per tiny task,\n"
	       "   %.1f times the %.2f us of threads with 2 workers.\n",
	       us_tiny[R_SPAWN], us_tiny[R_SPAWN] / us_tiny[R_THREADS2], us_tiny[R_THREADS2]);
	double gain = compute_ms[R_FIBERS] / compute_ms[R_MN];
	printf("   mn runs every task as a fiber over work-stealing kernel workers: %.2f us\n"
	       "   per tiny task (fibers %.2f), and computed %.2f times as fast as fibers'\n"
	       "   one worker%s.\n\n",
	       us_tiny[R_MN], us_tiny[R_FIBERS], gain,
	       gain >= 1.3   ? ": both cores at work"
	       : gain >= 0.8 ? ": no gain from its second worker in this run"
	                     : ", slower in this run");
	free(work);
	free(tasks);
}

/* ------------------------------------------------------------ 2. priority */

typedef struct gate {
	pthread_mutex_t lock;
	pthread_cond_t cv;
	bool inside, open;
} gate_t;

static void gate_task(void *arg)
{
	gate_t *g = arg;
	pthread_mutex_lock(&g->lock);
	g->inside = true;
	pthread_cond_broadcast(&g->cv);
	while (!g->open)
		pthread_cond_wait(&g->cv, &g->lock);
	pthread_mutex_unlock(&g->lock);
}

#define N_PRIO 8

typedef struct prio_log {
	_Atomic int n;
	int order[N_PRIO];
} prio_log_t;

typedef struct prio_arg {
	prio_log_t *log;
	int id;
} prio_arg_t;

static void prio_task(void *arg)
{
	prio_arg_t *p = arg;
	int k = atomic_fetch_add(&p->log->n, 1);
	if (k < N_PRIO)
		p->log->order[k] = p->id;
}

static const char names[N_PRIO] = {'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'};
static const int prios[N_PRIO] = {5, 1, 4, 1, 3, 9, 2, 1};

static void open_gate(gate_t *g)
{
	pthread_mutex_lock(&g->lock);
	g->open = true;
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->lock);
}

/* One worker is held by a gate task while the 8 tasks are posted, so they
 * are all queued when it is released: the order they run in is the
 * policy's. Returns whether it was (priority: smaller first, equal ones in
 * post order; fifo: post order), or true when the environment gave more
 * workers and no order is defined. */
static bool priority_run(weft_model model, weft_policy policy)
{
	weft_rt *rt = start(model, 1, policy);
	weft_config eff;
	weft_rt_config(rt, &eff);
	gate_t g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, false};
	weft_task gt, tasks[N_PRIO];
	prio_log_t log = {0};
	prio_arg_t args[N_PRIO];

	weft_task_init(&gt, gate_task, &g);
	weft_task_set_priority(&gt, -1);
	int rc = weft_post_wait(rt, &gt);
	if (rc)
		die("weft_post", rc);
	pthread_mutex_lock(&g.lock);
	while (!g.inside)
		pthread_cond_wait(&g.cv, &g.lock);
	pthread_mutex_unlock(&g.lock);
	/* With a ready queue smaller than 8 (WEFT_QUEUE_CAPACITY), the gate
	 * opens when it is full, and the rest wait for room: the order is then
	 * the policy's only among the tasks queued together. */
	bool full = false;
	for (int i = 0; i < N_PRIO; i++) {
		args[i] = (prio_arg_t){&log, i};
		weft_task_init(&tasks[i], prio_task, &args[i]);
		weft_task_set_priority(&tasks[i], prios[i]);
		rc = full ? weft_post_wait(rt, &tasks[i]) : weft_post(rt, &tasks[i]);
		if (rc == WEFT_EFULL) {
			full = true;
			open_gate(&g);
			rc = weft_post_wait(rt, &tasks[i]);
		}
		if (rc)
			die("weft_post", rc);
	}
	open_gate(&g);
	weft_wait_all(rt);
	weft_rt_destroy(rt);

	printf("   %-7s %-8s ran:   ", weft_model_name(eff.model), weft_policy_name(eff.policy));
	for (int i = 0; i < N_PRIO && i < atomic_load(&log.n); i++)
		printf(" %c(%d)", names[log.order[i]], prios[log.order[i]]);
	if (eff.workers != 1)
		printf("   [%d workers from the environment: order not defined]", eff.workers);
	printf("\n");
	if (eff.workers != 1)
		return true;
	if (atomic_load(&log.n) != N_PRIO)
		return false;
	int want[N_PRIO];
	for (int i = 0; i < N_PRIO; i++)
		want[i] = i;
	for (int i = 1; eff.policy == WEFT_POLICY_PRIORITY && i < N_PRIO; i++) /* stable */
		for (int j = i; j > 0 && prios[want[j - 1]] > prios[want[j]]; j--) {
			int t = want[j];
			want[j] = want[j - 1];
			want[j - 1] = t;
		}
	return memcmp(want, log.order, sizeof(want)) == 0;
}

static void priority_demo(void)
{
	printf("2. Priority order: one worker held while 8 tasks are posted, then released\n");
	printf("   posted:                ");
	for (int i = 0; i < N_PRIO; i++)
		printf(" %c(%d)", names[i], prios[i]);
	printf("\n");
	bool ordered = priority_run(WEFT_MODEL_THREADS, WEFT_POLICY_PRIORITY);
	ordered &= priority_run(WEFT_MODEL_SPAWN, WEFT_POLICY_PRIORITY);
	ordered &= priority_run(WEFT_MODEL_FIBERS, WEFT_POLICY_PRIORITY);
	ordered &= priority_run(WEFT_MODEL_MN, WEFT_POLICY_PRIORITY);
	ordered &= priority_run(WEFT_MODEL_THREADS, WEFT_POLICY_FIFO);
	printf("   priority: smaller first, equal priorities in post order (b, d, h);\n"
	       "   fifo: post order. %s\n"
	       "   (Under mn for tasks posted from outside; a task's own posts run work-first\n"
	       "   on its worker and may be stolen, so their order is not kept; mn refuses\n"
	       "   random, psjf and mlfq.)\n\n",
	       ordered ? "Every run above kept that order."
	               : "NOT every run above kept that order: see the lines above.");
}

/* ------------------------------------------------------------ 4. waiting */

static void nap(void *arg)
{
	weft_sleep_ns(*(int64_t *)arg);
}

/* The case mn is for: tasks that wait and tasks that compute, in one
 * runtime. Many naps (each parks its fiber) are posted beside one root task
 * that forks a computation into a group and waits for it (the wait parks
 * the root; its children run work-first on its worker, and idle workers
 * steal them). Each chunk notes the worker it ran on. */
enum { MIX_CHUNKS = 256, MIX_MAX_WORKERS = 8 };

static struct mix {
	work_t work[MIX_CHUNKS];
	weft_task tasks[MIX_CHUNKS];
	long chunks;
	_Atomic long chunks_on[MIX_MAX_WORKERS];
	_Atomic long long us_on[MIX_MAX_WORKERS];
	double compute_ms; /* root start to the last chunk done */
} mix;

static void mix_chunk(void *arg)
{
	double t0 = now_ms();
	compute(arg);
	int k = weft_worker_index();
	if (k >= 0 && k < MIX_MAX_WORKERS) {
		atomic_fetch_add(&mix.chunks_on[k], 1);
		atomic_fetch_add(&mix.us_on[k], (long long)((now_ms() - t0) * 1e3));
	}
}

static void mix_root(void *arg)
{
	(void)arg;
	double t0 = now_ms();
	weft_group g;
	weft_group_init(&g);
	for (long i = 0; i < mix.chunks; i++) {
		weft_task_init(&mix.tasks[i], mix_chunk, &mix.work[i]);
		int rc = cli_post(weft_rt_current(), &g, &mix.tasks[i], mix_chunk, &mix.work[i]);
		if (rc)
			die("weft_post_in", rc);
	}
	weft_group_wait(&g);
	mix.compute_ms = now_ms() - t0;
}

static double cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* weft_stats_print's lines that start with one of the prefixes, indented. */
static void print_stats_lines(weft_rt *rt, const char *const prefixes[])
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return;
	weft_stats_print(rt, f);
	fclose(f);
	for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"))
		for (int i = 0; prefixes[i]; i++)
			if (strncmp(line, prefixes[i], strlen(prefixes[i])) == 0) {
				printf("     %s\n", line);
				break;
			}
	free(buf);
}

static void mixed_demo(bool quick)
{
	enum { N_SLEEPERS = 1000 };
	int64_t ns = (quick ? 5 : 20) * 1000000LL;
	long iters = quick ? 20000 : 400000;
	mix.chunks = quick ? 64 : MIX_CHUNKS;
	static weft_task sleepers[N_SLEEPERS];
	weft_task root;
	printf("   The mix mn is for: %d tasks that each sleep %lld ms, and beside them one\n"
	       "   task that forks %ld compute tasks (%ld xorshift rounds each) into a group\n"
	       "   and waits for it, all posted at once to one runtime:\n",
	       N_SLEEPERS, (long long)(ns / 1000000), mix.chunks, iters);
	static const struct {
		weft_model model;
		int workers;
	} runs[] = {{WEFT_MODEL_FIBERS, 1}, {WEFT_MODEL_MN, 2}};
	double comp_ms[2], cores[2], wall_ms[2];
	int busy_workers[2];
	for (size_t r = 0; r < sizeof(runs) / sizeof(runs[0]); r++) {
		weft_rt *rt = start(runs[r].model, runs[r].workers, WEFT_POLICY_FIFO);
		weft_config eff;
		weft_rt_config(rt, &eff);
		for (long i = 0; i < mix.chunks; i++)
			mix.work[i] = (work_t){(uint64_t)i * 0x9e3779b97f4a7c15u, 0, iters};
		for (int k = 0; k < MIX_MAX_WORKERS; k++) {
			atomic_store(&mix.chunks_on[k], 0);
			atomic_store(&mix.us_on[k], 0);
		}
		double t0 = now_ms(), c0 = cpu_ms();
		weft_task_init(&root, mix_root, NULL);
		int rc = weft_post_wait(rt, &root);
		for (int i = 0; i < N_SLEEPERS && rc == 0; i++) {
			weft_task_init(&sleepers[i], nap, &ns);
			rc = weft_post_wait(rt, &sleepers[i]);
		}
		if (rc)
			die("weft_post", rc);
		weft_wait_all(rt);
		double wall = now_ms() - t0, cpu = cpu_ms() - c0;
		comp_ms[r] = mix.compute_ms;
		wall_ms[r] = wall;
		cores[r] = wall > 0 ? cpu / wall : 0.0;
		printf("   %-7s %d worker%s: %7.1f ms (computation %.1f ms), CPU time %.1f ms = "
		       "%.2f cores\n",
		       weft_model_name(eff.model), eff.workers, cli_plural(eff.workers), wall,
		       mix.compute_ms, cpu, cores[r]);
		printf("     compute tasks per worker:");
		busy_workers[r] = 0;
		for (int k = 0; k < eff.workers && k < MIX_MAX_WORKERS; k++) {
			long n = atomic_load(&mix.chunks_on[k]);
			busy_workers[r] += n > 0;
			printf("%s worker %d: %ld (%.1f ms)", k ? ";" : "", k, n,
			       (double)atomic_load(&mix.us_on[k]) / 1e3);
		}
		printf("\n");
		static const char *const lines[] = {"weft: fiber switches", "weft: steals", NULL};
		print_stats_lines(rt, lines);
		weft_rt_destroy(rt);
	}
	printf("   threads with 2 workers would hold a kernel thread per sleeping task (its\n"
	       "   2 workers, then up to 256 stand-ins at a time, for %d sleeps of %lld ms).\n"
	       "   fibers took %.1f ms in all, on one core (%.2f cores); mn parked\n"
	       "   the sleepers and the waiting root, ran the computation on %d of its\n"
	       "   workers (%.2f cores) and finished it in %.2f times fibers' time%s.\n\n",
	       N_SLEEPERS, (long long)(ns / 1000000), wall_ms[0], cores[0], busy_workers[1],
	       cores[1], comp_ms[1] / comp_ms[0],
	       comp_ms[1] < 0.8 * comp_ms[0] ? ""
	                                     : "\n   (no gain from the second core in this run)");
}

/* Tasks that wait: on kernel-thread models each waiting task holds a
 * worker; under fibers a waiting task parks and the one worker runs the
 * others, so the waits overlap. */
static void waiting_demo(bool quick)
{
	enum { N_NAPS = 100 };
	int64_t ns = (quick ? 5 : 20) * 1000000LL;
	weft_task t[N_NAPS];
	printf("4. Waiting: %d tasks that each call weft_sleep_ns(%lld ms)\n", N_NAPS,
	       (long long)(ns / 1000000));
	static const struct {
		weft_model model;
		int workers;
	} runs[] = {{WEFT_MODEL_THREADS, 2}, {WEFT_MODEL_FIBERS, 1}, {WEFT_MODEL_MN, 2}};
	enum { N_RUNS = sizeof(runs) / sizeof(runs[0]) };
	double ms[N_RUNS];
	for (size_t r = 0; r < N_RUNS; r++) {
		weft_rt *rt = start(runs[r].model, runs[r].workers, WEFT_POLICY_FIFO);
		double t0 = now_ms();
		for (int i = 0; i < N_NAPS; i++) {
			weft_task_init(&t[i], nap, &ns);
			int rc = weft_post_wait(rt, &t[i]);
			if (rc)
				die("weft_post", rc);
		}
		weft_wait_all(rt);
		ms[r] = now_ms() - t0;
		printf("   %-8s %d worker%s: %7.1f ms\n", weft_model_name(runs[r].model),
		       runs[r].workers, cli_plural(runs[r].workers), ms[r]);
		weft_rt_destroy(rt);
	}
	/* In lengths of one sleep: threads holds a worker per sleep (N / 2
	 * back to back) until stand-in threads take the queued sleepers
	 * (compensation, docs/models.md); a parked fiber frees its worker, so
	 * the sleeps overlap and take about one length. Said from what was
	 * measured. */
	double sleep_ms = (double)ns / 1e6;
	printf("   threads took %.1f sleep lengths (%d sleeps, 2 workers: %d back to back)%s\n",
	       ms[0] / sleep_ms, N_NAPS, N_NAPS / 2,
	       ms[0] >= 0.8 * sleep_ms * N_NAPS / 2
	               ? ":\n   each sleep held a worker."
	               : ":\n   stand-in threads ran the queued sleepers while the workers slept.");
	for (size_t r = 1; r < N_RUNS; r++)
		printf("   %s took %.1f: %s\n", weft_model_name(runs[r].model), ms[r] / sleep_ms,
		       ms[r] < 0.25 * ms[0]
		               ? "the sleeps overlapped (a sleeping fiber parks and its "
		                 "worker\n   runs the others)."
		               : "the sleeps did not overlap much in this run.");
	printf("\n");
	mixed_demo(quick);
}

/* ------------------------------------------------------------ 5. preemption */

/* Two fibers that never yield, each counting how often it saw the other
 * move on. Cooperative, the first spins alone until its time is up;
 * with WEFT_PREEMPT=timer the worker time-slices them. */
static _Atomic long spin_count[2];
static _Atomic long spin_turns;

static void spin_pair(void *arg)
{
	int me = (int)(intptr_t)arg;
	double until = now_ms() + 150;
	long seen = -1;
	while (now_ms() < until) {
		atomic_fetch_add_explicit(&spin_count[me], 1, memory_order_relaxed);
		long other = atomic_load_explicit(&spin_count[!me], memory_order_relaxed);
		if (other != seen && seen >= 0 && other > seen + 1000)
			atomic_fetch_add(&spin_turns, 1);
		seen = other;
	}
}

static void preemption_demo(void)
{
	printf("5. Preemption: two fibers that compute for 150 ms each and never yield\n");
	long turns[2];
	unsigned long long preemptions[2];
	for (int preempt = 0; preempt < 2; preempt++) {
		weft_config cfg;
		weft_config_init(&cfg);
		cfg.model = WEFT_MODEL_FIBERS;
		cfg.policy = WEFT_POLICY_FIFO;
		cfg.preempt = preempt ? WEFT_PREEMPT_TIMER : WEFT_PREEMPT_OFF;
		cfg.quantum_us = 1000;
		weft_rt *rt;
		int rc = weft_rt_create(&rt, &cfg);
		if (rc)
			die("weft_rt_create", rc);
		atomic_store(&spin_turns, 0);
		weft_task t[2];
		double t0 = now_ms();
		for (int i = 0; i < 2; i++) {
			atomic_store(&spin_count[i], 0);
			weft_task_init(&t[i], spin_pair, (void *)(intptr_t)i);
			if ((rc = weft_post_wait(rt, &t[i])))
				die("weft_post", rc);
		}
		weft_wait_all(rt);
		weft_stats st;
		weft_stats_get(rt, &st);
		turns[preempt] = atomic_load(&spin_turns);
		preemptions[preempt] = (unsigned long long)st.preemptions;
		printf("   WEFT_PREEMPT=%-5s %6.1f ms, %3llu preemption%s, fibers saw each other "
		       "progress %ld time%s\n",
		       weft_preempt_name(cfg.preempt), now_ms() - t0, preemptions[preempt],
		       cli_plural((long long)preemptions[preempt]), turns[preempt],
		       cli_plural(turns[preempt]));
		weft_rt_destroy(rt);
	}
	if (turns[0] == 0)
		printf("   off: the fibers never saw each other move: the second started when the\n"
		       "   first ended.");
	else
		printf("   off: the fibers saw each other move %ld time%s (not preempted: did one\n"
		       "   block?).",
		       turns[0], cli_plural(turns[0]));
	if (preemptions[1] > 0 && turns[1] > 0)
		printf("\n   timer (1 ms quantum): they alternated, switched only at safe points "
		       "in\n"
		       "   their own code (never inside libc or weft: docs/fibers.md).\n\n");
	else
		printf("\n   timer (1 ms quantum): they did NOT alternate in this run (%llu\n"
		       "   preemption%s).\n\n",
		       preemptions[1], cli_plural((long long)preemptions[1]));
}

/* ------------------------------------------------------------ 3. run time */

static void show_env(void)
{
	static const char *const vars[] = {"WEFT_MODEL", "WEFT_WORKERS", "WEFT_POLICY"};
	printf("   environment:");
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		const char *v = getenv(vars[i]);
		printf(" %s=%s", vars[i], v ? v : "(unset)");
	}
	printf("\n");
}

static weft_stats show_effective(const char *label)
{
	weft_rt *rt = start(WEFT_MODEL_THREADS, 1, WEFT_POLICY_PRIORITY);
	weft_stats s;
	weft_stats_get(rt, &s);
	printf("   %-34s -> model %s, %d worker%s (from %s), policy %s\n", label,
	       weft_model_name(s.model), s.workers, cli_plural(s.workers),
	       weft_workers_source_name(s.workers_source), weft_policy_name(s.policy));
	weft_rt_destroy(rt);
	return s;
}

static char *saved_env(const char *var)
{
	const char *v = getenv(var);
	return v ? strdup(v) : NULL;
}

static void restore_env(const char *var, char *value)
{
	if (value)
		setenv(var, value, 1);
	else
		unsetenv(var);
	free(value);
}

static void runtime_selection(void)
{
	printf("3. Run-time selection: code asks for threads, 1 worker, priority\n");
	char *model = saved_env("WEFT_MODEL"), *workers = saved_env("WEFT_WORKERS"),
	     *policy = saved_env("WEFT_POLICY");
	show_env();
	show_effective("as this process was started");
	setenv("WEFT_MODEL", "spawn", 1);
	setenv("WEFT_WORKERS", "2", 1);
	setenv("WEFT_POLICY", "fifo", 1);
	weft_stats s = show_effective("WEFT_MODEL=spawn WEFT_WORKERS=2 ...");
	restore_env("WEFT_MODEL", model);
	restore_env("WEFT_WORKERS", workers);
	restore_env("WEFT_POLICY", policy);
	if (s.model == WEFT_MODEL_SPAWN && s.workers == 2 && s.policy == WEFT_POLICY_FIFO)
		printf("   The environment won over code, so a built binary is retuned without\n"
		       "   rebuilding; it is read once, when the runtime is created.\n\n");
	else
		printf("   The environment did NOT win over code here (see the line above).\n\n");
}

/* ------------------------------------------------------------ 4. seed apps */

/* Runs <dir>/<prog> with args, with extra VAR=value pairs in its
 * environment, and shows the command line. */
static void run_app(const char *dir, const char *const env[], const char *prog,
                    const char *const args[])
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, prog);
	printf("   $");
	for (int i = 0; env && env[i]; i++)
		printf(" %s", env[i]);
	printf(" %s", prog);
	for (int i = 0; args[i]; i++)
		printf(" %s", args[i]);
	printf("\n");
	if (access(path, X_OK) != 0) {
		printf("   (%s not found next to weft-demo: not built?)\n", path);
		return;
	}
	fflush(stdout);
	int fds[2];
	if (pipe(fds) != 0) {
		perror("weft-demo: pipe");
		return;
	}
	pid_t pid = fork();
	if (pid < 0) {
		perror("weft-demo: fork");
		close(fds[0]);
		close(fds[1]);
		return;
	}
	if (pid == 0) {
		char *argv[16];
		int n = 0;
		argv[n++] = (char *)prog;
		for (int i = 0; args[i] && n < 15; i++)
			argv[n++] = (char *)args[i];
		argv[n] = NULL;
		for (int i = 0; env && env[i]; i++)
			putenv((char *)env[i]);
		close(fds[0]);
		dup2(fds[1], STDOUT_FILENO);
		dup2(fds[1], STDERR_FILENO);
		close(fds[1]);
		execv(path, argv);
		perror("weft-demo: execv");
		_exit(127);
	}
	/* Its output, indented under the command line. */
	close(fds[1]);
	FILE *in = fdopen(fds[0], "r");
	char line[1024];
	while (in && fgets(line, sizeof(line), in))
		printf("     %s", line);
	if (in)
		fclose(in);
	else
		close(fds[0]);
	int status;
	waitpid(pid, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		printf("   (exit status %d)\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

static void seed_apps(void)
{
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0) {
		printf("6. (cannot find this program's directory; skipping the seed apps)\n");
		return;
	}
	self[n] = '\0';
	char *slash = strrchr(self, '/');
	if (slash)
		*slash = '\0';

	printf("6. The seed's programs on the seed-compatible API (include/weft/compat/sched.h)\n");
	static const char *const sudoku_args[] = {"4", NULL};
	run_app(self, NULL, "seed-sudoku", sudoku_args);
	static const char *const sort_args[] = {"2", "10", NULL};
	run_app(self, NULL, "seed-sort", sort_args);
	static const char *const spawn_env[] = {"WEFT_MODEL=spawn", "WEFT_WORKERS=2", NULL};
	run_app(self, spawn_env, "seed-sort", sort_args);
	printf("   The seed's own sudoku.c and sort.c build unchanged against weft with\n"
	       "   -I include/weft/compat (docs/seeds/compat.md).\n");
	printf("   Seed 004's vector_multiply on its thread-worker API (psjf, timer):\n");
	static const char *const vm_args[] = {"6", "300000", NULL};
	run_app(self, NULL, "seed004/vector_multiply", vm_args);
	static const char *const mlfq_env[] = {"WEFT_POLICY=mlfq", NULL};
	run_app(self, mlfq_env, "seed004/vector_multiply", vm_args);
}

/* ------------------------------------------------------------ 7. apps */

/* The seed applications written once against the native API (docs/seeds/apps.md),
 * each run with the model chosen in its environment. */
static void applications(void)
{
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return;
	self[n] = '\0';
	char *slash = strrchr(self, '/');
	if (slash)
		*slash = '\0';
	printf("\n7. The seed applications, one binary each, the model from the environment\n");
	static const char *const fibers_env[] = {"WEFT_MODEL=fibers", NULL};
	static const char *const none[] = {NULL};
	run_app(self, fibers_env, "sudoku/weft-sudoku", none);
	char sample[4200];
	snprintf(sample, sizeof(sample), "%s/apps/haunted/tests/sample.txt", WEFT_SOURCE_DIR);
	const char *haunted_args[] = {sample, "2", NULL};
	static const char *const replay_env[] = {"WEFT_MODEL=fibers", "WEFT_POLICY=random",
	                                         "WEFT_SEED=1", NULL};
	run_app(self, replay_env, "haunted/weft-haunted", haunted_args);
	printf("   (the seed's haunted-house run: 2 s crossings on the fibers' virtual clock,\n"
	       "   replayable with WEFT_SEED, so it prints at once)\n");
	static const char *const two_workers[] = {"WEFT_MODEL=threads", "WEFT_WORKERS=2", NULL};
	static const char *const psort_args[] = {"2000000", NULL};
	run_app(self, two_workers, "psort/weft-psort", psort_args);
	static const char *const matmul_args[] = {"500", NULL};
	run_app(self, two_workers, "matmul/weft-matmul", matmul_args);
}

int main(int argc, char **argv)
{
	cli_check_stdout_at_exit("weft-demo");
	enum { OPT_VERSION = 256, OPT_QUICK };
	static const struct option longopts[] = {
	        {"help", no_argument, NULL, 'h'},
	        {"version", no_argument, NULL, OPT_VERSION},
	        {"quick", no_argument, NULL, OPT_QUICK},
	        {NULL, 0, NULL, 0},
	};
	bool quick = false;
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			printf("usage: %s [--quick]\n"
			       "Shows weft's models, priority order, run-time selection and the\n"
			       "seed's programs in a few seconds.\n"
			       "  --quick     smaller workloads\n"
			       "  -h, --help  this text\n"
			       "  --version   print the version and exit\n",
			       argv[0]);
			return 0;
		case OPT_VERSION:
			return cli_print_version("weft-demo");
		case OPT_QUICK:
			quick = true;
			break;
		default:
			cli_option_error("weft-demo", c, argv, longopts);
			fprintf(stderr, "(try --help)\n");
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "weft-demo: unexpected argument '%s' (try --help)\n", argv[optind]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("weft %d.%d.%d demo: one program, the threading model chosen at run time\n\n",
	       WEFT_VERSION_MAJOR, WEFT_VERSION_MINOR, WEFT_VERSION_PATCH);
	double t0 = now_ms();
	workloads(quick);
	priority_demo();
	runtime_selection();
	waiting_demo(quick);
	preemption_demo();
	seed_apps();
	applications();
	printf("\ndemo done in %.1f s\n", (now_ms() - t0) / 1e3);
	return 0;
}
