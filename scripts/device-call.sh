#!/usr/bin/env bash
# One device call that does the most a short lease allows (docs/gpu-runs.md): the whole suite
# with the benchmarks built beside the tests (scripts/gpu-suite.sh), then the benchmark cases in
# the order of PRIORITY until DEADLINE seconds from the start (scripts/bench.sh on the same
# build), then PROBES (scripts/probes.sh) if time is left; everything under $OUT/r, packed into
# $OUT/r.tgz (the device tool brings back a few files only).
#
#   GRAPHCAP_COMMIT=abc1234 scripts/device-call.sh              # suite, benchmarks, no probes
#   SUITE=0 RUN=2 GRAPHCAP_COMMIT=abc1234 scripts/device-call.sh  # a second benchmark run only
#
# SUITE=0 skips the suite (the benchmarks are built by bench.sh then); RUN names the benchmark
# run's folder (bench-run$RUN); DEADLINE (default 570) leaves time to pack within a 600 s call.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
start=$SECONDS
deadline="${DEADLINE:-570}"
out="${OUT:?OUT must be set}/r"
mkdir -p "$out"
export CUDAARCHS="${CUDAARCHS:-90}" SOAK="${SOAK:-0}"
left() { echo $((deadline - (SECONDS - start))); }
pack() {
  (cd "$out/.." && tar czf r.tgz r && rm -rf r)
}
trap pack EXIT

priority="${PRIORITY:-bench_features bench_build bench_families bench_family_memory bench_sleep \
bench_decode_step bench_replay bench_annotations bench_loops bench_liveness bench_verify \
bench_piecewise bench_rebind bench_update bench_step bench_pools bench_device}"

bench_args=()
if [ "${SUITE:-1}" = 1 ]; then
  GRAPHCAP_BUILD_BENCHMARKS=ON BENCHES=none CTEST_JOBS="${CTEST_JOBS:-16}" OUT="$out/suite" \
    timeout "$(left)" scripts/gpu-suite.sh >"$out/suite-out.txt" 2>&1
  echo "device-call: suite status $? at $((SECONDS - start)) s" | tee -a "$out/suite-out.txt"
  bench_args=(SKIP_BUILD=1 BENCH_BUILD_DIR=build-gpu)
fi
if [ "$(left)" -gt 40 ]; then
  env "${bench_args[@]}" PYTORCH="${PYTORCH:-0}" CASES="$priority" OUT="$out/bench-run${RUN:-1}" \
    timeout "$(($(left) - 15))" scripts/bench.sh >"$out/bench-out.txt" 2>&1
  echo "device-call: bench status $? at $((SECONDS - start)) s" | tee -a "$out/bench-out.txt"
fi
if [ -n "${PROBES:-}" ] && [ "$(left)" -gt 30 ]; then
  OUT="$out" timeout "$(left)" scripts/probes.sh >"$out/probes-out.txt" 2>&1
  echo "device-call: probes status $? at $((SECONDS - start)) s" | tee -a "$out/probes-out.txt"
fi
tail -25 "$out/suite-out.txt" 2>/dev/null
grep -E "^bench.sh: " "$out/bench-out.txt" 2>/dev/null | tail -25
