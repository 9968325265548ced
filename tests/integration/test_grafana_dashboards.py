"""deploy/grafana/: every query of the two dashboards, with Grafana's macros expanded as Grafana
documents them for its InfluxDB data source ($timeFilter, $__interval from the range and the panel's
maxDataPoints rounded to Grafana's steps and held to the data source's timeInterval, query
variables run first and their values interpolated as a regular expression), is run against a fjord
holding the real Sonar envelopes and ClusterCockpit line protocol; every query must answer a
non-empty series, and the memory and CPU-load panels the figures computed here from what was sent.
The provisioning file must name a data source of type influxdb in InfluxQL mode."""
import json
import os
import re
import urllib.parse

from api_common import Api, epoch, rfc, shifted
from harness import SHARED, SOURCE, check, finish, split_envelopes
from test_api_load import util

GRAFANA = os.path.join(SOURCE, "deploy", "grafana")
LP = os.path.join(SHARED, "data", "lineproto", "cc-synthetic-fritz-2nodes-1interval.lp")
K = 30  # intervals of 60 s of line protocol


# Grafana's rangeutil.roundInterval: (upper bound in ms, interval in ms)
STEPS = [(15, 10), (35, 20), (75, 50), (150, 100), (350, 200), (750, 500), (1500, 1000), (3500, 2000),
         (7500, 5000), (12500, 10000), (17500, 15000), (25000, 20000), (45000, 30000), (90000, 60000),
         (150000, 120000), (450000, 300000), (750000, 600000), (1050000, 900000), (1500000, 1200000),
         (2700000, 1800000), (5400000, 3600000), (9000000, 7200000), (16200000, 10800000),
         (32400000, 21600000), (86400000, 43200000), (604800000, 86400000), (1814400000, 604800000),
         (3628800000, 2592000000)]


def round_interval(ms):
    for bound, step in STEPS:
        if ms < bound:
            return step
    return 31536000000


