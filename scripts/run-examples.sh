#!/usr/bin/env bash
# Builds graphcap's examples and runs each one. Without a GPU they build, each run says that no
# device is present, and the last line says how many ran. JOBS and CUDAARCHS as for
# scripts/run-tests.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
export PATH="$PATH:/usr/local/cuda/bin"
jobs="${JOBS:-$(nproc)}"
mkdir -p build/examples
if ! cmake -S . -B build/examples -G Ninja -DCMAKE_BUILD_TYPE=Release -DGRAPHCAP_BUILD_TESTS=OFF \
  -DGRAPHCAP_BUILD_EXAMPLES=ON >build/examples/configure.log 2>&1; then
  tail -40 build/examples/configure.log
  echo "graphcap: configuring failed (the whole log: build/examples/configure.log)" >&2
  exit 1
fi
cmake --build build/examples -j "$jobs"
built=0
not_run=0
for example in build/examples/examples/example_*; do
  echo "== ${example##*/}"
  output=$("$example")
  echo "$output"
  built=$((built + 1))
  if grep -qE "built, not run" <<<"$output"; then
    not_run=$((not_run + 1))
  fi
done
echo "examples: $built built, $((built - not_run)) ran, $not_run not run (they need a GPU, or two)"
