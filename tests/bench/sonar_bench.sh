#!/usr/bin/env bash
# Sonar ingest benchmark, every configuration in one run so that the figures share the machine's
# conditions: for each of
#   sqlite      fjord on SQLite (a file in a temporary directory),
#   postgres    fjord on PostgreSQL (a server of Debian's packages started in the temporary
#               directory by tests/integration/pgserver.py, fsync and synchronous commit on, as in
#               production),
#   postgres2   two fjord servers on one such PostgreSQL, each driven with half of the nodes,
# it starts fjord on 127.0.0.1 with an empty database, then
#  1. saturation: sonar_load as fast as acknowledgements come, for DURATION seconds;
#  2. fixed load: 500 envelopes/s for DURATION seconds (two servers: 250/s each), for ack latency;
# and prints envelopes/s, process records/s, p50/p99 ack latency, server CPU-seconds per 1,000
# envelopes (fjord's processes, plus all of PostgreSQL's) and database bytes per process record;
#  3. size: a fresh database, one server, the same 2,000 envelopes (100 nodes x 20 samples) on
#     every backend, and its bytes per process record: the whole database after VACUUM, what it
#     grew by over the empty one (fjord's schema; for PostgreSQL also the system catalogues every
#     database has, some 7 MB), and that again after VACUUM FULL (SQLite: VACUUM): the rows
#     without the space that updates left behind (a job's row is rewritten at every sample: in
#     20 samples of every job in 10 s, autovacuum has no time to hand that space to new rows);
# then a table of all of them.
#
#   tests/bench/sonar_bench.sh [DURATION] [CONNECTIONS]     (from the checkout, after a build)
#
# CONFIGS="sqlite postgres" picks configurations (default: all three; DB=postgres is the old
# spelling of CONFIGS=postgres). TABLES=1 also prints PostgreSQL's bytes per table. WARMUP=N first
# sends N envelopes (split among the servers, as fast as acknowledged, not measured), so that the
# phases measure what a running site sends, later samples of known nodes and running jobs, rather
# than an empty database's first samples (at 1,000 nodes, a 10 s saturation phase is some four
# samples a node, its first among them).
#
# BASELINE=REF-or-BUILD-DIR (tests/bench/baseline.sh: a commit, built once, or a build directory)
# runs every configuration a second time with the baseline's fjord, right after the head's, and
# ROUNDS=N repeats the pair N times (head, baseline, head, baseline, ...), so that both see the
# machine of the same minutes; the table then has a column per build and configuration and the
# ratio of the head's figures to the baseline's (their medians over the rounds). The load
# generator is the head's for both. docs/benchmarks.md names the baseline of record.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${BUILD:-$root/build}
. "$root/tests/bench/baseline.sh"
base_build=
[ -n "${BASELINE:-}" ] && base_build=$(fj_baseline_build "$BASELINE")
rounds=${ROUNDS:-1}
fjord=$build/fjord
duration=${1:-20}
conns=${2:-8}
template=${TEMPLATE:-$root/../shared/data/sonar/real/0+sample-ml1.hpc.uio.no.json}
cluster=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['data']['attributes']['cluster'])" "$template")
configs=${CONFIGS:-${DB:-sqlite postgres postgres2}}
pgserver="$root/tests/integration/pgserver.py"
ticks=$(getconf CLK_TCK)
nodes=1000

tmp=$(mktemp -d)
chmod 755 "$tmp"
pids=()
pgdir=
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [ -n "$pgdir" ] && python3 "$pgserver" stop "$pgdir"
  rm -rf "$tmp"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# CPU ticks of the fjord servers, plus PostgreSQL's postmaster and its children when it is the
# database.
cpu_ticks() {
  local t=0 p
  for p in "${pids[@]}"; do t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done
  if [ -n "$pgdir" ]; then
    local pm
    pm=$(head -1 "$pgdir/data/postmaster.pid")
    for p in $pm $(pgrep -P "$pm"); do
      t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0)))
    done
  fi
  echo "$t"
}

