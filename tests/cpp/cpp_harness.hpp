// What the C++ test programs share (test_cpp, test_cpp_prims,
// test_cpp_algo): checks that count failures instead of aborting (the
// programs are built with and without exceptions), a counting weft
// allocator, the model and worker count from the command line, and main:
//
//   <program> <case>|all [<model> <workers>]
//
// Every case runs on a fresh weft::runtime; blocks weft allocated and still
// live after it fail the case, as do the program's own after-checks.
#ifndef WEFT_TESTS_CPP_HARNESS_HPP
#define WEFT_TESTS_CPP_HARNESS_HPP

#include <weft/weft.hpp>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace cpp_harness
{

inline std::atomic<long> failures{0};

inline void fail(const char *file, int line, const char *what)
{
	if (failures.fetch_add(1) < 10)
		std::fprintf(stderr, "%s:%d: check failed: %s\n", file, line, what);
}

#define CHECK(cond)                                                   \
	do {                                                          \
		if (!(cond))                                          \
			cpp_harness::fail(__FILE__, __LINE__, #cond); \
	} while (0)
#define CHECK_EQ(a, b)                                                                          \
	do {                                                                                    \
		auto a_ = (a);                                                                  \
		auto b_ = (b);                                                                  \
		if (!(a_ == b_)) {                                                              \
			std::fprintf(stderr, "  %s = %lld, %s = %lld\n", #a, (long long)a_, #b, \
			             (long long)b_);                                            \
			cpp_harness::fail(__FILE__, __LINE__, #a " == " #b);                    \
		}                                                                               \
	} while (0)

// Blocks weft allocated through the counting allocator and not yet freed.
inline std::atomic<long> weft_live_blocks{0};

inline void *count_alloc(size_t size, void *)
{
	void *p = std::malloc(size);
	if (p)
		weft_live_blocks++;
	return p;
}

inline void count_free(void *p, size_t, void *)
{
	if (p)
		weft_live_blocks--;
	std::free(p);
}

// Sanitizer builds run the same cases on smaller inputs (a TSan run costs
// 5-15x a plain one).
constexpr bool sanitized =
#ifdef WEFT_TEST_UNDER_SANITIZER
        true;
#else
        false;
#endif

inline weft_model model = WEFT_MODEL_THREADS;
inline int nworkers = 2;

inline weft::config test_config()
{
	weft::config c;
	c.model = model;
	c.workers = nworkers;
	return c;
}

inline bool fiber_model()
{
	return model == WEFT_MODEL_FIBERS || model == WEFT_MODEL_MN;
}

struct test_case {
	const char *name;
	void (*fn)(weft::runtime &);
};

// Runs one case on a fresh runtime under the counting allocator, then
// after_checks (the program's own, may be null); true when nothing failed.
inline bool run_case(const test_case &tc, void (*after_checks)())
{
	long before = failures.load();
	weft_allocator a{count_alloc, count_free, nullptr};
	if (weft_set_allocator(&a) != 0) {
		std::fprintf(stderr, "weft_set_allocator failed\n");
		return false;
	}
	{
		weft::runtime rt(test_config());
		if (!rt) {
			std::fprintf(stderr, "runtime: %s\n", weft_strerror(rt.error()));
			return false;
		}
		tc.fn(rt);
	}
	weft_set_allocator(nullptr);
	if (after_checks)
		after_checks();
	CHECK_EQ(weft_live_blocks.load(), 0L);
	bool ok = failures.load() == before;
	std::printf("[ %s ] %s (%s, %d workers)\n", ok ? "    OK" : "FAILED", tc.name,
	            weft_model_name(model), nworkers);
	return ok;
}

// main of a test program over cases[0..n).
inline int main_of(int argc, char **argv, const test_case *cases, size_t n,
                   void (*after_checks)() = nullptr)
{
	if (argc < 2) {
		std::fprintf(stderr, "usage: %s <case>|all [<model> <workers>]\n", argv[0]);
		return 2;
	}
	if (argc >= 4) {
		bool found = false;
		for (int m = 0; m < WEFT_MODEL_COUNT_; m++)
			if (std::strcmp(argv[2], weft_model_name((weft_model)m)) == 0) {
				model = (weft_model)m;
				found = true;
			}
		if (!found) {
			std::fprintf(stderr, "unknown model %s\n", argv[2]);
			return 2;
		}
		nworkers = std::atoi(argv[3]);
	}
	bool all = std::strcmp(argv[1], "all") == 0, any = false, ok = true;
	for (size_t i = 0; i < n; i++)
		if (all || std::strcmp(argv[1], cases[i].name) == 0) {
			any = true;
			ok = run_case(cases[i], after_checks) && ok;
		}
	if (!any) {
		std::fprintf(stderr, "unknown case %s\n", argv[1]);
		return 2;
	}
	return ok ? 0 : 1;
}

} // namespace cpp_harness

#endif
