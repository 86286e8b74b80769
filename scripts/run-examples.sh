#!/usr/bin/env bash
# Builds graphcap's examples and runs each one. Without a GPU they build, and each run says
# that no device is present.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
export PATH="$PATH:/usr/local/cuda/bin"
cmake -S . -B build/examples -G Ninja -DCMAKE_BUILD_TYPE=Release -DGRAPHCAP_BUILD_TESTS=OFF \
  -DGRAPHCAP_BUILD_EXAMPLES=ON >/dev/null
cmake --build build/examples -j "$(nproc)"
for example in build/examples/examples/example_*; do
  echo "== ${example##*/}"
  "$example"
done
