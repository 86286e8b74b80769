#!/usr/bin/env bash
# Builds and runs the kept probes of benchmark/probes/ on a machine with a GPU (each a standalone
# .cu that prints what CUDA did; docs cite their output). PROBES: only these, by name.
# Logs: $OUT/probes/<name>.log.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
export PATH="/usr/local/cuda/bin:$PATH"
out="${OUT:-build-gpu/logs}/probes"
bin=build-gpu/probes
mkdir -p "$out" "$bin"
scripts/run-info.sh "$out" scripts/probes.sh "$@" # run.txt: commit, command, date, machine
arch="${CUDAARCHS:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d .)}"
arch="${arch:-90}"
names=()
for source in benchmark/probes/*.cu; do
  name=$(basename "$source" .cu)
  [ -n "${PROBES:-}" ] && [[ " $PROBES " != *" $name "* ]] && continue
  names+=("$name")
  nvcc -std=c++20 -O2 -arch="sm_$(echo "${arch%%[;-]*}")" -Iinclude -o "$bin/$name" "$source" \
    >"$out/$name.build.log" 2>&1 &
done
wait
for name in "${names[@]}"; do
  if [ ! -x "$bin/$name" ]; then
    echo "== $name: build failed"; tail -5 "$out/$name.build.log"; continue
  fi
  echo "== probe $name"
  timeout 120 "$bin/$name" 2>&1 | tee "$out/$name.log"
done
