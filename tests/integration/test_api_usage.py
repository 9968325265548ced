"""Usage per user, account, partition and cluster (GET /api/v1/usage) and every job's efficiency
(cpu_eff, mem_eff, gpu_eff in GET /api/v1/jobs and /api/v1/jobs/{id}; docs/storage.md "Usage and
efficiency") on a synthetic cluster whose Slurm allocations (cores, GPU cards by TRES, memory,
accounts, partitions) and use (cores, cards, resident memory per node-sample) are known, fed through
the normal HTTP ingest. The truth is computed here from the design, per job and bucket, with the
documented rules: jobs across the window's start and end, a job across a day's edge with a sample on
the edge itself, a Slurm span wider than the samples, two-node jobs, jobs without Slurm (epoch 0
without a record, and a job of another epoch), a Slurm record without TRES or memory (allocation
partly unknown), and a job outside the window. Buckets: none, day, week and month (the window is the
last Sunday of a month and the Monday after: all three cut at the same edge). Sorting, top N,
filters, CSV, errors, and the efficiency filters and sort of the job list."""
import csv
import io
import json
import math

from api_common import rfc
from harness import Fjord, check, finish

CLUSTER = "usage.test"
T0 = 1682812800  # 2023-04-30T00:00:00Z, a Sunday, the last day of April
D = 86400
H = 3600
STEP = 300
GIB = 1 << 20  # kB
FROM, TO = T0, T0 + 2 * D


class Job:
    """Sampled every STEP from `start` for `n` samples on each node: `cores` cores, `mem_kb` resident
    memory and GPU cards at `gpus` percent (one process per card) per node-sample."""

    def __init__(self, job, user, nodes, start, n, cores, mem_kb, gpus=(), slurm=None, epoch=0, cc=None):
        self.job, self.user, self.nodes, self.start, self.n = job, user, nodes, start, n
        self.cores, self.mem_kb, self.gpus, self.slurm, self.epoch = cores, mem_kb, list(gpus), slurm, epoch
        self.cc = cc  # a ClusterCockpit job (cc-backend's job API) instead of Sonar's Slurm record

    @property
    def last(self):
        return self.start + (self.n - 1) * STEP

    def samples(self):
        out = []
        for nd in self.nodes:
            for k in range(self.n):
                used = int(round(self.cores * STEP * (k + 1)))
                p = {"pid": 1000 + self.job % 1000, "ppid": 1, "cmd": "work", "resident_memory": self.mem_kb,
                     "num_threads": 63, "cpu_avg": self.cores * 100, "cpu_util": self.cores * 100, "cpu_time": used}
                procs = [p]
                for i, u in enumerate(self.gpus):
                    q = p if i == 0 else {"pid": 3000 + i, "ppid": p["pid"], "cmd": "card", "resident_memory": 0,
                                          "num_threads": 0}
                    q["gpus"] = [{"index": i, "uuid": "GPU-%s-%d" % (nd, i), "gpu_util": u, "gpu_memory": GIB}]
                    if i:
                        procs.append(q)
                out.append({"meta": {"producer": "sonar", "version": "0.19.0"},
                            "data": {"type": "sample", "attributes": {
                                "time": rfc(self.start + k * STEP), "cluster": CLUSTER, "node": nd,
                                "jobs": [{"job": self.job, "user": self.user, "epoch": self.epoch,
                                          "processes": procs}]}}})
        return out

    def slurm_record(self):
        r = {"job_id": self.job, "job_name": "j%d" % self.job, "job_state": "COMPLETED", "user_name": self.user,
             "nodes": self.nodes, "start_time": rfc(self.start), "end_time": rfc(self.last)}
        r.update(self.slurm)
        for k in ("start_time", "end_time"):
            if isinstance(r[k], int):
                r[k] = rfc(r[k])
        return r

    # --- the truth -------------------------------------------------------------------------------
    def cc_start(self):
        c = self.cc
        return {"cluster": CLUSTER, "jobId": self.job, "jobState": "running", "numAcc": c["numAcc"],
                "numHwthreads": c["numHwthreads"], "numNodes": len(self.nodes), "partition": c["partition"],
                "resources": [{"hostname": h} for h in self.nodes], "startTime": c["startTime"],
                "subCluster": "main", "submitTime": c["startTime"], "user": self.user, "project": c["project"],
                "walltime": 86400}

    def alloc_span(self):
        if self.cc is not None:
            return self.cc["startTime"], self.cc["stopTime"]
        s = self.slurm or {}
        a0 = s.get("start_time", self.start) if self.slurm is not None else self.start
        a1 = s.get("end_time", self.last) if self.slurm is not None else self.last
        return a0, max(a1, a0)

    def alloc(self):
        """(cores, cards, memory kB) allocated over all nodes; None where unknown."""
        if self.cc is not None:  # hardware threads as cores, accelerators as cards, no memory
            return self.cc["numHwthreads"], self.cc["numAcc"], None
        if self.slurm is None:
            return None, None, None
        s = self.slurm
        cores = s.get("requested_cpus")
        tres = s.get("allocated_resources", s.get("requested_resources"))
        cards = None
        if tres is not None:
            items = dict(x.split("=", 1) for x in tres.split(","))
            cards = int(items.get("gres/gpu", 0))
        nodes = s.get("requested_node_count", len(self.nodes))
        mem = s["requested_memory_per_node"] * nodes if "requested_memory_per_node" in s else None
        return cores, cards, mem

    def in_bucket(self, b0, b1):
        """The job's figures in [b0, b1), or None when it is not there."""
        a0, a1 = self.alloc_span()
        e0, e1 = min(a0, self.start), max(a1, self.last)
        times = [self.start + k * STEP for k in range(self.n) if b0 <= self.start + k * STEP < b1]
        if not (ovl(e0, e1, b0, b1) > 0 or b0 <= e0 < b1 or times):
            return None
        wall = ovl(a0, a1, b0, b1)
        t_used = ovl(self.start, self.last, b0, b1)
        nodes = len(self.nodes) if times else 0
        # every node-sample the same: the mean is the value
        cores_used = self.cores * nodes * t_used
        cards_used = sum(self.gpus) / 100 * nodes * t_used
        mem_used = self.mem_kb * nodes * t_used
        cores, cards, mem = self.alloc()
        return {"wall": wall, "slurm": self.slurm is not None or self.cc is not None,
                "core": (None if cores is None else cores * wall, cores_used),
                "gpu": (None if cards is None else cards * wall, cards_used),
                "mem": (None if mem is None else mem * wall, mem_used)}


