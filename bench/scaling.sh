#!/usr/bin/env bash
# scaling.sh: how weft and its peers scale with the CPUs. Runs the peer
# workloads (the bench/peers drivers, peers.h) and the CPU apps (weft-psort,
# weft-matmul, weft-sudoku on the mn and threads models) with every process
# confined by taskset to k CPUs, k = 1, 2, 4, ... up to every CPU this
# script may use (and that count itself when it is not a power of two),
# each runtime sizing its pool from that mask; below 16 CPUs also 16 workers
# on 2 CPUs, oversubscribed. Every library runs in the same run, the
# repetitions interleaved; prints per workload the median of each library
# at each CPU count, then the speedup (the median at 1 CPU over the median
# at k), and can write the medians as CSV and plot both against the CPUs.
#
#   bench/scaling.sh [BUILD_DIR] [--reps R] [--cpus LIST] [--only W,...]
#                    [--small] [--fib-n N] [--sort-n N] [--no-runtimes]
#                    [--no-build] [--csv FILE] [--plot FILE.png]
#
#   BUILD_DIR      default build/release
#   --reps R       repetitions (default 3)
#   --cpus LIST    comma-separated CPU counts; WonC is W workers on C CPUs
#                  (default 1,2,4,... up to every CPU, and 16on2 when there
#                  are 2 to 15)
#   --only W,...   workloads (default all but mutex-t2): spawn-join
#                  spawn-wait parallel-for fib-tree mutex (= mutex-t8)
#                  mutex-t2 pingpong psort matmul sudoku apps (= psort,
#                  matmul, sudoku)
#   --small        tiny sizes (the smoke test); the numbers mean nothing
#   --fib-n N      fib-tree's n (default the drivers': 25, 15 with --small)
#   --sort-n N     ints psort sorts (default 50,000,000; 100,000 --small)
#   --no-runtimes  neither build nor run the Go, Rust and Java drivers
#   --no-build     run the Go, Rust and Java drivers as built before
#   --csv FILE     also write every median as CSV
#   --plot FILE    also draw, per workload, ns/op (log scale) and speedup
#                  against the CPUs, one line per library (gnuplot, PNG)
#   -h, --help     print this usage and exit
#
# What runs. Each peer driver BUILD_DIR/bench/peers/peers-* (see run.sh's
# table of who runs what) once per (CPU count, workload), `--only W`, one
# workload per process; a driver that prints nothing for a workload is not
# asked again. psort's weft rows are apps/psort/weft-psort's sort phase per
# element (WEFT_MODEL=mn and threads); the apps table is each app's own
# timing of its parallel phase in ms (psort: sort and merge of --sort-n
# ints; matmul: pack and multiply, n = 3000; sudoku: map, parse and check
# of 1,000,000 generated grids, 1% invalid, the verdict checked).
# Interleaving: a repetition runs every (driver, workload, CPU count) and
# every (app, model, CPU count) once, the CPU counts of one workload next
# to each other; each repetition starts 1/R of the list further on, so a
# drift of the machine lands on all alike.
#
# CPU sets are the first k CPUs of this script's own affinity mask. WEFT_*
# variables are unset (they would override what the drivers set in code),
# and so are the peers' knobs below, so that every runtime sizes its pool
# from the mask. The oversubscribed column WonC (W workers on C CPUs) tells
# each runtime to run W threads: WEFT_WORKERS, OMP_NUM_THREADS, GOMAXPROCS,
# RAYON_NUM_THREADS, TOKIO_WORKER_THREADS, UV_THREADPOOL_SIZE, and
# JAVA_TOOL_OPTIONS=-Djdk.virtualThreadScheduler.parallelism=W; it is n/a
# for oneTBB (peers-tbb sizes its arena from the mask and has no knob),
# Boost.Fiber and GLib (their drivers' pools cannot be told either) and
# weft-fibers (one worker by design). mutex-tT runs T threads (or tasks)
# in every column, pingpong 2 workers (weft: WEFT_WORKERS in WonC).
#
# Exit status: 0; 1 when a driver or app fails or nothing is built; 2 on a
# usage error.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
. "$root/scripts/cli.sh"

