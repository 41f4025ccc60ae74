#!/bin/sh
# run-models.sh PROGRAM [ARGS...]: run PROGRAM once under each model with
# 2 workers and WEFT_STATS=1 (the statistics go to stderr), and write a
# trace of each run to PROGRAM.<model>.json for https://ui.perfetto.dev.
for model in threads spawn fibers mn; do
	echo "== WEFT_MODEL=$model"
	WEFT_MODEL=$model WEFT_WORKERS=2 WEFT_STATS=1 \
		WEFT_TRACE="$(basename "$1").$model.json" "$@" || exit 1
done
