# Thin wrapper over the CMake presets (CMakePresets.json); CMake does the work.
#
#   make demo     build release, run the demo (weft-demo, then the stock ticker
#                 against tools/quote-server, with weft-sweep)
#   make test     check formatting and the API reference (docs-check), then
#                 configure, build and ctest the release, asan and tsan
#                 presets, and the aarch64 preset (cross-built, its stress,
#                 sync, fork-join, timed, fiber and loop tests run under
#                 qemu-user), and the portable preset (the whole suite on
#                 the POSIX backend: poll, a wait-on-address table, a clock
#                 thread; docs/platforms.md) (stops at the first failure)
#   make docs     the API reference from include/weft/*.h (Doxygen, Doxyfile)
#                 in build/docs/html; fails on any Doxygen warning
#   make install  build release and install it under PREFIX (default
#                 /usr/local; DESTDIR honoured): headers, libraries, weft.pc,
#                 the CMake package, the tools and applications with their
#                 man pages, the guides and, with Doxygen, the HTML reference
#   make package  build release and the Debian packages from the same install
#                 rules (cpack): build/release/packages/*.deb
#   make deps     install the packages weft needs (scripts/install-deps)
#   make bench    build release, run the benchmarks in BENCHES, then weft
#                 against TBB, OpenMP, Boost.Fiber, GLib, libuv (bench/peers),
#                 then echo servers against Go, Tokio and epoll (bench/io)
#   make format   clang-format every C file in place
#   make clean    remove build/
#
# One preset at a time: make test-release, make test-asan, make build-debug.
# JOBS sets build and ctest parallelism (default 2).
#
# Nothing needs installing by hand first: every target that builds runs
# scripts/install-deps when it has not succeeded since that script or the
# package database last changed (a stamp under build/). As root it installs
# what is missing; otherwise it prints the one command to run and make stops.
# A preset configured before packages were installed recovers: when the
# package database changed since make last configured it, the cached "not
# found" results are dropped (install-deps --forget-notfound) first.

JOBS         ?= 2
TEST_PRESETS ?= release asan tsan aarch64 portable
BUILD        ?= build/release
BENCHES      ?= post_throughput fiber_switch fork_join chan_pipeline algo_sort blocking_pool io/file_read

.PHONY: all demo test bench docs docs-check deps format check-format clean install package

all: build-release

# The stamp's name carries the script's checksum, so an edited script runs
# again even when its modification time is older than the stamp.
DEPS_STAMP  := build/.deps-$(shell cksum < scripts/install-deps | cut -d' ' -f1)
DPKG_STATUS := $(wildcard /var/lib/dpkg/status)

deps: $(DEPS_STAMP)

$(DEPS_STAMP): scripts/install-deps $(DPKG_STATUS)
	@scripts/install-deps
	@mkdir -p build && rm -f build/.deps-* && touch $@

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

test: check-format docs-check
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
	@if [ -x bench/io/run.sh ] && [ -x $(BUILD)/bench/io/echo_load ]; then \
		echo "== I/O: echo servers against Go, Tokio and epoll (bench/io/run.sh)"; \
		bench/io/run.sh $(BUILD) || exit 1; \
	fi

format: deps
	scripts/check-format --fix

check-format: deps
	scripts/check-format

# The version shown in the reference comes from include/weft/weft.h.
WEFT_VERSION = $(shell sed -n 's/^\#define WEFT_VERSION_[A-Z]* *\([0-9][0-9]*\)$$/\1/p' include/weft/weft.h | paste -sd.)

docs: deps
	@mkdir -p build/docs
	WEFT_VERSION=$(WEFT_VERSION) WEFT_DOCS_DIR=build/docs doxygen Doxyfile
	@echo "make docs: build/docs/html/index.html"

# docs-check: the reference builds without a Doxygen warning (Doxyfile has
# WARN_AS_ERROR and EXTRACT_ALL=NO, so an undocumented public symbol fails),
# every C and C++ block of the README and docs/ compiles with -Wall -Wextra
# -Werror -pedantic and the blocks the tutorial takes from examples/ equal
# those files (scripts/check-doc-blocks), and the pages point at nothing
# outside the repository: every relative link resolves to a file in it,
# every #anchor to a heading (scripts/check-doc-anchors), and no path
# leads out of it. Then the commands: every ```sh block of the README and
# docs/ runs against the release build, or says why not with a
# `<!-- doc-commands: skip: REASON -->` line (a template, bpftrace), and
# every inline command names a program that exists
# (scripts/check-doc-commands, about a minute).
DOC_PAGES = README.md CHANGELOG.md $(wildcard docs/*.md docs/*/*.md)

docs-check: docs build-release
	@scripts/check-doc-blocks
	@root=$$(pwd -P); bad=0; \
	for f in $(DOC_PAGES); do \
		dir=$$(dirname $$f); \
		for t in $$(sed -e '/^```/,/^```/d' -e 's/`[^`]*`//g' $$f | grep -oE '\]\([^)# ]+' | cut -c3- | grep -vE '^[a-z]+:' | sort -u); do \
			p=$$(realpath -m "$$dir/$$t"); \
			case $$p in "$$root"/*) [ -e "$$p" ] && continue ;; esac; \
			echo "docs-check: $$f: link to $$t: not a file in the repository" >&2; bad=1; \
		done; \
		if grep -nE '(\.\./)+shared/|/work/' $$f >&2; then \
			echo "docs-check: $$f: the lines above point outside the repository" >&2; bad=1; \
		fi; \
	done; \
	[ $$bad -eq 0 ] || exit 1
	@scripts/check-doc-anchors
	@scripts/check-doc-commands
	@echo "docs-check: no Doxygen warning, every C and C++ block compiles, every command runs, no link leaves the repository"

PREFIX ?= /usr/local

install: build-release
	cmake --install build/release --prefix $(PREFIX)

package: build-release
	cd build/release && cpack -B packages
	@ls build/release/packages/*.deb

clean:
	rm -rf build

# build-<preset>: configure and build one preset.
# Before configuring, a preset that has not been configured by make since the
# package database last changed (build/<preset>/.deps-seen is older, or
# missing: a configure run by hand does not count) forgets what CMake did not
# find, so that packages installed since are found.
build-%: deps
	@if [ -n "$(DPKG_STATUS)" ] && [ -f build/$*/CMakeCache.txt ] && \
	    ! [ build/$*/.deps-seen -nt "$(DPKG_STATUS)" ]; then \
		scripts/install-deps --forget-notfound build/$*; \
	fi
	cmake --preset $*
	@if [ -n "$(DPKG_STATUS)" ]; then touch build/$*/.deps-seen; fi
	cmake --build --preset $* -j$(JOBS)

# The aarch64 preset links its tests statically against a cmocka built from
# Debian's source (scripts/cross-cmocka), and runs a subset of the suite
# under qemu-user (CMakePresets.json's aarch64 test preset says which).
build-aarch64: build/cross/aarch64-linux-gnu/lib/libcmocka-static.a

build/cross/aarch64-linux-gnu/lib/libcmocka-static.a: scripts/cross-cmocka | deps
	scripts/cross-cmocka aarch64-linux-gnu

# test-<preset>: configure, build and run the tests of one preset.
test-%: build-%
	ctest --preset $* -j$(JOBS)
