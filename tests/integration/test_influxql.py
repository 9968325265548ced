"""InfluxDB 1.x's query API on fjord (GET|POST /query, GET|HEAD /ping; docs/metrics.md "InfluxQL"):
the version headers, credentials (Basic, Bearer, Token, u/p) and what each may read, SHOW DATABASES
per credential, the form body of POST, InfluxDB's error shapes, epoch, several statements, answers
against values computed here from the data written, the same answers after a restart (sealed
chunks instead of the live engine), and real clients: Debian's python3-influxdb and the influx CLI."""
import json
import math
import shutil
import subprocess
import urllib.parse

from harness import Fjord, check, finish

S = 1700000000
HOSTS = ["h1", "h2", "h3"]


def value(h, k):
    return round(10 * HOSTS.index(h) + math.sin(k) * 5 + k / 7.0, 4)


def body(cluster):
    out = []
    for k in range(120):  # 20 minutes at 10 s
        for h in HOSTS:
            out.append("cpu_load,cluster=%s,hostname=%s,type=node value=%r %d" % (cluster, h, value(h, k), (S + 10 * k) * 10**9))
            out.append("cpu,cluster=%s,cpu=cpu0,host=%s usage_user=%r,usage_system=%r %d"
                       % (cluster, h, value(h, k) + 1, value(h, k) / 2, (S + 10 * k) * 10**9))
    return "\n".join(out) + "\n"


def q(f, query, auth=None, method="GET", **params):
    params = dict(params, q=query)
    if method == "GET":
        return f.request("GET", "/query?" + urllib.parse.urlencode(params), auth=auth)
    return f.request("POST", "/query", urllib.parse.urlencode(params),
                     headers={"Content-Type": "application/x-www-form-urlencoded"}, auth=auth)


def close(a, b):
    return a is not None and b is not None and abs(a - b) <= 1e-9 * max(1.0, abs(b))


def check_answers(f, tok, label):
    # mean per 5 minutes and host, computed here
    r = q(f, "SELECT mean(value) FROM cpu_load WHERE time >= %ds AND time < %ds GROUP BY time(5m), hostname"
          % (S, S + 1200), auth=("alpha", tok), db="alpha", epoch="s")
    check(r.status == 200, "%s: SELECT answers 200 (%d %s)" % (label, r.status, r.body[:200]))
    series = r.json()["results"][0].get("series", [])
    check([s["tags"]["hostname"] for s in series] == HOSTS, "%s: one series per host, in order" % label)
    ok = True
    for s in series:
        h = s["tags"]["hostname"]
        check(s["columns"] == ["time", "mean"], "%s: columns time, mean" % label)
        for row in s["values"]:
            t0 = row[0]
            ks = [k for k in range(120) if t0 <= S + 10 * k < t0 + 300]
            want = sum(value(h, k) for k in ks) / len(ks) if ks else None
            ok = ok and close(row[1], want)
    check(ok and series, "%s: every bucket's mean is the mean of the points written" % label)
    # arithmetic between fields, raw
    r = q(f, "SELECT usage_user - usage_system AS d FROM cpu WHERE host = 'h2' LIMIT 3", auth=("alpha", tok),
          db="alpha", epoch="ms")
    vals = r.json()["results"][0]["series"][0]["values"]
    check([v[0] for v in vals] == [(S + 10 * k) * 1000 for k in range(3)], "%s: epoch=ms times" % label)
    check(all(close(v[1], value("h2", k) + 1 - value("h2", k) / 2) for k, v in enumerate(vals)),
          "%s: field arithmetic row by row" % label)


CLIENT = """
import json
from influxdb import InfluxDBClient
c = InfluxDBClient(host="127.0.0.1", port=%(port)d, username="alpha", password="%(secret)s", database="alpha")
out = {"ping": c.ping(), "measurements": c.get_list_measurements()}
rs = c.query("SELECT count(value) FROM cpu_load GROUP BY hostname")
out["counts"] = {tags["hostname"]: list(pts)[0]["count"] for (_, tags), pts in rs.items()}
# bound parameters (sent as `params`, JSON)
rs = c.query("SELECT count(value) FROM cpu_load WHERE hostname = $h AND value > $v GROUP BY hostname",
             bind_params={"h": "h2", "v": -1})
out["bound"] = {tags["hostname"]: list(pts)[0]["count"] for (_, tags), pts in rs.items()}
bad = InfluxDBClient(host="127.0.0.1", port=%(port)d, username="alpha", password="nope", database="alpha")
try:
    bad.query("SHOW MEASUREMENTS")
    out["refused"] = ""
except Exception as e:
    out["refused"] = str(e)
print(json.dumps(out))
"""


