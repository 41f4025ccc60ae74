/* weft-probe: seed 003's thread-library experiments, run on weft fibers
 * (tasks on a runtime with cfg.model = WEFT_MODEL_FIBERS, one worker, public
 * API only) next to kernel threads: creation and destruction, yield cost,
 * the yield-frequency sweep, switching overhead, and memory per parked
 * thread.
 *
 * Does not pin the fibers runtime's worker: it is one kernel thread, and
 * every switch measured here happens inside it. */
#define _GNU_SOURCE
#include "probe.h"

#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <weft/weft.h>

static void die(const char *what, int rc)
{
	fprintf(stderr, PROBE_NAME ": %s: %s\n", what, weft_strerror(rc));
	exit(1);
}

/* A runtime on the fibers model with one worker (M:1, like seed 003's TSL).
 * WEFT_* environment variables still override cfg; *model_ok says whether
 * the effective model is fibers. */
static weft_rt *fibers_rt(size_t *stack_size)
{
	weft_config cfg;
	weft_config_init(&cfg);
	cfg.model = WEFT_MODEL_FIBERS;
	cfg.workers = 1;
	weft_rt *rt;
	int rc = weft_rt_create(&rt, &cfg);
	if (rc != 0)
		die("weft_rt_create", rc);
	weft_config eff;
	weft_rt_config(rt, &eff);
	if (eff.model != WEFT_MODEL_FIBERS) {
		fprintf(stderr,
		        PROBE_NAME ": the environment changed the model to %s; unset WEFT_MODEL\n",
		        weft_model_name(eff.model));
		exit(1);
	}
	if (stack_size)
		*stack_size = eff.stack_size;
	return rt;
}

static void post_or_die(weft_rt *rt, weft_task *t)
{
	/* A bounded ready queue (WEFT_QUEUE_CAPACITY) is full: wait for room
	 * (from a task, let the others run first). */
	int rc;
	while ((rc = weft_post(rt, t)) == WEFT_EFULL) {
		if (!weft_rt_current()) {
			rc = weft_post_wait(rt, t);
			break;
		}
		weft_yield();
	}
	if (rc != 0)
		die("weft_post", rc);
}

/* ---- creation and destruction -------------------------------------------- */

static _Atomic long ran;

static void nop_task(void *arg)
{
	(void)arg;
	atomic_fetch_add_explicit(&ran, 1, memory_order_relaxed);
}

static void *nop_thread(void *arg)
{
	(void)arg;
	atomic_fetch_add_explicit(&ran, 1, memory_order_relaxed);
	return NULL;
}

void probe_create(probe *p)
{
	static const int full[] = {32, 64, 128, 256, 1024};
	static const char *const seed[] = {
	        "7.69 us (seed 003: 0.246 ms / 32)", "7.63 us (seed 003: 0.488 ms / 64)",
	        "7.29 us (seed 003: 0.933 ms / 128)", "7.76 us (seed 003: 1.986 ms / 256)", ""};
	const int nsizes = p->quick ? 4 : 5;
	pthread_t *th = malloc(1024 * sizeof(*th));
	weft_task *t = malloc(1024 * sizeof(*t));
	if (!th || !t) {
		perror(PROBE_NAME);
		exit(1);
	}
	double rt_us[PROBE_MAX_REPS];
	for (int r = 0; r < p->reps; r++) {
		double t0 = probe_now_ns();
		weft_rt *rt = fibers_rt(NULL);
		weft_rt_destroy(rt);
		rt_us[r] = (probe_now_ns() - t0) / 1e3;
	}
	weft_rt *rt = fibers_rt(NULL);
	for (int s = 0; s < nsizes; s++) {
		const int n = full[s];
		double pt[PROBE_MAX_REPS], wf[PROBE_MAX_REPS];
		for (int r = 0; r < p->reps; r++) {
			atomic_store(&ran, 0);
			double t0 = probe_now_ns();
			for (int i = 0; i < n; i++)
				if (pthread_create(&th[i], NULL, nop_thread, NULL) != 0) {
					perror(PROBE_NAME ": pthread_create");
					exit(1);
				}
			for (int i = 0; i < n; i++)
				pthread_join(th[i], NULL);
			pt[r] = (probe_now_ns() - t0) / n / 1e3;

			t0 = probe_now_ns();
			for (int i = 0; i < n; i++) {
				weft_task_init(&t[i], nop_task, NULL);
				post_or_die(rt, &t[i]);
			}
			weft_wait_all(rt);
			wf[r] = (probe_now_ns() - t0) / n / 1e3;
			if (atomic_load(&ran) != 2L * n) {
				fprintf(stderr, PROBE_NAME ": create: %ld of %d ran\n",
				        atomic_load(&ran), 2 * n);
				exit(1);
			}
		}
		char name[96];
		snprintf(name, sizeof(name), "pthread create+join, %d threads, per thread", n);
		probe_row(p, name, "us", pt, p->reps, seed[s]);
		snprintf(name, sizeof(name), "weft fiber post+run+wait, %d tasks, per task", n);
		probe_row(p, name, "us", wf, p->reps, seed[s]);
	}
	weft_rt_destroy(rt);
	probe_row(p, "weft_rt_create+destroy (fibers, 1 worker), once", "us", rt_us, p->reps, "");
	free(th);
	free(t);
	probe_note(p,
	           "A pthread costs a clone() system call, a stack (mmap'ed, or reused from "
	           "glibc's cache of freed stacks), the kernel's scheduling of a new task and a "
	           "futex wake at exit for the join. A weft fiber needs no system call once its "
	           "runtime exists: a stack from the runtime's pool and a user-space switch. The "
	           "seed's figure (the same for every N, so linear) is for its own user-level "
	           "threads, created with a 32 KiB malloc'ed stack and makecontext-style setup.");
}

