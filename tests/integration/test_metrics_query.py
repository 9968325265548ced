"""cc-metric-store's query API (GET|POST /api/query), /api/healthcheck and ClusterCockpit events
(GET /api/v1/events): node level, hwthread -> socket aggregation with and without a cluster.json,
per-id results, aggreg, subtypes, resolution, scale-by, with-stats/-data/-padding, for-all-nodes,
NaN as null, unsealed and sealed points alike."""
import json
import math
import os

from harness import Fjord, check, finish, SHARED

BASE = 1700000040
K = 10  # intervals of 60 s
SAMPLE = open(os.path.join(SHARED, "data", "lineproto", "cc-synthetic-fritz-2nodes-1interval.lp")).read().splitlines()
CLUSTER_JSON = os.path.join(SHARED, "data", "cc", "cc-backend_cluster-fritz.json")


def parse(line):
    head, fields, ts = line.split(" ")
    parts = head.split(",")
    tags = dict(p.split("=", 1) for p in parts[1:])
    return parts[0], tags, float(fields.split("=", 1)[1]), int(ts)


def scaled(v, k):
    return round(v * (1 + k / 10.0), 4)


def body():
    out = []
    for k in range(K):
        for line in SAMPLE:
            m, tags, v, ts = parse(line)
            tagstr = ",".join("%s=%s" % kv for kv in tags.items())
            out.append("%s,%s value=%r %d" % (m, tagstr, scaled(v, k), ts + 60 * k))
    return ("\n".join(out) + "\n").encode()


def values(metric, host, typ=None, ids=None):
    """{interval k: [values of the matching series]}"""
    res = {}
    for line in SAMPLE:
        m, tags, v, ts = parse(line)
        if m != metric or tags["hostname"] != host:
            continue
        if typ and (tags["type"] != typ or (ids is not None and tags["type-id"] not in ids)):
            continue
        for k in range(K):
            res.setdefault(k, []).append(scaled(v, k))
    return res


def close(a, b):
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= 1e-6 * max(1.0, abs(b))


def q(f, token, body_obj, method="POST"):
    return f.request(method, "/api/query", json.dumps(body_obj), headers={"Content-Type": "application/json"}, auth=token)


