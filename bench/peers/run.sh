#!/usr/bin/env bash
# run.sh: weft against the field. Runs every peer driver built in
# BUILD_DIR/bench/peers and weft's own parallel sort
# (BUILD_DIR/apps/psort/weft-psort), interleaved: repetition 1 of every
# driver, then repetition 2, ..., the starting driver rotating, so a drift of
# the machine lands on all alike. Then prints, per workload and library, the
# median, min and max ns/op over the repetitions, the spread
# ((max - min) / median) and weft/peer: the median of the fastest weft model
# on that workload (marked *) over the peer's (below 1: weft is faster).
#
#   bench/peers/run.sh [BUILD_DIR] [--reps R] [--small] [--sort-n N]
#                      [--fib-n N] [--only W] [--no-runtimes]
#                      [--csv FILE] [--plot FILE.png]
#
#   BUILD_DIR      default build/release
#   --reps R       repetitions (default 5)
#   --small        tiny sizes (the smoke test); the numbers mean nothing
#   --sort-n N     ints to sort (default 50,000,000)
#   --fib-n N      fib-tree's n (default 25; 15 with --small)
#   --only W       one workload only (names below)
#   --no-runtimes  neither build nor run the Go, Rust and Java drivers
#   --csv FILE     also write the table as CSV
#   --plot FILE    also draw weft/peer per workload with gnuplot (PNG)
#
# Which driver measures what (peers.h describes the workloads; each driver's
# opening comment says how it expresses them; every result is checked):
#
#   driver       built by        libraries in the table and workloads
#   peers-weft   CMake           weft-threads, weft-fibers, weft-spawn, weft-mn
#                                (once weft has the mn model): every workload
#                                on each model where it means something;
#                                weft-context: ctx-switch; pthread: mutex
#   weft-psort   CMake (apps/)   weft-threads: psort
#   peers-tbb    CMake, oneTBB   tbb: spawn-wait parallel-for psort mutex
#                                fib-tree spawn-join
#   peers-omp    CMake, libgomp  openmp: the same; gnu-parallel: psort
#   peers-boost  CMake, Boost    boost-fiber: fiber-switch fiber-create mutex
#                                fib-tree spawn-join pingpong (one thread);
#                                boost-context: ctx-switch
#   peers-glib   CMake, GLib     glib: spawn-wait mutex
#   peers-uv     CMake, libuv    libuv: spawn-wait mutex
#   peers-go     build-runtimes  go: spawn-wait fib-tree spawn-join pingpong
#                                mutex (goroutines, GOMAXPROCS = CPUs)
#   peers-rust   build-runtimes  tokio: spawn-wait fib-tree spawn-join
#                                pingpong; rayon: spawn-wait parallel-for
#                                fib-tree spawn-join
#   peers-java   build-runtimes  java-virtual (JDK >= 21 virtual threads):
#                                spawn-wait fib-tree spawn-join pingpong mutex
#
# What is skipped, and when:
#   - a CMake driver whose library is not installed is not built (CMake says
#     which in its configure output); run.sh runs whatever is there;
#   - peers-go, -rust, -java: build-runtimes.sh (called first, unless
#     --no-runtimes) skips each whose toolchain is missing or whose build
#     fails (cargo needs crates.io or a filled cache; Java needs JDK 21+),
#     one line on stderr each;
#   - weft-mn: until weft has a model named "mn" (peers-weft finds models by
#     name and skips a missing one silently);
#   - fib-tree and spawn-join on weft-threads and weft-spawn: while a task
#     waiting for its children deadlocks there (all workers waiting), a
#     probe detects it and the run is skipped with a note; fib-tree's n is
#     at most 16 on those models (peers-weft's FIB_N_BLOCKING);
#   - pingpong: tasks cannot be pinned to workers in Go, tokio or Java (the
#     scheduler usually runs the woken one next on the waker's thread), and
#     weft-fibers and boost-fiber have one thread: only weft-threads and
#     weft-spawn are certain to cross threads on every round trip.
# The drivers' notes on stderr (skips, placements) are collected and printed
# once each under the table.
#
# WEFT_* variables are unset (they would override the configuration the
# drivers set in code). Exit status: 0, 1 when a driver fails, 2 on a usage
# error.
set -euo pipefail

usage() { # status: 0 (--help, on stdout) or 2 (on stderr)
	if [[ ${1:-2} == 0 ]]; then
		sed -n '11,23p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
		exit 0
	fi
	sed -n '11,23p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
	exit 2
}
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/cli.sh"

