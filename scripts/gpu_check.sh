#!/usr/bin/env bash
# The GPU figures, on a machine with an NVIDIA GPU and its driver, from a CUDA
# build made elsewhere (`scripts/build_cuda.sh` writes ./dpsynth-cuda.gz; carry it).
#
#   scripts/gpu_check.sh BINARY MNIST_DIR OUTDIR [quick|full] [TRAIN_SECONDS]
#
# quick: every stage at toy size (a minute): does CUDA start, train, sample and embed?
# full:  bench dpsgd on the GPU; the DP-MERF/PEARL embedding at n = 60,000, k = 10,000 on
#        the CPU, through WGSL/Vulkan and through candle CUDA (EMBED=0 skips it); then the
#        conditional DCGANs of GAN_CONFIGS (default: scripts/gpu_gans.txt, one per line,
#        `NAME --set …`) side by side on the GPU at ε = 10, δ = 1e-5 on all 60,000 digits.
#        Each first runs 20 and 80 critic steps (side by side, so the step time is the one
#        they will share); their difference sizes each run's steps to fill TRAIN_SECONDS
#        (default 240), capped by its own `critic_steps` when it sets one.
set -uo pipefail
bin=$(realpath "$1"); mnist=$(realpath "$2"); out=$3; mode=${4:-full}; budget=${5:-240}
mkdir -p "$out"; out=$(realpath "$out")
work=/tmp/dpsynth_gpu_check; mkdir -p "$work"
log="$out/gpu_check.log"; : > "$log"
say() { echo "$*" | tee -a "$log" >&2; }

libs=""
for so in libcublas.so.13 libcublasLt.so.13 libcurand.so.10 libcudart.so.13 libnvrtc.so.13; do
  f=$(find /opt /usr/local /usr/lib -name "$so" 2>/dev/null | head -1)
  if [ -n "$f" ]; then libs="$libs:$(dirname "$f")"; else say "missing $so"; fi
done
export LD_LIBRARY_PATH="${libs#:}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# wgpu's Vulkan loader finds NVIDIA's driver through its ICD file.
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -f "$icd" ] && export VK_DRIVER_FILES="${VK_DRIVER_FILES:-$icd}"
export DPSYNTH_LEDGER="$work/ledger.sqlite3"

# stage NAME SECONDS CMD…: runs CMD with a time limit; stdout to NAME.out, stderr to NAME.err.
stage() {
  local name=$1 limit=$2; shift 2
  local t0; t0=$(date +%s.%N)
  timeout "$limit" bash -c '"$@"' _ "$@" > "$work/$name.out" 2> "$work/$name.err"
  local rc=$?
  local secs; secs=$(python3 -c "import time; print(round(time.time() - $t0, 1))")
  echo "$rc $secs" > "$work/$name.rc"
  say "stage $name: exit $rc in ${secs}s"
  [ "$rc" = 0 ] || tail -5 "$work/$name.err" | tee -a "$log" >&2
  return 0
}

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$work/gpu.txt" 2>&1
say "gpu: $(cat "$work/gpu.txt")"
stage version 30 "$bin" --version
digits="$mnist/train-images-idx3-ubyte.gz"
[ -f "$digits" ] || say "no digits at $digits"

gan() {  # gan NAME STEPS [--set …]: conditional DCGAN at ε = 10 on the digits, on the GPU
  local name=$1 steps=$2; shift 2
  local ledger="$work/$name.ledger.sqlite3"; rm -f "$ledger"
  DPSYNTH_LEDGER="$ledger" "$bin" budget set --data "$digits" --epsilon 10 --delta 1e-5 > /dev/null
  DPSYNTH_LEDGER="$ledger" "$bin" train --data "$digits" --method dp-gan --preset mnist-conv \
    --epsilon 10 --delta 1e-5 --device "${DEVICE:-cuda}" "$@" --set "critic_steps=$steps" \
    --out "$work/$name.dpsynth" --json
}
train_run() {  # NAME ARGS…: one `train` on the digits (ARGS name the method, preset and ε)
  local name=$1; shift
  local ledger="$work/$name.ledger.sqlite3"; rm -f "$ledger"
  DPSYNTH_LEDGER="$ledger" "$bin" budget set --data "$digits" --epsilon 100 --delta 1e-5 > /dev/null
  DPSYNTH_LEDGER="$ledger" "$bin" train --data "$digits" --delta 1e-5 --device "${DEVICE:-cuda}" \
    "$@" --out "$work/$name.dpsynth" --json
}
export -f gan train_run; export bin digits work

if [ "$mode" = quick ]; then
  stage dpsgd 120 "$bin" bench dpsgd --device "${DEVICE:-cuda}" --steps 5 --json
  stage embed 120 "$bin" bench embed --rows 2000 --features 500 --width 794 --classes 10 --device "${DEVICE:-cuda}" --json
  stage probe 150 gan probe 10
  stage sample 60 "$bin" sample --model "$work/probe.dpsynth" --rows 100 --out "$work/probe.csv"
