#!/bin/sh
# sleep-work: a workload with a known curve for weft-sweep's tests.
#
#   sleep-work.sh <total> <floor>
#
# Sleeps max(<total> / WEFT_WORKERS, <floor>) seconds: perfect scaling down
# to the floor, then none, so the knee is where <total> / W reaches
# <floor>. Exits 4 when SLEEP_WORK_FAIL equals WEFT_WORKERS (a cell where
# every run fails), after saying so on stderr.
w=${WEFT_WORKERS:-1}
if [ "${SLEEP_WORK_FAIL:-}" = "$w" ]; then
	echo "sleep-work: failing for WEFT_WORKERS=$w on request" >&2
	exit 4
fi
sleep "$(awk -v t="$1" -v f="$2" -v w="$w" 'BEGIN { s = t / w; if (s < f) s = f; printf "%.3f", s }')"
