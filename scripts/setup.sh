#!/usr/bin/env bash
# Install what bert-train needs on Debian 12, and nothing that is already there.
# Idempotent; works as root or through sudo. Set SETUP_SKIP_APT=1 to only check.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config
  libtorch-dev libdnnl-dev libhdf5-dev libcli11-dev libspdlog-dev nlohmann-json3-dev
  libutf8proc-dev libgtest-dev libopenblas0-openmp libgloo-dev
  openmpi-bin  # mpirun for the multi-node recipe and its tests (skipped when absent)
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages present"
else
  if [ "${SETUP_SKIP_APT:-0}" = 1 ]; then
    echo "setup: missing packages: ${missing[*]} (SETUP_SKIP_APT=1, not installing)" >&2
    exit 1
  fi
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
      echo "setup: need root or sudo to install: ${missing[*]}" >&2; exit 1
    fi
  fi
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  echo "setup: done"
fi

# LibTorch's BLAS must be OpenBLAS: the reference BLAS is ~20x slower.
blas=$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 2>/dev/null || true)
case "$blas" in
  *openblas*) ;;
  *) echo "setup: warning: libblas.so.3 resolves to ${blas:-nothing}, not OpenBLAS;" \
          "run: update-alternatives --config libblas.so.3-x86_64-linux-gnu" >&2 ;;
esac
