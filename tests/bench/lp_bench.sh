#!/usr/bin/env bash
# Line-protocol benchmark, fjord side by side with InfluxDB 1.6.7 and VictoriaMetrics 1.79.5 (Debian's
# packages: scripts/install-deps.sh bench). Each runs alone in a temporary directory on 127.0.0.1 and
# takes the same pre-generated bodies (tests/bench/lp_load.c: a ClusterCockpit cluster of NODES nodes
# x 2 sockets x 72 hwthreads, 519 lines per node and minute, HOURS of data ending now, 5,000-line
# bodies, CONNECTIONS keep-alive connections). Printed per system:
#   points/s, points per server CPU-second, server cores used during the load (CPU-s per s),
#   bytes on disk per point 60 s after the load with the server running (SETTLE seconds) and
#   after a flush, peak RSS during the load and overall,
#   median latency of (a) one host, one metric, 72 hwthreads, the whole range averaged to 60 s and
#   (b) node-level cpu_load of every host over the whole range at 60 s,
# using each system's own query API (fjord: /api/query; InfluxDB: InfluxQL; VictoriaMetrics: PromQL
# query_range with nocache=1); and (c) Grafana's panel of (b) in InfluxQL, SELECT mean("value") FROM
# "cpu_load" WHERE time >= .. AND time < .. GROUP BY time(60s), "hostname", on fjord's /query and
# InfluxDB's (the same statement), against VictoriaMetrics's PromQL of (b). fjord's queries are timed twice: right after the load (points still
# in memory) and after a restart (all from sealed chunks).
#
#   tests/bench/lp_bench.sh [NODES] [HOURS] [CONNECTIONS]     (from the checkout, after a build)
#   BUILD=build-dir SYSTEMS="fjord influxdb victoria" REPEAT=11 SETTLE=60
#   BASELINE=REF-or-BUILD-DIR: adds the system "baseline", fjord of that build (a before/after
#   comparison in one run; same options, same bodies): a build directory, or a commit built once
#   (tests/bench/baseline.sh, the same for every benchmark here)
#   SYNC=FULL: fjord with synchronous=FULL (an acknowledgement survives a power loss, as InfluxDB's
#   WAL fsync; VictoriaMetrics acknowledges before its data reaches the disk either way)
#
# DB=postgres runs fjord against PostgreSQL instead of SQLite: a server of Debian's packages started
# in the temporary directory (tests/integration/pgserver.py, fsync and synchronous commit on, as in
# production); fjord's CPU then counts fjord's and PostgreSQL's processes, and its bytes on disk are
# the metric tables' (ts_chunk, ts_series, request_log) after VACUUM.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${BUILD:-$root/build}
. "$root/tests/bench/baseline.sh"
[ -n "${BASELINE:-}" ] && BASELINE=$(fj_baseline_build "$BASELINE")
nodes=${1:-50}
hours=${2:-6}
conns=${3:-2}
systems=${SYSTEMS:-fjord influxdb victoria}
repeat=${REPEAT:-11}
settle=${SETTLE:-60}
sync=${SYNC:-}
tmp=$(mktemp -d)
pid=
backend=${DB:-sqlite}
pgserver="$root/tests/integration/pgserver.py"
postmaster=
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  if [ "$backend" = postgres ]; then for p in "$tmp"/pg-*; do [ -d "$p" ] && { python3 "$pgserver" stop "$p" || true; }; done; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
waitport() { for _ in $(seq 200); do (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0; sleep 0.1; done; return 1; }
# CPU ticks of a process, plus PostgreSQL's postmaster and its children for fjord on PostgreSQL.
cpu_ticks() {
  local t p
  t=$(awk '{print $14 + $15}' "/proc/$1/stat")
  if [ -n "$postmaster" ]; then
    for p in $postmaster $(pgrep -P "$postmaster"); do
      t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0)))
    done
  fi
  echo "$t"
}
hwm_kb() { awk '/VmHWM/ {print $2}' "/proc/$1/status"; }
ticks=$(getconf CLK_TCK)
end=$(( $(date +%s) / 60 * 60 ))
start=$(( end - hours * 3600 ))
first_host=f0000
results=()
# (c): the Grafana panel's InfluxQL, the same text for fjord and InfluxDB
qc="SELECT mean(\"value\") FROM \"cpu_load\" WHERE time >= ${start}s AND time < ${end}s GROUP BY time(60s), \"hostname\""
enc() { python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1]))' "$1"; }

