#!/usr/bin/env bash
# Frame times of the real window over a fixed tour, under Xvfb (see ../shared/tools/window):
# the start screen, opening the Adult sample, scrolling its preview, the Train tab, a
# training run, the Results tab while it evaluates, tab switches, then idle.
# Usage: scripts/frame_tour.sh BIN OUT_FILE   (coordinates are for a 1600x1000 screen)
set -euo pipefail
bin=${1:?binary}; out=${2:?output file}
T="$(dirname "$0")/../../shared/tools/window"
export DISPLAY=:77 WINDOW_STATE=/tmp/dpsynth-frame-tour
rm -rf "$WINDOW_STATE"
"$T" start "$bin" 1600x1000 >/dev/null
sleep 5
"$T" click 684 44          # Try it with the Adult census sample
sleep 6
for _ in $(seq 1 30); do xdotool mousemove 700 700 click 5; sleep 0.05; done
for _ in $(seq 1 30); do xdotool mousemove 700 700 click 4; sleep 0.05; done
"$T" click 226 12          # 2 · Train and export
sleep 15                   # the cost preview settles (the Train button moves under it)
"$T" click 66 737         # Train (DP-auto-GAN, quick, ε = 1: the defaults)
sleep 1
"$T" click 66 737          # again, in case the first click was lost (harmless once running)
sleep 5
WINDOW_OUT=$(dirname "$out") "$T" shot frame-tour-training >/dev/null
sleep 40
"$T" click 334 12          # 3 · Results
sleep 8
for tab in 124 226 334 124 334; do "$T" click "$tab" 12; sleep 2; done
sleep 10                   # idle
cp "$WINDOW_STATE/frames.log" "$out"
"$T" stop >/dev/null
cat "$out"
