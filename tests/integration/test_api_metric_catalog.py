"""The metric catalogue (GET /api/v1/metrics/catalog; docs/metrics.md "The metric catalogue"): a
cluster sends ClusterCockpit metrics through /api/write at known scopes, hosts and intervals, a
second cluster others; the catalogue lists each metric of the cluster asked for once, with its
scopes, hosts, series, interval measured from the points, and its unit from the cc-backend cluster
configuration (cc-backend_cluster-alex.json) where it names the metric; CSV; the window; 401, 403."""
import csv
import io
import os
import time

from harness import SHARED, Fjord, check, finish

CLUSTER_JSON = os.path.join(SHARED, "data", "cc", "cc-backend_cluster-alex.json")
NOW = int(time.time()) // 60 * 60


def lines():
    out = []
    # cpu_load: node scope, every 60 s on a0101..a0103 (the configuration: unit "", timestep 60)
    for h in ("a0101", "a0102", "a0103"):
        for k in range(30):
            out.append("cpu_load,cluster=alex,hostname=%s,type=node value=%d %d" % (h, k, NOW - 3600 + 60 * k))
    # cpu_user: hwthread scope, 4 threads on a0101, every 30 s
    for t in range(4):
        for k in range(20):
            out.append("cpu_user,cluster=alex,hostname=a0101,type=hwthread,type-id=%d value=50 %d"
                       % (t, NOW - 1200 + 30 * k))
    # mem_used: node on a0101, socket on a0102 (two scopes), every 10 s (unit GB in the configuration)
    for k in range(12):
        out.append("mem_used,cluster=alex,hostname=a0101,type=node value=3 %d" % (NOW - 120 + 10 * k))
        out.append("mem_used,cluster=alex,hostname=a0102,type=socket,type-id=0 value=1 %d" % (NOW - 120 + 10 * k))
    # a metric the configuration does not name; one point only: no interval
    out.append("my_metric,cluster=alex,hostname=a0103,type=accelerator,type-id=00000000:01:00.0 value=1 %d" % NOW)
    # another cluster's
    out.append("other_metric,cluster=beta,hostname=b1,type=node value=1 %d" % NOW)
    return "\n".join(out) + "\n"


def main():
    f = Fjord("--cc-cluster-config", CLUSTER_JSON)
    tok = f.token("alex")
    tok_b = f.token("beta")
    reader = f.token("reader", "--read-only")
    f.start()
    try:
        body = lines()
        r = f.post("/api/write?cluster=alex", "\n".join(x for x in body.splitlines() if "cluster=beta" not in x),
                   headers={"Content-Type": "text/plain"}, auth=("alex", tok))
        check(r.status in (200, 204), "write alex: %d %s" % (r.status, r.body[:200]))
        r = f.post("/api/write?cluster=beta", "\n".join(x for x in body.splitlines() if "cluster=beta" in x),
                   headers={"Content-Type": "text/plain"}, auth=("beta", tok_b))
        check(r.status in (200, 204), "write beta: %d %s" % (r.status, r.body[:200]))
        r = f.get("/api/v1/metrics/catalog?cluster=alex", auth=("reader", reader))
        check(r.status == 200, "catalog: %d %s" % (r.status, r.body[:300]))
        doc = r.json() if r.status == 200 else {}
        got = {m["metric"]: m for m in doc.get("metrics", [])}
        check(list(got) == ["cpu_load", "cpu_user", "mem_used", "my_metric"], "the metrics, by name: %s" % list(got))
        want = {
            "cpu_load": ("", ["node"], 60, ["a0101", "a0102", "a0103"], 3),
            "cpu_user": ("", ["hwthread"], 30, ["a0101"], 4),
            "mem_used": ("GB", ["node", "socket"], 10, ["a0101", "a0102"], 2),
            "my_metric": (None, ["accelerator"], None, ["a0103"], 1),
        }
        for name, (unit, scopes, freq, hosts, series) in want.items():
            m = got.get(name, {})
            check(m.get("unit") == unit and m.get("scopes") == scopes and m.get("frequency_s") == freq
                  and m.get("hosts") == hosts and m.get("n_hosts") == len(hosts) and m.get("series") == series,
                  "%s: %s" % (name, m))
        # a window without points: the interval falls back to the configuration's timestep
        r = f.get("/api/v1/metrics/catalog?cluster=alex&from=%d&to=%d" % (NOW - 90 * 86400, NOW - 80 * 86400),
                  auth=("reader", reader))
        old = {m["metric"]: m for m in r.json().get("metrics", [])} if r.status == 200 else {}
        check(old.get("cpu_user", {}).get("frequency_s") == 60 and old.get("my_metric", {}).get("frequency_s") is None
              and old.get("mem_used", {}).get("hosts") == ["a0101", "a0102"],
              "an old window: the configured timestep, the same hosts: %s" % old)
        r = f.get("/api/v1/metrics/catalog?cluster=alex&format=csv", auth=("reader", reader))
        rows = list(csv.DictReader(io.StringIO(r.body))) if r.status == 200 else []
        check([x["metric"] for x in rows] == list(want) and rows and list(rows[0])[:4] ==
              ["metric", "unit", "scopes", "frequency_s"], "CSV: %s" % rows[:1])
        r = f.get("/api/v1/metrics/catalog?cluster=beta", auth=("reader", reader))
        check(r.status == 200 and [m["metric"] for m in r.json().get("metrics", [])] == ["other_metric"],
              "beta's own: %s" % r.body[:200])
        r = f.get("/api/v1/metrics/catalog?cluster=none.such", auth=("reader", reader))
        check(r.status == 200 and r.json().get("metrics") == [], "a cluster without series: no rows")
        check(f.get("/api/v1/metrics/catalog?cluster=alex").status == 401, "no credential: 401")
        check(f.get("/api/v1/metrics/catalog?cluster=alex", auth=("beta", tok_b)).status == 403,
              "another cluster's credential: 403")
        check(f.get("/api/v1/metrics/catalog", auth=("reader", reader)).status == 400, "no cluster: 400")
        doc = f.get("/api/v1/openapi.json").json()
        check("/api/v1/metrics/catalog" in doc.get("paths", {}), "in the OpenAPI document")
    finally:
        check(f.stop() == 0, "SIGTERM exits 0")
        f.cleanup()
    finish()


if __name__ == "__main__":
    main()
