/* peers-glib: the peer workloads (peers.h) on GLib, library "glib".
 *
 *   spawn-wait   a GThreadPool (one exclusive thread per CPU, created
 *                outside the timing) gets N pushes of an empty function;
 *                the last to finish signals the waiting main thread
 *   mutex-tT     T GThreads, a GMutex around every addition
 *
 * GLib has no parallel-for and no fibers. */
#include <glib.h>
#include <stdint.h>

#include "peers.h"

#define PROG "peers-glib"

static GMutex done_lock;
static GCond done_cond;
static gint done_left;

static void empty_task(gpointer data, gpointer user)
{
	(void)data;
	(void)user;
	if (g_atomic_int_dec_and_test(&done_left)) {
		g_mutex_lock(&done_lock);
		g_cond_signal(&done_cond);
		g_mutex_unlock(&done_lock);
	}
}

static void spawn_wait(const peers_opts *o)
{
	GError *err = NULL;
	GThreadPool *pool =
	        g_thread_pool_new(empty_task, NULL, (gint)g_get_num_processors(), TRUE, &err);
	if (!pool)
		peers_die(PROG, "g_thread_pool_new failed");
	g_atomic_int_set(&done_left, (gint)o->spawn_n);
	double t0 = peers_now_ns();
	for (long i = 0; i < o->spawn_n; i++)
		g_thread_pool_push(pool, GINT_TO_POINTER(1), NULL);
	g_mutex_lock(&done_lock);
	while (g_atomic_int_get(&done_left) != 0)
		g_cond_wait(&done_cond, &done_lock);
	g_mutex_unlock(&done_lock);
	double ns = peers_now_ns() - t0;
	g_thread_pool_free(pool, FALSE, TRUE);
	peers_emit(o, "spawn-wait", "glib", o->spawn_n, ns);
}

typedef struct mx_arg {
	long first, step, n;
} mx_arg;

static GMutex mx_lock;
static unsigned *mx_r, mx_res;

static gpointer mx_thread(gpointer arg)
{
	const mx_arg *m = arg;
	for (long i = m->first; i < m->n; i += m->step) {
		g_mutex_lock(&mx_lock);
		mx_res += mx_r[i] * mx_r[i];
		g_mutex_unlock(&mx_lock);
	}
	return NULL;
}

static void mutex_run(const peers_opts *o, int threads)
{
	GThread *th[PEERS_MUTEX_T2];
	mx_arg args[PEERS_MUTEX_T2];
	mx_res = 0;
	double t0 = peers_now_ns();
	for (int i = 0; i < threads; i++) {
		args[i] = (mx_arg){i, threads, o->mutex_n};
		th[i] = g_thread_new("mutex", mx_thread, &args[i]);
	}
	for (int i = 0; i < threads; i++)
		g_thread_join(th[i]);
	double ns = peers_now_ns() - t0;
	peers_mutex_report(PROG, o, threads, "glib", mx_res, ns);
}

int main(int argc, char **argv)
{
	peers_opts o = peers_parse(PROG, argc, argv);
	if (peers_want(&o, "spawn-wait"))
		spawn_wait(&o);
	mx_r = g_new(unsigned, (gsize)o.mutex_n);
	for (long i = 0; i < o.mutex_n; i++)
		mx_r[i] = (unsigned)i;
	if (peers_want(&o, "mutex-t2"))
		mutex_run(&o, PEERS_MUTEX_T1);
	if (peers_want(&o, "mutex-t8"))
		mutex_run(&o, PEERS_MUTEX_T2);
	g_free(mx_r);
	return 0;
}
