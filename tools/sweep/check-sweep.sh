#!/bin/sh
# check-sweep.sh: the ctest cases of weft-sweep (tools/sweep/CMakeLists.txt).
#
#   check-sweep.sh <case> <python3> <weft-sweep> <sweep-work> <sleep-work.sh> <outdir>
#
# Runs weft-sweep on the two workloads of this directory and checks its exit
# status, table, knee line, CSV and plot. Prints what it ran and the output;
# exits 0 when every check holds, 1 at the first one that does not.
set -u
case_=$1 py=$2 sweep=$3 work=$4 sleepw=$5 out=$6
rm -rf "$out" && mkdir -p "$out" || exit 1
log=$out/output.txt

fail() {
	echo "sweep.$case_: FAILED: $*"
	exit 1
}

# run <expected-status> <args...>: runs weft-sweep, output in $log, with
# the VAR=value in $RUN_ENV (if any) in its environment.
run() {
	want=$1
	shift
	echo "+ ${RUN_ENV:+$RUN_ENV }weft-sweep $*"
	env ${RUN_ENV:-} "$py" "$sweep" "$@" >"$log" 2>&1
	got=$?
	cat "$log"
	[ "$got" = "$want" ] || fail "exit status $got, expected $want"
}

has() {
	grep -Eq -- "$1" "$log" || fail "output lacks /$1/"
}

hasnt() {
	! grep -Eq -- "$1" "$log" || fail "output has /$1/"
}

# csv_col <file> <column name>: the values of one column, one a line.
csv_col() {
	awk -F, -v name="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == name) c = i; next }
		{ print $c }' "$1"
}

case $case_ in
help)
	# Directly through the #! line, then through python3.
	echo "+ weft-sweep --help"
	"$sweep" --help >"$log" 2>&1 || fail "--help exit status $?"
	cat "$log"
	for opt in --workers --model --policy --preempt --env --repeat --knee \
		--timeout --csv --plot --dry-run; do
		has "^ +$opt"
	done
	has "^usage: weft-sweep \[options\] -- CMD \[ARGS\.\.\.\]"
	run 0 -h
	has "^usage: weft-sweep"
	;;

small)
	# 2 worker counts x 2 models x 2 repeats of a real weft program.
	run 0 --workers 1,2 --model threads,fibers --repeat 2 --csv "$out/s.csv" \
		-- "$work" 4 20
	has "^model +workers +runs +median_(ms|s) +min_(ms|s) +max_(ms|s) +cpu_(ms|s) +speedup +efficiency$"
	for row in "threads +1" "threads +2" "fibers +1" "fibers +2"; do
		has "^$row +2/2 +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9]+%"
	done
	has "^threads +1 +2/2 .* 1\.00 +100%"
	has "^fibers +1 +2/2 .* 1\.00 +100%"
	has "^knee \(model=threads\): (1 worker \(1 -> 2: |none up to 2 workers)"
	has "^knee \(model=fibers\): (1 worker \(1 -> 2: |none up to 2 workers)"
	has "^note: the fibers model runs one worker"
	has "^weft-sweep: \[8/8\] model=fibers workers=2 run 2/2: [0-9.]+ s$"
	has "^csv: $out/s.csv$"
	hasnt "FAILED"
	echo "+ cat s.csv"
	cat "$out/s.csv"
	[ "$(head -n 1 "$out/s.csv")" = \
		"model,workers,runs,ok,failed,median_s,min_s,max_s,cpu_s,speedup,efficiency,knee,times_s" ] ||
		fail "CSV header"
	[ "$(wc -l <"$out/s.csv")" -eq 5 ] || fail "CSV rows: expected 4 cells"
	[ "$(csv_col "$out/s.csv" model | tr '\n' ' ')" = "threads threads fibers fibers " ] ||
		fail "CSV model column"
	[ "$(csv_col "$out/s.csv" workers | tr '\n' ' ')" = "1 2 1 2 " ] || fail "CSV workers column"
	[ "$(csv_col "$out/s.csv" ok | tr '\n' ' ')" = "2 2 2 2 " ] || fail "CSV ok column"
	[ "$(csv_col "$out/s.csv" speedup | sed -n '1p;3p' | tr '\n' ' ')" = "1.0000 1.0000 " ] ||
		fail "CSV speedup of the first row of each model"
	awk -F, 'NR > 1 && !($6 > 0 && $7 <= $6 && $6 <= $8 && $9 > 0 && split($13, t, " ") == 2) { exit 1 }' \
		"$out/s.csv" || fail "CSV times: min <= median <= max, cpu > 0, two times per cell"
	;;

