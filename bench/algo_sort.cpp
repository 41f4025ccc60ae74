// algo_sort: weft's parallel sort and scan (weft/algo.h, weft.hpp) against
// oneTBB's parallel_sort and parallel_scan, std::sort(std::execution::par)
// (libstdc++'s parallel algorithms, on TBB) and the sequential std::sort and
// std::inclusive_scan, in one run, interleaved (each repetition runs every
// contender once, in turn, on the same input), so that the ratios come
// from the same load. Prints the median and the min of the repetitions,
// each contender's ratio to weft_parallel_sort, and the load average.
//
//   algo_sort [--n N] [--scan-n N] [--reps R] [--workers W] [--small]
//
// N ints (default 50,000,000 random 32-bit signed) are sorted; the scan runs
// over N doubles (default 50,000,000). W (default 2) limits every library:
// weft's runtime has W workers (WEFT_MODEL chooses the model; the call is
// made from a task of the runtime, so exactly W threads work), TBB runs
// under a global_control of W threads (which PSTL's par policy uses too).
// Built only without sanitizers; oneTBB and <execution> are optional
// (columns missing without them).
#include <weft/weft.hpp>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include <stdlib.h>
#include <time.h>

#if WEFT_BENCH_HAVE_TBB
#include <tbb/global_control.h>
#include <tbb/parallel_scan.h>
#include <tbb/parallel_sort.h>
#if __has_include(<execution>)
#include <execution>
#define HAVE_PAR 1
#endif
#endif

