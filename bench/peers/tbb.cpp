// peers-tbb: the peer workloads (peers.h) on oneTBB, library "tbb".
//
//   spawn-wait     tbb::task_group: run() N empty lambdas, wait()
//   parallel-for   tbb::parallel_for over a blocked_range (auto partitioner)
//   psort          tbb::parallel_sort of a std::vector<int32_t>
//   mutex-tT       T tasks in a task_group, each taking a tbb::mutex (oneTBB's
//                  adaptive mutex) around every addition
//   fib-tree       every call with n >= 2 makes a tbb::task_group, run()s
//                  fib(n-1) and fib(n-2) in it and wait()s (a waiting thread
//                  runs other tasks meanwhile: no deadlock)
//   spawn-join     inside one task of a task_group: a task_group per
//                  iteration, run() an empty lambda, wait()
//   pingpong       not here: TBB has no blocking channel between tasks
//                  (a concurrent_bounded_queue would block the worker
//                  thread, which is pthread ping-pong)
//
// Worker threads: TBB's default, one per CPU the process may use.
#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/mutex.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/parallel_sort.h>
#include <oneapi/tbb/task_group.h>

#include <cstdint>
#include <string>
#include <vector>

#include "peers.h"

#define PROG "peers-tbb"

static void spawn_wait(const peers_opts *o)
{
	tbb::task_group g;
	double t0 = peers_now_ns();
	for (long i = 0; i < o->spawn_n; i++)
		g.run([] {});
	g.wait();
	peers_emit(o, "spawn-wait", "tbb", o->spawn_n, peers_now_ns() - t0);
}

static void parallel_for(const peers_opts *o)
{
	std::vector<int> a((size_t)o->for_iters);
	int *p = a.data();
	double t0 = peers_now_ns();
	for (long pass = 0; pass < o->for_passes; pass++)
		tbb::parallel_for(tbb::blocked_range<long>(0, o->for_iters),
		                  [p](const tbb::blocked_range<long> &r) {
			                  for (long i = r.begin(); i != r.end(); i++)
				                  p[i] += 1;
		                  });
	double ns = peers_now_ns() - t0;
	for (int v : a)
		if (v != o->for_passes)
			peers_die(PROG, "parallel-for: wrong count");
	peers_emit(o, "parallel-for", "tbb", o->for_iters * o->for_passes, ns);
}

static void psort(const peers_opts *o)
{
	std::vector<int32_t> a((size_t)o->sort_n);
	for (long i = 0; i < o->sort_n; i++)
		a[(size_t)i] = peers_sort_value(1, (uint64_t)i);
	double t0 = peers_now_ns();
	tbb::parallel_sort(a.begin(), a.end());
	double ns = peers_now_ns() - t0;
	peers_check_sorted(PROG, a.data(), o->sort_n);
	peers_emit(o, "psort", "tbb", o->sort_n, ns);
}

static void mutex_run(const peers_opts *o, int threads, const std::vector<unsigned> &r)
{
	tbb::mutex m;
	unsigned res = 0;
	long n = o->mutex_n;
	const unsigned *rv = r.data();
	tbb::task_group g;
	double t0 = peers_now_ns();
	for (int t = 0; t < threads; t++)
		g.run([&, t] {
			for (long i = t; i < n; i += threads) {
				m.lock();
				res += rv[i] * rv[i];
				m.unlock();
			}
		});
	g.wait();
	double ns = peers_now_ns() - t0;
	peers_mutex_report(PROG, o, threads, "tbb", res, ns);
}

// One call of the tree; the task_group is the call's own, as a user writes.
static long fib_call(int n)
{
	if (n < 2)
		return n;
	long a = 0, b = 0;
	tbb::task_group g;
	g.run([&a, n] { a = fib_call(n - 1); });
	g.run([&b, n] { b = fib_call(n - 2); });
	g.wait();
	return a + b;
}

static void fib_tree(const peers_opts *o)
{
	long v = 0;
	int n = o->fib_n;
	double t0 = peers_now_ns();
	tbb::task_group root; // the root call is a task too, as in every driver
	root.run([&v, n] { v = fib_call(n); });
	root.wait();
	double ns = peers_now_ns() - t0;
	if (v != peers_fib(n))
		peers_die(PROG, "fib-tree: wrong value");
	peers_emit(o, "fib-tree", "tbb", peers_fib_calls(n), ns);
}

static void spawn_join(const peers_opts *o)
{
	long n = o->join_n, ran = 0;
	double ns = 0;
	tbb::task_group outer;
	outer.run([&] {
		double t0 = peers_now_ns();
		for (long i = 0; i < n; i++) {
			tbb::task_group g;
			g.run([&ran] { ran++; });
			g.wait();
		}
		ns = peers_now_ns() - t0;
	});
	outer.wait();
	if (ran != n)
		peers_die(PROG, "spawn-join: wrong number of children");
	peers_emit(o, "spawn-join", "tbb", n, ns);
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
