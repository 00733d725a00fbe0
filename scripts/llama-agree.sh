#!/usr/bin/env bash
# Greedy tokens of hearth against llama.cpp on the same GGUF: llama.cpp's `llama-simple`
# (greedy, built by llama-build.sh) writes N tokens after a fixed prompt, then hearth's `agree`
# example reports where its own greedy tokens first leave them and its top-1 agreement with
# them (llama.cpp's tokens fed in one by one). Not run by CI.
#   scripts/llama-agree.sh MODEL.gguf [N]
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
MODEL="${1:?usage: llama-agree.sh MODEL.gguf [N]}"
N="${2:-256}"
BIN="$("$ROOT/scripts/llama-build.sh" llama-simple)"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT

# A prompt that keeps a small coder model writing for a few hundred tokens. Passed as it is:
# `$(cat file)` would drop its final newline.
PROMPT=$'<|im_start|>system\nYou are a helpful coding assistant.<|im_end|>\n<|im_start|>user\nWrite a Rust module for a bounded FIFO queue backed by a ring buffer, with push, pop, len and tests. Explain each method.<|im_end|>\n<|im_start|>assistant\n'
printf '%s' "$PROMPT" >"$OUT/prompt"
"$BIN/llama-simple" -m "$MODEL" -n "$N" "$PROMPT" >"$OUT/llama" 2>"$OUT/llama.err" ||
  { cat "$OUT/llama.err" >&2; exit 1; }
# llama-simple echoes the prompt, then prints the tokens it generates and a final newline.
python3 - "$OUT" <<'PY'
import sys
out = sys.argv[1]
prompt = open(f"{out}/prompt", encoding="utf-8").read()
text = open(f"{out}/llama", encoding="utf-8").read()
if not text.startswith(prompt):
    sys.exit("llama-simple did not echo the prompt as given")
open(f"{out}/generated", "w", encoding="utf-8").write(text[len(prompt):].removesuffix("\n"))
PY
cd "$ROOT"
cargo run --release -q -p hearth-local --example agree -- "$MODEL" "$OUT/prompt" "$OUT/generated"