def ovl(a0, a1, b0, b1):
    return max(0, min(a1, b1) - max(a0, b0))


SLURM_CPU = {"account": "a1", "partition": "cpu"}
JOBS = [
    # wholly in day 1: 4 of 16 cores, 2 of 8 GiB
    Job(201, "ann", ["c01"], T0 + H, 25, 4.0, 2 * GIB,
        slurm=dict(SLURM_CPU, requested_cpus=16, requested_memory_per_node=8 * GIB, requested_node_count=1,
                   allocated_resources="billing=16,cpu=16,mem=8G,node=1")),
    # across the day's edge, a sample on it: 6 of 8 cores, 2 cards at 50 % and 100 %, 10 of 32 GiB
    Job(202, "ann", ["g01"], T0 + 22 * H, 49, 6.0, 10 * GIB, gpus=(50, 100),
        slurm={"account": "a2", "partition": "gpu", "requested_cpus": 8, "requested_memory_per_node": 32 * GIB,
               "requested_node_count": 1,
               "allocated_resources": "billing=8,cpu=8,gres/gpu:a100=2,gres/gpu=2,mem=32G,node=1"}),
    # across the window's start, two nodes: 8 cores each of 32 in all, 4 GiB of 4 GiB per node
    Job(203, "bob", ["c02", "c03"], T0 - 2 * H, 37, 8.0, 4 * GIB,
        slurm=dict(SLURM_CPU, requested_cpus=32, requested_memory_per_node=4 * GIB, requested_node_count=2,
                   requested_resources="cpu=32,mem=8G,node=2")),
    # no Slurm: a job of another epoch (a node without Slurm)
    Job(204, "bob", ["c04"], T0 + 30 * H, 25, 2.0, GIB, epoch=12345),
    # Slurm's span wider than the samples: allocated from 5 h to 8 h, sampled 5.5 h to 7.5 h
    Job(205, "cy", ["c05"], T0 + 5 * H + 1800, 25, 3.0, 3 * GIB,
        slurm={"account": "a2", "partition": "cpu", "requested_cpus": 4, "requested_memory_per_node": 4 * GIB,
               "start_time": T0 + 5 * H, "end_time": T0 + 8 * H, "allocated_resources": "cpu=4,node=1"}),
    # across the window's end
    Job(206, "cy", ["c06"], T0 + 47 * H, 25, 1.0, GIB,
        slurm=dict(SLURM_CPU, requested_cpus=4, requested_memory_per_node=2 * GIB)),
    # a Slurm record without TRES nor memory: cores known, cards and memory not
    Job(207, "dan", ["c07"], T0 + 10 * H, 13, 2.0, GIB, slurm={"account": "a3", "partition": "cpu",
                                                               "requested_cpus": 2}),
    # epoch 0 without a Slurm record
    Job(208, "dan", ["c08"], T0 + 12 * H, 13, 1.5, 2 * GIB),
    # no Sonar Slurm record, a ClusterCockpit job (cc-backend's job API) whose span is wider than the samples
    Job(210, "eve", ["g02"], T0 + 14 * H, 13, 4.0, 2 * GIB, gpus=(60,),
        cc={"numHwthreads": 8, "numAcc": 1, "project": "a4", "partition": "gpu", "startTime": T0 + 14 * H - 600,
            "stopTime": T0 + 16 * H}),
    # outside the window
    Job(209, "ann", ["c09"], T0 + 50 * H, 13, 1.0, GIB, slurm=dict(SLURM_CPU, requested_cpus=1)),
]


