#!/usr/bin/env bash
# History benchmark (not a test): how fjord's costs grow with the length of the history it keeps.
# For each backend and each history length (days), it builds the same site from scratch through
# the writers' own code in process (tests/bench/api_gen.c: NODES Sonar nodes sampled every 5
# minutes with api_gen's Slurm jobs and their Slurm records, and LP_NODES ClusterCockpit nodes'
# node-level metrics every 60 s through the metrics engine's writer), so that every roll-up is the
# writers' own, and then, at the end of that history:
#  - checks the writers' hourly load roll-ups of 12 node-hours against the raw samples
#    (history_bench.py rollups);
#  - starts a real fjord on it and sends a tail over HTTP: Sonar envelopes (sonar_load, the
#    real-envelope template's cluster, TAIL envelopes from 100 nodes) and line protocol
#    (lp_load, continuing the ClusterCockpit nodes' series for LP_HOURS h from the history's
#    end): the ingest rates of a running site with that much history;
#  - runs the analysts' queries of api_bench.py (bounded windows) and those of history_bench.py
#    (over the whole history, and the InfluxQL Grafana panel query), REPEATS times each;
#  - stops it and records the bytes per table (SQLite: dbstat; PostgreSQL: pg_total_relation_size);
#  - times a backup (`fjord backup` on SQLite, pg_dump -Fc on PostgreSQL) and, on a copy, the
#    statement of a schema change adding a column with a default to the largest table (run by
#    sqlite3/psql: fjord's migrations are compiled into the binary, so a throwaway one cannot be
#    given to `fjord migrate up` without a second build; the statement is all such a migration
#    would run);
#  - restarts fjord with a retention that expires the history's first 30 days and times the
#    deletion until the horizon is recorded (retention_marks).
# Prints every figure as a JSON line and at the end a table per backend, lengths side by side.
#
#   tests/bench/history_bench.sh [DAYS...]     (from the checkout, after a build; default 7 30 91 365)
#
# BACKENDS="sqlite postgres" (default both), NODES (100), LP_NODES (10), REPEATS (5), TAIL (3000
# Sonar envelopes), LP_HOURS (1), KEEP=DIR keeps the databases (SQLite files) in DIR, BUILD the
# build directory, RETENTION=0 leaves out the retention step (it runs at retention's own pace, some
# minutes a month of data on SQLite). Generation takes about (days x NODES / 100) x the per-day time printed as
# "gen_s"; docs/benchmarks.md has the figures of the lengths run and the projection for a year.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${BUILD:-$root/build}
. "$root/tests/bench/baseline.sh"
lengths=${*:-7 30 91 365}
backends=${BACKENDS:-sqlite postgres}
nodes=${NODES:-100}
lp_nodes=${LP_NODES:-10}
repeats=${REPEATS:-5}
tail_envs=${TAIL:-3000}
lp_hours=${LP_HOURS:-1}
fjord=$build/fjord
pgserver="$root/tests/integration/pgserver.py"
template=$root/../shared/data/sonar/real/0+sample-ml1.hpc.uio.no.json
tcluster=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['data']['attributes']['cluster'])" "$template")
tmp=$(mktemp -d)
chmod 755 "$tmp"
keep=${KEEP:-$tmp}
mkdir -p "$keep"
results=$tmp/results
pid=
pgdir=
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  if [ -n "$pgdir" ]; then python3 "$pgserver" stop "$pgdir" || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

now_s() { date +%s.%N; }
since() { python3 -c "import sys; print(round($(now_s) - float(sys.argv[1]), 2))" "$1"; }
emit() { # backend days key json-value
  echo "{\"backend\":\"$1\",\"days\":$2,\"$3\":$4}" | tee -a "$results"
}
waitport() { for _ in $(seq 300); do curl -s -o /dev/null "http://127.0.0.1:$1/api/v1/health" && return 0; sleep 0.1; done; return 1; }
psql_db() { psql -X -q -At -d "$@"; }

serve() { # db port extra-args...
  local db=$1 port=$2
  shift 2
  "$fjord" serve --db "$db" --listen "127.0.0.1:$port" --dev-mode --log-level warn "$@" &
  pid=$!
  waitport "$port"
}
stop() { kill -TERM "$pid"; wait "$pid" || true; pid=; }

