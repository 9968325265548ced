#!/usr/bin/env bash
# Query benchmark (not a test): builds (once) a synthetic database of a 1,000-node cluster sampled
# every 5 minutes for 7 days through fjord's write path (api_gen), starts fjord on it, and prints
# the median latency of the analysts' queries (api_bench.py). Figures go to docs/benchmarks.md.
#
#   tests/bench/api_bench.sh [DB] [REPEATS]     (from the checkout, after a build)
#
# DB defaults to /tmp/fjord-api-bench.db and is kept for later runs (about 2 GB; delete it to
# regenerate). BUILD selects the build directory (default build); NODES and DAYS shrink the data.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${BUILD:-$root/build}
db=${1:-/tmp/fjord-api-bench.db}
repeats=${2:-15}
nodes=${NODES:-1000}
days=${DAYS:-7}

if [ ! -s "$db.json" ] || [ ! -s "$db" ]; then
  rm -f "$db" "$db-wal" "$db-shm"
  echo "generating $db ($nodes nodes, $days days)..." >&2
  start=$(date +%s)
  "$build/api_gen" --db "$db" --nodes "$nodes" --days "$days" > "$db.json"
  echo "generated in $(( $(date +%s) - start )) s: $(tail -1 "$db.json")" >&2
  python3 - "$db" <<'PY'
import os, sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
counts = {t: con.execute("SELECT count(*) FROM %s" % t).fetchone()[0]
          for t in ("samples", "sample_jobs", "sample_procs", "jobs", "job_samples", "slurm_jobs")}
print("rows: %s; %.2f GB" % (counts, os.path.getsize(sys.argv[1]) / 1e9), file=sys.stderr)
PY
fi

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$build/fjord" serve --db "$db" --listen "127.0.0.1:$port" --dev-mode --log-level warn &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  python3 -c "import socket,sys; socket.create_connection(('127.0.0.1',$port),0.2)" 2>/dev/null && break
  sleep 0.1
done
python3 "$root/tests/bench/api_bench.py" "$port" "$db.json" "$repeats"
