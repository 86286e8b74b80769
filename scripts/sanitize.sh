#!/usr/bin/env bash
# compute-sanitizer over graphcap's GPU tests, in one command, on a machine with a GPU:
#
#   scripts/sanitize.sh
#
# Builds the gpu_tests target (reusing build-gpu, which scripts/gpu-suite.sh makes), then runs
# every GPU test binary (all its test cases in one process) under each tool:
#   memcheck --leak-check full   out-of-bounds and misaligned accesses, leaks of device memory
#   racecheck                    shared-memory data races
#   synccheck                    invalid uses of __syncthreads and friends
#   initcheck                    reads of uninitialized device memory (only when named in TOOLS)
# CUDA API errors are not reported (--report-api-errors no): the tests provoke them on purpose,
# and graphcap's replay relies on CUDA refusing a null executable graph.
#
# Logs: $OUT/sanitize/<tool>/<binary>.log (the sanitizer) and .out (the test's own output);
# $OUT/sanitize/summary.txt has one line per tool, also printed. Exit status 0 when every tool
# reports 0 errors and no run crashed or timed out. Test failures under a tool are listed but
# do not count: tests that use CUPTI (annotations) degrade when the sanitizer holds CUPTI, and
# device-wide memory measurements move with the sanitizer's own allocations.
#
# Environment: BUILD_DIR (build-gpu); BINARIES (only these test binaries, by name); SKIP_BUILD
# (set: run the binaries already built); TOOLS
# ("memcheck racecheck synccheck"); JOBS (parallel runs, 6); RUN_TIMEOUT (seconds per run, 300);
# TOTAL_TIMEOUT (seconds for all runs, 420: a run that would start later is reported as not
# run); GRAPHCAP_STRESS_SCALE (the stress tests' size, 1); NVTX_SUITE (set: also the GPU tests
# built with the NVTX regions, under memcheck --nvtx yes). Binaries that measure device-wide
# memory, and those whose kernels set a conditional node's condition (SERIAL: memory_growth_tests
# stress_tests control_flow_kernel_tests control_flow_annotation_kernel_tests
# device_loop_kernel_tests) run one at a time, after the others: with several memcheck processes on
# one GPU, a WHILE node whose body kernel calls cudaGraphSetConditional stops with
# cudaErrorIllegalAddress, graphcap or not (a hand-written one in 6 of 6 runs at once; alone, and
# without the tool 8 at once, it passes: docs/reliability.md, session 10).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
export PATH="/usr/local/cuda/bin:$PATH"
out="${OUT:-build-gpu/logs}/sanitize"
build="${BUILD_DIR:-build-gpu}"
tools="${TOOLS:-memcheck racecheck synccheck}"
jobs="${JOBS:-6}"
serial="${SERIAL:-memory_growth_tests stress_tests control_flow_kernel_tests control_flow_annotation_kernel_tests device_loop_kernel_tests}"
export RUN_TIMEOUT="${RUN_TIMEOUT:-300}"
mkdir -p "$out"
scripts/run-info.sh "$out" scripts/sanitize.sh "$@" # run.txt: commit, command, date, machine
command -v compute-sanitizer >/dev/null || { echo "compute-sanitizer not found" >&2; exit 1; }

SECONDS=0
if [ -n "${SKIP_BUILD:-}" ]; then # use the binaries as they are
  :
elif [ -f "$build/CMakeCache.txt" ]; then
  cmake "$build" >"$out/configure.log" 2>&1
else
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release ${CUDAARCHS:+-DCMAKE_CUDA_ARCHITECTURES=$CUDAARCHS} \
    >"$out/configure.log" 2>&1
fi || { tail -30 "$out/configure.log"; exit 1; }
if [ -z "${SKIP_BUILD:-}" ]; then
  timeout "${BUILD_TIMEOUT:-300}" cmake --build "$build" --target gpu_tests nvtx_overrun -j "$(nproc)" \
    >"$out/build.log" 2>&1 || { grep -E "error|FAILED" -A5 "$out/build.log" | head -40; exit 1; }
  echo "build: ${SECONDS}s"
fi