knee)
	# max(0.8 / W, 0.2) seconds: halves down to 4 workers, then flat.
	run 0 --workers 8,1,4,2 --repeat 3 --csv "$out/k.csv" -- "$sleepw" 0.8 0.2
	has "^workers +runs +median_ms"
	has "^4 +3/3 .*<- knee$"
	has "^knee \(all\): 4 workers \(4 -> 8: "
	[ "$(csv_col "$out/k.csv" workers | tr '\n' ' ')" = "1 2 4 8 " ] || fail "rows not by workers"
	[ "$(csv_col "$out/k.csv" knee | tr '\n' ' ')" = "0 0 1 0 " ] || fail "CSV knee column"
	# Every step halves the time: no knee at 10%, the first row at 60%.
	run 0 --workers 1,2,4 --repeat 1 -- "$sleepw" 0.8 0.05
	has "^knee \(all\): none up to 4 workers"
	run 0 --workers 1,2 --repeat 1 --knee 60 -- "$sleepw" 0.8 0.05
	has "^knee \(all\): 1 worker \(1 -> 2: time cut by [0-9.]+%, less than 60%\)"
	;;

failing)
	# Every 3rd run exits 3: runs 3 and 6 of 8 fail; the others are kept.
	export SWEEP_WORK_COUNTER="$out/counter"
	run 1 --workers 1,2 --model threads,fibers --repeat 2 --csv "$out/f.csv" \
		-- "$work" --fail-every 3 2 5
	has "^weft-sweep: run failed \(exit 3\): model=fibers workers=1 run 1/2: sweep-work: failing this run on request"
	has "^FAILED 1 of 2 runs \(model=fibers workers=1\): exit 3; last stderr line: sweep-work: failing"
	has "^FAILED 1 of 2 runs \(model=threads workers=2\): exit 3"
	has "^fibers +1 +1/2 +[0-9.]+"
	has "^threads +1 +2/2 +[0-9.]+"
	[ "$(csv_col "$out/f.csv" failed | tr '\n' ' ')" = "0 1 1 0 " ] || fail "CSV failed column"
	# A cell where every run fails: a row of dashes, the others measured.
	run 1 --workers 1,2,4 --repeat 2 --env SLEEP_WORK_FAIL=2 -- "$sleepw" 0.2 0.05
	has "^SLEEP_WORK_FAIL +workers +runs"
	has "^2 +2 +0/2 +- +- +- +- +- +-$"
	has "^2 +4 +2/2 +[0-9.]+"
	has "^FAILED 2 of 2 runs \(SLEEP_WORK_FAIL=2 workers=2\): exit 4 x2; last stderr line: sleep-work: failing for WEFT_WORKERS=2"
	has "^knee \(SLEEP_WORK_FAIL=2\): "
	# A command that fails every time.
	run 1 --workers 1 --repeat 2 -- /bin/false
	has "^1 +0/2 +- "
	has "^FAILED 2 of 2 runs \(workers=1\): exit 1 x2$"
	;;

timeout)
	start=$(date +%s)
	run 1 --workers 1,2 --repeat 1 --timeout 0.5 -- "$sleepw" 30 0
	[ $(($(date +%s) - start)) -lt 10 ] || fail "the timeout did not stop the runs"
	has "^FAILED 1 of 1 run \(workers=1\): timeout after 0.5 s$"
	has "^FAILED 1 of 1 run \(workers=2\): timeout after 0.5 s$"
	;;

interrupt)
	# SIGTERM (like Ctrl-C) stops the sweep, reports the runs done, 130.
	# Runs of 2 s each; the TERM comes as soon as the first one is reported.
	echo "+ weft-sweep --workers 1 --repeat 5 -- sleep-work.sh 2 0 (TERM after run 1)"
	"$py" "$sweep" --workers 1 --repeat 5 -- "$sleepw" 2 0 >"$log" 2>&1 &
	pid=$!
	n=0
	until grep -q '^weft-sweep: \[1/5\]' "$log"; do
		n=$((n + 1))
		[ $n -lt 300 ] || { kill $pid; fail "no progress line in 30 s"; }
		sleep 0.1
	done
	kill -TERM $pid
	wait $pid
	got=$?
	cat "$log"
	[ "$got" = 130 ] || fail "exit status $got, expected 130"
	has "^weft-sweep: interrupted after 1 of 5 runs; reporting those$"
	has "^1 +1/1 +[0-9.]+"
	has "^interrupted: the table holds the runs done so far$"
	;;

