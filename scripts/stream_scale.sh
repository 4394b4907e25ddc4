#!/bin/sh
# Streamed MST and AIM (`train --stream`, preset quick, ε = 1) on tall Parquet files: wall
# time and peak memory (/usr/bin/time -v) of each, one line per run.
#   scripts/stream_scale.sh OUT FILE.parquet...
# Files: Adult replicated to N rows, e.g.
#   python3 -c "import pyarrow.csv as c, pyarrow.parquet as pq; t=c.read_csv('assets/adult/adult_train.csv'); w=pq.ParquetWriter('adult_10m.parquet', t.schema, compression='zstd'); [w.write_table(t) for _ in range(307)]; w.close()"
set -eu
bin=${DPSYNTH:-target/release/dpsynth}
schema=${SCHEMA:-assets/adult/adult.schema.json}
out=$1; shift
mkdir -p "$out"
for f in "$@"; do
  for m in mst aim; do
    name=$(basename "$f" .parquet)-$m
    rm -f "$out/$name.ledger.sqlite3"
    /usr/bin/time -v env DPSYNTH_LEDGER="$out/$name.ledger.sqlite3" "$bin" train --data "$f" \
      --schema "$schema" --method "$m" --epsilon 1 --delta 1e-10 --stream \
      --out "$out/$name.dpsynth" > "$out/$name.out" 2> "$out/$name.err" || echo "$name failed"
    echo "$name $(grep -E 'Elapsed|Maximum resident' "$out/$name.err" | tr -s ' ' | tr '\n' ' ')"
  done
done
