#!/usr/bin/env bash
# Builds everything and runs the whole suite, the examples and (if built) the benchmarks on a
# machine with a GPU. Used on the H200 through the device tool; logs go to $OUT when set.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-build-gpu/logs}"
mkdir -p "$out"
scripts/run-info.sh "$out" scripts/gpu-suite.sh "$@" # run.txt: commit, command, date, machine
export PATH="/usr/local/cuda/bin:$PATH"
build=build-gpu
watch() { # what runs, every 60 s, so that a hang names its culprit
  while sleep 60; do
    { date +%T; ps -eo pid,etime,args --sort=start_time | grep -vE "ps -eo|sleep|grep" | tail -12; } >>"$out/ps.log"
  done
}
watch &
watcher=$!
trap 'kill $watcher 2>/dev/null' EXIT
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release ${CUDAARCHS:+-DCMAKE_CUDA_ARCHITECTURES=$CUDAARCHS} \
  -DGRAPHCAP_BUILD_BENCHMARKS="${GRAPHCAP_BUILD_BENCHMARKS:-OFF}" >"$out/configure.log" 2>&1 ||
  { tail -50 "$out/configure.log"; exit 1; }
SECONDS=0
# TARGETS (optional): build only these (a quick run); CTEST_ARGS: e.g. "-L gpu"; CTEST_JOBS:
# tests at once (default 8; the compile-fail tests are most of the time and use the CPUs).
targets=()
for target in ${TARGETS:-}; do targets+=(--target "$target"); done
timeout "${BUILD_TIMEOUT:-300}" cmake --build "$build" -j "$(nproc)" "${targets[@]}" -- -k 0 >"$out/build.log" 2>&1
built=$?
echo "build: status $built after ${SECONDS}s"
if [ $built -ne 0 ]; then # report, then test what did build
  grep -E "error|FAILED" -A5 "$out/build.log" | head -60
  tail -3 "$out/build.log"
  [ $built -eq 124 ] && tail -30 "$out/ps.log" 2>/dev/null
fi
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
SECONDS=0
( # a subshell: its exit is ctest's status, not this script's end
  echo "ctest started: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  cd "$build" && timeout "${TEST_TIMEOUT:-240}" ctest -j"${CTEST_JOBS:-8}" --output-on-failure --timeout 120 ${CTEST_ARGS:-}
  code=$?
  echo "ctest ended: $(date -u +%Y-%m-%dT%H:%M:%SZ), status $code"
  exit $code
) >"$out/ctest.log" 2>&1
status=$?
echo "ctest: status $status after ${SECONDS}s"
grep -E "Failed|Timeout|Exception|\*\*\*" "$out/ctest.log" | head -40
grep -E "tests passed" "$out/ctest.log"
# Skips by reason (docs/testing.md): a test that skips passes nothing. Each skipped test's own
# "SKIPPED: <why>" line (support/skip.hpp, support/main.cpp) comes from CTest's full log;
# skips.txt lists them test by test. Skips for want of devices (a test that needs more GPUs than
# the machine has, or none) are expected on a one-GPU machine; any other reason is listed apart.
last="$build/Testing/Temporary/LastTest.log"
if [ -f "$last" ]; then
  awk '/^[0-9]+\/[0-9]+ Test: / { name = $0; sub(/^[0-9]+\/[0-9]+ Test: /, "", name) }
       /^SKIPPED: / { why = $0; sub(/^SKIPPED: /, "", why); print name "\t" why }' "$last" |
    sort -u >"$out/skips.txt"
  devices=$(cut -f2 "$out/skips.txt" | grep -cE "this test needs [0-9]+ and was not run|a CUDA device is present")
  others=$(cut -f2 "$out/skips.txt" | grep -vcE "this test needs [0-9]+ and was not run|a CUDA device is present")
  echo "skipped: $((devices + others)) tests; $devices for want of devices (expected here), $others for another reason"
  cut -f2 "$out/skips.txt" | sort | uniq -c | sort -rn | sed -E 's/^ *([0-9]+) /  \1 x: /'
  [ "$others" -gt 0 ] && grep -vE "this test needs [0-9]+ and was not run|a CUDA device is present" "$out/skips.txt" | sed 's/^/  not evidence: /'
fi
# The soak in full (docs/reliability.md): a million replays and 100,000 capture/replay/destroy
# cycles per configuration; SOAK=0 skips it.
if [ "${SOAK:-1}" = 1 ] && [ -x "$build/test/soak_tests" ]; then
  GRAPHCAP_SOAK_SCALE=1 timeout 300 "$build/test/soak_tests" >"$out/soak.log" 2>&1
  soak=$?
  grep -E "^soak|passed|failed" "$out/soak.log"
  echo "soak: status $soak"
  [ $soak -eq 0 ] || status=1
fi
for example in "$build"/examples/example_*; do
  timeout 60 "$example" 2>&1 | tee -a "$out/examples.log"
done
# BENCHES (optional): run only these benchmarks, by name.
for bench in "$build"/benchmark/bench_*; do
  [ -n "${BENCHES:-}" ] && [[ " $BENCHES " != *" $(basename "$bench") "* ]] && continue
  [ -x "$bench" ] && OUT="$out" timeout 240 "$bench" 2>&1 | tee -a "$out/bench.log"
done
exit $status
