"""A request sent again after its answer was lost changes nothing (docs/ingest.md, "Re-sending adds
nothing"), on every write path: Sonar sample, sysinfo, Slurm jobs and cluster envelopes, line
protocol (cc-metric-store's /api/write and InfluxDB's /write), cc-backend's start_job and
stop_job, Chimbuko packets and provenance records, aicr measurements.

Two servers get the same requests in the same order. Server "once" is sent each request once and
reads its answer. Server "again" is sent each request three times: on a raw socket closed by RST
(SO_LINGER 0) right after the request, before any answer (the server may then fail to send it);
on a raw socket closed by RST, unread, once the request's data is visible (committed, its answer
lost); and once more as a client that reads the answer. After every request the two servers'
figures must be equal: job summaries, nodes, load and its hourly roll-ups, Slurm jobs, errors,
cc-backend jobs and events, /api/query points, InfluxQL counts, Chimbuko runs and statistics,
measurements, and the row count of every table. CTest runs it on SQLite and PostgreSQL.

Nothing here depends on how a race ends: the first drop may land before or after the commit, and
either way the figures must come out equal."""
import base64
import json
import os
import socket
import struct
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import SHARED, Fjord, check, finish  # noqa: E402

SONAR = os.path.join(SHARED, "data", "sonar", "real")
WINDOW = {"from": "2025-11-01T00:00:00Z", "to": "2026-01-01T00:00:00Z"}
LP = os.path.join(SHARED, "data", "lineproto", "cc-synthetic-fritz-2nodes-1interval.lp")
BASE = 1700000040
CLUSTERS = ["mlx.hpc.uio.no", "ex3.simula.no", "fritz", "hpc1", "fox"]
# The line-protocol request log records requests, not data: one row per request received, by
# design (replayed at start-up, pruned after request-log-keep; docs/metrics.md).
PER_REQUEST = {"request_log"}


def read(path):
    with open(path, "rb") as f:
        return f.read()


