"""gpu_idle_kwh on the problem-jobs report's GPU rows (GET /api/v1/problems; docs/problems.md,
docs/energy.md): the energy the cards a job held by its Slurm allocation drew while it left them
idle, against truth computed here from the synthetic card power (the trapezoid rule between a
node's readings, every interval that ends at a sample of the job). Cases: a job holding two cards
(gres/gpu=2) that uses card 0 for its first 20 minutes and never touches card 1 (a gpu_idle row:
card 1's draw); a job holding one card of a two-card node and using none (a gpu_unused row: the
mean of the two idle cards' draw); a job on a GPU node without a Slurm record (a gpu_unused row,
no allocation: null), which also breaks cpu_low (that row: null). Run on SQLite, and on PostgreSQL with
FJ_TEST_DB=postgres (CTest registers both)."""
import json

from api_common import rfc
from harness import Fjord, check, finish

CLUSTER = "problems-energy.test"
T0 = 1_700_000_000 - 1_700_000_000 % 3600
STEP = 300
GIB = 1 << 20
N = 37  # samples 0..36: 3 h
META = {"producer": "sonar", "version": "0.19.0"}


def power(node, card, k):
    """Watts of card at reading k (k from -1: a reading before each job's first sample)."""
    base = {"g1": 300, "g2": 250, "g3": 200}[node]
    return base + 40 * card + 15 * ((5 * k + card) % 4)


# job: (user, node, cards' use per sample {card: util(k)}, Slurm allocated_resources or None)
JOBS = {
    701: ("ann", "g1", {0: lambda k: 60.0 if k <= 4 else 0.0}, "cpu=4,gres/gpu=2,node=1"),
    702: ("bob", "g2", {}, "cpu=4,gres/gpu=1,node=1"),
    703: ("cy", "g3", {}, None),
}
CORES = {701: 8, 702: 8, 703: 1}  # 703 also breaks cpu_low (1 of the node's 8 cores): a row of another rule


def sysinfo(node):
    a = {"time": rfc(T0 - 3600), "cluster": CLUSTER, "node": node, "os_name": "Linux", "os_release": "6.1",
         "sockets": 1, "cores_per_socket": 8, "threads_per_core": 1, "cpu_model": "test", "architecture": "x86_64",
         "memory": 64 * GIB,
         "cards": [{"index": i, "uuid": "GPU-%s-%d" % (node, i), "manufacturer": "NVIDIA", "model": "T",
                    "memory": 16 * GIB} for i in range(2)]}
    return {"meta": META, "data": {"type": "sysinfo", "attributes": a}}


def samples(job):
    user, node, cards, _ = JOBS[job]
    out = []
    for k in range(-1, N):
        attrs = {"time": rfc(T0 + k * STEP), "cluster": CLUSTER, "node": node, "jobs": [],
                 "system": {"gpus": [{"index": c, "uuid": "GPU-%s-%d" % (node, c), "power": power(node, c, k)}
                                     for c in range(2)]}}
        if k >= 0:  # the reading at k = -1 only opens the job's first interval
            c = CORES[job]
            p = {"pid": 100, "ppid": 1, "cmd": "main", "resident_memory": 1024, "cpu_util": 100.0 * c,
                 "cpu_avg": 100.0 * c, "cpu_time": c * STEP * (k + 1)}
            procs = [p]
            for i, (c, util) in enumerate(sorted(cards.items())):
                procs.append({"pid": 200 + i, "ppid": 100, "cmd": "gpu", "resident_memory": 1024,
                              "gpus": [{"index": c, "uuid": "GPU-%s-%d" % (node, c), "gpu_util": util(k),
                                        "gpu_memory": GIB}]})
            attrs["jobs"] = [{"job": job, "user": user, "epoch": 0, "processes": procs}]
        out.append({"meta": META, "data": {"type": "sample", "attributes": attrs}})
    return out


def card_j(node, card):
    """Joules of card over the intervals ending at the job's samples (k = 0..N-1): the trapezoids."""
    return sum((power(node, card, k - 1) + power(node, card, k)) / 2 * STEP for k in range(N))


