"""History benchmark's checks and queries (tests/bench/history_bench.sh), against one database.

    python3 tests/bench/history_bench.py rollups DB GEN_JSON          (DB: a SQLite file or a URL)
    python3 tests/bench/history_bench.py queries PORT GEN_JSON REPEATS [SERVER_PID]
    python3 tests/bench/history_bench.py tables DB

rollups: for 12 node-hours drawn at random (a fixed seed) the writers' hourly load roll-up
(load_hourly), and for 4 node-days their daily one (load_daily, where the schema has it), against
an aggregate of the raw samples of that node and hour or day: sample count, load averages' count,
sums and maximum; prints one JSON line and exits 1 on any difference.
queries: the queries over everything (a user's jobs over the history, the cluster's load over the
history at one day, per node at one day, usage of a node over the history) and InfluxQL's Grafana
panel query over a day and over everything, through api_bench.bench (median of REPEATS).
tables: bytes per table (indexes included) as one JSON line: SQLite's dbstat, PostgreSQL's
pg_total_relation_size summed over each partitioned table's partitions.
"""
import json
import os
import random
import sqlite3
import subprocess
import sys
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import api_bench  # noqa: E402


def is_pg(db):
    return db.startswith("postgres")


def sql(db, text):
    """Rows of one query, as tuples of strings (PostgreSQL, through psql) or values (SQLite)."""
    if is_pg(db):
        out = subprocess.run(["psql", "-X", "-q", "-At", "-F", "\t", "-d", db, "-c", text], capture_output=True,
                             text=True, check=True).stdout
        return [tuple(line.split("\t")) for line in out.splitlines() if line]
    con = sqlite3.connect(db)
    try:
        return con.execute(text).fetchall()
    finally:
        con.close()


