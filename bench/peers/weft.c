/* peers-weft: the peer workloads (peers.h) on weft, plus plain pthreads for
 * the mutex workload. Libraries in the CSV:
 *
 *   weft          threads model, FIFO policy, one worker per CPU (spawn-wait,
 *                 parallel-for, mutex); fibers model (fiber-switch,
 *                 fiber-create); the raw context switch under the fibers
 *                 (ctx-switch, src/fiber/context.h)
 *   weft-fibers   mutex on the fibers model: T tasks as fibers on one thread
 *   pthread       mutex with T kernel threads and a pthread_mutex_t
 *
 * weft has no parallel-for: the loop is cut into 4 chunks per worker, a
 * task each, posted in a group and waited for, which is what a weft user
 * writes. psort is not here: run.sh times apps/psort/weft-psort.
 *
 * WEFT_* variables would override the configuration set in code; run.sh
 * unsets them. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "fiber/context.h"
#include "peers.h"
#include <weft/weft.h>

#define PROG       "peers-weft"
#define STACK_SIZE (64 * 1024)

static weft_rt *make_rt(weft_model model)
{
	weft_config cfg;
	weft_rt *rt;
	weft_config_init(&cfg);
	cfg.model = model;
	cfg.policy = WEFT_POLICY_FIFO;
	if (model == WEFT_MODEL_FIBERS)
		cfg.stack_size = 16384;
	if (weft_rt_create(&rt, &cfg) != 0)
		peers_die(PROG, "cannot create a runtime");
	return rt;
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);
	if (!p)
		peers_die(PROG, "out of memory");
	return p;
}

/* ------------------------------------------------------------ spawn-wait */

static void empty(void *arg)
{
	(void)arg;
}

static void spawn_wait(const peers_opts *o)
{
	weft_rt *rt = make_rt(WEFT_MODEL_THREADS);
	weft_task *t = xcalloc((size_t)o->spawn_n, sizeof(*t));
	for (long i = 0; i < o->spawn_n; i++) /* first touch outside the timing */
		weft_task_init(&t[i], empty, NULL);
	double t0 = peers_now_ns();
	for (long i = 0; i < o->spawn_n; i++)
		weft_post(rt, &t[i]);
	weft_wait_all(rt);
	double ns = peers_now_ns() - t0;
	weft_rt_destroy(rt);
	free(t);
	peers_emit(o, "spawn-wait", "weft", o->spawn_n, ns);
}

/* ------------------------------------------------------------ parallel-for */

typedef struct chunk {
	int *a;
	long lo, hi;
} chunk;

static void for_chunk(void *arg)
{
	chunk *c = arg;
	for (long i = c->lo; i < c->hi; i++)
		c->a[i] += 1;
}

static void parallel_for(const peers_opts *o)
{
	weft_rt *rt = make_rt(WEFT_MODEL_THREADS);
	weft_config eff;
	weft_rt_config(rt, &eff);
	long n = o->for_iters, k = 4L * eff.workers;
	int *a = xcalloc((size_t)n, sizeof(*a));
	chunk *c = xcalloc((size_t)k, sizeof(*c));
	weft_task *t = xcalloc((size_t)k, sizeof(*t));
	for (long j = 0; j < k; j++)
		c[j] = (chunk){a, n / k * j + n % k * j / k, n / k * (j + 1) + n % k * (j + 1) / k};
	double t0 = peers_now_ns();
	for (long p = 0; p < o->for_passes; p++) {
		weft_group g;
		weft_group_init(&g);
		for (long j = 0; j < k; j++) {
			weft_task_init(&t[j], for_chunk, &c[j]);
			weft_post_in(rt, &g, &t[j]);
		}
		weft_group_wait(&g);
	}
	double ns = peers_now_ns() - t0;
	for (long i = 0; i < n; i++)
		if (a[i] != o->for_passes)
			peers_die(PROG, "parallel-for: wrong count");
	weft_rt_destroy(rt);
	free(t);
	free(c);
	free(a);
	peers_emit(o, "parallel-for", "weft", n * o->for_passes, ns);
}

