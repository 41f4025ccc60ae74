/* peers-uv: the peer workloads (peers.h) on libuv, library "libuv".
 *
 *   spawn-wait   uv_queue_work of N requests with an empty work callback on
 *                the default loop; uv_run returns when every after-work
 *                callback has run. The pool has one thread per CPU
 *                (UV_THREADPOOL_SIZE, set here unless already set; libuv's
 *                default is 4)
 *   mutex-tT     T uv_thread_t, a uv_mutex_t around every addition
 *
 * libuv has no parallel-for and no fibers. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <uv.h>

#include "peers.h"

#define PROG "peers-uv"

static long after_count;

static void work_cb(uv_work_t *req)
{
	(void)req;
}

static void after_cb(uv_work_t *req, int status)
{
	(void)req;
	if (status == 0)
		after_count++;
}

static void spawn_wait(const peers_opts *o)
{
	uv_loop_t *loop = uv_default_loop();
	uv_work_t *req = calloc((size_t)o->spawn_n, sizeof(*req));
	if (!req)
		peers_die(PROG, "out of memory");
	after_count = 0;
	double t0 = peers_now_ns();
	for (long i = 0; i < o->spawn_n; i++)
		if (uv_queue_work(loop, &req[i], work_cb, after_cb) != 0)
			peers_die(PROG, "uv_queue_work failed");
	uv_run(loop, UV_RUN_DEFAULT);
	double ns = peers_now_ns() - t0;
	free(req);
	if (after_count != o->spawn_n)
		peers_die(PROG, "spawn-wait: wrong count");
	peers_emit(o, "spawn-wait", "libuv", o->spawn_n, ns);
}

typedef struct mx_arg {
	long first, step, n;
} mx_arg;

static uv_mutex_t mx_lock;
static unsigned *mx_r, mx_res;

static void mx_thread(void *arg)
{
	const mx_arg *m = arg;
	for (long i = m->first; i < m->n; i += m->step) {
		uv_mutex_lock(&mx_lock);
		mx_res += mx_r[i] * mx_r[i];
		uv_mutex_unlock(&mx_lock);
	}
}

static void mutex_run(const peers_opts *o, int threads)
{
	uv_thread_t th[PEERS_MUTEX_T2];
	mx_arg args[PEERS_MUTEX_T2];
	mx_res = 0;
	double t0 = peers_now_ns();
	for (int i = 0; i < threads; i++) {
		args[i] = (mx_arg){i, threads, o->mutex_n};
		if (uv_thread_create(&th[i], mx_thread, &args[i]) != 0)
			peers_die(PROG, "uv_thread_create failed");
	}
	for (int i = 0; i < threads; i++)
		uv_thread_join(&th[i]);
	double ns = peers_now_ns() - t0;
	peers_mutex_report(PROG, o, threads, "libuv", mx_res, ns);
}

int main(int argc, char **argv)
{
	char size[16];
	snprintf(size, sizeof(size), "%u", uv_available_parallelism());
	setenv("UV_THREADPOOL_SIZE", size, 0);
	peers_opts o = peers_parse(PROG, argc, argv);
	if (peers_want(&o, "spawn-wait"))
		spawn_wait(&o);
	if (uv_mutex_init(&mx_lock) != 0)
		peers_die(PROG, "uv_mutex_init failed");
	mx_r = calloc((size_t)o.mutex_n, sizeof(*mx_r));
	if (!mx_r)
		peers_die(PROG, "out of memory");
	for (long i = 0; i < o.mutex_n; i++)
		mx_r[i] = (unsigned)i;
	if (peers_want(&o, "mutex-t2"))
		mutex_run(&o, PEERS_MUTEX_T1);
	if (peers_want(&o, "mutex-t8"))
		mutex_run(&o, PEERS_MUTEX_T2);
	uv_mutex_destroy(&mx_lock);
	free(mx_r);
	uv_loop_close(uv_default_loop());
	return 0;
}
