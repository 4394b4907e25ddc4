#!/bin/bash
# Post-GAN boosting on the paper's 25-Gaussians toy: trains METHOD with --boost at ε =
# $EPSILON (default 1, δ = 2e-5 as the paper's 1/(2N)), samples 25,000 rows from the last
# generator, the boosted mixture and the boosted mixture after DRS, and scores each with
# `dpsynth bench modes` (quality = share of high-quality samples capped per mode; modes
# covered), writing a scatter PNG of each into OUT/png.
#   scripts/pgb_toy.sh OUT NAME [extra train flags, e.g. --set critic_steps=4000]
set -euo pipefail
out=$1; name=$2; shift 2
bin=${DPSYNTH:-target/release/dpsynth}
# The toy data is not in the repository: DATA names it (the development machine keeps it
# in the shared data folder, gaussians25_pgb/gaussian_df.csv).
data=${DATA:?set DATA to the 25-Gaussians CSV (gaussian_df.csv of the post-GAN boosting paper)}
eps=${EPSILON:-1}
method=${METHOD:-dp-gan}
mkdir -p "$out/png"
cat > "$out/g25.schema.json" <<'JSON'
{"columns":[
 {"name":"Var1","kind":"continuous","domain":{"bounds":{"lower":-5.0,"upper":5.0}}},
 {"name":"Var2","kind":"continuous","domain":{"bounds":{"lower":-5.0,"upper":5.0}}}
]}
JSON
export DPSYNTH_LEDGER="$out/$name.ledger.sqlite3"
rm -f "$DPSYNTH_LEDGER"
if [ "$eps" != inf ]; then
  "$bin" budget set --data "$data" --epsilon "$eps" --delta 2e-5 > /dev/null
fi
"$bin" train --data "$data" --schema "$out/g25.schema.json" --method "$method" \
  --epsilon "$eps" --delta 2e-5 --out "$out/$name.dpsynth" --boost --json "$@" \
  > "$out/$name.train.json" 2> "$out/$name.train.err"
files=()
for d in generator boosted boosted-drs; do
  "$bin" sample --model "$out/$name.dpsynth" --rows 25000 --draw "$d" \
    --out "$out/$name-$d.csv" 2> /dev/null
  files+=(--synthetic "$out/$name-$d.csv")
done
"$bin" bench modes "${files[@]}" --png-dir "$out/png" --json > "$out/$name.modes.json"
"$bin" bench modes "${files[@]}"
