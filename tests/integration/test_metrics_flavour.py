"""Which line-protocol lines are ClusterCockpit's (docs/metrics.md, "Which `value` lines are
ClusterCockpit's"): collectd's lines (Telegraf's collectd input: a `type` tag that is no
ClusterCockpit scope, a `value` field) are stored as plain InfluxDB lines with every tag and answer
through /query as influxd would; ClusterCockpit's own lines keep their series; and series stored
under the rule before (a `value` line without `type` read as ClusterCockpit's, its other tags lost)
answer as they did through /query and /api/query, beside the plain series new lines make."""
import json
import urllib.parse

from harness import Fjord, check, finish

S = 1700000000
CL = "fl"


def ns(k):
    return (S + 10 * k) * 10**9


def q(f, tok, query, **params):
    params = dict(params, q=query, db=CL, epoch="s")
    r = f.request("GET", "/query?" + urllib.parse.urlencode(params), auth=(CL, tok))
    check(r.status == 200, "%s: 200 (%d %s)" % (query, r.status, r.body[:300]))
    res = r.json()["results"][0] if r.status == 200 else {}
    check("error" not in res, "%s: no error (%s)" % (query, res.get("error")))
    return res.get("series", [])


def ccms(f, tok, metric, host):
    body = {"cluster": CL, "from": S, "to": S + 2000, "with-stats": False, "with-padding": False,
            "queries": [{"metric": metric, "host": host, "resolution": 10}]}
    r = f.request("POST", "/api/query", json.dumps(body), headers={"Content-Type": "application/json"}, auth=tok)
    check(r.status == 200, "/api/query %s: 200 (%d %s)" % (metric, r.status, r.body[:300]))
    res = r.json()["results"][0] if r.status == 200 else []
    return [x for r_ in res for x in r_.get("data", []) if x is not None]


def write(f, tok, lines, want=204):
    r = f.request("POST", "/write?db=%s&precision=ns" % CL, "\n".join(lines) + "\n", auth=(CL, tok))
    check(r.status == want, "write: %d (%d %s)" % (want, r.status, r.body[:300]))
    return r


def collectd_lines():
    out = []
    for k in range(6):
        for inst in ("0", "1"):
            for ti, v in (("user", 10 + k), ("system", 2 + k), ("idle", 80 - k)):
                out.append("cpu_value,host=c01,instance=%s,type=cpu,type_instance=%s value=%d %d" % (inst, ti, v + int(inst), ns(k)))
        out.append("load_shortterm,host=c01,type=load value=%s %d" % (0.5 + k / 10, ns(k)))
        out.append("memory_value,host=c01,type=memory,type_instance=used value=%d %d" % (1000 + k, ns(k)))
    return out


def tagged(series):
    return [(x["name"], x.get("tags"), [v[1] for v in x["values"]]) for x in series]


