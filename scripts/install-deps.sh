#!/usr/bin/env bash
# Installs what graphcap's build needs on Debian/Ubuntu, if missing: CMake, Ninja, a C++20
# compiler, Boost headers (Hana) and Catch2. The CUDA toolkit (>= 13.0) must already be there,
# at /usr/local/cuda or on PATH. Installs only when run as root; otherwise says what is missing.
set -euo pipefail

missing=()
command -v cmake >/dev/null || missing+=(cmake)
command -v ninja >/dev/null || missing+=(ninja-build)
command -v g++ >/dev/null || missing+=(g++)
[ -f /usr/include/boost/hana.hpp ] || missing+=(libboost-dev)
[ -f /usr/include/catch2/catch.hpp ] || [ -f /usr/include/catch2/catch_test_macros.hpp ] ||
  [ -f /usr/local/include/catch2/catch_test_macros.hpp ] || missing+=(catch2)

if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
    echo "graphcap: installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "graphcap: missing packages: ${missing[*]} (run as root to install them with apt-get)" >&2
    exit 1
  fi
fi

if ! command -v nvcc >/dev/null && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "graphcap: the CUDA toolkit (nvcc >= 13.0) was not found in PATH or /usr/local/cuda" >&2
  exit 1
fi