/* ------------------------------------------------------------ fiber-switch */

static long fs_n;
static double fs_t0, fs_t1;

static void fs_task(void *arg)
{
	(void)arg;
	if (fs_t0 == 0)
		fs_t0 = peers_now_ns();
	for (long i = 0; i < fs_n; i++)
		weft_yield();
	fs_t1 = peers_now_ns();
}

static void fiber_switch(const peers_opts *o)
{
	weft_rt *rt = make_rt(WEFT_MODEL_FIBERS);
	weft_task t[2];
	fs_n = o->switch_n;
	fs_t0 = 0;
	for (int i = 0; i < 2; i++) {
		weft_task_init(&t[i], fs_task, NULL);
		weft_post(rt, &t[i]);
	}
	weft_wait_all(rt);
	weft_rt_destroy(rt);
	peers_emit(o, "fiber-switch", "weft", 2 * o->switch_n, fs_t1 - fs_t0);
}

/* ------------------------------------------------------------ fiber-create */

static double fc_ns;

static void fc_root(void *arg)
{
	long n = *(const long *)arg;
	weft_rt *rt = weft_rt_current();
	weft_task t;
	double t0 = peers_now_ns();
	for (long i = 0; i < n; i++) {
		weft_task_init(&t, empty, NULL);
		if (weft_post(rt, &t) != 0 || weft_wait(&t) != 0)
			peers_die(PROG, "fiber-create: post or wait failed");
	}
	fc_ns = peers_now_ns() - t0;
}

static void fiber_create(const peers_opts *o)
{
	weft_rt *rt = make_rt(WEFT_MODEL_FIBERS);
	weft_task root;
	long n = o->create_n;
	weft_task_init(&root, fc_root, &n);
	weft_post(rt, &root);
	weft_wait_all(rt);
	weft_rt_destroy(rt);
	peers_emit(o, "fiber-create", "weft", n, fc_ns);
}

/* ------------------------------------------------------------ ctx-switch */

static weft__context cx_main, cx_a, cx_b;
static long cx_n, cx_count;
static double cx_ns;

/* As bench/fiber_switch.c's yield: both contexts switch from one call site;
 * a times n round trips after both have started. */
static void cx_entry(void *arg)
{
	bool is_a = arg != NULL;
	weft__context *self = is_a ? &cx_a : &cx_b, *other = is_a ? &cx_b : &cx_a;
	double t0 = 0;
	for (long i = -1;; i++) {
		if (is_a && i == 0)
			t0 = peers_now_ns();
		if (is_a && i == cx_n)
			break;
		if (!is_a)
			cx_count++;
		weft__context_switch(self, other);
	}
	cx_ns = peers_now_ns() - t0;
	weft__context_switch(NULL, &cx_main);
}