# One phase: a sonar_load per server (server i posts nodes i*N/k .. (i+1)*N/k-1), their figures
# summed (envelopes/s) or the worst taken (latency), and the servers' CPU per 1,000 envelopes.
# Args: phase name, then sonar_load options common to all servers.
phase() {
  local name=$1 c0 c1 i k=${#ports[@]} outs=()
  shift
  c0=$(cpu_ticks)
  for i in "${!ports[@]}"; do
    "$build/sonar_load" --port "${ports[$i]}" --secret "$secret" --template "$template" \
      --nodes $((nodes / k)) --node-offset $((i * nodes / k)) --connections $((conns / k)) \
      --duration "$duration" "$@" > "$tmp/load.$i" &
    outs+=($!)
  done
  for p in "${outs[@]}"; do wait "$p"; done
  c1=$(cpu_ticks)
  python3 - "$config" "$name" "$c0" "$c1" "$ticks" "$tmp"/load.* <<'PY' | tee -a "$tmp/results"
import json, sys
config, name, c0, c1, ticks = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
rs = [json.load(open(f)) for f in sys.argv[6:]]
r = {"config": config, "phase": name,
     "envelopes": sum(x["envelopes"] for x in rs),
     "envelopes_per_s": round(sum(x["envelopes_per_s"] for x in rs), 1),
     "process_records_per_s": sum(x["process_records_per_s"] for x in rs),
     "p50_ms": max(x["p50_ms"] for x in rs), "p99_ms": max(x["p99_ms"] for x in rs),
     "errors": sum(x["errors"] for x in rs)}
r["server_cpu_s_per_1000_env"] = round((c1 - c0) / ticks / max(r["envelopes"], 1) * 1000, 3)
print(json.dumps(r))
PY
  rm -f "$tmp"/load.*
}

# The bytes of database db on disk, after VACUUM (PostgreSQL: dead rows' space marked free for
# new rows, as autovacuum would) or a WAL checkpoint (SQLite). With "full": after rewriting it
# without free space (VACUUM FULL; SQLite's VACUUM), what the rows themselves take.
db_bytes() { # db [full]
  if [ -n "$pgdir" ]; then
    psql -X -q -At -d "$1" -c "VACUUM${2:+ FULL}" -c "SELECT pg_database_size(current_database())"
  else
    python3 - "$1" "${2:-}" <<'PY'
import os, sqlite3, sys
db = sys.argv[1]
con = sqlite3.connect(db)
if sys.argv[2]:
    con.execute("VACUUM")
con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
print(os.path.getsize(db) + (os.path.getsize(db + "-wal") if os.path.exists(db + "-wal") else 0))
PY
  fi
}

# Database bytes per process record of db (phase name $2), as a result line: the whole database,
# and what it grew by over the empty one ($3 bytes, fjord's schema and, for PostgreSQL, the
# system catalogues every database has).
size_of() { # db phase empty-bytes [full]
  local db=$1 name=$2 empty=$3 bytes procs
  bytes=$(db_bytes "$db" "${4:-}")
  if [ -n "$pgdir" ]; then
    procs=$(psql -X -q -At -d "$db" -c "SELECT count(*) FROM sample_procs")
  else
    procs=$(python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT count(*) FROM sample_procs").fetchone()[0])' "$db")
  fi
  python3 -c 'import json, sys
c, ph, b, e, p = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), max(int(sys.argv[5]), 1)
print(json.dumps({"config": c, "phase": ph, "bytes": b, "empty_bytes": e, "process_records": p,
                  "bytes_per_process_record": round(b / p, 1), "grown_bytes_per_process_record": round((b - e) / p, 1)}))' \
    "$config" "$name" "$bytes" "$empty" "$procs" | tee -a "$tmp/results"
  if [ -n "$pgdir" ]; then
    if [ -n "${TABLES:-}" ]; then
      psql -X -q -d "$db" -c "SELECT coalesce(p.relname, c.relname) AS tbl, sum(pg_total_relation_size(c.oid)) AS bytes
        FROM pg_class c LEFT JOIN pg_inherits i ON i.inhrelid = c.oid LEFT JOIN pg_class p ON p.oid = i.inhparent
        WHERE c.relkind = 'r' AND c.relnamespace = 'public'::regnamespace GROUP BY 1 ORDER BY 2 DESC LIMIT 12"
    fi
  fi
}

# A fresh database of configuration $config (its PostgreSQL server already started): its URL.
new_db() { # name
  if [ -n "$pgdir" ]; then
    psql -X -q -d "$admin" -c "CREATE DATABASE $1"
    echo "${admin%/*}/$1"
  else
    rm -f "$tmp/$1.db"*
    echo "$tmp/$1.db"
  fi
}

start_servers() { # db count
  local i
  secret=$(fj_token_add "$fjord" "$cluster" "$1")
  ports=()
  for ((i = 0; i < $2; i++)); do
    ports+=("$(free_port)")
    "$fjord" serve --db "$1" --listen "127.0.0.1:${ports[$i]}" --log-level warn &
    pids+=($!)
  done
  sleep 0.5
}

stop_servers() {
  for p in "${pids[@]}"; do kill -TERM "$p"; wait "$p" || true; done
  pids=()
}

bench() { # config, or config@baseline: the baseline's fjord (its results are labelled so)
  config=$1
  local kind=${1%@*} db servers=1
  [ "$kind" = postgres2 ] && servers=2
  case $kind in
    sqlite) ;;
    postgres|postgres2)
      pgdir="$tmp/pg"
      admin=$(FJ_PG_DURABLE=1 python3 "$pgserver" start "$pgdir") ;;
    *) echo "$0: unknown configuration $config" >&2; exit 2 ;;
  esac
  db=$(new_db fjord_bench)
  start_servers "$db" "$servers"
  empty=$(db_bytes "$db")
  echo "== $config ($servers fjord server(s), $duration s a phase, $conns connections, warm-up ${WARMUP:-0})"
  local warm=$((${WARMUP:-0} / servers)) i outs=()
  if [ "$warm" -gt 0 ]; then
    for i in "${!ports[@]}"; do
      "$build/sonar_load" --port "${ports[$i]}" --secret "$secret" --template "$template" \
        --nodes $((nodes / servers)) --node-offset $((i * nodes / servers)) --connections $((conns / servers)) \
        --envelopes "$warm" --duration 600 > /dev/null &
      outs+=($!)
    done
    for i in "${outs[@]}"; do wait "$i"; done
  fi
  phase saturation --seq-start "$warm"
  # The fixed-load phase continues after the saturation phase's envelopes: new data, not re-sends.
  phase "at 500/s" --rate $((500 / servers)) --seq-start 100000000
  stop_servers
  size_of "$db" "size after load" "$empty"
  # Bytes per process record of the same data on every backend: 100 nodes, 20 samples each (the
  # load phases store as many samples per node as the backend took, which weighs the job
  # bookkeeping of a node's first samples differently).
  if [ "$kind" != postgres2 ]; then
    db=$(new_db fjord_size)
    start_servers "$db" 1
    empty=$(db_bytes "$db")
    "$build/sonar_load" --port "${ports[0]}" --secret "$secret" --template "$template" --nodes 100 \
      --envelopes 2000 --connections "$conns" --duration 600 > /dev/null
    stop_servers
    size_of "$db" "size of 2000" "$empty"
    size_of "$db" "size of 2000, compacted" "$empty" full
  fi
  if [ -n "$pgdir" ]; then
    python3 "$pgserver" stop "$pgdir"
    pgdir=
  fi
}

