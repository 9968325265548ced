"""fjord as cc-backend's metric store: the requests exactly as cc-backend's metric-store client
(internal/metricstoreclient) builds them — a GET with a JSON body written by Go's json.Encoder
(compact, fields in struct order, nil slices as null, a trailing newline), `?version=v2`, a Bearer
token, Go's default headers — and the answers decoded the way that client reads them:

- /api/query (LoadData, LoadStats, LoadNodeData): scope queries with type-ids and aggreg,
  with-stats, with-data, for-all-nodes with "queries": null; a host, metric or unit without data
  is left out of its result list (an empty list), as cc-metric-store does, never an "error" entry
  (cc-backend counts those as failures);
- /api/healthcheck (HealthCheck): {"cluster","nodes","metric-names"} answered with a map from node
  to {"State","HealthMetrics"}, HealthMetrics a JSON text {"degraded":[...],"missing":[...]}."""
import gzip
import http.client
import json
import os
import time

from harness import Fjord, check, finish

BASE = 1700000040
K = 5  # intervals of 60 s
HW = 4  # hwthreads per node: sockets [0,1] and [2,3]

CLUSTER = {"name": "fritz",
           "metricConfig": [{"name": "cpu_load", "scope": "node", "timestep": 60, "aggregation": None},
                            {"name": "mem_used", "scope": "node", "timestep": 60, "aggregation": None},
                            {"name": "cpu_user", "scope": "hwthread", "timestep": 60, "aggregation": "avg"}],
           "subClusters": [{"name": "main", "nodes": "f01[01-02],n[01-04]", "topology": {
               "node": list(range(HW)), "core": [[h] for h in range(HW)], "socket": [[0, 1], [2, 3]]}}]}


def go_json(obj):
    """What Go's json.NewEncoder(buf).Encode writes: compact, then a newline."""
    return (json.dumps(obj, separators=(",", ":")) + "\n").encode()


def go_get(f, path, body_obj, token):
    """A GET with a body as Go's http.Client sends it (no Content-Type)."""
    c = http.client.HTTPConnection("127.0.0.1", f.port, timeout=30)
    try:
        c.request("GET", path, body=go_json(body_obj), headers={
            "User-Agent": "Go-http-client/1.1", "Accept-Encoding": "gzip", "Authorization": "Bearer " + token})
        r = c.getresponse()
        body = r.read()
        if r.getheader("Content-Encoding") == "gzip":  # Go's transport asked for gzip and unpacks it
            body = gzip.decompress(body)
        return r.status, body.decode()
    finally:
        c.close()


def api_query(cluster, queries, from_, to, with_data=True, for_all_nodes=None):
    """cc-backend's APIQueryRequest (Cluster, Queries, ForAllNodes, From, To, WithStats, WithData)."""
    return {"cluster": cluster, "queries": queries, "for-all-nodes": for_all_nodes, "from": from_, "to": to,
            "with-stats": True, "with-data": with_data}


def api_q(metric, host, typ=None, type_ids=None, aggreg=False, resolution=60):
    """cc-backend's APIQuery: type and type-ids omitted when empty, fields in struct order."""
    q = {}
    if typ is not None:
        q["type"] = typ
    q["metric"] = metric
    q["host"] = host
    q["resolution"] = resolution
    if type_ids:
        q["type-ids"] = type_ids
    q["aggreg"] = aggreg
    return q


def lp_history():
    out = []
    for k in range(K):
        t = BASE + 60 * k
        for host, load in (("f0101", 1), ("f0102", 2)):
            out.append("cpu_load,hostname=%s,type=node value=%d %d" % (host, load + k, t))
        for h in range(HW):
            out.append("cpu_user,hostname=f0101,type=hwthread,type-id=%d value=%d %d" % (h, 10 * h + k, t))
    return ("\n".join(out) + "\n").encode()


