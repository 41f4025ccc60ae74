#!/bin/sh
# echo_test.sh ECHO CONNECTIONS: start `ECHO server`, run `ECHO client`
# against it, print what both said. Used by the examples' ctest entries; the
# same two commands work by hand:
#   ./echo server /tmp/port 2000 & ./echo client "$(cat /tmp/port)" 2000
set -eu
dir=$(mktemp -d)
pid=
trap 'if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; fi; rm -rf "$dir"' EXIT
"$1" server "$dir/port" "$2" >"$dir/server.out" &
pid=$!
tries=0
while [ ! -s "$dir/port" ]; do
	tries=$((tries + 1))
	if [ "$tries" -gt 600 ] || ! kill -0 "$pid" 2>/dev/null; then
		echo "echo_test: the server did not start" >&2
		exit 1
	fi
	sleep 0.05
done
"$1" client "$(cat "$dir/port")" "$2"
wait "$pid"
pid=
cat "$dir/server.out"