namespace
{

double now_ms()
{
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

struct row {
	std::string name;
	std::vector<double> ms;
};

double median(std::vector<double> v)
{
	std::sort(v.begin(), v.end());
	size_t n = v.size();
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::vector<int32_t> random_ints(size_t n)
{
	std::vector<int32_t> v(n);
	uint64_t x = 88172645463325252ull;
	for (auto &e : v) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		e = static_cast<int32_t>(x >> 32);
	}
	return v;
}

// Runs f on a task of rt (so that exactly the runtime's W workers work:
// a call from main would add the main thread as one more).
template <class F> void in_task(weft::runtime &rt, F f)
{
	weft::async(rt, f).get();
}

void print(const char *title, std::vector<row> &rows, size_t base)
{
	double b = median(rows[base].ms);
	std::printf("%s\n", title);
	std::printf("  %-40s %10s %10s %8s\n", "contender", "median ms", "min ms", "vs weft");
	for (auto &r : rows) {
		if (r.ms.empty())
			continue;
		double m = median(r.ms);
		std::printf("  %-40s %10.1f %10.1f %7.2fx\n", r.name.c_str(), m,
		            *std::min_element(r.ms.begin(), r.ms.end()), m / b);
	}
}

int usage(FILE *f, int status)
{
	std::fprintf(f,
	             "usage: algo_sort [--n N] [--scan-n N] [--reps R] [--workers W] [--small]\n"
	             "Sorts N random int32 (default 50000000) and scans N doubles with weft,\n"
	             "oneTBB, std::execution::par and std, interleaved; prints medians.\n");
	return status;
}

} // namespace

int main(int argc, char **argv)
{
	size_t n = 50000000, scan_n = 50000000;
	int reps = 5, workers = 2;
	for (int i = 1; i < argc; i++) {
		std::string a = argv[i];
		auto val = [&](const char *name) -> const char * {
			if (i + 1 >= argc) {
				std::fprintf(stderr, "algo_sort: %s wants a value\n", name);
				std::exit(2);
			}
			return argv[++i];
		};
		if (a == "--n")
			n = std::strtoull(val("--n"), nullptr, 10);
		else if (a == "--scan-n")
			scan_n = std::strtoull(val("--scan-n"), nullptr, 10);
		else if (a == "--reps")
			reps = std::atoi(val("--reps"));
		else if (a == "--workers")
			workers = std::atoi(val("--workers"));
		else if (a == "--small")
			n = scan_n = 1000000, reps = 1;
		else if (a == "-h" || a == "--help")
			return usage(stdout, 0);
		else
			return usage(stderr, 2);
	}
	if (n < 1 || reps < 1 || workers < 1)
		return usage(stderr, 2);

	weft::config cfg;
	cfg.workers = workers;
	weft::runtime rt(cfg);
	if (!rt) {
		std::fprintf(stderr, "algo_sort: runtime: %s\n", weft_strerror(rt.error()));
		return 1;
	}
#if WEFT_BENCH_HAVE_TBB
	tbb::global_control limit(tbb::global_control::max_allowed_parallelism,
	                          static_cast<size_t>(workers));
#endif
	std::printf("algo_sort: %zu int32 to sort, %zu doubles to scan, %d workers, model %s, "
	            "%d repetitions\n",
	            n, scan_n, workers, weft_model_name(rt.model()), reps);

	// ------------------------------------------------------------ sort
	const std::vector<int32_t> input = random_ints(n);
	std::vector<int32_t> want = input, v(n);
	std::sort(want.begin(), want.end());
	std::vector<char> scratch(weft_parallel_sort_scratch_size(n, 4) + 8);
	void *scr = scratch.data() + (8 - reinterpret_cast<uintptr_t>(scratch.data()) % 8) % 8;
	std::vector<row> rows = {{"weft_parallel_sort (radix)", {}},
	                         {"weft_parallel_sort, caller's scratch", {}},
	                         {"weft::parallel_sort (lambda: quicksort)", {}},
	                         {"weft_parallel_sort_cmp (C comparator)", {}},
	                         {"tbb::parallel_sort", {}},
	                         {"std::sort(std::execution::par)", {}},
	                         {"std::sort (1 thread)", {}}};
	bool bad = false;
	auto timed = [&](row &r, auto &&f) {
		v = input;
		double t0 = now_ms();
		f();
		r.ms.push_back(now_ms() - t0);
		if (v != want) {
			std::fprintf(stderr, "algo_sort: %s did not sort\n", r.name.c_str());
			bad = true;
		}
	};
	for (int rep = 0; rep < reps; rep++) {
		timed(rows[0], [&] {
			in_task(rt, [&] { weft_parallel_sort(nullptr, v.data(), n, WEFT_TYPE_I32, nullptr); });
		});
		timed(rows[1], [&] {
			in_task(rt, [&] { weft_parallel_sort(nullptr, v.data(), n, WEFT_TYPE_I32, scr); });
		});
		timed(rows[2], [&] {
			in_task(rt, [&] {
				weft::parallel_sort(v.begin(), v.end(), [](int32_t a, int32_t b) { return a < b; });
			});
		});
		timed(rows[3], [&] {
			in_task(rt, [&] {
				weft_parallel_sort_cmp(
				        nullptr, v.data(), n, 4,
				        [](const void *a, const void *b, void *) {
					        int32_t x = *static_cast<const int32_t *>(a),
					                y = *static_cast<const int32_t *>(b);
					        return (x > y) - (x < y);
				        },
				        nullptr, nullptr);
			});
		});
#if WEFT_BENCH_HAVE_TBB
		timed(rows[4], [&] { tbb::parallel_sort(v.begin(), v.end()); });
#if HAVE_PAR
		timed(rows[5], [&] { std::sort(std::execution::par, v.begin(), v.end()); });
#endif
#endif
		timed(rows[6], [&] { std::sort(v.begin(), v.end()); });
	}
	double load[3] = {0, 0, 0};
	getloadavg(load, 3);
	print("sort (int32, ascending)", rows, 0);
	if (!rows[4].ms.empty())
		std::printf("  tbb::parallel_sort / weft_parallel_sort: %.2fx\n",
		            median(rows[4].ms) / median(rows[0].ms));

	// ------------------------------------------------------------ scan
	std::vector<double> in(scan_n), out(scan_n), ref(scan_n);
	uint64_t x = 1;
	for (auto &e : in) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		e = static_cast<double>(x >> 11) * 0x1p-53;
	}
	std::inclusive_scan(in.begin(), in.end(), ref.begin());
	std::vector<row> srows = {{"weft_parallel_scan_sum (f64)", {}},
	                          {"weft::parallel_scan", {}},
	                          {"tbb::parallel_scan", {}},
	                          {"std::inclusive_scan(par)", {}},
	                          {"std::inclusive_scan (1 thread)", {}}};
	auto stimed = [&](row &r, auto &&f) {
		std::fill(out.begin(), out.end(), 0.0);
		double t0 = now_ms();
		f();
		r.ms.push_back(now_ms() - t0);
		double tol = 1e-9 * ref.back();
		if (std::abs(out.back() - ref.back()) > tol ||
		    std::abs(out[scan_n / 2] - ref[scan_n / 2]) > tol) {
			std::fprintf(stderr, "algo_sort: %s: wrong sums\n", r.name.c_str());
			bad = true;
		}
	};
	for (int rep = 0; rep < reps; rep++) {
		stimed(srows[0], [&] {
			in_task(rt, [&] {
				weft_parallel_scan_sum(weft_rt_current(), in.data(), out.data(), scan_n,
				                       WEFT_TYPE_F64, WEFT_SCAN_INCLUSIVE);
			});
		});
		stimed(srows[1], [&] {
			in_task(rt, [&] { weft::parallel_scan(in.begin(), in.end(), out.begin()); });
		});
#if WEFT_BENCH_HAVE_TBB
		stimed(srows[2], [&] {
			tbb::parallel_scan(
			        tbb::blocked_range<size_t>(0, scan_n), 0.0,
			        [&](const tbb::blocked_range<size_t> &r, double sum, bool final) {
				        for (size_t i = r.begin(); i < r.end(); i++) {
					        sum += in[i];
					        if (final)
						        out[i] = sum;
				        }
				        return sum;
			        },
			        std::plus<double>());
		});
#if HAVE_PAR
		stimed(srows[3], [&] {
			std::inclusive_scan(std::execution::par, in.begin(), in.end(), out.begin());
		});
#endif
#endif
		stimed(srows[4], [&] { std::inclusive_scan(in.begin(), in.end(), out.begin()); });
	}
	double load2[3] = {0, 0, 0};
	getloadavg(load2, 3);
	print("scan (inclusive prefix sum of doubles)", srows, 0);
	if (!srows[2].ms.empty())
		std::printf("  tbb::parallel_scan / weft_parallel_scan_sum: %.2fx\n",
		            median(srows[2].ms) / median(srows[0].ms));
	std::printf("load average (1 min): %.2f after the sorts, %.2f after the scans\n", load[0],
	            load2[0]);
	return bad ? 1 : 0;
}
