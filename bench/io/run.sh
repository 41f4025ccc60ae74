#!/usr/bin/env bash
# run.sh: echo servers on weft against Go, Tokio and a plain C epoll loop, in
# one run (issue 25). Every server runs at once on its own port on
# 127.0.0.1; echo_load (closed loop: N connections, one message of S bytes
# in flight on each) drives one at a time, so a drift of the machine lands
# on all alike: repetition 1 of every server, then repetition 2, ..., the
# starting server rotating. Prints a markdown table of medians, then the
# bars of issue 25 as medians of per-repetition ratios, and writes a
# CSV.
#
#   bench/io/run.sh [BUILD_DIR] [--quick | --smoke] [--reps R] [--instances K]
#                   [--seconds S] [--warmup S] [--conns LIST] [--sizes LIST]
#                   [--only LIST]
#                   [--no-runtimes] [--no-syscalls] [--no-acceptor]
#                   [--csv FILE]
#
#   BUILD_DIR      default build/release (echo_load, echo_epoll,
#                  echo_weft_waitfd, echo_weft, acceptor_share in bench/io)
#   --quick        connections 1,100,1000, 64 bytes, 1 s windows
#   --smoke        the ctest smoke test: 20 connections, 64 bytes, one short
#                  repetition, echo_epoll and echo_weft_waitfd (fibers) only
#   --reps R       repetitions; the table has medians (default 3)
#   --instances K  K processes of every server, each driven in every
#                  repetition (default 1). One process of a server can run
#                  10% faster or slower than the next for as long as it
#                  lives (where its memory landed), which repetitions of
#                  that one process do not average out: the medians and
#                  the paired ratios are then over instances x repetitions,
#                  instance j of one server paired with instance j of another
#   --seconds S    timed window per run (default 2; warm-up 0.5 before it)
#   --conns LIST   connections, commas (default 1,100,1000,10000)
#   --sizes LIST   message bytes, commas (default 64,512,4096)
#   --only LIST    servers whose label starts with one of these, commas
#                  ("epoll,go p1,weft_waitfd")
#   --no-runtimes  neither build nor run the Go and Tokio servers
#   --no-syscalls  skip the system-call counts
#   --no-acceptor  skip acceptor_share (mn, 2 workers, per-worker CPU share)
#   --csv FILE     the CSV (default BUILD_DIR/bench/io/echo.csv)
#
# Servers (label: program, placement). "pinned" is taskset -c 0; the load
# runs on CPU 1 (echo_load --cpu 1). Two-worker servers get both CPUs
# (taskset -c 0,1), sharing CPU 1 with the load: this machine has 2. (0
# and 1 stand for the first two CPUs run.sh may use; with one, all on it.)
#   echo_epoll            echo_epoll: one thread, edge-triggered epoll   pinned
#   echo_uring            echo_uring: one thread, one io_uring (receives and
#                         sends in the ring), when built                 pinned
#   echo_uring send(2)    the same, the echo sent with send(2) at once   pinned
#   weft_waitfd fibers    echo_weft_waitfd, WEFT_MODEL=fibers            pinned
#   weft_waitfd mn w1     echo_weft_waitfd, WEFT_MODEL=mn WEFT_WORKERS=1 pinned
#   weft_waitfd mn w2     echo_weft_waitfd, WEFT_MODEL=mn WEFT_WORKERS=2 CPUs 0,1
#   weft fibers / mn w1 / mn w2   echo_weft (weft/io.h), the same three, when built
#   weft fibers dl / mn w1 dl     echo_weft --timeout 30: a deadline 30 s ahead
#                         on every call, as docs/io.md's server has      pinned
#   go p1 / go p2         go/ (goroutine per connection), GOMAXPROCS=1 pinned,
#                         GOMAXPROCS=2 on CPUs 0,1
#   tokio ct / tokio mt2  tokio/ (task per connection), current_thread pinned,
#                         multi_thread with 2 workers on CPUs 0,1
# Go and Tokio are built here (go build; cargo build --locked, which may
# fetch crates from crates.io), each skipped with a message when its
# toolchain is missing or its build fails.
#
# Columns: requests/s; p50 and p99 latency of one echo (from its send to
# the last byte back, at the load); server CPU time per request (utime +
# stime of every server thread, /proc/PID/stat, over the timed window); and
# system calls per request, from a separate run with a 1 s window: the
# server's system calls counted by `perf stat -e raw_syscalls:sys_enter -p
# PID` while the load's window is open (echo_load --perf-ctl), divided by
# the echoes of the window; where perf cannot, `strace -c -f -p PID` over
# the whole run (the header says which), divided by every echo of the run,
# so that connection set-up and tear-down (accept, fcntl, setsockopt,
# epoll_ctl, close: 4-6 calls each) fall in too: little at 100
# connections, 3-5 per echo at 10,000.
# When RLIMIT_NOFILE stops echo_load from opening N connections, that
# point is skipped with a note. Exit status: 0; 1 when a server or the load
# failed ("run.sh: error: ..."); 2 on a usage error.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../../scripts/cli.sh"
cli_help_version run.sh "$here/../.." "$0" "$@"