def post(f, tok, envs):
    body = "\n".join(json.dumps(e) for e in envs)
    r = f.post("/api/v1/ingest/sonar", body, auth=(CLUSTER, tok))
    check(r.status == 200, "post: %d %s" % (r.status, r.body[:300]))


def key_of(j, by):
    s = j.slurm or {}
    if j.cc is not None:
        s = {"account": j.cc["project"], "partition": j.cc["partition"]}
    return {"user": j.user, "account": s.get("account"), "partition": s.get("partition"), "cluster": CLUSTER}[by]


def truth(by, edges, jobs=JOBS):
    """{(bucket start, group): figures} of the design."""
    out = {}
    for b0, b1 in zip(edges, edges[1:]):
        for j in jobs:
            x = j.in_bucket(b0, b1)
            if x is None:
                continue
            c = out.setdefault((b0, key_of(j, by)), {"jobs": 0, "jobs_alloc": 0, "wall": 0.0,
                                                     "core": [None, 0.0, 0.0], "gpu": [None, 0.0, 0.0],
                                                     "mem": [None, 0.0, 0.0]})
            c["jobs"] += 1
            c["jobs_alloc"] += 1 if x["slurm"] else 0
            c["wall"] += x["wall"]
            for f in ("core", "gpu", "mem"):
                alloc, used = x[f]
                c[f][1] += used
                if alloc is not None:
                    c[f][0] = (c[f][0] or 0.0) + alloc
                    c[f][2] += used
    rows = {}
    for k, c in out.items():
        r = {"jobs": c["jobs"], "jobs_alloc": c["jobs_alloc"], "wall_h": c["wall"] / H}
        for f, unit, eff in (("core", H, "cpu_eff"), ("gpu", H, "gpu_eff"), ("mem", H * GIB, "mem_eff")):
            alloc, used, used_alloc = c[f]
            name = {"core": "core_h", "gpu": "gpu_h", "mem": "mem_gib_h"}[f]
            r[name + "_alloc"] = None if alloc is None else alloc / unit
            r[name + "_used"] = used / unit
            r[eff] = None if not alloc else used_alloc / alloc
        r["energy_kwh"] = None
        rows[k] = r
    return rows


def round3(v):
    """The answer's reals: 3 decimals, halves away from zero (api/out.c)."""
    m = math.floor(abs(v) * 1000 + 0.5)
    return math.copysign(m / 1000, v)


def same(got, want):
    """got (an answer's number) is want rounded as answers round it."""
    if got is None or want is None:
        return got is None and want is None
    return abs(got - round3(want)) <= 1e-9


def compare(label, got_rows, want, bucketed):
    got = {}
    for x in got_rows:
        b = x["bucket"]
        got[(b, x["group"])] = x
    want = {((rfc(b) if bucketed else None), g): r for (b, g), r in want.items()}
    check(set(got) == set(want), "%s: rows %s, want %s" % (label, sorted(got, key=str), sorted(want, key=str)))
    for k, w in want.items():
        g = got.get(k, {})
        for name, v in w.items():
            check(same(g.get(name), v), "%s %s %s: %s, want %s" % (label, k, name, g.get(name), v))