# median_ms KIND URL [BODY] [HEADER]: runs the request $repeat times (after one warm-up).
median_ms() {
  python3 - "$repeat" "$@" <<'EOF'
import sys, time, urllib.request
n, kind, url = int(sys.argv[1]), sys.argv[2], sys.argv[3]
body = sys.argv[4].encode() if len(sys.argv) > 4 and sys.argv[4] else None
hdr = dict([sys.argv[5].split(": ", 1)]) if len(sys.argv) > 5 and sys.argv[5] else {}
times, size = [], 0
for i in range(n + 1):
    req = urllib.request.Request(url, data=body, method="POST" if body else "GET", headers=hdr)
    t0 = time.perf_counter()
    with urllib.request.urlopen(req, timeout=300) as r:
        size = len(r.read())
    if i:
        times.append((time.perf_counter() - t0) * 1e3)
times.sort()
print("%.1f %d" % (times[len(times) // 2], size))
EOF
}

load() { # port path auth -> sets load_json, cpu_s, rss_load (peak RSS during the load, kB)
  local c0 c1
  c0=$(cpu_ticks "$pid")
  load_json=$("$build/lp_load" --port "$1" --path "$2" ${3:+--auth "$3"} --nodes "$nodes" --hours "$hours" \
    --start "$start" --connections "$conns")
  c1=$(cpu_ticks "$pid")
  rss_load=$(hwm_kb "$pid")
  cpu_s=$(python3 -c "print(($c1 - $c0) / $ticks)")
  echo "  load: $load_json" >&2
}

# settled DIR...: bytes under the directories SETTLE seconds after the load, the server running.
settled() {
  sleep "$settle"
  du -sb "$@" | awk '{s += $1} END {print s}'
}

row() { # name qa qb qc disk_running disk_bytes rss_load_kb rss_kb
  python3 - "$load_json" "$cpu_s" "$@" <<'EOF'
import json, sys
j = json.loads(sys.argv[1]); cpu = float(sys.argv[2])
name, qa, qb, qc = sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6]
running, disk, rss_load, rss = (int(x) for x in sys.argv[7:11])
p = j["points"]
print("| %s | %.0f | %.0f | %.2f | %.2f | %.2f | %.0f / %.0f MiB | %s | %s | %s |" % (name, j["points_per_s"],
      p / cpu if cpu else 0, cpu / j["seconds"], running / p, disk / p, rss_load / 1024.0, rss / 1024.0, qa, qb, qc))
EOF
}

echo "data: $nodes nodes x 519 series, $hours h at 60 s = $((nodes * 519 * hours * 60)) points, $conns connections" >&2

for sys in $systems; do
  case $sys in
  fjord|baseline)
    d="$tmp/$sys"; mkdir -p "$d"; port=$(fj_free_port)
    db="$d/fjord.db"; name=fjord; fjbin=$build/fjord
    if [ "$sys" = baseline ]; then fjbin=${BASELINE:?BASELINE=build dir of the baseline}/fjord; name="fjord (baseline)"; fi
    if [ "$backend" = postgres ]; then
      chmod 755 "$tmp"
      admin=$(FJ_PG_DURABLE=1 python3 "$pgserver" start "$tmp/pg-$sys")
      psql -X -q -d "$admin" -c "CREATE DATABASE fjord_bench"
      db=${admin%/*}/fjord_bench; name="$name on PostgreSQL 15"
      postmaster=$(head -1 "$tmp/pg-$sys/data/postmaster.pid")
    fi
    secret=$(fj_token_add "$fjbin" fritz "$db")
    args=(serve --db "$db" --listen "127.0.0.1:$port" --log-level warn ${sync:+--synchronous "$sync"})
    if [ -n "$sync" ]; then name="$name, synchronous=$sync"; fi
    "$fjbin" "${args[@]}" & pid=$!
    waitport "$port"
    load "$port" "/api/write?cluster=fritz" "Bearer $secret"
    if [ "$backend" = postgres ]; then
      sleep "$settle"
      running=$(psql -X -q -At -d "$db" -c "SELECT sum(pg_total_relation_size(t)) FROM unnest(ARRAY['ts_chunk','ts_series','request_log']::regclass[]) t")
    else
      running=$(settled "$d")
    fi
    ids=$(python3 -c 'import json; print(json.dumps([str(i) for i in range(72)]))')
    qa_body="{\"cluster\":\"fritz\",\"from\":$start,\"to\":$end,\"queries\":[{\"metric\":\"cpu_user\",\"host\":\"$first_host\",\"type\":\"hwthread\",\"type-ids\":$ids,\"resolution\":60}]}"
    qb_body="{\"cluster\":\"fritz\",\"from\":$start,\"to\":$end,\"for-all-nodes\":[\"cpu_load\"]}"
    url="http://127.0.0.1:$port/api/query"
    live_a=$(median_ms a "$url" "$qa_body" "Authorization: Bearer $secret")
    live_b=$(median_ms b "$url" "$qb_body" "Authorization: Bearer $secret")
    iq_url="http://127.0.0.1:$port/query?db=fritz&epoch=s&q=$(enc "$qc")"
    live_c=$(median_ms c "$iq_url" "" "Authorization: Bearer $secret")
    rss=$(hwm_kb "$pid")
    kill -TERM "$pid"; wait "$pid"; pid=  # a clean stop seals every buffer
    if [ "$backend" = postgres ]; then
      disk=$(psql -X -q -At -d "$db" -c "VACUUM" -c "SELECT sum(pg_total_relation_size(t)) FROM unnest(ARRAY['ts_chunk','ts_series','request_log']::regclass[]) t")
    else
      disk=$(stat -c %s "$db")
    fi
    "$fjbin" "${args[@]}" & pid=$!
    waitport "$port"
    sealed_a=$(median_ms a "$url" "$qa_body" "Authorization: Bearer $secret")
    sealed_b=$(median_ms b "$url" "$qb_body" "Authorization: Bearer $secret")
    sealed_c=$(median_ms c "$iq_url" "" "Authorization: Bearer $secret")
    kill -TERM "$pid"; wait "$pid"; pid=
    results+=("$(row "$name" "${sealed_a% *} ms (live ${live_a% *})" "${sealed_b% *} ms (live ${live_b% *})" \
      "${sealed_c% *} ms (live ${live_c% *})" "$running" "$disk" "$rss_load" "$rss")")
    postmaster=
    ;;
  influxdb)
    d="$tmp/influx"; mkdir -p "$d"; port=$(fj_free_port); rpc=$(fj_free_port)
    cat > "$d/influxdb.conf" <<EOF
reporting-disabled = true
bind-address = "127.0.0.1:$rpc"
[meta]
  dir = "$d/meta"
[data]
  dir = "$d/data"
  wal-dir = "$d/wal"
  query-log-enabled = false
  cache-snapshot-write-cold-duration = "5s"
  compact-full-write-cold-duration = "10s"
[http]
  bind-address = "127.0.0.1:$port"
  log-enabled = false
[monitor]
  store-enabled = false
[continuous_queries]
  enabled = false
EOF
    /usr/bin/influxd -config "$d/influxdb.conf" > "$d/log" 2>&1 & pid=$!
    waitport "$port"
    curl -s -XPOST "http://127.0.0.1:$port/query" --data-urlencode "q=CREATE DATABASE fritz" > /dev/null
    load "$port" "/write?db=fritz&precision=ns" ""
    running=$(settled "$d/data" "$d/wal")
    qa="SELECT mean(\"value\") FROM \"cpu_user\" WHERE \"hostname\"='$first_host' AND time >= ${start}s AND time < ${end}s GROUP BY time(60s), \"type-id\""
    a=$(median_ms a "http://127.0.0.1:$port/query?db=fritz&epoch=s&q=$(enc "$qa")")
    b=$(median_ms b "http://127.0.0.1:$port/query?db=fritz&epoch=s&q=$(enc "$qc")")  # (b) is (c)
    sleep 20 # cache snapshot and full compaction after the cold durations
    rss=$(hwm_kb "$pid")
    disk=$(du -sb "$d/data" "$d/wal" | awk '{s += $1} END {print s}')
    kill -TERM "$pid"; wait "$pid" || true; pid=
    results+=("$(row "InfluxDB 1.6.7" "${a% *} ms" "${b% *} ms" "${b% *} ms (as b)" "$running" "$disk" "$rss_load" "$rss")")
    ;;
  victoria)
    d="$tmp/vm"; mkdir -p "$d"; port=$(fj_free_port)
    /usr/bin/victoria-metrics -storageDataPath "$d/data" -httpListenAddr "127.0.0.1:$port" -retentionPeriod 1y \
      -loggerLevel ERROR > "$d/log" 2>&1 & pid=$!
    waitport "$port"
    load "$port" "/write" ""
    running=$(settled "$d/data")
    curl -s "http://127.0.0.1:$port/internal/force_flush" > /dev/null
    sleep 2
    rng="start=$start&end=$end&step=60&nocache=1"
    a=$(median_ms a "http://127.0.0.1:$port/api/v1/query_range?$rng&query=$(enc "avg_over_time(cpu_user_value{hostname=\"$first_host\",type=\"hwthread\"}[60s])")")
    b=$(median_ms b "http://127.0.0.1:$port/api/v1/query_range?$rng&query=$(enc "avg_over_time(cpu_load_value[60s])")")
    curl -s "http://127.0.0.1:$port/internal/force_flush" > /dev/null
    sleep 5
    rss=$(hwm_kb "$pid")
    disk=$(du -sb "$d/data" | awk '{print $1}')
    kill -TERM "$pid"; wait "$pid" || true; pid=
    results+=("$(row "VictoriaMetrics 1.79.5" "${a% *} ms" "${b% *} ms" "${b% *} ms (PromQL of b)" "$running" "$disk" "$rss_load" "$rss")")
    ;;
  *) echo "unknown system $sys" >&2; exit 2 ;;
  esac
done

echo
echo "$nodes nodes, $hours h, $((nodes * 519 * hours * 60)) points, $conns connections, $(nproc) cores"
echo
echo "| system | points/s | points per server CPU-s | server cores used | bytes per point, ${settle} s after the load, running | bytes per point after a flush | peak RSS during the load / overall | (a) 1 host, 72 hwthreads, 60 s | (b) cpu_load, all hosts, 60 s | (c) (b) as Grafana's InfluxQL |"
echo "|---|---|---|---|---|---|---|---|---|---|"
printf '%s\n' "${results[@]}"
