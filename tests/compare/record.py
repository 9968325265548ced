"""Records the answers of fjord's read API over three datasets, so that two builds can be compared
byte for byte (compare.sh). Run by record.sh; see README.md.

    record.py --build DIR --out DIR --backend sqlite|postgres

Datasets, each in a fresh database of the backend, each served by its own fjord on 127.0.0.1:
  bench   the API benchmark's synthetic cluster (api_gen, through fjord's write path), small
  test    the integration tests' inputs posted over HTTP: every Sonar envelope of the shared data,
          line protocol (cc-metric-store), cc-backend job events, Chimbuko packets and provenance
          records, aicr measurement snapshots, Slurm job and cluster envelopes
  import  `fjord import` of the real Sonar files (sonar/real and sonar-0.19-output)

Each answer is one file OUT/<dataset>/<slug>: a header block (request, status, the response
headers that belong to the answer) and, after an empty line, the body exactly as sent. Requests
take their ids, hosts and times from earlier answers, and every window is pinned (explicit from and
to), so no answer depends on when the recording ran: nothing is normalised. The one input written
relative to the current time (line protocol for /api/healthcheck's fresh and stale nodes) gives
answers that name no time.
"""
import argparse
import base64
import hashlib
import http.client
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
from datetime import datetime

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SOURCE, "tests", "integration"))

# Response headers that are part of an answer; the others (Date, Connection, Keep-Alive) are not.
KEEP_HEADERS = ("content-type", "content-encoding", "content-disposition", "fjord-next-cursor", "fjord-time",
                "www-authenticate", "allow", "location", "retry-after")

BENCH = {"nodes": 64, "days": 2, "interval": 900}


def slug(method, path, body):
    """A readable, stable file name for a request: its path and query as text, cut short, and a
    hash of the whole request so that two requests never share a name."""
    h = hashlib.sha1(("%s %s\n" % (method, path)).encode() + (body or b"")).hexdigest()[:10]
    text = re.sub(r"[^A-Za-z0-9._=-]+", "_", path.lstrip("/").replace("api/v1/", ""))
    return "%s_%s_%s" % (text[:100].strip("_"), method, h)


class Raw:
    def __init__(self, status, body, headers):
        self.status, self.body, self.headers = status, body, headers


def raw_request(port, method, path, body, headers, auth):
    """One request over a new connection; the answer's body as bytes, exactly as sent."""
    h = dict(headers or {})
    if auth:
        h["Authorization"] = "Basic " + base64.b64encode(("%s:%s" % auth).encode()).decode()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        c.request(method, path, body=body, headers=h)
        r = c.getresponse()
        return Raw(r.status, r.read(), r.getheaders())
    finally:
        c.close()


class Recorder:
    """Talks to one fjord and writes each answer to a file."""

    def __init__(self, fjord, out, auth):
        self.f = fjord
        self.out = out
        self.auth = auth
        self.count = 0
        os.makedirs(out, exist_ok=True)
        self.index = open(os.path.join(out, "INDEX"), "w")

    def request(self, method, path, body=None, headers=None, auth=None):
        """Sends one request, records its answer, returns the Response."""
        if isinstance(body, str):
            body = body.encode()
        r = raw_request(self.f.port, method, path, body, headers, self.auth if auth is None else auth)
        name = slug(method, path, body)
        raw = r.body
        lines = ["%s %s" % (method, path)]
        if body:
            lines.append("request-body-sha1: %s" % hashlib.sha1(body).hexdigest())
        for k, v in sorted(headers.items() if headers else ()):
            lines.append("request-%s: %s" % (k.lower(), v))
        lines.append("status: %d" % r.status)
        for k, v in sorted((k.lower(), v) for k, v in r.headers):
            if k in KEEP_HEADERS:
                lines.append("%s: %s" % (k, v))
        with open(os.path.join(self.out, name), "wb") as fh:
            fh.write(("\n".join(lines) + "\n\n").encode() + raw)
        self.index.write("%s\t%s %s\n" % (name, method, path))
        self.count += 1
        return r

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def json(self, path, **kw):
        r = self.get(path, **kw)
        try:
            return json.loads(r.body) if r.status == 200 else {}
        except ValueError:
            return {}

    def close(self):
        self.index.close()


def q(_path, **params):
    """path?params in a fixed order (the order given), lists as repeated parameters."""
    items = []
    for k, v in params.items():
        if v is None:
            continue
        for x in (v if isinstance(v, list) else [v]):
            items.append((k, str(x)))
    return _path + ("?" + urllib.parse.urlencode(items) if items else "")


def rows(doc, key=None):
    """The row list of a JSON answer (the first list member when key is not given)."""
    if not isinstance(doc, dict):
        return []
    if key:
        return doc.get(key) or []
    for v in doc.values():
        if isinstance(v, list):
            return v
    return []