def names(f, tok):
    """Dots in measurements and commas in tags (docs/metrics.md, "Names"): whole and exact now,
    and the series stored before with them bare answer as they did."""
    t0 = 100
    write(f, tok, ["ib.rcv_bytes,hostname=n1,type=node value=%d %d" % (k, ns(t0 + k)) for k in range(3)] +
          ["node.temp,host=n1 celsius=%d %d" % (40 + k, ns(t0 + k)) for k in range(3)] +
          ["fs,host=n1,path=/scratch/a\\,b used=%d %d" % (k, ns(t0 + k)) for k in range(3)])
    since = "time >= %ds" % (S + 10 * t0)
    check(tagged(q(f, tok, "SELECT value FROM \"ib.rcv_bytes\" WHERE %s" % since)) ==
          [("ib.rcv_bytes", None, [0, 1, 2])], "a ClusterCockpit metric with a dot is one measurement")
    check(tagged(q(f, tok, "SELECT celsius FROM \"node.temp\" WHERE %s GROUP BY *" % since)) ==
          [("node.temp", {"cluster": CL, "host": "n1"}, [40, 41, 42])], "a plain measurement with a dot is whole")
    check(tagged(q(f, tok, "SELECT used FROM fs WHERE path = '/scratch/a,b' AND %s GROUP BY path" % since)) ==
          [("fs", {"path": "/scratch/a,b"}, [0, 1, 2])], "a tag with a comma reads back exactly")
    s = q(f, tok, "SHOW SERIES FROM fs")
    check(s and s[0]["values"] == [["fs,cluster=fl,host=n1,path=/scratch/a\\,b"]], "SHOW SERIES escapes: %s" % s)
    check(ccms(f, tok, "ib.rcv_bytes", "n1") == [0.0, 1.0, 2.0], "/api/query reads the dotted metric")
    # the keys the rule before wrote: names and tags bare
    f.stop()
    f.execute("UPDATE ts_series SET metric = 'ib.rcv_bytes' WHERE metric = 'ib\\.rcv_bytes';"
              "UPDATE ts_series SET metric = 'node.temp.celsius' WHERE metric = 'node\\.temp.celsius';"
              "UPDATE ts_series SET stype_id = '/scratch/a,b' WHERE metric = 'fs.used'")
    f.start()
    check(tagged(q(f, tok, "SELECT rcv_bytes FROM ib WHERE %s GROUP BY *" % since)) ==
          [("ib", {"cluster": CL, "host": "n1"}, [0, 1, 2])], "stored before: ib.rcv_bytes reads as then")
    check(tagged(q(f, tok, "SELECT \"temp.celsius\" FROM node WHERE %s GROUP BY *" % since)) ==
          [("node", {"cluster": CL, "host": "n1"}, [40, 41, 42])], "stored before: node.temp reads as then")
    check(tagged(q(f, tok, "SELECT used FROM fs WHERE %s GROUP BY *" % since)) ==
          [("fs", {"cluster": CL, "host": "n1", "stype": "path", "stype-id": "/scratch/a,b"}, [0, 1, 2])],
          "stored before: the folded comma reads as then")
    check(ccms(f, tok, "ib.rcv_bytes", "n1") == [0.0, 1.0, 2.0], "stored before: /api/query reads it as then")
    # the same lines now go to their new keys, and /api/query reads both
    write(f, tok, ["ib.rcv_bytes,hostname=n1,type=node value=%d %d" % (k, ns(t0 + k)) for k in range(3, 5)])
    check(ccms(f, tok, "ib.rcv_bytes", "n1") == [0.0, 1.0, 2.0, 3.0, 4.0], "/api/query reads old and new series")
    check(tagged(q(f, tok, "SELECT value FROM \"ib.rcv_bytes\" WHERE %s" % since)) ==
          [("ib.rcv_bytes", None, [3, 4])], "the new series under the whole name")


