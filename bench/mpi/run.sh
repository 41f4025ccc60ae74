#!/usr/bin/env bash
# bench/mpi/run.sh: weft inside MPI ranks against MPI + OpenMP, one run.
#
#   bench/mpi/run.sh [--quick] [--reps R] [--models "threads mn ..."]
#                    [--sort N] [--matmul n] [--ranks "1 2 4"] [--out DIR] BUILD_DIR
#
# For each rank count R: weft-psort --mpi N and psort_omp N, weft-matmul
# --mpi n and matmul_omp n, each R times interleaved (weft under every model
# of --models, then OpenMP, then again), with WEFT_WORKERS = OMP_NUM_THREADS
# = max(1, CPUs / R) threads per rank and `--bind-to none` for both (Open
# MPI's default binds each of 1 or 2 ranks to one core, which would leave a
# rank's second thread nowhere to run). Prints a table of medians (sort: the
# "sort:" time, without generate and verify; multiply: the "multiply:" time)
# and the ratio weft / OpenMP; with --out, writes DIR/mpi.csv and, when
# gnuplot exists, DIR/mpi-psort.png and DIR/mpi-matmul.png. A run whose
# program does not print "verify: ok" is reported as FAILED.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/cli.sh"

quick=0 reps=5 models="threads mn" sort_n=20000000 mat_n=2000 ranks="1 2 4" out=""
while (($#)); do
	case $1 in
	--quick) quick=1 reps=1 sort_n=300000 mat_n=300 models="threads fibers" ;;
	--reps) reps=$2; shift ;;
	--models) models=$2; shift ;;
	--sort) sort_n=$2; shift ;;
	--matmul) mat_n=$2; shift ;;
	--ranks) ranks=$2; shift ;;
	--out) out=$2; shift ;;
	-h | --help) cli_usage "$0"; exit 0 ;;
	--version) cli_version run.sh "$(dirname "$0")/../.."; exit 0 ;;
	-*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
	*) break ;;
	esac
	shift
done
build=${1:?usage: run.sh [options] BUILD_DIR}
psort=$build/apps/psort/weft-psort matmul=$build/apps/matmul/weft-matmul
psort_omp=$build/bench/mpi/psort_omp matmul_omp=$build/bench/mpi/matmul_omp
for p in "$psort" "$matmul" "$psort_omp" "$matmul_omp"; do
	[[ -x $p ]] || { echo "run.sh: $p is not built" >&2; exit 2; }
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun=(mpirun --oversubscribe --bind-to none)
cpus=$(nproc)
csv=$(mktemp)
trap 'rm -f "$csv"' EXIT

# run LABEL KIND RANKS THREADS CMD...: one timed run, appended to the csv
run() {
	local label=$1 kind=$2 np=$3 t=$4 line ms
	shift 4
	if ! line=$(WEFT_WORKERS=$t OMP_NUM_THREADS=$t "${mpirun[@]}" -n "$np" "$@" 2>&1); then
		echo "  $kind $label ranks=$np: FAILED (exit status)" >&2
		echo "$line" | tail -3 >&2
		return
	fi
	if ! grep -q "^verify: ok" <<<"$line"; then
		echo "  $kind $label ranks=$np: FAILED (not verified)" >&2
		return
	fi
	if [[ $kind == psort ]]; then
		ms=$(sed -n 's/^sort: \([0-9.]*\) ms.*/\1/p' <<<"$line")
	else
		ms=$(sed -n 's/^multiply: \([0-9.]*\) ms.*/\1/p' <<<"$line")
	fi
	echo "$kind,$np,$t,$label,$ms" >>"$csv"
}

for np in $ranks; do
	t=$((cpus / np)); ((t >= 1)) || t=1
	for ((i = 0; i < reps; i++)); do
		for m in $models; do
			WEFT_MODEL=$m run "weft-$m" psort "$np" "$t" "$psort" --mpi "$sort_n"
		done
		run omp psort "$np" "$t" "$psort_omp" "$sort_n"
		for m in $models; do
			WEFT_MODEL=$m run "weft-$m" matmul "$np" "$t" "$matmul" --mpi "$mat_n"
		done
		run omp matmul "$np" "$t" "$matmul_omp" "$mat_n"
	done
done

# medians, the table, the ratios
table=$(python3 - "$csv" "$models" <<'PY'
import csv, statistics, sys
rows = list(csv.reader(open(sys.argv[1])))
models = sys.argv[2].split()
med = {}
for kind, np_, t, label, ms in rows:
    med.setdefault((kind, int(np_), int(t), label), []).append(float(ms))
for kind in ("psort", "matmul"):
    keys = sorted({(k[1], k[2]) for k in med if k[0] == kind})
    print(f"== {kind}: median ms over runs (ratio = weft / MPI+OpenMP)")
    print("| ranks | threads/rank | " + " | ".join(f"weft {m}" for m in models) + " | MPI+OpenMP | " + " | ".join(f"ratio {m}" for m in models) + " |")
    print("|---|---|" + "---|" * (2 * len(models) + 1))
    for np_, t in keys:
        omp = med.get((kind, np_, t, "omp"))
        o = statistics.median(omp) if omp else float("nan")
        ws = []
        for m in models:
            v = med.get((kind, np_, t, "weft-" + m))
            ws.append(statistics.median(v) if v else float("nan"))
        print(f"| {np_} | {t} | " + " | ".join(f"{w:.1f}" for w in ws) + f" | {o:.1f} | " + " | ".join(f"{w / o:.2f}x" for w in ws) + " |")
    print()
PY
)
echo "$table"
if [[ -n $out ]]; then
	mkdir -p "$out"
	cp "$csv" "$out/mpi.csv"
	if command -v gnuplot >/dev/null; then
		for kind in psort matmul; do
			python3 - "$csv" "$kind" "$models" >"$out/mpi-$kind.dat" <<'PY'
import csv, statistics, sys
rows = list(csv.reader(open(sys.argv[1])))
kind, models = sys.argv[2], sys.argv[3].split() + ["omp"]
med = {}
for k, np_, t, label, ms in rows:
    if k == kind:
        med.setdefault((int(np_), label), []).append(float(ms))
for np_ in sorted({k[0] for k in med}):
    print(np_, " ".join(f"{statistics.median(med.get((np_, 'weft-' + m if m != 'omp' else 'omp'), [float('nan')])):.2f}" for m in models))
PY
			cols=""
			i=2
			for m in $models omp; do
				title="weft $m"
				[[ $m == omp ]] && title="MPI + OpenMP"
				cols+="${cols:+, }'$out/mpi-$kind.dat' using $i:xtic(1) title '$title'"
				i=$((i + 1))
			done
			gnuplot <<GP
set terminal pngcairo size 800,450 noenhanced
set output '$out/mpi-$kind.png'
set title '$kind --mpi $([[ $kind == psort ]] && echo "$sort_n ints" || echo "n = $mat_n"): weft inside the ranks vs MPI + OpenMP (median of $reps, ms)'
set xlabel 'ranks ($cpus CPUs; threads per rank = max(1, CPUs / ranks))'
set ylabel 'ms'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set yrange [0:*]
set key top left
plot $cols
GP
			rm -f "$out/mpi-$kind.dat"
		done
	fi
fi