def follow_pages(rec, path, **params):
    """Every page of a paged listing, following next until it is null (at most 200 pages)."""
    cursor = None
    for _ in range(200):
        doc = rec.json(q(path, **dict(params, cursor=cursor)))
        cursor = doc.get("next") if isinstance(doc, dict) else None
        if not cursor:
            return


# --- the requests ---------------------------------------------------------------------------


def record_common(rec):
    rec.get("/api/v1/openapi.json", auth=())
    rec.get("/api/v1/health", auth=())
    rec.get("/api/v1/clusters", auth=())  # no credential
    rec.get("/api/v1/clusters")
    rec.get("/api/v1/clusters?format=csv")
    rec.get("/api/v1/clusters", headers={"Accept": "text/csv"})
    rec.get("/api/v1/nodes?cluster=no.such.cluster")
    rec.get("/api/v1/jobs?cluster=no.such.cluster")


def window_of(rec, cluster):
    """A pinned window holding all of a cluster's data: from 1 to an hour after its latest sample
    (from the clusters list), or to 2030 when it lists none."""
    r = raw_request(rec.f.port, "GET", "/api/v1/clusters", None, None, rec.auth)  # read, not recorded again
    for c in rows(json.loads(r.body) if r.status == 200 else {}, "clusters"):
        if c.get("cluster") == cluster and c.get("last_seen"):
            return 1, epoch(c["last_seen"]) + 3600
    return 1, 1800000000


def epoch(ts):
    return int(datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp())


