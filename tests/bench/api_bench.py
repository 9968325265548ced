"""Query benchmark driver: median latency of the analysts' queries against a running fjord.

    python3 tests/bench/api_bench.py PORT GEN_JSON [REPEATS [SERVER_PID]]

GEN_JSON is api_gen's closing line (cluster, time span, the big job). Each query runs twice to
warm the page cache, then REPEATS times (default 15); the median and the range are printed as JSON
lines, with the answer's size and row count. Latency is curl's time_total: from sending the
request to the answer's last byte (server work and transfer; the client's JSON parsing is not in
it). QUERIES (an environment variable) runs only the queries whose name contains it. With
SERVER_PID, the server's CPU time
per request (user + system, from /proc) is printed too: on a shared machine it is the steadier
figure, since wall-clock latency then includes waiting for a core.
"""
import os
import json
import statistics
import subprocess
import sys
import tempfile


def get(port, path):
    """(seconds, status, body, parsed) of one request, timed by curl (request to last byte; Python's
    own HTTP client reads a megabyte answer noticeably slower than the server writes it)."""
    with tempfile.NamedTemporaryFile() as f:
        out = subprocess.run(["curl", "-s", "-o", f.name, "-w", "%{http_code} %{time_total}",
                              "http://127.0.0.1:%d%s" % (port, path)], capture_output=True, text=True,
                             check=True).stdout.split()
        body = open(f.name, "rb").read()
    return float(out[1]), int(out[0]), body, json.loads(body)


def rows(doc):
    n = 0
    for k, v in doc.items():
        if isinstance(v, list):
            for x in v:
                n += len(x["points"]) if isinstance(x, dict) and "points" in x else 1
    return n


SERVER_PID = None


def cpu_s():
    if not SERVER_PID:
        return 0.0
    f = open("/proc/%d/stat" % SERVER_PID).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def bench(port, name, path, repeats, target_ms):
    if os.environ.get("QUERIES") and os.environ["QUERIES"] not in name:
        return {}
    for _ in range(2):
        get(port, path)
    times = []
    c0 = cpu_s()
    for _ in range(repeats):
        dt, status, body, doc = get(port, path)
        assert status == 200, (path, status)
        times.append(dt * 1000)
    cpu_ms = (cpu_s() - c0) * 1000 / repeats
    med = statistics.median(times)
    r = {"query": name, "path": path, "median_ms": round(med, 1), "min_ms": round(min(times), 1),
         "max_ms": round(max(times), 1), "target_ms": target_ms, "bytes": len(body), "rows": rows(doc),
         "met": med < target_ms if target_ms else None}
    if SERVER_PID:
        r["server_cpu_ms"] = round(cpu_ms, 1)
    print(json.dumps(r), flush=True)
    return doc


def main():
    port = int(sys.argv[1])
    g = json.loads(open(sys.argv[2]).read().strip().splitlines()[-1])
    repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 15
    global SERVER_PID
    SERVER_PID = int(sys.argv[4]) if len(sys.argv) > 4 else None
    c, t0, t1 = g["cluster"], g["from"], g["to"]
    week = "cluster=%s&from=%d&to=%d" % (c, t0, t1)
    _, _, _, doc = get(port, "/api/v1/jobs?cluster=%s&job=%d" % (c, g["big_job"]))
    big = doc["jobs"][0]["id"]
    day0 = g["big_start"]

    bench(port, "jobs list, one week (first page, limit 1000)", "/api/v1/jobs?" + week, repeats, 100)
    bench(port, "jobs list, one week, 100 rows sorted by peak memory",
          "/api/v1/jobs?%s&sort=mem_peak_kb&order=desc&limit=100" % week, repeats, None)
    doc = bench(port, "jobs list, one week, all rows in one page", "/api/v1/jobs?%s&limit=100000" % week,
                max(3, repeats // 3), None)
    if doc:
        print(json.dumps({"jobs_in_week": len(doc["jobs"])}), flush=True)
    bench(port, "problem jobs, one week", "/api/v1/problems?" + week, repeats, 200)
    bench(port, "problem jobs per user, one week", "/api/v1/problems/users?" + week, repeats, None)
    # api_gen's jobs keep their resources busy: thresholds that flag every job (and every job's
    # node as deadweight) measure the answer's rows too
    bench(port, "problem jobs, one week, every job flagged",
          "/api/v1/problems?%s&cpu_ratio=1&cpu_min=0&deadweight=0" % week, repeats, None)
    # usage per account and user (GET /api/v1/usage): the whole span, and per day
    end = "cluster=%s&from=%d&to=%d" % (c, t0, t1 + 1)
    bench(port, "usage by account, whole span", "/api/v1/usage?%s&by=account" % end, repeats, 100)
    bench(port, "usage by user per day, whole span", "/api/v1/usage?%s&by=user&bucket=day" % end, repeats, 200)
    bench(port, "usage, top 20 accounts by core-hours per week",
          "/api/v1/usage?%s&by=account&bucket=week&sort=core_h_used&limit=20" % end, repeats, None)
    bench(port, "jobs list, one week, 100 rows sorted by cpu_eff",
          "/api/v1/jobs?%s&sort=cpu_eff&order=desc&limit=100" % week, repeats, None)
    bench(port, "profile of a 64-node job over 24 h (default bucket 720 s)",
          "/api/v1/jobs/%d/profile?cluster=%s&from=%d&to=%d" % (big, c, day0, day0 + 86400), repeats, 50)
    bench(port, "profile of a 64-node job over 24 h, per host",
          "/api/v1/jobs/%d/profile?cluster=%s&from=%d&to=%d&by=host" % (big, c, day0, day0 + 86400), repeats, None)
    bench(port, "cluster load, one day at 1 h", "/api/v1/load/cluster?cluster=%s&from=%d&to=%d&bucket=1h"
          % (c, day0, day0 + 86400), repeats, 200)
    bench(port, "node load, one week (default bucket)", "/api/v1/load/nodes?%s&host=c0100" % week, repeats, 50)
    bench(port, "node load, one week at 5 min", "/api/v1/load/nodes?%s&host=c0100&bucket=5m" % week, repeats, None)
    bench(port, "GPU node load, one week (default bucket)", "/api/v1/load/nodes?%s&host=g001" % week, repeats, None)
    bench(port, "GPU load per card, one week at 1 h", "/api/v1/load/gpus?%s&host=g001&bucket=1h" % week, repeats, None)
    bench(port, "cluster load, one day at 1 h, window cut at both ends",
          "/api/v1/load/cluster?cluster=%s&from=%d&to=%d&bucket=1h" % (c, day0 + 1800, day0 + 86400 + 1800), repeats, None)
    bench(port, "cluster load, one week at 1 d", "/api/v1/load/cluster?%s&bucket=1d" % week, repeats, None)


if __name__ == "__main__":
    main()