/* ---- yield cost ---------------------------------------------------------------- */

typedef struct yield_arg {
	long count;
} yield_arg;

static void yielder(void *arg)
{
	yield_arg *y = arg;
	for (long i = 0; i < y->count; i++)
		weft_yield();
}

typedef struct sy_arg {
	const probe *p;
	long count;
	_Atomic int *ready;
} sy_arg;

static void *sched_yielder(void *arg)
{
	sy_arg *a = arg;
	probe_pin(a->p, a->p->cpu[0]);
	atomic_fetch_add(a->ready, 1);
	while (atomic_load(a->ready) < 2)
		;
	for (long i = 0; i < a->count; i++)
		sched_yield();
	return NULL;
}

void probe_yield(probe *p)
{
	const long m = p->quick ? 20000 : 500000;
	const long ms = p->quick ? 5000 : 100000;
	double two[PROBE_MAX_REPS], one[PROBE_MAX_REPS], ky[PROBE_MAX_REPS];
	weft_rt *rt = fibers_rt(NULL);
	for (int r = 0; r < p->reps; r++) {
		weft_task t[2];
		yield_arg ya = {m};
		double t0 = probe_now_ns();
		for (int i = 0; i < 2; i++) {
			weft_task_init(&t[i], yielder, &ya);
			post_or_die(rt, &t[i]);
		}
		weft_wait_all(rt);
		two[r] = (probe_now_ns() - t0) / (2.0 * m);

		t0 = probe_now_ns();
		weft_task_init(&t[0], yielder, &ya);
		post_or_die(rt, &t[0]);
		weft_wait_all(rt);
		one[r] = (probe_now_ns() - t0) / m;

		_Atomic int ready = 0;
		sy_arg sa = {p, ms, &ready};
		pthread_t th[2];
		t0 = probe_now_ns();
		for (int i = 0; i < 2; i++)
			pthread_create(&th[i], NULL, sched_yielder, &sa);
		for (int i = 0; i < 2; i++)
			pthread_join(th[i], NULL);
		ky[r] = (probe_now_ns() - t0) / (2.0 * ms);
	}
	weft_rt_destroy(rt);
	probe_row(p, "weft_yield, two fibers taking turns, per yield", "ns", two, p->reps,
	          "1,685 ns (seed 003: 0.1685 s / 100,000)");
	probe_row(p, "weft_yield, one fiber alone, per call", "ns", one, p->reps, "");
	probe_row(p, "sched_yield, two pthreads pinned to one CPU, per yield", "ns", ky, p->reps,
	          "");
	probe_note(p, "Between two fibers a yield is a user-space switch (save and restore the "
	              "callee-saved registers and the stack pointer) plus the runtime's queue "
	              "operations; no system call. Two kernel threads on one CPU pay a system call "
	              "and the kernel's switch for each sched_yield (which, with CFS, is not even "
	              "guaranteed to switch).");
}

