"""Input that parsers and renderers must bound: an InfluxQL WHERE clause 45,000 parentheses deep
(a 270 KB form body that overflowed a worker's stack) and a long OR chain, each a 400 naming the
limit with the server still answering after; regular expressions in RE2's syntax ((?i), \\d) and
a catastrophic-backtracking pattern against a long tag value, stopped by its match limit within
seconds as an error of its statement; JSON nested past 256 levels and YAML past 32 (400); CSV
cells that a spreadsheet would run as formulas, written as text; a producer's SVG with a script,
served as a sandboxed download.

Every request goes to 127.0.0.1, each with a timeout."""
import base64
import csv
import io
import json
import os
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from harness import Fjord, SHARED, check, finish  # noqa: E402

REAL = os.path.join(SHARED, "data", "sonar", "real")
WINDOW = "from=2025-11-01T00:00:00Z&to=2025-12-31T00:00:00Z"
FORMULA_USER = '=HYPERLINK("http://evil.example/","x")'
FORMULA_CMD = "@SUM(1+1)*cmd|' /C calc'!A0"
LONG_TAG = "a" * 900 + "!"  # a series key holds 1024 bytes


def influx(f, token, q, timeout=30):
    """POST /query with a form body, as InfluxDB's clients send a long query."""
    body = urllib.parse.urlencode({"q": q, "db": "alpha", "epoch": "s"})
    t0 = time.monotonic()
    r = f.post("/query", body, headers={"Content-Type": "application/x-www-form-urlencoded"},
               auth=("alpha", token), timeout=timeout)
    return r, time.monotonic() - t0


def alive(f, token, what):
    r = f.get("/api/v1/clusters", auth=token, timeout=10)
    check(r.status == 200 and f.proc.poll() is None, "the server still answers after %s: %d" % (what, r.status))


def deep_nesting(f, token):
    q = "SELECT value FROM cpu WHERE " + "(" * 45000 + "hostname = 'n1'" + ")" * 45000
    check(len(q) > 90000, "the query is %d bytes" % len(q))
    r, took = influx(f, token, q)
    err = r.json().get("error", "") if r.status == 400 else ""
    check(r.status == 400 and "nested more than 256 levels deep" in err,
          "45,000 parentheses: 400 naming the limit in %.2f s (%d %s)" % (took, r.status, r.body[:200]))
    alive(f, token, "45,000 parentheses")
    r, took = influx(f, token, "SELECT value FROM cpu WHERE hostname = 'n1'" + " OR hostname = 'n2'" * 20000)
    check(r.status == 400 and "nested more than 256 levels deep" in r.body,
          "an OR chain of 20,000: 400 naming the limit (%d %s)" % (r.status, r.body[:200]))
    r, took = influx(f, token, "SELECT " + "abs(" * 5000 + "value" + ")" * 5000 + " FROM cpu")
    check(r.status == 400 and "nested more than 256 levels deep" in r.body,
          "5,000 calls inside calls: 400 (%d %s)" % (r.status, r.body[:200]))
    alive(f, token, "the chains")
    r, _ = influx(f, token, "SELECT value FROM cpu WHERE " + "(" * 100 + "hostname = 'n1'" + ")" * 100)
    values = [v for s in r.json()["results"][0].get("series", []) for v in s["values"]] if r.status == 200 else []
    check(values == [[1764064320, 1]], "control: 100 parentheses are a query: %d %s" % (r.status, r.body[:200]))


def regexes(f, token):
    def series(q):
        r, took = influx(f, token, q)
        res = r.json()["results"][0] if r.status == 200 else {}
        return r, took, res
    r, _, res = series("SELECT value FROM cpu WHERE hostname =~ /(?i)^N\\d+$/ GROUP BY hostname")
    hosts = sorted(s["tags"]["hostname"] for s in res.get("series", []))
    check(hosts == ["n1", "n2"], "(?i) and \\d as in InfluxDB: %s (%d %s)" % (hosts, r.status, r.body[:200]))
    r, _, res = series("SELECT value FROM cpu WHERE hostname =~ /a**/")
    check(r.status == 400 and "invalid nested repetition operator" in r.body, "a** refused as RE2 does: %d %s"
          % (r.status, r.body[:200]))
    r, took, res = series("SELECT usage FROM app WHERE label =~ /^(a+)+$/")
    check(r.status == 200 and "was stopped" in res.get("error", "") and "limit" in res.get("error", "")
          and took < 10, "^(a+)+$ against a 901-byte value: the statement's error within %.2f s (%d %s)"
          % (took, r.status, r.body[:300]))
    check("series" not in res, "no partial answer beside the error: %s" % r.body[:200])
    r, _, res = series("SELECT usage FROM app WHERE label =~ /^a+!$/")
    check(len(res.get("series", [])) == 1, "control: the same value matched by a sane pattern: %s" % r.body[:200])
    r, _ = influx(f, token, "SELECT usage FROM app WHERE label =~ /^(a+)+$/; SELECT usage FROM app WHERE label =~ /a!/")
    res = r.json().get("results", []) if r.status == 200 else []
    check(len(res) == 2 and "was stopped" in res[0].get("error", "") and len(res[1].get("series", [])) == 1,
          "the next statement is not blamed for the first one's pattern: %s" % r.body[:300])
    alive(f, token, "the regular expressions")


