"""Chimbuko through a real fjord: the parameter server's packets on POST /api/anomalydata as
Chimbuko sends them (libcurl, credentials in the URL, every packet shape of the shared data,
idle and minimal packets, fast answers, never a transport error), the provenance records on
POST /api/v1/ingest/chimbuko/{collection} (every real and example record, departures, re-sending,
bad records with their paths), and the queries under /api/v1/chimbuko/. CTest runs it on both
storage backends (FJ_TEST_DB=postgres for PostgreSQL)."""
import copy
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.parse

from harness import Fjord, SHARED, check, finish

DATA = os.path.join(SHARED, "data", "chimbuko")
V2 = os.path.join(DATA, "synthetic-v2")
PACKET = "/api/anomalydata"
PROV = "/api/v1/ingest/chimbuko/"


def read(path):
    with open(path, "rb") as f:
        return f.read()


def load(path):
    with open(path) as f:
        return json.load(f)


def q(f, auth, path, **params):
    r = f.get("/api/v1/chimbuko/%s?%s" % (path, urllib.parse.urlencode(params)), auth=auth)
    check(r.status == 200, "%s %s: %d %s" % (path, params, r.status, r.body[:300]))
    return r.json() if r.status == 200 else {}


def curl(url, body, extra=()):
    """Posts body as Chimbuko's curlJsonSender does (libcurl, Content-Type: application/json, the
    URL's user:password as Basic auth). Returns (curl exit code, HTTP status)."""
    with tempfile.NamedTemporaryFile(delete=False) as t:
        t.write(body)
    try:
        p = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-H",
                            "Content-Type: application/json", "--data-binary", "@" + t.name] + list(extra) + [url],
                           capture_output=True, text=True, timeout=60)
        return p.returncode, int(p.stdout or 0)
    finally:
        os.unlink(t.name)