usage() {
	awk '/^#   bench\/scaling.sh/, /^#   -h, --help/' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}
die() {
	echo "scaling.sh: error: $*" >&2
	exit 1
}
bad() {
	echo "scaling.sh: error: $*" >&2
	usage >&2
	exit 2
}
posint() { [[ $2 =~ ^[1-9][0-9]*$ ]] || bad "$1 needs a positive integer, not '$2'"; }

build="" reps=3 cpus_opt="" only_opt="" small=() sort_n="" fib=() runtimes=1 build_rt=1 csv="" plot=""
while (($#)); do
	case $1 in
	--reps | --cpus | --only | --fib-n | --sort-n | --csv | --plot)
		(($# >= 2)) || bad "$1 needs a value"
		case $1 in
		--reps) posint "$1" "$2"; reps=$2 ;;
		--cpus) cpus_opt=$2 ;;
		--only) only_opt=$2 ;;
		--fib-n) posint "$1" "$2"; fib=(--fib-n "$2") ;;
		--sort-n) posint "$1" "$2"; sort_n=$2 ;;
		--csv) csv=$2 ;;
		--plot) plot=$2 ;;
		esac
		shift ;;
	--small) small=(--small) ;;
	--no-runtimes) runtimes=0 ;;
	--no-build) build_rt=0 ;;
	-h | --help) usage; exit 0 ;;
	--version) cli_version scaling.sh "$root"; exit 0 ;;
	-*) bad "unknown option $1" ;;
	*) [[ -z $build ]] || bad "one BUILD_DIR only ('$build', '$1')"; build=$1 ;;
	esac
	shift
