#!/bin/sh
# run-with-server.sh: start tools/quote-server on a free loopback port, run
# a command against it, stop the server.
#
#   run-with-server.sh [--max-seconds S] PYTHON SERVER "SERVER OPTIONS" \
#       COMMAND [arguments...]
#
# SERVER OPTIONS is one argument, split at blanks (options without spaces).
# Every @URL@ in the command's arguments becomes the server's base URL. The
# command's output passes through; then "exit status N" is printed, and
# "TOO SLOW: ..." if it ran longer than S seconds, for ctest's regular
# expressions. Exits 0 whatever the command did (the expressions decide),
# 1 when the server did not start.
set -u
max=
if [ "${1:-}" = --max-seconds ]; then
	max=$2
	shift 2
fi
python=$1
server=$2
opts=$3
shift 3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ticker-test.XXXXXX") || exit 1
: >"$tmp/server.out" # exists before the server runs: the loop below reads it
# shellcheck disable=SC2086 # the options are split on purpose
"$python" "$server" --port 0 $opts >"$tmp/server.out" 2>"$tmp/server.err" &
srv=$!
cleanup() {
	kill "$srv" 2>/dev/null
	wait "$srv" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

url=
i=0
while [ $i -lt 100 ]; do
	url=$(sed -n 's/^listening on \(http:[^ ]*\)$/\1/p' "$tmp/server.out")
	[ -n "$url" ] && break
	if ! kill -0 "$srv" 2>/dev/null; then
		break
	fi
	sleep 0.1
	i=$((i + 1))
done
if [ -z "$url" ]; then
	echo "run-with-server: the quote server did not start:" >&2
	cat "$tmp/server.err" >&2
	exit 1
fi

# Substitute @URL@ (argument by argument, so spaces survive).
n=$#
while [ $n -gt 0 ]; do
	a=$1
	shift
	case $a in
	*@URL@*) a="${a%%@URL@*}$url${a#*@URL@}" ;;
	esac
	set -- "$@" "$a"
	n=$((n - 1))
done

start=$(date +%s.%N)
"$@"
status=$?
end=$(date +%s.%N)
echo "exit status $status"
if [ -n "$max" ]; then
	awk -v s="$start" -v e="$end" -v m="$max" 'BEGIN {
		d = e - s
		if (d > m) printf "TOO SLOW: %.2f s, more than %s s\n", d, m
		else printf "took %.2f s (limit %s s)\n", d, m
	}'
fi
exit 0
