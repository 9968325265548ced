"""Watching fjord (docs/deploy.md "Watch it"): GET /metrics behind a read credential or the
metrics-token, checked by promtool and scraped by a real Prometheus that answers a PromQL query;
its figures against what the database and /proc say; the request log's line for each kind of
refusal, its rate limit and suppressed counts, every-request mode and JSON mode; the alert rules
in deploy/ checked by promtool."""
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request

from harness import Fjord, check, finish, free_port, sonar_files, split_envelopes

METRICS_TOKEN = "metrics-secret-0123456789"
SRC = os.environ.get("FJ_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
LP = b"cpu_load,hostname=n1,type=node value=1 1700000000\ncpu_load,hostname=n2,type=node value=2 1700000000\n" \
     b"mem_used,hostname=n1,type=node value=3 1700000000\n"
TXT = {"Content-Type": "text/plain"}


def samples(text):
    """{(name, frozenset(labels)): value} of an exposition."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$', line)
        check(m is not None, "an exposition line parses: %r" % line)
        labels = frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
        out[(m.group(1), labels)] = float(m.group(4))
    return out


def value(s, name, **labels):
    return s.get((name, frozenset(labels.items())))


def proc_figures(pid):
    """CPU seconds, open descriptors and RSS of pid, as /proc tells them."""
    stat = open("/proc/%d/stat" % pid).read()
    fields = stat[stat.rindex(")") + 2:].split()
    hz = os.sysconf("SC_CLK_TCK")
    cpu = (int(fields[11]) + int(fields[12])) / hz
    start = int(fields[19]) / hz
    btime = next(int(l.split()[1]) for l in open("/proc/stat") if l.startswith("btime "))
    rss = next(int(l.split()[1]) * 1024 for l in open("/proc/%d/status" % pid) if l.startswith("VmRSS:"))
    return {"cpu": cpu, "fds": len(os.listdir("/proc/%d/fd" % pid)), "rss": rss, "start": btime + start}


def promtool(*args, stdin=None):
    return subprocess.run(["promtool"] + list(args), input=stdin, capture_output=True, text=True, timeout=60)


def scrape(f, auth):
    return f.get("/metrics", auth=auth)


def test_access(f, c1, reader):
    check(scrape(f, None).status == 401, "/metrics without a credential: 401, even from loopback")
    check(scrape(f, ("c1", c1)).status == 403, "/metrics with an upload credential: 403 (it names every cluster)")
    check(scrape(f, "wrong-metrics-token-xyz").status == 401, "/metrics with a wrong token: 401")
    check(scrape(f, METRICS_TOKEN).status == 200, "/metrics with the metrics-token: 200")
    r = scrape(f, ("reader", reader))
    check(r.status == 200 and r.headers.get("Content-Type", "").startswith("text/plain; version=0.0.4"),
          "/metrics with a read credential: 200 in the text format (%d %s)" % (r.status, r.headers))
    r = f.request("GET", "/metrics", body=b"x", auth=METRICS_TOKEN)
    check(r.status == 413, "/metrics takes no body: %d" % r.status)


def ingest(f, tokens):
    ml1 = [p for p in sonar_files() if os.path.basename(p) == "0+sample-ml1.hpc.uio.no.json"][0]
    envs = split_envelopes(open(ml1).read())
    for env in envs:
        r = f.post("/api/v1/insert/sample", json.dumps(env), auth=("mlx.hpc.uio.no", tokens["mlx.hpc.uio.no"]))
        check(r.status == 200, "an envelope is accepted: %d %s" % (r.status, r.body[:200]))
    r = f.post("/api/write?cluster=c1", LP, headers=TXT, auth=("c1", tokens["c1"]))
    check(r.status == 200, "line protocol accepted: %d %s" % (r.status, r.body[:200]))
    r = f.post("/api/write?cluster=c1", b"bad line\n" + LP[:50] + b"\n", headers=TXT, auth=("c1", tokens["c1"]))
    check(r.status == 400, "a bad line refused: %d" % r.status)
    r = f.post("/api/write?cluster=c1", b"x,cluster=c2,hostname=h value=1 1700000000\n", headers=TXT,
               auth=("c1", tokens["c1"]))
    check(r.status == 401, "another cluster's points refused: %d" % r.status)
    return len(envs)


def refusals(f, tokens):
    """One request of each refusal kind; returns {reason: (status, path)}."""
    kinds = {}
    r = f.get("/api/v1/clusters", auth=("c1", "wrong-password"))
    kinds["unauthorized"] = (r.status, "/api/v1/clusters")
    r = f.get("/api/v1/jobs?cluster=mlx.hpc.uio.no", auth=("c1", tokens["c1"]))
    kinds["forbidden"] = (r.status, "/api/v1/jobs")
    r = f.get("/no/such/endpoint", auth=("c1", tokens["c1"]))
    kinds["not_found"] = (r.status, "/no/such/endpoint")
    r = f.request("DELETE", "/api/v1/clusters", auth=("c1", tokens["c1"]))
    kinds["method_not_allowed"] = (r.status, "/api/v1/clusters")
    r = f.request("GET", "/api/v1/health", body=b"{}")
    kinds["too_large"] = (r.status, "/api/v1/health")
    r = f.post("/api/v1/insert/sample", "{not json", auth=("c1", tokens["c1"]))
    kinds["invalid"] = (r.status, "/api/v1/insert/sample")
    expect = {"unauthorized": 401, "forbidden": 403, "not_found": 404, "method_not_allowed": 405, "too_large": 413,
              "invalid": 400}
    for k, (st, _) in kinds.items():
        check(st == expect[k], "%s answered %d (got %d)" % (k, expect[k], st))
    return kinds


def test_metrics(f, tokens, n_envs, reader):
    before = proc_figures(f.proc.pid)
    r = scrape(f, ("reader", reader))
    after = proc_figures(f.proc.pid)
    check(r.status == 200, "scrape: %d" % r.status)
    p = promtool("check", "metrics", stdin=r.body)
    check(p.returncode == 0, "promtool check metrics: %s%s" % (p.stdout, p.stderr))
    s = samples(r.body)
    check(value(s, "fjord_envelopes_accepted_total", cluster="mlx.hpc.uio.no") == n_envs,
          "envelopes accepted for the cluster: %s (want %d)" % (value(s, "fjord_envelopes_accepted_total",
                                                                       cluster="mlx.hpc.uio.no"), n_envs))
    check(value(s, "fjord_envelopes_refused_total", cluster="c1", reason="invalid") == 1,
          "the bad envelope counted as refused: %s" % value(s, "fjord_envelopes_refused_total", cluster="c1",
                                                             reason="invalid"))
    check(value(s, "fjord_points_accepted_total", cluster="c1") == 3 + 1,
          "points accepted: %s" % value(s, "fjord_points_accepted_total", cluster="c1"))
    check(value(s, "fjord_points_refused_total", cluster="c1", reason="bad_line") == 1, "a bad line counted")
    check(value(s, "fjord_points_refused_total", cluster="c1", reason="unauthorized") == 1,
          "another cluster's point counted as refused")
    check(value(s, "fjord_http_requests_total", route="GET /api/v1/clusters", status="401") == 2,
          "the two 401s counted under their route template")
    check(value(s, "fjord_http_requests_total", route="POST /api/v1/insert/*", status="200") == n_envs,
          "ingest counted under its route template, not the raw path")
    check(value(s, "fjord_http_requests_total", route="none", status="404") == 1, "the 404 under route none")
    check(value(s, "fjord_auth_failures_total", reason="unauthorized") == 2, "both auth failures counted")
    check(value(s, "fjord_credential_last_refusal_timestamp_seconds", credential="c1") is not None,
          "c1's last refusal time is there")
    check(not any(k[0] == "fjord_credential_last_refusal_timestamp_seconds" and ("credential", "nobody") in k[1]
                  for k in s), "an unknown user name makes no series")
    acc = value(s, "fjord_cluster_last_accepted_timestamp_seconds", cluster="c1")
    check(acc is not None and abs(acc - time.time()) < 120, "c1's last accepted time is now: %s" % acc)
    check(value(s, "fjord_commit_duration_seconds_count") >= 2 and
          value(s, "fjord_commit_batches_count") == value(s, "fjord_commit_duration_seconds_count"),
          "group commits counted")
    check(value(s, "fjord_write_queue_max_batches") == 256, "queue-max shown")
    check(value(s, "fjord_connections_open") >= 1, "the scrape's own connection is open")
    # Storage figures against the database itself.
    series = f.query("SELECT count(*) FROM ts_series")[0][0]
    rl = f.query("SELECT count(*) FROM request_log")[0][0]
    check(value(s, "fjord_metrics_series") == series, "series: %s vs %s" % (value(s, "fjord_metrics_series"), series))
    check(value(s, "fjord_request_log_rows") == rl, "request log rows: %s vs %s" % (value(s, "fjord_request_log_rows"), rl))
    if f.db.startswith("postgres"):
        size = f.query("SELECT pg_database_size(current_database())")[0][0]
        check(abs(value(s, "fjord_database_bytes") - size) < 1 << 20, "database size near pg_database_size")
    else:
        # WAL mode: pages not yet checkpointed are in the -wal file
        wal = f.db + "-wal"
        size = os.path.getsize(f.db) + (os.path.getsize(wal) if os.path.exists(wal) else 0)
        check(0 < value(s, "fjord_database_bytes") <= size, "database size within the files': %s vs %d"
              % (value(s, "fjord_database_bytes"), size))
    # Process figures against /proc, read before and after the scrape.
    cpu = value(s, "process_cpu_seconds_total")
    check(before["cpu"] - 0.02 <= cpu <= after["cpu"] + 0.02, "CPU %.3f within /proc's %.3f..%.3f"
          % (cpu, before["cpu"], after["cpu"]))
    fds = value(s, "process_open_fds")
    check(abs(fds - before["fds"]) <= 3, "open fds %d near /proc's %d" % (fds, before["fds"]))
    rss = value(s, "process_resident_memory_bytes")
    check(0.7 * before["rss"] <= rss <= 1.3 * after["rss"], "RSS %d near /proc's %d" % (rss, before["rss"]))
    st = value(s, "process_start_time_seconds")
    check(abs(st - before["start"]) < 1.0, "start time %.2f vs /proc's %.2f" % (st, before["start"]))


def test_prometheus(f):
    """A real Prometheus scrapes fjord with the metrics-token and answers PromQL about it."""
    tmp = tempfile.mkdtemp(prefix="fjord-prom-")
    port = free_port()
    cfg = os.path.join(tmp, "prometheus.yml")
    with open(cfg, "w") as out:
        out.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files:\n  - %s\n"
                  "scrape_configs:\n  - job_name: fjord\n    authorization:\n      type: Bearer\n"
                  "      credentials: %s\n    static_configs:\n      - targets: ['127.0.0.1:%d']\n"
                  % (os.path.join(SRC, "deploy", "prometheus", "fjord-alerts.yml"), METRICS_TOKEN, f.port))
    p = promtool("check", "config", cfg)
    check(p.returncode == 0, "promtool check config: %s%s" % (p.stdout, p.stderr))
    log = open(os.path.join(tmp, "prometheus.log"), "w")
    proc = subprocess.Popen(["prometheus", "--config.file=" + cfg, "--storage.tsdb.path=" + os.path.join(tmp, "data"),
                             "--web.listen-address=127.0.0.1:%d" % port], stdout=log, stderr=log)
    try:
        q = 'fjord_envelopes_accepted_total{job="fjord",cluster="mlx.hpc.uio.no"}'
        url = "http://127.0.0.1:%d/api/v1/query?query=%s" % (port, urllib.parse.quote(q))
        got, deadline = None, time.time() + 45
        while time.time() < deadline and got is None:
            time.sleep(0.5)
            try:
                with urllib.request.urlopen(url, timeout=5) as r:
                    res = json.load(r)["data"]["result"]
                    if res:
                        got = float(res[0]["value"][1])
            except OSError:
                pass
        check(got is not None and got >= 1, "Prometheus answers PromQL about fjord: %s" % got)
        url = "http://127.0.0.1:%d/api/v1/targets" % port
        with urllib.request.urlopen(url, timeout=5) as r:
            health = [t["health"] for t in json.load(r)["data"]["activeTargets"]]
        check(health == ["up"], "the scrape with the Bearer token is up: %s" % health)
        with urllib.request.urlopen("http://127.0.0.1:%d/api/v1/rules" % port, timeout=5) as r:
            groups = json.load(r)["data"]["groups"]
        check(sum(len(g["rules"]) for g in groups) >= 4, "the alert rules are loaded")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def test_refusal_log(f, kinds):
    log = open(f.log).read()
    lines = [l for l in log.splitlines() if " refused client=" in l and "status=" in l]
    for reason, (status, path) in kinds.items():
        hit = [l for l in lines if "reason=%s " % reason in l and "status=%d " % status in l and
               ("path=%s " % path) in l]
        check(hit, "a log line for %s (%d %s)" % (reason, status, path))
        if hit:
            check(re.search(r" time=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$", hit[0]) and "duration_ms=" in hit[0]
                  and "client=127.0.0.1 " in hit[0] and "method=" in hit[0] and "bytes=" in hit[0],
                  "the line has time, client, method, bytes, duration: %s" % hit[0])
    check(any("reason=unauthorized" in l and "credential=c1 " in l for l in lines), "the 401 names the credential")
    check(not any(" request client=" in l for l in log.splitlines()), "no line for accepted requests by default")


def test_rate_limit(f, c1):
    """refusal-log-burst 5: one 404 came before, so of 10 more from the address 4 are lines and the
    other 6 are reported as suppressed, at the latest at exit."""
    for i in range(10):
        f.get("/flood/%d" % i, auth=("c1", c1))
    rc = f.stop()
    check(rc == 0, "fjord exits 0: %d" % rc)
    log = open(f.log).read()
    lines = [l for l in log.splitlines() if "reason=not_found" in l and "path=/flood/" in l]
    check(len(lines) == 4, "4 refusal lines for 10 refusals (%d)" % len(lines))
    m = [int(x) for x in re.findall(r"refused client=127\.0\.0\.1 reason=not_found suppressed=(\d+)", log)]
    check(sum(m) == 6, "the 6 suppressed are reported: %s" % m)


def test_every_request_json():
    f = Fjord("--log-requests", "--log-request-format", "json", "--refusal-log-burst", "2").start()
    try:
        tok = f.token("c1")
        check(f.get("/api/v1/clusters", auth=("c1", tok)).status == 200, "a read")
        check(f.post("/api/write?cluster=c1", LP, headers=TXT, auth=("c1", tok)).status == 200, "a write")
        for _ in range(4):
            f.get("/api/v1/clusters", auth=("c1", "wrong"))
    finally:
        rc = f.stop()
    check(rc == 0, "fjord exits 0: %d" % rc)
    objs = []
    for line in open(f.log):
        if line.startswith("{"):
            try:
                objs.append(json.loads(line))
            except ValueError:
                check(False, "a JSON line parses: %r" % line)
    ok = [o for o in objs if o.get("event") == "request" and o.get("path") == "/api/v1/clusters"]
    check(len(ok) == 1 and ok[0]["status"] == 200 and ok[0]["credential"] == "c1" and ok[0]["method"] == "GET"
          and ok[0]["client"] == "127.0.0.1" and ok[0]["bytes"] > 0 and ok[0]["duration_ms"] >= 0
          and re.match(r"\d{4}-\d\d-\d\dT", ok[0]["time"]), "every request has a JSON line with all fields: %s" % ok)
    w = [o for o in objs if o.get("event") == "request" and o.get("path") == "/api/write"]
    check(len(w) == 1 and w[0]["bytes_in"] == len(LP), "the write's line counts its body: %s" % w)
    ref = [o for o in objs if o.get("event") == "refused" and o.get("status") == 401]
    check(len(ref) == 2 and ref[0]["reason"] == "unauthorized", "refusals as JSON, rate-limited: %d" % len(ref))
    sup = [o for o in objs if o.get("event") == "refused" and o.get("suppressed")]
    check(sum(o["suppressed"] for o in sup) == 2, "suppressed count as JSON: %s" % sup)


def test_rules():
    rules = os.path.join(SRC, "deploy", "prometheus", "fjord-alerts.yml")
    p = promtool("check", "rules", rules)
    check(p.returncode == 0 and "SUCCESS" in p.stdout, "promtool check rules: %s%s" % (p.stdout, p.stderr))
    tests = os.path.join(SRC, "deploy", "prometheus", "fjord-alerts-test.yml")
    p = promtool("test", "rules", tests)
    check(p.returncode == 0, "the alerts fire as documented (promtool test rules): %s%s" % (p.stdout, p.stderr))


def main():
    test_rules()
    f = Fjord("--metrics-token", METRICS_TOKEN, "--refusal-log-burst", "5").start()
    try:
        tokens = {"c1": f.token("c1"), "mlx.hpc.uio.no": f.token("mlx.hpc.uio.no")}
        reader = f.token("reader", "--read-only")
        n_envs = ingest(f, tokens)
        f.get("/api/v1/clusters", auth=("nobody", "x"))
        kinds = refusals(f, tokens)
        test_metrics(f, tokens, n_envs, reader)  # the first scrape: storage figures read now
        test_refusal_log(f, kinds)
        test_access(f, tokens["c1"], reader)
        test_prometheus(f)
        test_rate_limit(f, tokens["c1"])
    finally:
        f.stop()
    test_every_request_json()
    finish()


if __name__ == "__main__":
    main()
