#!/usr/bin/env bash
# Tall tables: load, inspect, train `quick` and sample as many rows, for Adult replicated to
# each size; prints one JSON line per step (seconds and peak RSS, from GNU time).
#
#   scripts/bench_scale.sh OUT_DIR [ROWS ...]        (default: 1000000 3000000 10000000)
#
# Needs the release binary (cargo build --release) and /usr/bin/time. Each size's CSV is
# written to OUT_DIR once (10 M rows ≈ 1.1 GB). The ledger is OUT_DIR/ledger.sqlite3.
set -euo pipefail
out=${1:?usage: bench_scale.sh OUT_DIR [ROWS ...]}
shift
sizes=("$@")
[ ${#sizes[@]} -eq 0 ] && sizes=(1000000 3000000 10000000)
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${DPSYNTH_BIN:-${CARGO_TARGET_DIR:-$here/target}/release/dpsynth}
src=$here/assets/adult/adult_train.csv
schema=$here/assets/adult/adult.schema.json
mkdir -p "$out"
export DPSYNTH_LEDGER=$out/ledger.sqlite3
measure() { # name rows cmd...
  local name=$1 rows=$2; shift 2
  local t=$out/time.txt
  if /usr/bin/time -f "%e %M" -o "$t" "$@" > "$out/$name-$rows.log" 2>&1; then ok=true; else ok=false; fi
  read -r secs kb < <(tail -1 "$t")
  printf '{"step":"%s","rows":%s,"seconds":%s,"peak_rss_mb":%.0f,"ok":%s}\n' \
    "$name" "$rows" "$secs" "$(echo "$kb/1024" | bc -l)" "$ok"
}
for n in "${sizes[@]}"; do
  csv=$out/adult-$n.csv
  if [ ! -s "$csv" ]; then
    python3 - "$src" "$csv" "$n" <<'PY'
import sys
src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
lines = open(src).read().splitlines()
head, rows = lines[0], [l for l in lines[1:] if l.strip()]
with open(dst, "w") as f:
    f.write(head + "\n")
    for i in range(n):
        f.write(rows[i % len(rows)] + "\n")
PY
  fi
  measure inspect "$n" "$bin" inspect "$csv" --schema "$schema" --json
  measure train "$n" "$bin" train --data "$csv" --schema "$schema" --method dp-gan \
    --preset quick --epsilon 1 --delta 1e-9 --out "$out/model-$n.dpsynth"
  measure sample "$n" "$bin" sample --model "$out/model-$n.dpsynth" --rows "$n" \
    --out "$out/synthetic-$n.csv"
  grep -m1 "encoded columns" "$out/train-$n.log" | sed 's/; plan:.*//' >&2 || true
done