def test_packets(f, hpc):
    # Every packet shape of the data, pretty-printed as the pserver sends them (json.dump(4)).
    for name, created in (("pserver-packet-full.json", 1745598463123), ("pserver-packet-idle.json", 1745598464123),
                          ("pserver-packet-minimal.json", 1745598465123)):
        r = f.post(PACKET, read(os.path.join(V2, name)), auth=hpc)
        check(r.status == 200, "%s accepted: %d %s" % (name, r.status, r.body[:300]))
        j = r.json() if r.status == 200 else {}
        check(j.get("cluster") == "hpc1" and j.get("run") == "default" and j.get("created_at") == created,
              "%s: answer names cluster, run and created_at: %s" % (name, j))
        check(j.get("notes") == 0, "%s: a clean packet has no notes: %s" % (name, j))
    rows = f.row_counts()
    check(rows.get("chimbuko_packets") == 3, "three packets: %s" % rows.get("chimbuko_packets"))
    check(rows.get("chimbuko_rank_steps") == 2 and rows.get("chimbuko_rank_stats") == 1,
          "rank steps and stats: %s %s" % (rows.get("chimbuko_rank_steps"), rows.get("chimbuko_rank_stats")))
    check(rows.get("chimbuko_func_stats") == 2 and rows.get("chimbuko_func_metrics") == 1,
          "functions and metrics: %s %s" % (rows.get("chimbuko_func_stats"), rows.get("chimbuko_func_metrics")))
    # The idle packet repeats the same cumulative counter statistics: no second point.
    check(rows.get("chimbuko_counter_stats") == 1, "counter points only when changed: %s" % rows.get("chimbuko_counter_stats"))

    # Re-sending adds nothing.
    r = f.post(PACKET, read(os.path.join(V2, "pserver-packet-full.json")), auth=hpc)
    j = r.json() if r.status == 200 else {}
    check(r.status == 200 and j.get("inserted") == 0 and j.get("duplicates") == 8, "re-sent packet: %d %s" % (r.status, j))
    check(f.row_counts().get("chimbuko_packets") == 3, "re-sent packet stored once")

    # A later packet with changed function stats and a new step; compact JSON; another run.
    p = load(os.path.join(V2, "pserver-packet-full.json"))
    p["created_at"] = p["anomaly_stats"]["created_at"] = 1745598466123
    p["anomaly_stats"]["anomaly"][0]["data"] = [dict(p["anomaly_stats"]["anomaly"][0]["data"][1], step=13,
                                                     min_timestamp=1745598462100000, max_timestamp=1745598462900000,
                                                     n_anomalies=5)]
    p["anomaly_stats"]["func"][0]["stats"]["accumulate"] = 8.0
    p["anomaly_stats"]["func"][0]["stats"]["count"] = 4.0
    p["anomaly_metrics"][0]["new_data"]["count"]["accumulate"] = 5.0
    p["anomaly_metrics"][0]["rank"] = 3
    r = f.post(PACKET, json.dumps(p), auth=hpc)
    check(r.status == 200, "changed packet: %d %s" % (r.status, r.body[:200]))
    r = f.post(PACKET + "?run=xgc-2", json.dumps(p), auth=hpc)
    j = r.json() if r.status == 200 else {}
    check(r.status == 200 and j.get("run") == "xgc-2" and j.get("inserted", 0) > 0, "same packet, other run: %s" % j)

    # Departures: no version (legacy), sentinels of an empty RunStats, unknown payloads.
    legacy = {"created_at": 1745598467123, "counter_stats": [{"app": 0, "counter": "empty", "stats": {
        "accumulate": 0.0, "count": 0.0, "kurtosis": 0.0, "maximum": 2.2250738585072014e-308, "mean": 0.0,
        "minimum": 1.7976931348623157e308, "skewness": 0.0, "stddev": 0.0}}], "new_payload": [1, 2]}
    r = f.post(PACKET, json.dumps(legacy), auth=hpc)
    j = r.json() if r.status == 200 else {}
    check(r.status == 200 and j.get("notes") == 3, "legacy packet with departures: %d %s" % (r.status, j))
    notes = {n for (n,) in f.query("SELECT note FROM notes WHERE kind = 'chimbuko' AND time = 1745598467")}
    check(notes == {"legacy_schema", "empty_stats", "unknown_field"}, "notes recorded: %s" % notes)
    stats = f.query("SELECT s.stats FROM chimbuko_counter_stats s JOIN strings n ON n.id = s.counter_id "
                    "WHERE n.s = 'empty'")
    check(stats and '"minimum":null,"maximum":null' in stats[0][0], "sentinels stored as null: %s" % stats)

    # Bad packets get a 4xx naming the field (nothing stored).
    r = f.post(PACKET, '{"version": 2, "created_at": "soon"}', auth=hpc)
    check(r.status == 400 and r.json()["error"].get("path") == "created_at", "bad created_at: %d %s" % (r.status, r.body))
    bad = load(os.path.join(V2, "pserver-packet-full.json"))
    bad["created_at"] = 1745598468123
    bad["anomaly_stats"]["anomaly"][0]["data"][1]["n_anomalies"] = -3
    r = f.post(PACKET, json.dumps(bad), auth=hpc)
    check(r.status == 400 and r.json()["error"].get("path") == "anomaly_stats.anomaly[0].data[1].n_anomalies",
          "bad step: %d %s" % (r.status, r.body))
    check(not f.query("SELECT 1 FROM chimbuko_packets WHERE created_at_ms = 1745598468123"), "nothing of it stored")
    r = f.post(PACKET, "{not json", auth=hpc)
    check(r.status == 400 and r.json()["error"].get("path", "").startswith("line 1"), "syntax error: %s" % r.body)
    r = f.post(PACKET, read(os.path.join(V2, "pserver-packet-idle.json")), auth=("hpc1", "wrong"))
    check(r.status == 401, "wrong secret: %d" % r.status)
    r = f.post(PACKET + "?cluster=other", read(os.path.join(V2, "pserver-packet-idle.json")), auth=hpc)
    check(r.status == 401, "another cluster's data: %d" % r.status)
    r = f.post(PACKET + "?run=bad/run", read(os.path.join(V2, "pserver-packet-idle.json")), auth=hpc)
    check(r.status == 400 and r.json()["error"].get("path") == "run", "bad run label: %d" % r.status)
    # The same handler under fjord's own ingest prefix.
    idle = load(os.path.join(V2, "pserver-packet-idle.json"))
    idle["created_at"] = 1745598469123
    r = f.post(PROV + "packet", json.dumps(idle), auth=hpc)
    check(r.status == 200 and r.json().get("created_at") == 1745598469123, "packet under /ingest/chimbuko: %s" % r.body)


