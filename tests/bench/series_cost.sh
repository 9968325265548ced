#!/usr/bin/env bash
# What new line-protocol series cost, in instructions (callgrind), which a shared machine does not
# blur as it does CPU time: each build's `fjord serve` runs under callgrind on a fresh SQLite
# database and takes one load of tests/bench/lp_load.c (NODES nodes x 519 series, HOURS of points a
# minute: every series new), then stops. Printed per build and new series: the instructions of the
# catalog's lookup (cat_find), of the quota (cat_admit) and of the series row's INSERT
# (sink_series) in storage/sqlite/ts.c, each with what it calls. (The whole process's count is left
# out: its idle threads' timers make it vary with the wall time valgrind takes.)
#
#   tests/bench/series_cost.sh [NODES] [HOURS]            (from the checkout, after a build)
#   BUILD=build-dir, BASELINE=REF-or-BUILD-DIR (tests/bench/baseline.sh): both are measured
#
# Needs valgrind and curl. 10 nodes and 1 hour (5,190 series, 311,400 points) take about a minute
# a build.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${BUILD:-$root/build}
. "$root/tests/bench/baseline.sh"
nodes=${1:-10}
hours=${2:-1}
series=$((nodes * 519))
tmp=$(mktemp -d)
pid=
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

measure() { # NAME FJORD
  local name=$1 fj=$2 port secret end out
  mkdir -p "$tmp/$name"
  secret=$(fj_token_add "$fj" fritz "$tmp/$name/f.db")
  port=$(fj_free_port)
  out="$tmp/$name/callgrind.out"
  valgrind --tool=callgrind --callgrind-out-file="$out" "$fj" serve --listen "127.0.0.1:$port" \
    --db "$tmp/$name/f.db" >"$tmp/$name/log" 2>&1 &
  pid=$!
  for _ in $(seq 600); do curl -s -o /dev/null "http://127.0.0.1:$port/api/v1/health" && break; sleep 0.1; done
  end=$(( $(date +%s) / 60 * 60 ))
  "$build/lp_load" --port "$port" --path "/api/write?cluster=fritz" --auth "Bearer $secret" --nodes "$nodes" \
    --hours "$hours" --start $((end - hours * 3600)) --connections 2 >"$tmp/$name/load.json"
  kill "$pid"
  wait "$pid" || true
  pid=
  callgrind_annotate --inclusive=yes --threshold=100 "$out" 2>/dev/null | python3 -c '
import re, sys
name, series = sys.argv[1], int(sys.argv[2])
text = sys.stdin.read()
cells = []
for fn in ("cat_find", "cat_admit", "sink_series"):
    m = re.search(r"^\s*([\d,]+) \([^)]*\)\s+\S*storage/sqlite/ts\.c:%s \[" % fn, text, re.M)
    cells.append("%d" % round(int(m.group(1).replace(",", "")) / series) if m else "-")
print("| %s | %s |" % (name, " | ".join(cells)))
' "$name" "$series"
}

echo "$nodes nodes x 519 series = $series new series, $hours h of points a minute"
echo
echo "| build | instructions per new series: cat_find | cat_admit | sink_series |"
echo "|---|---|---|---|"
measure fjord "$build/fjord"
if [ -n "${BASELINE:-}" ]; then
  measure "baseline $BASELINE" "$(fj_baseline_build "$BASELINE")/fjord"
fi
