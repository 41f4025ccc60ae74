// hello: the C++ layer in one page. Tasks with capturing lambdas in a
// task_group, futures that carry values and exceptions, a continuation,
// when_all, and a loop. Run it under any model:
//
//   WEFT_MODEL=mn WEFT_WORKERS=4 ./hello
#include <weft/weft.hpp>

#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

int main()
{
	weft::runtime rt; // model and workers from WEFT_MODEL, WEFT_WORKERS
	if (!rt) {
		std::fprintf(stderr, "weft: %s\n", weft_strerror(rt.error()));
		return 1;
	}

	// A task group: any callable, captures included; wait() for them all.
	std::vector<std::string> words = {"write", "once", "run", "on", "any", "model"};
	std::vector<std::size_t> lengths(words.size());
	weft::task_group g;
	for (std::size_t i = 0; i < words.size(); i++)
		g.run([&, i] { lengths[i] = words[i].size(); });
	g.wait();

	// A future carries the task's value, or its exception.
	weft::future<int> answer = weft::async([](int a, int b) { return a * b; }, 6, 7);
	weft::future<std::string> shout = weft::async([] {
		                                  return std::string("hello");
	                                  }).then([](std::string s) { return s + ", weft"; });
	weft::future<int> bad = weft::async([]() -> int { throw std::runtime_error("no value"); });

	// when_all: one future, ready when every one of them is.
	std::vector<weft::future<long>> squares;
	for (long i = 1; i <= 10; i++)
		squares.push_back(weft::async([i] { return i * i; }));
	long sum = 0;
	for (weft::future<long> &f : weft::when_all(std::move(squares)).get())
		sum += f.get();

	// A parallel loop over a vector, and a reduction.
	std::vector<double> xs(100000, 0.5);
	weft::parallel_for(xs.begin(), xs.end(), [](double &x) { x *= 2; });
	double total = weft::parallel_reduce(xs.begin(), xs.end(), 0.0, std::plus<>(),
	                                     [](double x) { return x; });

	std::printf("%s on %s with %d workers\n", shout.get().c_str(), weft_model_name(rt.model()),
	            rt.workers());
	std::printf("answer %d, sum of squares %ld, total %.0f, \"%s\" has %zu letters\n",
	            answer.get(), sum, total, words[5].c_str(), lengths[5]);
	try {
		bad.get();
	} catch (const std::exception &e) {
		std::printf("the failing task said: %s\n", e.what());
	}
	return 0;
}