def main():
    f = Fjord().start()
    try:
        tok = f.token(CL)
        # --- collectd's lines: refused before (no type-id), plain InfluxDB now
        write(f, tok, collectd_lines())
        keys = q(f, tok, "SHOW TAG KEYS FROM cpu_value")
        got = [v[0] for v in keys[0]["values"]] if keys else []
        check(got == ["cluster", "host", "instance", "type", "type_instance"], "collectd's tags kept: %s" % got)
        s = q(f, tok, "SELECT value FROM cpu_value WHERE type_instance = 'user' AND instance = '1' AND time >= %ds" % S)
        vals = [v[1] for v in s[0]["values"]] if s else []
        check(vals == [11 + k for k in range(6)], "cpu_value user of cpu 1: %s" % vals)
        s = q(f, tok, "SELECT mean(value) FROM cpu_value WHERE time >= %ds AND time < %ds GROUP BY type_instance" % (S, S + 60))
        means = {x["tags"]["type_instance"]: x["values"][0][1] for x in s}
        want = {"idle": sum(80 - k + 0.5 for k in range(6)) / 6, "system": sum(2 + k + 0.5 for k in range(6)) / 6,
                "user": sum(10 + k + 0.5 for k in range(6)) / 6}
        check(means.keys() == want.keys() and all(abs(means[k] - want[k]) < 1e-9 for k in want),
              "mean per type_instance: %s" % means)
        s = q(f, tok, "SELECT last(value) FROM load_shortterm WHERE type = 'load' AND time >= %ds" % S)
        check(s and abs(s[0]["values"][0][1] - 1.0) < 1e-9, "load_shortterm's last value: %s" % s)
        s = q(f, tok, "SHOW SERIES FROM memory_value")
        check(s and s[0]["values"] == [["memory_value,cluster=fl,host=c01,type=memory,type_instance=used"]],
              "memory_value's series key: %s" % s)

        # --- ClusterCockpit's lines: still its own, with type-id; a scope without type-id refused
        write(f, tok, ["flops_any,hostname=n1,type=core,type-id=%d value=%d %d" % (c, 100 * c + k, ns(k))
                       for k in range(6) for c in range(2)] +
              ["cpu_load,hostname=n1,type=node,unit=load value=%d %d" % (k, ns(k)) for k in range(6)])
        check(ccms(f, tok, "cpu_load", "n1") == [float(k) for k in range(6)], "/api/query reads cc's node metric")
        s = q(f, tok, "SELECT value FROM flops_any WHERE \"type-id\" = '1' AND time >= %ds" % S)
        check(s and [v[1] for v in s[0]["values"]] == [100 + k for k in range(6)], "cc's core metric by type-id: %s" % s)
        r = write(f, tok, ["x,hostname=n1,type=socket value=1 %d" % ns(0)], want=400)
        check("type-id" in r.body, "a ClusterCockpit scope without type-id is refused: %s" % r.body[:200])

        # --- InfluxDB's own example: `region` kept (the ClusterCockpit reading dropped it)
        write(f, tok, ["cpu_load_short,host=server01,region=%s value=%s %d" % (reg, v, ns(0))
                       for reg, v in (("us-west", "0.64"), ("us-east", "0.5"))])
        s = q(f, tok, "SELECT value FROM cpu_load_short WHERE time >= %ds GROUP BY region" % S)
        check([(x["tags"]["region"], x["values"][0][1]) for x in s] == [("us-east", 0.5), ("us-west", 0.64)],
              "one series per region: %s" % s)

        # --- series stored under the rule before: `old,host=h1,region=r1 value=` was ClusterCockpit's
        # metric `old` of host h1 (region dropped). Write it, then give its series the key the rule
        # before gave it, as a database written by that fjord holds it.
        write(f, tok, ["old,host=h1,region=r1 value=%d %d" % (k, ns(k)) for k in range(3)])
        f.stop()
        f.execute("UPDATE ts_series SET metric = 'old', stype = '', stype_id = '' WHERE metric = 'old.value'")
        f.start()
        s = q(f, tok, "SELECT value FROM old WHERE time >= %ds GROUP BY *" % S)
        check([(x["tags"], [v[1] for v in x["values"]]) for x in s] ==
              [({"cluster": CL, "hostname": "h1", "type": "node"}, [0, 1, 2])],
              "old series answers /query as before: %s" % s)
        check(ccms(f, tok, "old", "h1") == [0.0, 1.0, 2.0], "old series answers /api/query as before")
        # the same line now: a plain line's series beside it, both under the name
        write(f, tok, ["old,host=h1,region=r1 value=%d %d" % (k, ns(k)) for k in range(3, 5)])
        s = q(f, tok, "SELECT value FROM old WHERE time >= %ds GROUP BY *" % S)
        check([(x["tags"], [v[1] for v in x["values"]]) for x in s] ==
              [({"cluster": CL, "host": "", "hostname": "h1", "region": "", "type": "node"}, [0, 1, 2]),
               ({"cluster": CL, "host": "h1", "hostname": "", "region": "r1", "type": ""}, [3, 4])],
              "old and new series both under `old`: %s" % s)
        check(ccms(f, tok, "old", "h1") == [0.0, 1.0, 2.0], "/api/query's metric `old` unchanged")
        # a ClusterCockpit line of the same shape as before reaches the same series
        n_series = f.query("SELECT count(*) FROM ts_series")[0][0]
        write(f, tok, ["cpu_load,hostname=n1,type=node value=9 %d" % ns(7), "nots,hostname=n1 value=1 %d" % ns(7)])
        write(f, tok, ["nots,hostname=n1 value=2 %d" % ns(8)])
        check(f.query("SELECT count(*) FROM ts_series")[0][0] == n_series + 1, "ClusterCockpit's lines keep their series")

        names(f, tok)
        check(f.stop() == 0, "fjord exits 0")
    finally:
        f.cleanup()
    finish()


if __name__ == "__main__":
    main()
