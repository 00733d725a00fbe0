#!/usr/bin/env bash
# Builds hearth (and hearth-local's examples) with the `cuda` feature on a machine WITHOUT a
# GPU, for CUDA 12.4. Compute capability 9.0 (H100/H200) is set explicitly since there is no
# GPU to detect it from; CUDA_COMPUTE_CAP overrides it.
#
# The toolkit is assembled from package registries, every file checked against a pinned sha256:
#   - Debian's non-free `nvidia-cuda-toolkit` 12.4 (trixie): nvcc, cicc, ptxas, cudafe++,
#     fatbinary, nvlink and libdevice. Measured 2026-12: the `nvidia-cuda-nvcc-cu12` wheels
#     (12.4, 12.9) ship ptxas and cicc but no nvcc driver; only the CUDA 13 wheel has one.
#   - Debian's `nvidia-cuda-dev` 12.4, for its link stubs only (libcuda.so, libnvrtc.so): candle
#     links the driver API, which a machine without a GPU has no library for.
#   - PyPI wheels for the headers and the runtime, cuBLAS and cuRAND libraries (cuRAND is
#     versioned 10.x within CUDA 12, hence its different pin).
# CUDA_NVCC_DIR=/usr/local/cuda uses an installed toolkit instead. The result lands in
# target/cuda-toolkit with an env.sh that scripts/gpu-check.sh sources.
#   scripts/build-cuda.sh [extra cargo args]
set -euo pipefail
scratch=""
trap 'rm -rf "$scratch"' EXIT

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
TK="${HEARTH_CUDA_TOOLKIT:-$ROOT/target/cuda-toolkit}"
DOWNLOADS="$TK.downloads"
DEBIAN_MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
POOL="$DEBIAN_MIRROR/pool/non-free/n/nvidia-cuda-toolkit"
export CUDA_COMPUTE_CAP="${CUDA_COMPUTE_CAP:-90}"

fetch_deb() { # name sha256
  mkdir -p "$DOWNLOADS"
  local file="$DOWNLOADS/$1"
  if ! echo "$2  $file" | sha256sum -c --status 2>/dev/null; then
    echo "fetching $1" >&2
    curl -fsSL --retry 3 -o "$file.part" "$POOL/$1"
    mv "$file.part" "$file"
    echo "$2  $file" | sha256sum -c --quiet
  fi
  echo "$file"
}

assemble_toolkit() {
  local toolkit_deb dev_deb site
  toolkit_deb="$(fetch_deb 'nvidia-cuda-toolkit_12.4.131~12.4.1-2_amd64.deb' \
    cd5fe85aee38d108b315f408a688641478f2402622a10c677478eb7a6c4e5319)"
  dev_deb="$(fetch_deb 'nvidia-cuda-dev_12.4.127~12.4.1-2_amd64.deb' \
    d846838f914a0176948d48a8bcade5d6dbcccb5c9374343f6475f5503f173ee0)"
  rm -rf "$TK" && mkdir -p "$TK"/{bin,nvvm/bin,nvvm/libdevice,include,lib64/stubs}
  scratch="$(mktemp -d)"
  dpkg-deb -x "$toolkit_deb" "$scratch"
  local libexec="$scratch/usr/lib/nvidia-cuda-toolkit"
  cp "$libexec/bin/nvcc" "$TK/bin/"
  cp -r "$libexec/bin/crt" "$TK/bin/"
  cp "$libexec/bin/cicc" "$TK/nvvm/bin/"
  cp "$libexec/libdevice/libdevice.10.bc" "$TK/nvvm/libdevice/"
  for b in ptxas cudafe++ fatbinary nvlink bin2c; do cp "$scratch/usr/bin/$b" "$TK/bin/"; done
  dpkg-deb --fsys-tarfile "$dev_deb" \
    | tar -x -C "$scratch" ./usr/lib/x86_64-linux-gnu/stubs/libcuda.so \
      ./usr/lib/x86_64-linux-gnu/stubs/libnvrtc.so
  cp "$scratch"/usr/lib/x86_64-linux-gnu/stubs/*.so "$TK/lib64/stubs/"

  python3 -m venv "$scratch/venv"
  "$scratch/venv/bin/pip" install --quiet --disable-pip-version-check \
    "nvidia-cuda-nvcc-cu12==12.4.131" "nvidia-cuda-runtime-cu12==12.4.127" \
    "nvidia-cublas-cu12==12.4.5.8" "nvidia-curand-cu12==10.3.5.147" \
    "nvidia-cuda-cccl-cu12==12.4.127.post1"
  site="$("$scratch/venv/bin/python" -c 'import site; print(site.getsitepackages()[0])')/nvidia"
  for d in cuda_runtime cublas curand cuda_cccl cuda_nvcc; do
    cp -r "$site/$d/include/." "$TK/include/"
  done
  rm -rf "$TK/include/__init__.py" "$TK/include/__pycache__"
  for d in cuda_runtime cublas curand; do cp -a "$site/$d"/lib/*.so* "$TK/lib64/"; done
  (cd "$TK/lib64" && for f in *.so.*; do ln -sf "$f" "${f%%.so.*}.so"; done)

  # nvcc finds its tools, headers and libraries through this file, relative to itself.
  cat >"$TK/bin/nvcc.profile" <<'PROFILE'
TOP              = $(_HERE_)/..
NVVMIR_LIBRARY_DIR = $(TOP)/nvvm/libdevice
LD_LIBRARY_PATH += $(TOP)/lib64:
PATH            += $(TOP)/nvvm/bin:$(_HERE_):
INCLUDES        +=  "-I$(TOP)/include" $(_SPACE_)
LIBRARIES        =+ $(_SPACE_) "-L$(TOP)/lib64"
CUDAFE_FLAGS    +=
PTXAS_FLAGS     +=
PROFILE
  touch "$TK/.complete"
}

if [[ -n "${CUDA_NVCC_DIR:-}" ]]; then
  TOOLKIT="$CUDA_NVCC_DIR"
  LIBS="$TOOLKIT/lib64:$TOOLKIT/lib64/stubs"
else
  [[ -f "$TK/.complete" ]] || assemble_toolkit
  TOOLKIT="$TK"
  LIBS="$TK/lib64:$TK/lib64/stubs"
fi

# What building and running the CUDA variant needs; gpu-check.sh sources it. At run time the
# driver's own libcuda.so.1 is used, never the stub.
mkdir -p "$TK"
cat >"$TK/env.sh" <<ENV
export PATH="$TOOLKIT/bin:\$PATH"
export CUDA_ROOT="$TOOLKIT" CUDA_PATH="$TOOLKIT"
export CUDA_COMPUTE_CAP="$CUDA_COMPUTE_CAP"
export LIBRARY_PATH="$LIBS\${LIBRARY_PATH:+:\$LIBRARY_PATH}"
export LD_LIBRARY_PATH="$TOOLKIT/lib64\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
ENV
# shellcheck source=/dev/null
source "$TK/env.sh"

nvcc --version | tail -2
cd "$ROOT"
cargo build --release -p hearth --features cuda --bin hearth "$@"
cargo build --release -p hearth-local --features cuda --examples "$@"
echo "built with CUDA 12.4 (compute capability $CUDA_COMPUTE_CAP): target/release/hearth" >&2
echo "on a GPU machine: source $TK/env.sh first (runtime libraries)" >&2
