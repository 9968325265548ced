"""Line-protocol write paths: cc-metric-store /api/write, InfluxDB /write and /api/v2/write, and the
line-protocol branch of /ingest. Answers (200/204/400/401), credentials in every form producers use,
precision, compressed bodies, partial writes, and what lands in the database."""
import base64
import os
import time

from harness import Fjord, check, finish, gzip_bytes, zstd_bytes, SHARED

LP = open(os.path.join(SHARED, "data", "lineproto", "cc-synthetic-fritz-2nodes-1interval.lp"), "rb").read()
N_LINES = LP.count(b"\n")


def points(f):
    return f.query("SELECT count(*) FROM ts_series")[0][0]


def query(f, body, auth=None):
    import json
    return f.request("POST", "/api/query", json.dumps(body), headers={"Content-Type": "application/json"}, auth=auth)


def main():
    f = Fjord()
    try:
        fritz = f.token("fritz")
        tele = f.token("tele")
        reader = f.token("reader", "--read-only")
        f.start()
        txt = {"Content-Type": "text/plain; charset=utf-8"}

        # cc-metric-store: 200, the whole sample interval, Bearer
        r = f.post("/api/write?cluster=fritz", LP, headers=txt, auth=fritz)
        check(r.status == 200, "api/write answers 200: %d %s" % (r.status, r.body))
        check(r.json().get("points") == N_LINES, "every line is a point: %s" % r.body)
        check(points(f) == N_LINES, "one series per line of the sample")
        check(f.query("SELECT count(*) FROM request_log")[0][0] >= 1, "the request is in the request log")
        r = f.post("/api/write/?cluster=fritz", b"cpu_load,hostname=f0101,type=node value=1 1700000100\n",
                   headers=txt, auth=fritz)
        check(r.status == 200, "trailing slash as in cc-metric-store's swagger: %d" % r.status)

        # the credential must cover every cluster written
        r = f.post("/api/write?cluster=fritz", b"x,cluster=other,hostname=h value=1 1700000000\n", headers=txt, auth=fritz)
        check(r.status == 401, "a line of another cluster: 401 (%d)" % r.status)
        r = f.post("/api/write?cluster=tele", b"x,hostname=h value=1 1700000000\n", headers=txt, auth=fritz)
        check(r.status == 401, "?cluster= of another cluster: 401 (%d)" % r.status)
        r = f.post("/api/write", b"x,hostname=h value=1 1700000000\n", headers=txt, auth=reader)
        check(r.status == 403, "read-only credential: 403 (%d)" % r.status)
        r = f.post("/api/write", b"x,hostname=h value=1 1700000000\n", headers=txt)
        check(r.status == 401, "no credential: 401 (%d)" % r.status)
        r = f.post("/api/write", b"nocluster,hostname=h value=1 1700000000\n", headers=txt, auth=fritz)
        check(r.status == 200, "without cluster tag or parameter the credential's cluster is used: %d %s" % (r.status, r.body))
        check(f.query("SELECT count(*) FROM ts_series WHERE metric='nocluster' AND cluster='fritz'")[0][0] == 1,
              "stored under the credential's cluster")

        # partial write: good lines stored, 400 lists the bad ones
        body = b"good1,hostname=h value=1 1700000000\nthis is bad\ngood2,hostname=h value=2 1700000000\nbad2 value= 1\n"
        r = f.post("/api/write?cluster=fritz", body, headers=txt, auth=fritz)
        check(r.status == 400, "bad lines: 400 (%d)" % r.status)
        j = r.json()
        check([x["line"] for x in j.get("lines", [])] == [2, 4], "bad lines listed with numbers: %s" % r.body)
        check(all("column" in x and x.get("reason") for x in j.get("lines", [])), "column and reason given")
        check(j.get("stored_lines") == 2, "the good lines counted as stored")
        check(f.query("SELECT count(*) FROM ts_series WHERE metric IN ('good1','good2')")[0][0] == 2,
              "the good lines of a partial write are stored")
        r = f.post("/api/write?cluster=fritz", b"only bad\nlines here\n", headers=txt, auth=fritz)
        check(r.status == 400 and r.json().get("stored_lines") == 0, "no valid line: 400, nothing stored")
        many = b"".join(b"bad line %d\n" % i for i in range(150)) + b"ok,hostname=h value=1 1700000000\n"
        r = f.post("/api/write?cluster=fritz", many, headers=txt, auth=fritz)
        check(r.status == 400 and len(r.json()["lines"]) == 100 and r.json()["rejected"] == 150,
              "the first 100 bad lines are listed, all are counted")
        # a body without a line writes nothing and is no error: InfluxDB 1.6 and VictoriaMetrics answer
        # 204 on their paths (checked against influxd 1.6.7 and victoria-metrics 1.79 on loopback),
        # cc-metric-store its usual 200
        series_before = points(f)
        log_before = f.query("SELECT count(*) FROM request_log")[0][0]
        for empty in (b"", b"\n\n", b"# a comment\n", b"\n# one\n\r\n   \n  # two", b"   "):
            r = f.post("/api/write?cluster=fritz", empty, headers=txt, auth=fritz)
            check(r.status == 200 and r.json() == {"lines": 0, "points": 0, "inserted": 0},
                  "api/write of %r: 200, nothing written (%d %s)" % (empty, r.status, r.body))
            r = f.post("/ingest?cluster=fritz", empty, headers=txt, auth=fritz)
            check(r.status == 200 and r.json().get("points") == 0,
                  "/ingest of %r: 200, nothing written (%d %s)" % (empty, r.status, r.body))
            r = f.post("/write?db=tele", empty, auth=("tele", tele))
            check(r.status == 204 and r.body == "", "InfluxDB 1.x write of %r: 204 (%d %s)" % (empty, r.status, r.body))
            r = f.post("/api/v2/write?org=site&bucket=tele", empty, headers={"Authorization": "Token " + tele})
            check(r.status == 204 and r.body == "", "InfluxDB 2.x write of %r: 204 (%d %s)" % (empty, r.status, r.body))
        check(points(f) == series_before and f.query("SELECT count(*) FROM request_log")[0][0] == log_before,
              "empty bodies store nothing and log nothing")
        r = f.post("/write", b"", auth=("tele", tele))
        check(r.status == 400, "an empty body still needs db, as InfluxDB: 400 (%d)" % r.status)
        r = f.post("/write?db=tele", b"", auth=("fritz", fritz))
        check(r.status == 401, "an empty body for another cluster's db: 401, as a line would be (%d)" % r.status)
        r = f.post("/api/write?cluster=fritz", b"", headers=txt)
        check(r.status == 401, "an empty body still needs a credential: 401 (%d)" % r.status)

        # InfluxDB 1.x: 204, db names the cluster, u/p credentials, precision
        v1 = b"cpu,host=n1,cpu=cpu0 usage_user=3.5,usage_system=1i 1700000000\nmem,hostname=n1 used=5 1700000000\n"
        r = f.post("/write?db=tele&precision=s&u=tele&p=" + tele, v1, headers=txt)
        check(r.status == 204 and r.body == "", "InfluxDB 1.x write: 204 empty (%d %r)" % (r.status, r.body))
        rows = f.query("SELECT metric, host, stype, stype_id FROM ts_series WHERE cluster='tele' ORDER BY metric")
        check(("cpu.usage_user", "n1", "cpu", "cpu0") in rows, "Telegraf measurement.field with tags as sub-type: %s" % rows)
        check(("mem.used", "n1", "", "") in rows, "hostname tag as host")
        r = f.post("/write?db=tele&precision=fortnights", v1, headers=txt, auth=("tele", tele))
        check(r.status == 400, "unknown precision: 400 (%d)" % r.status)
        r = f.post("/write?precision=s", v1, headers=txt, auth=("tele", tele))
        check(r.status == 400, "InfluxDB 1.x without db: 400 (%d)" % r.status)
        r = f.post("/write?db=fritz&precision=s", v1, headers=txt, auth=("tele", tele))
        check(r.status == 401, "db of another cluster: 401 (%d)" % r.status)
        # default precision on the InfluxDB paths is nanoseconds: 1700000000 ns is 1970
        r = f.post("/write?db=tele", b"nsdefault,host=n1 v=1 1700000000000000000\n", headers=txt, auth=("tele", tele))
        check(r.status == 204, "ns timestamps by default (%d %s)" % (r.status, r.body))
        r = f.post("/write?db=tele", b"nsdefault2,host=n1 v=1 1700000000\n", headers=txt, auth=("tele", tele))
        check(r.status == 204, "a small ns timestamp is still accepted (%d)" % r.status)
        q = query(f, {"cluster": "tele", "from": 1699999990, "to": 1700000010,
                      "queries": [{"metric": "nsdefault.v", "host": "n1", "resolution": 10}]}, auth=tele)
        check(q.status == 200 and q.json()["results"][0][0].get("avg") == 1, "ns default stored at 2023: %s" % q.body)

        # InfluxDB 2.x: 204, bucket names the cluster, Authorization: Token, precision names
        r = f.post("/api/v2/write?org=site&bucket=tele&precision=ms", b"v2m,host=n2 x=1 1700000000000\n",
                   headers=dict(txt, Authorization="Token " + tele))
        check(r.status == 204, "InfluxDB 2.x write: 204 (%d %s)" % (r.status, r.body))
        r = f.post("/api/v2/write?org=site&precision=s", b"v2m,host=n2 x=1 1700000000\n",
                   headers=dict(txt, Authorization="Token " + tele))
        check(r.status == 400, "InfluxDB 2.x without bucket: 400 (%d)" % r.status)
        r = f.post("/api/v2/write?org=site&bucket=tele&precision=us", b"v2u,host=n2 x=1 1700000000000000\n",
                   headers=dict(txt, Authorization="Token " + tele))
        check(r.status == 204, "precision us (%d)" % r.status)
        q = query(f, {"cluster": "tele", "from": 1699999990, "to": 1700000010,
                      "queries": [{"metric": "v2m.x", "host": "n2", "resolution": 10},
                                  {"metric": "v2u.x", "host": "n2", "resolution": 10}]}, auth=tele)
        res = q.json()["results"]
        check(res[0][0].get("avg") == 1 and res[1][0].get("avg") == 1, "ms and us precision scaled: %s" % q.body)

        # compressed bodies
        r = f.post("/api/write?cluster=fritz", gzip_bytes(b"gz,hostname=h value=3 1700000000\n"),
                   headers=dict(txt, **{"Content-Encoding": "gzip"}), auth=fritz)
        check(r.status == 200, "gzip body (%d %s)" % (r.status, r.body))
        r = f.post("/api/write?cluster=fritz", zstd_bytes(b"zs,hostname=h value=3 1700000000\n"),
                   headers=dict(txt, **{"Content-Encoding": "zstd"}), auth=fritz)
        check(r.status == 200, "zstd body (%d %s)" % (r.status, r.body))
        check(f.query("SELECT count(*) FROM ts_series WHERE metric IN ('gz','zs')")[0][0] == 2, "both stored")

        # /ingest: line protocol told apart from JSON; cc-metric-store's unit inference
        r = f.post("/ingest?cluster=fritz", b"ing,hostname=h value=4 1700000000000\n", headers=txt, auth=fritz)
        check(r.status == 200, "/ingest with text/plain line protocol: 200 (%d %s)" % (r.status, r.body))
        q = query(f, {"cluster": "fritz", "from": 1699999990, "to": 1700000010,
                      "queries": [{"metric": "ing", "host": "h", "resolution": 10}]}, auth=fritz)
        check(q.json()["results"][0][0].get("avg") == 4, "ms timestamp inferred: %s" % q.body)

        # timestamps far in the future are refused (they would seal every buffer early)
        future = int(time.time()) + 3 * 86400
        r = f.post("/api/write?cluster=fritz", b"fut,hostname=h value=1 %d\n" % future, headers=txt, auth=fritz)
        check(r.status == 400 and "future" in r.body, "far-future timestamp: 400 (%d %s)" % (r.status, r.body))

        # by default each request is logged as a point record: unit -1, the number of points, and a
        # body far smaller than the line protocol it came from
        rows = f.query("SELECT cluster, unit_ns, size, length(body) FROM request_log ORDER BY lsn LIMIT 1")
        check(rows and rows[0][0] is None and rows[0][1] == -1 and rows[0][2] == N_LINES and
              rows[0][3] < len(LP) / 4, "request log row: a point record of every line: %s" % rows)
        check(f.stop() == 0, "SIGTERM: exit 0")
        check(f.query("SELECT count(*) FROM request_log")[0][0] == 0, "after a clean stop everything is sealed")
        check(f.query("SELECT count(*) FROM ts_chunk")[0][0] >= N_LINES, "chunks written at shutdown")
        if not f.db.startswith("postgres"):
            # the deleted request log's pages go back to the file system (auto_vacuum=INCREMENTAL)
            check(f.query("PRAGMA auto_vacuum")[0][0] == 2, "new databases vacuum incrementally")
            check(f.query("PRAGMA freelist_count")[0][0] == 0, "no freed pages left in the file after a stop")
    finally:
        f.cleanup()
    raw_archive()
    finish()