def test_like_chimbuko(f, secret):
    """libcurl with the credentials in the URL, as Chimbuko is configured; whatever fjord answers,
    curl must see an HTTP answer, never a transport error (the first one stops Chimbuko's sender)."""
    if not shutil.which("curl"):
        print("curl not installed: the libcurl checks are skipped")
        return
    url = "http://hpc1:%s@127.0.0.1:%d%s?run=load" % (secret, f.port, PACKET)
    idle = load(os.path.join(V2, "pserver-packet-idle.json"))
    latencies = []
    for i in range(20):
        idle["created_at"] = 1745598470000 + i * 1000
        t0 = time.time()
        rc, code = curl(url, json.dumps(idle, indent=4, sort_keys=True).encode())
        latencies.append(time.time() - t0)
        check(rc == 0 and code == 200, "packet %d through libcurl: exit %d, HTTP %d" % (i, rc, code))
    latencies.sort()
    check(latencies[-2] < 1.0, "packets answered fast (p95 %.3f s; one a second must keep up)" % latencies[-2])

    # A large packet (many ranks), with and without Expect: 100-continue, answered 200 or 4xx: never
    # a transport error, because fjord reads the whole body before answering.
    big = load(os.path.join(V2, "pserver-packet-full.json"))
    big["created_at"] = 1745598500123
    tmpl = big["anomaly_stats"]["anomaly"][0]
    big["anomaly_stats"]["anomaly"] = []
    for rank in range(3000):
        a = copy.deepcopy(tmpl)
        a["key"] = "0:%d" % rank
        for d in a["data"]:
            d["rank"] = rank
        big["anomaly_stats"]["anomaly"].append(a)
    body = json.dumps(big, indent=4).encode()
    check(len(body) > 2 << 20, "big packet is over 2 MB (%d)" % len(body))
    rc, code = curl(url, body, ["-H", "Expect: 100-continue"])
    check(rc == 0 and code == 200, "big packet: exit %d, HTTP %d" % (rc, code))
    bad_url = "http://hpc1:wrong@127.0.0.1:%d%s?run=load" % (f.port, PACKET)
    for extra in ([], ["-H", "Expect: 100-continue"], ["-H", "Expect:"]):
        rc, code = curl(bad_url, body, extra)
        check(rc == 0 and code == 401, "big packet, wrong secret %s: exit %d, HTTP %d" % (extra, rc, code))
    big["anomaly_stats"]["anomaly"][2999]["data"][0]["step"] = "x"
    rc, code = curl(url, json.dumps(big).encode(), ["-H", "Expect:"])
    check(rc == 0 and code == 400, "big bad packet: exit %d, HTTP %d" % (rc, code))
    check(f.query("SELECT count(*) FROM chimbuko_rank_stats WHERE created_at_ms = 1745598500123")[0][0] == 3000,
          "the big packet's 3000 ranks stored")


def post_records(f, auth, coll, body, run=None):
    path = PROV + coll + ("?run=" + run if run else "")
    return f.post(path, body, auth=auth)


