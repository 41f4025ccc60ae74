// The C++ shapes of issue 27's primitives (weft/cpp/prims.hpp, included by
// weft.hpp) on every model and worker count:
//
//   test_cpp_prims <case> [<model> <workers>]
//
// Every case runs on a fresh weft::runtime; blocks weft allocated and still
// live after it (a counting weft_allocator) fail it. Built with and without
// exceptions as test_cpp is.
#include "cpp_harness.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <vector>

namespace
{

using namespace cpp_harness;


int blockers(const weft::runtime &rt)
{
	return fiber_model() ? 4 * rt.workers() : rt.workers();
}

// ------------------------------------------------------------------ cases

// shared_mutex with std::shared_lock readers and std::unique_lock writers:
// no writer beside anyone, the two counters equal under a read lock.
void shared_mutex_invariant(weft::runtime &rt)
{
	weft::shared_mutex m;
	long a = 0, b = 0;
	std::atomic<int> readers{0}, writers{0};
	{
		weft::task_group g(rt);
		for (int t = 0; t < 10; t++)
			g.run([&, t] {
				for (int i = 0; i < 5000; i++) {
					if (t < 2 && i % 8 == 0) {
						std::unique_lock<weft::shared_mutex> lk(m);
						CHECK(writers.fetch_add(1) == 0);
						CHECK(readers.load() == 0);
						a++;
						b++;
						writers.fetch_sub(1);
					} else {
						std::shared_lock<weft::shared_mutex> lk(m);
						readers++;
						CHECK(writers.load() == 0);
						CHECK(a == b);
						readers--;
					}
				}
			});
		g.wait();
	}
	CHECK_EQ(a, 2L * 625);
	CHECK(m.try_lock());
	CHECK(!m.try_lock_shared());
	CHECK(!m.try_lock_shared_for(std::chrono::milliseconds(1)));
	m.unlock();
	CHECK(m.try_lock_shared());
	CHECK(!m.try_lock_for(std::chrono::milliseconds(1)));
	m.unlock_shared();
}

// latch and call_once: 64 callers of call_once run it once; every task
// passes the latch after all have arrived.
void latch_once(weft::runtime &rt)
{
	weft::once_flag flag;
	std::atomic<int> ran{0}, passed{0};
	int n = blockers(rt);
	weft::latch l(n);
	CHECK(!l.try_wait());
	CHECK(!l.wait_for(std::chrono::milliseconds(1)));
	{
		weft::task_group g(rt);
		for (int i = 0; i < 64; i++)
			g.run([&] {
				weft::call_once(flag, [&](int k) { ran += k; }, 1);
				CHECK_EQ(ran.load(), 1);
			});
		for (int i = 0; i < n; i++)
			g.run([&] {
				l.arrive_and_wait();
				passed++;
			});
		g.wait();
	}
	CHECK(l.try_wait());
	CHECK_EQ(passed.load(), n);
	CHECK_EQ(ran.load(), 1);
#if WEFT_CPP_EXCEPTIONS
	weft::once_flag thrower;
	bool caught = false;
	try {
		weft::call_once(thrower, [] { throw 5; });
	} catch (int) {
		caught = true;
	}
	CHECK(caught);
#endif
}

// select over 4 channels: every value received exactly once while the
// producers (threads) close their channels as they finish.
void select_channels(weft::runtime &rt)
{
	constexpr int chans = 4, per = 2000;
	std::vector<std::unique_ptr<weft::channel<long>>> ch;
	for (int i = 0; i < chans; i++)
		ch.emplace_back(new weft::channel<long>(i % 2 ? 0 : 4));
	std::vector<std::atomic<int>> seen(chans * per + 1);
	std::atomic<long> got{0};
	auto consume = [&] {
		bool open[chans] = {true, true, true, true};
		int left = chans;
		while (left > 0) {
			auto on = [&](int i) {
				return weft::on_recv(*ch[i], [&, i](std::optional<long> v) {
					if (!v) { /* closed: ready for ever, counted once */
						if (open[i]) {
							open[i] = false;
							left--;
						}
						return;
					}
					CHECK(seen[*v].fetch_add(1) == 0);
					got++;
				});
			};
			weft::select(on(0), on(1), on(2), on(3));
		}
	};
	{
		weft::task_group g(rt);
		int consumers = blockers(rt);
		for (int i = 0; i < consumers; i++)
			g.run(consume);
		std::vector<std::thread> prod;
		for (int i = 0; i < chans; i++)
			prod.emplace_back([&, i] {
				for (long v = (long)i * per + 1; v <= (long)(i + 1) * per; v++)
					CHECK(ch[i]->send(v));
				ch[i]->close();
			});
		for (auto &t : prod)
			t.join();
		g.wait();
	}
	CHECK_EQ(got.load(), (long)chans * per);
	// try_select, select_for, on_send.
	weft::channel<int> a(1), b(0);
	bool sent = false;
	auto k = weft::try_select(weft::on_send(a, 5, [&](bool ok) { sent = ok; }),
	                          weft::on_send(b, 6, [](bool) {}));
	CHECK(k && *k == 0 && sent);
	CHECK(!weft::try_select(weft::on_send(a, 7, [](bool) {}), weft::on_send(b, 8, [](bool) {})));
	int v = 0;
	CHECK(!weft::select_for(std::chrono::milliseconds(1),
	                        weft::on_recv(b, [&](std::optional<int> x) { v = x.value_or(-1); })));
	auto r = weft::select_until(std::chrono::steady_clock::now() + std::chrono::seconds(5),
	                            weft::on_recv(a, [&](std::optional<int> x) { v = x.value_or(-1); }),
	                            weft::on_recv(b, [](std::optional<int>) {}));
	CHECK(r && *r == 0 && v == 5);
}

// task_local: each task's own value, kept across sleeps (parks), destroyed
// at the task's end.
struct Tracked {
	static std::atomic<int> live;
	long v = 0;
	Tracked()
	{
		live++;
	}
	~Tracked()
	{
		live--;
	}
};
std::atomic<int> Tracked::live{0};

void task_locals(weft::runtime &rt)
{
	weft::task_local<Tracked> tl;
	CHECK(tl.valid());
	{
		weft::task_group g(rt);
		for (long t = 0; t < 16; t++)
			g.run([&, t] {
				CHECK(!tl.has_value());
				tl->v = t;
				for (int i = 0; i < 100; i++) {
					weft::this_task::sleep_for(std::chrono::microseconds(10));
					CHECK_EQ(tl->v, t);
				}
			});
		g.wait();
	}
	CHECK_EQ(Tracked::live.load(), 0);
	tl->v = 3; /* the thread's own, outside tasks */
	CHECK_EQ(Tracked::live.load(), 1);
	tl.reset();
	CHECK_EQ(Tracked::live.load(), 0);
}

// periodic: runs never overlap, none after cancel, the destructor cancels.
void periodic_runs(weft::runtime &rt)
{
	std::atomic<int> n{0}, inside{0};
	std::atomic<bool> cancelled{false};
	{
		weft::periodic p(rt, std::chrono::milliseconds(1), [&] {
			CHECK(inside.fetch_add(1) == 0);
			CHECK(!cancelled.load());
			n++;
			inside--;
		});
		CHECK(p.started());
		auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30);
		while (p.runs() < 20 && std::chrono::steady_clock::now() < end)
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
		CHECK(p.runs() >= 20);
		p.cancel();
		cancelled = true;
		int at = n.load();
		std::this_thread::sleep_for(std::chrono::milliseconds(10));
		CHECK_EQ(n.load(), at);
	}
	{
		weft::periodic q(rt, std::chrono::hours(1), [] {}, weft::overrun::catch_up);
		CHECK(q.started());
	} /* the destructor cancels a run held an hour ahead at once */
	CHECK_EQ(rt.wait_all(), 0);
}

const test_case cases[] = {
        {"shared_mutex_invariant", shared_mutex_invariant},
        {"latch_once", latch_once},
        {"select_channels", select_channels},
        {"task_locals", task_locals},
        {"periodic_runs", periodic_runs},
};


} // namespace

int main(int argc, char **argv)
{
	return main_of(argc, argv, cases, sizeof(cases) / sizeof(cases[0]));
}
