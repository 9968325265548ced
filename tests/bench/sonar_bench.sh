#!/usr/bin/env bash
# Sonar ingest benchmark: starts fjord (SQLite, temporary directory, 127.0.0.1), then
#  1. saturation: sonar_load as fast as acknowledgements come, for DURATION seconds;
#  2. fixed load: 500 envelopes/s for DURATION seconds, for ack latency at that rate;
# and prints envelopes/s, process records/s, p50/p99 ack latency, server CPU-seconds per 1,000
# envelopes and database bytes per process record.
#
#   tests/bench/sonar_bench.sh [DURATION] [CONNECTIONS]     (from the checkout, after a build)
#
# DB=postgres runs the same against PostgreSQL: a server of Debian's packages started in the
# temporary directory (tests/integration/pgserver.py, fsync and synchronous commit on, as in
# production); server CPU then counts fjord's and PostgreSQL's processes.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${BUILD:-$root/build}
duration=${1:-20}
conns=${2:-8}
template=${TEMPLATE:-$root/../shared/data/sonar/real/0+sample-ml1.hpc.uio.no.json}
cluster=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['data']['attributes']['cluster'])" "$template")

tmp=$(mktemp -d)
backend=${DB:-sqlite}
pgserver="$root/tests/integration/pgserver.py"
cleanup() {
  [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null
  [ "$backend" = postgres ] && python3 "$pgserver" stop "$tmp/pg"
  rm -rf "$tmp"
}
trap cleanup EXIT
db="$tmp/fjord.db"
if [ "$backend" = postgres ]; then
  chmod 755 "$tmp"
  admin=$(FJ_PG_DURABLE=1 python3 "$pgserver" start "$tmp/pg")
  psql -X -q -d "$admin" -c "CREATE DATABASE fjord_bench"
  db=${admin%/*}/fjord_bench
  postmaster=$(head -1 "$tmp/pg/data/postmaster.pid")
fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
secret=$("$build/fjord" token add "$cluster" --create --db "$db")
"$build/fjord" serve --db "$db" --listen "127.0.0.1:$port" --log-level warn &
pid=$!
sleep 0.5

# CPU ticks of fjord, plus PostgreSQL's postmaster and its children when it is the database.
cpu_of() {
  local t
  t=$(awk '{print $14 + $15}' "/proc/$1/stat")
  if [ "$backend" = postgres ]; then
    for p in $postmaster $(pgrep -P "$postmaster"); do
      t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0)))
    done
  fi
  echo "$t"
}
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
# The fixed-load phase continues after the saturation phase's envelopes: new data, not re-sends.
echo "at 500/s:   $(run --rate 500 --seq-start 100000000)"
kill -TERM "$pid"; wait "$pid" || true; pid=
if [ "$backend" = postgres ]; then
  psql -X -q -At -d "$db" -F ' ' -c "VACUUM" \
    -c "SELECT pg_database_size(current_database()), (SELECT count(*) FROM sample_procs)" |
    awk '{printf "database: %d bytes, %d process records, %.1f bytes per process record\n", $1, $2, $1 / ($2 ? $2 : 1)}'
  exit 0
fi
python3 - "$db" <<'PY'
import os, sqlite3, sys
db = sys.argv[1]
con = sqlite3.connect(db)
con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
procs = con.execute("SELECT count(*) FROM sample_procs").fetchone()[0]
size = os.path.getsize(db) + (os.path.getsize(db + "-wal") if os.path.exists(db + "-wal") else 0)
print("database: %d bytes, %d process records, %.1f bytes per process record" % (size, procs, size / max(procs, 1)))
PY
