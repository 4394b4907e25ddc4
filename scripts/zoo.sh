#!/usr/bin/env bash
# Every private method on strangers' tables (scripts/zoo_tables.py: eight public tables
# that ship with statsmodels and scikit-learn, picked by shape before any run), without and
# with the codebook's rules, at ε = 1, δ = 1e-6: the first look's figures in one table
# (scripts/zoo_summary.py), for docs/results.md.
#
#   scripts/zoo.sh OUTDIR [method:preset …]
#
# DPSYNTH names the binary (default: dpsynth on the PATH). TABLES restricts the tables
# (space-separated names). Each run has its own ledger in OUTDIR, so the sitting never
# touches the user's budget. Needs: pip install statsmodels scikit-learn pandas
set -euo pipefail
out=${1:?an output folder}
shift
methods=("$@")
if [ ${#methods[@]} -eq 0 ]; then
  methods=(aim:quick mst:quick dp-merf:quick pearl:quick dp-gan:quick dp-auto-gan:quick pate-gan:quick)
fi
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${DPSYNTH:-dpsynth}
mkdir -p "$out"
python3 "$here/scripts/zoo_tables.py" "$out/tables"
tables=${TABLES:-$(python3 -c 'import json,sys; print(" ".join(t["name"] for t in json.load(open(sys.argv[1]))))' "$out/tables/tables.json")}
for t in $tables; do
  data=$out/tables/$t.csv
  rows=$(($(wc -l < "$data") - 1))
  for mp in "${methods[@]}"; do
    m=${mp%%:*}
    p=${mp#*:}
    for with in none rules; do
      extra=()
      if [ "$with" = rules ]; then
        [ -s "$out/tables/$t.rules" ] || continue
        extra=(--rules "$out/tables/$t.rules")
      fi
      name=$t.$m-$p-$with
      start=$(date +%s)
      if "$bin" train --data "$data" --schema "$out/tables/$t.schema.json" "${extra[@]}" \
          --method "$m" --preset "$p" --epsilon 1 --delta 1e-6 --seed 1 \
          --ledger "$out/$name.ledger.sqlite3" --out "$out/$name.dpsynth" \
          > "$out/$name.train.log" 2>&1 \
        && "$bin" sample --model "$out/$name.dpsynth" --rows "$rows" --seed 1 --out "$out/$name.csv" \
          > "$out/$name.sample.log" 2>&1; then
        echo "$name: $(( $(date +%s) - start )) s"
      else
        echo "$name: FAILED (see $out/$name.*.log)"
      fi
    done
  done
done
python3 "$here/scripts/zoo_summary.py" "$out" | tee "$out/summary.md"