build=build/release reps=3 instances=1 seconds=2 warmup=0.5 conns=1,100,1000,10000 sizes=64,512,4096
only="" runtimes=1 syscalls=1 acceptor=1 csv="" smoke=0
while (($#)); do
	case "$1" in
	--quick) conns=1,100,1000 sizes=64 seconds=1 warmup=0.3 ;;
	--smoke) smoke=1 conns=20 sizes=64 reps=1 seconds=0.3 warmup=0.1 runtimes=0 syscalls=0
		acceptor=0 only="echo_epoll,weft_waitfd fibers" ;;
	--reps) reps=${2:?}; shift ;;
	--instances) instances=${2:?}; shift ;;
	--seconds) seconds=${2:?}; shift ;;
	--warmup) warmup=${2:?}; shift ;;
	--conns) conns=${2:?}; shift ;;
	--sizes) sizes=${2:?}; shift ;;
	--only) only=${2:?}; shift ;;
	--no-runtimes) runtimes=0 ;;
	--no-syscalls) syscalls=0 ;;
	--no-acceptor) acceptor=0 ;;
	--csv) csv=${2:?}; shift ;;
	-*) echo "run.sh: unknown option $1" >&2; cli_usage "$0" >&2; exit 2 ;;
	*) build=$1 ;;
	esac
	shift