build=build/release reps=5 small=() sort_n=50000000 fib=() only=() runtimes=1 csv="" plot=""
while (($#)); do
	case "$1" in
	--reps) reps=${2:?}; shift ;;
	--small) small=(--small) sort_n=100000 ;;
	--sort-n) sort_n=${2:?}; shift ;;
	--fib-n) fib=(--fib-n "${2:?}"); shift ;;
	--only) only=(--only "${2:?}"); shift ;;
	--no-runtimes) runtimes=0 ;;
	--csv) csv=${2:?}; shift ;;
	--plot) plot=${2:?}; shift ;;
	-h | --help) usage 0 ;;
	--version) cli_version run.sh "$(dirname "${BASH_SOURCE[0]}")/../.."; exit 0 ;;
	-*) echo "run.sh: unknown option $1" >&2; usage ;;
	*) build=$1 ;;
	esac
	shift
done
[[ $reps =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: --reps needs a positive integer" >&2; exit 2; }
[[ $sort_n =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: --sort-n needs a positive integer" >&2; exit 2; }

for v in $(compgen -e | grep '^WEFT_' || true); do
	unset "$v"
done

dir=$build/bench/peers
((runtimes)) && "$(dirname "${BASH_SOURCE[0]}")/build-runtimes.sh" "$build"
drivers=()
names="weft tbb omp boost glib uv"
((runtimes)) && names+=" go rust java"
for d in $names; do
	[[ -x $dir/peers-$d ]] && drivers+=("$dir/peers-$d")
done
psort=$build/apps/psort/weft-psort
[[ -x $psort ]] && [[ ${#only[@]} -eq 0 || ${only[1]} == psort ]] && drivers+=(weft-psort)
if ((${#drivers[@]} == 0)); then
	echo "run.sh: no drivers in $dir (build the bench/peers targets first)" >&2
	exit 1
fi

raw=$(mktemp)
trap 'rm -f "$raw" "$raw".*' EXIT
: >"$raw.notes"

# weft-psort prints "sort: <ms> ms (...)"; turn it into the drivers' CSV line.
run_psort() {
	local r=$1 out ms
	out=$("$psort" --no-compare --seed 1 "$sort_n") || return 1
	ms=$(sed -n 's/^sort: \([0-9.]*\) ms.*/\1/p' <<<"$out")
	[[ -n $ms ]] || return 1
	awk -v r="$r" -v n="$sort_n" -v ms="$ms" \
		'BEGIN { printf "psort,weft-threads,%d,%d,%.3f\n", r, n, ms * 1e6 / n }'
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
start_s=$SECONDS
progress=0
[[ -t 2 ]] && progress=1
nd=${#drivers[@]}
for ((r = 1; r <= reps; r++)); do
	for ((k = 0; k < nd; k++)); do
		d=${drivers[$(((k + r - 1) % nd))]}
		if [[ $d == weft-psort ]]; then
			run_psort "$r" >>"$raw" 2>"$raw.err" || {
				cat "$raw.err" >&2
				echo "run.sh: $psort failed" >&2
				exit 1
			}
		else
			"$d" --rep "$r" --sort-n "$sort_n" "${small[@]}" "${fib[@]}" "${only[@]}" \
				>>"$raw" 2>"$raw.err" || {
				cat "$raw.err" >&2
				echo "run.sh: $d failed" >&2
				exit 1
			}
		fi
		cat "$raw.err" >>"$raw.notes"
	done
	((progress)) && echo "run.sh: repetition $r/$reps done" >&2
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
elapsed_s=$((SECONDS - start_s))

# Machine description.
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
echo "weft against the field: ns per operation, median of $reps interleaved repetitions"
echo "machine: $(nproc) CPUs available ($(getconf _NPROCESSORS_ONLN) online), ${cpu:-unknown CPU}, Linux $(uname -r)"
echo "compilers: $(${CC:-cc} --version 2>/dev/null | head -1); $(${CXX:-c++} --version 2>/dev/null | head -1)"
if command -v dpkg-query >/dev/null 2>&1; then
	vers=$(dpkg-query -W -f='${Package} ${Version}\n' libtbb-dev libboost-fiber-dev \
		libglib2.0-dev libuv1-dev 2>/dev/null | awk '{ printf "%s%s %s", sep, $1, $2; sep = ", " }')
	echo "libraries: $vers"
fi
# build-runtimes.sh leaves each runtime's version beside its driver.
if ((runtimes)); then
	runtimes_line=$(for d in go rust java; do
		[[ -x $dir/peers-$d && -f $dir/peers-$d.version ]] && cat "$dir/peers-$d.version"
	done | paste -sd';' - | sed 's/;/, /g')
	[[ -n $runtimes_line ]] && echo "runtimes: $runtimes_line"
fi
echo "load average (1, 5, 15 min): $load_before before, $load_after after; ${elapsed_s} s"
echo "drivers: ${drivers[*]##*/}"
echo

# Aggregate: sort each (workload, library) group's values, then take the
# median, min and max in one pass. weft's rows come first, in model order.
order='spawn-wait parallel-for fib-tree spawn-join pingpong fiber-switch fiber-create ctx-switch psort mutex-t2 mutex-t8'
libs='weft-threads weft-mn weft-fibers weft-spawn weft-context'
awk -F, -v order="$order" -v libs="$libs" '
	BEGIN { n = split(order, w, " "); for (i = 1; i <= n; i++) rank[w[i]] = i
	        n = split(libs, l, " "); for (i = 1; i <= n; i++) lrank[l[i]] = i }
	{ lib = sprintf("%02d%s", ($2 in lrank ? lrank[$2] : 99), $2)
	  printf "%02d,%s,%s,%s,%s\n", ($1 in rank ? rank[$1] : 99), $1, lib, $4, $5 }' "$raw" |
	sort -t, -k1,1 -k3,3 -k5,5g >"$raw.sorted"
awk -F, '
	function flush() {
		if (cnt == 0) return
		med = cnt % 2 ? v[(cnt + 1) / 2] : (v[cnt / 2] + v[cnt / 2 + 1]) / 2
		print key "," n "," cnt "," med "," v[1] "," v[cnt]
	}
	{ k = $2 "," substr($3, 3)
	  if (k != key) { flush(); key = k; cnt = 0 }
	  v[++cnt] = $5; n = $4 }
	END { flush() }' "$raw.sorted" >"$raw.agg"
# weft/peer: the fastest weft-* row of the workload (ctx-switch: weft-context)
# over each peer; that weft row is marked "*", the other weft rows get "-".
awk -F, '
	NR == FNR { if ($2 ~ /^weft-/ && (!($1 in best) || $5 < best[$1])) { best[$1] = $5; who[$1] = $2 }
	            next }
	{ ratio = $2 ~ /^weft-/ ? ($2 == who[$1] ? "*" : "-") : \
	          (($1 in best) && $5 > 0 ? sprintf("%.3f", best[$1] / $5) : "")
	  print $0 "," ratio }' "$raw.agg" "$raw.agg" >"$raw.table"

printf '%-13s %-14s %10s %14s %12s %12s %8s %10s\n' workload library n "median ns/op" "min" "max" \
	spread weft/peer
awk -F, '{ printf "%-13s %-14s %10s %14.3f %12.3f %12.3f %7.1f%% %10s\n",
	$1, $2, $3, $5, $6, $7, ($5 > 0 ? 100 * ($7 - $6) / $5 : 0), ($8 == "" ? "-" : $8) }' "$raw.table"
echo
echo "weft-<model>: that weft model (threads: a shared FIFO queue, one worker per CPU; fibers:"
echo "one thread; mn: fibers over work-stealing workers; spawn: a thread per task, the naive"
echo "baseline); weft-context: the raw switch. weft/peer: the fastest weft model's median"
echo "(marked *) over the peer's; below 1, weft is faster. n: operations per repetition."
if [[ -s $raw.notes ]]; then
	echo
	echo "notes from the drivers (each once):"
	sort -u "$raw.notes" | sed 's/^/  /'
fi

if [[ -n $csv ]]; then
	{
		echo "workload,library,n,reps,median_ns,min_ns,max_ns,weft_over_peer"
		cat "$raw.table"
	} >"$csv"
	echo "run.sh: wrote $csv" >&2
fi

if [[ -n $plot ]]; then
	if ! command -v gnuplot >/dev/null 2>&1; then
		echo "run.sh: gnuplot not found; no plot (scripts/install-deps)" >&2
	else
		awk -F, '$8 ~ /^[0-9]/ { printf "\"%s vs %s\" %s\n", $1, $2, $8 }' "$raw.table" >"$raw.plot"
		gnuplot <<-EOF
			set terminal pngcairo size 1800,650 font ",10"
			set output "$plot"
			set title "weft against the field: fastest weft model's median / peer median (below 1: weft faster; log scale)\n$(nproc) CPUs, ${cpu//\"/}, load $load_before"
			set logscale y
			set ylabel "weft / peer"
			set style fill solid 0.6 border -1
			set boxwidth 0.7
			set xtics rotate by -45 font ",9" nomirror
			set bmargin 10
			set rmargin 6
			set grid ytics
			set key off
			plot "$raw.plot" using 0:2:xtic(1) with boxes lc rgb "#3a6ea5", \
			     "" using 0:2:(sprintf("%.2f", \$2)) with labels offset 0,0.7 font ",8", \
			     1 with lines lc rgb "#aa0000" lw 2
		EOF
		echo "run.sh: wrote $plot" >&2
	fi
fi