def rollups(db, gen):
    g = json.loads(open(gen).read().strip().splitlines()[-1])
    rnd = random.Random(36)
    nodes = [int(r[0]) for r in sql(db, "SELECT DISTINCT node_id FROM load_hourly WHERE hour >= %d AND hour <= %d"
                                        " ORDER BY node_id" % (g["from"], g["to"]))]  # the generated nodes
    hours = [(rnd.choice(nodes), g["from"] + 3600 * rnd.randrange((g["to"] - g["from"]) // 3600)) for _ in range(12)]
    bad, checked = [], 0
    for node, hour in hours:
        h = sql(db, "SELECT samples, load_n, load1_sum, load1_max, load5_sum, load15_sum FROM load_hourly "
                    "WHERE node_id = %d AND hour = %d" % (node, hour))
        r = sql(db, "SELECT count(*), count(load1), coalesce(sum(load1), 0), coalesce(max(load1), 0), "
                    "coalesce(sum(load5), 0), coalesce(sum(load15), 0) FROM samples "
                    "WHERE node_id = %d AND time >= %d AND time < %d" % (node, hour, hour + 3600))
        want = [float(x) for x in r[0]]
        got = [float(x) for x in h[0]] if h else [0.0] * 6
        checked += 1
        if want[0] == 0:
            bad.append({"node": node, "hour": hour, "why": "no samples in a generated hour"})
        elif any(abs(a - b) > 1e-9 * max(1.0, abs(b)) for a, b in zip(got, want)):
            bad.append({"node": node, "hour": hour, "rollup": got, "raw": want})
    # the daily roll-ups, where there are (SQLite 0021, PostgreSQL 0018), of 4 node-days
    days = 0
    if sql(db, "SELECT count(*) FROM information_schema.tables WHERE table_name = 'load_daily'" if is_pg(db) else
           "SELECT count(*) FROM sqlite_master WHERE name = 'load_daily'")[0][0] not in ("0", 0):
        for _ in range(4):
            node, day = rnd.choice(nodes), g["from"] + 86400 * rnd.randrange(max(1, (g["to"] - g["from"]) // 86400))
            h = sql(db, "SELECT samples, load_n, load1_sum, load1_max, load5_sum, load15_sum FROM load_daily "
                        "WHERE node_id = %d AND day = %d" % (node, day))
            r = sql(db, "SELECT count(*), count(load1), coalesce(sum(load1), 0), coalesce(max(load1), 0), "
                        "coalesce(sum(load5), 0), coalesce(sum(load15), 0) FROM samples "
                        "WHERE node_id = %d AND time >= %d AND time < %d" % (node, day, day + 86400))
            want = [float(x) for x in r[0]]
            got = [float(x) for x in h[0]] if h else [0.0] * 6
            days += 1
            if want[0] == 0 or any(abs(a - b) > 1e-9 * max(1.0, abs(b)) for a, b in zip(got, want)):
                bad.append({"node": node, "day": day, "rollup": got, "raw": want})
    print(json.dumps({"rollup_check": "ok" if not bad else "DIFFERENT", "node_hours": checked, "node_days": days,
                      "bad": bad}))
    return 1 if bad else 0


def queries(port, gen, repeats, pid):
    g = json.loads(open(gen).read().strip().splitlines()[-1])
    api_bench.SERVER_PID = pid
    c, t0, t1 = g["cluster"], g["from"], g["to"] + 300
    days = (t1 - t0) // 86400
    all_ = "cluster=%s&from=%d&to=%d" % (c, t0, t1)
    b = api_bench.bench
    b(port, "ALL jobs of one user over the history", "/api/v1/jobs?%s&user=user007&limit=100000" % all_, repeats, 200)
    b(port, "ALL problem jobs of one user over the history", "/api/v1/problems?%s&user=user007" % all_, repeats, 200)
    b(port, "ALL cluster load over the history at 1 d", "/api/v1/load/cluster?%s&bucket=1d" % all_, repeats, 200)
    b(port, "ALL node load of one node over the history at 1 d", "/api/v1/load/nodes?%s&host=c0042&bucket=1d" % all_,
      repeats, 200)
    b(port, "WINDOW node load of one node, last week at 1 h",
      "/api/v1/load/nodes?cluster=%s&from=%d&to=%d&host=c0042&bucket=1h" % (c, t1 - 7 * 86400, t1), repeats, None)
    b(port, "WINDOW jobs list, last week", "/api/v1/jobs?cluster=%s&from=%d&to=%d" % (c, t1 - 7 * 86400, t1),
      repeats, None)
    b(port, "WINDOW cluster load, last day at 1 h",
      "/api/v1/load/cluster?cluster=%s&from=%d&to=%d&bucket=1h" % (c, t1 - 86400, t1), repeats, None)
    if g.get("lp_nodes"):
        for name, lo, step in (("WINDOW InfluxQL Grafana panel, last day at 60 s", t1 - 86400, "60s"),
                               ("ALL InfluxQL Grafana panel over the history at 1 d", t0, "1d")):
            q = ('SELECT mean("value") FROM "cpu_load" WHERE time >= %ds AND time < %ds GROUP BY time(%s), "hostname"'
                 % (lo, t1, step))
            b(port, name, "/query?db=fritz&epoch=s&q=" + urllib.parse.quote(q), repeats, None)
    print(json.dumps({"history_days": days}))


def tables(db):
    if is_pg(db):
        rows = sql(db, "SELECT coalesce(p.relname, c.relname), sum(pg_total_relation_size(c.oid)) FROM pg_class c "
                       "LEFT JOIN pg_inherits i ON i.inhrelid = c.oid LEFT JOIN pg_class p ON p.oid = i.inhparent "
                       "WHERE c.relkind = 'r' AND c.relnamespace = 'public'::regnamespace GROUP BY 1")
    else:
        con = sqlite3.connect(db)
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        # an index's pages count with its table
        idx = dict(con.execute("SELECT name, tbl_name FROM sqlite_master WHERE type = 'index'").fetchall())
        rows = {}
        for name, size in con.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name"):
            t = idx.get(name, name)
            rows[t] = rows.get(t, 0) + size
        rows = rows.items()
        con.close()
    print(json.dumps({"tables": {t: int(n) for t, n in sorted(rows, key=lambda r: -int(r[1])) if int(n) > 0}}))


def main():
    what = sys.argv[1]
    if what == "rollups":
        return rollups(sys.argv[2], sys.argv[3])
    if what == "queries":
        pid = int(sys.argv[5]) if len(sys.argv) > 5 else None
        queries(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), pid)
        return 0
    if what == "tables":
        tables(sys.argv[2])
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