def main():
    f = Fjord()
    tok = f.token(CLUSTER)
    reader = f.token("reader", "--read-only")
    other = f.token("other.test")
    f.start()
    try:
        series = [j.samples() for j in JOBS]
        post(f, tok, [s[k] for k in range(max(map(len, series))) for s in series if k < len(s)])
        post(f, tok, [{"meta": {"producer": "sonar", "version": "0.19.0"},
                       "data": {"type": "job", "attributes": {
                           "time": rfc(T0 + 3 * D), "cluster": CLUSTER,
                           "slurm_jobs": [j.slurm_record() for j in JOBS if j.slurm is not None]}}}])

        for j in JOBS:
            if j.cc is not None:
                r = f.post("/api/jobs/start_job/", json.dumps(j.cc_start()), auth=(CLUSTER, tok))
                check(r.status == 201, "cc start_job: %d %s" % (r.status, r.body[:200]))
                r = f.post("/api/jobs/stop_job/", json.dumps({"cluster": CLUSTER, "jobId": j.job, "jobState": "completed",
                                                             "startTime": j.cc["startTime"],
                                                             "stopTime": j.cc["stopTime"]}), auth=(CLUSTER, tok))
                check(r.status == 200, "cc stop_job: %d %s" % (r.status, r.body[:200]))

        def get(path, auth=("reader", reader), **kw):
            return f.get(path, auth=auth, **kw)

        win = "cluster=%s&from=%d&to=%d" % (CLUSTER, FROM, TO)
        day_edges = [FROM, FROM + D, TO]
        for by in ("user", "account", "partition", "cluster"):
            r = get("/api/v1/usage?%s&by=%s" % (win, by))
            check(r.status == 200, "usage by %s: %d %s" % (by, r.status, r.body[:300]))
            doc = r.json() if r.status == 200 else {}
            check(doc.get("from") == rfc(FROM) and doc.get("to") == rfc(TO), "the window answered: %s" % doc.get("to"))
            compare("by %s" % by, doc.get("usage", []), truth(by, [FROM, TO]), False)
            for bucket in ("day", "week", "month"):
                r = get("/api/v1/usage?%s&by=%s&bucket=%s" % (win, by, bucket))
                check(r.status == 200, "usage by %s per %s: %d %s" % (by, bucket, r.status, r.body[:300]))
                compare("by %s per %s" % (by, bucket), r.json().get("usage", []) if r.status == 200 else [],
                        truth(by, day_edges), True)

        # wider windows: calendar months from April 1st, ISO weeks from the Monday before (job 209 in now)
        for bucket, lo, hi, edges in (("month", T0 - 29 * D, T0 + 32 * D, [T0 - 29 * D, T0 + D, T0 + 32 * D]),
                                      ("week", T0 - 6 * D, T0 + 8 * D, [T0 - 6 * D, T0 + D, T0 + 8 * D])):
            r = get("/api/v1/usage?cluster=%s&from=%d&to=%d&by=account&bucket=%s" % (CLUSTER, lo, hi, bucket))
            check(r.status == 200, "per %s: %d %s" % (bucket, r.status, r.body[:200]))
            compare("by account per %s, wider" % bucket, r.json().get("usage", []) if r.status == 200 else [],
                    truth("account", edges), True)

        # spot checks of the design, against figures written out by hand
        rows = {x["group"]: x for x in get("/api/v1/usage?%s&by=user" % win).json().get("usage", [])}
        bob = rows.get("bob", {})
        # 203 in the window: 1 h of its 3, 2 nodes x 8 cores used of 32; 204: 2 h x 2 cores, no allocation
        check(same(bob.get("core_h_alloc"), 32.0) and same(bob.get("core_h_used"), 16.0 + 4.0)
              and same(bob.get("cpu_eff"), 0.5) and bob.get("jobs") == 2 and bob.get("jobs_alloc") == 1,
              "bob: 203 cut by the window's start, 204 without Slurm: %s" % bob)
        check(bob.get("gpu_h_alloc") == 0 and bob.get("gpu_eff") is None, "bob: no cards allocated: %s" % bob)
        dan = rows.get("dan", {})
        check(dan.get("mem_gib_h_alloc") is None and dan.get("mem_eff") is None and dan.get("gpu_h_alloc") is None
              and same(dan.get("core_h_alloc"), 2.0) and same(dan.get("cpu_eff"), 1.0),
              "dan: 207's memory and cards unknown, 208 without Slurm: %s" % dan)
        check(all(x.get("energy_kwh") is None for x in rows.values()), "energy_kwh: null")
        check("ann" in rows and rows["ann"].get("jobs") == 2, "209, outside the window, is not counted: %s"
              % rows.get("ann"))

        # filters
        r = get("/api/v1/usage?%s&by=account&user=ann,cy" % win)
        compare("by account of ann and cy", r.json().get("usage", []) if r.status == 200 else [],
                truth("account", [FROM, TO], [j for j in JOBS if j.user in ("ann", "cy")]), False)
        r = get("/api/v1/usage?%s&by=user&account=a1&partition=cpu" % win)
        compare("by user in a1, cpu", r.json().get("usage", []) if r.status == 200 else [],
                truth("user", [FROM, TO], [j for j in JOBS if key_of(j, "account") == "a1"
                                           and key_of(j, "partition") == "cpu"]), False)

        # sort and top N: by core-hours used, most first; the order by name; limit
        all_users = truth("user", [FROM, TO])
        by_used = sorted(all_users, key=lambda k: (-all_users[k]["core_h_used"], k[1]))
        r = get("/api/v1/usage?%s&by=user&sort=core_h_used&limit=2" % win)
        xs = r.json().get("usage", []) if r.status == 200 else []
        check([x["group"] for x in xs] == [k[1] for k in by_used[:2]], "top 2 by core_h_used: %s, want %s"
              % ([x["group"] for x in xs], by_used[:2]))
        r = get("/api/v1/usage?%s&by=user&sort=core_h_used&order=asc" % win)
        xs = r.json().get("usage", []) if r.status == 200 else []
        check([x["group"] for x in xs] == [k[1] for k in reversed(by_used)], "ascending: %s" % [x["group"] for x in xs])
        r = get("/api/v1/usage?%s&by=account" % win)
        xs = [x["group"] for x in r.json().get("usage", [])] if r.status == 200 else []
        check(xs == ["a1", "a2", "a3", "a4", None], "by name, no account last: %s" % xs)
        r = get("/api/v1/usage?%s&by=account&sort=mem_eff" % win)
        xs = [x["group"] for x in r.json().get("usage", [])] if r.status == 200 else []
        check(xs[-3:] == ["a3", "a4", None], "null figures sort last, by name: %s" % xs)
        r = get("/api/v1/usage?%s&by=user&bucket=day&sort=gpu_h_used&limit=1" % win)
        xs = r.json().get("usage", []) if r.status == 200 else []
        check({x["group"] for x in xs} == {"ann"} and len(xs) == 2, "top 1 by GPU in each day: %s" % xs)

        # CSV
        r = get("/api/v1/usage?%s&by=account&bucket=day&format=csv" % win)
        check(r.status == 200 and r.headers.get("Content-Type", "").startswith("text/csv"), "CSV answered")
        rows_csv = list(csv.DictReader(io.StringIO(r.body))) if r.status == 200 else []
        check(rows_csv and list(rows_csv[0].keys())[:6] == ["bucket", "group", "jobs", "jobs_alloc", "wall_h",
                                                            "core_h_alloc"], "CSV header")
        want = truth("account", day_edges)
        check(len(rows_csv) == len(want), "CSV rows: %d, want %d" % (len(rows_csv), len(want)))

        # errors
        for q, param in (("by=node", "by"), ("bucket=hour", "bucket"), ("sort=nope", "sort"), ("limit=0", "limit"),
                         ("from=%d&to=%d" % (TO, FROM), "from")):
            r = get("/api/v1/usage?cluster=%s&%s" % (CLUSTER, q))
            e = r.json().get("error", {}) if r.status == 400 else {}
            check(r.status == 400 and e.get("path") == param, "%s: 400 naming %s, got %d %s"
                  % (q, param, r.status, r.body[:200]))
        r = get("/api/v1/usage?cluster=%s&from=%d&to=%d&bucket=day" % (CLUSTER, T0 - 2000 * D, T0))
        check(r.status == 400, "more than 1000 buckets: %d %s" % (r.status, r.body[:200]))
        check(get("/api/v1/usage?cluster=no.such").status == 404, "unknown cluster: 404")
        check(f.get("/api/v1/usage?" + win).status == 401, "no credential: 401")
        check(get("/api/v1/usage?" + win, auth=("other.test", other)).status == 403, "another cluster's: 403")
        doc = get("/api/v1/openapi.json").json()
        check("/api/v1/usage" in doc.get("paths", {}), "in the OpenAPI document")

        check_job_efficiency(get, win)
    finally:
        check(f.stop() == 0, "SIGTERM exits 0")
        f.cleanup()
    finish()


