"""The problem-jobs report (GET /api/v1/problems, /api/v1/problems/users; docs/problems.md) on a
synthetic cluster whose problem jobs are known: for every rule, jobs just over its threshold (a
problem) and jobs just under (fine), in figures and in durations; per node for the per-node rules
(a Slurm job on two GPU nodes, idle on one); per card for gpu_idle (a job keeping one of four
cards busy, three idle; cards just over and under the threshold; a node on which the job touched
no card); Slurm allocations and, without a Slurm record, the
node's cores; thresholds as parameters; the user and rule filters; the per-user summary; JSON and
CSV; a late sample that arrives out of order; 400 naming a bad threshold, 401 without and 403
with a wrong credential, 404 for an unknown cluster. Sampling every 5 minutes, as Sonar does."""
import json

from api_common import rfc
from harness import Fjord, check, finish

CLUSTER = "prob.test"
T0 = 1_700_000_400 - 1_700_000_400 % 3600  # on the hour
STEP = 300
H = 3600
GIB = 1 << 20  # kB

CORES = 16  # 2 sockets x 8 cores x 1 thread
CARDS = 4


def sysinfo(node, gpus):
    a = {"time": rfc(T0 - 600), "cluster": CLUSTER, "node": node, "os_name": "Linux", "os_release": "6.1",
         "sockets": 2, "cores_per_socket": 8, "threads_per_core": 1, "cpu_model": "test", "architecture": "x86_64",
         "memory": 64 * GIB}
    if gpus:
        a["cards"] = [{"index": i, "uuid": "GPU-%s-%d" % (node, i), "manufacturer": "NVIDIA", "model": "T",
                       "memory": 16 * GIB} for i in range(gpus)]
    return {"meta": {"producer": "sonar", "version": "0.19.0"}, "data": {"type": "sysinfo", "attributes": a}}


class Job:
    """A job sampled every STEP on its nodes from `start` for `n` samples (duration (n-1) x STEP).
    cores(k, node): cores used over the interval ending at sample k; gpu(k, node): GPU % on card 0,
    or a list of GPU % per card 0.. (one process on each), or None (no GPU record); mem_kb: resident
    memory per node."""

    def __init__(self, job, user, nodes, n, cores=lambda k, nd: 8.0, gpu=lambda k, nd: None, mem_kb=4 * GIB,
                 slurm=None, start=T0, epoch=0):
        self.job, self.user, self.nodes, self.n, self.cores, self.gpu = job, user, nodes, n, cores, gpu
        self.mem_kb, self.slurm, self.start, self.epoch = mem_kb, slurm, start, epoch

    def samples(self):
        out = []
        for nd in self.nodes:
            used = 0
            for k in range(self.n):
                c = self.cores(k, nd)
                used += int(round(c * STEP))
                p = {"pid": 1000 + self.job % 1000, "ppid": 1, "cmd": "work", "resident_memory": self.mem_kb,
                     "num_threads": CORES - 1, "cpu_avg": round(c * 100, 2), "cpu_util": round(c * 100, 2)}
                if used:
                    p["cpu_time"] = used
                g = self.gpu(k, nd)
                procs = [p]
                if isinstance(g, list):  # one process per card, the first also doing the CPU work
                    procs = [p] + [{"pid": 2000 + i, "ppid": p["pid"], "cmd": "worker", "resident_memory": 1024,
                                    "num_threads": 0} for i in range(1, len(g))]
                    for i, u in enumerate(g):
                        procs[i]["gpus"] = [{"index": i, "uuid": "GPU-%s-%d" % (nd, i), "gpu_util": u,
                                             "gpu_memory": 2 * GIB}]
                elif g is not None:
                    p["gpus"] = [{"index": 0, "uuid": "GPU-%s-0" % nd, "gpu_util": g, "gpu_memory": 2 * GIB}]
                out.append({"meta": {"producer": "sonar", "version": "0.19.0"},
                            "data": {"type": "sample", "attributes": {
                                "time": rfc(self.start + k * STEP), "cluster": CLUSTER, "node": nd,
                                "jobs": [{"job": self.job, "user": self.user, "epoch": self.epoch,
                                          "processes": procs}]}}})
        return out

    def slurm_record(self):
        r = {"job_id": self.job, "job_name": "j%d" % self.job, "job_state": "COMPLETED", "user_name": self.user,
             "partition": "p", "nodes": self.nodes, "start_time": rfc(self.start),
             "end_time": rfc(self.start + (self.n - 1) * STEP), "requested_node_count": len(self.nodes)}
        r.update(self.slurm)
        return r