/* ---- yield frequency ----------------------------------------------------------- */

typedef struct freq_arg {
	long iters, every;
	volatile long counter;
} freq_arg;

static void freq_task(void *arg)
{
	freq_arg *f = arg;
	long left = f->every; /* a countdown, not i % every: no division per iteration */
	for (long i = 0; i < f->iters; i++) {
		f->counter++;
		if (--left == 0) {
			left = f->every;
			weft_yield();
		}
	}
}

void probe_yieldfreq(probe *p)
{
	static const long every[] = {1, 10, 100, 1000, 10000};
	static const char *const seed[] = {"24.31 ms (seed 003)", "3.82 ms (seed 003)",
	                                   "0.694 ms (seed 003)", "0.208 ms (seed 003)",
	                                   "0.0612 ms (seed 003)"};
	const long iters = p->quick ? 100000 : 1000000;
	double ms[5][PROBE_MAX_REPS];
	weft_rt *rt = fibers_rt(NULL);
	for (int r = 0; r < p->reps; r++) {
		for (int k = 0; k < 5; k++) {
			weft_task t[2];
			freq_arg f[2];
			double t0 = probe_now_ns();
			for (int i = 0; i < 2; i++) {
				f[i].iters = iters;
				f[i].every = every[k];
				f[i].counter = 0;
				weft_task_init(&t[i], freq_task, &f[i]);
				post_or_die(rt, &t[i]);
			}
			weft_wait_all(rt);
			ms[k][r] = (probe_now_ns() - t0) / 1e6;
		}
	}
	weft_rt_destroy(rt);
	double med[5];
	for (int k = 0; k < 5; k++) {
		char name[96];
		snprintf(name, sizeof(name), "2 fibers x %ld iterations, yield every %ld", iters,
		         every[k]);
		probe_row(p, name, "ms", ms[k], p->reps, seed[k]);
		med[k] = probe_median(ms[k], p->reps, NULL, NULL);
	}
	double yields = 2.0 * iters - 2.0 * iters / every[4];
	probe_note(p,
	           "Per iteration: %.2f ns when yielding every time, %.2f ns every 10,000; the "
	           "difference, %.1f ns, is the cost of one yield between two fibers. The seed "
	           "ran its five frequencies as five threads at once and does not give the "
	           "workload; its 24.3 ms vs 0.061 ms (x400) has the same shape as ours (x%.0f): "
	           "below a yield every ~100 iterations the switches dominate the work.",
	           med[0] * 1e6 / (2.0 * iters), med[4] * 1e6 / (2.0 * iters),
	           (med[0] - med[4]) * 1e6 / yields, med[4] > 0 ? med[0] / med[4] : 0);
}

/* ---- switching overhead ------------------------------------------------------- */

typedef struct count_arg {
	long target;
	volatile long counter;
} count_arg;

static void count_alone(void *arg)
{
	count_arg *c = arg;
	while (c->counter < c->target)
		c->counter++;
}

static void count_taking_turns(void *arg)
{
	count_arg *c = arg;
	while (c->counter < c->target) {
		c->counter++;
		weft_yield();
	}
}