def sonar_later(name, minutes):
    """A Sonar sample envelope moved `minutes` later, its CPU times grown, as a node's next one."""
    env = json.loads(read(os.path.join(SONAR, name)))
    a = env["data"]["attributes"]
    t = a["time"]
    hh, mm = int(t[11:13]), int(t[14:16]) + minutes
    a["time"] = "%s%02d:%02d%s" % (t[:11], hh + mm // 60, mm % 60, t[16:])
    for job in a.get("jobs", []):
        for p in job.get("processes", []):
            if "cpu_time" in p:
                p["cpu_time"] += 60 * minutes
    return json.dumps(env).encode()


def cases():
    """(name, cluster, method, path, body, content type), in the order they are sent."""
    js, yaml = "application/json", "application/x-yaml"
    start = json.loads(read(os.path.join(SHARED, "data", "cc", "cc-backend_startJobPayload.json")))
    stop = json.loads(read(os.path.join(SHARED, "data", "cc", "cc-backend_stopJobPayload.json")))
    influx = b"".join(b"influx_cpu,cluster=fritz,hostname=f010%d v=%d %d000000000\n" % (h, h * 10 + i, BASE + 60 * i)
                      for h in range(1, 3) for i in range(5))
    esc = json.dumps(dict(start, jobId=123001)).replace("\\", "\\\\").replace('"', '\\"')
    job_event = ('job,function=start_job,cluster=fritz event="%s" %d\n' % (esc, BASE)).encode()
    chim = os.path.join(SHARED, "data", "chimbuko")
    return [
        ("sonar sysinfo", "mlx.hpc.uio.no", "/api/v1/insert/sysinfo", read(os.path.join(SONAR, "0+sysinfo-ml1.hpc.uio.no.json")), js),
        ("sonar sample", "mlx.hpc.uio.no", "/api/v1/insert/sample", read(os.path.join(SONAR, "0+sample-ml1.hpc.uio.no.json")), js),
        ("sonar next sample", "mlx.hpc.uio.no", "/api/v1/insert/sample", sonar_later("0+sample-ml1.hpc.uio.no.json", 5), js),
        ("sonar sample, bulk path", "mlx.hpc.uio.no", "/api/v1/ingest/sonar",
         read(os.path.join(SONAR, "0+sample-ml2.hpc.uio.no.json")), js),
        ("sonar slurm jobs", "ex3.simula.no", "/api/v1/insert/jobs", read(os.path.join(SONAR, "0+job-srl-login3.ex3.simula.no.json")), js),
        ("sonar cluster", "ex3.simula.no", "/api/v1/insert/cluster", read(os.path.join(SONAR, "0+cluster.ex3.simula.no.json")), js),
        ("line protocol, cc-metric-store", "fritz", "/api/write?cluster=fritz", read(LP), "text/plain"),
        ("line protocol, InfluxDB", "fritz", "/write?db=fritz", influx, "text/plain"),
        ("line protocol job event", "fritz", "/api/write?cluster=fritz", job_event, "text/plain"),
        ("cc-backend start_job", "fritz", "/api/jobs/start_job/", json.dumps(start).encode(), js),
        ("cc-backend stop_job", "fritz", "/api/jobs/stop_job/", json.dumps(stop).encode(), js),
        ("chimbuko packet", "hpc1", "/api/anomalydata?cluster=hpc1&run=r1",
         read(os.path.join(chim, "synthetic-v2", "pserver-packet-full.json")), js),
        ("chimbuko records", "hpc1", "/api/v1/ingest/chimbuko/anomalies?cluster=hpc1&run=r1",
         read(os.path.join(chim, "synthetic-v2", "anomalies-record-cpu-hbos.json")), js),
        ("chimbuko metadata", "hpc1", "/api/v1/ingest/chimbuko/metadata?cluster=hpc1&run=r1",
         read(os.path.join(chim, "synthetic-v2", "metadata-records.json")), js),
        ("aicr measurements", "fox", "/api/v1/ingest/measurements?cluster=fox&node=n1",
         read(os.path.join(SHARED, "data", "aicr", "m-snapshot-example-from-doc-go.yaml")), yaml),
    ]


def reads():
    """The API figures compared: (cluster whose credential reads it, method, path, body)."""
    w = urllib.parse.urlencode(WINDOW)
    out = []
    for c in ("mlx.hpc.uio.no", "ex3.simula.no"):
        out += [(c, "GET", "/api/v1/jobs?cluster=%s&limit=100000&%s" % (c, w), None),
                (c, "GET", "/api/v1/nodes?cluster=%s" % c, None),
                (c, "GET", "/api/v1/load/cluster?cluster=%s&bucket=1h&%s" % (c, w), None),
                (c, "GET", "/api/v1/load/nodes?cluster=%s&bucket=1h&%s" % (c, w), None),
                (c, "GET", "/api/v1/load/nodes?cluster=%s&%s" % (c, w), None),
                (c, "GET", "/api/v1/errors?cluster=%s&%s" % (c, w), None),
                (c, "GET", "/api/v1/uptime?cluster=%s&%s" % (c, w), None)]
    out += [("ex3.simula.no", "GET", "/api/v1/slurm/jobs?cluster=ex3.simula.no&%s" % w, None),
            ("ex3.simula.no", "GET", "/api/v1/slurm/partitions?cluster=ex3.simula.no", None),
            ("fritz", "GET", "/api/v1/cc/jobs?cluster=fritz", None),
            ("fritz", "GET", "/api/v1/events?cluster=fritz", None),
            ("fritz", "POST", "/api/query", json.dumps({"cluster": "fritz", "from": BASE - 60, "to": BASE + 600, "queries": [
                {"metric": "cpu_load", "host": "f0101"}, {"metric": "cpu_user", "host": "f0102"},
                {"metric": "influx_cpu", "host": "f0101"}, {"metric": "influx_cpu", "host": "f0102"}]})),
            ("fritz", "GET", "/query?" + urllib.parse.urlencode({
                "db": "fritz", "q": "SELECT count(value) FROM cpu_load GROUP BY hostname; "
                                    "SELECT count(v), sum(v) FROM influx_cpu GROUP BY hostname"}), None),
            ("hpc1", "GET", "/api/v1/chimbuko/runs?cluster=hpc1", None),
            ("hpc1", "GET", "/api/v1/chimbuko/stats/ranks?cluster=hpc1&run=r1", None),
            ("hpc1", "GET", "/api/v1/chimbuko/stats/functions?cluster=hpc1&run=r1", None),
            ("hpc1", "GET", "/api/v1/chimbuko/top?cluster=hpc1&run=r1&from=2020-01-01T00:00:00Z", None),
            ("hpc1", "GET", "/api/v1/chimbuko/provenance/anomalies?cluster=hpc1&run=r1", None),
            ("fox", "GET", "/api/v1/nodes/n1/measurements?cluster=fox&path=K8s.server.version", None)]
    return out


def figures(f, tokens, skip=PER_REQUEST):
    """What the API says, and the row count of every table but those in skip."""
    out = {}
    for cluster, method, path, body in reads():
        h = {"Content-Type": "application/json"} if body else {}
        r = f.request(method, path, body, headers=h, auth=tokens[cluster])
        out[path + (body or "")] = (r.status, r.body)
    rows = f.row_counts()
    out["rows"] = {t: n for t, n in rows.items() if t not in skip}
    return out


def raw_request(cluster, token, path, body, ctype):
    auth = "Authorization: Bearer %s\r\n" % token
    head = ("POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: %s\r\nContent-Length: %d\r\n%s\r\n"
            % (path, ctype, len(body), auth))
    return head.encode() + body


def send_and_reset(port, request, then=None):
    """Sends request on a new connection and closes it with RST (SO_LINGER 0) without reading
    anything, right away or once then() says so."""
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(request)
    if then:
        then()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()


def wait_equal(f, tokens, want, skip, limit=20):
    """Waits (at most limit seconds) until f's figures equal want; the last figures read."""
    deadline = time.monotonic() + limit
    while True:
        got = figures(f, tokens, skip)
        if got == want or time.monotonic() > deadline:
            return got
        time.sleep(0.1)


def diff(a, b):
    """What differs: tables as once/again row counts, then answers."""
    out = []
    ra, rb = a.get("rows", {}), b.get("rows", {})
    tables = ["%s %s/%s" % (t, ra.get(t), rb.get(t)) for t in sorted(set(ra) | set(rb)) if ra.get(t) != rb.get(t)]
    if tables:
        out.append("rows " + ", ".join(tables))
    keys = [k for k in a if k != "rows" and a.get(k) != b.get(k)]
    out += ["%s: %s vs %s" % (k[:90], str(a[k])[:300], str(b.get(k))[:300]) for k in keys[:3]]
    return "; ".join(out)


def run(label, extra, which, skip):
    """Sends the cases `which` picks to a pair of servers started with extra options."""
    once, again = Fjord(*extra), Fjord(*extra)
    try:
        tokens = {c: once.token(c) for c in CLUSTERS}
        for c in CLUSTERS:  # the same secrets on both servers
            again.token(c, "--password", tokens[c])
        once.start()
        again.start()
        for name, cluster, path, body, ctype in filter(which, cases()):
            name = "%s (%s)" % (name, label)
            token = tokens[cluster]
            r = once.request("POST", path, body, headers={"Content-Type": ctype}, auth=token)
            check(r.status < 300, "%s: stored once (%d %s)" % (name, r.status, r.body[:300]))
            want = figures(once, tokens, skip)
            req = raw_request(cluster, token, path, body, ctype)
            # dropped before any answer could come: stored or not, both are right
            send_and_reset(again.port, req)
            wait_equal(again, tokens, want, skip, limit=3)
            # dropped after the commit, the answer unread
            got = {}
            send_and_reset(again.port, req, then=lambda: got.update(wait_equal(again, tokens, want, skip)))
            check(got == want, "%s: the dropped request's data is visible as if sent once (%s)" % (name, diff(want, got)))
            r2 = again.request("POST", path, body, headers={"Content-Type": ctype}, auth=token)
            check(r2.status < 300 or r2.status == 422, "%s: sent again, answered (%d %s)" % (name, r2.status, r2.body[:300]))
            got = figures(again, tokens, skip)
            check(got == want, "%s: three sends count once (%s)" % (name, diff(want, got)))
        if label == "default":  # every path had data: no figure compared was an error on both sides
            final = figures(once, tokens, skip)
            bad = [k for k, v in final.items() if k != "rows" and v[0] != 200]
            check(not bad, "every figure compared was an answer: %s" % bad)
        check(once.stop() == 0 and again.stop() == 0, "%s: clean stops" % label)
    finally:
        once.cleanup()
        again.cleanup()


def main():
    # Each server here has a database of its own: no share of open buffers (PostgreSQL's
    # metrics-share-interval, docs/metrics.md), whose rows would come a second after each write at
    # times the two servers do not agree on, so ts_chunk's row count is compared as before.
    run("default", ["--metrics-share-interval", "0"], lambda c: True, PER_REQUEST)
    # Every metric buffer sealed into a chunk row at once, so a re-sent point meets a stored chunk
    # rather than the open buffer. Points are last-write-wins (docs/metrics.md): the re-sent copy
    # is a chunk row of its own, read as one point, so ts_chunk's row count is not compared here;
    # every answer is.
    run("sealed", ["--metrics-seal-points", "1"], lambda c: c[2].startswith(("/api/write", "/write")),
        PER_REQUEST | {"ts_chunk"})
    finish()


if __name__ == "__main__":
    main()
