#!/usr/bin/env bash
# Builds the headless CUDA binary without a system CUDA toolkit: the compiler, headers and
# libraries come from NVIDIA's Python wheels (CUDA 13.0, matching driver 580; newer
# toolkits emit PTX that a 13.0 driver cannot load, and cudarc knows versions up to 13.4).
#
#   scripts/build_cuda.sh [WHEELS_DIR] [COMPUTE_CAP]     # defaults: /tmp/cu13, 90 (H100/H200)
#
# Writes target/…/release/dpsynth (headless, `--features cuda`), a stripped copy at
# ./dpsynth-cuda and ./dpsynth-cuda.gz to copy to a GPU machine. There it needs the driver
# (libcuda.so.1) and the wheels' CUDA libraries on LD_LIBRARY_PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
wheels="${1:-/tmp/cu13}"
cap="${2:-90}"
if [ ! -x "$wheels/nvidia/cu13/bin/nvcc" ]; then
  python3 -m pip install -q --target "$wheels" \
    "nvidia-cuda-nvcc==13.0.*" "nvidia-nvvm==13.0.*" "nvidia-cuda-crt==13.0.*" \
    "nvidia-cuda-runtime==13.0.*" "nvidia-cublas==13.0.*" "nvidia-curand" \
    "nvidia-cuda-cccl==13.0.*"
fi
cuda="$wheels/nvidia/cu13"
# candle links the CUDA libraries (cudarc's dynamic-linking): the linker wants unversioned
# names, which the wheels do not ship, and libcuda, which only a driver does. A stub
# libcuda with the driver API's names (taken from cudarc's bindings) satisfies the
# linker, as the toolkit's own lib/stubs would; the GPU machine's driver provides the
# real libcuda.so.1 at run time. Each stub returns CUDA_ERROR_NO_DEVICE (100), so the stub
# named libcuda.so.1 also lets this binary start on a machine without the driver, where
# `--device auto` then trains on the CPU (how CI-like machines check this build).
if [ ! -e "$cuda/lib/libnvrtc.so.13" ]; then
  python3 -m pip install -q --target "$wheels/nvrtc" "nvidia-cuda-nvrtc==13.0.*"
  cp "$wheels/nvrtc/nvidia/cu13/lib/"* "$cuda/lib/"
fi
( cd "$cuda/lib"
  ln -sf libnvrtc.so.13 libnvrtc.so; ln -sf libcurand.so.10 libcurand.so
  ln -sf libcublas.so.13 libcublas.so; ln -sf libcublasLt.so.13 libcublasLt.so
  ln -sf libcudart.so.13 libcudart.so )
if ! grep -q "return 100" "$wheels/libcuda_stub.c" 2>/dev/null; then
  bindings=$(ls -d "$HOME"/.cargo/registry/src/*/cudarc-0.19.*/src/driver/sys/mod.rs | tail -1)
  grep -hoE '^\s+fn cu[A-Za-z0-9_]*\(' "$bindings" | sed -E 's/\s*fn ([A-Za-z0-9_]*)\(/int \1(void) { return 100; }/' \
    | sort -u > "$wheels/libcuda_stub.c"
  cc -shared -fPIC -o "$cuda/lib/libcuda.so" -Wl,-soname,libcuda.so.1 "$wheels/libcuda_stub.c"
  mkdir -p "$wheels/stub" && ln -sf "$cuda/lib/libcuda.so" "$wheels/stub/libcuda.so.1"
fi
export CUDA_ROOT="$cuda" CUDA_PATH="$cuda" CUDA_HOME="$cuda" PATH="$cuda/bin:$PATH"
# No GPU is needed to build: name the compute capability instead of asking nvidia-smi.
export CUDA_COMPUTE_CAP="$cap"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/dpsynth-target}"
cargo build --release --no-default-features --features cuda --bin dpsynth
cp "$CARGO_TARGET_DIR/release/dpsynth" dpsynth-cuda
strip dpsynth-cuda
# About 86 MB stripped (candle's PTX kernels are embedded), 23 MB gzipped: carry the .gz.
gzip -9 -f -k dpsynth-cuda
ls -l dpsynth-cuda dpsynth-cuda.gz
echo "On the GPU machine: gunzip dpsynth-cuda.gz; LD_LIBRARY_PATH=<dir with libcublas.so.13,"
echo "libcublasLt.so.13, libcurand.so.10, libcudart.so.13, libnvrtc.so.13> ./dpsynth-cuda bench dpsgd --device cuda"