for ((r = 0; r < rounds; r++)); do
  for c in $configs; do
    fjord=$build/fjord
    bench "$c"
    if [ -n "$base_build" ]; then
      fjord=$base_build/fjord
      bench "$c@baseline"
    fi
  done
done

python3 - "$tmp/results" "${BASELINE:-}" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
configs = list(dict.fromkeys(r["config"] for r in rows))
names = {"sqlite": "SQLite", "postgres": "PostgreSQL, 1 server", "postgres2": "PostgreSQL, 2 servers"}
def name(c):
    kind, _, tag = c.partition("@")
    return names.get(kind, kind) + (" (baseline %s)" % sys.argv[2] if tag else "")
def val(c, phase, key):
    # the median over the rounds
    vs = [r[key] for r in rows if r["config"] == c and r["phase"] == phase]
    return statistics.median(vs) if vs else None
def get(c, phase, key, fmt):
    v = val(c, phase, key)
    return "-" if v is None else fmt.format(v)
lines = [("envelopes/s at saturation", "saturation", "envelopes_per_s", "{:,.0f}"),
         ("server CPU-s per 1,000 envelopes (saturation)", "saturation", "server_cpu_s_per_1000_env", "{:.2f}"),
         ("p50 / p99 ack at saturation, ms", "saturation", None, None),
         ("achieved at 500/s offered", "at 500/s", "envelopes_per_s", "{:,.0f}"),
         ("p50 / p99 ack at 500/s offered, ms", "at 500/s", None, None),
         ("server CPU-s per 1,000 envelopes at 500/s", "at 500/s", "server_cpu_s_per_1000_env", "{:.2f}"),
         ("bytes per process record after the load phases", "size after load", "bytes_per_process_record", "{:.1f}"),
         ("bytes per process record, 100 nodes x 20 samples", "size of 2000", "bytes_per_process_record", "{:.1f}"),
         ("the same, growth over the empty database", "size of 2000", "grown_bytes_per_process_record", "{:.1f}"),
         ("the same, compacted (VACUUM FULL; SQLite VACUUM)", "size of 2000, compacted", "grown_bytes_per_process_record", "{:.1f}"),
         ("the empty database, bytes", "size of 2000", "empty_bytes", "{:,}")]
