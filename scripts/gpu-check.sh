#!/usr/bin/env bash
# For a machine WITH an NVIDIA GPU: builds the CUDA variant (scripts/build-cuda.sh), runs the
# engine's tests with the `cuda` feature, and compares 64 greedy tokens of the real model on
# CUDA against the CPU, and runs the engine in its worker process (`hearth engine-worker`) on
# the GPU. Not yet run on a GPU: the development machines have none.
#   scripts/gpu-check.sh [MODEL.gguf]
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
MODEL="${1:-$("$ROOT/scripts/fetch-model.sh")}"
export CUDA_COMPUTE_CAP="${CUDA_COMPUTE_CAP:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)}"

nvidia-smi --query-gpu=name,memory.total,compute_cap --format=csv
"$ROOT/scripts/build-cuda.sh"
# shellcheck source=/dev/null
source "${HEARTH_CUDA_TOOLKIT:-$ROOT/target/cuda-toolkit}/env.sh"
cd "$ROOT"
cargo test --release -p hearth-local --features cuda
HEARTH_TEST_MODEL="$MODEL" cargo test --release -p hearth-local --features cuda --test real_model -- --nocapture
cargo run --release -p hearth-local --features cuda --example device_compare -- "$MODEL" 64
HEARTH_TEST_MODEL="$MODEL" cargo test --release --features cuda --test local_model -- --nocapture
