// pipeline: producers and consumers over a weft::channel<std::string>, a
// weft::mutex taken with std::scoped_lock, a weft::condition_variable
// waited on with a predicate, and this_task::sleep_for. Every wait parks a
// fiber under the fiber models and blocks the thread under the
// kernel-thread ones.
//
//   WEFT_MODEL=fibers ./pipeline
#include <weft/weft.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <string>

int main()
{
	weft::runtime rt;
	if (!rt)
		return 1;
	const int producers = 3, lines = 200;
	weft::channel<std::string> ch(16);

	weft::mutex m;
	weft::condition_variable cv;
	std::map<std::string, int> counts;
	int consumers_done = 0;

	// The last producer to finish closes the channel: the consumers then
	// drain what is left and stop. (A task that waited for the producers
	// and then closed would be wrong under threads: a waiting task's
	// worker may run a consumer meanwhile, which waits for the close.)
	std::atomic<int> producing{producers};
	weft::task_group g;
	for (int p = 0; p < producers; p++)
		g.run([&, p] {
			for (int i = 0; i < lines; i++) {
				ch.send("producer-" + std::to_string(p));
				if (i % 50 == 0)
					weft::this_task::sleep_for(std::chrono::milliseconds(1));
			}
			if (--producing == 0)
				ch.close();
		});

	auto consume = [&] {
		while (std::optional<std::string> line = ch.recv()) {
			std::scoped_lock lk(m);
			counts[*line]++;
		}
		std::scoped_lock lk(m);
		consumers_done++;
		cv.notify_all();
	};
	weft::future<void> helper = weft::async(consume); // a consumer task
	consume();                                        // and the main thread
	{
		std::unique_lock<weft::mutex> lk(m);
		cv.wait(lk, [&] { return consumers_done == 2; });
	}
	g.wait();
	helper.get();
	int total = 0;
	for (auto &kv : counts) {
		std::printf("%s: %d lines\n", kv.first.c_str(), kv.second);
		total += kv.second;
	}
	std::printf("%d lines through the channel (%s, %d worker%s)\n", total,
	            weft_model_name(rt.model()), rt.workers(),
	            rt.workers() == 1 ? "" : "s");
	return total == producers * lines ? 0 : 1;
}
