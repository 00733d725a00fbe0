#!/usr/bin/env bash
# Runs llama.cpp's llama-bench (built by llama-build.sh) on a GGUF next to `hearth bench`, for a
# side-by-side table. Not run by CI.
#   scripts/llama-bench.sh MODEL.gguf [threads]
# HEARTH_LLAMA_ISA=avx2: both sides on AVX2 kernels alone (llama.cpp built without AVX-512 and
# VNNI, hearth with `--kernels avx2`), for what an AVX2-only CPU gets, measured here;
# HEARTH_LLAMA_ISA=avx-vnni: both on AVX2 with the 256-bit VNNI (`--kernels avx-vnni`), for
# Intel's desktop and laptop CPUs since Alder Lake.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
MODEL="${1:?usage: llama-bench.sh MODEL.gguf [threads]}"
THREADS="${2:-$(nproc)}"
BIN="$("$ROOT/scripts/llama-build.sh" llama-bench)"

echo "== llama.cpp ==" >&2
# One repetition each, like hearth's bench (the default five take many minutes at depth 4096).
"$BIN/llama-bench" -m "$MODEL" -t "$THREADS" -p 256 -n 32 -d 0,1024,4096 -r 1
echo "== hearth ==" >&2
cd "$ROOT"
cargo build --release -q --bin hearth
KERNELS=fastest
case "${HEARTH_LLAMA_ISA:-native}" in
  avx2) KERNELS=avx2 ;;
  avx-vnni) KERNELS=avx-vnni ;;
esac
RAYON_NUM_THREADS="$THREADS" "$ROOT/target/release/hearth" bench --model "$MODEL" --kernels "$KERNELS"
