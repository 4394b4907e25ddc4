#!/bin/bash
# Trains each METHOD:PRESET on TRAIN at ε = $EPSILON (default 1), δ = 1e-5, samples as
# many rows as TRAIN has, and scores them with `dpsynth evaluate` (train on synthetic,
# test on TEST, label LABEL), all in one sitting, each run on its own ledger.
#   scripts/compare.sh TRAIN TEST SCHEMA LABEL OUTDIR METHOD:PRESET[:NAME=VALUE,...] ...
# then: python3 scripts/summarize.py OUTDIR
set -euo pipefail
train=$1; test=$2; schema=$3; label=$4; out=$5; shift 5
bin=${DPSYNTH:-target/release/dpsynth}
eps=${EPSILON:-1}
mkdir -p "$out"
rows=$(($(wc -l < "$train") - 1))
for spec in "$@"; do
  IFS=: read -r method preset sets <<< "$spec"
  tag=${sets:+-$(printf %s "$sets" | tr "=,./" "_-__")}
  name=$method-$preset$tag-eps$eps
  args=()
  if [ -n "${sets:-}" ]; then
    IFS=, read -ra kv <<< "$sets"
    for s in "${kv[@]}"; do args+=(--set "$s"); done
  fi
  export DPSYNTH_LEDGER="$out/$name.ledger.sqlite3"
  rm -f "$DPSYNTH_LEDGER"
  "$bin" budget set --data "$train" --epsilon "$eps" --delta 1e-5 > /dev/null
  "$bin" train --data "$train" --schema "$schema" --method "$method" --preset "$preset" \
    --epsilon "$eps" --delta 1e-5 --out "$out/$name.dpsynth" --json "${args[@]}" \
    > "$out/$name.train.json" 2> "$out/$name.train.err"
  "$bin" sample --model "$out/$name.dpsynth" --rows "$rows" --out "$out/$name.csv" 2> /dev/null
  "$bin" evaluate --real-train "$train" --real-test "$test" --schema "$schema" \
    --synthetic "$out/$name.csv" --label "$label" --json "$out/$name.report.json" > /dev/null
  echo "$name done"
done