done
[[ $reps =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: --reps needs a positive integer" >&2; exit 2; }
[[ $instances =~ ^[1-9][0-9]*$ ]] ||
	{ echo "run.sh: --instances needs a positive integer" >&2; exit 2; }
[[ $conns =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ && $sizes =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] ||
	{ echo "run.sh: --conns and --sizes need positive integers, commas between" >&2; exit 2; }
[[ -d $build ]] || { echo "run.sh: error: no build directory $build" >&2; exit 1; }
build=$(cd "$build" && pwd)
dir=$build/bench/io
load=$dir/echo_load
[[ -x $load && -x $dir/echo_epoll && -x $dir/echo_weft_waitfd ]] ||
	{ echo "run.sh: error: no echo_load, echo_epoll or echo_weft_waitfd in $dir (build them first)" >&2; exit 1; }
csv=${csv:-$dir/echo.csv}
for v in $(compgen -e | grep '^WEFT_' || true); do
	unset "$v"
done

# CPUs: the server on the first CPU this process may use, the load on the
# second (CPUs 0 and 1 on this machine). One CPU: both on it, said in the
# header.
cpus=()
IFS=, read -ra ranges <<<"$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)"
for r in "${ranges[@]}"; do
	for ((c = ${r%-*}; c <= ${r#*-} && ${#cpus[@]} < 2; c++)); do
		cpus+=("$c")
	done
done
((${#cpus[@]})) || cpus=(0)
ncpu=$(nproc)
scpu=${cpus[0]} lcpu=${cpus[1]:-${cpus[0]}}
both=$scpu
[[ $lcpu != "$scpu" ]] && both=$scpu,$lcpu

# ---- The peers: built here, each skipped with a message.
weft_version=$(cli_weft_version "$here/../..")
have_go=0 have_tokio=0
if ((runtimes)); then
	gobin=$(command -v go || true)
	[[ -z $gobin && -x /usr/local/go/bin/go ]] && gobin=/usr/local/go/bin/go
	if [[ -z $gobin ]]; then
		echo "run.sh: Go skipped: no go toolchain" >&2
	elif (cd "$here/go" && GOTOOLCHAIN=local GOFLAGS= "$gobin" build -trimpath \
		-ldflags "-X main.weftVersion=$weft_version" -o "$dir/echo-go" .) \
		>"$dir/go-build.log" 2>&1; then
		have_go=1
		go_version=$(GOTOOLCHAIN=local "$gobin" version | cut -d' ' -f3)
	else
		echo "run.sh: Go skipped: go build failed (see $dir/go-build.log)" >&2
	fi
	cargo=$(command -v cargo || true)
	[[ -z $cargo && -x $HOME/.cargo/bin/cargo ]] && cargo=$HOME/.cargo/bin/cargo
	if [[ -z $cargo ]]; then
		echo "run.sh: Tokio skipped: no cargo" >&2
	elif WEFT_VERSION=$weft_version "$cargo" build --release --locked --quiet \
		--manifest-path "$here/tokio/Cargo.toml" --target-dir "$dir/tokio-target" \
		>"$dir/tokio-build.log" 2>&1; then
		cp "$dir/tokio-target/release/echo-tokio" "$dir/echo-tokio"
		have_tokio=1
		tokio_version=$(awk '/^name = "tokio"$/ { getline; gsub(/"/, "", $3); print $3 }' \
			"$here/tokio/Cargo.lock")
	else
		echo "run.sh: Tokio skipped: cargo build failed, offline? (see $dir/tokio-build.log)" >&2
	fi
fi

# ---- The servers: label|cpus|environment|program and arguments (before --port)
servers=("echo_epoll|$scpu||$dir/echo_epoll")
if [[ -x $dir/echo_uring ]]; then
	servers+=("echo_uring|$scpu||$dir/echo_uring --recv single --send ring"
		"echo_uring send(2)|$scpu||$dir/echo_uring --recv single --send syscall")
fi
for m in "fibers|$scpu|WEFT_MODEL=fibers WEFT_WORKERS=1" "mn w1|$scpu|WEFT_MODEL=mn WEFT_WORKERS=1" \
	"mn w2|$both|WEFT_MODEL=mn WEFT_WORKERS=2"; do
	IFS='|' read -r ml mc me <<<"$m"
	servers+=("weft_waitfd $ml|$mc|$me|$dir/echo_weft_waitfd")
	[[ -x $dir/echo_weft ]] && servers+=("weft $ml|$mc|$me|$dir/echo_weft")
	[[ -x $dir/echo_weft && $ml != "mn w2" ]] &&
		servers+=("weft $ml dl|$mc|$me|$dir/echo_weft --timeout 30")
done
if ((have_go)); then
	servers+=("go p1|$scpu|GOMAXPROCS=1|$dir/echo-go" "go p2|$both|GOMAXPROCS=2|$dir/echo-go")
fi
if ((have_tokio)); then
	servers+=("tokio ct|$scpu||$dir/echo-tokio --flavor current_thread"
		"tokio mt2|$both||$dir/echo-tokio --flavor multi_thread --workers 2")
fi
if [[ -n $only ]]; then
	kept=()
	IFS=, read -ra prefixes <<<"$only"
	for s in "${servers[@]}"; do
		for p in "${prefixes[@]}"; do
			[[ ${s%%|*} == "$p"* ]] && { kept+=("$s"); break; }
		done
	done
	servers=("${kept[@]}")
fi
((${#servers[@]})) || { echo "run.sh: error: no server left (--only '$only')" >&2; exit 1; }
# Every server's instances, side by side; inst[i]: which instance entry i is.
copies=() inst=()
for s in "${servers[@]}"; do
	for ((j = 1; j <= instances; j++)); do
		copies+=("$s")
		inst+=("$j")
	done
done
servers=("${copies[@]}")

raw=$(mktemp)
pids=()
cleanup() {
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null
	done
	for p in "${pids[@]}"; do
		wait "$p" 2>/dev/null
	done
	rm -f "$raw" "$raw".*
}
trap cleanup EXIT
: >"$raw.notes"
failed=0
error() {
	echo "run.sh: error: $*" >&2
	failed=1
}

# Start every server on its own port, below the ephemeral range (32768 and
# up, where the load's own connections take theirs); wait until it accepts.
# A port already taken: the next one.
port=$((20000 + RANDOM % 10000))
ports=()
for ((i = 0; i < ${#servers[@]}; i++)); do
	IFS='|' read -r label cpus envs cmd <<<"${servers[$i]}"
	ok=0
	for ((try = 0; try < 10 && !ok; try++)); do
		port=$((port + 1))
		# shellcheck disable=SC2086 # envs and cmd are word lists
		env $envs taskset -c "$cpus" $cmd --port "$port" >"$raw.srv$i" 2>&1 &
		pid=$!
		for ((t = 0; t < 100; t++)); do
			kill -0 "$pid" 2>/dev/null || break
			if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
				# Someone answers: ours, unless ours is about to exit
				# because another process holds the port.
				sleep 0.1
				kill -0 "$pid" 2>/dev/null && ok=1
				break
			fi
			sleep 0.05
		done
		((ok)) || { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; }
	done
	((ok)) || { cat "$raw.srv$i" >&2; error "$label did not start (last port $port)"; exit 1; }
	pids+=("$pid")
	ports+=("$port")
done

# One load run: prints "rps p50 p99 cpu_us total" or fails (status 3: fd
# limit). Further arguments go to echo_load.
run_load() { # index conns size seconds warmup [echo_load arguments]
	local out rc
	out=$("$load" --port "${ports[$1]}" --connections "$2" --size "$3" --seconds "$4" \
		--warmup "$5" --cpu "$lcpu" --server-pid "${pids[$1]}" "${@:6}" 2>"$raw.err")
	rc=$?
	if ((rc != 0)); then
		cat "$raw.err" >&2
		return "$rc"
	fi
	sed -n 's/^echo_load: .* rps=\([0-9.]*\) p50_us=\([0-9.]*\) p99_us=\([0-9.]*\) total=\([0-9]*\) server_cpu_us=\([-0-9.]*\).*/\1 \2 \3 \5 \4/p' <<<"$out"
}

# System calls of the server over one load run: "syscalls per echo".
sc_tool=none
if ((syscalls)); then
	if perf stat -e raw_syscalls:sys_enter -x, -o /dev/null --control fifo:/dev/null \
		--delay=-1 true >/dev/null 2>&1; then
		sc_tool=perf
	elif command -v strace >/dev/null 2>&1; then
		sc_tool=strace
	else
		echo "run.sh: system calls not counted: neither perf nor strace works here" >&2
		syscalls=0
	fi
fi
count_syscalls() { # index conns size
	local tp n total out
	if [[ $sc_tool == perf ]]; then
		# Counting only while echo_load's window is open: perf starts
		# disabled, echo_load writes enable and disable to the FIFO.
		rm -f "$raw.ctl" && mkfifo "$raw.ctl" || return 1
		perf stat -e raw_syscalls:sys_enter -x, -o "$raw.sc" --control "fifo:$raw.ctl" \
			--delay=-1 -p "${pids[$1]}" >/dev/null 2>&1 &
		tp=$!
		sleep 0.3 # attached
		out=$(run_load "$1" "$2" "$3" 1 "$warmup" --perf-ctl "$raw.ctl") ||
			{ kill -INT "$tp"; wait "$tp"; return 1; }
		total=$(awk '{ printf "%d", $1 }' <<<"$out") # requests in the 1 s window
	else
		strace -c -f -o "$raw.sc" -p "${pids[$1]}" >/dev/null 2>&1 &
		tp=$!
		sleep 0.3 # attached
		out=$(run_load "$1" "$2" "$3" 1 0) || { kill -INT "$tp"; wait "$tp"; return 1; }
		total=${out##* } # every echo of the run
	fi
	kill -INT "$tp" 2>/dev/null
	wait "$tp" 2>/dev/null
	if [[ $sc_tool == perf ]]; then
		n=$(awk -F, '/raw_syscalls:sys_enter/ { print $1 }' "$raw.sc")
	else
		n=$(awk '$NF == "total" { print $4 }' "$raw.sc")
	fi
	[[ -n $n && $n =~ ^[0-9]+$ && $total -gt 0 ]] || return 1
	awk -v n="$n" -v t="$total" 'BEGIN { printf "%.2f\n", n / t }'
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
start_s=$SECONDS
ns=${#servers[@]}
IFS=, read -ra conn_list <<<"$conns"
IFS=, read -ra size_list <<<"$sizes"
declare -A skip_point dead
for c in "${conn_list[@]}"; do
	for s in "${size_list[@]}"; do
		for ((r = 1; r <= reps; r++)); do
			for ((k = 0; k < ns; k++)); do
				i=$(((k + r - 1) % ns))
				label=${servers[$i]%%|*}
				[[ -n ${skip_point[$c]:-} ]] && continue
				if ! kill -0 "${pids[$i]}" 2>/dev/null; then
					[[ -z ${dead[$i]:-} ]] && { cat "$raw.srv$i" >&2; error "$label exited"; }
					dead[$i]=1
					continue
				fi
				out=$(run_load "$i" "$c" "$s" "$seconds" "$warmup")
				rc=$?
				if ((rc == 3)); then
					echo "run.sh: $c connections skipped: RLIMIT_NOFILE (hard limit $(ulimit -Hn)) is too low for echo_load" >>"$raw.notes"
					skip_point[$c]=1
					continue
				fi
				if ((rc != 0)) || [[ -z $out ]]; then
					error "$label at $c connections x $s bytes: the load failed (status $rc)"
					continue
				fi
				# Instance j's repetition r is repetition (r-1)K+j of its server.
				echo "$label,$c,$s,$(((r - 1) * instances + inst[i])),${out// /,}" >>"$raw"
			done
		done
		if ((syscalls)) && [[ -z ${skip_point[$c]:-} ]]; then
			for ((i = 0; i < ns; i++)); do
				kill -0 "${pids[$i]}" 2>/dev/null || continue
				((inst[i] == 1)) || continue # the count is the program's, not the draw's
				label=${servers[$i]%%|*}
				if n=$(count_syscalls "$i" "$c" "$s"); then
					echo "$label,$c,$s,$n" >>"$raw.sys"
				else
					echo "run.sh: system calls of $label at $c x $s not counted" >>"$raw.notes"
				fi
			done
		fi
		[[ -t 2 ]] && echo "run.sh: $c connections x $s bytes done" >&2
	done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
elapsed_s=$((SECONDS - start_s))

# ---- The table: medians per (server, conns, size), in the servers' order.
# The median of v[1..n] (sorts v), for both tables' awk programs.
awk_median='
	function median(v, n,   i, j, t) {
		for (i = 2; i <= n; i++) { t = v[i]; for (j = i - 1; j >= 1 && v[j] > t; j--) v[j + 1] = v[j]; v[j + 1] = t }
		return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
	}'
order=$(for s in "${servers[@]}"; do echo "${s%%|*}"; done | awk '!seen[$0]++' | paste -sd'|' -)
touch "$raw.sys"
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
drawn=""
((instances > 1)) && drawn=" of each of $instances instances of every server"
echo "Echo servers, closed loop: median of $reps interleaved repetitions$drawn, ${seconds} s windows after ${warmup} s warm-up"
echo "machine: $ncpu CPUs, ${cpu:-unknown CPU}, Linux $(uname -r); server on CPU $scpu (2-worker servers on $both), load on CPU $lcpu"
echo "peers: go ${go_version:-not run}; tokio ${tokio_version:-not run}; system calls counted with: $sc_tool"
echo "load average (1, 5, 15 min): $load_before before, $load_after after; ${elapsed_s} s"
echo
echo "| server | conns | bytes | req/s | p50 µs | p99 µs | CPU µs/req | syscalls/req |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
echo "server,conns,size,reps,rps,p50_us,p99_us,server_cpu_us_per_req,syscalls_per_req" >"$csv"
awk -F, -v order="$order" -v csv="$csv" -v sysf="$raw.sys" "$awk_median"'
	function k(x) { return x >= 1000 ? sprintf("%.1fk", x / 1000) : sprintf("%.0f", x) }
	BEGIN { n = split(order, o, "|"); for (i = 1; i <= n; i++) rank[o[i]] = i
	        while ((getline line < sysf) > 0) { split(line, f, ","); sc[f[1] "," f[2] "," f[3]] = f[4] } }
	{ key = $1 "," $2 "," $3; if (!(key in cnt)) keys[++nk] = key
	  c = ++cnt[key]; rps[key, c] = $5; p50[key, c] = $6; p99[key, c] = $7; cpu[key, c] = $8 }
	END {
		for (a = 1; a <= nk; a++) for (b = a + 1; b <= nk; b++) {
			split(keys[a], x, ","); split(keys[b], y, ",")
			if (x[2] + 0 > y[2] + 0 || (x[2] == y[2] && (x[3] + 0 > y[3] + 0 ||
			    (x[3] == y[3] && rank[x[1]] > rank[y[1]])))) { t = keys[a]; keys[a] = keys[b]; keys[b] = t }
		}
		for (a = 1; a <= nk; a++) {
			key = keys[a]; m = cnt[key]
			for (i = 1; i <= m; i++) { v1[i] = rps[key, i]; v2[i] = p50[key, i]; v3[i] = p99[key, i]; v4[i] = cpu[key, i] }
			r = median(v1, m); q50 = median(v2, m); q99 = median(v3, m); cu = median(v4, m)
			split(key, f, ",")
			s = (key in sc) ? sc[key] : "-"
			printf "| %-20s | %5s | %4s | %8s | %7.0f | %7.0f | %6.2f | %5s |\n", f[1], f[2], f[3], k(r), q50, q99, cu, s
			printf "%s,%s,%s,%d,%.1f,%.1f,%.1f,%.3f,%s\n", f[1], f[2], f[3], m, r, q50, q99, cu, (s == "-" ? "" : s) >> csv
		}
	}' "$raw"

# ---- The bars of issue 25 as paired ratios: within one repetition every
# server ran once, back to back, so a ratio of two of them cancels most of
# the machine's drift, which a ratio of two medians does not.
awk -F, "$awk_median"'
	# The median over the repetitions of x / y, "-" when no repetition has both.
	function paired(what, a, b, pt,   r, n, v) {
		n = 0
		for (r = 1; r <= maxrep; r++)
			if (((a, pt, r) in what) && ((b, pt, r) in what) && what[b, pt, r] > 0)
				v[++n] = what[a, pt, r] / what[b, pt, r]
		return n ? sprintf("%.2f", median(v, n)) : "-"
	}
	{ pt = $2 "," $3; rps[$1, pt, $4] = $5; p99[$1, pt, $4] = $7; if ($4 > maxrep) maxrep = $4
	  if (!(pt in seen)) { seen[pt] = 1; pts[++np] = pt } }
	END {
		nw = split("weft fibers|weft mn w1|weft fibers dl|weft mn w1 dl", weft, "|")
		lines = 0
		for (i = 1; i <= np; i++) for (w = 1; w <= nw; w++) {
			pt = pts[i]; split(pt, f, ",")
			tokio = paired(rps, weft[w], "tokio ct", pt); go = paired(rps, weft[w], "go p1", pt)
			c = f[1] == 1 ? paired(rps, weft[w], "echo_epoll", pt) : ""
			tail = paired(p99, weft[w], "go p1", pt)
			if (tokio == "-" && go == "-" && (c == "" || c == "-")) continue
			if (!lines++) {
				print ""
				print "Issue 25 bars, medians of per-repetition ratios: weft / Tokio current_thread req/s (bar >= 1.00),"
				print "weft / Go GOMAXPROCS=1 (>= 1.10), weft / C epoll at 1 connection (>= 0.95), weft p99 / Go p99 (<= 1.00)"
				print ""
				print "| server | conns | bytes | x Tokio | x Go | x C epoll | p99 / Go |"
				print "| --- | --- | --- | --- | --- | --- | --- |"
			}
			printf "| %-14s | %5s | %4s | %5s | %5s | %5s | %5s |\n", weft[w], f[1], f[2], tokio, go, c == "" ? "" : c, tail
		}
	}' "$raw"
echo
echo "CSV: $csv"
sort -u "$raw.notes"

# ---- acceptor_share: does mn spread an acceptor's connections over 2 workers?
if ((acceptor)) && [[ -x $dir/acceptor_share ]]; then
	echo
	echo "acceptor_share (mn, 2 workers on CPUs $both; load of 100 connections x 64 bytes on CPU $lcpu):"
	taskset -c "$both" "$dir/acceptor_share" --load "$load" --connections 100 --load-cpu "$lcpu" \
		--seconds "$seconds" --warmup "$warmup" || error "acceptor_share failed"
fi
exit "$failed"