print()
print("| | " + " | ".join(name(c) for c in configs) + " |")
print("|---" * (len(configs) + 1) + "|")
for label, phase, key, fmt in lines:
    if key is None:
        cells = [get(c, phase, "p50_ms", "{:.1f}") + " / " + get(c, phase, "p99_ms", "{:.1f}") for c in configs]
    else:
        cells = [get(c, phase, key, fmt) for c in configs]
    print("| " + label + " | " + " | ".join(cells) + " |")
bases = [c for c in configs if c.endswith("@baseline")]
if bases:
    n = len([r for r in rows if r["config"] == bases[0] and r["phase"] == "saturation"])
    print()
    print("Head / baseline, medians of %d round(s) (envelopes/s: above 1 is faster; CPU, latency, bytes: "
          "below 1 is less):" % n)
    print()
    print("| | " + " | ".join(names.get(b.split("@")[0], b) for b in bases) + " |")
    print("|---" * (len(bases) + 1) + "|")
    for label, phase, key in [("envelopes/s at saturation", "saturation", "envelopes_per_s"),
                              ("server CPU-s per 1,000 envelopes (saturation)", "saturation", "server_cpu_s_per_1000_env"),
                              ("p99 ack at saturation", "saturation", "p99_ms"),
                              ("achieved at 500/s offered", "at 500/s", "envelopes_per_s"),
                              ("p99 ack at 500/s offered", "at 500/s", "p99_ms"),
                              ("server CPU-s per 1,000 envelopes at 500/s", "at 500/s", "server_cpu_s_per_1000_env"),
                              ("bytes per process record, 100 nodes x 20 samples", "size of 2000", "bytes_per_process_record")]:
        cells = []
        for b in bases:
            h, x = val(b.split("@")[0], phase, key), val(b, phase, key)
            cells.append("-" if h is None or not x else "%.2f" % (h / x))
        print("| " + label + " | " + " | ".join(cells) + " |")
PY
