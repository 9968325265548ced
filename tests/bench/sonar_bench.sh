#!/usr/bin/env bash
# Sonar ingest benchmark: starts fjord (SQLite, temporary directory, 127.0.0.1), then
#  1. saturation: sonar_load as fast as acknowledgements come, for DURATION seconds;
#  2. fixed load: 500 envelopes/s for DURATION seconds, for ack latency at that rate;
# and prints envelopes/s, process records/s, p50/p99 ack latency, server CPU-seconds per 1,000
# envelopes and database bytes per process record.
#
#   tests/bench/sonar_bench.sh [DURATION] [CONNECTIONS]     (from the checkout, after a build)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${BUILD:-$root/build}
duration=${1:-20}
conns=${2:-8}
template=${TEMPLATE:-$root/../shared/data/sonar/real/0+sample-ml1.hpc.uio.no.json}
cluster=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['data']['attributes']['cluster'])" "$template")

tmp=$(mktemp -d)
cleanup() { [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
secret=$("$build/fjord" token add "$cluster" --db "$tmp/fjord.db")
"$build/fjord" serve --db "$tmp/fjord.db" --listen "127.0.0.1:$port" --log-level warn &
pid=$!
sleep 0.5

cpu_of() { awk '{print $14 + $15}' "/proc/$1/stat"; }
ticks=$(getconf CLK_TCK)

run() { # mode-args...
  local c0 c1 out
  c0=$(cpu_of "$pid")
  out=$("$build/sonar_load" --port "$port" --secret "$secret" --template "$template" \
        --nodes 1000 --connections "$conns" --duration "$duration" "$@")
  c1=$(cpu_of "$pid")
  python3 - "$out" "$c0" "$c1" "$ticks" <<'PY'
import json, sys
r = json.loads(sys.argv[1]); cpu = (int(sys.argv[3]) - int(sys.argv[2])) / int(sys.argv[4])
r["server_cpu_s_per_1000_env"] = round(cpu / max(r["envelopes"], 1) * 1000, 3)
print(json.dumps(r))
PY
}

echo "saturation: $(run)"
echo "at 500/s:   $(run --rate 500)"
kill -TERM "$pid"; wait "$pid" || true; pid=
python3 - "$tmp/fjord.db" <<'PY'
import os, sqlite3, sys
db = sys.argv[1]
con = sqlite3.connect(db)
con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
procs = con.execute("SELECT count(*) FROM sample_procs").fetchone()[0]
size = os.path.getsize(db) + (os.path.getsize(db + "-wal") if os.path.exists(db + "-wal") else 0)
print("database: %d bytes, %d process records, %.1f bytes per process record" % (size, procs, size / max(procs, 1)))
PY
