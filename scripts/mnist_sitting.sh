#!/bin/bash
# One sitting of the digit protocol: `mnist-local-long` trained on all 60,000 MNIST training
# digits (δ = 1e-5, a fresh seed each), each training alone under /usr/bin/time -v, then
# 60,000 digits sampled with --jitter and judged on the 10,000 real test digits.
#   [DPSYNTH=BIN] [REAL_TRAIN=IDX] scripts/mnist_sitting.sh MNIST_DIR OUT [EPS:RUN ...]
# (default runs: 10:a 10:b 1:a 1:b; REAL_TRAIN only sets the real-data baseline of the
# report, not the CNN judge of the synthetic digits: a small file makes scoring faster.)
set -u
dir=$1; out=$2; shift 2
runs=("$@"); [ ${#runs[@]} -eq 0 ] && runs=(10:a 10:b 1:a 1:b)
bin=${DPSYNTH:-target/release/dpsynth}
real_train=${REAL_TRAIN:-$dir/train-images-idx3-ubyte.gz}
mkdir -p "$out"
for spec in "${runs[@]}"; do
  eps=${spec%%:*}; run=${spec##*:}
  name=$run-eps$eps
  export DPSYNTH_LEDGER="$out/$name.ledger"
  rm -f "$DPSYNTH_LEDGER"
  "$bin" budget set --data "$dir/train-images-idx3-ubyte.gz" --epsilon "$eps" --delta 1e-5 > /dev/null
  echo "$(date +%T) train $name" >> "$out/progress"
  /usr/bin/time -v -o "$out/$name.time" "$bin" train --data "$dir/train-images-idx3-ubyte.gz" \
    --method dp-merf --preset mnist-local-long --epsilon "$eps" --delta 1e-5 \
    --out "$out/$name.dpsynth" --json > "$out/$name.train.json" 2> "$out/$name.train.err"
  "$bin" sample --model "$out/$name.dpsynth" --rows 60000 --jitter --out "$out/$name-jitter.csv" 2> /dev/null
  "$bin" evaluate --real-train "$real_train" --real-test "$dir/t10k-images-idx3-ubyte.gz" \
    --synthetic "$out/$name-jitter.csv" --grid "$out/$name-jitter.png" \
    --json "$out/$name-jitter.report.json" > "$out/$name-jitter.eval.log" 2>&1
  echo "$(date +%T) done $name $(grep -o '"synthetic_cnn_accuracy": *[0-9.]*' "$out/$name-jitter.report.json")" >> "$out/progress"
done
