// The C++ layer (include/weft/weft.hpp) on every model and worker count:
//
//   test_cpp <case> [<model> <workers>]
//
// Every case runs on a fresh weft::runtime. Objects that tasks, futures and
// channels carry are Counted: a leak (live objects after the case) or a
// double destruction (a destructor meeting a dead object) fails it, as do
// task storage nodes still in use (WEFT_CPP_COUNT_NODES) and blocks weft
// allocated that are still live once the runtime is gone (a counting
// weft_allocator). Built twice: with exceptions (test_cpp) and with
// -fno-exceptions (test_cpp_noexc, WEFT_TEST_NO_EXCEPTIONS), which runs
// every case that does not throw.
#define WEFT_CPP_COUNT_NODES 1
#include "cpp_harness.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace
{

// ------------------------------------------------------------------ checks

using namespace cpp_harness;

// ------------------------------------------------------------------ counted

std::atomic<long> live{0};
std::atomic<long> made{0};

constexpr unsigned alive_magic = 0xC0FFEE11u;

// An object whose every copy and move is counted; destroying one twice (or
// one never constructed) fails the case.
struct Counted {
	unsigned magic;
	long v;
	explicit Counted(long x = 0) : magic(alive_magic), v(x)
	{
		live++;
		made++;
	}
	Counted(const Counted &o) : magic(alive_magic), v(o.v)
	{
		CHECK(o.magic == alive_magic);
		live++;
		made++;
	}
	Counted(Counted &&o) noexcept : magic(alive_magic), v(o.v)
	{
		CHECK(o.magic == alive_magic);
		live++;
		made++;
	}
	Counted &operator=(const Counted &o)
	{
		CHECK(magic == alive_magic && o.magic == alive_magic);
		v = o.v;
		return *this;
	}
	Counted &operator=(Counted &&o) noexcept
	{
		CHECK(magic == alive_magic && o.magic == alive_magic);
		v = o.v;
		return *this;
	}
	~Counted()
	{
		if (magic != alive_magic)
			fail(__FILE__, __LINE__, "Counted destroyed twice");
		magic = 0xDEADu;
		live--;
	}
};

// ------------------------------------------------------------------ allocator


// ------------------------------------------------------------------ params


// How many tasks may block on each other at once (as wt_blockers in C).
int blockers(const weft::runtime &rt)
{
	return fiber_model() ? 4 * rt.workers() : rt.workers();
}


// ------------------------------------------------------------------ cases

// run() with capturing lambdas, move-only captures and std::function,
// nested groups inside tasks; every capture destroyed once.
void group_run(weft::runtime &rt)
{
	const int n = sanitized ? 2000 : 20000;
	std::atomic<long> sum{0};
	{
		weft::task_group g(rt);
		for (int i = 0; i < n; i++) {
			auto c = std::make_unique<Counted>(i);
			g.run([&sum, c = std::move(c)] { sum += c->v; });
		}
		std::function<void()> fn = [&sum, c = Counted(1)] { sum += c.v; };
		g.run(fn);
		g.run(std::move(fn));
		CHECK(g.wait() == weft::task_group_status::complete);
	}
	CHECK_EQ(sum.load(), (long)n * (n - 1) / 2 + 2);
	CHECK_EQ(live.load(), 0L);

	// Nested: tasks that run groups of their own and wait for them.
	std::atomic<long> leaves{0};
	weft::task_group outer(rt);
	for (int i = 0; i < 16; i++)
		outer.run([&leaves, i] {
			weft::task_group inner;
			for (int j = 0; j < 32; j++)
				inner.run([&leaves, c = Counted(i)] { leaves += 1 + 0 * c.v; });
			inner.wait();
		});
	outer.wait();
	CHECK_EQ(leaves.load(), 16L * 32);
	// The group is reusable after wait().
	outer.run([&leaves] { leaves++; });
	outer.wait();
	CHECK_EQ(leaves.load(), 16L * 32 + 1);
}

// A task_group built where an old one lived, in bytes a later frame
// partly overwrote (a fiber stack holds many), still works:
// weft_group_init refuses bytes that look like a group with tasks in
// flight, so the group starts from zeroes.
void group_on_leftovers(weft::runtime &rt)
{
	alignas(weft::task_group) unsigned char buf[sizeof(weft::task_group)];
	std::atomic<int> ran{0};
	auto *g = ::new (static_cast<void *>(buf)) weft::task_group(rt);
	g->run([&ran] { ran++; });
	g->wait();
	unsigned char *cgroup = reinterpret_cast<unsigned char *>(g->native_handle());
	g->~task_group();
	// A later frame writes over the C group's first word (its pending
	// count) and leaves the rest.
	std::memset(cgroup, 0x5a, sizeof(std::uint32_t));
	// A waited group leaves no mark such bytes match: the C call takes
	// them as fresh.
	CHECK_EQ(weft_group_init(reinterpret_cast<weft_group *>(cgroup)), 0);
	g = ::new (static_cast<void *>(buf)) weft::task_group(rt);
	g->run([&ran] { ran++; });
	CHECK(g->wait_for(std::chrono::seconds(20)));
	CHECK_EQ(weft_group_pending(g->native_handle()), 0L);
	g->~task_group();
	CHECK_EQ(ran.load(), 2);
}

// A group's destructor waits for tasks still running.
void group_dtor_waits(weft::runtime &rt)
{
	std::atomic<int> done{0};
	{
		weft::task_group g(rt);
		for (int i = 0; i < 8; i++)
			g.run([&done, c = Counted(i)] {
				weft::this_task::sleep_for(std::chrono::milliseconds(20));
				done++;
			});
		// No wait(): the destructor must (and says so on stderr).
	}
	CHECK_EQ(done.load(), 8);
	CHECK_EQ(live.load(), 0L);
}

// cancel() drops tasks not started; their callables are destroyed unrun.
void group_cancel(weft::runtime &rt)
{
	// Hold every worker so that what follows stays queued: a std::mutex
	// gate blocks the worker thread even under fibers (a weft primitive
	// would park the fiber and free the worker).
	std::mutex gate_mu;
	std::condition_variable gate_cv;
	int permits = 0;
	std::atomic<int> ran{0};
	weft::task_group g(rt);
	int hold = rt.workers();
	std::atomic<int> holding{0};
	for (int i = 0; i < hold; i++)
		g.run([&] {
			holding++;
			std::unique_lock<std::mutex> lk(gate_mu);
			gate_cv.wait(lk, [&] { return permits > 0; });
			permits--;
		});
	if (model != WEFT_MODEL_SPAWN)
		while (holding.load() < hold)
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
	for (int i = 0; i < 100; i++)
		g.run([&ran, c = Counted(i)] { ran++; });
	g.cancel();
	CHECK(g.is_canceling());
	{
		std::lock_guard<std::mutex> lk(gate_mu);
		permits = hold;
	}
	gate_cv.notify_all();
	CHECK(g.wait() == weft::task_group_status::canceled);
	if (model != WEFT_MODEL_SPAWN)
		CHECK_EQ(ran.load(), 0); // spawn starts each task's thread at post
	CHECK_EQ(live.load(), 0L);
	// Reusable: the next round runs.
	g.run([&ran] { ran += 1000; });
	CHECK(g.wait() == weft::task_group_status::complete);
	CHECK(ran.load() >= 1000);
}

// wait_for / wait_until time out while a task runs, then succeed.
void group_wait_until(weft::runtime &rt)
{
	weft::semaphore gate(0);
	weft::task_group g(rt);
	g.run([&] { gate.acquire(); });
	CHECK(!g.wait_for(std::chrono::milliseconds(5)));
	CHECK(!g.wait_until(std::chrono::steady_clock::now() + std::chrono::milliseconds(5)));
	gate.release();
	CHECK(g.wait_until(std::chrono::steady_clock::now() + std::chrono::seconds(30)));
}

#if WEFT_CPP_EXCEPTIONS
// A task that throws cancels its group; wait() rethrows the first.
void group_exception(weft::runtime &rt)
{
	weft::task_group g(rt);
	std::atomic<int> ran{0};
	for (int i = 0; i < 200; i++)
		g.run([&ran, i, c = Counted(i)] {
			ran++;
			if (i == 3)
				throw std::runtime_error("three");
		});
	bool caught = false;
	try {
		g.wait();
	} catch (const std::runtime_error &e) {
		caught = std::strcmp(e.what(), "three") == 0;
	}
	CHECK(caught);
	CHECK_EQ(live.load(), 0L);
	// And the group works again, without the old exception.
	g.run([&ran] { ran++; });
	CHECK(g.wait() == weft::task_group_status::complete);
}
#endif

long fib_seq(int n)
{
	return n < 2 ? n : fib_seq(n - 1) + fib_seq(n - 2);
}

// async + get from a task: a fib tree of futures.
long fib_async(int n)
{
	if (n < 10)
		return fib_seq(n);
	auto a = weft::async(fib_async, n - 1);
	long b = fib_async(n - 2);
	return a.get() + b;
}

// Values of every kind through futures, got from main and from tasks.
void future_values(weft::runtime &rt)
{
	auto fi = weft::async([](int a, int b) { return a * b; }, 6, 7);
	auto fs = weft::async(rt, [] { return std::string(100, 'x'); });
	auto fc = weft::async([] { return Counted(5); });
	auto fu =
	        weft::async([p = std::make_unique<Counted>(9)]() mutable { return std::move(p); });
	std::atomic<int> side{0};
	auto fv = weft::async([&side] { side = 1; });
	CHECK(fi.valid());
	CHECK_EQ(fi.get(), 42);
	CHECK(!fi.valid());
	CHECK(fs.get() == std::string(100, 'x'));
	CHECK_EQ(fc.get().v, 5L);
	CHECK_EQ(fu.get()->v, 9L);
	fv.get();
	CHECK_EQ(side.load(), 1);

	// From inside a task: get() parks (fibers) or helps (threads).
	auto root = weft::async([] { return fib_async(sanitized ? 18 : 22); });
	CHECK_EQ(root.get(), fib_seq(sanitized ? 18 : 22));

	// wait_for on a task that is held: timeout, then ready.
	weft::semaphore gate(0);
	auto held = weft::async([&gate] {
		gate.acquire();
		return 1;
	});
	CHECK(held.wait_for(std::chrono::milliseconds(5)) == std::future_status::timeout);
	CHECK(!held.is_ready());
	gate.release();
	CHECK(held.wait_until(std::chrono::steady_clock::now() + std::chrono::seconds(30)) ==
	      std::future_status::ready);
	CHECK(held.is_ready());
	CHECK_EQ(held.get(), 1);
	CHECK_EQ(live.load(), 0L);
}

// Dropping a future waits for its task.
void future_dtor_waits(weft::runtime &)
{
	std::atomic<int> done{0};
	{
		auto f = weft::async([&done, c = Counted(1)] {
			weft::this_task::sleep_for(std::chrono::milliseconds(20));
			done = 1;
			return c.v;
		});
	}
	CHECK_EQ(done.load(), 1);
	// A future never got, of a task that has finished: no leak either.
	{
		auto f = weft::async([] { return Counted(3); });
		f.wait();
	}
	CHECK_EQ(live.load(), 0L);
}

#if WEFT_CPP_EXCEPTIONS
void future_exception(weft::runtime &)
{
	auto f = weft::async([]() -> int { throw std::runtime_error("boom"); });
	bool caught = false;
	try {
		f.get();
	} catch (const std::runtime_error &e) {
		caught = std::string(e.what()) == "boom";
	}
	CHECK(caught);
	// An exception crosses a continuation that takes the value (skipping
	// it) and reaches one that takes the future.
	std::atomic<int> skipped{0};
	auto g = weft::async([]() -> Counted { throw std::logic_error("deep"); })
	                 .then([&skipped](Counted c) {
		                 skipped++;
		                 return c.v;
	                 })
	                 .then([](weft::future<long> prev) {
		                 try {
			                 return prev.get();
		                 } catch (const std::logic_error &) {
			                 return -1L;
		                 }
	                 });
	CHECK_EQ(g.get(), -1L);
	CHECK_EQ(skipped.load(), 0);
	// From inside a task.
	auto h = weft::async([] {
		auto inner = weft::async([]() -> int { throw 7; });
		try {
			return inner.get();
		} catch (int x) {
			return x;
		}
	});
	CHECK_EQ(h.get(), 7);
	// get() on an empty future throws std::future_error.
	weft::future<int> empty;
	caught = false;
	try {
		empty.get();
	} catch (const std::future_error &e) {
		caught = e.code() == std::future_errc::no_state;
	}
	CHECK(caught);
	// A broken promise.
	weft::future<Counted> broken;
	{
		weft::promise<Counted> p;
		broken = p.get_future();
	}
	caught = false;
	try {
		broken.get();
	} catch (const std::future_error &e) {
		caught = e.code() == std::future_errc::broken_promise;
	}
	CHECK(caught);
	CHECK_EQ(live.load(), 0L);
}
#endif

// Continuations: chains, continuations of void, of futures, from tasks.
void future_then(weft::runtime &)
{
	auto f = weft::async([] { return 1; });
	for (int i = 0; i < 100; i++)
		f = f.then([](int v) { return v + 1; });
	CHECK_EQ(f.get(), 101);

	std::atomic<int> order{0};
	auto v = weft::async([&order] { order = 1; }).then([&order] {
		int seen = order.load();
		order = 2;
		return seen;
	});
	CHECK_EQ(v.get(), 1);
	CHECK_EQ(order.load(), 2);

	auto s = weft::async([] { return Counted(4); }).then([](weft::future<Counted> p) {
		return std::to_string(p.get().v);
	});
	CHECK(s.get() == "4");

	// Built inside a task, got inside another.
	auto t = weft::async([] {
		auto a = weft::async([] { return 20; }).then([](int x) { return x * 2; });
		return a.get() + 2;
	});
	CHECK_EQ(t.get(), 42);

	// A continuation dropped without get() still runs, and its storage
	// (with the predecessor's) is freed.
	std::atomic<int> ran{0};
	{
		auto d = weft::async([] { return Counted(1); }).then([&ran](Counted c) {
			ran++;
			return c;
		});
	}
	CHECK_EQ(ran.load(), 1);
	CHECK_EQ(live.load(), 0L);
}

// A promise set from a plain thread, waited for by tasks and main; a
// continuation registered before and one after it is set.
void promise_value(weft::runtime &rt)
{
	weft::promise<std::string> p;
	weft::future<std::string> pf = p.get_future();
	auto cont = pf.then([](std::string s) { return s + "!"; });
	weft::promise<int> q;
	auto waiter = weft::async([qf = q.get_future()]() mutable { return qf.get() + 1; });
	std::thread producer([&] {
		std::this_thread::sleep_for(std::chrono::milliseconds(10));
		p.set_value("hello");
		q.set_value(41);
	});
	// On threads with one worker the waiter blocks the worker (a
	// primitive wait), which the producer thread releases.
	CHECK(cont.get() == "hello!");
	CHECK_EQ(waiter.get(), 42);
	producer.join();

	weft::promise<void> r;
	auto rf = r.get_future();
	r.set_value();
	auto after = rf.then([] { return 3; });
	CHECK_EQ(after.get(), 3);

	{
		weft::promise<Counted> c;
		auto cf = c.get_future();
		c.set_value(Counted(8));
		CHECK(cf.is_ready());
		CHECK_EQ(cf.get().v, 8L);
	}
	(void)rt;
	CHECK_EQ(live.load(), 0L);
}

// Continuations of promises (and chains of them) waited for from inside
// tasks while a plain thread sets the promises: the waiting worker must
// help the continuation run (on threads with one worker it is queued
// behind the waiter), on every model; many at once, set in random order.
void promise_then_in_task(weft::runtime &)
{
	{
		weft::promise<int> p;
		weft::future<int> cont = p.get_future().then([](int x) { return x + 1; });
		weft::future<int> outer = weft::async([&cont] { return cont.get(); });
		weft::promise<Counted> q;
		auto chain = q.get_future()
		                     .then([](Counted c) { return Counted(c.v * 2); })
		                     .then([](Counted c) { return Counted(c.v + 1); })
		                     .then([](Counted c) { return c.v; });
		weft::future<long> outer2 = weft::async([&chain] { return chain.get(); });
		std::thread setter([&] {
			std::this_thread::sleep_for(std::chrono::milliseconds(10));
			p.set_value(41);
			q.set_value(Counted(20));
		});
		CHECK_EQ(outer.get(), 42);
		CHECK_EQ(outer2.get(), 41L);
		setter.join();
	}

	const int n = 200;
	std::vector<weft::promise<Counted>> ps(n);
	std::vector<weft::future<long>> conts;
	for (int i = 0; i < n; i++)
		conts.push_back(ps[i].get_future()
		                        .then([](Counted c) { return Counted(c.v + 1); })
		                        .then([](Counted c) { return c.v; }));
	std::vector<weft::future<long>> outers;
	for (int i = 0; i < n; i++)
		outers.push_back(weft::async([&conts, i] { return conts[i].get(); }));
	std::vector<int> order(n);
	for (int i = 0; i < n; i++)
		order[i] = i;
	std::mt19937 rng(12345);
	std::shuffle(order.begin(), order.end(), rng);
	std::thread setters([&] {
		for (int k = 0; k < n; k++) {
			if (k % 16 == 0)
				std::this_thread::sleep_for(std::chrono::microseconds(200));
			ps[order[k]].set_value(Counted(order[k]));
		}
	});
	long sum = 0;
	for (auto &f : outers)
		sum += f.get();
	setters.join();
	CHECK_EQ(sum, (long)n * (n + 1) / 2);
	ps.clear();
	CHECK_EQ(live.load(), 0L);
}

// when_all over 10,000 futures (from main and from a task), and of a tuple.
void when_all_many(weft::runtime &)
{
	const int n = 10000;
	std::vector<weft::future<Counted>> v;
	v.reserve(n);
	for (int i = 0; i < n; i++)
		v.push_back(weft::async([i] { return Counted(i); }));
	auto all = weft::when_all(v.begin(), v.end());
	std::vector<weft::future<Counted>> got = all.get();
	CHECK_EQ(got.size(), (size_t)n);
	long sum = 0;
	for (auto &f : got) {
		CHECK(f.is_ready());
		sum += f.get().v;
	}
	CHECK_EQ(sum, (long)n * (n - 1) / 2);
	got.clear();

	auto inner = weft::async([] {
		std::vector<weft::future<long>> w;
		for (long i = 0; i < 1000; i++)
			w.push_back(weft::async([i] { return i; }));
		long s = 0;
		for (auto &f : weft::when_all(std::move(w)).get())
			s += f.get();
		return s;
	});
	CHECK_EQ(inner.get(), 999L * 1000 / 2);

	auto tup =
	        weft::when_all(weft::async([] { return 1; }),
	                       weft::async([] { return std::string("two"); }), weft::async([] {}));
	auto t = tup.get();
	CHECK_EQ(std::get<0>(t).get(), 1);
	CHECK(std::get<1>(t).get() == "two");
	std::get<2>(t).get();

	// With a promise among them.
	weft::promise<int> p;
	std::vector<weft::future<int>> mixed;
	mixed.push_back(p.get_future());
	mixed.push_back(weft::async([] { return 2; }));
	auto m = weft::when_all(std::move(mixed));
	std::thread setter([&p] { p.set_value(1); });
	auto mv = m.get();
	setter.join();
	CHECK_EQ(mv[0].get() + mv[1].get(), 3);
	CHECK_EQ(live.load(), 0L);
}

long fib_invoke(int n)
{
	if (n < 2)
		return n;
	long a = 0, b = 0;
	weft::parallel_invoke([&] { a = fib_invoke(n - 1); }, [&] { b = fib_invoke(n - 2); });
	return a + b;
}

// parallel_invoke: a fib tree (from main and from a task), three functions.
void invoke_fib(weft::runtime &)
{
	int n = sanitized ? 18 : 24;
	CHECK_EQ(fib_invoke(n), fib_seq(n));
	auto f = weft::async(fib_invoke, n);
	CHECK_EQ(f.get(), fib_seq(n));
	std::atomic<int> mask{0};
	weft::parallel_invoke([&] { mask |= 1; }, [&] { mask |= 2; }, [&] { mask |= 4; },
	                      [&, c = Counted(1)] { mask |= 8 + 0 * (int)c.v; });
	CHECK_EQ(mask.load(), 15);
#if WEFT_CPP_EXCEPTIONS
	bool caught = false;
	try {
		weft::parallel_invoke([] {}, [] { throw std::runtime_error("b"); });
	} catch (const std::runtime_error &) {
		caught = true;
	}
	CHECK(caught);
#endif
	CHECK_EQ(live.load(), 0L);
}

// parallel_for over a vector's iterators and over indices of mixed types.
void for_loops(weft::runtime &)
{
	const size_t n = 100000;
	std::vector<int> v(n, 1);
	weft::parallel_for(v.begin(), v.end(), [](int &x) { x *= 3; });
	CHECK(std::all_of(v.begin(), v.end(), [](int x) { return x == 3; }));
	weft::parallel_for(0, v.size(), [&v](size_t i) { v[i] += (int)(i % 7); });
	for (size_t i = 0; i < n; i++)
		if (v[i] != 3 + (int)(i % 7)) {
			CHECK(v[i] == 3 + (int)(i % 7));
			break;
		}
	std::atomic<long> calls{0};
	weft::parallel_for(
	        -50, 50, [&calls](int i) { calls += i + 50; }, 7);
	CHECK_EQ(calls.load(), 99L * 100 / 2);
	weft::parallel_for(10, 10, [&calls](int) { calls = -1; });
	CHECK(calls.load() != -1);
	// From inside a task, nested.
	auto f = weft::async([] {
		std::vector<long> w(1000, 0);
		weft::parallel_for(0, 10, [&w](int i) {
			weft::parallel_for(i * 100, i * 100 + 100,
			                   [&w](int j) { w[(size_t)j] = j; });
		});
		return std::accumulate(w.begin(), w.end(), 0L);
	});
	CHECK_EQ(f.get(), 999L * 1000 / 2);
#if WEFT_CPP_EXCEPTIONS
	bool caught = false;
	try {
		weft::parallel_for(0, 1000, [](int i) {
			if (i == 500)
				throw std::out_of_range("500");
		});
	} catch (const std::out_of_range &) {
		caught = true;
	}
	CHECK(caught);
#endif
}

// parallel_reduce: sums, order kept (string concatenation), any type.
void reduce(weft::runtime &)
{
	const long n = 100000;
	long s = weft::parallel_reduce(0L, n, 0L, std::plus<long>(), [](long i) { return i; });
	CHECK_EQ(s, n * (n - 1) / 2);
	std::vector<double> v(10000);
	for (size_t i = 0; i < v.size(); i++)
		v[i] = 1.0 / (double)(i + 1);
	double d1 = weft::parallel_reduce(v.begin(), v.end(), 0.0, std::plus<double>(),
	                                  [](double x) { return x; });
	double d2 = weft::parallel_reduce(v.begin(), v.end(), 0.0, std::plus<double>(),
	                                  [](double x) { return x; });
	CHECK(d1 == d2); // deterministic
	CHECK(d1 > 9.78 && d1 < 9.79);
	// Not commutative: operands keep their order.
	std::string letters = weft::parallel_reduce(
	        0, 26, std::string(">"), [](std::string a, const std::string &b) { return a + b; },
	        [](int i) { return std::string(1, (char)('a' + i)); }, 3);
	CHECK(letters == ">abcdefghijklmnopqrstuvwxyz");
	Counted c = weft::parallel_reduce(
	        0, 1000, Counted(0), [](Counted a, const Counted &b) { return Counted(a.v + b.v); },
	        [](int i) { return Counted(i); });
	CHECK_EQ(c.v, 999L * 1000 / 2);
	CHECK_EQ(weft::parallel_reduce(5, 5, 17, std::plus<int>(), [](int i) { return i; }), 17);
}

// mutex with std::scoped_lock / lock_guard from many tasks.
void mutex_counter(weft::runtime &rt)
{
	weft::mutex m, m2;
	long counter = 0, other = 0;
	const int per = sanitized ? 200 : 2000;
	weft::task_group g(rt);
	for (int t = 0; t < 8; t++)
		g.run([&] {
			for (int i = 0; i < per; i++) {
				if (i % 2) {
					std::scoped_lock lk(m, m2);
					counter++;
					other++;
				} else {
					std::lock_guard<weft::mutex> lk(m);
					counter++;
				}
			}
		});
	g.wait();
	CHECK_EQ(counter, 8L * per);
	CHECK_EQ(other, 8L * per / 2);
	CHECK(m.try_lock());
	CHECK(!m.try_lock_for(std::chrono::milliseconds(2)));
	m.unlock();
}

// condition_variable with a predicate: a bounded queue between tasks and
// the main thread; wait_for times out with nothing coming.
void condvar_queue(weft::runtime &rt)
{
	weft::mutex m;
	weft::condition_variable not_empty;
	std::vector<int> q;
	bool done = false;
	const int items = 1000;
	int producers = std::max(1, std::min(4, blockers(rt) - 0));
	weft::task_group g(rt);
	for (int p = 0; p < producers; p++)
		g.run([&, p] {
			for (int i = 0; i < items; i++) {
				std::lock_guard<weft::mutex> lk(m);
				q.push_back(p * items + i);
				not_empty.notify_one();
			}
		});
	long sum = 0;
	int got = 0;
	while (got < producers * items) {
		std::unique_lock<weft::mutex> lk(m);
		not_empty.wait(lk, [&] { return !q.empty(); });
		for (int x : q)
			sum += x;
		got += (int)q.size();
		q.clear();
	}
	g.wait();
	long total = (long)producers * items;
	CHECK_EQ(sum, total * (total - 1) / 2);
	std::unique_lock<weft::mutex> lk(m);
	CHECK(not_empty.wait_for(lk, std::chrono::milliseconds(5)) == std::cv_status::timeout);
	CHECK(!not_empty.wait_for(lk, std::chrono::milliseconds(5), [&] { return done; }));
	CHECK(!not_empty.wait_until(lk,
	                            std::chrono::steady_clock::now() + std::chrono::milliseconds(2),
	                            [&] { return done; }));
}

// semaphore and barrier among tasks.
void sem_barrier(weft::runtime &rt)
{
	weft::semaphore sem(2);
	std::atomic<int> inside{0}, most{0};
	weft::task_group g(rt);
	for (int i = 0; i < 16; i++)
		g.run([&] {
			sem.acquire();
			int now = ++inside;
			int seen = most.load();
			while (now > seen && !most.compare_exchange_weak(seen, now)) {
			}
			weft::this_task::yield();
			inside--;
			sem.release();
		});
	g.wait();
	CHECK(most.load() <= 2);
	CHECK_EQ(sem.value(), 2L);
	CHECK(sem.try_acquire());
	CHECK(sem.try_acquire());
	CHECK(!sem.try_acquire_for(std::chrono::milliseconds(2)));
	sem.release(2);

	int parties = std::min(blockers(rt), 8);
	weft::barrier b((unsigned)parties);
	std::atomic<int> last{0}, arrived{0};
	for (int i = 0; i < parties; i++)
		g.run([&] {
			for (int round = 0; round < 20; round++) {
				arrived++;
				if (b.arrive_and_wait())
					last++;
			}
		});
	g.wait();
	CHECK_EQ(last.load(), 20);
	CHECK_EQ(arrived.load(), 20 * parties);
}

// A producer/consumer over channel<std::string>; a channel of move-only
// values destroyed with values still in it; timed forms.
#if WEFT_CPP_EXCEPTIONS
// A value whose move constructor throws on the nth move from now (review
// finding f): a throw inside weft must free the storage it took and reach
// the caller (no node leaked, no std::terminate).
std::atomic<int> moves_to_throw{0};

struct ThrowsOnMove {
	Counted c;
	explicit ThrowsOnMove(long x) : c(x)
	{
	}
	ThrowsOnMove(const ThrowsOnMove &o) = default;
	ThrowsOnMove(ThrowsOnMove &&o) : c(o.c)
	{
		int n = moves_to_throw.load();
		if (n > 0 && moves_to_throw.fetch_sub(1) == 1)
			throw std::runtime_error("move");
	}
	ThrowsOnMove &operator=(ThrowsOnMove &&o)
	{
		c = o.c;
		return *this;
	}
	ThrowsOnMove &operator=(const ThrowsOnMove &) = default;
};

template <class F> bool throws_move(F &&f)
{
	try {
		f();
	} catch (const std::runtime_error &e) {
		moves_to_throw = 0;
		return std::strcmp(e.what(), "move") == 0;
	}
	moves_to_throw = 0;
	return false;
}

void throwing_moves(weft::runtime &rt)
{
	long nodes = weft::detail::nodes_in_use().load();
	{
		weft::channel<ThrowsOnMove> ch(4);
		for (int i = 0; i < 50; i++) {
			ThrowsOnMove v(i);
			moves_to_throw = 1; // the move into the channel's node
			CHECK(throws_move([&] { ch.send(std::move(v)); }));
		}
		CHECK_EQ(weft::detail::nodes_in_use().load(), nodes);
		CHECK(ch.send(ThrowsOnMove(7)));
		auto got = ch.recv();
		CHECK(got && got->c.v == 7);
	}
	CHECK_EQ(weft::detail::nodes_in_use().load(), nodes);
	{
		weft::task_group g(rt);
		std::atomic<int> ran{0};
		for (int i = 0; i < 50; i++) {
			auto f = [&ran, v = ThrowsOnMove(i)] { ran++; };
			moves_to_throw = 1; // the move into the group's node
			CHECK(throws_move([&] { g.run(std::move(f)); }));
		}
		g.run([&ran] { ran++; });
		CHECK(g.wait() == weft::task_group_status::complete);
		CHECK_EQ(ran.load(), 1);
	}
	CHECK_EQ(weft::detail::nodes_in_use().load(), nodes);
	for (int k = 1; k <= 3; k++) {
		// async moves its argument into a tuple, the tuple into the
		// task's state: a throw at any of them reaches the caller.
		for (int i = 0; i < 20; i++) {
			moves_to_throw = k;
			bool threw = throws_move([&] {
				auto f = weft::async(rt, [](const ThrowsOnMove &v) { return v.c.v; },
				                     ThrowsOnMove(i));
				CHECK_EQ(f.get(), (long)i);
			});
			(void)threw; // k beyond the moves made: no throw, a value
		}
	}
	moves_to_throw = 0;
	CHECK_EQ(weft::detail::nodes_in_use().load(), nodes);
	CHECK_EQ(rt.wait_all(), 0);
}
#endif

void channel_strings(weft::runtime &rt)
{
	const int producers = 3, per = sanitized ? 300 : 3000;
	weft::channel<std::string> ch(8);
	weft::task_group g(rt);
	for (int p = 0; p < producers; p++)
		g.run([&ch, p] {
			for (int i = 0; i < per; i++)
				CHECK(ch.send(std::to_string(p * per + i) + std::string(40, '.')));
		});
	long sum = 0;
	for (int i = 0; i < producers * per; i++) {
		std::optional<std::string> s = ch.recv();
		CHECK(s.has_value());
		if (s)
			sum += std::stol(*s);
	}
	g.wait();
	long total = (long)producers * per;
	CHECK_EQ(sum, total * (total - 1) / 2);
	CHECK(!ch.recv_for(std::chrono::milliseconds(2)).has_value());
	CHECK(ch.close());
	CHECK(!ch.close());
	std::string kept = "kept";
	CHECK(!ch.send(std::move(kept)));
	CHECK(kept == "kept"); // a failed send leaves the value
	CHECK(!ch.recv().has_value());

	{
		weft::channel<std::unique_ptr<Counted>> cc(4);
		CHECK(cc.send(std::make_unique<Counted>(1)));
		CHECK(cc.send(std::make_unique<Counted>(2)));
		auto one = cc.recv();
		CHECK(one && (*one)->v == 1);
		auto full = std::make_unique<Counted>(3);
		CHECK(cc.send(std::move(full)));
		CHECK(cc.send(std::make_unique<Counted>(4)));
		CHECK(cc.send(std::make_unique<Counted>(5)));
		auto extra = std::make_unique<Counted>(6);
		CHECK(!cc.send_for(std::move(extra), std::chrono::milliseconds(2)));
		CHECK(extra && extra->v == 6);
		// cc goes out of scope holding 2, 3, 4, 5.
	}
	CHECK_EQ(live.load(), 0L);

	// Unbuffered, between two tasks.
	weft::channel<int> sync_ch;
	auto rx = weft::async([&sync_ch] {
		long s = 0;
		while (auto v = sync_ch.recv())
			s += *v;
		return s;
	});
	for (int i = 1; i <= 100; i++)
		CHECK(sync_ch.send(i));
	sync_ch.close();
	CHECK_EQ(rx.get(), 5050L);
}

// The examples of docs/cpp.md with every party a task and the waiting one
// posted first: a consumer over channel<std::string> and its producer; a
// condition_variable waited on in a task and notified by a later one. At
// one worker under threads and spawn the waiting task holds the worker:
// a stand-in thread runs the later task (compensation, docs/models.md).
void tasks_wait_for_later_tasks(weft::runtime &rt)
{
	const int lines = sanitized ? 300 : 3000;
	weft::channel<std::string> ch(4);
	long got = 0;
	weft::task_group g(rt);
	g.run([&] {
		while (std::optional<std::string> line = ch.recv())
			got += (long)line->size();
	});
	g.run([&] {
		for (int i = 0; i < lines; i++)
			CHECK(ch.send(std::string(10, 'x')));
		ch.close();
	});
	g.wait();
	CHECK_EQ(got, 10L * lines);

	weft::mutex m;
	weft::condition_variable cv;
	bool ready = false;
	int woke = 0;
	g.run([&] {
		std::unique_lock<weft::mutex> lk(m);
		cv.wait(lk, [&] { return ready; });
		woke++;
	});
	g.run([&] {
		std::scoped_lock lk(m);
		ready = true;
		cv.notify_all();
	});
	g.wait();
	CHECK_EQ(woke, 1);
}

// sleep_for / sleep_until in tasks and on the main thread; yield.
void sleeping(weft::runtime &rt)
{
	using clk = std::chrono::steady_clock;
	auto t0 = clk::now();
	weft::task_group g(rt);
	for (int i = 0; i < 4; i++)
		g.run([] {
			auto s = clk::now();
			weft::this_task::sleep_for(std::chrono::milliseconds(10));
			CHECK(clk::now() - s >= std::chrono::milliseconds(10));
			weft::this_task::sleep_until(clk::now() + std::chrono::milliseconds(2));
			weft::this_task::yield();
			CHECK(weft::this_task::worker_index() >= 0);
		});
	g.wait();
	CHECK(clk::now() - t0 >= std::chrono::milliseconds(12));
	weft::this_task::sleep_for(std::chrono::microseconds(100));
	CHECK_EQ(weft::this_task::worker_index(), -1);
}

// runtime: current() inside tasks, moves, config, several runtimes.
void runtime_handles(weft::runtime &rt)
{
	CHECK(!weft::runtime::current());
	// weft.h's own declarations link from C++ (extern "C").
	CHECK(weft_version() != nullptr && std::strlen(weft_version()) >= 5);
	auto f = weft::async([&rt] {
		weft::runtime cur = weft::runtime::current();
		return cur.native_handle() == rt.native_handle();
	});
	CHECK(f.get());
	CHECK_EQ((int)rt.model(), (int)model);
	CHECK(rt.workers() >= 1);
	weft::config c = test_config();
	c.workers = 1;
	weft::runtime other(c);
	CHECK(other);
	auto g = weft::async(other, [] { return weft::runtime::current().native_handle(); });
	CHECK(g.get() == other.native_handle());
	weft::runtime moved(std::move(other));
	CHECK(moved && !other);
	weft::config bad;
	bad.workers = -3;
	weft::runtime broken(bad);
	CHECK(!broken);
	CHECK_EQ(broken.error(), (int)WEFT_EINVAL);
	CHECK_EQ(rt.wait_all(), 0);
}

const test_case cases[] = {
        {"group_run", group_run},
        {"group_on_leftovers", group_on_leftovers},
        {"group_dtor_waits", group_dtor_waits},
        {"group_cancel", group_cancel},
        {"group_wait_until", group_wait_until},
#if WEFT_CPP_EXCEPTIONS
        {"group_exception", group_exception},
        {"future_exception", future_exception},
        {"throwing_moves", throwing_moves},
#endif
        {"future_values", future_values},
        {"future_dtor_waits", future_dtor_waits},
        {"future_then", future_then},
        {"promise_value", promise_value},
        {"promise_then_in_task", promise_then_in_task},
        {"when_all_many", when_all_many},
        {"invoke_fib", invoke_fib},
        {"for_loops", for_loops},
        {"reduce", reduce},
        {"mutex_counter", mutex_counter},
        {"condvar_queue", condvar_queue},
        {"sem_barrier", sem_barrier},
        {"channel_strings", channel_strings},
        {"sleeping", sleeping},
        {"runtime_handles", runtime_handles},
        {"tasks_wait_for_later_tasks", tasks_wait_for_later_tasks},
};

// What test_cpp checks after each case beside weft's blocks: every Counted
// destroyed, every task node given back.
void after_case()
{
	CHECK_EQ(live.load(), 0L);
	CHECK_EQ(weft::detail::nodes_in_use().load(), 0L);
}

} // namespace

int main(int argc, char **argv)
{
	return main_of(argc, argv, cases, sizeof(cases) / sizeof(cases[0]), after_case);
}
