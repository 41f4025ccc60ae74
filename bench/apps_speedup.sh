#!/usr/bin/env bash
# apps_speedup.sh: measures the speedup bars of the three CPU applications
# (docs/seeds/apps-cpu.md) on one model (--model, default threads), 1 worker
# against 2, and with --compare M2 that model against M2 at 2 workers in the
# same run (the mn bar: within 5% of threads).
#
#   bench/apps_speedup.sh [--reps N] [--quick] [--only sudoku|psort|matmul]
#                         [--model M] [--compare M2] [BUILD_DIR]
#
#   sudoku   validate a file of 1,000,000 generated grids (1% invalid)   bar 1.7x
#   psort    sort 50,000,000 ints                                        bar 1.8x
#   matmul   multiply two 3000 x 3000 matrices                           bar 1.8x
#
# Each configuration runs N times (default 5), 1 and 2 workers interleaved
# (1, 2, 1, 2, ...) so that drift from other load hits both alike. The time
# is the one the program reports for its parallel phase (sudoku: map, parse
# and check; psort: sort and merge; matmul: pack and multiply); the wall
# time of the whole process is shown beside it. Prints every run, then per
# app the median, min and max of each worker count and the ratio of the
# medians; the CPU time of each process (user + system) shows how much of
# the two CPUs it actually got on a shared machine. --quick uses small
# sizes (a smoke test, not the bars), --only APP one program, --reps N
# another count. BUILD_DIR defaults to build/release.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$root/scripts/cli.sh"
reps=5 quick=0 only="" build="" model=threads compare=""
while [[ $# -gt 0 ]]; do
	case $1 in
	--reps) reps=$2; shift 2 ;;
	--quick) quick=1; shift ;;
	--only) only=$2; shift 2 ;;
	--model) model=$2; shift 2 ;;
	--compare) compare=$2; shift 2 ;;
	-h | --help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	--version) cli_version apps_speedup.sh "$root"; exit 0 ;;
	-*) echo "apps_speedup.sh: unknown option '$1'" >&2; exit 2 ;;
	*) build=$1; shift ;;
	esac
done
build=${build:-$root/build/release}
apps=$build/apps
for exe in sudoku/weft-sudoku psort/weft-psort matmul/weft-matmul; do
	[[ -x $apps/$exe ]] || { echo "apps_speedup.sh: $apps/$exe not built" >&2; exit 1; }
done
if [[ $quick == 1 ]]; then
	grids=50000 ints=2000000 n=600
else
	grids=1000000 ints=50000000 n=3000
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/apps_speedup.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# run <model> <workers> <regex for the time> <command...>: prints
# "phase wall cpu" in ms (cpu: user + system time of the process; on a
# quiet machine about wall x workers, lower when other load takes the CPUs).
run() {
	local m=$1 w=$2 re=$3
	shift 3
	local st=0 TIMEFORMAT='%R %U %S'
	{ time WEFT_MODEL=$m WEFT_WORKERS=$w "$@" >"$tmp/out" 2>&1 || st=$?; } 2>"$tmp/time"
	if [[ $st != 0 && $st != 1 ]]; then
		echo "apps_speedup.sh: failed (status $st): $*" >&2
		cat "$tmp/out" >&2
		exit 1
	fi
	local phase
	phase=$(sed -n "s/$re/\\1/p" "$tmp/out" | head -1)
	[[ -n $phase ]] || { echo "apps_speedup.sh: no time in the output of $*:" >&2; cat "$tmp/out" >&2; exit 1; }
	awk -v p="$phase" '{ printf "%s %.0f %.0f\n", p, $1 * 1000, ($2 + $3) * 1000 }' "$tmp/time"
}

median() { sort -g | awk '{v[NR]=$1} END {m = NR % 2 ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2; printf "%.1f %.1f %.1f", m, v[1], v[NR]}'; }