def main():
    f = Fjord().start()
    try:
        alpha = f.token("alpha")
        beta = f.token("beta")
        reader = f.token("reader", "--read-only")
        for c, t in (("alpha", alpha), ("beta", beta)):
            r = f.request("POST", "/write?db=%s" % c, body(c), auth=(c, t))
            check(r.status == 204, "write %s: %d %s" % (c, r.status, r.body[:200]))

        # /ping: open, InfluxDB's headers, GET and HEAD, no body taken
        for m in ("GET", "HEAD"):
            r = f.request(m, "/ping")
            check(r.status == 204, "%s /ping is 204 (%d)" % (m, r.status))
            check(r.headers.get("X-Influxdb-Version", "").startswith("1.6"), "%s /ping names the version" % m)
            check(r.headers.get("X-Influxdb-Build") == "OSS", "%s /ping names the build" % m)
        r = f.request("POST", "/ping", "x")
        check(r.status == 405, "POST /ping is not allowed (%d)" % r.status)

        # credentials
        r = q(f, "SHOW DATABASES")
        check(r.status == 401, "/query without a credential is 401 (%d)" % r.status)
        r = q(f, "SHOW DATABASES", auth=("alpha", "wrong"))
        check(r.status == 401, "/query with a wrong secret is 401 (%d)" % r.status)
        # InfluxDB's error shape on its paths, refusals before the handler included: the influx CLI
        # prints the string (an object printed as ERR: %!s(<nil>))
        for path, method in (("/query?q=SHOW+DATABASES", "GET"), ("/write?db=alpha", "POST")):
            r = f.request(method, path, "x v=1" if method == "POST" else None, auth=("alpha", "wrong"))
            err = r.json().get("error") if r.status == 401 else None
            check(isinstance(err, str) and "wrong secret" in err and r.headers.get("X-Influxdb-Version"),
                  "%s %s: a 401 in InfluxDB's shape: %s" % (method, path, r.body))
        r = f.request("GET", "/api/v1/jobs?cluster=alpha", auth=("alpha", "wrong"))
        check(r.status == 401 and isinstance(r.json().get("error"), dict), "fjord's own API keeps its shape: %s" % r.body)
        # bound parameters: $name takes the value `params` binds (string, number, boolean), in the
        # query string or the form body; an unbound name or params that are not an object: 400
        lit = q(f, "SELECT max(value) FROM cpu_load WHERE hostname = 'h3' AND value > 2.5", auth=("alpha", alpha),
                db="alpha")
        for method in ("GET", "POST"):
            r = q(f, "SELECT max(value) FROM cpu_load WHERE hostname = $host AND value > $min", auth=("alpha", alpha),
                  method=method, db="alpha", params=json.dumps({"host": "h3", "min": 2.5}))
            check(r.status == 200 and r.json() == lit.json() and "series" in r.body,
                  "%s: bound parameters answer as the literals: %s against %s" % (method, r.body, lit.body))
        r = q(f, "SELECT max(value) FROM cpu_load WHERE hostname = $host", auth=("alpha", alpha), db="alpha",
              params=json.dumps({"other": 1}))
        check(r.status == 400 and r.json().get("error") == "error parsing query: missing parameter: host",
              "an unbound parameter: %d %s" % (r.status, r.body))
        r = q(f, "SELECT max(value) FROM cpu_load", auth=("alpha", alpha), db="alpha", params="[1]")
        check(r.status == 400 and "error parsing query parameters" in r.json().get("error", ""),
              "params not an object: %d %s" % (r.status, r.body))
        # CREATE DATABASE, as Telegraf and python3-influxdb send it: answered for a database the
        # credential may write, changing nothing; refused (403, InfluxDB's words) for any other
        r = q(f, 'CREATE DATABASE "alpha"', auth=("alpha", alpha), method="POST")
        check(r.status == 200 and r.json() == {"results": [{"statement_id": 0}]}, "CREATE DATABASE alpha: %s" % r.body)
        for who, secret, db in (("alpha", alpha, "beta"), ("alpha", alpha, "gamma"), ("reader", reader, "alpha")):
            r = q(f, "CREATE DATABASE %s; SHOW DATABASES" % db, auth=(who, secret), method="POST")
            check(r.status == 403 and "not authorized" in r.json().get("error", ""),
                  "%s may not CREATE DATABASE %s: %d %s" % (who, db, r.status, r.body))
        r = q(f, "SHOW DATABASES", auth=("alpha", alpha))
        check(r.json()["results"][0]["series"][0]["values"] == [["alpha"]], "nothing was created: %s" % r.body)
        r = q(f, "SHOW DATABASES", u="alpha", p=alpha)
        check(r.status == 200 and r.json()["results"][0]["series"][0]["values"] == [["alpha"]],
              "u/p: an upload credential sees its own cluster only: %s" % r.body)
        r = f.request("GET", "/query?q=SHOW+DATABASES", headers={"Authorization": "Token " + reader})
        check(r.status == 200 and r.json()["results"][0]["series"][0]["values"] == [["alpha"], ["beta"]],
              "Token: a read-only credential sees every cluster: %s" % r.body)
        r = q(f, "SHOW MEASUREMENTS", auth=beta, db="alpha")
        err = r.json()["results"][0].get("error", "") if r.status == 200 else ""
        check(r.status == 200 and "authoriz" in err, "Bearer: beta may not read alpha: %s" % r.body)
        r = q(f, "SHOW MEASUREMENTS", auth=("alpha", alpha), db="alpha")
        check(r.json()["results"][0]["series"][0]["values"] == [["cpu"], ["cpu_load"]], "SHOW MEASUREMENTS: %s" % r.body)

        # POST with the statement in a form body; several statements
        r = q(f, "SHOW TAG KEYS FROM cpu; SHOW FIELD KEYS FROM cpu", auth=("alpha", alpha), method="POST", db="alpha")
        res = r.json()["results"] if r.status == 200 else []
        check(len(res) == 2 and res[0]["series"][0]["values"] == [["cluster"], ["cpu"], ["host"]],
              "POST form: SHOW TAG KEYS: %s" % r.body)
        check(len(res) == 2 and res[1]["series"][0]["values"] == [["usage_system", "float"], ["usage_user", "float"]],
              "POST form: SHOW FIELD KEYS: %s" % r.body)
        r = q(f, 'SHOW TAG VALUES FROM cpu_load WITH KEY = "hostname" WHERE hostname =~ /h[23]/', auth=("alpha", alpha),
              db="alpha")
        check(r.json()["results"][0]["series"][0]["values"] == [["hostname", "h2"], ["hostname", "h3"]],
              "SHOW TAG VALUES with a regex condition: %s" % r.body)

        # InfluxDB's error shapes
        r = f.request("GET", "/query?db=alpha", auth=("alpha", alpha))
        check(r.status == 400 and r.json() == {"error": 'missing required parameter "q"'}, "no q: %s" % r.body)
        r = q(f, "SELEC 1", auth=("alpha", alpha), db="alpha")
        check(r.status == 400 and r.json()["error"].startswith("error parsing query: found SELEC"), "syntax: %s" % r.body)
        r = q(f, "SELECT nosuch(value) FROM cpu_load", auth=("alpha", alpha), db="alpha")
        check(r.status == 200 and "undefined function nosuch()" in r.json()["results"][0].get("error", ""),
              "an unknown function is a statement error: %s" % r.body)
        r = q(f, "SELECT value FROM cpu_load", auth=("alpha", alpha))
        check(r.json()["results"][0].get("error") == "database name required", "no db: %s" % r.body)
        r = q(f, "SELECT mean(value) FROM cpu_load GROUP BY time(1m) tz('Nowhere/Land')", auth=("alpha", alpha), db="alpha")
        check(r.status == 400 and r.json() == {"error": "error parsing query: unable to find time zone Nowhere/Land"},
              "an unknown time zone is refused as InfluxDB does: %s" % r.body)
        r = q(f, "SELECT count(value) FROM cpu_load tz('../../etc/passwd')", auth=("alpha", alpha), db="alpha")
        check(r.status == 400 and "unable to find time zone" in r.json().get("error", ""), "no path outside zoneinfo: %s" % r.body)
        # tz(): the hour of data (22:13-23:13 UTC) spans Oslo's midnight: two local days, the first
        # holding what lies before 23:00 UTC
        r = q(f, "SELECT count(value) FROM cpu_load WHERE time < '2023-11-14T23:00:00Z'", auth=("alpha", alpha), db="alpha")
        before = r.json()["results"][0]["series"][0]["values"][0][1]
        r = q(f, "SELECT count(value) FROM cpu_load WHERE time >= %ds AND time < %ds GROUP BY time(1d) tz('Europe/Oslo')"
              % (S, S + 3600), auth=("alpha", alpha), db="alpha")
        check(r.json()["results"][0]["series"][0]["values"] == [["2023-11-14T00:00:00+01:00", before],
                                                                ["2023-11-15T00:00:00+01:00", 360 - before]],
              "tz('Europe/Oslo'): local days, times with the offset (%d before midnight): %s" % (before, r.body))
        r = q(f, "SELECT count(value) FROM cpu_load WHERE time >= %ds AND time < %ds GROUP BY time(1d) tz('Asia/Kolkata')"
              % (S, S + 3600), auth=("alpha", alpha), db="alpha", epoch="s")
        check(r.json()["results"][0]["series"][0]["values"] == [[1699986600, 360]],
              "tz('Asia/Kolkata'): one local day from 18:30 UTC, epoch times: %s" % r.body)
        r = q(f, "SELECT count(value) FROM cpu_load tz('UTC')", auth=("alpha", alpha), db="alpha")
        check(r.json()["results"][0]["series"][0]["values"][0][1] == 360, "tz('UTC') reads as without: %s" % r.body)

        check_answers(f, alpha, "live engine")

        # real clients
        if shutil.which("influx"):
            p = subprocess.run(["influx", "-host", "127.0.0.1", "-port", str(f.port), "-username", "alpha",
                                "-password", alpha, "-database", "alpha", "-format", "json", "-execute",
                                "SELECT max(value) FROM cpu_load WHERE hostname = 'h3'"],
                               capture_output=True, text=True, timeout=60)
            check(p.returncode == 0, "influx -execute exits 0: %s %s" % (p.stdout[:300], p.stderr[:300]))
            try:
                doc = json.loads(p.stdout)
                got = doc["results"][0]["series"][0]["values"][0][1]
            except (ValueError, KeyError, IndexError):
                got = None
            check(close(got, max(value("h3", k) for k in range(120))), "influx CLI: max(value): %s" % p.stdout[:300])
        else:
            check(False, "the influx CLI (Debian's influxdb-client) is installed")
        # Debian's python3-influxdb, under Debian's python3 (the one its package installs into)
        client = CLIENT % {"port": f.port, "secret": alpha}
        p = subprocess.run(["/usr/bin/python3", "-c", client], capture_output=True, text=True, timeout=60)
        check(p.returncode == 0, "python3-influxdb script runs: %s" % p.stderr[-500:])
        try:
            got = json.loads(p.stdout)
        except ValueError:
            got = {}
        check(got.get("ping", "").startswith("1.6"), "InfluxDBClient.ping names the version: %s" % got)
        check(got.get("measurements") == [{"name": "cpu"}, {"name": "cpu_load"}], "get_list_measurements: %s" % got)
        check(got.get("counts") == {"h1": 120, "h2": 120, "h3": 120}, "InfluxDBClient.query: count per host: %s" % got)
        check("401" in got.get("refused", ""), "InfluxDBClient with a wrong password is refused: %s" % got)
        check(got.get("bound") == {"h2": 120}, "InfluxDBClient.query with bind_params: %s" % got)

        # after a restart everything is in sealed chunks: the same answers
        check(f.stop() == 0, "fjord exits 0")
        f.start()
        check_answers(f, alpha, "after restart")
    finally:
        rc = f.stop()
    check(rc == 0, "fjord exits 0 at the end")
    finish()


if __name__ == "__main__":
    main()
