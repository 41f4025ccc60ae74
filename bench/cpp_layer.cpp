// cpp_layer: what the C++ layer (weft/weft.hpp) costs over the C API, and a
// weft::async + get() round trip against std::async and oneTBB, all in one
// run (one runtime, one model, one worker count), so every ratio is from
// the same conditions.
//
//   cpp_layer [--model mn] [--workers 2] [--reps 7] [--fib 30]
//             [--joins 200000] [--std-joins 2000] [--for-iters 1000000]
//             [--for-passes 20] [--only spawn-join|fib-tree|parallel-for]
//             [--small]
//
// Workloads (each inside one root task unless said otherwise; medians of
// --reps, the variants interleaved within each repetition):
//
//   spawn-join   a loop of: start one empty task, wait for it.
//                c: weft_task on the stack, weft_post, weft_wait
//                cpp-async: weft::async(f).get()
//                cpp-group: a weft::task_group per iteration, run(f), wait()
//                tbb-group: the same with a tbb::task_group in a task_arena
//                           of --workers threads (when oneTBB is installed)
//                std-async: std::async(std::launch::async, f).get() (a thread
//                           per call: --std-joins iterations)
//   fib-tree     fib(--fib) splitting at every call
//                c-group: post both halves into a weft_group, wait for it
//                         (the C spawn tree of bench/fork_join)
//                c-post-wait: post both halves, wait for each
//                c-fork-join: weft_fork_join
//                cpp-invoke: weft::parallel_invoke
//                cpp-group: a weft::task_group per call, run both, wait
//                tbb-group: the same with tbb::task_group
//   parallel-for from the main thread, --for-passes passes over
//                --for-iters ints (a[i] = a[i] * 3 + 1), C and C++ pass by
//                pass: c: weft_parallel_for, cpp: weft::parallel_for (indices)
//   allocs       operator new calls per task_group::run and per
//                weft::async, counted over 100,000 in steady state
//
// Output: one line per workload and variant: ns per operation (a join, a
// fib call, an iteration) and the ratio to the first variant.
#include <weft/weft.hpp>

#include "../apps/common/cli.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <getopt.h>
#include <new>
#include <string>
#include <vector>

#ifdef WEFT_BENCH_HAVE_TBB
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>
#endif

#include <time.h>