def query_checks(f, token):
    path = "/api/query?version=v2"
    to = BASE + 60 * K
    series = lambda k0: [float(k0 + k) for k in range(K)]
    # LoadData: node scope, a socket from its hwthreads, hwthread scope, unit/host/metric without data
    queries = [
        api_q("cpu_load", "f0101"),
        api_q("cpu_user", "f0101", "hwthread", ["2", "3"], aggreg=True),
        api_q("cpu_user", "f0101", "hwthread", ["0", "1", "7"]),
        api_q("cpu_user", "f0101", "socket", ["0", "1"]),
        api_q("cpu_load", "f0999"),
        api_q("nosuch", "f0101"),
        api_q("cpu_user", "f0102", "hwthread", ["0", "1"]),
        api_q("cpu_user", "f0101", "hwthread", ["0", "1", "2", "3"], aggreg=True),
    ]
    st, body = go_get(f, path, api_query("fritz", queries, BASE, to), token)
    check(st == 200, "LoadData's request: 200 (%d %s)" % (st, body[:300]))
    if st != 200:
        return
    res = json.loads(body)["results"]
    check(len(res) == len(queries), "one result list per query, in order")
    check(not any("error" in d for row in res for d in row), "no error entries: %s" % body[:400])
    check(len(res[0]) == 1 and res[0][0]["data"] == series(1) and res[0][0]["avg"] == 3 and
          res[0][0]["min"] == 1 and res[0][0]["max"] == 5 and res[0][0]["resolution"] == 60,
          "node scope with stats: %s" % res[0])
    check(len(res[1]) == 1 and res[1][0]["data"] == series(25), "socket 1 as aggreg of hwthreads 2, 3: %s" % res[1])
    check(len(res[2]) == 2 and res[2][0]["data"] == series(0) and res[2][1]["data"] == series(10),
          "hwthread scope: hwthread 7 (no data) is left out: %s" % res[2])
    check(len(res[3]) == 2 and res[3][0]["data"] == series(5) and res[3][1]["data"] == series(25),
          "socket scope from the cluster.json topology: %s" % res[3])
    check(res[4] == [], "a host without data: an empty list (%s)" % res[4])
    check(res[5] == [], "a metric without data: an empty list (%s)" % res[5])
    check(res[6] == [], "a metric the host lacks at every id: an empty list (%s)" % res[6])
    check(len(res[7]) == 1 and res[7][0]["data"] == series(15), "node from its hwthreads: %s" % res[7])

    # LoadStats: with-data false, stats only
    st, body = go_get(f, path, api_query("fritz", [api_q("cpu_load", "f0102", resolution=0), api_q("nosuch", "f0102",
                                                                                                  resolution=0)],
                                         BASE, to, with_data=False), token)
    res = json.loads(body)["results"] if st == 200 else None
    check(res is not None and "data" not in res[0][0] and res[0][0]["avg"] == 4 and res[1] == [],
          "LoadStats' request: stats without data, missing metric empty (%d %s)" % (st, body[:300]))

    # LoadNodeData for every node: queries null, for-all-nodes; hosts in name order
    st, body = go_get(f, path, api_query("fritz", None, BASE, to, for_all_nodes=["cpu_load", "nosuch"]), token)
    j = json.loads(body) if st == 200 else {}
    qs = [(q["host"], q["metric"]) for q in j.get("queries") or []]
    check(qs[:4] == [("f0101", "cpu_load"), ("f0101", "nosuch"), ("f0102", "cpu_load"), ("f0102", "nosuch")],
          "for-all-nodes with queries null: %d %s" % (st, qs))
    res = j.get("results") or []
    check(len(res) == len(qs) and all((r == []) == (q[1] == "nosuch") for q, r in zip(qs, res)),
          "for-all-nodes: the missing metric's lists are empty, the others filled: %s" % body[:400])


def health_lines(now):
    """n01: every metric fresh; n02: one hwthread of cpu_user and mem_used stale (20 min);
    n03: only stale data; n04: a metric without configuration sent every 10 s, 100 s ago (six
    intervals of its own spacing: degraded) and one sent every 10 s until 20 s ago (fresh)."""
    out = []
    fresh = [now - 60 * i for i in range(3)]
    stale = [now - 1200 - 60 * i for i in range(3)]
    for host, mem_ts, user_ts, load_ts in (("n01", fresh, [fresh] * HW, fresh),
                                             ("n02", stale, [fresh] * (HW - 1) + [stale], fresh),
                                             ("n03", stale, [stale] * HW, stale)):
        for t in load_ts:
            out.append("cpu_load,hostname=%s,type=node value=1 %d" % (host, t))
        for t in mem_ts:
            out.append("mem_used,hostname=%s,type=node value=1 %d" % (host, t))
        for h, ts in enumerate(user_ts):
            for t in ts:
                out.append("cpu_user,hostname=%s,type=hwthread,type-id=%d value=1 %d" % (host, h, t))
    for i in range(5):
        out.append("tensec_old,hostname=n04,type=node value=1 %d" % (now - 100 - 10 * i))
        out.append("tensec_new,hostname=n04,type=node value=1 %d" % (now - 20 - 10 * i))
    return ("\n".join(out) + "\n").encode()