# One run: the binary under the tool. Writes "<status>" to <binary>.status.
run_one() {
  local tool=$1 binary=$2
  local name
  name=$(basename "$binary")
  local log="$OUT_DIR/$tool/$name"
  local options=(--tool "$tool" --report-api-errors no --log-file "$log.log")
  [ "$tool" = memcheck ] && options+=(--leak-check full)
  local start=$SECONDS
  local left=$((DEADLINE - $(date +%s)))
  if [ "$left" -le 0 ]; then
    echo "not run: out of time" >"$log.status"
    return
  fi
  timeout "$((left < RUN_TIMEOUT ? left : RUN_TIMEOUT))" compute-sanitizer "${options[@]}" \
    "$binary" >"$log.out" 2>&1
  echo $? >"$log.status"
  echo "$tool $name: status $(cat "$log.status") after $((SECONDS - start))s"
}
export -f run_one
export OUT_DIR="$out"

mapfile -t binaries <"$build/gpu_test_binaries.txt"
if [ -n "${BINARIES:-}" ]; then # only these (names, space-separated): a second pass, say
  selected=()
  for binary in "${binaries[@]}"; do
    [[ " $BINARIES " == *" $(basename "$binary") "* ]] && selected+=("$binary")
  done
  binaries=("${selected[@]}")
fi
parallel_binaries=()
serial_binaries=()
for binary in "${binaries[@]}"; do
  if [[ " $serial " == *" $(basename "$binary") "* ]]; then
    serial_binaries+=("$binary")
  else
    parallel_binaries+=("$binary")
  fi
done

