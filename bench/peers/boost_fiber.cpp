// peers-boost: the peer workloads (peers.h) on Boost.Fiber, library
// "boost-fiber", and the raw switch on Boost.Context, library
// "boost-context". Everything runs on the main thread with Boost.Fiber's
// default scheduler (round_robin) and stack allocator (fixedsize_stack).
//
//   fiber-switch   two fibers call boost::this_fiber::yield() in turn
//   fiber-create   the main fiber constructs an empty boost::fibers::fiber
//                  and joins it, N times
//   ctx-switch     a boost::context::fiber and the main context resume
//                  each other (ns per switch, one way)
//   mutex-tT       T fibers, a boost::fibers::mutex around every addition
//   fib-tree       every call with n >= 2 constructs two fibers for
//                  fib(n-1) and fib(n-2) and joins both
//   spawn-join     inside a fiber: construct an empty fiber, join it, N
//                  times (fiber-create from a fiber instead of main's
//                  context)
//   pingpong       two fibers, two boost::fibers::unbuffered_channel<long>;
//                  one thread, so like weft-fibers it measures a park and a
//                  switch, not a wake-up across threads
#include <boost/context/fiber.hpp>
#include <boost/fiber/all.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "peers.h"

#define PROG "peers-boost"

static void fiber_switch(const peers_opts *o)
{
	long n = o->switch_n;
	double t0 = 0, t1 = 0;
	auto body = [&] {
		if (t0 == 0)
			t0 = peers_now_ns();
		for (long i = 0; i < n; i++)
			boost::this_fiber::yield();
		t1 = peers_now_ns();
	};
	boost::fibers::fiber a(body), b(body);
	a.join();
	b.join();
	peers_emit(o, "fiber-switch", "boost-fiber", 2 * n, t1 - t0);
}

static void fiber_create(const peers_opts *o)
{
	long ran = 0;
	double t0 = peers_now_ns();
	for (long i = 0; i < o->create_n; i++) {
		boost::fibers::fiber f([&ran] { ran++; });
		f.join();
	}
	double ns = peers_now_ns() - t0;
	if (ran != o->create_n)
		peers_die(PROG, "fiber-create: wrong count");
	peers_emit(o, "fiber-create", "boost-fiber", o->create_n, ns);
}

static void ctx_switch(const peers_opts *o)
{
	namespace ctx = boost::context;
	long count = 0, n = o->ctx_n;
	bool stop = false;
	ctx::fiber f{[&](ctx::fiber &&m) {
		while (!stop) {
			count++;
			m = std::move(m).resume();
		}
		return std::move(m);
	}};
	f = std::move(f).resume(); /* started: both contexts exist */
	double t0 = peers_now_ns();
	for (long i = 0; i < n; i++)
		f = std::move(f).resume();
	double ns = peers_now_ns() - t0;
	stop = true;
	f = std::move(f).resume();
	if (count != n + 1)
		peers_die(PROG, "ctx-switch: wrong count");
	peers_emit(o, "ctx-switch", "boost-context", 2 * n, ns);
}

static void mutex_run(const peers_opts *o, int threads, const std::vector<unsigned> &r)
{
	boost::fibers::mutex m;
	unsigned res = 0;
	long n = o->mutex_n;
	const unsigned *rv = r.data();
	std::vector<boost::fibers::fiber> fs;
	double t0 = peers_now_ns();
	for (int t = 0; t < threads; t++)
		fs.emplace_back([&, t] {
			for (long i = t; i < n; i += threads) {
				m.lock();
				res += rv[i] * rv[i];
				m.unlock();
			}
		});
	for (auto &f : fs)
		f.join();
	double ns = peers_now_ns() - t0;
	peers_mutex_report(PROG, o, threads, "boost-fiber", res, ns);
}

static long fib_call(int n)
{
	if (n < 2)
		return n;
	long a = 0, b = 0;
	boost::fibers::fiber fa([&a, n] { a = fib_call(n - 1); });
	boost::fibers::fiber fb([&b, n] { b = fib_call(n - 2); });
	fa.join();
	fb.join();
	return a + b;
}

static void fib_tree(const peers_opts *o)
{
	long v = 0;
	int n = o->fib_n;
	double t0 = peers_now_ns();
	boost::fibers::fiber root([&v, n] { v = fib_call(n); });
	root.join();
	double ns = peers_now_ns() - t0;
	if (v != peers_fib(n))
		peers_die(PROG, "fib-tree: wrong value");
	peers_emit(o, "fib-tree", "boost-fiber", peers_fib_calls(n), ns);
}

static void spawn_join(const peers_opts *o)
{
	long n = o->join_n, ran = 0;
	double ns = 0;
	boost::fibers::fiber outer([&] {
		double t0 = peers_now_ns();
		for (long i = 0; i < n; i++) {
			boost::fibers::fiber f([&ran] { ran++; });
			f.join();
		}
		ns = peers_now_ns() - t0;
	});
	outer.join();
	if (ran != n)
		peers_die(PROG, "spawn-join: wrong number of children");
	peers_emit(o, "spawn-join", "boost-fiber", n, ns);
}

static void pingpong(const peers_opts *o)
{
	using chan = boost::fibers::unbuffered_channel<long>;
	chan there, back;
	long n = o->ping_n, bad = 0;
	double ns = 0;
	boost::fibers::fiber a([&] {
		double t0 = peers_now_ns();
		for (long i = 0; i < n; i++) {
			long w = 0;
			if (there.push(i) != boost::fibers::channel_op_status::success ||
			    back.pop(w) != boost::fibers::channel_op_status::success)
				peers_die(PROG, "pingpong: channel failed");
			bad += w != i + 1;
		}
		ns = peers_now_ns() - t0;
	});
	boost::fibers::fiber b([&] {
		for (long i = 0; i < n; i++) {
			long v = 0;
			if (there.pop(v) != boost::fibers::channel_op_status::success ||
			    back.push(v + 1) != boost::fibers::channel_op_status::success)
				peers_die(PROG, "pingpong: channel failed");
		}
	});
	a.join();
	b.join();
	if (bad != 0)
		peers_die(PROG, "pingpong: wrong reply");
	peers_emit(o, "pingpong", "boost-fiber", n, ns);
}

int main(int argc, char **argv)
{
	peers_opts o = peers_parse(PROG, argc, argv);
	if (peers_want(&o, "fiber-switch"))
		fiber_switch(&o);
	if (peers_want(&o, "fiber-create"))
		fiber_create(&o);
	if (peers_want(&o, "ctx-switch"))
		ctx_switch(&o);
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
	if (peers_want(&o, "pingpong"))
		pingpong(&o);
	return 0;
}
