#!/bin/bash
# dpsynth's MST and AIM beside dpmm's (SAS, Python) on Adult at ε = 1, δ = 1e-5, with the
# same public domain and 32 uniform bins, in one sitting: seconds to train and sample, and
# RF AUROC (train on synthetic, test on the real test split, `dpsynth evaluate`).
# dpmm is installed into a throw-away venv under OUT. Each peer run is capped at
# PEER_SECONDS (default 3600); a capped run is reported as such.
#   scripts/peers.sh OUT
set -uo pipefail
out=$1; mkdir -p "$out"
bin=${DPSYNTH:-target/release/dpsynth}
cap=${PEER_SECONDS:-3600}
train=assets/adult/adult_train.csv; test=assets/adult/adult_test.csv
schema=assets/adult/adult.schema.json
rows=$(($(wc -l < "$train") - 1))
if [ ! -x "$out/venv/bin/python" ]; then
  python3 -m venv "$out/venv" && "$out/venv/bin/pip" install -q dpmm || exit 1
fi
score() { # name csv
  "$bin" evaluate --real-train "$train" --real-test "$test" --schema "$schema" \
    --synthetic "$2" --label income --json "$out/$1.report.json" > /dev/null 2>&1
  python3 -c "
import json,sys
r={x['model']:x['synthetic'].get('Ok',{}) for x in json.load(open('$out/$1.report.json'))['tstr']['rows']}
print('%.3f' % r['random_forest']['auroc'])"
}
echo "| method | train + sample | RF AUROC |"
echo "|---|---|---|"
for m in mst aim; do
  export DPSYNTH_LEDGER="$out/$m.ledger.sqlite3"; rm -f "$DPSYNTH_LEDGER"
  t0=$(date +%s.%N)
  "$bin" train --data "$train" --schema "$schema" --method "$m" --epsilon 1 --delta 1e-5 \
    --set bins=32 --out "$out/dpsynth-$m.dpsynth" > /dev/null 2>&1
  "$bin" sample --model "$out/dpsynth-$m.dpsynth" --rows "$rows" --out "$out/dpsynth-$m.csv" 2> /dev/null
  t1=$(date +%s.%N)
  echo "| dpsynth $m | $(python3 -c "print('%.1f s' % ($t1 - $t0))") | $(score dpsynth-$m "$out/dpsynth-$m.csv") |"
  if timeout "$cap" "$out/venv/bin/python" scripts/peers_dpmm.py "$m" "$train" "$schema" 1 1e-5 32 \
      "$out/dpmm-$m.csv" > "$out/dpmm-$m.json" 2> "$out/dpmm-$m.err"; then
    secs=$(python3 -c "import json; d=json.load(open('$out/dpmm-$m.json')); print('%.1f s' % (d['fit_seconds'] + d['generate_seconds']))")
    echo "| dpmm $m | $secs | $(score dpmm-$m "$out/dpmm-$m.csv") |"
  else
    echo "| dpmm $m | not finished in $cap s | — |"
  fi
done