def test_provenance(f, hpc):
    files = [("legacy-v1-anomaly-cpu-basic.json", "anomalies", 1),
             ("legacy-v1-anomaly-cpu-comm-and-counters.json", "anomalies", 1),
             ("legacy-v1-anomaly-gpu.json", "anomalies", 1),
             ("legacy-v1-normalexec.json", "normalexecs", 1),
             ("legacy-v1-metadata-rank0.json", "metadata", 108),
             ("synthetic-v2/anomalies-record-cpu-hbos.json", "anomalies", 1),
             ("synthetic-v2/anomalies-record-gpu-sstd.json", "anomalies", 1),
             ("synthetic-v2/metadata-records.json", "metadata", 5),
             ("synthetic-v2/global-func_stats-records.json", "func_stats", 2),
             ("synthetic-v2/global-counter_stats-records.json", "counter_stats", 1)]
    for name, coll, n in files:
        r = post_records(f, hpc, coll, read(os.path.join(DATA, name)))
        j = r.json() if r.status == 200 else {}
        check(r.status == 200 and j.get("records") == n and j.get("inserted") == n and j.get("collection") == coll,
              "%s into %s: %d %s" % (name, coll, r.status, r.body[:300]))
    # The GPU record whose parent is an error string has the same label as the SSTD one: in the
    # same run it is the same event (a duplicate); in another run it is stored.
    err_rec = read(os.path.join(V2, "anomalies-record-gpu-parent-error.json"))
    r = post_records(f, hpc, "anomalies", err_rec)
    check(r.status == 200 and r.json().get("duplicates") == 1, "same label, same run: duplicate: %s" % r.body)
    r = post_records(f, hpc, "anomalies", err_rec, run="other")
    j = r.json() if r.status == 200 else {}
    check(r.status == 200 and j.get("inserted") == 1 and j.get("notes") == 1, "other run stored, noted: %s" % j)
    # Re-sending adds nothing; several records per request (an array and concatenated objects).
    both = read(os.path.join(DATA, "legacy-v1-anomaly-cpu-basic.json")) + b"\n" + \
        b"[" + read(os.path.join(V2, "anomalies-record-cpu-hbos.json")) + b"]"
    r = post_records(f, hpc, "anomalies", both)
    j = r.json() if r.status == 200 else {}
    check(r.status == 200 and j.get("records") == 2 and j.get("inserted") == 0 and j.get("duplicates") == 2,
          "re-sent records: %s" % j)
    r = post_records(f, hpc, "metadata", read(os.path.join(DATA, "legacy-v1-metadata-rank0.json")))
    check(r.status == 200 and r.json().get("inserted") == 0, "re-sent metadata: %s" % r.body[:200])
    # Missing GPU fields are a departure, noted.
    rec = load(os.path.join(V2, "anomalies-record-cpu-hbos.json"))
    for k in ("is_gpu_event", "gpu_location", "gpu_parent"):
        del rec[k]
    rec["event_id"] = "1:12:4800"
    r = post_records(f, hpc, "normalexecs", json.dumps(rec))
    check(r.status == 200 and r.json().get("notes") == 1, "missing GPU fields noted: %s" % r.body)
    # Bad records: 400 with the path, nothing of the request stored.
    rec = load(os.path.join(V2, "anomalies-record-cpu-hbos.json"))
    good = copy.deepcopy(rec)
    good["event_id"] = "1:12:4900"
    rec["event_id"] = "1:12:4901"
    rec["event_window"]["comm_window"][0]["bytes"] = "8192"
    r = post_records(f, hpc, "anomalies", json.dumps([good, rec]))
    check(r.status == 400 and r.json()["error"].get("path") == "[1].event_window.comm_window[0].bytes",
          "bad record: %d %s" % (r.status, r.body))
    check(not f.query("SELECT 1 FROM chimbuko_events WHERE idx = 4900"), "all or nothing")
    r = post_records(f, hpc, "anomalies", json.dumps(dict(good, event_id="3:12:1")))
    check(r.status == 400 and r.json()["error"].get("path") == "[0].event_id", "label of another rank: %s" % r.body)
    r = post_records(f, hpc, "ad_model", read(os.path.join(V2, "global-ad_model-records.json")))
    check(r.status == 404, "unknown collection: %d" % r.status)
    r = post_records(f, hpc, "metadata", "[]")
    check(r.status == 400, "no records: %d" % r.status)


