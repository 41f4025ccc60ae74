#!/bin/sh
# demo.sh: weft-ticker against tools/quote-server, for `make demo`.
#
#   apps/ticker/demo.sh [BUILD_DIR]        (default build/release)
#
# Starts the quote server on a free loopback port (100 ms per answer, a few
# faulty symbols), prints the seed's table for the seed's 17 symbols under
# fibers, times 200 symbols on one fiber worker and on mn's two against 8
# and 32 threads, sweeps 40 symbols over worker counts for threads, fibers
# and mn, shows one row per kind of failure, and stops the server. About
# 15 s (the threads sweep is most of it).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
. "$root/scripts/cli.sh"
cli_help_version demo.sh "$root" "$0" "$@"
build=${1:-$root/build/release}
ticker=$build/apps/ticker/weft-ticker
if [ ! -x "$ticker" ]; then
	echo "demo.sh: $ticker not built (cmake --build $build)" >&2
	exit 1
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ticker-demo.XXXXXX")
: >"$tmp/server.out"
python3 "$root/tools/quote-server" --latency-ms 100 --error-symbols ERR1 \
	--stall-symbols STALL --garbage-symbols GTEXT:text,GTRUNC:truncated,GSHAPE:shape,GTYPES:types,GHUGE:huge,GDEEP:deep \
	>"$tmp/server.out" 2>"$tmp/server.err" &
srv=$!
trap 'kill $srv 2>/dev/null; wait $srv 2>/dev/null || true; rm -rf "$tmp"' EXIT
i=0
until grep -q '^listening on ' "$tmp/server.out"; do
	i=$((i + 1))
	if [ $i -gt 100 ] || ! kill -0 $srv 2>/dev/null; then
		echo "demo.sh: the quote server did not start" >&2
		cat "$tmp/server.err" >&2
		exit 1
	fi
	sleep 0.1
done
url=$(sed -n 's/^listening on //p' "$tmp/server.out")
echo "== quote server: $url (100 ms per answer)"

echo "== the seed's 17 symbols, WEFT_MODEL=fibers WEFT_WORKERS=1"
WEFT_MODEL=fibers WEFT_WORKERS=1 "$ticker" --url "$url" "$root/apps/ticker/tests/seed.txt"

i=0
while [ $i -lt 200 ]; do
	printf 'T%04d\n' $i
	i=$((i + 1))
done >"$tmp/t200.txt"
echo "== 200 symbols, 100 ms each: the same binary under four configurations"
for cfg in "fibers 1" "mn 2" "threads 8" "threads 32"; do
	set -- $cfg
	WEFT_MODEL=$1 WEFT_WORKERS=$2 "$ticker" --url "$url" "$tmp/t200.txt" >/dev/null
done

# The seed's Figure 4.2 (run time against thread count), redone with
# tools/weft-sweep: 40 symbols, threads with 1 to 16 workers against fibers
# and mn (whose requests park, so they are flat from 1 worker on);
# the plot and the CSV stay in the build directory.
i=0
while [ $i -lt 40 ]; do
	printf 'T%04d\n' $i
	i=$((i + 1))
done >"$tmp/t40.txt"
echo "== weft-sweep: 40 symbols, 100 ms each, threads 1..16 workers against fibers and mn"
python3 "$root/tools/weft-sweep" --workers 1,2,4,8,16 --model threads,fibers,mn --repeat 1 \
	--quiet --plot "$build/ticker-sweep.png" --csv "$build/ticker-sweep.csv" -- "$ticker" --url "$url" "$tmp/t40.txt" || true

echo "== one row per kind of failure (--timeout 1; exit status 1 expected)"
status=0
WEFT_MODEL=fibers "$ticker" --timeout 1 --url "$url" "$root/apps/ticker/tests/faults.txt" || status=$?
echo "exit status $status"