done
build=${build:-$root/build/release}
[[ -d $build ]] || die "no build directory $build"
if [[ -z $sort_n ]]; then
	sort_n=50000000
	((${#small[@]})) && sort_n=100000
fi
if ((${#small[@]})); then
	matmul_n=200 grids=20000
else
	matmul_n=3000 grids=1000000
fi

# ---- workloads
peer_order="spawn-join spawn-wait parallel-for fib-tree mutex-t2 mutex-t8 pingpong psort"
app_order="psort matmul sudoku"
declare -A want=()
if [[ -z $only_opt ]]; then
	for w in spawn-join spawn-wait parallel-for fib-tree mutex-t8 pingpong psort matmul sudoku; do
		want[$w]=1
	done
else
	IFS=, read -ra items <<<"$only_opt"
	((${#items[@]})) || bad "--only needs workloads"
	for w in "${items[@]}"; do
		case $w in
		mutex) want[mutex-t8]=1 ;;
		apps) want[psort]=1 want[matmul]=1 want[sudoku]=1 ;;
		spawn-join | spawn-wait | parallel-for | fib-tree | mutex-t2 | mutex-t8 | pingpong | psort | matmul | sudoku)
			want[$w]=1 ;;
		*) bad "--only: no workload '$w'" ;;
		esac
	done
fi
peer_w=() app_w=()
for w in $peer_order; do [[ -n ${want[$w]:-} ]] && peer_w+=("$w"); done
for w in $app_order; do [[ -n ${want[$w]:-} ]] && app_w+=("$w"); done

# ---- CPU counts: cfg_label[i], cfg_cpus[i] (C), cfg_workers[i] (W, or 0:
# the runtimes' default, one per CPU of the mask), cfg_set[i] (taskset -c)
allowed=()
mask=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/$$/status 2>/dev/null || true)
[[ -n $mask ]] || mask=$(taskset -pc $$ | sed 's/.*: //')
IFS=, read -ra parts <<<"$mask"
for p in "${parts[@]}"; do
	if [[ $p == *-* ]]; then
		for ((i = ${p%-*}; i <= ${p#*-}; i++)); do allowed+=("$i"); done
	else
		allowed+=("$p")
	fi
done
ncpu=${#allowed[@]}
((ncpu > 0)) || die "cannot read this process's CPU affinity"

cfg_label=() cfg_cpus=() cfg_workers=() cfg_set=()
add_cfg() { # workers cpus
	local w=$1 c=$2 label=$2 set
	((w)) && label="${w}on$c"
	((c <= ncpu)) || bad "--cpus: $label needs $c CPUs; this process may use $ncpu"
	for l in "${cfg_label[@]}"; do [[ $l == "$label" ]] && return 0; done
	set=$(printf '%s\n' "${allowed[@]:0:c}" | paste -sd, -)
	cfg_label+=("$label") cfg_cpus+=("$c") cfg_workers+=("$w") cfg_set+=("$set")
}
if [[ -z $cpus_opt ]]; then
	for ((k = 1; k <= ncpu; k *= 2)); do add_cfg 0 "$k"; done
	((cfg_cpus[-1] == ncpu)) || add_cfg 0 "$ncpu"
	((ncpu >= 2 && ncpu < 16)) && add_cfg 16 2
else
	IFS=, read -ra items <<<"$cpus_opt"
	((${#items[@]})) || bad "--cpus needs CPU counts"
	for it in "${items[@]}"; do
		if [[ $it =~ ^[1-9][0-9]*$ ]]; then
			add_cfg 0 "$it"
		elif [[ $it =~ ^([1-9][0-9]*)on([1-9][0-9]*)$ ]]; then
			add_cfg "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}"
		else
			bad "--cpus: '$it' is neither a CPU count nor WonC (W workers on C CPUs)"
		fi
	done
fi
ncfg=${#cfg_label[@]}

# What a WonC run tells the runtimes (see the top), and who is n/a there.
oversub_env() {
	local w=$1
	echo "WEFT_WORKERS=$w OMP_NUM_THREADS=$w GOMAXPROCS=$w RAYON_NUM_THREADS=$w" \
		"TOKIO_WORKER_THREADS=$w UV_THREADPOOL_SIZE=$w" \
		"JAVA_TOOL_OPTIONS=-Djdk.virtualThreadScheduler.parallelism=$w"
}
oversub_skip_drivers=" peers-tbb peers-boost peers-glib "
oversub_na_libs=" tbb boost-fiber boost-context glib weft-fibers weft-context "

for v in $(compgen -e | grep '^WEFT_' || true) OMP_NUM_THREADS GOMAXPROCS RAYON_NUM_THREADS \
	TOKIO_WORKER_THREADS UV_THREADPOOL_SIZE JAVA_TOOL_OPTIONS; do
	unset "$v"
done

# ---- drivers and apps
dir=$build/bench/peers
drivers=()
if ((${#peer_w[@]})); then
	((runtimes && build_rt)) && "$here/peers/build-runtimes.sh" "$build"
	names="weft tbb omp boost glib uv"
	((runtimes)) && names+=" go rust java"
	for d in $names; do
		[[ -x $dir/peers-$d ]] && drivers+=("$dir/peers-$d")
	done
	((${#drivers[@]})) || die "no drivers in $dir (build the bench/peers targets first)"
fi
apps=$build/apps
declare -A app_exe=([psort]=$apps/psort/weft-psort [matmul]=$apps/matmul/weft-matmul
	[sudoku]=$apps/sudoku/weft-sudoku)
for a in "${app_w[@]}"; do
	[[ -x ${app_exe[$a]} ]] || die "${app_exe[$a]} is not built"
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/scaling.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
raw=$tmp/raw # cfg,table,library,rep,value,n
: >"$raw"
: >"$tmp/notes"

if [[ -n ${want[sudoku]:-} ]]; then
	"${app_exe[sudoku]}" --generate "$grids" --seed 1 --invalid-rate 0.01 \
		>"$tmp/grids.txt" 2>"$tmp/gen" || die "weft-sudoku --generate failed: $(cat "$tmp/gen")"
	grids_invalid=$(sed -n 's/.* grids, \([0-9]*\) invalid.*/\1/p' "$tmp/gen")
	[[ -n $grids_invalid ]] || die "weft-sudoku --generate: no count of invalid grids"
fi

# env assignments of configuration c (none: every runtime's default)
cfg_env() { ((cfg_workers[$1])) && oversub_env "${cfg_workers[$1]}" || true; }

# run_peer c driver workload rep: one driver process, one workload.
declare -A unsupported=()
run_peer() {
	local c=$1 d=$2 w=$3 r=$4 envs out
	read -ra envs <<<"$(cfg_env "$c")"
	out=$(env "${envs[@]}" taskset -c "${cfg_set[c]}" "$d" --rep "$r" --sort-n "$sort_n" \
		"${small[@]}" "${fib[@]}" --only "$w" 2>"$tmp/err") || {
		cat "$tmp/err" >&2
		die "${d##*/} --only $w failed on ${cfg_label[c]} CPUs"
	}
	awk -v c="${cfg_label[c]}" '{ print "[" c "] " $0 }' "$tmp/err" >>"$tmp/notes"
	[[ -n $out ]] || { unsupported["$d $w"]=1; return 0; }
	awk -F, -v c="$c" -v na="$oversub_na_libs" -v over="${cfg_workers[c]}" '
		over != 0 && index(na, " " $2 " ") { next }
		{ printf "%d,%s,%s,%s,%s,%s\n", c, $1, $2, $3, $5, $4 }' <<<"$out" >>"$raw"
}

# run_app c app model rep: the app's own time of its parallel phase.
run_app() {
	local c=$1 a=$2 m=$3 r=$4 envs st=0 re ms cmd size
	read -ra envs <<<"$(cfg_env "$c")"
	case $a in
	psort) cmd=("${app_exe[psort]}" --no-compare --seed 1 "$sort_n") size=$sort_n re='^sort: \([0-9.]*\) ms.*' ;;
	matmul) cmd=("${app_exe[matmul]}" "$matmul_n") size=$matmul_n re='^multiply: \([0-9.]*\) ms.*' ;;
	sudoku) cmd=("${app_exe[sudoku]}" --quiet "$tmp/grids.txt") size=$grids re='^checked in \([0-9.]*\) ms.*' ;;
	esac
	env "${envs[@]}" WEFT_MODEL="$m" taskset -c "${cfg_set[c]}" "${cmd[@]}" \
		>"$tmp/out" 2>"$tmp/err" || st=$?
	# weft-sudoku exits 1 when a grid is invalid: check its count instead.
	if [[ $a == sudoku && $st == 1 ]] &&
		grep -q " grids, [0-9]* valid, $grids_invalid invalid" "$tmp/out"; then
		st=0
	fi
	ms=$(sed -n "s/$re/\\1/p" "$tmp/out" | head -1)
	if [[ $st != 0 || -z $ms ]]; then
		cat "$tmp/out" "$tmp/err" >&2
		die "${cmd[0]##*/} (WEFT_MODEL=$m) failed on ${cfg_label[c]} CPUs (status $st)"
	fi
	awk -v c="${cfg_label[c]}" '{ print "[" c "] " $0 }' "$tmp/err" >>"$tmp/notes"
	echo "$c,app:$a,weft-$m,$r,$ms,$size" >>"$raw"
	[[ $a == psort && -n ${want[psort]:-} ]] &&
		awk -v c="$c" -v m="$m" -v r="$r" -v ms="$ms" -v n="$sort_n" \
			'BEGIN { printf "%d,psort,weft-%s,%d,%.3f,%d\n", c, m, r, ms * 1e6 / n, n }' >>"$raw"
	return 0
}

# ---- the run list: the CPU counts of one (driver, workload) side by side
jobs=()
for d in "${drivers[@]}"; do
	for w in "${peer_w[@]}"; do
		for ((c = 0; c < ncfg; c++)); do
			((cfg_workers[c])) && [[ $oversub_skip_drivers == *" ${d##*/} "* ]] && continue
			jobs+=("peer $c $d $w")
		done
	done
done
for a in "${app_w[@]}"; do
	for m in mn threads; do
		for ((c = 0; c < ncfg; c++)); do jobs+=("app $c $a $m"); done
	done
done
nj=${#jobs[@]}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
start_s=$SECONDS
progress=0
[[ -t 2 ]] && progress=1
for ((r = 1; r <= reps; r++)); do
	first=$(((r - 1) * nj / reps))
	for ((k = 0; k < nj; k++)); do
		read -r kind c x y <<<"${jobs[$(((first + k) % nj))]}"
		if [[ $kind == app ]]; then
			run_app "$c" "$x" "$y" "$r"
		elif [[ -z ${unsupported["$x $y"]:-} ]]; then
			run_peer "$c" "$x" "$y" "$r"
		fi
	done
	((progress)) && echo "scaling.sh: repetition $r/$reps done ($((SECONDS - start_s)) s)" >&2
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
elapsed_s=$((SECONDS - start_s))

# ---- medians: table,library,cfg,n,reps,median,min,max,speedup, where the
# speedup is the median in the first column over this one
sort -t, -k2,2 -k3,3 -k1,1n -k5,5g "$raw" | awk -F, '
	function flush() {
		if (cnt == 0) return
		med = cnt % 2 ? v[(cnt + 1) / 2] : (v[cnt / 2] + v[cnt / 2 + 1]) / 2
		print key "," n "," cnt "," med "," v[1] "," v[cnt]
	}
	{ k = $2 "," $3 "," $1
	  if (k != key) { flush(); key = k; cnt = 0 }
	  v[++cnt] = $5; n = $6 }
	END { flush() }' >"$tmp/agg0"
awk -F, -v OFS=, '
	NR == FNR { if ($3 == 0) base[$1, $2] = $6; next }
	{ print $0, (($1, $2) in base && $6 > 0 ? base[$1, $2] / $6 : "") }' \
	"$tmp/agg0" "$tmp/agg0" >"$tmp/agg"

# ---- the report
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
[[ -n $(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null) ]] &&
	commit+=" (working tree modified)"
labels="${cfg_label[*]}"
base_what="${cfg_label[0]} CPU"
((cfg_cpus[0] > 1)) && base_what+="s"
((cfg_workers[0])) && base_what="${cfg_label[0]}"
reps_text="median of $reps interleaved repetitions"
((reps == 1)) && reps_text="one repetition"
echo "weft and its peers against the CPUs: $reps_text"
echo "machine: $(uname -n), $ncpu CPUs available ($(getconf _NPROCESSORS_ONLN) online), ${cpu:-unknown CPU}, Linux $(uname -r)"
echo "commit: $commit; build $build (peers-weft built $(date -r "$dir/peers-weft" '+%F %T' 2>/dev/null || echo '-'))"
echo "date: $(date '+%F %T %Z'); load average (1, 5, 15 min): $load_before before, $load_after after; ${elapsed_s} s"
if ((runtimes)); then
	rt=$(for d in go rust java; do
		[[ -x $dir/peers-$d && -f $dir/peers-$d.version ]] && cat "$dir/peers-$d.version"
	done | paste -sd';' - | sed 's/;/, /g')
	[[ -n $rt ]] && echo "runtimes: $rt"
fi
echo "drivers: ${drivers[*]##*/}${app_w[*]:+; apps: ${app_w[*]} on mn and threads}"
fib_shown=${fib[1]:-25}
((${#fib[@]} == 0 && ${#small[@]})) && fib_shown=15
echo "sizes: fib-tree n = $fib_shown, psort $sort_n ints, matmul $matmul_n, sudoku $grids grids${small[*]:+ (--small: the numbers mean nothing)}"
for ((c = 0; c < ncfg; c++)); do
	if ((cfg_workers[c])); then
		over=""
		((cfg_workers[c] > cfg_cpus[c])) && over=", OVERSUBSCRIBED"
		echo "CPUs ${cfg_label[c]}: ${cfg_workers[c]} workers on ${cfg_cpus[c]} CPUs (taskset -c ${cfg_set[c]})$over; n/a for tbb, boost-fiber, glib, weft-fibers"
	fi
done
echo "CPU sets: taskset -c with the first k of ${mask}; speedup: the median at $base_what over the median at k"
echo

tables="${peer_w[*]}"
for a in "${app_w[@]}"; do tables+=" app:$a"; done
awk -F, -v labels="$labels" -v tables="$tables" -v reps="$reps" -v base="$base_what" '
	BEGIN { nc = split(labels, L, " "); nt = split(tables, T, " ")
	        what = reps == 1 ? "one repetition" : "median of " reps }
	{ if (!(($1, $2) in seen)) { seen[$1, $2] = 1; libs[$1] = libs[$1] " " $2 }
	  med[$1, $2, $3] = $6; sp[$1, $2, $3] = $9 }
	function head(name) {
		printf "%-14s", name
		for (c = 1; c <= nc; c++) printf "%10s", L[c]
		printf "\n"
	}
	function row(name, t, lib, a, fmt,    c, v) {
		printf "%-14s", name
		for (c = 1; c <= nc; c++) {
			v = (a == "sp" ? sp[t, lib, c - 1] : med[t, lib, c - 1])
			if (v == "" || !((t, lib, c - 1) in med)) printf "%10s", "n/a"
			else printf fmt, v
		}
		printf "\n"
	}
	END {
		for (i = 1; i <= nt; i++) {
			t = T[i]
			if (t ~ /^app:/ || !(t in libs)) continue
			n = split(substr(libs[t], 2), lb, " ")
			if (printed++) printf "\n"
			printf "%s (ns per op, %s)\n", t, what
			head("library")
			for (j = 1; j <= n; j++) row(lb[j], t, lb[j], "med", "%10.2f")
			printf "%s (speedup over %s)\n", t, base
			head("library")
			for (j = 1; j <= n; j++) row(lb[j], t, lb[j], "sp", "%10.2f")
		}
		for (s = 1; s <= 2; s++) {
			any = 0
			for (i = 1; i <= nt; i++) {
				t = T[i]
				if (t !~ /^app:/ || !(t in libs)) continue
				if (!any++) {
					if (printed++) printf "\n"
					if (s == 1) printf "apps (ms, %s)\n", what
					else printf "apps (speedup over %s)\n", base
					head("app    model")
				}
				n = split(substr(libs[t], 2), lb, " ")
				for (j = 1; j <= n; j++)
					row(sprintf("%-6s %s", substr(t, 5), substr(lb[j], 6)), t, lb[j],
					    s == 1 ? "med" : "sp", s == 1 ? "%10.1f" : "%10.2f")
			}
		}
	}' "$tmp/agg"
echo
echo "n/a: the library has no such workload there (run.sh lists who runs what), or it"
echo "cannot be told the worker count of an oversubscribed column. Units: ns per"
echo "operation as peers.h defines it (psort: per element); apps: ms of the parallel phase."
if [[ -s $tmp/notes ]]; then
	echo
	echo "notes from the drivers and apps (each once, [CPUs] first):"
	sort -u "$tmp/notes" | sed 's/^/  /'
fi

if [[ -n $csv ]]; then
	{
		echo "workload,library,cpus,workers,oversubscribed,unit,n,reps,median,min,max,speedup"
		awk -F, -v OFS=, -v labels="$labels" -v cpus="${cfg_cpus[*]}" -v workers="${cfg_workers[*]}" '
			BEGIN { split(labels, L, " "); split(cpus, C, " "); split(workers, W, " ") }
			{ c = $3 + 1
			  print $1, $2, C[c], (W[c] ? W[c] : C[c]), (W[c] ? "yes" : "no"),
			        ($1 ~ /^app:/ ? "ms" : "ns/op"), $4, $5, $6, $7, $8, $9 }' "$tmp/agg"
	} >"$csv"
	echo "scaling.sh: wrote $csv" >&2
fi

if [[ -n $plot ]]; then
	if ! command -v gnuplot >/dev/null 2>&1; then
		echo "scaling.sh: gnuplot not found; no plot (scripts/install-deps installs it)" >&2
	else
		# One row per workload: ns/op (log) and speedup against the CPU
		# counts, one line per library; an oversubscribed column is a lone
		# point (not joined to the others), the dashed line the ideal.
		awk -F, -v labels="$labels" -v cpus="${cfg_cpus[*]}" -v workers="${cfg_workers[*]}" \
			-v tables="$tables" -v out="$plot" -v base="$base_what" \
			-v all_libs="$(cut -d, -f2 "$tmp/agg" | sort -u | paste -sd' ' -)" \
			-v title="weft and its peers against the CPUs: $(uname -n), $ncpu CPUs, ${cpu//\"/}, commit ${commit}, load ${load_before}, median of $reps" '
			BEGIN { nc = split(labels, L, " "); split(cpus, C, " "); split(workers, W, " ")
			        nt = split(tables, T, " ")
			        na = split(all_libs, A, " "); for (i = 1; i <= na; i++) color[A[i]] = i }
			{ if (!(($1, $2) in seen)) { seen[$1, $2] = 1; libs[$1] = libs[$1] " " $2 }
			  med[$1, $2, $3] = $6; sp[$1, $2, $3] = $9 }
			function block(name, t, lib, a,    c, v, s) {
				printf "$%s << EOD\n", name
				for (s = 0; s <= 1; s++) {
					for (c = 1; c <= nc; c++) {
						if ((W[c] != 0) != s || !((t, lib, c - 1) in med)) continue
						v = a == "sp" ? sp[t, lib, c - 1] : med[t, lib, c - 1]
						if (v != "" && v > 0) printf "%d %s\n", c - 1, v
					}
					printf "\n"
				}
				printf "EOD\n"
			}
			END {
				for (i = 1; i <= nt; i++) if (T[i] in libs) rows++
				printf "set terminal pngcairo size 1500,%d font \",9\"\n", 60 + 330 * rows
				printf "set output \"%s\"\n", out
				xt = ""
				for (c = 1; c <= nc; c++)
					xt = xt (c > 1 ? ", " : "") sprintf("\"%s\" %d", W[c] ? W[c] " on " C[c] "\\n(oversubscribed)" : L[c], c - 1)
				n = split("#1f77b4 #d62728 #2ca02c #ff7f0e #9467bd #8c564b #e377c2 #17becf #bcbd22 #7f7f7f #000000 #aec7e8 #98df8a #ff9896 #c5b0d5 #c49c94", P, " ")
				for (c = 1; c <= n; c++) printf "set linetype %d lc rgb \"%s\"\n", c, P[c]
				printf "set linetype cycle %d\n", n
				printf "$ideal << EOD\n"
				for (c = 1; c <= nc; c++) if (!W[c]) printf "%d %g\n", c - 1, C[c] / C[1]
				printf "EOD\n"
				for (i = 1; i <= nt; i++) {
					t = T[i]
					if (!(t in libs)) continue
					n = split(substr(libs[t], 2), lb, " ")
					for (j = 1; j <= n; j++) { block("m" i "_" j, t, lb[j], "med"); block("s" i "_" j, t, lb[j], "sp") }
				}
				printf "set multiplot layout %d,2 title \"%s\"\n", rows, title
				printf "set xtics (%s)\nset xrange [-0.3:%g]\nset xlabel \"CPUs\"\n", xt, nc - 0.7
				printf "set logscale y\nset grid\nset key outside right top font \",8\"\n"
				for (i = 1; i <= nt; i++) {
					t = T[i]
					if (!(t in libs)) continue
					n = split(substr(libs[t], 2), lb, " ")
					name = t ~ /^app:/ ? substr(t, 5) " (app)" : t
					unit = t ~ /^app:/ ? "ms" : "ns per op"
					for (a = 1; a <= 2; a++) {
						if (a == 1) printf "set title \"%s: %s (log)\"\nset ylabel \"%s\"\n", name, unit, unit
						else printf "set title \"%s: speedup over %s (log)\"\nset ylabel \"speedup\"\n", name, base
						printf "plot "
						for (j = 1; j <= n; j++)
							printf "$%s%d_%d using 1:2 with linespoints lt %d pt %d lw %s title \"%s\", ",
							       a == 1 ? "m" : "s", i, j, color[lb[j]], color[lb[j]], (lb[j] ~ /^weft-/ ? "2.5" : "1.2"), lb[j]
						if (a == 2) printf "$ideal using 1:2 with lines dt 2 lc rgb \"#888888\" title \"ideal\""
						else printf "1/0 notitle"
						printf "\n"
					}
				}
				printf "unset multiplot\n"
			}' "$tmp/agg" >"$tmp/plot.gp"
		gnuplot "$tmp/plot.gp" || die "gnuplot failed (its script: $tmp/plot.gp)"
		echo "scaling.sh: wrote $plot" >&2
	fi
fi
