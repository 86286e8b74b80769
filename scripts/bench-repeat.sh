#!/usr/bin/env bash
# The repeatability check of docs/benchmarks.md: scripts/bench.sh RUNS times (default 3) on one
# machine, into $OUT/run1 ... $OUT/runN (the build of the first run serves the others), then
# every ratio of the runs side by side with its spread: $OUT/runs.md (benchmark/plot.py
# --compare). A headline ratio should repeat within +-3%.
#
#   OUT=results scripts/bench-repeat.sh          # three runs
#   RUNS=2 CASES="bench_replay" scripts/bench-repeat.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
runs="${RUNS:-3}"
out="${OUT:-build-bench-gpu/repeat}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
scripts/run-info.sh "$out" scripts/bench-repeat.sh "$@" # and each run's folder has its own
status=0
dirs=()
for run in $(seq 1 "$runs"); do
  echo "bench-repeat.sh: run $run of $runs"
  OUT="$out/run$run" scripts/bench.sh >"$out/run$run.log" 2>&1 || status=1
  grep -E "^bench.sh: (done|.* exit [^0])" "$out/run$run.log"
  dirs+=("$out/run$run")
done
python3 benchmark/plot.py --compare "${dirs[@]}" >"$out/runs.md" || status=1
head -4 "$out/runs.md"
exit $status