def interval_text(ms):
    """Grafana's secondsToHms-style text of an interval: 1m, 5m, 1h, 30s."""
    for unit, size in (("y", 31536000000), ("w", 604800000), ("d", 86400000), ("h", 3600000), ("m", 60000),
                       ("s", 1000)):
        if ms % size == 0:
            return "%d%s" % (ms // size, unit)
    return "%dms" % ms


def regex_escape(v):
    """Grafana's escaping of a variable value inside /regex/ (kbn.regexEscape)."""
    return re.sub(r"([\\/^$*+?.()|{}\[\]])", r"\\\1", v)


def min_interval_ms():
    text = open(os.path.join(GRAFANA, "provisioning", "datasources", "fjord.yaml")).read()
    m = re.search(r"timeInterval:\s*(\d+)s", text)
    return int(m.group(1)) * 1000 if m else 0


class Dashboards:
    def __init__(self, api, db, frm, to):
        self.api, self.db, self.frm, self.to = api, db, frm, to

    def query(self, q):
        r = self.api.get("/query?" + urllib.parse.urlencode({"q": q, "db": self.db, "epoch": "ms"}))
        check(r.status == 200, "%s: %d %s" % (q, r.status, r.body[:300]))
        return r.json()["results"][0] if r.status == 200 else {}

    def expand(self, q, variables, max_points):
        ms = max(round_interval((self.to - self.frm) * 1000 // max_points), min_interval_ms())
        q = q.replace("$timeFilter", "time >= %dms and time <= %dms" % (self.frm * 1000, self.to * 1000))
        q = q.replace("$__interval_ms", str(ms)).replace("$__interval", interval_text(ms))
        for name, values in variables.items():
            vals = [regex_escape(v) for v in values]
            q = q.replace("$" + name, vals[0] if len(vals) == 1 else "(%s)" % "|".join(vals))
        return q, ms

    def run(self, path):
        dash = json.load(open(path))
        variables = {}
        for v in dash["templating"]["list"]:
            if v["type"] == "datasource":
                check(v["query"] == "influxdb", "%s: the data source variable picks InfluxDB sources" % path)
            elif v["type"] == "query":
                res = self.query(v["query"])
                vals = sorted({row[1] for s in res.get("series", []) for row in s["values"]})
                check(vals, "%s: variable %s has values" % (os.path.basename(path), v["name"]))
                variables[v["name"]] = vals
        answers = {}
        for p in dash["panels"]:
            for t in p["targets"]:
                check(t.get("rawQuery") and t["datasource"]["uid"] == "${datasource}",
                      "%s: a raw InfluxQL query on the dashboard's data source" % p["title"])
                q, ms = self.expand(t["query"], variables, p.get("maxDataPoints", 1000))
                check(not re.search(r"\$[A-Za-z_{]", q), "%s: every macro expanded: %s" % (p["title"], q))
                res = self.query(q)
                series = res.get("series", [])
                some = any(x is not None for s in series for row in s["values"] for x in row[1:])
                check(series and some, "%s: a non-empty answer to %s: %s" % (p["title"], q, json.dumps(res)[:300]))
                check(all(row[0] % ms == 0 for s in series for row in s["values"]),
                      "%s: rows at multiples of the interval %d ms" % (p["title"], ms))
                answers[p["title"]] = (series, ms)
        return answers


def lp_body():
    out = []
    for k in range(K):
        for line in open(LP).read().splitlines():
            head, fields, ts = line.split(" ")
            v = float(fields.split("=", 1)[1])
            out.append("%s value=%r %d" % (head, round(v * (1 + k / 10.0), 4), int(ts) + 60 * k))
    return "\n".join(out) + "\n"


def main():
    api = Api(extra_clusters=("fritz",))
    try:
        text = open(os.path.join(GRAFANA, "provisioning", "datasources", "fjord.yaml")).read()
        check("type: influxdb" in text and "version: InfluxQL" in text and "database:" in text,
              "the data source is InfluxDB in InfluxQL mode with a database")
        body = lp_body()
        r = api.f.post("/api/write?cluster=fritz", body, headers={"Content-Type": "text/plain"},
                       auth=("fritz", api.tokens["fritz"]))
        check(r.status == 200, "line protocol written: %d %s" % (r.status, r.body[:200]))

        # ClusterCockpit: the CPU-load panel against the values written
        t0 = 1700000040
        cc = Dashboards(api, "fritz", t0 - 3600, t0 + 60 * K + 3600).run(
            os.path.join(GRAFANA, "dashboards", "fjord-cc-nodes.json"))
        series, ms = cc.get("CPU load", ([], 1))
        want = {}
        for line in body.splitlines():
            head, fields, ts = line.split(" ")
            if head.startswith("cpu_load,"):
                host = re.search(r"hostname=([^,]+)", head).group(1)
                b = int(ts) * 1000 // ms * ms
                want.setdefault((host, b), []).append(float(fields.split("=", 1)[1]))
        got = {(s["tags"]["hostname"], row[0]): row[1] for s in series for row in s["values"] if row[1] is not None}
        check(set(got) == set(want) and all(abs(got[k] - sum(v) / len(v)) < 1e-9 for k, v in want.items()),
              "CPU load: every bucket's mean of the points written (%d buckets)" % len(want))

        # Sonar: each mlx node's sample again 5 minutes later, its CPU counters advanced, so that CPU
        # utilisation has intervals; the memory and CPU panels against the samples
        day = epoch("2025-11-25T00:00:00Z")
        later = {}
        for p in api.files:
            for env in split_envelopes(open(p).read()):
                a = env.get("data", {}).get("attributes", {})
                if a.get("cluster") == "mlx.hpc.uio.no" and a.get("system", {}).get("cpus") and day <= epoch(a["time"]) < day + 86000:
                    cpus = [c + 20 * (i % 7) for i, c in enumerate(a["system"]["cpus"])]
                    e = shifted(env, 300, cpus=cpus)
                    api.post(e, "mlx.hpc.uio.no")
                    later[a["node"]] = (epoch(a["time"]), a["system"]["cpus"], epoch(a["time"]) + 300, cpus)
        sonar = Dashboards(api, "mlx.hpc.uio.no", day, day + 86399).run(
            os.path.join(GRAFANA, "dashboards", "fjord-sonar-nodes.json"))
        series, ms = sonar.get("Memory used", ([], 1))
        want = {}
        for p in api.files:
            for env in split_envelopes(open(p).read()):
                a = env.get("data", {}).get("attributes", {})
                if a.get("cluster") != "mlx.hpc.uio.no" or "system" not in a or "used_memory" not in a["system"]:
                    continue
                t = epoch(a["time"])
                if day <= t <= day + 86399:
                    want.setdefault((a["node"], t * 1000 // ms * ms), {})[t] = a["system"]["used_memory"]
                    if a["node"] in later and later[a["node"]][0] == t:  # the shifted copy posted above
                        want.setdefault((a["node"], (t + 300) * 1000 // ms * ms), {})[t + 300] = a["system"]["used_memory"]
        got = {(s["tags"]["node"], row[0]): row[1] for s in series for row in s["values"] if row[1] is not None}
        check(want and set(got) == set(want), "Memory used: the buckets with samples: %s, want %s"
              % (sorted(got), sorted(want)))
        check(all(got.get(k) == round(sum(v.values()) / len(v)) for k, v in want.items()),
              "Memory used: each bucket's mean of the samples' used memory: %s, want %s" % (got, want))
        series, ms = sonar.get("CPU utilisation", ([], 1))
        got = {(s["tags"]["node"], row[0]): row[1] for s in series for row in s["values"] if row[1] is not None}
        want = {(n, t1 * 1000 // ms * ms): util(c0, c1, t1 - t0)[0] for n, (t0, c0, t1, c1) in later.items()}
        check(want and set(got) == set(want) and all(abs(got[k] - w) < 1e-6 for k, w in want.items()),
              "CPU utilisation: from the counters of each node's two samples: %s, want %s" % (got, want))
    finally:
        api.close()
    finish()


if __name__ == "__main__":
    main()
