#!/usr/bin/env bash
# Builds and runs graphcap's whole test suite through CTest. Tests that need a GPU are reported
# as skipped (not run) on a machine without one; everything else runs anywhere.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
export PATH="$PATH:/usr/local/cuda/bin"
cmake -S . -B build/tests -G Ninja -DCMAKE_BUILD_TYPE=Debug -DGRAPHCAP_BUILD_TESTS=ON \
  -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
  -DGRAPHCAP_BUILD_EXAMPLES=OFF >/dev/null
cmake --build build/tests -j "$(nproc)"
cd build/tests
ctest -j "$(nproc)" --output-on-failure
