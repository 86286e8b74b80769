#!/usr/bin/env bash
# Writes <folder>/run.txt: what a stored run ran at, so that a reader can trace its figures (#50).
#
#   scripts/run-info.sh FOLDER COMMAND...   # e.g. scripts/run-info.sh "$out" "$0" "$@"
#
# Lines: the commit ($GRAPHCAP_COMMIT when set: pass it on the device machine, whose copy may
# have no .git or a stale one; else git rev-parse HEAD; else "unknown"), whether tracked files differ from it, the command line
# with the settings from the environment that change what runs, the UTC date, the host name and
# the GPUs (nvidia-smi: name and driver). Called by gpu-suite.sh, bench.sh, bench-repeat.sh,
# probes.sh and sanitize.sh at their start.
set -uo pipefail
folder=$1
shift
root="$(cd "$(dirname "$0")/.." && pwd)"
mkdir -p "$folder"
commit="${GRAPHCAP_COMMIT:-unknown (no .git, no GRAPHCAP_COMMIT)}"
changes=unknown
if [ -n "${GRAPHCAP_COMMIT:-}" ]; then
  # Given: it wins, since the device machine's copy may carry a .git of an older commit (seen in
  # session 17: its HEAD was the session's first commit while the tree was hours newer).
  changes="not known (the commit is GRAPHCAP_COMMIT's)"
elif [ -e "$root/.git" ] && head=$(git -C "$root" rev-parse HEAD 2>/dev/null); then
  commit=$head
  if git -C "$root" diff --quiet HEAD -- 2>/dev/null; then changes=none; else changes="tracked files differ from the commit"; fi
fi
settings=()
for name in TARGETS CTEST_ARGS SOAK BENCHES GRAPHCAP_BUILD_BENCHMARKS CASES BENCH_SCALE \
  BENCH_MIN_SECONDS BENCH_WARM_SECONDS CASE_TIMEOUT RUNS PROBES TOOLS BINARIES SKIP_BUILD JOBS \
  NVTX_SUITE GRAPHCAP_STRESS_SCALE CUDAARCHS PYTORCH CTEST_JOBS BENCH_BUILD_DIR; do
  [ -n "${!name:-}" ] && settings+=("$name=${!name}")
done
{
  echo "commit: $commit"
  echo "local changes: $changes"
  echo "command: ${settings[*]:+${settings[*]} }$*"
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(hostname 2>/dev/null || uname -n)"
  gpus=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null)
  echo "gpu: ${gpus:-none (no nvidia-smi)}" | sed '2,$s/^/gpu: /'
} >"$folder/run.txt"
