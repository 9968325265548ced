"""Sonar's figures as InfluxQL measurements (docs/metrics.md "InfluxQL", api/influxql/sonar.c):
sonar_node, sonar_gpu and sonar_job read from the Sonar tables and roll-ups, answered per node and per card with
figures computed here from the samples sent (CPU utilisation from counter differences, memory,
load average, GPU utilisation, memory, power and temperature), in buckets of the GROUP BY interval,
whole hours (roll-ups) and ten minutes (samples); catalog statements list them; an upload
credential sees its own cluster's only."""
import urllib.parse

from api_common import Api, envelope, epoch, rfc, shifted
from harness import check, finish
from test_api_load import VM0, node_expect

ML1 = "real/0+sample-ml1.hpc.uio.no.json"


def iq(api, q, db="test.local", auth=None):
    r = api.get("/query?" + urllib.parse.urlencode({"q": q, "db": db, "epoch": "s"}), auth=auth)
    check(r.status == 200, "%s: %d %s" % (q, r.status, r.body[:300]))
    return r.json()["results"][0] if r.status == 200 else {}


def close(a, b, tol=1e-3):
    return a is not None and b is not None and abs(a - b) <= tol


def nodes(api, base):
    H = epoch("2026-12-01T00:00:00Z")
    samples = {}

    def send(t, cpus, mem, load1):
        e = shifted(base, 0, cpus=cpus, used_memory=mem, load1=load1)
        a = e["data"]["attributes"]
        a["node"], a["time"], a["jobs"] = "iq1", rfc(t), []
        api.post(e)
        samples[t] = (cpus, mem, load1)

    send(H - 600, [100, 100, 100, 100], 1000, 1.0)
    send(H + 600, [400, 250, 100, 700], 2000, 2.0)
    send(H + 1200, [500, 300, 100, 800], 2500, 2.5)
    send(H + 1800, [600, 600, 120, 900], 3000, 3.0)
    send(H + 3600 + 600, [1000, 900, 50, 1500], 4000, 4.0)  # a counter fell: counts 0
    send(H + 7260, [1100, 1000, 150, 1600], 4500, 4.5)
    for bucket, interval in ((3600, "1h"), (600, "10m")):
        lo, hi = H, H + 7199
        want = node_expect(samples, lo, hi, bucket)
        res = iq(api, "SELECT mean(mem_kb), max(mem_max_kb), mean(load1), mean(cpu_util), mean(cpu_cores) FROM sonar_node"
                      " WHERE node = 'iq1' AND time >= %ds AND time <= %ds GROUP BY time(%s) fill(none)" % (lo, hi, interval))
        series = res.get("series", [])
        check(len(series) == 1 and series[0]["columns"] == ["time", "mean", "max", "mean_1", "mean_2", "mean_3"],
              "by %s: one series with InfluxDB's column names: %s" % (interval, res))
        rows = {r[0]: r for r in series[0]["values"]} if series else {}
        check(sorted(rows) == sorted(want), "by %s: buckets %s, want %s" % (interval, sorted(rows), sorted(want)))
        for t, w in want.items():
            r = rows.get(t)
            ok = r is not None and r[1] == round(sum(w["mem"]) / len(w["mem"])) and r[2] == max(w["mem"]) \
                and close(r[3], sum(w["load1"]) / len(w["load1"])) \
                and (r[4] is None if w["cpu_util"] is None else close(r[4], w["cpu_util"])) \
                and (r[5] is None if w["cpu_cores"] is None else close(r[5], w["cpu_cores"]))
            check(ok, "by %s at %s: %s, want %s" % (interval, rfc(t), r, {k: v for k, v in w.items() if k != "iv"}))
    # tz(): Kolkata's hours start at :30 UTC, the same buckets as UTC hours offset by 30 minutes
    # (load buckets narrowed to fit the zone's quarter hours)
    base_q = ("SELECT max(mem_max_kb), mean(load1) FROM sonar_node WHERE node = 'iq1' AND time >= %ds AND time <= %ds"
              " GROUP BY time(%%s) fill(none)%%s" % (H - 3600, H + 7199))
    in_zone = iq(api, base_q % ("1h", " tz('Asia/Kolkata')")).get("series", [{}])[0].get("values")
    offset = iq(api, base_q % ("1h, 30m", "")).get("series", [{}])[0].get("values")
    check(in_zone and in_zone == offset and all((t - H) % 3600 == 1800 for t, _, _ in in_zone),
          "tz('Asia/Kolkata') by 1h: %s, want time(1h, 30m)'s %s" % (in_zone, offset))
    # a whole window at once: the mean of the hourly points
    res = iq(api, "SELECT max(load1_max) FROM sonar_node WHERE node = 'iq1' AND time >= %ds AND time <= %ds" % (H, H + 7199))
    vals = res.get("series", [{}])[0].get("values", [])
    check(len(vals) == 1 and close(vals[0][1], 4.0), "max(load1_max) over the window: %s" % vals)
    # the catalog
    res = iq(api, 'SHOW TAG VALUES FROM sonar_node WITH KEY = "node"')
    check(["node", "iq1"] in res.get("series", [{}])[0].get("values", []), "SHOW TAG VALUES lists iq1: %s" % res)
    res = iq(api, "SHOW FIELD KEYS FROM sonar_node")
    fields = [v[0] for v in res.get("series", [{}])[0].get("values", [])]
    check({"cpu_util", "mem_kb", "load1", "load5", "load15", "gpu_util", "gpu_power_w", "gpu_temp_c"} <= set(fields),
          "SHOW FIELD KEYS FROM sonar_node: %s" % fields)
    res = iq(api, "SHOW TAG KEYS FROM sonar_node")
    check(res.get("series", [{}])[0].get("values") == [["cluster"], ["node"]], "sonar_node's tags: %s" % res)


