#!/usr/bin/env bash
# models_speedup.sh: the three CPU applications (weft-sudoku, weft-psort,
# weft-matmul) on several model/worker configurations in the same run, so
# that the mn model can be compared with itself at 1 worker and with
# threads at the same worker count (docs/apps-cpu.md, "mn").
#
#   apps/models_speedup.sh [--reps N] [--quick] [--only sudoku|psort|matmul]
#                          [--configs "mn:1 mn:2 threads:2"] [BUILD_DIR]
#
# Sizes and the time read are those of bench/apps_speedup.sh (sudoku:
# 1,000,000 grids, map + parse + check; psort: 50,000,000 ints, sort +
# merge; matmul: n = 3000, pack + multiply). Each repetition runs every
# configuration once, in the order given (interleaved, so drift from other
# load hits all alike). Prints every run with its wall and CPU time, then
# per app the median, min and max of each configuration and, against the
# first configuration, the ratio of the medians (its time / this one's:
# above 1 is faster) and the median CPUs the process used (CPU time / wall
# time: about the worker count on a quiet machine, lower when other load
# took the CPUs); and mn at W workers against threads at W workers when
# both were run. BUILD_DIR defaults to build/release.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
reps=3 quick=0 only="" build="" configs="mn:1 mn:2 threads:2"
while [[ $# -gt 0 ]]; do
	case $1 in
	--reps) reps=$2; shift 2 ;;
	--quick) quick=1; shift ;;
	--only) only=$2; shift 2 ;;
	--configs) configs=$2; shift 2 ;;
	-h | --help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "models_speedup.sh: unknown option '$1'" >&2; exit 2 ;;
	*) build=$1; shift ;;
	esac
done
build=${build:-$root/build/release}
apps=$build/apps
for exe in sudoku/weft-sudoku psort/weft-psort matmul/weft-matmul; do
	[[ -x $apps/$exe ]] || { echo "models_speedup.sh: $apps/$exe not built" >&2; exit 1; }
done
for c in $configs; do
	[[ $c =~ ^[a-z]+:[0-9]+$ ]] || { echo "models_speedup.sh: bad config '$c' (want MODEL:WORKERS)" >&2; exit 2; }
done
if [[ $quick == 1 ]]; then
	grids=50000 ints=2000000 n=600
else
	grids=1000000 ints=50000000 n=3000
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/models_speedup.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# run <model> <workers> <regex for the time> <command...>: prints
# "phase wall cpu" in ms.
run() {
	local model=$1 w=$2 re=$3
	shift 3
	local st=0 TIMEFORMAT='%R %U %S'
	{ time WEFT_MODEL=$model WEFT_WORKERS=$w "$@" >"$tmp/out" 2>&1 || st=$?; } 2>"$tmp/time"
	if [[ $st != 0 && $st != 1 ]]; then
		echo "models_speedup.sh: failed (status $st): WEFT_MODEL=$model WEFT_WORKERS=$w $*" >&2
		cat "$tmp/out" >&2
		exit 1
	fi
	local phase
	phase=$(sed -n "s/$re/\\1/p" "$tmp/out" | head -1)
	[[ -n $phase ]] || { echo "models_speedup.sh: no time in the output of $*:" >&2; cat "$tmp/out" >&2; exit 1; }
	awk -v p="$phase" '{ printf "%s %.0f %.0f\n", p, $1 * 1000, ($2 + $3) * 1000 }' "$tmp/time"
}

median() { sort -g | awk '{v[NR]=$1} END {m = NR % 2 ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2; printf "%.1f %.1f %.1f", m, v[1], v[NR]}'; }

bench() {
	local name=$1 re=$2
	shift 2
	[[ -z $only || $only == "$name" ]] || return 0
	echo "== $name: $*"
	local c
	for c in $configs; do : >"$tmp/$name.$c"; : >"$tmp/$name.$c.cpus"; done
	for ((i = 1; i <= reps; i++)); do
		for c in $configs; do
			local r p wall cpu
			r=$(run "${c%%:*}" "${c##*:}" "$re" "$@")
			read -r p wall cpu <<<"$r"
			echo "$p" >>"$tmp/$name.$c"
			awk -v c="$cpu" -v w="$wall" 'BEGIN { printf "%.2f\n", (w > 0 ? c / w : 0) }' >>"$tmp/$name.$c.cpus"
			printf '  run %d, %-10s %9s ms (wall %s ms, cpu %s ms)\n' "$i" "$c" "$p" "$wall" "$cpu"
		done
	done
	local first="" m0=""
	for c in $configs; do
		local m u
		m=$(median <"$tmp/$name.$c")
		u=$(median <"$tmp/$name.$c.cpus")
		echo "$c $m" >>"$tmp/$name.medians"
		if [[ -z $first ]]; then
			first=$c m0=${m%% *}
		fi
		awk -v name="$name" -v c="$c" -v m="$m" -v m0="$m0" -v first="$first" -v u="$u" 'BEGIN {
			split(m, x, " "); split(u, y, " ");
			printf "  %s %-10s median %9.1f ms (min %.1f, max %.1f)  %s/this %.2fx  CPUs used %.2f\n", name, c, x[1], x[2], x[3], first, m0 / x[1], y[1];
		}' | tee -a "$tmp/summary"
	done
	# mn at W against threads at W.
	local line model w mm
	while read -r line; do
		set -- $line
		model=${1%%:*} w=${1##*:} mm=$2
		[[ $model == mn ]] || continue
		local tm
		tm=$(awk -v k="threads:$w" '$1 == k { print $2 }' "$tmp/$name.medians")
		[[ -n $tm ]] || continue
		awk -v name="$name" -v w="$w" -v a="$mm" -v b="$tm" 'BEGIN {
			printf "  %s mn:%s / threads:%s = %.3f (%+.1f%%)\n", name, w, w, a / b, (a / b - 1) * 100;
		}' | tee -a "$tmp/summary"
	done <"$tmp/$name.medians"
}

if [[ -z $only || $only == sudoku ]]; then
	echo "generating $grids grids..."
	"$apps/sudoku/weft-sudoku" --generate "$grids" --seed 1 --invalid-rate 0.01 >"$tmp/grids.txt"
	cat "$tmp/grids.txt" >/dev/null # into the page cache
fi
bench sudoku '^checked in \([0-9.]*\) ms.*' "$apps/sudoku/weft-sudoku" --quiet "$tmp/grids.txt"
bench psort '^sort: \([0-9.]*\) ms.*' "$apps/psort/weft-psort" --no-compare "$ints"
bench matmul '^multiply: \([0-9.]*\) ms.*' "$apps/matmul/weft-matmul" "$n"
echo "== summary (median of $reps interleaved runs; configs: $configs; $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg); $(date -u '+%Y-%m-%d %H:%M UTC'))"
cat "$tmp/summary"