elif [ "$mode" = runs ]; then
  # RUNS (a file of `NAME train-arguments…` lines) side by side, each within TRAIN_SECONDS.
  mapfile -t lines < <(grep -v '^\s*#' "${RUNS:?RUNS names a file of runs}" | grep -v '^\s*$')
  for l in "${lines[@]}"; do
    read -r name rest <<< "$l"
    # shellcheck disable=SC2086
    stage "run_$name" "$budget" train_run "$name" $rest &
  done
  wait
else
  stage dpsgd 150 "$bin" bench dpsgd --device "${DEVICE:-cuda}" --steps 100 --json
  [ "${EMBED:-1}" = 0 ] || stage embed 200 "$bin" bench embed --rows 60000 --features 10000 --width 794 --classes 10 --device "${DEVICE:-cuda}" --json
  configs=${GAN_CONFIGS:-$(dirname "$0")/gpu_gans.txt}
  mapfile -t lines < <(grep -v '^\s*#' "$configs" | grep -v '^\s*$')
  for n in 20 80; do
    for l in "${lines[@]}"; do
      read -r name rest <<< "$l"
      # shellcheck disable=SC2086
      stage "probe_${name}_$n" 180 gan "probe_${name}_$n" "$n" $rest &
    done
    wait
  done
  for l in "${lines[@]}"; do
    read -r name rest <<< "$l"
    cap=$(grep -oE 'critic_steps=[0-9]+' <<< "$rest" | cut -d= -f2)
    steps=$(python3 -c "
import json
a, b = (json.load(open('$work/probe_${name}_%d.out' % n))['seconds'] for n in (20, 80))
per = max((b - a) / 60, 1e-4); start = max(a - 20 * per, 0)
print(min(${cap:-10**9}, max(100, int(($budget - start) / per))))" 2>/dev/null || echo 500)
    say "$name: $steps critic steps"
    rest=$(sed -E 's/--set critic_steps=[0-9]+//' <<< "$rest")
    # shellcheck disable=SC2086
    stage "gan_$name" $((budget * 2 + 120)) gan "gan_$name" "$steps" $rest &
  done
  wait
fi

python3 - "$work" "$out" "$mode" <<'EOF'
import json, os, sys, glob
work, out, mode = sys.argv[1:4]
def read(name, ext="out"):
    try:
        return open(os.path.join(work, f"{name}.{ext}")).read()
    except OSError:
        return ""
def js(name):
    try:
        return json.loads(read(name))
    except ValueError:
        return None
summary = {"mode": mode, "gpu": read("gpu", "txt").strip(), "version": read("version").strip(), "stages": {}}
for rc in sorted(glob.glob(os.path.join(work, "*.rc"))):
    name = os.path.basename(rc)[:-3]
    code, secs = open(rc).read().split()
    summary["stages"][name] = {"exit": int(code), "seconds": float(secs), "result": js(name),
                               "stderr_tail": read(name, "err")[-1500:] if code != "0" else None}
json.dump(summary, open(os.path.join(out, "gpu_check.json"), "w"), indent=1)
md = [f"GPU: {summary['gpu']} — `{summary['version']}` — mode {mode}", ""]
d = (summary["stages"].get("dpsgd") or {}).get("result")
if d:
    md += ["| network | batch | private step | non-private step | ratio |", "|---|---|---|---|---|"]
    for r in d["networks"]:
        md.append(f"| {r['name']} | {r['batch']} | {r['private_step_s']*1e3:.2f} ms | {r['nonprivate_step_s']*1e3:.2f} ms | {r['ratio']:.2f}× |")
    md.append("")
e = (summary["stages"].get("embed") or {}).get("result")
if e:
    md += ["| rows | k | CPU | WGSL (wgpu) | candle CUDA |", "|---|---|---|---|---|"]
    for r in e["embedding"]:
        f = lambda s: "—" if s is None else f"{s:.2f} s"
        md.append(f"| {r['rows']} | {r['features']} | {f(r['cpu_seconds'])} ({e['threads']} threads) | {f(r['gpu_seconds'])} {r.get('gpu') or ''} | {f(r.get('device_seconds'))} |")
    md.append("")
for name, st in sorted(summary["stages"].items()):
    r = st["result"]
    if name.startswith(("gan_", "probe_", "run_")) and isinstance(r, dict):
        md.append(f"- {name}: {r.get('steps')} steps in {r.get('seconds', 0):.0f} s on {r.get('device')}, ε = {r.get('epsilon_spent')}")
    elif st["exit"] != 0:
        last = ((st["stderr_tail"] or "").strip().splitlines() or [""])[-1]
        md.append(f"- {name}: exit {st['exit']}: `{last}`")
open(os.path.join(out, "gpu_check.md"), "w").write("\n".join(md) + "\n")
print("\n".join(md))
EOF
( cd "$work" && tar czf "$out/models.tar.gz" ./*.dpsynth ./*.out 2>/dev/null ) || true
