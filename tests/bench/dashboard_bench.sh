#!/usr/bin/env bash
# Dashboard rendering benchmark (not a test): the query benchmark's database (tests/bench/api_bench.sh
# builds it with api_gen; DAYS=14 gives about 10,000 jobs), a fjord on it, and web/e2e/bench.mjs
# timing every view in headless Chromium (the job list and its pages, the node grid, the 64-node
# job's profile, clusters, a node, problems, uptime, errors, Chimbuko), each split into its API
# calls' time and the browser's.
#
#   tests/bench/dashboard_bench.sh [DB] [REPEATS]    (after a build and `npm ci` in web/)
#
# DB defaults to /tmp/fjord-api-bench.db; it is generated when missing (NODES, DAYS as api_bench.sh).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${BUILD:-$root/build}
db=${1:-/tmp/fjord-api-bench.db}
repeats=${2:-5}
if [ ! -s "$db.json" ] || [ ! -s "$db" ]; then
  rm -f "$db" "$db-wal" "$db-shm"
  "$build/api_gen" --db "$db" --nodes "${NODES:-1000}" --days "${DAYS:-14}" > "$db.json"
fi
"$build/fjord" migrate up --db "$db" >/dev/null
# a read-only credential of the benchmark's own (added once)
secret_file="$db.reader"
if [ ! -s "$secret_file" ]; then
  "$build/fjord" token add dashboard-bench --read-only --db "$db" > "$secret_file"
fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$build/fjord" serve --db "$db" --listen "127.0.0.1:$port" --log-level warn &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  python3 -c "import socket; socket.create_connection(('127.0.0.1',$port),0.2)" 2>/dev/null && break
  sleep 0.1
done
FJ_URL="http://127.0.0.1:$port" FJ_READER=$(cat "$secret_file") GEN_JSON=$(tail -1 "$db.json") REPEATS=$repeats \
  node "$root/web/e2e/bench.mjs"