def raw_archive():
    """With request-log-keep the raw bodies are logged (an archive to re-process), and replayed
    after a crash like point records."""
    f = Fjord("--request-log-keep", "3600")
    try:
        fritz = f.token("fritz")
        f.start()
        txt = {"Content-Type": "text/plain; charset=utf-8"}
        r = f.post("/api/write?cluster=fritz", LP, headers=txt, auth=fritz)
        check(r.status == 200, "archive mode: 200 (%d %s)" % (r.status, r.body))
        rows = f.query("SELECT cluster, unit_ns, size, length(body) FROM request_log ORDER BY lsn")
        check(len(rows) == 1 and rows[0][0] == "fritz" and rows[0][1] == 0 and rows[0][2] == len(LP) and
              rows[0][3] < len(LP), "archive row: cluster, inferred unit, raw size, zstd body: %s" % rows)
        f.proc.kill()  # SIGKILL: the points are only in the log
        f.proc.wait()
        f.proc = None
        f.start()
        q = query(f, {"cluster": "fritz", "from": 1700000000, "to": 1700000100,
                      "queries": [{"metric": "cpu_load", "host": "f0101"}]}, auth=fritz)
        avg = q.json()["results"][0][0].get("avg") if q.status == 200 else None
        check(avg == 13.436, "raw body replayed after SIGKILL: %d %s" % (q.status, q.body[:300]))
    finally:
        f.cleanup()


if __name__ == "__main__":
    main()
