// weft::parallel_sort, weft::parallel_scan and weft::combinable<T>
// (include/weft/cpp/algorithm.hpp) on every model and worker count:
//
//   test_cpp_algo <case> [<model> <workers>]
//
// Each case runs on a fresh weft::runtime with a counting weft_allocator:
// blocks weft allocated and still live after it fail the case. Sorts are
// checked against std::sort (and std::stable_sort where the order of equal
// keys is known), scans against std::inclusive_scan / exclusive_scan (bit
// for bit against the same scan with no runtime: the order of the
// additions is the length's alone), combinables against the sequential
// result with tasks that park between updates. Built with and without
// exceptions, as test_cpp.
#include "cpp_harness.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace
{

using namespace cpp_harness;

bool under_spawn()
{
	return model == WEFT_MODEL_SPAWN;
}

// ------------------------------------------------------------------ sort

template <class T> std::vector<T> random_values(std::size_t n, std::uint64_t seed)
{
	std::mt19937_64 g(seed);
	std::vector<T> v(n);
	for (auto &x : v) {
		if constexpr (std::is_floating_point_v<T>)
			x = static_cast<T>(std::uniform_real_distribution<double>(-1e6, 1e6)(g));
		else
			x = static_cast<T>(g());
	}
	return v;
}

template <class T> void sort_like_std(std::size_t n)
{
	auto v = random_values<T>(n, n * 7 + sizeof(T));
	auto want = v;
	std::sort(want.begin(), want.end());
	weft::parallel_sort(v.begin(), v.end()); // radix path
	CHECK(v == want);
	auto w = random_values<T>(n, n * 11 + sizeof(T));
	auto want_desc = w;
	std::sort(want_desc.begin(), want_desc.end(), std::greater<T>());
	weft::parallel_sort(w.data(), w.data() + w.size(), std::greater<T>()); // comparator path
	CHECK(w == want_desc);
}

void sort_arithmetic(weft::runtime &)
{
	// 150,000 still spans the radix sort's parallel MSD blocks (65,536).
	for (std::size_t n : {0u, 1u, 2u, 100u, 5000u, sanitized ? 150000u : 300000u}) {
		sort_like_std<int>(n);
		sort_like_std<unsigned>(n);
		sort_like_std<long long>(n);
		sort_like_std<std::uint64_t>(n);
		sort_like_std<float>(n);
		sort_like_std<double>(n);
		sort_like_std<short>(n); // not a radix type: the comparator path
	}
	// Already sorted, reversed, constant.
	std::vector<int> a(200000);
	std::iota(a.begin(), a.end(), -100000);
	auto want = a;
	weft::parallel_sort(a);
	CHECK(a == want);
	std::reverse(a.begin(), a.end());
	weft::parallel_sort(a.begin(), a.end(), std::less<int>());
	CHECK(a == want);
	std::fill(a.begin(), a.end(), 7);
	weft::parallel_sort(a.begin(), a.end(), [](int x, int y) { return x < y; });
	CHECK(std::all_of(a.begin(), a.end(), [](int x) { return x == 7; }));
	// Doubles with signed zeros and NaNs: the radix path orders them by
	// totalOrder, -0.0 first.
	std::vector<double> d = {3.0, -0.0, 0.0, -1.0, NAN, -INFINITY, 0.0, -0.0};
	weft::parallel_sort(d.begin(), d.end());
	CHECK(d[0] == -INFINITY && d[1] == -1.0 && std::signbit(d[2]) && std::signbit(d[3]) &&
	      !std::signbit(d[4]) && !std::signbit(d[5]) && d[6] == 3.0 && std::isnan(d[7]));
}

struct person {
	std::string name;
	int age;
};

void sort_objects(weft::runtime &)
{
	std::size_t n = under_spawn() ? 20000 : 200000;
	std::mt19937 g(5);
	std::vector<person> v(n);
	for (std::size_t i = 0; i < n; i++)
		v[i] = {"p" + std::to_string(g() % 100000), static_cast<int>(g() % 90)};
	auto by = [](const person &a, const person &b) {
		return a.age != b.age ? a.age < b.age : a.name < b.name;
	};
	auto want = v;
	std::sort(want.begin(), want.end(), by);
	weft::parallel_sort(v.begin(), v.end(), by);
	bool same = true;
	for (std::size_t i = 0; i < n; i++)
		same &= v[i].age == want[i].age && v[i].name == want[i].name;
	CHECK(same);
	// Strings by their natural order, in a task.
	std::vector<std::string> s(n / 4);
	for (auto &x : s)
		x = std::to_string(g());
	auto ws = s;
	std::sort(ws.begin(), ws.end());
	weft::async([&] { weft::parallel_sort(s); }).get();
	CHECK(s == ws);
}

#if WEFT_CPP_EXCEPTIONS
void sort_exception(weft::runtime &)
{
	std::vector<int> v(100000);
	std::iota(v.rbegin(), v.rend(), 0);
	std::atomic<long> calls{0};
	bool caught = false;
	try {
		weft::parallel_sort(v.begin(), v.end(), [&](int a, int b) {
			if (calls.fetch_add(1) == 50000)
				throw std::runtime_error("cmp");
			return a < b;
		});
	} catch (const std::runtime_error &) {
		caught = true;
	}
	CHECK(caught);
	CHECK(v.size() == 100000);
	// The runtime is still usable after the throw.
	std::iota(v.rbegin(), v.rend(), 0);
	weft::parallel_sort(v.begin(), v.end(), [](int a, int b) { return a < b; });
	CHECK(std::is_sorted(v.begin(), v.end()));
}
#endif

// ------------------------------------------------------------------ scan

void scan_values(weft::runtime &)
{
	std::size_t n = sanitized ? 300000 : 3000000;
	std::mt19937_64 g(9);
	std::vector<double> in(n), out(n), seq(n);
	for (auto &x : in)
		x = std::uniform_real_distribution<double>(-1, 1)(g);
	weft::parallel_scan(in.begin(), in.end(), out.begin());
	std::inclusive_scan(in.begin(), in.end(), seq.begin());
	double err = 0, mag = 0;
	for (std::size_t i = 0; i < n; i++) {
		err = std::max(err, std::fabs(out[i] - seq[i]));
		mag += std::fabs(in[i]);
	}
	CHECK(err <= 1e-12 * mag);
	// Deterministic: the same bits as the sequential fallback of the same
	// blocked order, here from a task of another runtime.
	std::vector<double> again(n);
	weft::config c = test_config();
	c.model = WEFT_MODEL_THREADS;
	c.workers = 1;
	{
		weft::runtime one(c);
		weft::async(one, [&] { weft::parallel_scan(in.begin(), in.end(), again.begin()); })
		        .get();
	}
	CHECK(std::memcmp(out.data(), again.data(), n * sizeof(double)) == 0);

	// Integers, exact; exclusive with init; in place.
	std::vector<long long> li(n), lo(n), ls(n);
	for (auto &x : li)
		x = static_cast<long long>(g() % 1000) - 500;
	weft::parallel_exclusive_scan(li.begin(), li.end(), lo.begin(), 10LL);
	std::exclusive_scan(li.begin(), li.end(), ls.begin(), 10LL);
	CHECK(lo == ls);
	weft::parallel_inclusive_scan(li.begin(), li.end(), lo.begin(), std::plus<>(), 5LL);
	std::inclusive_scan(li.begin(), li.end(), ls.begin(), std::plus<>(), 5LL);
	CHECK(lo == ls);
	auto inplace = li;
	weft::parallel_scan(inplace.begin(), inplace.end(), inplace.begin());
	std::inclusive_scan(li.begin(), li.end(), ls.begin());
	CHECK(inplace == ls);

	// A non-commutative op on strings: order is kept.
	std::vector<std::string> words(40000);
	for (std::size_t i = 0; i < words.size(); i++)
		words[i] = std::string(1, static_cast<char>('a' + i % 26));
	std::vector<std::size_t> lens(words.size());
	std::vector<std::string> cat(words.size());
	weft::parallel_scan(words.begin(), words.end(), cat.begin());
	bool ok = true;
	for (std::size_t i = 0; i < words.size(); i += 997)
		ok &= cat[i].size() == i + 1 && cat[i][i] == words[i][0] && cat[i][0] == 'a';
	CHECK(ok);
	// Empty.
	std::vector<int> none;
	CHECK(weft::parallel_scan(none.begin(), none.end(), none.begin()) == none.begin());
}

// ------------------------------------------------------------------ combinable

void combinable_sum(weft::runtime &)
{
	weft::combinable<long> sum;
	weft::parallel_for(0, 1000000, [&](int i) { sum.local() += i; });
	CHECK(sum.combine(std::plus<>()) == 999999L * 1000000 / 2);
	CHECK(sum.size() >= 1);
	// A T that owns memory: a word count per worker, merged at the end.
	weft::combinable<std::map<int, long>> counts;
	std::vector<int> words(200000);
	for (std::size_t i = 0; i < words.size(); i++)
		words[i] = static_cast<int>(i % 37);
	weft::parallel_for(words.begin(), words.end(), [&](int w) { counts.local()[w]++; });
	std::map<int, long> total;
	counts.combine_each([&](const std::map<int, long> &m) {
		for (auto &kv : m)
			total[kv.first] += kv.second;
	});
	bool ok = total.size() == 37;
	for (auto &kv : total)
		ok &= kv.second == (kv.first < static_cast<int>(200000 % 37) ? 200000 / 37 + 1
		                                                             : 200000 / 37);
	CHECK(ok);
	counts.clear();
	CHECK(counts.size() == 0);
	// A factory: every slot starts at 100.
	weft::combinable<int> hundred([] { return 100; });
	bool exists = true;
	hundred.local(exists) += 1;
	CHECK(!exists);
	hundred.local(exists) += 1;
	CHECK(exists);
	CHECK(hundred.combine(std::plus<>()) == 102);
	weft::combinable<int> empty([] { return 42; });
	CHECK(empty.combine(std::plus<>()) == 42);
}

// Tasks that park between updates: the reference is asked for again after
// every park, so the total is exact on every model (mn moves tasks).
void combinable_park(weft::runtime &rt)
{
	weft::combinable<long> sum;
	weft::mutex mu;
	weft::task_group g(rt);
	for (int t = 1; t <= 16; t++)
		g.run([&, t] {
			for (int r = 0; r < 100; r++) {
				sum.local() += t;
				if (r % 2)
					weft::this_task::yield();
				else {
					std::lock_guard<weft::mutex> lk(mu);
					sum.local() += 1;
				}
			}
		});
	g.wait();
	long want = 0;
	for (int t = 1; t <= 16; t++)
		want += 100L * t + 50;
	CHECK(sum.combine(std::plus<>()) == want);
	CHECK(sum.size() <= static_cast<std::size_t>(rt.workers()) + 1);
}

const test_case cases[] = {
        {"sort_arithmetic", sort_arithmetic}, {"sort_objects", sort_objects},
#if WEFT_CPP_EXCEPTIONS
        {"sort_exception", sort_exception},
#endif
        {"scan_values", scan_values},         {"combinable_sum", combinable_sum},
        {"combinable_park", combinable_park},
};


} // namespace

int main(int argc, char **argv)
{
	return main_of(argc, argv, cases, sizeof(cases) / sizeof(cases[0]));
}
