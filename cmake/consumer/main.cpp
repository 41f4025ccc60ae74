// The C++ consumer of an installed weft: weft/weft.hpp through
// weft::weft_cpp (and through weft::weft or pkg-config with -std=c++17).
#include <weft/weft.hpp>

#include <cstdio>
#include <string>

int main()
{
	weft::runtime rt;
	if (!rt) {
		std::fprintf(stderr, "weft: %s\n", weft_strerror(rt.error()));
		return 1;
	}
	weft::task_group g;
	int parts[2] = {0, 0};
	g.run([&parts] { parts[0] = 20; });
	g.run([&parts] { parts[1] = 22; });
	g.wait();
	weft::future<std::string> f =
	        weft::async([&parts] { return std::to_string(parts[0] + parts[1]); });
	std::string v = f.get();
	std::printf("weft %s from C++: %s\n", weft_version(), v.c_str());
	return v == "42" ? 0 : 1;
}