def job_eff(j):
    """(cpu_eff, mem_eff, gpu_eff) of the design: mean use over the allocation, memory's peak. The job
    list reads Sonar's Slurm record only (a ClusterCockpit job's allocation counts in usage)."""
    if j.cc is not None:
        return None, None, None
    cores, cards, mem = j.alloc()
    nodes = len(j.nodes)
    cpu = None if not cores else j.cores * nodes / cores
    per_node = None
    if j.slurm is not None and "requested_memory_per_node" in j.slurm:
        per_node = j.slurm["requested_memory_per_node"]
    m = None if not per_node else j.mem_kb / per_node
    g = None if not cards else sum(j.gpus) / 100 * nodes / cards
    return cpu, m, g


def check_job_efficiency(get, win):
    wide = "cluster=%s&from=%d&to=%d" % (CLUSTER, T0 - D, T0 + 4 * D)
    r = get("/api/v1/jobs?%s&limit=100" % wide)
    check(r.status == 200, "jobs: %d %s" % (r.status, r.body[:200]))
    jobs = {x["job"]: x for x in r.json().get("jobs", [])} if r.status == 200 else {}
    for j in JOBS:
        x = jobs.get(j.job, {})
        for name, v in zip(("cpu_eff", "mem_eff", "gpu_eff"), job_eff(j)):
            check(same(x.get(name), v), "job %d %s: %s, want %s" % (j.job, name, x.get(name), v))
    # the job page too
    x = jobs.get(202, {})
    r = get("/api/v1/jobs/%s?cluster=%s" % (x.get("id"), CLUSTER))
    one = r.json().get("job", {}) if r.status == 200 else {}
    check(same(one.get("gpu_eff"), 0.75) and same(one.get("cpu_eff"), 0.75) and same(one.get("mem_eff"), 10 / 32),
          "job 202's page: %s" % {k: one.get(k) for k in ("cpu_eff", "mem_eff", "gpu_eff")})
    effs = {j.job: job_eff(j) for j in JOBS}
    for q, pick in (("cpu_eff_max=0.25", lambda e: e[0] is not None and e[0] <= 0.25),
                    ("cpu_eff_min=0.5", lambda e: e[0] is not None and e[0] >= 0.5),
                    ("max_cpu_eff=0.25", lambda e: e[0] is not None and e[0] <= 0.25),
                    ("mem_eff_max=0.5", lambda e: e[1] is not None and e[1] <= 0.5),
                    ("gpu_eff_min=0.5", lambda e: e[2] is not None and e[2] >= 0.5)):
        r = get("/api/v1/jobs?%s&%s" % (wide, q))
        check(r.status == 200, "%s: %d %s" % (q, r.status, r.body[:200]))
        got = {x["job"] for x in r.json().get("jobs", [])} if r.status == 200 else set()
        want = {k for k, e in effs.items() if pick(e)}
        check(got == want, "%s: %s, want %s" % (q, sorted(got), sorted(want)))
    # sorted by cpu_eff, most first, paged by cursor: jobs without an allocation last
    seen, cursor = [], None
    for _ in range(20):
        r = get("/api/v1/jobs?%s&sort=cpu_eff&order=desc&limit=3%s" % (wide, "&cursor=" + cursor if cursor else ""))
        doc = r.json() if r.status == 200 else {}
        seen += [x["job"] for x in doc.get("jobs", [])]
        cursor = doc.get("next")
        if not cursor:
            break
    known = [k for k, e in effs.items() if e[0] is not None]
    order = [effs[k][0] for k in seen[:len(known)]]
    check(sorted(seen) == sorted(effs) and set(seen[:len(known)]) == set(known)
          and order == sorted(order, reverse=True), "sort=cpu_eff desc, paged: %s, jobs without one last" % seen)


if __name__ == "__main__":
    main()