def want_idle_kwh(job):
    user, node, cards, tres = JOBS[job]
    if tres is None:
        return None
    held = int(dict(x.split("=", 1) for x in tres.split(","))["gres/gpu"])
    free = [c for c in range(2) if c not in cards]
    need = min(held - len(cards), len(free))
    return need * sum(card_j(node, c) for c in free) / len(free) / 3.6e6


def near(got, want):
    if got is None or want is None:
        return got is None and want is None
    return abs(got - want) <= max(0.001 * abs(want), 0.0005) + 1e-9


def main():
    f = Fjord()
    tok = f.token(CLUSTER)
    reader = f.token("reader", "--read-only")
    f.start()
    try:
        envs = [sysinfo(n) for n in sorted({j[1] for j in JOBS.values()})]
        envs += sorted((e for job in JOBS for e in samples(job)), key=lambda e: e["data"]["attributes"]["time"])
        r = f.post("/api/v1/ingest/sonar", "\n".join(json.dumps(e) for e in envs), auth=(CLUSTER, tok))
        check(r.status == 200, "post samples: %d %s" % (r.status, r.body[:300]))
        slurm = [{"job_id": job, "job_name": "j%d" % job, "job_state": "COMPLETED", "user_name": user,
                  "account": "a", "partition": "gpu", "nodes": [node], "start_time": rfc(T0),
                  "end_time": rfc(T0 + (N - 1) * STEP), "requested_cpus": 8, "allocated_resources": tres}
                 for job, (user, node, _, tres) in JOBS.items() if tres is not None]
        r = f.post("/api/v1/ingest/sonar", json.dumps({"meta": META, "data": {"type": "job", "attributes": {
            "time": rfc(T0 + 4 * 3600), "cluster": CLUSTER, "slurm_jobs": slurm}}}), auth=(CLUSTER, tok))
        check(r.status == 200, "post Slurm: %d %s" % (r.status, r.body[:300]))

        win = "cluster=%s&from=%d&to=%d" % (CLUSTER, T0 - 3600, T0 + 4 * 3600)
        r = f.get("/api/v1/problems?" + win, auth=("reader", reader))
        check(r.status == 200, "problems: %d %s" % (r.status, r.body[:300]))
        rows = r.json().get("problems", []) if r.status == 200 else []
        gpu_rows = {x["job"]: x for x in rows if x["rule"] in ("gpu_idle", "gpu_unused")}
        check({j: x["rule"] for j, x in gpu_rows.items()} == {701: "gpu_idle", 702: "gpu_unused", 703: "gpu_unused"},
              "GPU rows: %s" % {j: x["rule"] for j, x in gpu_rows.items()})
        for job in JOBS:
            got, want = gpu_rows.get(job, {}).get("gpu_idle_kwh"), want_idle_kwh(job)
            check(near(got, want), "job %d gpu_idle_kwh: %s, want %s" % (job, got, want))
        check(want_idle_kwh(701) > 0.5 and want_idle_kwh(702) > 0.5, "the figures are large enough to judge")
        others = [x for x in rows if x["rule"] not in ("gpu_idle", "gpu_unused")]
        check(others and all(x.get("gpu_idle_kwh") is None for x in others),
              "other rules' rows: null (%d rows)" % len(others))
        # the same figure as the job's energy_how
        r = f.get("/api/v1/jobs?%s&limit=10" % win, auth=("reader", reader))
        jobs = {x["job"]: x for x in r.json().get("jobs", [])} if r.status == 200 else {}
        how = jobs.get(701, {}).get("energy_how") or {}
        if isinstance(how, str):
            how = json.loads(how)
        check(near(gpu_rows.get(701, {}).get("gpu_idle_kwh"), how.get("gpu_idle_kwh")),
              "701: as energy_how's gpu_idle_kwh %s" % how)
        r = f.get("/api/v1/problems?%s&format=csv" % win, auth=("reader", reader))
        check(r.status == 200 and r.body.splitlines()[0].endswith(",gpu_idle_kwh"), "CSV header: %s"
              % r.body.splitlines()[:1])
    finally:
        check(f.stop() == 0, "SIGTERM exits 0")
        f.cleanup()
    finish()


if __name__ == "__main__":
    main()
