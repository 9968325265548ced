#!/usr/bin/env bash
# pusher_bench.sh — CPU time and peak RSS per sample of fjord-push with 8 (fake) GPUs and no
# process collection. Not a test: it prints figures to compare with the targets
# (< 2 ms CPU per sample, < 8 MB RSS). Usage: tests/bench/pusher_bench.sh [BUILD_DIR] [SAMPLES]
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build-push}
n=${2:-2000}
bench=$build/pusher/pusher_bench
fake=$build/pusher/fake_nvml/libnvidia-ml.so.1
bin=$build/pusher/fjord-push
for f in "$bench" "$fake" "$bin"; do
  [ -e "$f" ] || { echo "missing $f: build with cmake --build $build" >&2; exit 1; }
done
export FJ_FAKE_NVML="gpus 8"
echo "== steady state: one collector, $n samples (8 GPUs, processes=none, JSON + zstd) on this machine's /proc"
"$bench" "$n" --nvml-library "$fake" --processes none --amd=false --cluster bench --node bench-node
echo
echo "== the whole program once: fjord-push --once --stdout --only sample (startup included)"
if command -v /usr/bin/time >/dev/null 2>&1; then
  /usr/bin/time -f "cpu_ms_total %e elapsed; user %U s, sys %S s; peak_rss_kb %M" \
    "$bin" --once --stdout --only sample --nvml-library "$fake" --processes none --amd=false >/dev/null
else
  python3 - "$bin" "$fake" <<'PY'
import resource, subprocess, sys
subprocess.run([sys.argv[1], "--once", "--stdout", "--only", "sample", "--nvml-library", sys.argv[2],
                "--processes", "none", "--amd=false"], stdout=subprocess.DEVNULL, check=True)
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"cpu_ms_total {1000 * (ru.ru_utime + ru.ru_stime):.2f}\npeak_rss_kb {ru.ru_maxrss}")
PY
fi