def record_sonar_cluster(rec, cluster, lo, hi, max_nodes=6, max_jobs=6, page=7):
    """Every Sonar read endpoint over one cluster, with the parameter combinations that take each
    code path; hosts, users, job ids and times come from earlier answers."""
    win = dict(cluster=cluster, **{"from": lo, "to": hi})
    nodes = rows(rec.json(q("/api/v1/nodes", cluster=cluster)))
    rec.get(q("/api/v1/nodes", cluster=cluster, format="csv"))
    hosts = sorted({n.get("node") for n in nodes if isinstance(n, dict)} - {None})
    if len(hosts) > max_nodes:  # the first and the last few
        hosts = hosts[:max_nodes // 2] + hosts[-(max_nodes - max_nodes // 2):]
    if hosts:
        rec.get(q("/api/v1/nodes", cluster=cluster, host=hosts[0]))
        rec.get(q("/api/v1/nodes", cluster=cluster, host=hosts[0][:2] + "*"))
    for h in hosts:
        rec.get(q("/api/v1/nodes/%s/sysinfo" % h, **win))
        rec.get(q("/api/v1/nodes/%s/sysinfo" % h, cluster=cluster, format="csv"))
        rec.get(q("/api/v1/nodes/%s/topology" % h, cluster=cluster))
        rec.get(q("/api/v1/nodes/%s/topology" % h, cluster=cluster, kind="text"))
        rec.get(q("/api/v1/nodes/%s/measurements" % h, cluster=cluster))
        rec.get(q("/api/v1/export/sss/nodes/%s" % h, cluster=cluster))

    # jobs: the list in both formats, every sort both ways, every filter, paging to the end
    jobs = rows(rec.json(q("/api/v1/jobs", **win)), "jobs")
    rec.get(q("/api/v1/jobs", format="csv", **win))
    rec.get(q("/api/v1/jobs", **win), headers={"Accept": "text/csv"})
    rec.get(q("/api/v1/jobs", cluster=cluster))  # the default window
    for key in ("start", "end", "duration", "job", "cpu_avg", "cpu_peak", "mem_avg_kb", "mem_peak_kb", "gpu_avg",
                "gpu_peak", "gpumem_avg_kb", "gpumem_peak_kb", "cpu_eff", "mem_eff", "gpu_eff"):
        for order in ("asc", "desc"):
            rec.get(q("/api/v1/jobs", sort=key, order=order, limit=page, **win))
    follow_pages(rec, "/api/v1/jobs", limit=page, **win)
    follow_pages(rec, "/api/v1/jobs", sort="cpu_peak", order="desc", limit=page, **win)
    # the problem-jobs report (job_activity and job_gpu_activity), per job and per user
    rec.get(q("/api/v1/problems", **win))
    rec.get(q("/api/v1/problems/users", **win))
    # usage per user, account, partition and cluster; per day over the last three days of the window
    for by in ("user", "account", "partition", "cluster"):
        rec.get(q("/api/v1/usage", by=by, **win))
    days = dict(cluster=cluster, **{"from": hi - 3 * 86400, "to": hi})
    rec.get(q("/api/v1/usage", by="user", bucket="day", **days))
    rec.get(q("/api/v1/usage", by="account", bucket="week", format="csv", **days))
    rec.get(q("/api/v1/usage", by="user", sort="core_h_used", limit=3, **win))
    rec.get(q("/api/v1/usage", by="account", sort="gpu_eff", order="asc", **win))
    users = sorted({j.get("user") for j in jobs if j.get("user")})
    cmds = sorted({c for j in jobs for c in (j.get("commands") or []) if isinstance(c, str)})
    states = sorted({j.get("state") for j in jobs if j.get("state")})
    parts = sorted({j.get("partition") for j in jobs if j.get("partition")})
    accts = sorted({j.get("account") for j in jobs if j.get("account")})
    filters = [dict(running="true"), dict(running="false"), dict(gpu="some"), dict(gpu="none"),
               dict(min_runtime="1h"), dict(min_runtime="10m"),
               dict(min_cpu_avg=50), dict(max_cpu_avg=50), dict(min_cpu_peak=100), dict(max_cpu_peak=100),
               dict(min_mem_avg_kb="1G"), dict(max_mem_avg_kb="1G"), dict(min_mem_peak_kb=1000000),
               dict(max_mem_peak_kb="16G"), dict(min_gpu_avg=10), dict(max_gpu_avg=10), dict(min_gpu_peak=50),
               dict(max_gpu_peak=50), dict(min_gpumem_avg_kb="1G"), dict(max_gpumem_avg_kb="1G"),
               dict(min_gpumem_peak_kb="1G"), dict(max_gpumem_peak_kb="1G"), dict(min_cpu_eff=0.5),
               dict(cpu_eff_max=0.25), dict(max_mem_eff=0.5), dict(gpu_eff_min=0.1), dict(command="*"),
               dict(command="no-such-command")]
    if users:
        filters += [dict(user=users[0]), dict(user=",".join(users[:3])), dict(user=users[-1], format="csv")]
    if cmds:
        filters += [dict(command=cmds[0]), dict(command=cmds[-1][:3] + "*")]
    if states:
        filters += [dict(state=s) for s in states[:4]]
    if parts:
        filters += [dict(partition=parts[0])]
    if accts:
        filters += [dict(account=accts[0])]
    if hosts:
        filters += [dict(host=hosts[0]), dict(host=hosts[-1], running="false"), dict(host=hosts[0][:1] + "*")]
    if jobs:
        ids = [j.get("job") for j in jobs if j.get("job") is not None]
        if ids:
            filters += [dict(job=ids[0]), dict(job="%s,%s" % (ids[0], ids[-1]))]
    for fl in filters:
        rec.get(q("/api/v1/jobs", **dict(win, **fl)))

    # single jobs and profiles: the first, last, longest and busiest jobs
    picks = []
    for j in jobs[:2] + jobs[-2:] + sorted(jobs, key=lambda j: (-(j.get("duration_s") or 0), j.get("id")))[:1] + \
            sorted(jobs, key=lambda j: (-(j.get("cpu_peak") or 0), j.get("id")))[:1]:
        if j.get("id") is not None and j["id"] not in picks:
            picks.append(j["id"])
    for jid in picks[:max_jobs]:
        rec.get(q("/api/v1/jobs/%s" % jid, cluster=cluster))
        rec.get(q("/api/v1/jobs/%s" % jid, cluster=cluster, format="csv"))
        rec.get(q("/api/v1/jobs/%s/profile" % jid, cluster=cluster))
        rec.get(q("/api/v1/jobs/%s/profile" % jid, cluster=cluster, by="host"))
        rec.get(q("/api/v1/jobs/%s/profile" % jid, cluster=cluster, bucket="1h", format="csv"))
        if hosts:
            rec.get(q("/api/v1/jobs/%s/profile" % jid, cluster=cluster, host=hosts[0], bucket="5m"))
    rec.get(q("/api/v1/jobs/999999999", cluster=cluster))
    if picks:
        j0 = next(j for j in jobs if j.get("id") == picks[0])
        if j0.get("start"):
            t0 = epoch(j0["start"])
            rec.get(q("/api/v1/jobs/%s/profile" % picks[0], cluster=cluster,
                      **{"from": t0, "to": t0 + 3600, "bucket": 600}))

    # load, with default and given buckets, per host, both formats: over the last 30 days and the
    # last 2 (the list window would ask for too many buckets)
    month = dict(cluster=cluster, **{"from": max(lo, hi - 30 * 86400), "to": hi})
    days = dict(cluster=cluster, **{"from": max(lo, hi - 2 * 86400), "to": hi})
    for path in ("/api/v1/load/nodes", "/api/v1/load/cluster", "/api/v1/load/gpus"):
        rec.get(q(path, **month))
        rec.get(q(path, bucket="1h", **month))
        rec.get(q(path, bucket="1d", format="csv", **month))
        rec.get(q(path, bucket="5m", **days))
        for h in hosts[:2]:
            rec.get(q(path, host=h, **month))
            rec.get(q(path, host=h, bucket="15m", format="csv", **days))

    # Slurm
    sj = rows(rec.json(q("/api/v1/slurm/jobs", **win)), "jobs")
    rec.get(q("/api/v1/slurm/jobs", format="csv", **win))
    for fl in (dict(steps="false"), dict(order="desc"), dict(running="true"), dict(running="false"),
               dict(state="COMPLETED"), dict(state="RUNNING,PENDING"), dict(array=1), dict(het=1)):
        rec.get(q("/api/v1/slurm/jobs", **dict(win, **fl)))
    follow_pages(rec, "/api/v1/slurm/jobs", limit=page, **win)
    follow_pages(rec, "/api/v1/slurm/jobs", limit=page, order="desc", steps="false", **win)
    for key, param in (("user", "user"), ("partition", "partition"), ("account", "account"),
                       ("job_id", "job"), ("array_job_id", "array"), ("het_job_id", "het")):
        vals = sorted({str(j.get(key)) for j in sj if j.get(key) not in (None, "", 0)})
        if vals:
            rec.get(q("/api/v1/slurm/jobs", **dict(win, **{param: vals[0]})))
    if hosts:
        rec.get(q("/api/v1/slurm/jobs", host=hosts[0], **win))
    rec.get(q("/api/v1/slurm/partitions", cluster=cluster))
    rec.get(q("/api/v1/slurm/partitions", cluster=cluster, format="csv"))
    rec.get(q("/api/v1/slurm/partitions", cluster=cluster, at=lo))
    rec.get(q("/api/v1/slurm/partitions", cluster=cluster, at=hi))
    rec.get(q("/api/v1/slurm/nodes", cluster=cluster))
    rec.get(q("/api/v1/slurm/nodes", cluster=cluster, format="csv"))
    rec.get(q("/api/v1/slurm/nodes", cluster=cluster, at=lo + (hi - lo) // 2))
    if hosts:
        rec.get(q("/api/v1/slurm/nodes", cluster=cluster, host=hosts[0]))

    # uptime and errors
    rec.get(q("/api/v1/uptime", **win))
    rec.get(q("/api/v1/uptime", interval="5m", format="csv", **win))
    rec.get(q("/api/v1/uptime", interval="1h", **win))
    rec.get(q("/api/v1/uptime", **dict(win, **{"from": max(lo, hi - 86400)})))
    for h in hosts[:2]:
        rec.get(q("/api/v1/uptime", host=h, **win))
    rec.get(q("/api/v1/errors", **win))
    rec.get(q("/api/v1/errors", format="csv", **win))
    rec.get(q("/api/v1/errors", source="envelope", **win))
    rec.get(q("/api/v1/errors", source="sample", **win))
    follow_pages(rec, "/api/v1/errors", limit=2, **win)
    if hosts:
        rec.get(q("/api/v1/errors", host=hosts[0], **win))

    # the SSS export
    rec.get(q("/api/v1/export/sss/nodes", cluster=cluster))
    for fl in (dict(aggregation="Range"), dict(aggregation="List"), dict(state="Idle"), dict(state="Busy"),
               dict(state="Offline"), dict(aggregation="Range", state="Busy")):
        rec.get(q("/api/v1/export/sss/nodes", **dict(cluster=cluster, **fl)))
    if parts:
        rec.get(q("/api/v1/export/sss/nodes", cluster=cluster, partition=parts[0]))
    if hosts:
        rec.get(q("/api/v1/export/sss/nodes", cluster=cluster, host=hosts[0][:1] + "*"))


# --- datasets -------------------------------------------------------------------------------


def tokens(fjord, clusters):
    """A writing credential per cluster and a read-only one, made before the server starts (it
    reads credentials at start)."""
    out = {c: fjord.token(c) for c in sorted(clusters)}
    out["reader"] = fjord.token("reader", "--read-only")
    return out


def dataset_bench(args, out, new_db):
    from harness import Fjord, run_cli
    db = new_db("bench")
    gen = [os.path.join(args.build, "api_gen")]
    if not os.path.exists(gen[0]):
        gen = [os.path.join(args.build, "tests", "bench", "api_gen")]
    p = subprocess.run(gen + ["--db", db, "--nodes", str(BENCH["nodes"]), "--days", str(BENCH["days"]),
                              "--interval", str(BENCH["interval"])], capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise SystemExit("api_gen failed: %s" % p.stderr)
    g = json.loads(p.stdout.strip().splitlines()[-1])
    run_cli("migrate", "up", db=db)
    f = Fjord(db=db, tmp=args.tmp)
    t = tokens(f, [g["cluster"]])
    f.start()
    rec = Recorder(f, out, ("reader", t["reader"]))
    try:
        record_common(rec)
        c, lo, hi = g["cluster"], g["from"], g["to"]
        record_sonar_cluster(rec, c, lo, hi + BENCH["interval"], max_nodes=4, page=25)
        big = g["big_job"]
        doc = rec.json(q("/api/v1/jobs", cluster=c, job=big, **{"from": lo, "to": hi}))
        for j in rows(doc, "jobs")[:1]:
            day0 = g["big_start"]
            rec.get(q("/api/v1/jobs/%s/profile" % j["id"], cluster=c, **{"from": day0, "to": day0 + 86400}))
            rec.get(q("/api/v1/jobs/%s/profile" % j["id"], cluster=c, by="host", **{"from": day0, "to": day0 + 86400}))
        rec.get(q("/api/v1/load/cluster", cluster=c, bucket="1h", **{"from": lo + 1800, "to": lo + 86400 + 1800}))
        rec.get(q("/api/v1/load/nodes", cluster=c, host="g001", **{"from": lo, "to": hi}))
        rec.get(q("/api/v1/load/gpus", cluster=c, host="g001", bucket="1h", **{"from": lo, "to": hi}))
        rec.get(q("/api/v1/load/nodes", cluster=c, host="c00[01-10]", bucket="1h", **{"from": lo, "to": hi}))
    finally:
        rec.close()
        if f.stop() != 0:
            raise SystemExit("fjord (bench) did not exit 0: " + open(f.log).read()[-2000:])
    return rec.count


def read(path):
    with open(path, "rb") as fh:
        return fh.read()


def lp_history(base, k, hw):
    out = []
    for i in range(k):
        t = base + 60 * i
        for host, load in (("f0101", 1), ("f0102", 2)):
            out.append("cpu_load,hostname=%s,type=node value=%d %d" % (host, load + i, t))
            out.append("mem_bw,hostname=%s,type=socket,type-id=1 value=%d.5 %d" % (host, 3 * i + load, t))
        for h in range(hw):
            out.append("cpu_user,hostname=f0101,type=hwthread,type-id=%d value=%d %d" % (h, 10 * h + i, t))
    return ("\n".join(out) + "\n").encode()


def lp_live(now):
    """Line protocol relative to now for the health check: n01 fresh, n02 partly stale, n03 stale."""
    out = []
    fresh = [now - 60 * i for i in range(3)]
    stale = [now - 1200 - 60 * i for i in range(3)]
    for host, a, b in (("n01", fresh, fresh), ("n02", fresh, stale), ("n03", stale, stale)):
        for t in a:
            out.append("cpu_load,hostname=%s,type=node value=1 %d" % (host, t))
        for t in b:
            out.append("mem_used,hostname=%s,type=node value=1 %d" % (host, t))
    return ("\n".join(out) + "\n").encode()


def lp_event(measurement, tags, payload, ts):
    esc = json.dumps(payload).replace("\\", "\\\\").replace('"', '\\"')
    return ('%s%s event="%s" %d\n' % (measurement, tags, esc, ts)).encode()


def dataset_test(args, out, new_db):
    from harness import Fjord, SHARED, envelope_cluster, sonar_files, split_envelopes
    data = os.path.join(SHARED, "data")
    db = new_db("test")
    f = Fjord("--cc-cluster-config", os.path.join(data, "cc", "cc-backend_cluster-fritz.json"), db=db, tmp=args.tmp)
    files = sonar_files()
    envs = [(p, e) for p in files for e in split_envelopes(open(p).read())]
    clusters = {envelope_cluster(e) for _, e in envs} - {None}
    t = tokens(f, clusters | {"fritz", "fritz.live", "hpc1", "fox"})
    f.start()
    posts = []

    def post(path, body, cluster, headers=None, bearer=False):
        h = dict(headers or {})
        h.setdefault("Content-Type", "application/json")
        r = f.post(path, body, headers=h, auth=t[cluster] if bearer else (cluster, t[cluster]))
        posts.append((path, r.status))
        if r.status >= 300 and r.status != 422:
            raise SystemExit("posting to %s: %d %s" % (path, r.status, r.body[:300]))
        return r

    # Sonar: every envelope as the tests post them
    cluster = None
    for p, e in envs:
        cluster = envelope_cluster(e) or cluster
        post("/api/v1/ingest/sonar", json.dumps(e), cluster)
    # line protocol: the ClusterCockpit interval, a history for downsampling, job events
    txt = {"Content-Type": "text/plain"}
    post("/api/write?cluster=fritz", read(os.path.join(data, "lineproto", "cc-synthetic-fritz-2nodes-1interval.lp")),
         "fritz", headers=txt, bearer=True)
    post("/api/write?cluster=fritz", lp_history(1700000100, 30, 8), "fritz", headers=txt, bearer=True)
    post("/write?db=fritz&precision=s", b"cpu_load,hostname=f0103,type=node value=7 1700000400\n", "fritz")
    post("/api/v2/write?org=x&bucket=fritz&precision=s", b"cpu_load,hostname=f0104,type=node value=9 1700000460\n",
         "fritz", headers={"Authorization": "Token " + t["fritz"]})
    start = json.load(open(os.path.join(data, "cc", "cc-backend_startJobPayload.json")))
    stop = json.load(open(os.path.join(data, "cc", "cc-backend_stopJobPayload.json")))
    post("/api/jobs/start_job/", json.dumps(start), "fritz", bearer=True)
    post("/api/jobs/stop_job/", json.dumps(stop), "fritz", bearer=True)
    post("/api/jobs/start_job/", json.dumps(dict(start, jobId=5, startTime=1700000000)), "fritz", bearer=True)
    post("/api/jobs/stop_job/", json.dumps({"jobId": 5, "cluster": "fritz", "stopTime": 1700000600,
                                            "jobState": "failed"}), "fritz", bearer=True)
    body = lp_event("job", ",hostname=mngmt02,type=node,function=start_job", dict(start, jobId=69,
                                                                                    startTime=1738800000), 1740027951)
    body += lp_event("stop_job", ",hostname=mngmt02", {"jobId": 69, "cluster": "fritz", "stopTime": 1738842306,
                                                       "jobState": "completed"}, 1740027952)
    body += lp_event("start_job", "", dict(start, jobId=70, startTime=1738800000), 1740027953)
    body += b'syslog,hostname=f0101,type=node log="disk nearly full",level="warn" 1700000500\n'
    post("/api/write?cluster=fritz", body, "fritz", headers=txt, bearer=True)
    now = int(time.time())
    post("/api/write?cluster=fritz.live", lp_live(now), "fritz.live", headers=txt, bearer=True)
    # Chimbuko: the parameter server's packets, two runs, and every provenance record
    cb = os.path.join(data, "chimbuko")
    for name in ("pserver-packet-full.json", "pserver-packet-idle.json", "pserver-packet-minimal.json"):
        post("/api/anomalydata", read(os.path.join(cb, "synthetic-v2", name)), "hpc1")
    full = json.loads(read(os.path.join(cb, "synthetic-v2", "pserver-packet-full.json")))
    full["created_at"] = full.get("created_at", 0) + 1000 if isinstance(full.get("created_at"), int) else full.get(
        "created_at")
    post("/api/anomalydata?run=xgc-2", json.dumps(full), "hpc1")
    for name, coll in (("legacy-v1-anomaly-cpu-basic.json", "anomalies"),
                       ("legacy-v1-anomaly-cpu-comm-and-counters.json", "anomalies"),
                       ("legacy-v1-anomaly-gpu.json", "anomalies"), ("legacy-v1-normalexec.json", "normalexecs"),
                       ("legacy-v1-metadata-rank0.json", "metadata"),
                       ("synthetic-v2/anomalies-record-cpu-hbos.json", "anomalies"),
                       ("synthetic-v2/anomalies-record-gpu-sstd.json", "anomalies"),
                       ("synthetic-v2/metadata-records.json", "metadata"),
                       ("synthetic-v2/global-func_stats-records.json", "func_stats"),
                       ("synthetic-v2/global-counter_stats-records.json", "counter_stats")):
        post("/api/v1/ingest/chimbuko/" + coll, read(os.path.join(cb, name)), "hpc1")
    post("/api/v1/ingest/chimbuko/anomalies?run=other",
         read(os.path.join(cb, "synthetic-v2", "anomalies-record-gpu-parent-error.json")), "hpc1")
    # aicr measurement snapshots, both spellings and the shared examples
    aicr = os.path.join(SOURCE, "tests", "data", "aicr")
    post("/api/v1/ingest/measurements?cluster=fox&node=xe-go", read(os.path.join(aicr, "snapshot-xe9680-go.yaml")),
         "fox", headers={"Content-Type": "application/x-yaml"})
    post("/api/v1/ingest/measurements?cluster=fox&node=xe-oa", read(os.path.join(aicr, "snapshot-xe9680-openapi.json")),
         "fox")

    rec = Recorder(f, out, ("reader", t["reader"]))
    try:
        record_common(rec)
        for c in sorted(clusters):
            lo, hi = window_of(rec, c)
            record_sonar_cluster(rec, c, lo, hi)
        record_metrics(rec, t)
        record_chimbuko(rec)
        for node in ("xe-go", "xe-oa"):
            rec.get(q("/api/v1/nodes/%s/measurements" % node, cluster="fox"))
            for path in ("NetworkTopology.pfs[0].rail", "NetworkTopology.pfs[rail=3].pciAddress",
                         "GPU.smi.power-limit", "NetworkTopology.capabilities.sriov", "No.such.path", "GPU.smi"):
                rec.get(q("/api/v1/nodes/%s/measurements" % node, cluster="fox", path=path))
        rec.get(q("/api/v1/nodes/nowhere/measurements", cluster="fox"))
    finally:
        rec.close()
        if f.stop() != 0:
            raise SystemExit("fjord (test) did not exit 0: " + open(f.log).read()[-2000:])
    return rec.count


def record_metrics(rec, t):
    """cc-metric-store's query API, health check, events and cc jobs over the line protocol posted."""
    base, to = 1700000040, 1700000100 + 60 * 30
    scopes = [
        {"metric": "cpu_load", "host": "f0101"},
        {"metric": "cpu_user", "host": "f0101", "type": "socket", "type-ids": ["0", "1"]},
        {"metric": "cpu_user", "host": "f0101", "type": "hwthread", "type-ids": ["0", "1", "71"], "aggreg": True},
        {"metric": "cpu_user", "host": "f0101", "type": "hwthread", "type-ids": ["3", "4"]},
        {"metric": "mem_bw", "host": "f0102", "type": "socket", "type-ids": ["1"], "scale-by": 2},
        {"metric": "cpu_user", "host": "f0101"},
        {"metric": "cpu_load", "host": "f0101", "resolution": 300},
        {"metric": "nosuch", "host": "f0101"},
        {"metric": "cpu_load", "host": "f0999"},
        {"metric": "mem_bw", "host": "f0101", "type": "socket"},
        {"metric": "cpu_load", "host": "f0103"},
        {"metric": "cpu_load", "host": "f0104"},
    ]
    # the metric catalogue over the posted window, and over one without points
    rec.get("/api/v1/metrics/catalog?cluster=fritz&from=%d&to=%d" % (base, to))
    rec.get("/api/v1/metrics/catalog?cluster=fritz&from=%d&to=%d&format=csv" % (base - 86400, base - 3600))
    js = {"Content-Type": "application/json"}
    for method in ("POST", "GET"):
        rec.request(method, "/api/query", json.dumps({"cluster": "fritz", "from": base, "to": to, "queries": scopes}),
                    headers=js)
    for s in scopes:
        rec.request("POST", "/api/query?version=v2", json.dumps(
            {"cluster": "fritz", "from": base, "to": to, "with-stats": True, "with-data": True, "queries": [s]}),
            headers=js)
    rec.request("POST", "/api/query?version=v2", json.dumps(
        {"cluster": "fritz", "from": base, "to": to, "with-stats": True, "with-data": False,
         "queries": [dict(s, resolution=0) for s in scopes[:3]]}), headers=js)
    for fan in (["cpu_load", "nosuch"], ["cpu_user", "mem_bw", "cpu_load"]):
        rec.request("POST", "/api/query?version=v2", json.dumps(
            {"cluster": "fritz", "from": base, "to": to, "queries": None, "for-all-nodes": fan,
             "with-stats": True, "with-data": True}), headers=js)
    rec.request("POST", "/api/query", json.dumps({"cluster": "fritz", "from": base, "to": base + 600,
                                                  "queries": [{"metric": "cpu_load", "host": "f0101",
                                                               "resolution": 120}]}), headers=js)
    rec.request("POST", "/api/query", "{not json", headers=js)
    rec.request("POST", "/api/query", json.dumps({"from": base, "to": to}), headers=js)
    # the health check: on the old data (every node failed), and on data written relative to now
    # (fresh, partly stale, stale: the answers name no time, so they do not change with it)
    rec.get("/api/healthcheck")
    rec.get("/api/healthcheck?cluster=fritz&node=f0101")
    rec.get("/api/healthcheck?cluster=fritz&node=nope")
    rec.request("GET", "/api/healthcheck", json.dumps({"cluster": "fritz", "nodes": ["f0102", "f0101", "nope"],
                                                       "metric-names": ["cpu_load", "cpu_user", "nosuch"]}), headers=js)
    rec.request("GET", "/api/healthcheck", json.dumps({"cluster": "fritz.live", "nodes": ["n03", "n01", "n02", "x"],
                                                       "metric-names": ["cpu_load", "mem_used"]}), headers=js)
    for node in ("n01", "n02", "n03"):
        rec.get("/api/healthcheck?cluster=fritz.live&node=" + node)
    # events and cc jobs
    for params in (dict(), dict(kind="event"), dict(kind="log"), dict(kind="control"), dict(name="syslog"),
                   dict(host="f0101"), dict(limit=2), dict(**{"from": 1740027952}), dict(to=1740027951)):
        rec.get(q("/api/v1/events", cluster="fritz", **params))
    for params in (dict(), dict(**{"from": 1700000000}), dict(to=1700000000), dict(limit=2)):
        rec.get(q("/api/v1/cc/jobs", cluster="fritz", **params))
    rec.get(q("/api/v1/cc/jobs", cluster="no.such.cluster"))


def record_chimbuko(rec):
    c = "hpc1"
    runs = rows(rec.json(q("/api/v1/chimbuko/runs", cluster=c)))
    rec.get(q("/api/v1/chimbuko/runs", cluster=c, format="csv"))
    labels = [None] + sorted({r.get("run") for r in runs if isinstance(r, dict) and r.get("run") is not None})
    for run in labels:
        for series in ("ranks", "functions", "metrics", "counters"):
            doc = rec.json(q("/api/v1/chimbuko/stats/" + series, cluster=c, run=run))
            rec.get(q("/api/v1/chimbuko/stats/" + series, cluster=c, run=run, format="csv", limit=5))
            r0 = rows(doc)[:1]
            for row in r0:
                fl = {k: row[k] for k in ("app", "rank", "fid", "func", "counter") if k in row and row[k] is not None}
                for k, v in sorted(fl.items()):
                    rec.get(q("/api/v1/chimbuko/stats/" + series, cluster=c, run=run, **{k: v}))
        rec.get(q("/api/v1/chimbuko/top", cluster=c, run=run))
        rec.get(q("/api/v1/chimbuko/top", cluster=c, run=run, limit=1, format="csv"))
        for coll in ("anomalies", "normalexecs", "events"):
            doc = rec.json(q("/api/v1/chimbuko/provenance/" + coll, cluster=c, run=run))
            rec.get(q("/api/v1/chimbuko/provenance/" + coll, cluster=c, run=run, brief="true", format="csv"))
            for row in rows(doc)[:2]:
                for k in ("rank", "fid", "func", "app"):
                    if row.get(k) is not None:
                        rec.get(q("/api/v1/chimbuko/provenance/" + coll, cluster=c, run=run, **{k: row[k]}))
        follow_pages(rec, "/api/v1/chimbuko/provenance/events", cluster=c, run=run, limit=2, brief="true")
        for coll in ("metadata", "func_stats", "counter_stats"):
            rec.get(q("/api/v1/chimbuko/provenance/" + coll, cluster=c, run=run))
            rec.get(q("/api/v1/chimbuko/provenance/" + coll, cluster=c, run=run, format="csv", limit=3))
    rec.get(q("/api/v1/chimbuko/provenance/anomalies", cluster=c, step="0-100"))
    rec.get(q("/api/v1/chimbuko/provenance/anomalies", cluster=c, event="0:12:4800"))
    rec.get(q("/api/v1/chimbuko/stats/ranks", cluster=c, step="1-3"))
    rec.get(q("/api/v1/chimbuko/top", cluster=c, **{"from": 1745598463, "to": 1745598470}))
    rec.get(q("/api/v1/chimbuko/runs", cluster="no.such.cluster"))


def dataset_import(args, out, new_db):
    from harness import Fjord, SHARED, run_cli
    db = new_db("import")
    sonar = os.path.join(SHARED, "data", "sonar")
    files = []
    for sub in ("real", "sonar-0.19-output"):
        d = os.path.join(sonar, sub)
        files += [os.path.join(d, n) for n in sorted(os.listdir(d)) if n.endswith(".json")]
    run_cli("import", *files, "--create", db=db)
    f = Fjord(db=db, tmp=args.tmp)
    clusters = set()
    for p in files:
        from harness import envelope_cluster, split_envelopes
        clusters |= {envelope_cluster(e) for e in split_envelopes(open(p).read())} - {None}
    t = tokens(f, clusters)
    f.start()
    rec = Recorder(f, out, ("reader", t["reader"]))
    try:
        record_common(rec)
        for c in sorted(clusters):
            lo, hi = window_of(rec, c)
            record_sonar_cluster(rec, c, lo, hi)
    finally:
        rec.close()
        if f.stop() != 0:
            raise SystemExit("fjord (import) did not exit 0: " + open(f.log).read()[-2000:])
    return rec.count


DATASETS = (("bench", dataset_bench), ("test", dataset_test), ("import", dataset_import))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--backend", choices=("sqlite", "postgres"), required=True)
    ap.add_argument("--only", help="comma-separated datasets (default all)")
    args = ap.parse_args()
    args.build = os.path.abspath(args.build)
    os.environ["FJORD_BIN"] = os.path.join(args.build, "fjord")
    import harness  # noqa: E402 (reads FJORD_BIN at import)
    harness.FJORD = os.environ["FJORD_BIN"]
    args.tmp = tempfile.mkdtemp(prefix="fjord-compare-")
    pg = None
    try:
        if args.backend == "postgres":
            import pgserver
            pg = pgserver.PgServer().start()

            def new_db(name):
                return pg.create_db("cmp_" + name)
        else:
            def new_db(name):
                return os.path.join(args.tmp, name + ".db")
        only = set(args.only.split(",")) if args.only else None
        for name, fn in DATASETS:
            if only and name not in only:
                continue
            t0 = time.time()
            out = os.path.join(args.out, name)
            if os.path.isdir(out):
                shutil.rmtree(out)
            n = fn(args, out, new_db)
            print("%s %s: %d answers in %.1f s" % (args.backend, name, n, time.time() - t0), flush=True)
    finally:
        if pg:
            pg.stop()
        shutil.rmtree(args.tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
