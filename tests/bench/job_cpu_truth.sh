#!/usr/bin/env bash
# Job CPU against /proc, the 4-minute forms, for the head (build/) and a baseline, one after the
# other in one run (tests/bench/job_cpu_truth.py says what is measured).
#
#   tests/bench/job_cpu_truth.sh [BASELINE]      (from the checkout, after a build)
#
# BASELINE (default: none) is a build folder or a commit, as for every benchmark here
# (tests/bench/baseline.sh); its fjord-push is built beside its fjord. SECONDS_OF_WORK (240),
# INTERVAL (10), BACKEND (sqlite|postgres) and ONE_AT_A_TIME=1 are passed on.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
builds=(--build build)
if [ -n "${1:-}" ]; then
  . tests/bench/baseline.sh
  base=$(fj_baseline_build "$1")
  [ -x "$base/pusher/fjord-push" ] || cmake --build "$base" -j"$(nproc 2>/dev/null || echo 2)" --target fjord-push >/dev/null
  builds=(--build "$base" --build build)
fi
args=(--seconds "${SECONDS_OF_WORK:-240}" --interval "${INTERVAL:-10}" --backend "${BACKEND:-sqlite}")
[ -n "${ONE_AT_A_TIME:-}" ] && args+=(--one-at-a-time)
exec python3 tests/bench/job_cpu_truth.py "${builds[@]}" "${args[@]}"