void probe_switch(probe *p)
{
	long targets[2] = {100000, 10000000};
	const int ntargets = p->quick ? 1 : 2;
	static const char *const seed_without[] = {"0.000412 s (seed 003)", "0.0416 s (seed 003)"};
	static const char *const seed_with[] = {"0.1685 s (seed 003)", "16.90 s (seed 003)"};
	static const char *const seed_per[] = {"1,681 ns (seed 003)", "1,686 ns (seed 003)"};
	weft_rt *rt = fibers_rt(NULL);
	for (int k = 0; k < ntargets; k++) {
		const long n = targets[k];
		const int reps = k == 1 && p->reps > 3 ? 3 : p->reps;
		double without[PROBE_MAX_REPS], with[PROBE_MAX_REPS], per[PROBE_MAX_REPS];
		for (int r = 0; r < reps; r++) {
			count_arg c = {n, 0};
			weft_task t[2];
			double t0 = probe_now_ns();
			weft_task_init(&t[0], count_alone, &c);
			post_or_die(rt, &t[0]);
			weft_wait_all(rt);
			without[r] = (probe_now_ns() - t0) / 1e9;

			c.counter = 0;
			t0 = probe_now_ns();
			for (int i = 0; i < 2; i++) {
				weft_task_init(&t[i], count_taking_turns, &c);
				post_or_die(rt, &t[i]);
			}
			weft_wait_all(rt);
			with[r] = (probe_now_ns() - t0) / 1e9;
			per[r] = (with[r] - without[r]) * 1e9 / (double)n;
		}
		char name[96];
		snprintf(name, sizeof(name), "count to %ld, one fiber, no switching", n);
		probe_row(p, name, "s", without, reps, seed_without[k]);
		snprintf(name, sizeof(name), "count to %ld, two fibers yielding each increment", n);
		probe_row(p, name, "s", with, reps, seed_with[k]);
		snprintf(name, sizeof(name), "overhead per switch (count to %ld)", n);
		probe_row(p, name, "ns", per, reps, seed_per[k]);
	}
	weft_rt_destroy(rt);
	probe_note(p, "The counter is volatile, so the loop without switching is a load, an add "
	              "and a store per count, as in the seed's unoptimised build. The seed's "
	              "overhead (about 1.7 us a switch) is what getcontext/setcontext-style "
	              "switching costs: each saves and restores the signal mask with a system "
	              "call. weft's switch saves only the callee-saved registers.");
}

/* ---- memory per parked thread ------------------------------------------------ */

/* Resident memory in KiB: the Rss line of /proc/self/smaps_rollup, which
 * walks the page tables and is exact (statm reads the kernel's per-CPU RSS
 * counters, which may be off by some tens of pages); statm if it is
 * missing. */
