#!/bin/sh
# check-nested.sh PYTHON PLOT TRACE_FIB OUTDIR MODEL: runs trace-fib 12 under
# MODEL with a trace, draws it with weft-trace-plot --script, and checks
# that the PNG is there and that the script's data stacks nested segments:
# some are 2 or more deep, and within a row every depth has its own lane,
# higher than the one below (tools.trace-plot.nested.<model>).
set -eu
py=$1 plot=$2 fib=$3 out=$4 model=$5
rm -rf "$out" && mkdir -p "$out"
WEFT_MODEL=$model WEFT_WORKERS=2 WEFT_TRACE="$out/fib.json" "$fib" 12
"$py" "$plot" "$out/fib.json" "$out/fib.png" --script "$out/fib.gp"
test -s "$out/fib.png" || { echo "check-nested: no PNG" >&2; exit 1; }
# Data lines of $segs: x_mid y_lane x_half y_half depth colour.
sed -n '/^\$segs << EOD$/,/^EOD$/p' "$out/fib.gp" | sed '1d;$d' | awk '
	{ row = int($2 + 0.5); y[row, $5] = $2; if ($5 > deepest) deepest = $5; n++
	  if ((row, $5) in seen && seen[row, $5] != $2) bad = "two lanes for one depth"
	  seen[row, $5] = $2 }
	END {
		if (n == 0) bad = "no segment data"
		if (deepest < 2) bad = "nothing nested 3 deep (deepest " deepest ")"
		for (k in y) { split(k, p, SUBSEP)
			if (p[2] > 0 && ((p[1], p[2] - 1) in y) && y[p[1], p[2] - 1] >= y[k])
				bad = "depth " p[2] " not above depth " p[2] - 1 }
		if (bad != "") { print "check-nested: " bad > "/dev/stderr"; exit 1 }
		printf "nested ok: %d segments, depth 0..%d in lanes\n", n, deepest }'