bench() {
	local name=$1 bar=$2 re=$3
	shift 3
	[[ -z $only || $only == "$name" ]] || return 0
	echo "== $name: $* (bar ${bar}x)"
	: >"$tmp/$name.1"
	: >"$tmp/$name.2"
	: >"$tmp/$name.cpus1"
	: >"$tmp/$name.cpus2"
	: >"$tmp/$name.c"
	: >"$tmp/$name.cpusc"
	local runs="1 2"
	[[ -n $compare ]] && runs="1 2 c"
	for ((i = 1; i <= reps; i++)); do
		for k in $runs; do
			local r p wall cpu m=$model w=$k
			[[ $k == c ]] && m=$compare w=2
			r=$(run "$m" "$w" "$re" "$@")
			read -r p wall cpu <<<"$r"
			echo "$p" >>"$tmp/$name.$k"
			awk -v c="$cpu" -v w="$wall" 'BEGIN { printf "%.2f\n", (w > 0 ? c / w : 0) }' >>"$tmp/$name.cpus$k"
			printf '  run %d, %s, %d worker(s): %8s ms (wall %s ms, cpu %s ms)\n' "$i" "$m" "$w" "$p" "$wall" "$cpu"
		done
	done
	local m1 m2
	m1=$(median <"$tmp/$name.1")
	m2=$(median <"$tmp/$name.2")
	local u1 u2
	u1=$(median <"$tmp/$name.cpus1")
	u2=$(median <"$tmp/$name.cpus2")
	awk -v name="$name" -v bar="$bar" -v a="$m1" -v b="$m2" -v u1="$u1" -v u2="$u2" 'BEGIN {
		split(a, x, " "); split(b, y, " ");
		r = x[1] / y[1];
		printf "  %s: 1 worker median %.1f ms (min %.1f, max %.1f); 2 workers median %.1f ms (min %.1f, max %.1f)\n", name, x[1], x[2], x[3], y[1], y[2], y[3];
		printf "  %s: speedup %.2fx (bar %.1fx: %s); min/min %.2fx\n", name, r, bar, (r >= bar ? "met" : "MISSED"), x[2] / y[2];
		split(u1, p, " "); split(u2, q, " ");
		printf "  %s: CPUs used (cpu/wall), median: %.2f with 1 worker, %.2f with 2 (max %.2f)\n", name, p[1], q[1], q[3];
	}' | tee -a "$tmp/summary"
	[[ -n $compare ]] || return 0
	local mc
	mc=$(median <"$tmp/$name.c")
	awk -v name="$name" -v a="$m2" -v c="$mc" -v m="$model" -v o="$compare" 'BEGIN {
		split(a, x, " "); split(c, y, " ");
		d = 100 * (x[1] - y[1]) / y[1];
		printf "  %s: %s against %s at 2 workers: %+.1f%% (%.1f against %.1f ms; bar within 5%%: %s)\n", name, m, o, d, x[1], y[1], (d <= 5 ? "met" : "MISSED");
	}' | tee -a "$tmp/summary"
}

if [[ -z $only || $only == sudoku ]]; then
	echo "generating $grids grids..."
	"$apps/sudoku/weft-sudoku" --generate "$grids" --seed 1 --invalid-rate 0.01 >"$tmp/grids.txt"
	cat "$tmp/grids.txt" >/dev/null # into the page cache
fi
bench sudoku 1.7 '^checked in \([0-9.]*\) ms.*' "$apps/sudoku/weft-sudoku" --quiet "$tmp/grids.txt"
bench psort 1.8 '^sort: \([0-9.]*\) ms.*' "$apps/psort/weft-psort" --no-compare "$ints"
bench matmul 1.8 '^multiply: \([0-9.]*\) ms.*' "$apps/matmul/weft-matmul" "$n"
echo "== summary (median of $reps interleaved runs, WEFT_MODEL=$model${compare:+ against $compare}, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg))"
cat "$tmp/summary"
