#!/bin/sh
# startup_bench.sh — how long fjord takes to answer after a start, and its RSS then, on a database
# of many line-protocol series (issue 30: every series used to be read at start). Not run by CI.
#
#   tests/bench/startup_bench.sh [SERIES] [FJORD...]
#
# Makes (once, kept in $FJ_BENCH_DIR, default /tmp/fjord-startup-bench) a SQLite database of SERIES
# series (default 5,000,000) with build/ts_series_gen, then for each fjord binary given (default
# build/fjord) starts `fjord serve` on it three times and prints the seconds until GET
# /api/v1/health answered 200, and the server's RSS right then and after one write of 1,000
# existing series. A binary from before migration 0013 needs the database without it: set
# FJ_BENCH_OLD_SCHEMA=1 to rewind a copy (its index and migration row) for such a binary.
set -eu
SERIES=${1:-5000000}
[ $# -gt 0 ] && shift
BINS=${*:-build/fjord}
DIR=${FJ_BENCH_DIR:-/tmp/fjord-startup-bench}
DB=$DIR/series-$SERIES.db
PORT=${FJ_BENCH_PORT:-18931}
mkdir -p "$DIR"
if [ ! -f "$DB" ]; then
    echo "generating $SERIES series into $DB"
    /usr/bin/time -f "generated in %e s, max RSS %M KiB" build/ts_series_gen --db "$DB" --series "$SERIES"
fi
ls -l "$DB"

rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }

one_start() { # binary, database
    start=$(date +%s.%N)
    "$1" serve --db "$2" --listen "127.0.0.1:$PORT" --dev-mode 2>"$DIR/serve.log" &
    pid=$!
    until curl -sf -o /dev/null "http://127.0.0.1:$PORT/api/v1/health"; do
        kill -0 $pid 2>/dev/null || { echo "fjord exited:"; cat "$DIR/serve.log"; return 1; }
        sleep 0.05
    done
    up=$(echo "$(date +%s.%N) - $start" | bc)
    rss_up=$(rss_kib $pid)
    # 1,000 existing series (hosts 0 and 1 of ts_series_gen's naming)
    python3 - "$PORT" <<'EOF'
import sys, urllib.request
lines = "".join("m%d,cluster=big,hostname=n%06d,type=hwthread,type-id=%d value=1 1700000060\n" % (m, h, t)
                for h in range(2) for m in range(50) for t in range(10))
req = urllib.request.Request("http://127.0.0.1:%s/api/write?cluster=big" % sys.argv[1], data=lines.encode(),
                             method="POST", headers={"Content-Type": "text/plain"})
urllib.request.urlopen(req, timeout=60).read()
EOF
    rss_w=$(rss_kib $pid)
    kill -TERM $pid
    wait $pid || true
    printf '%s: answered after %.2f s, RSS %d MiB; after writing 1,000 existing series %d MiB\n' \
        "$1" "$up" $((rss_up / 1024)) $((rss_w / 1024))
}

for bin in $BINS; do
    db=$DB
    if [ "${FJ_BENCH_OLD_SCHEMA:-0}" = 1 ]; then
        db=$DIR/series-$SERIES-old.db
        if [ ! -f "$db" ]; then
            cp "$DB" "$db"
            python3 -c "
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.executescript('DROP INDEX ts_series_key; CREATE INDEX ts_series_host ON ts_series(cluster, host, metric);'
                'DELETE FROM schema_migrations WHERE version = 13;')
c.commit()" "$db"
        fi
    fi
    for i in 1 2 3; do
        sync
        one_start "$bin" "$db"
    done
done