badargs)
	for args in \
		"--workers 1,2" \
		"--workers 0 -- /bin/true" \
		"--workers 1,x -- /bin/true" \
		"--workers 1,,2 -- /bin/true" \
		"--workers 2,2 -- /bin/true" \
		"--model fiber -- /bin/true" \
		"--policy lifo -- /bin/true" \
		"--preempt on -- /bin/true" \
		"--env WEFT_WORKERS=1,2 -- /bin/true" \
		"--env 1X=a -- /bin/true" \
		"--env NOVALUES -- /bin/true" \
		"--env A=1 --env A=2 -- /bin/true" \
		"--repeat 0 --workers 1 -- /bin/true" \
		"--knee -5 --workers 1 -- /bin/true" \
		"--timeout abc --workers 1 -- /bin/true" \
		"--plot out.txt --workers 1 -- /bin/true" \
		"--plot out.png --model threads -- /bin/true" \
		"--csv /nonexistent/dir/x.csv --workers 1 -- /bin/true" \
		"--frobnicate --workers 1 -- /bin/true" \
		"-- /bin/true" \
		"--workers 1 -- /nonexistent/program" \
		"--workers 1 -- no-such-program-weft-sweep"; do
		# shellcheck disable=SC2086 # word splitting is the point
		run 2 $args
		has "^weft-sweep: .+"
		has "^usage: weft-sweep "
		hasnt "^weft-sweep: \[1/"
	done
	run 2 --model fiber -- /bin/true
	has "^weft-sweep: --model: unknown value 'fiber' \(accepted: threads, spawn, fibers"
	run 2 --workers 1,2
	has "^weft-sweep: no command: put it after '--'"
	run 2 --workers 1 -- no-such-program-weft-sweep
	has "^weft-sweep: command 'no-such-program-weft-sweep' not found in PATH$"
	;;

dryrun)
	run 0 --dry-run --workers 1,4 --model threads,spawn --policy fifo --repeat 2 \
		--env X=a -- /bin/false "an arg"
	has "^\[1\] WEFT_MODEL=threads WEFT_POLICY=fifo X=a WEFT_WORKERS=1 /bin/false 'an arg'$"
	has "^\[4\] WEFT_MODEL=spawn WEFT_POLICY=fifo X=a WEFT_WORKERS=4 /bin/false 'an arg'$"
	has "^\[8\] WEFT_MODEL=spawn WEFT_POLICY=fifo X=a WEFT_WORKERS=4 /bin/false 'an arg'$"
	has "^weft-sweep: 8 runs \(4 cells x 2 repeats\); dry run, nothing ran$"
	;;

mn)
	# mn swept over worker counts like threads; the policies mn refuses are
	# left out of the grid and named, not run and failed.
	run 0 --workers 1,2 --model threads,mn --policy fifo,psjf --repeat 1 -- "$work" 2 5
	for row in "threads +fifo +1" "threads +fifo +2" "threads +psjf +2" "mn +fifo +1" "mn +fifo +2"; do
		has "^$row +1/1 "
	done
	hasnt "^mn +psjf "
	has "^knee \(model=mn policy=fifo\): "
	has "^not run \(model=mn policy=psjf workers=1\): the mn model refuses the psjf policy$"
	has "^not run \(model=mn policy=psjf workers=2\): the mn model refuses the psjf policy$"
	hasnt "^FAILED"
	RUN_ENV=WEFT_POLICY=mlfq run 2 --workers 1,2 --model mn -- "$work" 2 5
	has "^not run \(model=mn workers=1\): the mn model refuses the mlfq policy$"
	has "^weft-sweep: every cell of the grid is a combination weft refuses$"
	;;

plot)
	run 0 --workers 1,2 --model threads,fibers --repeat 1 --plot "$out/p.png" -- "$work" 2 5
	has "^plot: $out/p.png$"
	[ "$(head -c 8 "$out/p.png" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] ||
		fail "$out/p.png is not a PNG"
	[ "$(wc -c <"$out/p.png")" -gt 10000 ] || fail "$out/p.png is suspiciously small"
	;;

textchart)
	# No gnuplot in PATH (sweep-work is given by its full path; python3
	# may be a launcher that needs PATH: call the interpreter itself).
	py=$("$py" -c 'import sys; print(sys.executable)')
	RUN_ENV=PATH=/nonexistent run 0 --workers 1,2 --model threads,fibers --repeat 1 \
		--plot "$out/p.png" -- "$work" 2 5
	has "^plot: gnuplot not found; text chart instead$"
	has "^median wall time \((ms|s)\) against workers: model=threads$"
	has "^ +1 \| #+ [0-9.]+ \(x1\.00\)"
	has "^ +2 \| #+ [0-9.]+ \(x[0-9.]+\)"
	[ ! -e "$out/p.png" ] || fail "a PNG appeared without gnuplot"
	;;

*)
	fail "unknown case"
	;;
esac
echo "sweep.$case_: ok"
