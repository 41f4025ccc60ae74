#!/usr/bin/env bash
# cache.sh: what an echo costs each server in instructions and cache misses,
# counted by cachegrind with this machine's first-level data cache and L2
# (its "last level" set to the L2's size and ways), user space only. The
# counts are the same on a busy host, which the throughput of run.sh is
# not: this is how a change to the park and wake path is measured here.
# A server parked among N connections resumes each on lines that went cold
# while the others ran: the L2 misses an echo grow with the lines a
# connection touches (its fiber's record and stack, its task, its fd's
# slot), and with how those lines share the cache's sets.
#
#   bench/io/cache.sh [BUILD_DIR] [--conns LIST] [--seconds S] [--only LIST]
#
#   BUILD_DIR      default build/release (bench/io: echo_load, echo_weft,
#                  echo_epoll; echo-tokio when run.sh has built it)
#   --conns LIST   connections, commas (default 100,1000)
#   --seconds S    the load's window under cachegrind (default 3)
#   --only LIST    servers whose label starts with one of these, commas
#                  (fibers, mn, tokio, epoll)
#
# Prints a markdown table: per echo, instructions, L1 read and write
# misses, L2 (simulated) read and write misses. A server runs some 50
# times slower under cachegrind; the load is closed-loop, so each echo
# is counted whole. Exit status: 0; 1 when a server or the load failed
# ("cache.sh: error: ..."); 2 on a usage error.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../../scripts/cli.sh"
cli_help_version cache.sh "$here/../.." "$0" "$@"

die() {
	echo "cache.sh: error: $*" >&2
	exit 1
}

build=build/release
conns=100,1000
seconds=3
only=""
while [ $# -gt 0 ]; do
	case "$1" in
	--conns) conns=${2:?}; shift 2 ;;
	--seconds) seconds=${2:?}; shift 2 ;;
	--only) only=${2:?}; shift 2 ;;
	-*) echo "cache.sh: unknown option $1 (--help)" >&2; exit 2 ;;
	*) build=$1; shift ;;
	esac
done

command -v valgrind > /dev/null || die "valgrind is not installed (scripts/install-deps)"
bin=$build/bench/io
[ -x "$bin/echo_load" ] && [ -x "$bin/echo_weft" ] || die "no $bin/echo_load or echo_weft: build first"

# This machine's geometry, as getconf tells it; cachegrind's defaults when
# it says nothing (a VM may hide it).
geom() { # getconf's name of the cache: LEVEL1_DCACHE, LEVEL2_CACHE
	local size assoc
	size=$(getconf "${1}_SIZE" 2> /dev/null || true)
	assoc=$(getconf "${1}_ASSOC" 2> /dev/null || true)
	[ -n "$size" ] && [ "$size" -gt 0 ] && [ -n "$assoc" ] && [ "$assoc" -gt 0 ] &&
		echo "$size,$assoc,64"
}
d1=$(geom LEVEL1_DCACHE || true)
ll=$(geom LEVEL2_CACHE || true)
opts=(--tool=cachegrind --cache-sim=yes)
[ -n "$d1" ] && opts+=("--D1=$d1")
[ -n "$ll" ] && opts+=("--LL=$ll")

servers=()
add() { # label command...
	local label=$1
	if [ -n "$only" ]; then
		local keep=0 o
		IFS=, read -ra wanted <<< "$only"
		for o in "${wanted[@]}"; do [[ $label == "$o"* ]] && keep=1; done
		[ $keep = 1 ] || return 0
	fi
	servers+=("$label")
}
add fibers
add "mn w1"
[ -x "$bin/echo-tokio" ] && add tokio
add epoll

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Ports below the ephemeral range (32768 and up here); a port another
# process holds makes the server exit at once: the next one, five times.
port=$((20000 + RANDOM % 10000))
out=$tmp/cg.out

start() { # label: starts it under cachegrind on $port, sets pid
	case "$1" in
	fibers) env WEFT_MODEL=fibers WEFT_WORKERS=1 valgrind "${opts[@]}" \
		--cachegrind-out-file="$out" "$bin/echo_weft" --port $port > "$tmp/log" 2>&1 & ;;
	"mn w1") env WEFT_MODEL=mn WEFT_WORKERS=1 valgrind "${opts[@]}" \
		--cachegrind-out-file="$out" "$bin/echo_weft" --port $port > "$tmp/log" 2>&1 & ;;
	tokio) valgrind "${opts[@]}" --cachegrind-out-file="$out" "$bin/echo-tokio" \
		--port $port --flavor current_thread > "$tmp/log" 2>&1 & ;;
	epoll) valgrind "${opts[@]}" --cachegrind-out-file="$out" "$bin/echo_epoll" \
		--port $port > "$tmp/log" 2>&1 & ;;
	esac
	pid=$!
}

# Starts server $1 and waits until it answers: 0, or 1 when it exited.
start_answering() {
	for _ in 1 2 3 4 5; do
		port=$((port + 1))
		start "$1"
		for _ in $(seq 300); do
			if "$bin/echo_load" --port $port --connections 1 --seconds 0.01 --warmup 0 \
				> /dev/null 2>&1; then
				return 0
			fi
			kill -0 $pid 2> /dev/null || break
			sleep 0.1
		done
		kill $pid 2> /dev/null || true
		wait $pid 2> /dev/null || true
	done
	return 1
}

echo "cachegrind: D1 ${d1:-default}, L2 as last level ${ll:-default} (size,ways,line)"
echo
echo "| server | connections | echoes | instructions | L1 read | L1 write | L2 read | L2 write |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
IFS=, read -ra conn_list <<< "$conns"
for c in "${conn_list[@]}"; do
	for s in "${servers[@]}"; do
		start_answering "$s" ||
			die "$s did not start (last port $port): $(grep -v '^[=-][=-]' "$tmp/log" | tail -3)"
		total=$("$bin/echo_load" --port $port --connections "$c" --seconds "$seconds" \
			--warmup 0.5 | grep -o 'total=[0-9]*' | cut -d= -f2)
		kill -INT $pid 2> /dev/null || true
		sleep 1
		kill $pid 2> /dev/null || true
		wait $pid 2> /dev/null || true
		[ -s "$out" ] && [ -n "$total" ] && [ "$total" -gt 0 ] || die "$s: no counts"
		# The totals line of the cachegrind file: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw
		read -r ir d1r dlr d1w dlw < <(awk '/^summary:/ {print $2, $6, $7, $9, $10}' "$out")
		awk -v s="$s" -v c="$c" -v t="$total" -v ir="$ir" -v a="$d1r" -v b="$d1w" \
			-v x="$dlr" -v y="$dlw" 'BEGIN {
			printf "| %s | %d | %d | %.0f | %.1f | %.1f | %.2f | %.2f |\n",
				s, c, t, ir / t, a / t, b / t, x / t, y / t }'
	done
done
