#!/bin/bash
# Trains METHOD:PRESET on the 60,000 MNIST training digits at each ε given, samples
# 10,000 labelled digits, and scores them with `dpsynth evaluate` against the 10,000 test
# digits (classifiers trained on synthetic, tested on real; a 10×10 grid per run).
#   [DELTA=1e-5] [SET="k=v k2=v2"] [TAG=name] [JITTER=1|D,Z,S[,A,SIGMA]] scripts/mnist.sh MNIST_DIR OUTDIR METHOD:PRESET EPSILON...
# (δ default 1e-6; SET overrides preset settings, one `--set` each; TAG marks the files;
# ROWS synthetic digits for the judges, default 10,000; 60000 is DPImageBench's protocol;
# training's wall time and peak memory go to OUTDIR/NAME.time, from /usr/bin/time -v where installed)
set -euo pipefail
dir=$1; out=$2; IFS=: read -r method preset <<< "$3"; shift 3
bin=${DPSYNTH:-target/release/dpsynth}
delta=${DELTA:-1e-6}
sets=()
for kv in ${SET:-}; do sets+=(--set "$kv"); done
mkdir -p "$out"
for eps in "$@"; do
  name=$method-$preset${TAG:+-$TAG}-eps$eps
  export DPSYNTH_LEDGER="$out/$name.ledger.sqlite3"
  rm -f "$DPSYNTH_LEDGER"
  # Each run on its own ledger, with a total that fits it (the default total is ε = 3).
  "$bin" budget set --data "$dir/train-images-idx3-ubyte.gz" --epsilon "$eps" --delta "$delta" > /dev/null
  timer=()
  [ -x /usr/bin/time ] && timer=(/usr/bin/time -v -o "$out/$name.time")
  ${timer[@]+"${timer[@]}"} "$bin" train --data "$dir/train-images-idx3-ubyte.gz" --method "$method" --preset "$preset" \
    --epsilon "$eps" --delta "$delta" --out "$out/$name.dpsynth" --json ${sets[@]+"${sets[@]}"} \
    > "$out/$name.train.json" 2> "$out/$name.train.err"
  "$bin" sample --model "$out/$name.dpsynth" --rows "${ROWS:-10000}" --out "$out/$name.csv" 2> /dev/null
  "$bin" evaluate --real-train "$dir/train-images-idx3-ubyte.gz" --real-test "$dir/t10k-images-idx3-ubyte.gz" \
    --synthetic "$out/$name.csv" --grid "$out/$name.png" --json "$out/$name.report.json" > /dev/null
  # JITTER=1: the same model sampled again with every digit jittered (`sample --jitter`),
  # scored the same way, into NAME-jitter.* (post-processing: no privacy cost);
  # JITTER=DEGREES,ZOOM,SHIFT[,ALPHA,SIGMA] passes that setting on.
  if [ -n "${JITTER:-}" ]; then
    jitter=(--jitter)
    [ "$JITTER" != 1 ] && jitter=(--jitter "$JITTER")
    "$bin" sample --model "$out/$name.dpsynth" --rows "${ROWS:-10000}" "${jitter[@]}" --out "$out/$name-jitter.csv" 2> /dev/null
    "$bin" evaluate --real-train "$dir/train-images-idx3-ubyte.gz" --real-test "$dir/t10k-images-idx3-ubyte.gz" \
      --synthetic "$out/$name-jitter.csv" --grid "$out/$name-jitter.png" --json "$out/$name-jitter.report.json" > /dev/null
  fi
  echo "$name done"
done