SECONDS=0
export DEADLINE=$(($(date +%s) + ${TOTAL_TIMEOUT:-420})) # the runs' share of a 10-minute command
for tool in $tools; do
  mkdir -p "$out/$tool"
  rm -f "$out/$tool"/*.status
done
for tool in $tools; do
  for binary in "${parallel_binaries[@]}"; do
    printf '%s\n%s\n' "$tool" "$binary"
  done
done | xargs -d '\n' -n 2 -P "$jobs" bash -c 'run_one "$@"' _ >"$out/runs.log"
for tool in $tools; do
  for binary in "${serial_binaries[@]}"; do
    run_one "$tool" "$binary" >>"$out/runs.log"
  done
done
echo "sanitizer runs: ${SECONDS}s"

# The summary: errors per tool from the sanitizer's own summary line, and what else went wrong.
# Exit code 77 is a binary that did not run for want of devices (test/support/main.cpp), or one
# in which some test cases skipped (GCTEST_SKIP: CUPTI is held by the tool); the latter ran, and
# its sanitizer errors count.
device_skip() { grep -qE "SKIPPED: .*this test needs [0-9]+ and was not run" "$1" 2>/dev/null; }
status=0
: >"$out/summary.txt"
for tool in $tools; do
  errors=0 ran=0 skipped=0 broken=() failed=() tool_errors=()
  for binary in "${binaries[@]}"; do
    name=$(basename "$binary")
    log="$out/$tool/$name"
    code=$(cat "$log.status" 2>/dev/null || echo missing)
    if [ "$code" = 77 ] && device_skip "$log.out"; then
      skipped=$((skipped + 1))
      continue
    fi
    ran=$((ran + 1))
    # memcheck, synccheck, initcheck: "ERROR SUMMARY: N errors"; racecheck: "RACECHECK
    # SUMMARY: N hazards displayed (E errors, W warnings)".
    found=$(grep -hoE "ERROR SUMMARY: [0-9]+ error|\([0-9]+ errors?," "$log.log" 2>/dev/null |
      grep -oE "[0-9]+" | tail -1)
    if [ -z "$found" ]; then
      broken+=("$name(status $code, no summary)")
      continue
    fi
    # The tool's own failures ("Internal Sanitizer Error: ...") are counted in its summary as
    # errors but say nothing of the program: reported apart, not as findings.
    internal=$(grep -c "Internal Sanitizer Error" "$log.log" 2>/dev/null)
    found=$((found - internal))
    [ "$internal" -gt 0 ] && tool_errors+=("$name($internal)")
    errors=$((errors + found))
    [ "$found" -gt 0 ] && broken+=("$name($found errors)")
    case "$code" in
    0 | 77) ;; # 77 here: test cases that skipped (GCTEST_SKIP, CUPTI held by the tool)
    124 | 137) broken+=("$name(timed out)") ;;
    *) failed+=("$name") ;;
    esac
  done
  line="$tool: $errors errors; $ran binaries ran, $skipped skipped (exit 77)"
  [ ${#broken[@]} -gt 0 ] && line+="; problems: ${broken[*]}" && status=1
  [ ${#failed[@]} -gt 0 ] && line+="; test failures under the tool: ${failed[*]}"
  [ ${#tool_errors[@]} -gt 0 ] && line+="; the tool's own internal errors: ${tool_errors[*]}"
  echo "$line" | tee -a "$out/summary.txt"
done

# The NVTX regions at work: a write one element past a pool block, inside its slab, must be
# reported by memcheck as an invalid write with the regions (--nvtx yes) and not without them
# (the slab is one allocation), and compute-sanitizer must accept every registration.
if [ -x "$build/test/pool/nvtx_overrun" ]; then
  compute-sanitizer --tool memcheck --nvtx yes "$build/test/pool/nvtx_overrun" >"$out/nvtx_overrun.log" 2>&1
  compute-sanitizer --tool memcheck --nvtx no "$build/test/pool/nvtx_overrun" >"$out/nvtx_overrun_without.log" 2>&1
  with=$(grep -c "Invalid __global__ write" "$out/nvtx_overrun.log")
  without=$(grep -c "Invalid __global__ write" "$out/nvtx_overrun_without.log")
  rejected=$(grep -c "Call to nvtxMem[A-Za-z]* failed" "$out/nvtx_overrun.log")
  line="nvtx regions (GRAPHCAP_NVTX_REGIONS): a write past a pool block in each of 2 graphs: $with invalid writes reported with --nvtx yes, $without without; $rejected NVTX calls rejected"
  if [ "$with" -gt 0 ] && [ "$without" -eq 0 ] && [ "$rejected" -eq 0 ]; then
    line+=" (caught)"
  else
    line+=" (NOT caught)"
    status=1
  fi
  echo "$line" | tee -a "$out/summary.txt"
fi

# NVTX_SUITE=1: the GPU tests again, built with the regions (-DGRAPHCAP_TEST_NVTX_REGIONS=ON, in
# $build-nvtx), under memcheck --nvtx yes: no error, and no registration rejected.
if [ -n "${NVTX_SUITE:-}" ]; then
  nvtx_build="$build-nvtx"
  cmake -S . -B "$nvtx_build" -G Ninja -DCMAKE_BUILD_TYPE=Release ${CUDAARCHS:+-DCMAKE_CUDA_ARCHITECTURES=$CUDAARCHS} \
    -DGRAPHCAP_TEST_NVTX_REGIONS=ON -DGRAPHCAP_BUILD_EXAMPLES=OFF >"$out/configure-nvtx.log" 2>&1 &&
    timeout "${BUILD_TIMEOUT:-300}" cmake --build "$nvtx_build" --target gpu_tests -j "$(nproc)" \
      >"$out/build-nvtx.log" 2>&1 || { echo "nvtx build failed"; tail -20 "$out/build-nvtx.log"; exit 1; }
  mkdir -p "$out/memcheck-nvtx"
  export NVTX_OUT="$out/memcheck-nvtx"
  run_nvtx() {
    local binary=$1 name
    name=$(basename "$binary")
    timeout "$RUN_TIMEOUT" compute-sanitizer --tool memcheck --nvtx yes --report-api-errors no \
      --log-file "$NVTX_OUT/$name.log" "$binary" >"$NVTX_OUT/$name.out" 2>&1
    echo $? >"$NVTX_OUT/$name.status"
  }
  export -f run_nvtx
  grep -v -E "/(memory_growth_tests|stress_tests)$" "$nvtx_build/gpu_test_binaries.txt" |
    xargs -d '\n' -n 1 -P "$jobs" bash -c 'run_nvtx "$@"' _
  errors=0 rejected=0 ran=0 problems=()
  for log in "$NVTX_OUT"/*.log; do
    name=$(basename "$log" .log)
    code=$(cat "$NVTX_OUT/$name.status")
    [ "$code" = 77 ] && device_skip "$NVTX_OUT/$name.out" && continue
    ran=$((ran + 1))
    found=$(grep -oE "ERROR SUMMARY: [0-9]+" "$log" | grep -oE "[0-9]+$")
    refused=$(grep -c "Call to nvtxMem[A-Za-z]* failed" "$log")
    errors=$((errors + ${found:-0}))
    rejected=$((rejected + refused))
    [ -z "$found" ] && problems+=("$name(no summary, status $code)")
    [ "${found:-0}" -gt 0 ] && problems+=("$name(${found} errors)")
  done
  line="memcheck --nvtx yes over the GPU tests built with the regions: $errors errors, $rejected NVTX calls rejected; $ran binaries ran"
  [ ${#problems[@]} -gt 0 ] && line+="; problems: ${problems[*]}" && status=1
  echo "$line" | tee -a "$out/summary.txt"
fi
exit $status