def busy_until(t_last, level=8.0):
    """Cores: `level` up to sample t_last (index), then nothing."""
    return lambda k, nd: level if k <= t_last else 0.0


def gpu_until(t_last):
    return lambda k, nd: 50.0 if k <= t_last else 0.0


S16 = {"requested_cpus": 16, "requested_memory_per_node": 8 * GIB}
N2H = 2 * H // STEP + 1  # samples of a 2-hour job

JOBS = [
    # cpu_low: 16 cores held (Slurm), 25 % is 4 cores; over 2 h or more
    Job(101, "ann", ["c01"], N2H, cores=lambda k, nd: 3.99, slurm=S16),          # under: problem
    Job(102, "ann", ["c02"], N2H, cores=lambda k, nd: 4.01, slurm=S16),          # over: fine
    Job(103, "bob", ["c03"], N2H, cores=lambda k, nd: 1.0, slurm=S16),           # 2 h exactly: problem
    Job(104, "bob", ["c04"], N2H - 1, cores=lambda k, nd: 1.0, slurm=S16),       # 5 min short: fine
    Job(105, "bob", ["c05", "c06"], N2H, cores=lambda k, nd: 2.0,                # 32 over 2 nodes, 2 used
        slurm={"requested_cpus": 32, "requested_memory_per_node": 8 * GIB}),
    Job(106, "cy", ["c07"], N2H, cores=lambda k, nd: 3.9, slurm=None),           # no Slurm: node's 16 cores
    Job(107, "cy", ["c08"], N2H, cores=lambda k, nd: 4.2, slurm=None),           # fine
    # mem_low: 8 GiB requested, 25 % is 2 GiB; 1 GiB requested at least
    Job(111, "ann", ["c11"], N2H, mem_kb=2 * GIB - 1, slurm=S16),                # just under: problem
    Job(112, "ann", ["c12"], N2H, mem_kb=2 * GIB, slurm=S16),                    # at 25 %: fine
    Job(113, "ann", ["c13"], N2H, mem_kb=1, slurm={"requested_cpus": 16, "requested_memory_per_node": GIB - 1}),
    Job(114, "ann", ["c14"], H // STEP, mem_kb=1, slurm=S16),                    # 55 min: fine
    # gpu_idle: GPU used, then none over the job's last 2 h on a node
    Job(121, "dee", ["g01"], 37, gpu=gpu_until(12)),                            # idle 24 x 5 min = 2 h
    Job(122, "dee", ["g02"], 37, gpu=gpu_until(13)),                            # idle 1 h 55: fine
    Job(123, "dee", ["g03", "g04"], 37,                                          # idle on g04 only
        gpu=lambda k, nd: 50.0 if nd == "g03" or k <= 6 else 0.0, slurm={"requested_cpus": 32}),
    Job(124, "dee", ["g05"], 37, gpu=lambda k, nd: 0.0),                         # memory on the card, no use: 3 h
    # ... per card: card 0 kept busy, cards 1-3 held (memory) and never used: 3 rows of 3 h
    Job(125, "dee", ["g09"], 37, gpu=lambda k, nd: [80.0, 0.0, 0.0, 0.0]),
    # card 1 idle 2 h exactly (a row), card 2 idle 1 h 55 (fine), cards 0 and 3 busy to the end
    Job(126, "dee", ["g10"], 37, gpu=lambda k, nd: [60.0, 50.0 if k <= 12 else 0.0, 50.0 if k <= 13 else 0.0, 5.0]),
    # two nodes: cards busy on g11, no process on any card of g12: g12 judged as a node (card null)
    Job(127, "dee", ["g11", "g12"], 37, gpu=lambda k, nd: [70.0, 70.0] if nd == "g11" else None),
    # gpu_unused: a GPU node, no GPU at all, 1 h or more
    Job(131, "eve", ["g06"], H // STEP + 1),                                     # 1 h: problem
    Job(132, "eve", ["g07"], H // STEP),                                         # 55 min: fine
    Job(133, "eve", ["c15"], 3 * H // STEP + 1),                                 # no GPUs on the node: fine
    # deadweight: no CPU or GPU over the job's last 4 h on a node
    Job(141, "fay", ["c21"], 61, cores=busy_until(12)),                          # idle 48 x 5 min = 4 h
    Job(142, "fay", ["c22"], 61, cores=busy_until(13)),                          # 3 h 55: fine
    Job(143, "fay", ["g08"], 61, cores=busy_until(0), gpu=gpu_until(13)),        # the GPU kept it busy: fine
    Job(144, "fay", ["c23"], 61, cores=busy_until(12)),                          # as 141, its last busy sample late
]
DESIGNED = {
    "cpu_low": ({101, 103, 105, 106}, {102, 104, 107}),
    "mem_low": ({111}, {112, 113, 114}),
    "gpu_idle": ({121, 123, 124, 125, 126, 127}, {122}),
    "gpu_unused": ({131}, {132, 133}),
    "deadweight": ({141, 144}, {142, 143}),
}


def post(f, tok, envs):
    body = "\n".join(json.dumps(e) for e in envs)
    r = f.post("/api/v1/ingest/sonar", body, auth=(CLUSTER, tok))
    check(r.status == 200, "post: %d %s" % (r.status, r.body[:300]))


def main():
    f = Fjord()
    tok = f.token(CLUSTER)
    reader = f.token("reader", "--read-only")
    other = f.token("other.test")
    f.start()
    try:
        nodes = sorted({nd for j in JOBS for nd in j.nodes})
        post(f, tok, [sysinfo(nd, CARDS if nd.startswith("g") else 0) for nd in nodes])
        late, series = [], []
        for j in JOBS:
            s = j.samples()
            if j.job == 141:  # one sample of the busy stretch arrives last: the same figures
                late.append(s.pop(5))
            if j.job == 144:  # its last busy sample arrives last: the next one, busy until then, is not
                late.append(s.pop(12))
            series.append(s)
        # the nodes report side by side: one body takes the jobs' samples in turn, GPU jobs among the
        # others, so that a job's node-samples and their per-card process rows are written in
        # different groups (the per-card roll-up must see each node-sample's cards all the same)
        post(f, tok, [s[k] for k in range(max(map(len, series))) for s in series if k < len(s)])
        post(f, tok, late)
        slurm = [j.slurm_record() for j in JOBS if j.slurm is not None]
        post(f, tok, [{"meta": {"producer": "sonar", "version": "0.19.0"},
                       "data": {"type": "job", "attributes": {"time": rfc(T0 + 6 * H), "cluster": CLUSTER,
                                                               "slurm_jobs": slurm}}}])

        def get(path, auth=("reader", reader)):
            return f.get(path, auth=auth)

        win = "cluster=%s&from=%d&to=%d" % (CLUSTER, T0 - H, T0 + 8 * H)
        r = get("/api/v1/problems?" + win)
        check(r.status == 200, "problems: %d %s" % (r.status, r.body[:300]))
        doc = r.json() if r.status == 200 else {}
        rows = doc.get("problems", [])
        check(doc.get("from") == rfc(T0 - H) and doc.get("to") == rfc(T0 + 8 * H), "the window answered")
        got = {}
        for x in rows:
            got.setdefault(x["rule"], {}).setdefault(x["job"], []).append(x)
        for rule, (bad, fine) in DESIGNED.items():
            flagged = set(got.get(rule, {}))
            check(bad <= flagged, "%s flags %s: got %s" % (rule, sorted(bad), sorted(flagged)))
            check(not (fine & flagged), "%s leaves %s alone: got %s" % (rule, sorted(fine), sorted(fine & flagged)))

        def one(rule, job):
            xs = got.get(rule, {}).get(job, [])
            check(len(xs) == 1, "%s job %d: one row, got %s" % (rule, job, xs))
            return xs[0] if xs else {}

        x = one("cpu_low", 101)
        check(abs(x.get("used", 0) - 3.99) < 1e-6 and x.get("held") == 16 and x.get("for_s") == 2 * H,
              "cpu_low 101: used 3.99 of 16 over 2 h: %s" % x)
        check(abs(x.get("ratio", 0) - 3.99 / 16) < 1e-3 and x.get("node") is None and x.get("nodes") == 1,
              "cpu_low 101: ratio, job-wide: %s" % x)
        check(x.get("api") == "/api/v1/jobs/%d?cluster=%s" % (x.get("id"), CLUSTER)
              and x.get("url") == "/ui/job/%d?cluster=%s" % (x.get("id"), CLUSTER), "links: %s" % x)
        check(x.get("user") == "ann" and x.get("start") == rfc(T0) and x.get("end") == rfc(T0 + 2 * H),
              "user and times: %s" % x)
        x = one("cpu_low", 105)
        check(x.get("held") == 16 and x.get("nodes") == 2 and abs(x.get("used", 0) - 2.0) < 1e-6,
              "cpu_low 105: 32 cores over 2 nodes, 16 each: %s" % x)
        x = one("cpu_low", 106)
        check(x.get("held") == CORES, "cpu_low 106 without Slurm: the node's cores: %s" % x)
        x = one("mem_low", 111)
        check(x.get("used") == 2 * GIB - 1 and x.get("held") == 8 * GIB and x.get("for_s") == 2 * H,
              "mem_low 111: %s" % x)
        x = one("gpu_idle", 121)
        check(x.get("node") == "g01" and x.get("for_s") == 2 * H and x.get("card") == 0 and x.get("held") == 1,
              "gpu_idle 121, its card 0: %s" % x)
        check("GPU card 0" in x.get("detail", ""), "gpu_idle detail names the card: %s" % x.get("detail"))
        xs = got.get("gpu_idle", {}).get(125, [])
        check(sorted((x.get("node"), x.get("card"), x.get("for_s"), x.get("held")) for x in xs)
              == [("g09", c, 3 * H, 1) for c in (1, 2, 3)], "gpu_idle 125: cards 1, 2, 3 idle 3 h, not 0: %s" % xs)
        x = one("gpu_idle", 126)
        check(x.get("card") == 1 and x.get("for_s") == 2 * H, "gpu_idle 126: card 1 only (2 h; card 2 1 h 55): %s" % x)
        x = one("gpu_idle", 127)
        check(x.get("node") == "g12" and x.get("card") is None and x.get("held") == CARDS and x.get("for_s") == 3 * H,
              "gpu_idle 127: g12 as a node, no card touched there: %s" % x)
        check(all(x.get("card") is None for x in rows if x["rule"] != "gpu_idle"), "card: null for other rules")
        x = one("gpu_idle", 123)
        check(x.get("node") == "g04" and x.get("card") == 0 and x.get("for_s") == 3 * H - 6 * STEP and x.get("nodes") == 2,
              "gpu_idle 123 on g04 only: %s" % x)
        x = one("gpu_idle", 124)
        check(x.get("for_s") == 3 * H, "gpu_idle 124: never used, all of its 3 h: %s" % x)
        x = one("gpu_unused", 131)
        check(x.get("node") == "g06" and x.get("for_s") == H and x.get("held") == CARDS, "gpu_unused 131: %s" % x)
        x = one("deadweight", 141)
        check(x.get("node") == "c21" and x.get("for_s") == 4 * H and x.get("used") is None, "deadweight 141: %s" % x)
        check("4.0 h" in x.get("detail", ""), "deadweight detail: %s" % x.get("detail"))
        x = one("deadweight", 144)
        check(x.get("for_s") == 4 * H, "deadweight 144, its last busy sample late: idle 4 h: %s" % x)

        # Thresholds as parameters move the edges.
        def jobs_of(q, rule):
            r = get("/api/v1/problems?%s&rule=%s&%s" % (win, rule, q))
            check(r.status == 200, "%s: %d %s" % (q, r.status, r.body[:200]))
            return {x["job"] for x in r.json().get("problems", [])} if r.status == 200 else set()

        check(102 in jobs_of("cpu_ratio=0.26", "cpu_low") and 104 in jobs_of("cpu_min=115m", "cpu_low"),
              "cpu_ratio and cpu_min move cpu_low's edges")
        check(112 in jobs_of("mem_ratio=0.26", "mem_low") and 113 in jobs_of("mem_min_request=1000M", "mem_low"),
              "mem_ratio and mem_min_request move mem_low's edges")
        check(114 in jobs_of("mem_min=55m", "mem_low"), "mem_min moves mem_low's edge")
        check(122 in jobs_of("gpu_idle=115m", "gpu_idle") and 121 not in jobs_of("gpu_idle=125m", "gpu_idle"),
              "gpu_idle moves its edge")
        r = get("/api/v1/problems?%s&rule=gpu_idle&gpu_idle=115m&user=dee" % win)
        xs = r.json().get("problems", []) if r.status == 200 else []
        check(sorted(x["card"] for x in xs if x["job"] == 126) == [1, 2], "gpu_idle=115m: card 2 of 126 too: %s" % xs)
        check(132 in jobs_of("gpu_unused=55m", "gpu_unused"), "gpu_unused moves its edge")
        check(142 in jobs_of("deadweight=235m", "deadweight") and 141 not in jobs_of("deadweight=245m", "deadweight"),
              "deadweight moves its edge")

        # Filters: rules and users.
        r = get("/api/v1/problems?%s&rule=mem_low,gpu_unused&user=ann" % win)
        xs = r.json().get("problems", []) if r.status == 200 else []
        check(xs and {(x["rule"], x["user"]) for x in xs} == {("mem_low", "ann")}, "rule and user filters: %s" % xs)
        # One user (selected in SQL), two users (skipped as read) and an unknown one: the full
        # answer's rows of those users, in its order
        names = sorted({x["user"] for x in rows})
        check(len(names) >= 2, "several users have problems: %s" % names)
        for us in [[n] for n in names] + [names[:2], ["nobody"]]:
            r = get("/api/v1/problems?%s&user=%s" % (win, ",".join(us)))
            got = r.json().get("problems") if r.status == 200 else None
            check(got == [x for x in rows if x["user"] in us], "user=%s: %s" % (",".join(us), got))
        # The window: jobs last seen before from are out.
        r = get("/api/v1/problems?cluster=%s&from=%d&to=%d" % (CLUSTER, T0 + 3 * H + 60, T0 + 8 * H))
        xs = {x["job"] for x in r.json().get("problems", [])} if r.status == 200 else {0}
        check(141 in xs and xs <= {141, 142, 143, 144}, "the window keeps the jobs seen after from: %s" % xs)

        # Per user: the same problems summed.
        r = get("/api/v1/problems/users?" + win)
        users = {u["user"]: u for u in r.json().get("users", [])} if r.status == 200 else {}
        for name in {x["user"] for x in rows}:
            mine = [x for x in rows if x["user"] == name]
            u = users.get(name, {})
            check(u.get("problems") == len(mine) and u.get("jobs") == len({x["job"] for x in mine}),
                  "user %s: %s vs %d rows" % (name, u, len(mine)))
            for rule in DESIGNED:
                check(u.get(rule) == sum(1 for x in mine if x["rule"] == rule), "user %s %s count" % (name, rule))
        core_h = sum((x["held"] - x["used"]) * x["nodes"] * x["for_s"] / 3600 for x in rows
                     if x["user"] == "bob" and x["rule"] == "cpu_low")
        check(abs(users.get("bob", {}).get("idle_core_hours", -1) - core_h) < 1e-6, "bob's idle core-hours")
        # per idle card: 121 2 h, 123 2.5 h, 124 3 h, 125 three cards x 3 h, 126 2 h; 127's g12 as a node: 4 x 3 h
        check(abs(users.get("dee", {}).get("idle_gpu_hours", -1) - (2 + 2.5 + 3 + 3 * 3 + 2 + CARDS * 3)) < 1e-6,
              "dee's idle GPU-hours: %s" % users.get("dee"))

        # CSV: the same rows.
        r = get("/api/v1/problems?%s&format=csv" % win)
        check(r.status == 200 and r.headers.get("Content-Type", "").startswith("text/csv"), "CSV answered")
        lines = r.body.strip().split("\n") if r.status == 200 else []
        check(lines and lines[0].startswith("rule,id,job,user,node,card,nodes,start,end,for_s,used,held,ratio,detail"),
              "CSV header: %s" % (lines[:1],))
        check(len(lines) == len(rows) + 1, "CSV rows: %d vs %d" % (len(lines) - 1, len(rows)))
        r = f.get("/api/v1/problems/users?" + win, headers={"Accept": "text/csv"}, auth=("reader", reader))
        lines = r.body.strip().splitlines() if r.status == 200 else []
        check(r.headers.get("Content-Type", "").startswith("text/csv") and lines
              and lines[0] == "user,jobs,problems,gpu_idle,gpu_unused,cpu_low,mem_low,deadweight,idle_core_hours,"
              "idle_gpu_hours" and len(lines) == len(users) + 1, "per-user CSV (Accept: text/csv): %s" % lines[:2])

        # Errors.
        for q, param in (("cpu_ratio=0", "cpu_ratio"), ("cpu_ratio=1.5", "cpu_ratio"), ("rule=nope", "rule"),
                         ("deadweight=-1h", "deadweight"), ("gpu_idle=x", "gpu_idle"), ("bogus=1", "bogus")):
            r = get("/api/v1/problems?%s&%s" % (win, q))
            e = r.json().get("error", {}) if r.status == 400 else {}
            check(r.status == 400 and e.get("path") == param, "%s: 400 naming %s, got %d %s" % (q, param, r.status,
                                                                                              r.body[:200]))
        r = get("/api/v1/problems?cluster=no.such")
        check(r.status == 404, "unknown cluster: %d %s" % (r.status, r.body[:200]))
        r = get("/api/v1/problems?from=now-1d")
        check(r.status == 400, "no cluster: %d" % r.status)
        r = f.get("/api/v1/problems?" + win)
        check(r.status == 401, "no credential: %d" % r.status)
        r = get("/api/v1/problems?" + win, auth=("reader", "wrong"))
        check(r.status == 401, "wrong secret: %d" % r.status)
        r = get("/api/v1/problems/users?" + win, auth=("other.test", other))
        check(r.status == 403, "another cluster's credential: %d" % r.status)
        doc = get("/api/v1/openapi.json").json()
        check("/api/v1/problems" in doc.get("paths", {}) and "/api/v1/problems/users" in doc.get("paths", {}),
              "in the OpenAPI document")
    finally:
        check(f.stop() == 0, "SIGTERM exits 0")
        f.cleanup()
    finish()


if __name__ == "__main__":
    main()