static void *stack_map(void)
{
	void *p =
	        mmap(NULL, STACK_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		peers_die(PROG, "mmap failed");
	return p;
}

static void ctx_switch(const peers_opts *o)
{
	void *sa = stack_map(), *sb = stack_map();
	cx_n = o->ctx_n;
	cx_count = 0;
	weft__context_init_thread(&cx_main);
	weft__context_make(&cx_a, sa, STACK_SIZE, cx_entry, &cx_a);
	weft__context_make(&cx_b, sb, STACK_SIZE, cx_entry, NULL);
	weft__context_switch(&cx_main, &cx_a);
	weft__context_release(&cx_a);
	weft__context_release(&cx_b);
	weft__context_release(&cx_main);
	munmap(sa, STACK_SIZE);
	munmap(sb, STACK_SIZE);
	if (cx_count != cx_n + 1)
		peers_die(PROG, "ctx-switch: wrong number of switches");
	peers_emit(o, "ctx-switch", "weft", 2 * cx_n, cx_ns);
}

/* ------------------------------------------------------------ mutex */

typedef struct mx_arg {
	long first, step, n;
	int kind; /* 0: weft_mutex, 1: pthread_mutex_t */
} mx_arg;

static weft_mutex mx_weft;
static pthread_mutex_t mx_pthread = PTHREAD_MUTEX_INITIALIZER;
static unsigned *mx_r, *mx_s, mx_res;

static void mx_body(void *arg)
{
	const mx_arg *m = arg;
	if (m->kind == 0) {
		for (long i = m->first; i < m->n; i += m->step) {
			weft_mutex_lock(&mx_weft);
			mx_res += mx_r[i] * mx_s[i];
			weft_mutex_unlock(&mx_weft);
		}
	} else {
		for (long i = m->first; i < m->n; i += m->step) {
			pthread_mutex_lock(&mx_pthread);
			mx_res += mx_r[i] * mx_s[i];
			pthread_mutex_unlock(&mx_pthread);
		}
	}
}

static void *mx_thread(void *arg)
{
	mx_body(arg);
	return NULL;
}

/* lib: "weft" (threads model), "weft-fibers", or "pthread". */
static void mutex_run(const peers_opts *o, int threads, const char *lib)
{
	mx_arg *args = xcalloc((size_t)threads, sizeof(*args));
	int kind = lib[0] == 'p';
	for (int i = 0; i < threads; i++)
		args[i] = (mx_arg){i, threads, o->mutex_n, kind};
	mx_res = 0;
	weft_mutex_init(&mx_weft);
	double ns;
	if (kind) {
		pthread_t *th = xcalloc((size_t)threads, sizeof(*th));
		double t0 = peers_now_ns();
		for (int i = 0; i < threads; i++)
			if (pthread_create(&th[i], NULL, mx_thread, &args[i]) != 0)
				peers_die(PROG, "pthread_create failed");
		for (int i = 0; i < threads; i++)
			pthread_join(th[i], NULL);
		ns = peers_now_ns() - t0;
		free(th);
	} else {
		weft_rt *rt = make_rt(lib[4] == '-' ? WEFT_MODEL_FIBERS : WEFT_MODEL_THREADS);
		weft_task *t = xcalloc((size_t)threads, sizeof(*t));
		double t0 = peers_now_ns();
		for (int i = 0; i < threads; i++) {
			weft_task_init(&t[i], mx_body, &args[i]);
			weft_post(rt, &t[i]);
		}
		weft_wait_all(rt);
		ns = peers_now_ns() - t0;
		weft_rt_destroy(rt);
		free(t);
	}
	free(args);
	peers_mutex_report(PROG, o, threads, lib, mx_res, ns);
}

static void mutex_all(const peers_opts *o)
{
	static const int ts[] = {PEERS_MUTEX_T1, PEERS_MUTEX_T2};
	static const char *const libs[] = {"weft", "weft-fibers", "pthread"};
	mx_r = xcalloc((size_t)o->mutex_n, sizeof(*mx_r));
	mx_s = xcalloc((size_t)o->mutex_n, sizeof(*mx_s));
	for (long i = 0; i < o->mutex_n; i++)
		mx_r[i] = mx_s[i] = (unsigned)i;
	for (int ti = 0; ti < 2; ti++) {
		char name[32];
		snprintf(name, sizeof(name), "mutex-t%d", ts[ti]);
		if (!peers_want(o, name))
			continue;
		for (int li = 0; li < 3; li++)
			mutex_run(o, ts[ti], libs[li]);
	}
	free(mx_r);
	free(mx_s);
}

int main(int argc, char **argv)
{
	peers_opts o = peers_parse(PROG, argc, argv);
	if (peers_want(&o, "spawn-wait"))
		spawn_wait(&o);
	if (peers_want(&o, "parallel-for"))
		parallel_for(&o);
	if (peers_want(&o, "fiber-switch"))
		fiber_switch(&o);
	if (peers_want(&o, "fiber-create"))
		fiber_create(&o);
	if (peers_want(&o, "ctx-switch"))
		ctx_switch(&o);
	mutex_all(&o);
	return 0;
}