// The clock, the median and the model names (bench_util.h's, which pulls in
// C-only headers).
static double bench_now_ns()
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static double bench_median(double *v, int n)
{
	std::sort(v, v + n);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static bool bench_model_by_name(const char *name, weft_model *out)
{
	for (int m = 0; m < WEFT_MODEL_COUNT_; m++)
		if (std::strcmp(name, weft_model_name((weft_model)m)) == 0) {
			*out = (weft_model)m;
			return true;
		}
	return false;
}

// ------------------------------------------------------- counting new

static std::atomic<long> g_news{0};

void *operator new(std::size_t n)
{
	g_news.fetch_add(1, std::memory_order_relaxed);
	if (void *p = std::malloc(n ? n : 1))
		return p;
	std::abort();
}
void operator delete(void *p) noexcept
{
	std::free(p);
}
void operator delete(void *p, std::size_t) noexcept
{
	std::free(p);
}

// ------------------------------------------------------- options

namespace
{
struct options {
	weft_model model = WEFT_MODEL_MN;
	int workers = 2;
	int reps = 7;
	int fib = 30;
	long joins = 200000;
	long std_joins = 2000;
	long for_iters = 1000000;
	long for_passes = 20;
	std::string only; // one workload, or all
} opt;

bool wanted(const char *workload)
{
	return opt.only.empty() || opt.only == workload;
}

weft_rt *g_rt;

[[noreturn]] void die(const char *what)
{
	std::fprintf(stderr, "cpp_layer: %s\n", what);
	std::exit(1);
}

// Runs f as one task of rt and returns what it returns (its own timing).
template <class F> double in_task(weft::runtime &rt, F f)
{
	return weft::async(rt, f).get();
}

// ------------------------------------------------------- spawn-join

void empty_fn(void *)
{
}

double join_c(long n)
{
	double t0 = bench_now_ns();
	for (long i = 0; i < n; i++) {
		weft_task t;
		if (weft_task_init(&t, empty_fn, nullptr) != 0)
			die("spawn-join c: init failed");
		if (weft_post(g_rt, &t) != 0 || weft_wait(&t) != 0)
			die("spawn-join c: post or wait failed");
	}
	return (bench_now_ns() - t0) / (double)n;
}

double join_async(long n)
{
	double t0 = bench_now_ns();
	long sum = 0;
	for (long i = 0; i < n; i++)
		sum += weft::async([] { return 1; }).get();
	if (sum != n)
		die("spawn-join cpp-async: wrong sum");
	return (bench_now_ns() - t0) / (double)n;
}

double join_group(long n)
{
	double t0 = bench_now_ns();
	long sum = 0;
	for (long i = 0; i < n; i++) {
		weft::task_group g;
		g.run([&sum] { sum++; });
		g.wait();
	}
	if (sum != n)
		die("spawn-join cpp-group: wrong sum");
	return (bench_now_ns() - t0) / (double)n;
}

double join_std(long n)
{
	double t0 = bench_now_ns();
	long sum = 0;
	for (long i = 0; i < n; i++)
		sum += std::async(std::launch::async, [] { return 1; }).get();
	if (sum != n)
		die("spawn-join std-async: wrong sum");
	return (bench_now_ns() - t0) / (double)n;
}

// ------------------------------------------------------- fib

long fib_seq(int n)
{
	return n < 2 ? n : fib_seq(n - 1) + fib_seq(n - 2);
}

struct cfib {
	weft_task t;
	int n;
	long value;
};

void fib_post_wait(void *arg)
{
	cfib *f = static_cast<cfib *>(arg);
	if (f->n < 2) {
		f->value = f->n;
		return;
	}
	cfib a, b;
	a.n = f->n - 1;
	b.n = f->n - 2;
	if (weft_task_init(&a.t, fib_post_wait, &a) || weft_task_init(&b.t, fib_post_wait, &b))
		die("fib c-post-wait: init failed");
	if (weft_post(g_rt, &a.t) || weft_post(g_rt, &b.t) || weft_wait(&a.t) || weft_wait(&b.t))
		die("fib c-post-wait: post or wait failed");
	f->value = a.value + b.value;
}

void fib_group_c(void *arg)
{
	cfib *f = static_cast<cfib *>(arg);
	if (f->n < 2) {
		f->value = f->n;
		return;
	}
	cfib a, b;
	a.n = f->n - 1;
	b.n = f->n - 2;
	weft_group g = {};
	if (weft_group_init(&g) || weft_task_init(&a.t, fib_group_c, &a) ||
	    weft_task_init(&b.t, fib_group_c, &b))
		die("fib c-group: init failed");
	if (weft_post_in(g_rt, &g, &a.t) || weft_post_in(g_rt, &g, &b.t) || weft_group_wait(&g))
		die("fib c-group: post or wait failed");
	f->value = a.value + b.value;
}

void fib_fork_join(void *arg)
{
	cfib *f = static_cast<cfib *>(arg);
	if (f->n < 2) {
		f->value = f->n;
		return;
	}
	cfib a, b;
	a.n = f->n - 1;
	b.n = f->n - 2;
	if (weft_fork_join(g_rt, fib_fork_join, &a, fib_fork_join, &b))
		die("fib c-fork-join failed");
	f->value = a.value + b.value;
}

long fib_invoke(int n)
{
	if (n < 2)
		return n;
	long a, b;
	weft::parallel_invoke([&] { a = fib_invoke(n - 1); }, [&] { b = fib_invoke(n - 2); });
	return a + b;
}

long fib_group(int n)
{
	if (n < 2)
		return n;
	long a, b;
	weft::task_group g;
	g.run([&] { a = fib_group(n - 1); });
	g.run([&] { b = fib_group(n - 2); });
	g.wait();
	return a + b;
}

#ifdef WEFT_BENCH_HAVE_TBB
long fib_tbb(int n)
{
	if (n < 2)
		return n;
	long a, b;
	tbb::task_group g;
	g.run([&] { a = fib_tbb(n - 1); });
	g.run([&] { b = fib_tbb(n - 2); });
	g.wait();
	return a + b;
}
#endif

double fib_calls(int n)
{
	return 2.0 * (double)fib_seq(n + 1) - 1;
}

template <class F> double time_fib(F f)
{
	long want = fib_seq(opt.fib);
	double t0 = bench_now_ns();
	long got = f(opt.fib);
	double ns = bench_now_ns() - t0;
	if (got != want)
		die("fib: wrong value");
	return ns / fib_calls(opt.fib);
}

// ------------------------------------------------------- parallel-for

struct for_arg {
	int *a;
};

void for_body(size_t lo, size_t hi, void *arg)
{
	int *a = static_cast<for_arg *>(arg)->a;
	for (size_t i = lo; i < hi; i++)
		a[i] = a[i] * 3 + 1;
}

// ------------------------------------------------------- report

struct series {
	std::string workload, variant;
	std::vector<double> v;
};
std::vector<series> results;

void record(const char *workload, const char *variant, double ns)
{
	for (series &s : results)
		if (s.workload == workload && s.variant == variant) {
			s.v.push_back(ns);
			return;
		}
	results.push_back({workload, variant, {ns}});
}

double median(std::vector<double> v)
{
	return bench_median(v.data(), (int)v.size());
}

void report()
{
	std::printf("%-13s %-13s %12s %8s\n", "workload", "variant", "ns/op", "ratio");
	std::string last;
	double base = 0;
	for (const series &s : results) {
		double m = median(s.v);
		if (s.workload != last) {
			last = s.workload;
			base = m;
		}
		std::printf("%-13s %-13s %12.2f %8.2f\n", s.workload.c_str(), s.variant.c_str(), m,
		            m / base);
	}
}

} // namespace

static const char usage[] =
        "usage: cpp_layer [--model M] [--workers N] [--reps R] [--fib F]\n"
        "       [--joins N] [--std-joins N] [--for-iters N] [--for-passes P]\n"
        "       [--only WORKLOAD] [--small]\n"
        "       cpp_layer --help | --version\n"
        "The C++ layer (weft.hpp) against the C API on the same workloads\n"
        "(spawn-join, fib tree, parallel-for), and weft::async + get against\n"
        "std::async and oneTBB task_group run + wait (medians of R, default 5).\n";

int main(int argc, char **argv)
{
	cli_check_stdout_at_exit("cpp_layer");
	static const struct option longs[] = {
	        {"help", no_argument, nullptr, 'h'},
	        {"version", no_argument, nullptr, 'V'},
	        {"model", required_argument, nullptr, 'm'},
	        {"workers", required_argument, nullptr, 'w'},
	        {"reps", required_argument, nullptr, 'r'},
	        {"fib", required_argument, nullptr, 'f'},
	        {"joins", required_argument, nullptr, 'j'},
	        {"std-joins", required_argument, nullptr, 's'},
	        {"for-iters", required_argument, nullptr, 'i'},
	        {"for-passes", required_argument, nullptr, 'p'},
	        {"small", no_argument, nullptr, 'S'},
	        {"only", required_argument, nullptr, 'o'},
	        {nullptr, 0, nullptr, 0},
	};
	int c;
	while ((c = getopt_long(argc, argv, "", longs, nullptr)) != -1) {
		switch (c) {
		case 'm':
			if (!bench_model_by_name(optarg, &opt.model))
				die("unknown model");
			break;
		case 'w':
			opt.workers = std::atoi(optarg);
			break;
		case 'r':
			opt.reps = std::max(1, std::atoi(optarg));
			break;
		case 'f':
			opt.fib = std::atoi(optarg);
			break;
		case 'j':
			opt.joins = std::atol(optarg);
			break;
		case 's':
			opt.std_joins = std::atol(optarg);
			break;
		case 'i':
			opt.for_iters = std::atol(optarg);
			break;
		case 'p':
			opt.for_passes = std::atol(optarg);
			break;
		case 'o':
			opt.only = optarg;
			break;
		case 'S':
			opt.fib = 15;
			opt.joins = 2000;
			opt.std_joins = 50;
			opt.for_iters = 10000;
			opt.for_passes = 2;
			break;
		case 'h':
			std::fputs(usage, stdout);
			return 0;
		case 'V':
			return cli_print_version_of("cpp_layer", weft_version());
		default:
			std::fputs(usage, stderr);
			return 2;
		}
	}

	weft::config cfg;
	cfg.model = opt.model;
	cfg.workers = opt.workers;
	weft::runtime rt(cfg);
	if (!rt)
		die(weft_strerror(rt.error()));
	g_rt = rt.native_handle();
	std::printf("cpp_layer: model %s, %d workers, %d reps (medians)\n",
	            weft_model_name(rt.model()), rt.workers(), opt.reps);
#ifdef WEFT_BENCH_HAVE_TBB
	tbb::task_arena arena(opt.workers);
#endif

	std::vector<int> a((size_t)opt.for_iters, 1);
	for (int rep = 0; rep < opt.reps; rep++) {
		long n = opt.joins;
		if (wanted("spawn-join")) {
			record("spawn-join", "c", in_task(rt, [n] { return join_c(n); }));
			record("spawn-join", "cpp-async",
			       in_task(rt, [n] { return join_async(n); }));
			record("spawn-join", "cpp-group",
			       in_task(rt, [n] { return join_group(n); }));
#ifdef WEFT_BENCH_HAVE_TBB
			double tbb_ns = 0;
			arena.execute([&] {
				tbb::task_group root;
				root.run([&] {
					double t0 = bench_now_ns();
					long sum = 0;
					for (long i = 0; i < n; i++) {
						tbb::task_group g;
						g.run([&sum] { sum++; });
						g.wait();
					}
					if (sum != n)
						die("spawn-join tbb-group: wrong sum");
					tbb_ns = (bench_now_ns() - t0) / (double)n;
				});
				root.wait();
			});
			record("spawn-join", "tbb-group", tbb_ns);
#endif
			long sn = opt.std_joins;
			record("spawn-join", "std-async",
			       in_task(rt, [sn] { return join_std(sn); }));
		}
		if (wanted("fib-tree")) {
			record("fib-tree", "c-group", in_task(rt, [] {
				       return time_fib([](int f) {
					       cfib root;
					       root.n = f;
					       fib_group_c(&root);
					       return root.value;
				       });
			       }));
			record("fib-tree", "c-post-wait", in_task(rt, [] {
				       return time_fib([](int f) {
					       cfib root;
					       root.n = f;
					       fib_post_wait(&root);
					       return root.value;
				       });
			       }));
			record("fib-tree", "c-fork-join", in_task(rt, [] {
				       return time_fib([](int f) {
					       cfib root;
					       root.n = f;
					       fib_fork_join(&root);
					       return root.value;
				       });
			       }));
			record("fib-tree", "cpp-invoke",
			       in_task(rt, [] { return time_fib(fib_invoke); }));
			record("fib-tree", "cpp-group",
			       in_task(rt, [] { return time_fib(fib_group); }));
#ifdef WEFT_BENCH_HAVE_TBB
			double tbb_fib = 0;
			arena.execute([&] {
				tbb::task_group root;
				root.run([&] { tbb_fib = time_fib(fib_tbb); });
				root.wait();
			});
			record("fib-tree", "tbb-group", tbb_fib);
#endif
		}
		if (!wanted("parallel-for"))
			continue;
		/* Pass by pass, C and C++ taking turns to go first, so that both
		 * see the same machine: a loop called from outside the workers
		 * leaves them finishing no-op halves after it returned (see
		 * weft/parallel.h), which slows whichever loop comes next. */
		double iters = (double)opt.for_iters * (double)opt.for_passes;
		for_arg fa{a.data()};
		int *pa = a.data();
		double c_ns = 0, cpp_ns = 0;
		for (long p = 0; p < 2 * opt.for_passes; p++) {
			bool c_turn = (p % 2 == 0) == (p / 2 % 2 == 0);
			double t0 = bench_now_ns();
			if (c_turn)
				weft_parallel_for(g_rt, 0, (size_t)opt.for_iters, 0, for_body, &fa);
			else
				weft::parallel_for(0L, opt.for_iters,
				                   [pa](long i) { pa[i] = pa[i] * 3 + 1; });
			(c_turn ? c_ns : cpp_ns) += bench_now_ns() - t0;
		}
		record("parallel-for", "c", c_ns / iters);
		record("parallel-for", "cpp", cpp_ns / iters);
	}

	// Heap allocations per task in steady state (after a warm-up round):
	// groups of 1,000 tasks per wait(), and one group of all 100,000.
	const long m = 100000;
	auto per_run = [&rt, m](long per_wait) {
		return in_task(rt, [m, per_wait] {
			long before = 0;
			for (int round = 0; round < 2; round++) {
				before = g_news.load();
				weft::task_group g;
				for (long i = 0; i < m; i++) {
					g.run([] {});
					if ((i + 1) % per_wait == 0)
						g.wait();
				}
				g.wait();
			}
			return (double)(g_news.load() - before) / (double)m;
		});
	};
	double per_run_1k = per_run(1000), per_run_all = per_run(m);
	double per_async = in_task(rt, [m] {
		for (int round = 0; round < 2; round++) {
			long before = g_news.load();
			for (long i = 0; i < m; i++)
				weft::async([] { return 1; }).get();
			if (round == 1)
				return (double)(g_news.load() - before) / (double)m;
		}
		return -1.0;
	});

	report();
	std::printf("allocs        operator new per task: task_group::run %.4f (1,000 per wait), "
	            "%.4f (100,000 per wait); weft::async+get %.4f\n",
	            per_run_1k, per_run_all, per_async);
	return 0;
}
