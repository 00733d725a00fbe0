#!/usr/bin/env bash
# Builds hearth-local with the `cuda` feature on a machine WITHOUT a GPU, using the CUDA 12
# toolchain from PyPI (nvidia-cuda-nvcc-cu12 and friends) in a private venv. Compute capability
# 9.0 (H100/H200) is set explicitly since there is no GPU to detect it from.
# cuRAND is versioned 10.x within CUDA 12, hence its different pin.
#   scripts/build-cuda.sh [extra cargo args]
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${HEARTH_CUDA_VENV:-$ROOT/target/cuda-venv}"
export CUDA_COMPUTE_CAP="${CUDA_COMPUTE_CAP:-90}"

if [[ ! -x "$VENV/bin/python" ]]; then
  python3 -m venv "$VENV"
fi
"$VENV/bin/pip" install --quiet --disable-pip-version-check \
  "nvidia-cuda-nvcc-cu12==12.*" "nvidia-cuda-runtime-cu12==12.*" \
  "nvidia-cublas-cu12==12.*" "nvidia-curand-cu12==10.*" "nvidia-cuda-cccl-cu12==12.*"

SITE="$("$VENV/bin/python" -c 'import site; print(site.getsitepackages()[0])')/nvidia"
NVCC_DIR="$SITE/cuda_nvcc"
export PATH="$NVCC_DIR/bin:$PATH"
# nvcc from the wheel does not know where the runtime, cuBLAS and CCCL headers live.
INCLUDES=""
for d in cuda_runtime cublas curand cuda_cccl cuda_nvcc; do
  [[ -d "$SITE/$d/include" ]] && INCLUDES="$INCLUDES -I$SITE/$d/include"
done
export NVCC_PREPEND_FLAGS="$INCLUDES ${NVCC_PREPEND_FLAGS:-}"
export CUDA_ROOT="$NVCC_DIR" CUDA_PATH="$NVCC_DIR"
LIBS=""
for d in cuda_runtime cublas curand; do
  [[ -d "$SITE/$d/lib" ]] && LIBS="$LIBS:$SITE/$d/lib"
done
export LIBRARY_PATH="${LIBS#:}:${LIBRARY_PATH:-}"
export LD_LIBRARY_PATH="${LIBS#:}:${LD_LIBRARY_PATH:-}"

nvcc --version
cd "$ROOT"
cargo build --release -p hearth-local --features cuda --examples "$@"
echo "built with CUDA (compute capability $CUDA_COMPUTE_CAP)" >&2
