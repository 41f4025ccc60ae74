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
	return 0;
}
