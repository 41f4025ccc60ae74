#!/usr/bin/env bash
# platform_costs.sh: the Linux backend against the portable POSIX one
# (docs/platforms.md), in one run: bench/platform_costs of both builds, in
# turns (the starting build alternating), R times; prints a markdown table
# of the medians and the ratio portable / linux.
#
#   bench/platform_costs.sh [LINUX_BUILD] [PORTABLE_BUILD] [--reps R] [--rounds N]
#
#   LINUX_BUILD     default build/release
#   PORTABLE_BUILD  default build/portable (cmake --preset portable)
set -euo pipefail
linux=build/release
portable=build/portable
reps=5
rounds=20000
pos=0
while [ $# -gt 0 ]; do
	case "$1" in
	--reps) reps=$2; shift 2 ;;
	--rounds) rounds=$2; shift 2 ;;
	-h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) if [ $pos -eq 0 ]; then linux=$1; else portable=$1; fi; pos=$((pos + 1)); shift ;;
	esac
done
for b in "$linux" "$portable"; do
	[ -x "$b/bench/platform_costs" ] || { echo "platform_costs.sh: no $b/bench/platform_costs" >&2; exit 1; }
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for r in $(seq 1 "$reps"); do
	if [ $((r % 2)) -eq 1 ]; then order="linux portable"; else order="portable linux"; fi
	for which in $order; do
		dir=$linux; [ "$which" = portable ] && dir=$portable
		"$dir/bench/platform_costs" --reps 1 --rounds "$rounds" | sed "s/^/$which /" >> "$out/all"
	done
done
echo "load: $(uptime | sed 's/.*load average: //')"
python3 - "$out/all" <<'PY'
import sys, statistics, collections
v = collections.defaultdict(list)
order = []
for line in open(sys.argv[1]):
    which, work, model, workers, ns = line.split()
    key = (work, model, workers)
    if key not in order:
        order.append(key)
    v[(which,) + key].append(float(ns))
print("| workload | model | workers | linux ns | portable ns | portable / linux |")
print("| --- | --- | --- | ---: | ---: | ---: |")
for key in order:
    a = statistics.median(v[("linux",) + key])
    b = statistics.median(v[("portable",) + key])
    ratio = b / a if a > 0 else float("nan")
    print(f"| {key[0]} | {key[1]} | {key[2]} | {a:.0f} | {b:.0f} | {ratio:.2f} |")
PY
