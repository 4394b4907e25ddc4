#!/usr/bin/env bash
# Frame times while the window opens a file with five kept runs:
# five MST runs of the Adult sample are trained with the CLI into a fresh window data
# folder and kept there as the window keeps them; the window starts, opens the sample
# (the loader reads the records, statements and stored scores), shows Results while the
# newest run is scored, switches tabs, then idles. Under Xvfb (see ../shared/tools/window).
# Usage: scripts/frame_kept_runs.sh BIN OUT_FILE   (coordinates are for a 1600x1000 screen)
set -euo pipefail
bin=$(realpath "${1:?binary}"); out=$(realpath -m "${2:?output file}")
cd "$(dirname "$0")/.."
T=../shared/tools/window
export DISPLAY=:78 WINDOW_STATE=/tmp/dpsynth-frame-kept
rm -rf "$WINDOW_STATE"
home="$WINDOW_STATE/home"; models="$home/data/dpsynth/models"
mkdir -p "$models"
sample=$(realpath assets/adult/adult_train.csv)
for i in 1 2 3 4 5; do
  HOME="$home" XDG_DATA_HOME="$home/data" "$bin" train --data "$sample" --schema assets/adult/adult.schema.json --method mst \
    --epsilon 0.5 --delta 1e-6 --out "$models/mst-$i.dpsynth" > /dev/null 2>&1
  printf '{"title": "MST %d (ε = 0.5)", "data": "%s", "config": null}\n' "$i" "$sample" \
    > "$models/mst-$i.dpsynth.run.json"
done
"$T" start "$bin" 1600x1000 > /dev/null
sleep 5
"$T" click 684 44          # Try it with the Adult census sample
sleep 8
"$T" click 334 12          # 3 · Results (the newest kept run is scored)
sleep 25
WINDOW_OUT=$(dirname "$out") "$T" shot frame-kept-runs > /dev/null
for tab in 124 226 334 124 334; do "$T" click "$tab" 12; sleep 2; done
sleep 8                    # idle
cp "$WINDOW_STATE/frames.log" "$out"
"$T" stop > /dev/null
cat "$out"