def checks(f, token, label):
    req = {"cluster": "fritz", "from": BASE, "to": BASE + 60 * K, "queries": [
        {"metric": "cpu_load", "host": "f0101"},
        {"metric": "cpu_user", "host": "f0101", "type": "socket", "type-ids": ["0", "1"]},
        {"metric": "cpu_user", "host": "f0101", "type": "hwthread", "type-ids": ["0", "1", "71"], "aggreg": True},
        {"metric": "cpu_user", "host": "f0101", "type": "hwthread", "type-ids": ["3", "4"]},
        {"metric": "mem_bw", "host": "f0102", "type": "socket", "type-ids": ["1"], "scale-by": 2},
        {"metric": "cpu_user", "host": "f0101"},
        {"metric": "cpu_load", "host": "f0101", "resolution": 300},
        {"metric": "nosuch", "host": "f0101"},
    ]}
    r = q(f, token, req)
    check(r.status == 200, "%s: query 200 (%d %s)" % (label, r.status, r.body[:200]))
    if r.status != 200:
        return
    res = r.json()["results"]
    check(len(res) == len(req["queries"]), label + ": one result list per query")
    # node level
    d = res[0][0]
    want = values("cpu_load", "f0101")
    check(d["resolution"] == 60 and d["from"] == BASE and d["to"] == BASE + 60 * K, "%s: node-level range %s" % (label, d))
    check(all(close(d["data"][k], want[k][0]) for k in range(K)), label + ": node-level cpu_load values")
    check(close(d["avg"], sum(v[0] for v in want.values()) / K), label + ": avg")
    check(close(d["min"], min(v[0] for v in want.values())) and close(d["max"], max(v[0] for v in want.values())),
          label + ": min/max")
    # hwthread -> socket, one result per socket, averaged (cluster.json: cpu_user avg)
    check(len(res[1]) == 2, label + ": two sockets, two results")
    for s in (0, 1):
        want = values("cpu_user", "f0101", "hwthread", [str(i) for i in range(36 * s, 36 * s + 36)])
        check(all(close(res[1][s]["data"][k], sum(want[k]) / 36) for k in range(K)),
              "%s: socket %d is the mean of its 36 hwthreads" % (label, s))
    # aggreg over given ids
    want = values("cpu_user", "f0101", "hwthread", ["0", "1", "71"])
    check(len(res[2]) == 1 and all(close(res[2][0]["data"][k], sum(want[k]) / 3) for k in range(K)),
          label + ": aggreg of three hwthreads")
    # one result per id
    check(len(res[3]) == 2, label + ": per-id results")
    for i, tid in enumerate(["3", "4"]):
        want = values("cpu_user", "f0101", "hwthread", [tid])
        check(all(close(res[3][i]["data"][k], want[k][0]) for k in range(K)), "%s: hwthread %s" % (label, tid))
    # scale-by
    want = values("mem_bw", "f0102", "socket", ["1"])
    check(all(close(res[4][0]["data"][k], 2 * want[k][0]) for k in range(K)), label + ": scale-by 2")
    check(close(res[4][0]["avg"], 2 * sum(v[0] for v in want.values()) / K), label + ": scaled stats")
    # node level of a hwthread metric: all hwthreads combined
    want = values("cpu_user", "f0101", "hwthread")
    check(all(close(res[5][0]["data"][k], sum(want[k]) / 72) for k in range(K)), label + ": node level from hwthreads")
    # resolution 300: means of 5 intervals, aligned to multiples of 300
    d = res[6][0]
    want = values("cpu_load", "f0101")
    check(d["resolution"] == 300, label + ": resolution 300")
    b0 = (BASE // 300) * 300
    ok = True
    for i, x in enumerate(d["data"]):
        ks = [k for k in range(K) if b0 + 300 * i <= BASE + 60 * k < b0 + 300 * (i + 1)]
        exp = sum(want[k][0] for k in ks) / len(ks) if ks else None
        ok = ok and close(x, exp)
    check(ok, "%s: downsampled values %s" % (label, d["data"]))
    check(res[7] == [], label + ": an unknown metric is left out, as cc-metric-store does (%s)" % res[7])


def main():
    f = Fjord("--cc-cluster-config", CLUSTER_JSON)
    try:
        token = f.token("fritz")
        other = f.token("other")
        reader = f.token("reader", "--read-only")
        f.start()
        r = f.post("/api/write?cluster=fritz", body(), headers={"Content-Type": "text/plain"}, auth=token)
        check(r.status == 200, "write %d intervals (%d %s)" % (K, r.status, r.body))
        checks(f, token, "unsealed")

        # GET with a body, as cc-metric-store's swagger has it; a read-only credential may read
        r = q(f, reader, {"cluster": "fritz", "from": BASE, "to": BASE + 60, "queries": [{"metric": "cpu_load", "host": "f0102"}]},
              method="GET")
        check(r.status == 200 and len(r.json()["results"][0][0]["data"]) == 1, "GET with body: %d %s" % (r.status, r.body))
        r = q(f, other, {"cluster": "fritz", "from": BASE, "to": BASE + 60, "queries": []})
        check(r.status == 403, "another cluster's credential: 403 (%d)" % r.status)
        r = q(f, token, {"from": BASE, "to": BASE + 60})
        check(r.status == 400, "no cluster: 400 (%d)" % r.status)
        r = f.request("POST", "/api/query", "{not json", auth=token)
        check(r.status == 400, "bad JSON: 400 (%d)" % r.status)

        # for-all-nodes: node-level queries for every host, listed in "queries"
        r = q(f, token, {"cluster": "fritz", "from": BASE, "to": BASE + 120, "for-all-nodes": ["cpu_load", "mem_used"],
                         "with-stats": False})
        j = r.json()
        check([(x["host"], x["metric"]) for x in j.get("queries", [])] ==
              [("f0101", "cpu_load"), ("f0101", "mem_used"), ("f0102", "cpu_load"), ("f0102", "mem_used")],
              "for-all-nodes expands hosts x metrics: %s" % j.get("queries"))
        check(len(j["results"]) == 4 and "avg" not in j["results"][0][0], "with-stats false: no stats")
        # with-data false, padding, NaN as null
        r = q(f, token, {"cluster": "fritz", "from": BASE - 600, "to": BASE + 120, "with-data": False,
                         "queries": [{"metric": "cpu_load", "host": "f0101"}]})
        d = r.json()["results"][0][0]
        check("data" not in d and d["avg"] is not None, "with-data false: stats only (%s)" % d)
        r = q(f, token, {"cluster": "fritz", "from": BASE - 600, "to": BASE + 120,
                         "queries": [{"metric": "cpu_load", "host": "f0101"}]})
        d = r.json()["results"][0][0]
        check(d["from"] == BASE - 600 and d["data"][:10] == [None] * 10 and d["data"][10] is not None,
              "with-padding (default): leading nulls for missing data")
        r = q(f, token, {"cluster": "fritz", "from": BASE - 600, "to": BASE + 120, "with-padding": False,
                         "queries": [{"metric": "cpu_load", "host": "f0101"}]})
        d = r.json()["results"][0][0]
        check(d["from"] == BASE and None not in d["data"], "with-padding false: trimmed to the data (%s)" % d)
        # flops_any is summed (cluster.json)
        r = q(f, token, {"cluster": "fritz", "from": BASE, "to": BASE + 60,
                         "queries": [{"metric": "flops_any", "host": "f0101", "type": "socket", "type-ids": ["1"]}]})
        want = values("flops_any", "f0101", "hwthread", [str(i) for i in range(36, 72)])
        check(close(r.json()["results"][0][0]["data"][0], sum(want[0])), "cluster.json aggregation sum for flops_any")

        # health check
        r = f.get("/api/healthcheck", auth=token)
        check(r.status == 200, "healthcheck: 200 (%d)" % r.status)
        r = f.get("/api/healthcheck?cluster=fritz&node=f0101", auth=token)
        check(r.status == 200 and r.json()["status"] == "healthy", "healthcheck of a node with data (%s)" % r.body)
        r = f.get("/api/healthcheck?cluster=fritz&node=nope", auth=token)
        check(r.status == 404, "healthcheck of an unknown node: 404 (%d)" % r.status)

        # events, logs, controls: stored and listed
        ev = (b'job,hostname=mngmt02,type=node,function=other event="{\\"x\\":1}" 1740027951\n'
              b'ccb,hostname=server01,type=node,loglevel=info log="archiving finished" 1740027952\n'
              b'rapl,hostname=e1208,type=socket,type-id=2,method=GET control="intel.pkg.energy_status" 1740027953\n'
              b'slurm,hostname=m1 event="drain n1" 1740027960\n')
        r = f.post("/api/write?cluster=fritz", ev, headers={"Content-Type": "text/plain"}, auth=token)
        check(r.status == 200, "events written: %d %s" % (r.status, r.body))
        r = f.post("/api/write?cluster=fritz", ev, headers={"Content-Type": "text/plain"}, auth=token)
        check(r.status == 200, "re-sent events: 200")
        r = f.get("/api/v1/events?cluster=fritz", auth=token)
        evs = r.json()["events"]
        check([e["kind"] for e in evs] == ["event", "log", "control", "event"], "all kinds, in time order, once: %s" % r.body)
        check(evs[1]["payload"] == "archiving finished" and evs[1]["tags"]["loglevel"] == "info" and evs[1]["host"] == "server01",
              "log payload and tags")
        r = f.get("/api/v1/events?cluster=fritz&kind=event&from=1740027955", auth=token)
        check([e["payload"] for e in r.json()["events"]] == ["drain n1"], "kind and from filter: %s" % r.body)
        r = f.get("/api/v1/events?cluster=fritz&kind=bogus", auth=token)
        check(r.status == 400, "bad kind: 400")
        r = f.get("/api/v1/events?cluster=fritz", auth=other)
        check(r.status == 403, "events of another cluster: 403")

        # after a restart the same answers come from sealed chunks
        check(f.stop() == 0, "clean stop")
        f.start()
        checks(f, token, "sealed")
        check(f.stop() == 0, "clean stop")

        # a cluster.json whose subcluster names the host: its topology decides (even/odd sockets)
        topo = {"metricConfig": [{"name": "cpu_user", "timestep": 60, "aggregation": "sum"}],
                "subClusters": [{"name": "x", "nodes": "f01[01-02]", "topology": {
                    "node": list(range(72)), "core": [[i] for i in range(72)],
                    "socket": [list(range(0, 72, 2)), list(range(1, 72, 2))]}}]}
        path = os.path.join(f.tmp, "cluster.json")
        with open(path, "w") as fh:
            json.dump(topo, fh)
        f.extra = ["--cc-cluster-config", path]
        f.start()
        r = q(f, token, {"cluster": "fritz", "from": BASE, "to": BASE + 60,
                         "queries": [{"metric": "cpu_user", "host": "f0101", "type": "socket", "type-ids": ["1"]}]})
        want = values("cpu_user", "f0101", "hwthread", [str(i) for i in range(1, 72, 2)])
        check(close(r.json()["results"][0][0]["data"][0], sum(want[0])),
              "the configured topology (odd hwthreads in socket 1) and aggregation (sum) are used: %s" % r.body)
    finally:
        f.cleanup()
    finish()


if __name__ == "__main__":
    main()
