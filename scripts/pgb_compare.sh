#!/bin/bash
# Post-GAN boosting on a table, in one sitting: for each METHOD:PRESET, a plain run at the
# whole ε (default 1, δ = 1e-5) and a run with --boost at the same total ε, whose model is
# sampled three ways (last generator, boosted, boosted + DRS); every sample is scored by
# `dpsynth evaluate` (train on synthetic, test on TEST, label LABEL).
#   scripts/pgb_compare.sh TRAIN TEST SCHEMA LABEL OUTDIR METHOD:PRESET ... [-- extra --boost flags]
# then: python3 scripts/summarize.py OUTDIR
set -euo pipefail
train=$1; test=$2; schema=$3; label=$4; out=$5; shift 5
specs=(); while [ $# -gt 0 ] && [ "$1" != -- ]; do specs+=("$1"); shift; done
[ "${1:-}" = -- ] && shift
bin=${DPSYNTH:-target/release/dpsynth}
eps=${EPSILON:-1}
mkdir -p "$out"
rows=$(($(wc -l < "$train") - 1))
evaluate() {
  "$bin" evaluate --real-train "$train" --real-test "$test" --schema "$schema" \
    --synthetic "$out/$1.csv" --label "$label" --json "$out/$1.report.json" > /dev/null
}
for spec in "${specs[@]}"; do
  IFS=: read -r method preset <<< "$spec"
  for kind in plain boost; do
    name=$method-$preset-$kind-eps$eps
    export DPSYNTH_LEDGER="$out/$name.ledger.sqlite3"
    rm -f "$DPSYNTH_LEDGER"
    "$bin" budget set --data "$train" --epsilon "$eps" --delta 1e-5 > /dev/null
    flags=(); [ $kind = boost ] && flags=(--boost "$@")
    "$bin" train --data "$train" --schema "$schema" --method "$method" --preset "$preset" \
      --epsilon "$eps" --delta 1e-5 --out "$out/$name.dpsynth" --json "${flags[@]}" \
      > "$out/$name.json" 2> "$out/$name.train.err"
    if [ $kind = plain ]; then
      cp "$out/$name.json" "$out/$name.train.json"
      "$bin" sample --model "$out/$name.dpsynth" --rows "$rows" --out "$out/$name.csv" 2> /dev/null
      evaluate "$name"
    else
      for d in generator boosted boosted-drs; do
        cp "$out/$name.json" "$out/$name-$d.train.json"
        "$bin" sample --model "$out/$name.dpsynth" --rows "$rows" --draw $d \
          --out "$out/$name-$d.csv" 2> /dev/null
        evaluate "$name-$d"
      done
    fi
    echo "$name done"
  done
done
