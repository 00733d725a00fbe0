#!/usr/bin/env bash
# For a machine WITH an NVIDIA GPU: builds the CUDA variant (scripts/build-cuda.sh), runs the
# engine's tests with the `cuda` feature, and compares 64 greedy tokens of the real model on
# CUDA against the CPU. Untested on the development machine (no GPU there).
#   scripts/gpu-check.sh [MODEL.gguf]
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
MODEL="${1:-$("$ROOT/scripts/fetch-model.sh")}"
export CUDA_COMPUTE_CAP="${CUDA_COMPUTE_CAP:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)}"

nvidia-smi --query-gpu=name,memory.total,compute_cap --format=csv
"$ROOT/scripts/build-cuda.sh"
cd "$ROOT"
cargo test --release -p hearth-local --features cuda
HEARTH_TEST_MODEL="$MODEL" cargo test --release -p hearth-local --features cuda --test real_model -- --nocapture
cargo run --release -p hearth-local --features cuda --example device_compare -- "$MODEL" 64
