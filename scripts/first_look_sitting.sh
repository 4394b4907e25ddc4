#!/usr/bin/env bash
# Every private method on a bundled table, without and with its rules, at ε = 1, δ = 1e-5:
# the first look's shares (scripts/first_look.py) and RF / LR AUROC trained on the synthetic
# rows and tested on the real test split. One sitting; figures go to docs/results.md.
#
#   scripts/first_look_sitting.sh adult|cps91 OUTDIR [method:preset …]
#
# DPSYNTH names the binary (default: dpsynth on the PATH). Each run has its own ledger in
# OUTDIR, so the sitting never touches the user's budget.
set -euo pipefail
table=${1:?adult or cps91}
out=${2:?an output folder}
shift 2
methods=("$@")
if [ ${#methods[@]} -eq 0 ]; then
  methods=(aim:quick mst:quick pearl:quick dp-merf:quick dp-gan:quick dp-auto-gan:quick pate-gan:quick)
fi
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${DPSYNTH:-dpsynth}
case $table in
  adult) dir=$here/assets/adult; label=income ;;
  cps91) dir=$here/assets/cps91; label=kidlt6 ;;
  *) echo "unknown table $table (adult or cps91)" >&2; exit 2 ;;
esac
train=$dir/${table}_train.csv
test=$dir/${table}_test.csv
schema=$dir/$table.schema.json
rules=$dir/$table.rules
rows=$(($(wc -l < "$train") - 1))
mkdir -p "$out"
auroc() {
  python3 - "$1" "$2" "${3:-}" <<'PY'
import json, sys
rows = {r["model"]: r["synthetic"].get("Ok", {}) for r in json.load(open(sys.argv[1]))["tstr"]["rows"]}
auc = lambda m: rows.get(m, {}).get("auroc", float("nan"))
print(f"{sys.argv[2]}: RF AUROC {auc('random_forest'):.3f}, LR AUROC {auc('logistic_regression'):.3f} {sys.argv[3]}")
PY
}
evaluate() {
  "$bin" evaluate --real-train "$train" --real-test "$test" --synthetic "$1" --schema "$schema" \
    --rules "$rules" --label "$label" --dimwise-rows 1000 --wasserstein-repeats 1 --json "$2" \
    > "${2%.json}.evaluate.log" 2>&1
}
# The real training rows in the synthetic seat: the bar every method is read against.
evaluate "$train" "$out/real.json"
auroc "$out/real.json" "real rows"
files=()
for mp in "${methods[@]}"; do
  m=${mp%%:*}
  p=${mp#*:}
  for with in none rules; do
    name=$m-$p-$with
    extra=()
    [ "$with" = rules ] && extra=(--rules "$rules")
    "$bin" train --data "$train" --schema "$schema" "${extra[@]}" --method "$m" --preset "$p" \
      --epsilon 1 --delta 1e-5 --ledger "$out/$name.ledger.json" --out "$out/$name.dpsynth" \
      > "$out/$name.train.log" 2>&1
    "$bin" sample --model "$out/$name.dpsynth" --rows "$rows" --out "$out/$name.csv" \
      > "$out/$name.sample.log" 2>&1
    evaluate "$out/$name.csv" "$out/$name.json"
    met=$(grep -o '([0-9.]* %) met' "$out/$name.sample.log" || true)
    auroc "$out/$name.json" "$name" "$met"
    files+=("$out/$name.csv")
  done
done
python3 "$here/scripts/first_look.py" "$train" "${files[@]}"
