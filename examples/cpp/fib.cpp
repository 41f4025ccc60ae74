// fib: recursive fork-join with weft::parallel_invoke, the cheapest path
// weft has (weft_fork_join: nothing allocated, a half no other worker took
// runs as a plain call). No cutoff is needed to be fast.
//
//   WEFT_MODEL=mn ./fib 32
#include <weft/weft.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>

static long fib(int n)
{
	if (n < 2)
		return n;
	long a = 0, b = 0;
	weft::parallel_invoke([&] { a = fib(n - 1); }, [&] { b = fib(n - 2); });
	return a + b;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? std::atoi(argv[1]) : 27;
	weft::runtime rt;
	if (!rt)
		return 1;
	auto t0 = std::chrono::steady_clock::now();
	// From a task, so that the program runs on WEFT_WORKERS threads.
	long v = weft::async([n] { return fib(n); }).get();
	std::chrono::duration<double, std::milli> ms = std::chrono::steady_clock::now() - t0;
	std::printf("fib(%d) = %ld in %.1f ms (%s, %d worker%s)\n", n, v, ms.count(),
	            weft_model_name(rt.model()), rt.workers(),
	            rt.workers() == 1 ? "" : "s");
	return 0;
}
