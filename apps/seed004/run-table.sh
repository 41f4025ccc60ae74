#!/usr/bin/env bash
# run-table.sh: runs seed 004's three benchmarks on weft (fibers with the
# psjf and mlfq policies and timer preemption, and the threads model) and on
# real pthreads, for several thread counts, and prints a Markdown table like
# the seed's reports: run time, whether the threaded sum matched the
# verified one, and the library's statistics (context switches, average
# turnaround and response, in microseconds; "-" for pthreads, which keep
# none).
#
#   apps/seed004/run-table.sh [build-dir]        (default build/release)
#
# Environment:
#   THREADS="3 6 10 50 100"     thread counts
#   BENCHES="parallel_cal vector_multiply external_cal"
#   CONFIGS="fibers-psjf fibers-mlfq threads pthread"
#   PARALLEL_CAL_ARGS="1000 100000"   rows, columns (seed: 10000 100000)
#   VECTOR_MULTIPLY_ARGS="3000000"    vector size (seed: 3000000)
#   EXTERNAL_CAL_ARGS="16384"         reads of 4 ints per record (seed: 262144)
#   WEFT_WORKERS                      workers of the threads model (default: CPUs)
#
# The records external_cal reads are written by gen_records into a
# temporary directory, which is removed at the end.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
. "$root/scripts/cli.sh"
cli_help_version run-table.sh "$root" "$0" "$@"
build=$(cd "${1:-$root/build/release}" 2>/dev/null && pwd) || {
	echo "run-table.sh: no build directory ${1:-$root/build/release}" >&2
	exit 1
}
bin=$build/apps/seed004
if [[ ! -x $bin/parallel_cal || ! -x $bin/gen_records ]]; then
	echo "run-table.sh: no benchmarks in $bin; build first (cmake --build --preset release)" >&2
	exit 1
fi

THREADS=${THREADS:-"3 6 10 50 100"}
BENCHES=${BENCHES:-"parallel_cal vector_multiply external_cal"}
CONFIGS=${CONFIGS:-"fibers-psjf fibers-mlfq threads pthread"}
PARALLEL_CAL_ARGS=${PARALLEL_CAL_ARGS:-"1000 100000"}
VECTOR_MULTIPLY_ARGS=${VECTOR_MULTIPLY_ARGS:-"3000000"}
EXTERNAL_CAL_ARGS=${EXTERNAL_CAL_ARGS:-"16384"}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin/gen_records" --output-dir "$work/record"

# One run: prints "| bench | threads | config | time | verified | switches | turn | resp |".
run_one() {
	local bench=$1 threads=$2 config=$3 args exe
	local -a env=(env -u WEFT_MODEL -u WEFT_POLICY -u WEFT_PREEMPT)
	case $bench in
	parallel_cal) args=$PARALLEL_CAL_ARGS ;;
	vector_multiply) args=$VECTOR_MULTIPLY_ARGS ;;
	external_cal) args=$EXTERNAL_CAL_ARGS ;;
	esac
	exe=$bin/$bench
	case $config in
	fibers-psjf) env+=(WEFT_MODEL=fibers WEFT_POLICY=psjf WEFT_PREEMPT=timer) ;;
	fibers-mlfq) env+=(WEFT_MODEL=fibers WEFT_POLICY=mlfq WEFT_PREEMPT=timer) ;;
	threads) env+=(WEFT_MODEL=threads) ;;
	pthread) exe=$bin/${bench}_pthread ;;
	*)
		echo "run-table.sh: unknown config '$config'" >&2
		exit 2
		;;
	esac
	local out status=0
	# shellcheck disable=SC2086 # args is a list of numbers
	out=$(cd "$work" && "${env[@]}" "$exe" "$threads" $args 2>&1) || status=$?
	awk -v bench="$bench" -v threads="$threads" -v config="$config" -v status="$status" '
		/^Total run time:/ { time = $4 }
		/^Total sum is:/ { sum = $4 }
		/^Verified sum is:/ { verified = $4 }
		/^Total context switches/ { switches = $4 }
		/^Average turnaround time/ { turn = sprintf("%.0f", $4) }
		/^Average response time/ { resp = sprintf("%.0f", $4) }
		END {
			ok = (sum != "" && sum == verified && status == 0) ? "yes" : "NO (exit " status ")"
			if (switches == "") { switches = "-"; turn = "-"; resp = "-" }
			printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", bench, threads, config,
				(time == "" ? "?" : time), ok, switches, turn, resp
		}' <<<"$out"
}

echo "| benchmark | threads | run on | run time (µs) | sums verified | context switches | avg turnaround (µs) | avg response (µs) |"
echo "|---|---:|---|---:|---|---:|---:|---:|"
for bench in $BENCHES; do
	for threads in $THREADS; do
		for config in $CONFIGS; do
			run_one "$bench" "$threads" "$config"
		done
	done
done
