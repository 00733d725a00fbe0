#!/usr/bin/env bash
# Builds hearth-local with the `cuda` feature on a machine WITHOUT a GPU, for CUDA 12. Compute
# capability 9.0 (H100/H200) is set explicitly since there is no GPU to detect it from.
# nvcc comes from a system CUDA 12 toolkit (on PATH, or CUDA_NVCC_DIR=/usr/local/cuda): measured
# 2026-12, the `nvidia-cuda-nvcc-cu12` wheels (12.4, 12.9) ship only ptxas, and only the CUDA 13
# wheel has nvcc. The runtime, cuBLAS, cuRAND and CCCL come from PyPI wheels in a private venv
# (cuRAND is versioned 10.x within CUDA 12, hence its different pin).
#   scripts/build-cuda.sh [extra cargo args]
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${HEARTH_CUDA_VENV:-$ROOT/target/cuda-venv}"
export CUDA_COMPUTE_CAP="${CUDA_COMPUTE_CAP:-90}"

# Checked first, so a machine without a toolkit fails in a second, not after the downloads.
if [[ -n "${CUDA_NVCC_DIR:-}" ]]; then
  export PATH="$CUDA_NVCC_DIR/bin:$PATH"
fi
if ! command -v nvcc >/dev/null; then
  echo "no nvcc: the CUDA 12 wheels on PyPI carry only ptxas. Install a CUDA 12 toolkit and set" >&2
  echo "CUDA_NVCC_DIR to it (this script still takes cuBLAS, cuRAND and the runtime from PyPI)." >&2
  exit 1
fi
TOOLKIT="$(cd "$(dirname "$(command -v nvcc)")/.." && pwd)"
export CUDA_ROOT="$TOOLKIT" CUDA_PATH="$TOOLKIT"

if [[ ! -x "$VENV/bin/python" ]]; then
  python3 -m venv "$VENV"
fi
"$VENV/bin/pip" install --quiet --disable-pip-version-check \
  "nvidia-cuda-runtime-cu12==12.*" "nvidia-cublas-cu12==12.*" \
  "nvidia-curand-cu12==10.*" "nvidia-cuda-cccl-cu12==12.*"

SITE="$("$VENV/bin/python" -c 'import site; print(site.getsitepackages()[0])')/nvidia"
# nvcc does not know where the wheels' runtime, cuBLAS and CCCL headers live.
INCLUDES=""
for d in cuda_runtime cublas curand cuda_cccl; do
  [[ -d "$SITE/$d/include" ]] && INCLUDES="$INCLUDES -I$SITE/$d/include"
done
export NVCC_PREPEND_FLAGS="$INCLUDES ${NVCC_PREPEND_FLAGS:-}"
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