def gpus(api, ml1):
    D = epoch("2025-11-26T00:00:00Z")
    g0 = ml1["data"]["attributes"]["system"]["gpus"]
    g1 = [dict(g, ce_util=40 + 20 * i, memory=g.get("memory", 0) + 1000 * (i + 1), power=100 + i,
               temperature=g.get("temperature", 0) + 5) for i, g in enumerate(g0)]
    sent = []
    for t, gs in ((D + 3600, g0), (D + 3720, g1)):
        e = shifted(ml1, 0, gpus=gs)
        a = e["data"]["attributes"]
        a["node"], a["time"] = "iqgpu", rfc(t)
        api.post(e, "mlx.hpc.uio.no")
        sent.append(gs)
    res = iq(api, "SELECT mean(gpu_util), max(gpu_util_max), mean(gpu_mem_kb), mean(gpu_power_w), max(gpu_temp_max_c)"
                  " FROM sonar_gpu WHERE node = 'iqgpu' AND time >= %ds AND time < %ds GROUP BY time(1h), card fill(none)"
                  % (D, D + 86400), db="mlx.hpc.uio.no")
    series = {s["tags"]["card"]: s["values"] for s in res.get("series", [])}
    check(len(series) == len(g0), "one series per card: %s" % sorted(series))
    for i in range(len(g0)):
        gs = [s[i] for s in sent]
        rows = series.get(str(g0[i].get("index", i)), [])

        def avg(k):
            return sum(g.get(k, 0) for g in gs) / len(gs)
        ok = len(rows) == 1 and rows[0][0] == D + 3600 and close(rows[0][1], avg("ce_util")) \
            and rows[0][2] == max(g.get("ce_util", 0) for g in gs) and rows[0][3] == round(avg("memory")) \
            and close(rows[0][4], avg("power")) and rows[0][5] == max(g.get("temperature", 0) for g in gs)
        check(ok, "card %d: %s, sent %s" % (i, rows, gs))


def jobs(api, ml1):
    """sonar_job: per job and host, the resident memory of its processes in the sample (summed here
    from the envelope), tagged with the job, its user and the node."""
    a = ml1["data"]["attributes"]
    t = epoch(a["time"])
    hour = t - t % 3600
    for j in a["jobs"][:8]:
        want = sum(p.get("resident_memory", 0) for p in j["processes"])
        res = iq(api, "SELECT max(mem_kb), max(mem_max_kb) FROM sonar_job WHERE job = '%d' AND node = 'ml1' AND "
                      "time >= %ds AND time < %ds GROUP BY time(1h), \"user\" fill(none)" % (j["job"], hour, hour + 3600),
                 db="mlx.hpc.uio.no")
        series = res.get("series", [])
        ok = len(series) == 1 and series[0]["tags"] == {"user": j["user"]} and series[0]["values"] == [[hour, want, want]]
        check(ok, "job %d on ml1: %s, want memory %d of user %s" % (j["job"], series, want, j["user"]))
    res = iq(api, "SHOW TAG KEYS FROM sonar_job WHERE time >= %ds AND time < %ds" % (hour, hour + 3600), db="mlx.hpc.uio.no")
    check(res.get("series", [{}])[0].get("values") == [["cluster"], ["id"], ["job"], ["node"], ["user"]],
          "sonar_job's tags: %s" % res)


def main():
    api = Api()
    try:
        nodes(api, envelope(VM0))
        gpus(api, envelope(ML1))
        jobs(api, envelope(ML1))
        r = api.get("/query?q=SHOW+DATABASES")
        dbs = [v[0] for v in r.json()["results"][0]["series"][0]["values"]] if r.status == 200 else []
        check({"test.local", "mlx.hpc.uio.no"} <= set(dbs), "SHOW DATABASES lists the Sonar clusters: %s" % dbs)
        tok = api.tokens["test.local"]
        r = api.get("/query?q=SHOW+DATABASES", auth=("test.local", tok))
        check(r.status == 200 and r.json()["results"][0]["series"][0]["values"] == [["test.local"]],
              "an upload credential lists its own cluster only: %s" % r.body)
        r = api.get("/query?" + urllib.parse.urlencode({"q": "SELECT mean(cpu_util) FROM sonar_node", "db": "mlx.hpc.uio.no"}),
                    auth=("test.local", tok))
        check("authoriz" in r.body, "and may not read another's: %s" % r.body)
    finally:
        api.close()
    finish()


if __name__ == "__main__":
    main()