static long rss_kib(void)
{
	long kib = -1;
	char line[256];
	FILE *f = fopen("/proc/self/smaps_rollup", "r");
	if (f) {
		while (kib < 0 && fgets(line, sizeof(line), f))
			if (sscanf(line, "Rss: %ld kB", &kib) != 1)
				kib = -1;
		fclose(f);
	}
	if (kib >= 0)
		return kib;
	long pages = 0, resident = 0;
	f = fopen("/proc/self/statm", "r");
	if (!f || fscanf(f, "%ld %ld", &pages, &resident) != 2)
		resident = 0;
	if (f)
		fclose(f);
	return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static weft_sem park_sem;
static sem_t park_psem;
static _Atomic long parked;

static void park_fiber(void *arg)
{
	(void)arg;
	atomic_fetch_add(&parked, 1);
	weft_sem_wait(&park_sem);
}

static void *park_thread(void *arg)
{
	(void)arg;
	atomic_fetch_add(&parked, 1);
	while (sem_wait(&park_psem) != 0)
		;
	return NULL;
}

static void wait_parked(long n)
{
	while (atomic_load(&parked) < n) {
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	struct timespec ts = {0, 5000000}; /* let the last ones reach their wait */
	nanosleep(&ts, NULL);
}

/* In a fresh child: out[0] = RSS before, out[1] = RSS with n parked fibers
 * (KiB), out[2] = the fiber stack size. */
static int parked_fibers(void *arg, double *out, int nout)
{
	long n = *(long *)arg;
	(void)nout;
	weft_task *t = calloc((size_t)n, sizeof(*t));
	if (!t)
		return 1;
	for (long i = 0; i < n; i++)
		weft_task_init(&t[i], park_fiber, NULL);
	weft_sem_init(&park_sem, 0);
	size_t stack = 0;
	weft_rt *rt = fibers_rt(&stack);
	out[0] = (double)rss_kib();
	for (long i = 0; i < n; i++)
		post_or_die(rt, &t[i]);
	wait_parked(n);
	out[1] = (double)rss_kib();
	out[2] = (double)stack;
	for (long i = 0; i < n; i++)
		weft_sem_post(&park_sem);
	weft_wait_all(rt);
	weft_rt_destroy(rt);
	free(t);
	return 0;
}

static int parked_pthreads(void *arg, double *out, int nout)
{
	long n = *(long *)arg;
	(void)nout;
	pthread_t *th = calloc((size_t)n, sizeof(*th));
	if (!th || sem_init(&park_psem, 0, 0) != 0)
		return 1;
	out[0] = (double)rss_kib();
	for (long i = 0; i < n; i++)
		if (pthread_create(&th[i], NULL, park_thread, NULL) != 0)
			return 1;
	wait_parked(n);
	out[1] = (double)rss_kib();
	pthread_attr_t attr;
	size_t stack = 0;
	if (pthread_getattr_default_np(&attr) == 0) {
		pthread_attr_getstacksize(&attr, &stack);
		pthread_attr_destroy(&attr);
	}
	out[2] = (double)stack;
	for (long i = 0; i < n; i++)
		sem_post(&park_psem);
	for (long i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	free(th);
	return 0;
}

void probe_memory(probe *p)
{
	static const long full[] = {32, 64, 128, 256, 1024};
	static const char *const seed[] = {
	        "+0 KiB (seed 003: 632 -> 632)", "+556 KiB (seed 003: 656 -> 1212)",
	        "+1000 KiB (seed 003: 640 -> 1640)", "+1412 KiB (seed 003: 668 -> 2080)", ""};
	const int nsizes = p->quick ? 4 : 5;
	double stack[2] = {0, 0}, gmed[5][2] = {{0}};
	probe_md(p, "| N | kind | RSS before, KiB | RSS parked, KiB | per thread, KiB |\n"
	            "|---|---|---|---|---|\n");
	for (int s = 0; s < nsizes; s++) {
		long n = full[s];
		for (int kind = 0; kind < 2; kind++) {
			double before[PROBE_MAX_REPS], after[PROBE_MAX_REPS], grow[PROBE_MAX_REPS];
			int ok = 0;
			for (int r = 0; r < p->reps; r++) {
				double out[3];
				if (probe_in_child(kind ? parked_pthreads : parked_fibers, &n, out,
				                   3) != 0)
					continue;
				before[ok] = out[0];
				after[ok] = out[1];
				grow[ok] = out[1] - out[0];
				stack[kind] = out[2];
				ok++;
			}
			if (!ok) {
				probe_note(p, "memory: every child failed for %ld %s", n,
				           kind ? "pthreads" : "fibers");
				continue;
			}
			char name[96];
			snprintf(name, sizeof(name), "RSS growth, %ld parked %s", n,
			         kind ? "pthreads" : "weft fibers");
			probe_row(p, name, "KiB", grow, ok, seed[s]);
			double b = probe_median(before, ok, NULL, NULL);
			double a = probe_median(after, ok, NULL, NULL);
			double g = probe_median(grow, ok, NULL, NULL);
			gmed[s][kind] = g;
			probe_md(p, "| %ld | %s | %.0f | %.0f | %.2f |\n", n,
			         kind ? "pthread" : "weft fiber", b, a, g / (double)n);
		}
	}
	probe_md(p, "\n");
	const int hi = nsizes - 1, lo = nsizes - 2;
	const double dn = (double)(full[hi] - full[lo]);
	probe_note(p,
	           "Marginal cost, from %ld to %ld parked: %.2f KiB per weft fiber, %.2f KiB per "
	           "pthread (the growth at small N also holds one-time costs: the runtime's "
	           "first stacks, malloc arenas).",
	           full[lo], full[hi], (gmed[hi][0] - gmed[lo][0]) / dn,
	           (gmed[hi][1] - gmed[lo][1]) / dn);
	probe_note(p,
	           "Fiber stacks are %.0f KiB of address space each, pthread stacks %.0f KiB "
	           "(glibc's default, from RLIMIT_STACK); RSS counts only the pages actually "
	           "touched, so a parked thread costs the few pages its stack, its thread "
	           "control block and (for a pthread) its TLS and guard setup have touched. "
	           "The kernel's own per-thread memory (task_struct, kernel stack: about 16 KiB "
	           "per pthread) is not in the process's RSS at all. The seed read RSS after its "
	           "threads had completed, not while they were parked, so its figures are a "
	           "lower bound of a different thing.",
	           stack[0] / 1024, stack[1] / 1024);
}
