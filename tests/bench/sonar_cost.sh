#!/usr/bin/env bash
# What a Sonar sample envelope costs the SQLite writer, in instructions (callgrind), which a shared
# machine does not blur as it does CPU time. Each build's `fjord serve` runs under callgrind on a
# fresh SQLite database; tests/bench/sonar_load.c sends WARM envelopes (1,000 nodes: every node's
# jobs and processes known), the counters are zeroed, N more are sent (2 connections) and counted.
# Printed per build: instructions per envelope of the writer's transaction work (fj_sq_write,
# with everything it calls) and of the request threads (decoding, authentication, the answer:
# libmicrohttpd's handler), and the head's ratio to the baseline. (The whole process's count is
# left out: its idle threads' timers make it vary with the wall time valgrind takes.)
#
#   tests/bench/sonar_cost.sh [WARM] [N]                  (from the checkout, after a build)
#   BUILD=build-dir, BASELINE=REF-or-BUILD-DIR (tests/bench/baseline.sh): both are measured
#
# Needs valgrind and curl. 1,200 and 800 (the defaults) take about two minutes a build. Fewer
# instructions are not always less time (a hash look-up that misses the cache costs more than
# its count), so the Sonar benchmark (sonar_bench.sh) stays the measure of record.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${BUILD:-$root/build}
. "$root/tests/bench/baseline.sh"
warm=${1:-1200}
n=${2:-800}
template=$root/../shared/data/sonar/real/0+sample-ml1.hpc.uio.no.json
tmp=$(mktemp -d)
pid=
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

measure() { # NAME FJORD -> prints "writer request" instructions per envelope
  local name=$1 fj=$2 port secret out dump
  mkdir -p "$tmp/$name"
  secret=$(fj_token_add "$fj" mlx.hpc.uio.no "$tmp/$name/f.db")
  port=$(fj_free_port)
  out="$tmp/$name/callgrind.out"
  valgrind --tool=callgrind --callgrind-out-file="$out" "$fj" serve --listen "127.0.0.1:$port" \
    --db "$tmp/$name/f.db" --log-level warn >"$tmp/$name/log" 2>&1 &
  pid=$!
  for _ in $(seq 600); do curl -s -o /dev/null "http://127.0.0.1:$port/api/v1/health" && break; sleep 0.1; done
  "$build/sonar_load" --port "$port" --secret "$secret" --template "$template" --nodes 1000 --connections 2 \
    --envelopes "$warm" --duration 3600 >/dev/null
  callgrind_control -z "$pid" >/dev/null 2>&1
  "$build/sonar_load" --port "$port" --secret "$secret" --template "$template" --nodes 1000 --connections 2 \
    --envelopes $((warm + n)) --seq-start "$warm" --duration 3600 >"$tmp/$name/load.json"
  callgrind_control -d "$pid" >/dev/null 2>&1
  kill "$pid"
  wait "$pid" || true
  pid=
  dump=$(ls -S "$out".* | head -1)
  callgrind_annotate --inclusive=yes --threshold=100 "$dump" 2>/dev/null | python3 -c '
import re, sys
n = int(sys.argv[1])
text = sys.stdin.read()
def inclusive(fn):
    m = re.search(r"^\s*([\d,]+) \([^)]*\)\s+\S*:%s \[" % fn, text, re.M)
    return int(m.group(1).replace(",", "")) / n if m else float("nan")
print("%.0f %.0f" % (inclusive("fj_sq_write"), inclusive("on_request")))
' "$n"
}

echo "$warm envelopes to warm up, then $n counted (1,000 nodes, the ml1 template: ~107 processes, 52 jobs)"
echo
echo "| build | writer instructions / envelope | request threads / envelope |"
echo "|---|---|---|"
read -r hw hr < <(measure head "$build/fjord")
echo "| head | $hw | $hr |"
if [ -n "${BASELINE:-}" ]; then
  read -r bw br < <(measure baseline "$(fj_baseline_build "$BASELINE")/fjord")
  echo "| baseline $BASELINE | $bw | $br |"
  python3 -c 'import sys; hw, hr, bw, br = map(float, sys.argv[1:]); print("| head / baseline | %.3f | %.3f |" % (hw / bw, hr / br))' "$hw" "$hr" "$bw" "$br"
fi
