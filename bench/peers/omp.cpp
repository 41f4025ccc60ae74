// peers-omp: the peer workloads (peers.h) on GCC's OpenMP (libgomp),
// library "openmp", and the sort on libstdc++'s parallel mode, library
// "gnu-parallel".
//
//   spawn-wait     one thread of a parallel region creates N `omp task`s
//                  calling an empty function, then `omp taskwait` (libgomp
//                  runs a task at once, undeferred, when more than 64 per
//                  thread are queued: that is what a user gets)
//   parallel-for   `omp parallel for schedule(static)`, one region per loop
//   psort          __gnu_parallel::sort (multiway mergesort, OpenMP threads)
//   mutex-tT       a parallel region of T threads, omp_set_lock /
//                  omp_unset_lock around every addition
//   fib-tree       one thread of a parallel region calls fib(n) as an
//                  `omp task`; every call with n >= 2 makes two `omp task`s
//                  and `omp taskwait`s (a waiting thread runs queued tasks;
//                  past 64 queued per thread libgomp runs new ones at once)
//   spawn-join     inside one `omp task`: `omp task` of an empty function,
//                  `omp taskwait`, N times
//   pingpong       not here: OpenMP has no channel, and tasks that block on
//                  one another are outside its model
//
// Worker threads: OpenMP's default, one per CPU (OMP_NUM_THREADS unset).
#include <omp.h>
#include <parallel/algorithm>

#include <cstdint>
#include <string>
#include <vector>

#include "peers.h"

#define PROG "peers-omp"

// An empty task body GCC cannot see through: with a literally empty body it
// removes the tasks altogether.
__attribute__((noinline)) static void empty_body()
{
	__asm__ volatile("" ::: "memory");
}

static void spawn_wait(const peers_opts *o)
{
	long n = o->spawn_n;
	double t0 = 0, t1 = 0;
#pragma omp parallel
#pragma omp single
	{
		t0 = peers_now_ns();
		for (long i = 0; i < n; i++) {
#pragma omp task
			empty_body();
		}
#pragma omp taskwait
		t1 = peers_now_ns();
	}
	peers_emit(o, "spawn-wait", "openmp", n, t1 - t0);
}

static void parallel_for(const peers_opts *o)
{
	std::vector<int> a((size_t)o->for_iters);
	int *p = a.data();
	long n = o->for_iters;
	double t0 = peers_now_ns();
	for (long pass = 0; pass < o->for_passes; pass++) {
#pragma omp parallel for schedule(static)
		for (long i = 0; i < n; i++)
			p[i] += 1;
	}
	double ns = peers_now_ns() - t0;
	for (int v : a)
		if (v != o->for_passes)
			peers_die(PROG, "parallel-for: wrong count");
	peers_emit(o, "parallel-for", "openmp", n * o->for_passes, ns);
}

static void psort(const peers_opts *o)
{
	std::vector<int32_t> a((size_t)o->sort_n);
	for (long i = 0; i < o->sort_n; i++)
		a[(size_t)i] = peers_sort_value(1, (uint64_t)i);
	double t0 = peers_now_ns();
	__gnu_parallel::sort(a.begin(), a.end());
	double ns = peers_now_ns() - t0;
	peers_check_sorted(PROG, a.data(), o->sort_n);
	peers_emit(o, "psort", "gnu-parallel", o->sort_n, ns);
}

static void mutex_run(const peers_opts *o, int threads, const std::vector<unsigned> &r)
{
	omp_lock_t lock;
	unsigned res = 0;
	long n = o->mutex_n;
	const unsigned *rv = r.data();
	omp_init_lock(&lock);
	double t0 = peers_now_ns();
#pragma omp parallel num_threads(threads)
	{
		long t = omp_get_thread_num(), step = omp_get_num_threads();
		for (long i = t; i < n; i += step) {
			omp_set_lock(&lock);
			res += rv[i] * rv[i];
			omp_unset_lock(&lock);
		}
	}
	double ns = peers_now_ns() - t0;
	omp_destroy_lock(&lock);
	peers_mutex_report(PROG, o, threads, "openmp", res, ns);
}

static long fib_call(int n)
{
	if (n < 2)
		return n;
	long a = 0, b = 0;
#pragma omp task shared(a)
	a = fib_call(n - 1);
#pragma omp task shared(b)
	b = fib_call(n - 2);
#pragma omp taskwait
	return a + b;
}

static void fib_tree(const peers_opts *o)
{
	long v = 0;
	int n = o->fib_n;
	double t0 = 0, t1 = 0;
#pragma omp parallel
#pragma omp single
	{
		t0 = peers_now_ns();
#pragma omp task shared(v)
		v = fib_call(n);
#pragma omp taskwait
		t1 = peers_now_ns();
	}
	if (v != peers_fib(n))
		peers_die(PROG, "fib-tree: wrong value");
	peers_emit(o, "fib-tree", "openmp", peers_fib_calls(n), t1 - t0);
}

// Counted by the children; the parent reads it after the last taskwait.
static long join_ran;

__attribute__((noinline)) static void join_child()
{
#pragma omp atomic
	join_ran++;
}

static void spawn_join(const peers_opts *o)
{
	long n = o->join_n;
	double ns = 0;
	join_ran = 0;
#pragma omp parallel
#pragma omp single
	{
#pragma omp task shared(ns)
		{
			double t0 = peers_now_ns();
			for (long i = 0; i < n; i++) {
#pragma omp task
				join_child();
#pragma omp taskwait
			}
			ns = peers_now_ns() - t0;
		}
#pragma omp taskwait
	}
	if (join_ran != n)
		peers_die(PROG, "spawn-join: wrong number of children");
	peers_emit(o, "spawn-join", "openmp", n, ns);
}

int main(int argc, char **argv)
{
	peers_opts o = peers_parse(PROG, argc, argv);
	if (peers_want(&o, "spawn-wait"))
		spawn_wait(&o);
	if (peers_want(&o, "parallel-for"))
		parallel_for(&o);
	if (peers_want(&o, "psort"))
		psort(&o);
	std::vector<unsigned> r((size_t)o.mutex_n);
	for (long i = 0; i < o.mutex_n; i++)
		r[(size_t)i] = (unsigned)i;
	for (int t : {PEERS_MUTEX_T1, PEERS_MUTEX_T2})
		if (peers_want(&o, ("mutex-t" + std::to_string(t)).c_str()))
			mutex_run(&o, t, r);
	if (peers_want(&o, "fib-tree"))
		fib_tree(&o);
	if (peers_want(&o, "spawn-join"))
		spawn_join(&o);
	return 0;
}
