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

# Measured 2026-12: the CUDA 12 `nvidia-cuda-nvcc-cu12` wheels (12.4, 12.9) ship only ptxas, not
# nvcc; only the CUDA 13 wheel `nvidia-cuda-nvcc` has the compiler. So a CUDA 12 nvcc must come from
# the system toolkit (on PATH, or via CUDA_NVCC_DIR=/usr/local/cuda).
if [[ -n "${CUDA_NVCC_DIR:-}" ]]; then
  export PATH="$CUDA_NVCC_DIR/bin:$PATH" CUDA_ROOT="$CUDA_NVCC_DIR" CUDA_PATH="$CUDA_NVCC_DIR"
fi
if ! command -v nvcc >/dev/null; then
  echo "no nvcc: the CUDA 12 wheels on PyPI carry only ptxas. Install a CUDA 12 toolkit and set" >&2
  echo "CUDA_NVCC_DIR to it (the wheels above still supply cuBLAS, cuRAND and the runtime)." >&2
  exit 1
fi
nvcc --version
cd "$ROOT"
cargo build --release -p hearth-local --features cuda --examples "$@"
echo "built with CUDA (compute capability $CUDA_COMPUTE_CAP)" >&2
