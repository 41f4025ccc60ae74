#!/bin/sh
# test-batch.sh EXE N RATE [--blocks]: generates N grids (RATE of them made
# invalid) with `EXE --generate`, validates them with `EXE --quiet` and
# `EXE` (listing), and checks that the validator finds exactly the grids
# the generator made invalid. Prints "batch ok" on success.
set -u
exe=$1 n=$2 rate=$3
shift 3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/weft-sudoku.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
"$exe" --generate "$n" --seed 7 --invalid-rate "$rate" "$@" >"$tmp/grids" 2>"$tmp/gen" ||
	{ cat "$tmp/gen"; exit 1; }
bad=$(sed -n 's/.*generated [0-9]* grids, \([0-9]*\) invalid.*/\1/p' "$tmp/gen")
"$exe" --quiet "$tmp/grids" >"$tmp/out" 2>&1
st=$?
cat "$tmp/out"
want=0
[ "$bad" -gt 0 ] && want=1
[ "$st" -eq "$want" ] || { echo "exit status $st, want $want"; exit 1; }
grep -q ": $n grids, $((n - bad)) valid, $bad invalid\$" "$tmp/out" ||
	{ echo "want $bad invalid of $n"; exit 1; }
"$exe" "$tmp/grids" >"$tmp/list" 2>&1
listed=$(grep -c ': grid [0-9]* invalid: ' "$tmp/list")
[ "$listed" -eq "$bad" ] || { echo "listed $listed invalid grids, want $bad"; exit 1; }
echo "batch ok"