one() { # backend days
  local be=$1 days=$2 db t gen port s_secret l_secret out largest
  if [ "$be" = postgres ]; then
    psql_db "$admin" -c "DROP DATABASE IF EXISTS hist_$days" -c "CREATE DATABASE hist_$days"
    db=${admin%/*}/hist_$days
  else
    db=$keep/hist_$days.db
    rm -f "$db" "$db-wal" "$db-shm"
  fi
  gen=$tmp/gen_${be}_$days.json
  echo "== $be, $days days: generating ($nodes nodes, $lp_nodes ClusterCockpit nodes)" >&2
  t=$(now_s)
  "$build/api_gen" --db "$db" --nodes "$nodes" --days "$days" --lp-nodes "$lp_nodes" >"$gen"
  local gs
  gs=$(since "$t")
  emit "$be" "$days" gen "$(python3 -c 'import json,sys; g=json.loads(open(sys.argv[1]).read().splitlines()[-1]); s=float(sys.argv[2])
print(json.dumps({"seconds": s, "envelopes": g["envelopes"], "envelopes_per_s": round(g["envelopes"] / s), "jobs": g["jobs"], "lp_points": g["lp_points"]}))' "$gen" "$gs")"
  if [ "$be" = postgres ]; then
    # what autovacuum would have done on a running site over that time: without statistics the
    # planner takes the freshly filled tables for empty ones (jobs lists of 10 s)
    t=$(now_s); psql_db "$db" -c "VACUUM ANALYZE"; emit "$be" "$days" vacuum_analyze_s "$(since "$t")"
  fi
  # a database generated by an older build gets the newer migrations; counts the open too
  t=$(now_s); "$fjord" migrate up --db "$db" >/dev/null; emit "$be" "$days" migrate_up_noop_s "$(since "$t")"
  emit "$be" "$days" rollups "$(python3 "$root/tests/bench/history_bench.py" rollups "$db" "$gen" || true)"

  s_secret=$("$fjord" token add "$tcluster" --db "$db")
  l_secret=$("$fjord" token add fritz --db "$db")
  port=$(fj_free_port)
  serve "$db" "$port"
  local end
  end=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).read().splitlines()[-1])["to"] + 300)' "$gen")
  out=$("$build/sonar_load" --port "$port" --secret "$s_secret" --template "$template" --nodes 100 \
    --connections 4 --envelopes "$tail_envs" --duration 600)
  emit "$be" "$days" sonar_tail "$out"
  out=$("$build/lp_load" --port "$port" --path "/api/write?cluster=fritz" --auth "Bearer $l_secret" \
    --nodes "$lp_nodes" --hours "$lp_hours" --start "$end" --connections 2 --host-prefix f)
  emit "$be" "$days" lp_tail "$out"
  python3 "$root/tests/bench/api_bench.py" "$port" "$gen" "$repeats" "$pid" | while read -r l; do emit "$be" "$days" q "$l"; done
  python3 "$root/tests/bench/history_bench.py" queries "$port" "$gen" "$repeats" "$pid" | while read -r l; do emit "$be" "$days" q "$l"; done
  stop

  out=$(python3 "$root/tests/bench/history_bench.py" tables "$db")
  emit "$be" "$days" bytes "$out"
  largest=$(python3 -c 'import json,sys; t=json.loads(sys.argv[1])["tables"]; print(max(t, key=t.get))' "$out")

  if [ "$be" = postgres ]; then
    t=$(now_s); pg_dump -Fc -f "$tmp/dump" "$db"; emit "$be" "$days" backup "{\"seconds\":$(since "$t"),\"bytes\":$(stat -c %s "$tmp/dump")}"
    rm -f "$tmp/dump"
    psql_db "$admin" -c "CREATE DATABASE hist_copy TEMPLATE hist_$days"
    t=$(now_s)
    psql_db "${admin%/*}/hist_copy" -c "ALTER TABLE $largest ADD COLUMN bench_extra bigint NOT NULL DEFAULT 0"
    emit "$be" "$days" add_column "{\"table\":\"$largest\",\"seconds\":$(since "$t")}"
    psql_db "$admin" -c "DROP DATABASE hist_copy"
  else
    rm -f "$tmp/backup.db"
    t=$(now_s); "$fjord" backup "$tmp/backup.db" --db "$db" >/dev/null
    emit "$be" "$days" backup "{\"seconds\":$(since "$t"),\"bytes\":$(stat -c %s "$tmp/backup.db")}"
    t=$(now_s)
    python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("ALTER TABLE %s ADD COLUMN bench_extra INTEGER NOT NULL DEFAULT 0" % sys.argv[2]); c.commit()' "$tmp/backup.db" "$largest"
    emit "$be" "$days" add_column "{\"table\":\"$largest\",\"seconds\":$(since "$t")}"
    rm -f "$tmp/backup.db"
  fi

  if [ "${RETENTION:-1}" = 0 ]; then
    if [ "$be" = postgres ]; then psql_db "$admin" -c "DROP DATABASE hist_$days"; fi
    return
  fi
  # retention: everything before the history's 31st day (the whole of a shorter history) expires
  local t0 ret cut marks
  t0=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).read().splitlines()[-1])["from"])' "$gen")
  ret=$(( ($(date +%s) - t0 - 30 * 86400) / 86400 ))
  cut=$(( $(date +%s) - ret * 86400 - 8 * 86400 )) # PostgreSQL's horizon is the start of a week
  port=$(fj_free_port)
  t=$(now_s)
  serve "$db" "$port" --retention-process-samples "${ret}d" --retention-node-samples "${ret}d"
  for _ in $(seq 6000); do
    if [ "$be" = postgres ]; then
      marks=$(psql_db "$db" -c "SELECT count(*) FROM retention_marks WHERE kind = 'node_samples' AND expired_before >= $cut")
    else
      marks=$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1], timeout=10).execute("SELECT count(*) FROM retention_marks WHERE kind = ? AND expired_before >= ?", ("node_samples", int(sys.argv[2]))).fetchone()[0])' "$db" "$cut")
    fi
    [ "$marks" = 1 ] && break
    sleep 0.2
  done
  emit "$be" "$days" retention_month "{\"seconds\":$(since "$t"),\"done\":$([ "$marks" = 1 ] && echo true || echo false)}"
  stop
  if [ "$be" = postgres ]; then psql_db "$admin" -c "DROP DATABASE hist_$days"; fi
}

for be in $backends; do
  if [ "$be" = postgres ]; then
    pgdir=$tmp/pg
    admin=$(FJ_PG_DURABLE=1 python3 "$pgserver" start "$pgdir")
  fi
  for d in $lengths; do one "$be" "$d"; done
  if [ -n "$pgdir" ]; then python3 "$pgserver" stop "$pgdir"; pgdir=; fi
done

python3 - "$results" "$nodes" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
nodes = int(sys.argv[2])
for be in dict.fromkeys(r["backend"] for r in rows):
    rs = [r for r in rows if r["backend"] == be]
    days = sorted(set(r["days"] for r in rs))
    def one(d, key):
        return next((r[key] for r in rs if r["days"] == d and key in r), None)
    lines = []
    def add(label, f):
        cells = []
        for d in days:
            try:
                cells.append(f(d))
            except (TypeError, KeyError, ZeroDivisionError):
                cells.append("-")
        lines.append("| %s | %s |" % (label, " | ".join(cells)))
    add("generation, s (envelopes/s)", lambda d: "%.0f (%d)" % (one(d, "gen")["seconds"], one(d, "gen")["envelopes_per_s"]))
    add("roll-up check (12 node-hours)", lambda d: one(d, "rollups")["rollup_check"])
    add("Sonar tail, envelopes/s (p99 ms)", lambda d: "%.0f (%.1f)" % (one(d, "sonar_tail")["envelopes_per_s"], one(d, "sonar_tail")["p99_ms"]))
    add("LP tail, points/s (p99 ms)", lambda d: "%.0f (%.1f)" % (one(d, "lp_tail")["points_per_s"], one(d, "lp_tail")["p99_ms"]))
    names = list(dict.fromkeys(r["q"]["query"] for r in rs if "q" in r and "query" in r["q"]))
    for n in names:
        add(n + ", ms", lambda d, n=n: "%.1f" % next(r["q"]["median_ms"] for r in rs if r["days"] == d and "q" in r and r["q"].get("query") == n))
    add("database bytes", lambda d: "{:,}".format(sum(one(d, "bytes")["tables"].values())))
    add("bytes per node-year", lambda d: "{:,.0f}".format(sum(one(d, "bytes")["tables"].values()) * 365.0 / d / nodes))
    tops = sorted(one(days[-1], "bytes")["tables"].items(), key=lambda kv: -kv[1])[:6]
    for t, _ in tops:
        add("  of which %s, per node-year" % t, lambda d, t=t: "{:,.0f}".format(one(d, "bytes")["tables"].get(t, 0) * 365.0 / d / nodes))
    add("backup, s", lambda d: "%.1f" % one(d, "backup")["seconds"])
    add("add a column with a default to the largest table, s", lambda d: "%.3f (%s)" % (one(d, "add_column")["seconds"], one(d, "add_column")["table"]))
    add("retention deleting the first month, s", lambda d: "%.1f%s" % (one(d, "retention_month")["seconds"], "" if one(d, "retention_month")["done"] else " (not done)"))
    print()
    print("### %s, %d nodes" % (be, nodes))
    print()
    print("| | " + " | ".join("%d days" % d for d in days) + " |")
    print("|---" * (len(days) + 1) + "|")
    print("\n".join(lines))
PY