def test_queries(f, hpc, reader, other):
    j = q(f, hpc, "runs", cluster="hpc1")
    runs = {r["run"]: r for r in j.get("runs", [])}
    check(set(runs) == {"default", "load", "other", "xgc-2"}, "runs: %s" % sorted(runs))
    d = runs.get("default", {})
    check(d.get("packets", 0) >= 5 and d.get("anomalies") == 5 and d.get("normalexecs") == 2 and d.get("ranks") == 1,
          "default run: %s" % d)
    check(d.get("first") == "2025-04-25T16:27:43Z", "first packet time: %s" % d.get("first"))

    # Anomaly statistics over time per rank (steps), function (profile points) and rank+function.
    j = q(f, hpc, "stats/ranks", cluster="hpc1", run="default", rank=1)
    series = j.get("ranks", [])
    check(len(series) == 1 and series[0]["rank"] == 1 and series[0]["app"] == 0, "one rank series: %s" % series)
    pts = series[0]["points"] if series else []
    check([p["step"] for p in pts] == [11, 12, 13] and [p["anomalies"] for p in pts] == [1, 3, 5],
          "steps and anomalies: %s" % [(p["step"], p["anomalies"]) for p in pts])
    check(len(pts) > 1 and abs(pts[1]["score_max"] - 7.3125) < 0.001, "score max: %s" % pts[1:2])
    check(pts and pts[1]["scores"]["count"] == 3, "scores RunStats: %s" % pts[1:2])
    j = q(f, hpc, "stats/ranks", cluster="hpc1", run="default", step="12-13")
    check(sum(len(s["points"]) for s in j.get("ranks", [])) == 2, "step range: %s" % str(j)[:300])
    j = q(f, hpc, "stats/functions", cluster="hpc1", run="default", fid=42)
    pts = j["functions"][0]["points"] if j.get("functions") else []
    check([p["anomalies"] for p in pts] == [3, 8], "function points on change only: %s" % [p["anomalies"] for p in pts])
    check(pts and pts[0]["inclusive"]["count"] == 4 and pts[0]["name"] == "MPI_Allreduce()", "profile: %s" % pts[:1])
    j = q(f, hpc, "stats/metrics", cluster="hpc1", run="default")
    keys = [(s["rank"], s["fid"]) for s in j.get("metrics", [])]
    check(keys == [(1, 42), (3, 42)], "metrics series per rank and function: %s" % keys)
    j = q(f, hpc, "stats/counters", cluster="hpc1", run="default", counter="Message size for all-reduce")
    check(len(j.get("counters", [])) == 1 and len(j["counters"][0]["points"]) == 1, "counter series: %s" % j)

    # Top ranks and functions in a window.
    j = q(f, hpc, "top", cluster="hpc1", run="default", **{"from": "2025-04-25T16:27:00Z", "to": "2025-04-25T16:28:00Z"})
    ranks = [(r["rank"], r["anomalies"]) for r in j.get("ranks", [])]
    check(ranks[:1] == [(1, 9)], "top ranks: %s" % ranks)
    funcs = [(x["fid"], x["anomalies"], x["ranks"]) for x in j.get("functions", [])]
    check(funcs == [(42, 7, 2)], "top functions: %s" % funcs)
    j = q(f, hpc, "top", cluster="hpc1", run="default", **{"from": "2025-04-25T16:27:42Z", "to": "2025-04-25T16:27:42Z"})
    check([(r["rank"], r["anomalies"]) for r in j.get("ranks", [])] == [(1, 5)], "narrow window: %s" % j.get("ranks"))
    check(j.get("functions") == [], "no metrics in that window: %s" % j.get("functions"))
    j = q(f, hpc, "top", cluster="hpc1", run="default", limit=1, **{"from": "2020-01-01T00:00:00Z"})
    check(len(j.get("ranks", [])) == 1 and j["ranks"][0]["rank"] == 1, "limit 1: %s" % j.get("ranks"))

    # Provenance records, filtered, with their labels.
    j = q(f, hpc, "provenance/anomalies", cluster="hpc1", run="default")
    events = j.get("events", [])
    labels = [e["event"] for e in events]
    check(labels == ["1:0:208", "1:1:1309", "1:6:2", "1:12:4711", "1:12:9001"], "anomalies in entry order: %s" % labels)
    e = {x["event"]: x for x in events}
    check(e.get("1:1:1309", {}).get("version") == 0 and e["1:1:1309"]["algo"] == "sstd"
          and e["1:1:1309"]["outlier_score"] is None, "legacy record: %s" % e.get("1:1:1309", {}).get("algo"))
    check(e.get("1:12:4711", {}).get("hostname") == "node0017" and e["1:12:4711"]["algo_params"]["histogram"]["Bin width"] == 12.5,
          "v2 record: %s" % e.get("1:12:4711", {}).get("algo_params"))
    check(e.get("1:6:2", {}).get("is_gpu") is True and e["1:6:2"]["gpu"] == {"thread": 8, "device": 0, "context": 1, "stream": 0},
          "GPU record: %s" % e.get("1:6:2", {}).get("gpu"))
    check(e.get("1:12:9001", {}).get("gpu_parent_event") == "1:12:8990", "GPU parent: %s" % e.get("1:12:9001"))
    check(e.get("1:0:208", {}).get("time") == "2020-06-19T16:30:16Z" and e["1:0:208"]["entry_us"] == 1592584216549525,
          "times: %s" % e.get("1:0:208", {}).get("time"))
    j = q(f, hpc, "provenance/anomalies", cluster="hpc1", run="other")
    check(j.get("events") and j["events"][0]["gpu_parent_error"].startswith("Chimbuko error:"), "parent error: %s" % j)
    for params, want in (({"fid": 71}, ["1:1:1309"]), ({"func": "MPI_Bcast()"}, ["1:0:208"]),
                         ({"step": "12"}, ["1:12:4711", "1:12:9001"]), ({"event": "1:12:4711"}, ["1:12:4711"]),
                         ({"rank": 0}, []), ({"app": 1}, []),
                         ({"from": "2025-01-01T00:00:00Z"}, ["1:12:4711", "1:12:9001"]),
                         ({"to": "2020-06-19T16:30:19Z"}, ["1:0:208"])):
        j = q(f, hpc, "provenance/anomalies", cluster="hpc1", run="default", **params)
        got = [x["event"] for x in j.get("events", [])]
        check(got == want, "filter %s: %s, want %s" % (params, got, want))
    j = q(f, hpc, "provenance/normalexecs", cluster="hpc1", run="default", brief="true")
    got = [(x["event"], x["kind"], x["call_stack"]) for x in j.get("events", [])]
    check(got == [("1:1:1314", "normal", None), ("1:12:4800", "normal", None)], "normalexecs, brief: %s" % got)
    # Pages of all events.
    seen, cursor, pages = [], None, 0
    while pages < 10:
        params = {"cluster": "hpc1", "run": "default", "limit": 3, "brief": "1"}
        if cursor:
            params["cursor"] = cursor
        j = q(f, hpc, "provenance/events", **params)
        seen += [x["event"] + "/" + x["kind"] for x in j.get("events", [])]
        cursor = j.get("next")
        pages += 1
        if not cursor:
            break
    check(len(seen) == 7 and len(set(seen)) == 7 and pages == 3, "paged events: %d pages %s" % (pages, seen))
    j = q(f, hpc, "provenance/metadata", cluster="hpc1", run="default", rank=0)
    md = {(m["thread"], m["descr"]): m["value"] for m in j.get("metadata", [])}
    check(len(md) == 108 and md.get((0, "Hostname")) == "b17n15", "metadata of rank 0: %d" % len(md))
    j = q(f, hpc, "provenance/func_stats", cluster="hpc1")
    fs = {x["fid"]: x for x in j.get("func_stats", [])}
    check(fs.get(42, {}).get("anomalies") == 6 and fs.get(7, {}).get("anomaly_metrics") is None
          and fs[42]["anomaly_metrics"]["count"]["accumulate"] == 6, "final profiles: %s" % sorted(fs))
    j = q(f, hpc, "provenance/counter_stats", cluster="hpc1")
    check([(c["counter"], c["count"]) for c in j.get("counter_stats", [])] == [("Message size for all-reduce", 4)],
          "final counters: %s" % j.get("counter_stats"))
    r = f.get("/api/v1/chimbuko/provenance/anomalies?cluster=hpc1&run=default&format=csv&brief=1", auth=hpc)
    check(r.status == 200 and r.body.startswith("event,kind,run,app,rank") and r.body.count("\n") == 6,
          "CSV: %d %s" % (r.status, r.body[:120]))

    # Credentials and bad parameters.
    r = f.get("/api/v1/chimbuko/runs?cluster=hpc1", auth=reader)
    check(r.status == 200, "read-only credential reads: %d" % r.status)
    r = f.get("/api/v1/chimbuko/runs?cluster=hpc1", auth=other)
    check(r.status == 403, "another cluster's credential: %d" % r.status)
    r = f.get("/api/v1/chimbuko/runs?cluster=nowhere", auth=reader)
    check(r.status == 404, "unknown cluster: %d" % r.status)
    r = f.get("/api/v1/chimbuko/provenance/anomalies?cluster=hpc1&step=x", auth=hpc)
    check(r.status == 400 and r.json()["error"].get("path") == "step", "bad step: %s" % r.body)
    r = f.get("/api/v1/chimbuko/provenance/anomalies?cluster=hpc1&event=1-2-3", auth=hpc)
    check(r.status == 400 and r.json()["error"].get("path") == "event", "bad event label: %s" % r.body)
    r = f.get("/api/v1/chimbuko/stats/nothing?cluster=hpc1", auth=hpc)
    check(r.status == 404, "unknown series: %d" % r.status)
    r = f.get("/api/v1/chimbuko/top?cluster=hpc1&rnak=1", auth=hpc)
    check(r.status == 400, "unknown parameter: %d" % r.status)


def main():
    f = Fjord().start()
    try:
        secret = f.token("hpc1")
        hpc = ("hpc1", secret)
        other = ("other", f.token("other"))
        reader = ("analysts", f.token("analysts", "--read-only"))
        test_packets(f, hpc)
        test_like_chimbuko(f, secret)
        test_provenance(f, hpc)
        test_queries(f, hpc, reader, other)
        check(f.stop() == 0, "SIGTERM exits 0")
    finally:
        f.cleanup()
    finish()


if __name__ == "__main__":
    main()
