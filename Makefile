# Thin wrapper over the CMake presets (CMakePresets.json); CMake does the work.
#
#   make demo     build release, run the demo (weft-demo, then the stock ticker
#                 against tools/quote-server, with weft-sweep)
#   make test     check formatting, then configure, build and ctest the
#                 release, asan and tsan presets (stops at the first failure)
#   make bench    build release, run the benchmarks in BENCHES, then weft
#                 against TBB, OpenMP, Boost.Fiber, GLib, libuv (bench/peers)
#   make format   clang-format every C file in place
#   make clean    remove build/
#
# One preset at a time: make test-release, make test-asan, make build-debug.
# JOBS sets build and ctest parallelism (default 2).

JOBS         ?= 2
TEST_PRESETS ?= release asan tsan
BUILD        ?= build/release
BENCHES      ?= post_throughput fiber_switch fork_join

.PHONY: all demo test bench format check-format clean

all: build-release

demo: build-release
	@if [ -x $(BUILD)/apps/weft-demo ]; then \
		$(BUILD)/apps/weft-demo; \
	else \
		echo "make demo: $(BUILD)/apps/weft-demo was not built (no weft-demo target in apps/)" >&2; \
		exit 1; \
	fi
	@if [ -x $(BUILD)/apps/ticker/weft-ticker ]; then \
		echo; echo "8. The stock ticker against a local quote server (apps/ticker/demo.sh)"; \
		apps/ticker/demo.sh $(BUILD); \
	fi

test: check-format
	@for p in $(TEST_PRESETS); do \
		$(MAKE) --no-print-directory test-$$p || exit 1; \
	done

bench: build-release
	@for b in $(BENCHES); do \
		echo "== $$b"; \
		$(BUILD)/bench/$$b || exit 1; \
	done
	@if [ -x bench/peers/run.sh ] && [ -d $(BUILD)/bench/peers ]; then \
		echo "== peers (bench/peers/run.sh)"; \
		bench/peers/run.sh $(BUILD) || exit 1; \
	fi

format:
	scripts/check-format --fix

check-format:
	scripts/check-format

clean:
	rm -rf build

# build-<preset>: configure and build one preset.
build-%:
	cmake --preset $*
	cmake --build --preset $* -j$(JOBS)

# test-<preset>: configure, build and run the tests of one preset.
test-%: build-%
	ctest --preset $* -j$(JOBS)