def health_checks(f, token, other):
    metrics = ["cpu_load", "cpu_user", "mem_used"]
    req = {"cluster": "fritz", "nodes": ["n03", "n01", "n02", "nope"], "metric-names": metrics + ["nosuch"]}
    st, body = go_get(f, "/api/healthcheck", req, token)
    check(st == 200, "HealthCheck's request: 200 (%d %s)" % (st, body[:300]))
    if st != 200:
        return
    ans = json.loads(body)
    check(sorted(ans) == ["n01", "n02", "n03", "nope"], "one entry per node asked: %s" % sorted(ans))
    check(all(set(v) == {"State", "HealthMetrics"} for v in ans.values()), "HealthCheckResult's fields: %s" % body)

    def hm(node):
        return json.loads(ans[node]["HealthMetrics"])

    check(ans["n01"]["State"] == "partial" and hm("n01") == {"degraded": [], "missing": ["nosuch"]},
          "n01: fresh but one metric missing: partial (%s)" % ans["n01"])
    check(ans["n02"]["State"] == "partial" and hm("n02") == {"degraded": ["cpu_user", "mem_used"], "missing": ["nosuch"]},
          "n02: one stale hwthread degrades cpu_user; stale mem_used (%s)" % ans["n02"])
    check(ans["n03"]["State"] == "failed" and hm("n03") == {"degraded": metrics, "missing": ["nosuch"]},
          "n03: nothing fresh: failed (%s)" % ans["n03"])
    check(ans["nope"] == {"State": "failed", "HealthMetrics": ""}, "an unknown node: failed (%s)" % ans["nope"])
    check(ans["n01"]["HealthMetrics"] == '{"degraded":[],"missing":["nosuch"]}',
          "HealthMetrics as Go's json.Marshal of the map writes it: %r" % ans["n01"]["HealthMetrics"])

    st, body = go_get(f, "/api/healthcheck", {"cluster": "fritz", "nodes": ["n01"], "metric-names": metrics}, token)
    check(st == 200 and json.loads(body) == {"n01": {"State": "full", "HealthMetrics": '{"degraded":[],"missing":[]}'}},
          "every metric fresh: full (%d %s)" % (st, body))
    st, body = go_get(f, "/api/healthcheck", {"cluster": "fritz", "nodes": ["n04", "n04"],
                                              "metric-names": ["tensec_old", "tensec_new"]}, token)
    ans = json.loads(body) if st == 200 else {}
    check(list(ans) == ["n04"] and ans["n04"]["State"] == "partial" and
          json.loads(ans["n04"]["HealthMetrics"]) == {"degraded": ["tensec_old"], "missing": []},
          "an unconfigured metric is judged by the spacing of its data (%d %s)" % (st, body))
    st, body = go_get(f, "/api/healthcheck", {"cluster": "fritz", "nodes": None, "metric-names": metrics}, token)
    check(st == 200 and json.loads(body) == {}, "no nodes: an empty map (%d %s)" % (st, body))

    # refused as every read is
    st, body = go_get(f, "/api/healthcheck", req, other)
    check(st == 403, "another cluster's credential: 403 (%d)" % st)
    st, body = go_get(f, "/api/healthcheck", req, "not-a-token")
    check(st == 401, "a bad credential: 401 (%d)" % st)
    st, body = go_get(f, "/api/healthcheck", {"nodes": ["n01"]}, token)
    check(st == 400 and "cluster" in body, "no cluster: 400 (%d %s)" % (st, body))
    st, body = go_get(f, "/api/healthcheck", {"cluster": "fritz", "nodes": "n01"}, token)
    check(st == 400 and "nodes" in body, "nodes not an array: 400 (%d %s)" % (st, body))
    # the older forms stay
    r = f.get("/api/healthcheck", auth=token)
    check(r.status == 200 and r.json() == {"status": "ok"}, "no body, no parameters: ok (%d %s)" % (r.status, r.body))
    r = f.get("/api/healthcheck?cluster=fritz&node=n01", auth=token)
    check(r.status == 200 and r.json()["status"] == "healthy", "?cluster=&node=: healthy (%s)" % r.body)


def main():
    f = Fjord()
    try:
        path = os.path.join(f.tmp, "cluster.json")
        with open(path, "w") as fh:
            json.dump(CLUSTER, fh)
        f.extra = ["--cc-cluster-config", path]
        token = f.token("fritz")
        other = f.token("other")
        f.start()
        r = f.post("/api/write?cluster=fritz", lp_history(), headers={"Content-Type": "text/plain"}, auth=token)
        check(r.status == 200, "history written (%d %s)" % (r.status, r.body))
        now = int(time.time())
        r = f.post("/api/write?cluster=fritz", health_lines(now), headers={"Content-Type": "text/plain"}, auth=token)
        check(r.status == 200, "recent points written (%d %s)" % (r.status, r.body))
        query_checks(f, token)
        health_checks(f, token, other)
        # the same answers from sealed chunks
        check(f.stop() == 0, "clean stop")
        f.start()
        query_checks(f, token)
        health_checks(f, token, other)
    finally:
        f.cleanup()
    finish()


if __name__ == "__main__":
    main()
