#!/usr/bin/env bash
# Builds and runs graphcap's whole test suite through CTest. Tests that need a GPU are reported
# as skipped (not run) on a machine without one; everything else runs anywhere.
# JOBS: parallel compiles and tests (default: the number of cores). CUDAARCHS: the GPU
# architectures to build for (default: the GPU present, else 90; docs/building.md). SANITIZE=cpu
# (what .ci/run sets) or all: the tests that run without a GPU (all: every test's host code) under
# AddressSanitizer and UndefinedBehaviorSanitizer, in this same build (docs/reliability.md).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
export PATH="$PATH:/usr/local/cuda/bin"
jobs="${JOBS:-$(nproc)}"
mkdir -p build/tests
if ! cmake -S . -B build/tests -G Ninja -DCMAKE_BUILD_TYPE=Debug -DGRAPHCAP_BUILD_TESTS=ON \
  -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DGRAPHCAP_BUILD_EXAMPLES=OFF \
  -DGRAPHCAP_SANITIZE="${SANITIZE:-}" >build/tests/configure.log 2>&1; then
  tail -40 build/tests/configure.log
  echo "graphcap: configuring failed (the whole log: build/tests/configure.log)" >&2
  exit 1
fi
cmake --build build/tests -j "$jobs"
cd build/tests
if [ -n "${SANITIZE:-}" ]; then # as the asan test preset; tests on the real runtime set their own
  export ASAN_OPTIONS="protect_shadow_gap=0:detect_leaks=1:strict_string_checks=1"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
fi
ctest -j "$jobs" --output-on-failure