def nested_documents(f, token):
    body = '{"meta":{"producer":"sonar","version":"0.19.0"},"data":' + "[" * 100000 + "]" * 100000 + "}"
    r = f.post("/api/v1/insert/sample", body, auth=("alpha", token), timeout=30)
    check(r.status == 400 and "nesting too deep" in r.body, "JSON 100,000 deep: 400 (%d %s)" % (r.status, r.body[:200]))
    yaml = "measurements: " + "[" * 5000 + "\n"
    r = f.post("/api/v1/ingest/measurements?cluster=alpha&node=n1", yaml,
               headers={"Content-Type": "application/yaml"}, auth=("alpha", token), timeout=30)
    check(r.status == 400 and "nested more than 32" in r.body, "YAML 5,000 deep: 400 (%d %s)" % (r.status, r.body[:200]))
    alive(f, token, "the nested documents")


def csv_formulas(f, token):
    r = f.get("/api/v1/jobs?cluster=alpha&format=csv&" + WINDOW, auth=token, timeout=30)
    rows = list(csv.DictReader(io.StringIO(r.body))) if r.status == 200 else []
    mine = [x for x in rows if x.get("user", "").endswith(FORMULA_USER)]
    check(len(mine) == 1, "the job is listed in CSV: %d %s" % (r.status, r.body[:300]))
    if not mine:
        return
    x = mine[0]
    check(x["user"] == "'" + FORMULA_USER, "the user's formula is text: %r" % x["user"])
    check(all(not c.startswith(("=", "+", "-", "@", "\t", "\r")) for c in x.values() if c),
          "no cell starts a formula: %s" % x)
    check(x["job"].isdigit() and x["id"].isdigit(), "numbers stay numbers: job %r id %r" % (x["job"], x["id"]))
    # a command sits in the job's CSV profile, a list of commands in the list
    cmds = [c for c in x.values() if FORMULA_CMD in c]
    check(cmds and all(not c.startswith("@") for c in cmds), "the command's formula is text: %s" % cmds)
    js = f.get("/api/v1/jobs?cluster=alpha&" + WINDOW, auth=token).json()["jobs"]
    check(any(j["user"] == FORMULA_USER for j in js), "JSON keeps the name as stored")


def stored_svg(f, token):
    r = f.get("/api/v1/nodes/n1/topology?cluster=alpha", auth=token, timeout=10)
    h = {k.lower(): v for k, v in r.headers.items()}
    check(r.status == 200 and "<script>" in r.body, "the stored SVG comes back as sent: %d %s" % (r.status, r.body[:100]))
    check(h.get("content-disposition") == 'attachment; filename="topology-n1.svg"', "a download: %s" % h)
    check(h.get("content-security-policy") == "default-src 'none'; sandbox", "sandboxed: %s" % h)
    check(h.get("x-content-type-options") == "nosniff", "never sniffed: %s" % h)


def load(f, token):
    env = json.load(open(os.path.join(REAL, "0+sample-ml1.hpc.uio.no.json")))
    a = env["data"]["attributes"]
    a["cluster"], a["node"] = "alpha", "n1"
    a["jobs"] = a["jobs"][:1]
    a["jobs"][0]["user"] = FORMULA_USER
    a["jobs"][0]["processes"][0]["cmd"] = FORMULA_CMD
    r = f.post("/api/v1/insert/sample", json.dumps(env), auth=("alpha", token))
    check(r.status == 200, "a sample whose user and command are formulas: %d %s" % (r.status, r.body[:200]))
    env = json.load(open(os.path.join(REAL, "0+sysinfo-g002.ex3.simula.no.json")))
    a = env["data"]["attributes"]
    a["cluster"], a["node"] = "alpha", "n1"
    svg = '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(document.cookie)</script></svg>'
    a["topo_svg"] = base64.b64encode(svg.encode()).decode()
    r = f.post("/api/v1/insert/sysinfo", json.dumps(env), auth=("alpha", token))
    check(r.status == 200, "a sysinfo whose SVG holds a script: %d %s" % (r.status, r.body[:200]))
    # ClusterCockpit lines for the hosts; a generic line keeps its other tags (label) as tags
    lines = "cpu,hostname=n1 value=1 1764064320000000000\n" \
            "cpu,hostname=n2 value=2 1764064320000000000\n" \
            "cpu,hostname=other value=3 1764064320000000000\n" \
            "app,host=n2,label=%s usage=2 1764064320000000000\n" % LONG_TAG
    r = f.post("/api/write?cluster=alpha", lines, headers={"Content-Type": "text/plain"}, auth=token)
    check(r.status in (200, 204), "line protocol: %d %s" % (r.status, r.body[:200]))


def main():
    f = Fjord()
    try:
        token = f.token("alpha")
        f.start()
        load(f, token)
        deep_nesting(f, token)
        regexes(f, token)
        nested_documents(f, token)
        csv_formulas(f, token)
        stored_svg(f, token)
        check(f.stop() == 0, "clean stop")
    finally:
        f.cleanup()
    finish()


if __name__ == "__main__":
    main()
