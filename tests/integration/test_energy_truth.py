"""Job energy against truth (docs/energy.md): Sonar samples with per-card power whose integrals are
known in closed form, posted over HTTP to a real fjord, and each job's energy_kwh and its parts read
back from the job list, the job page and the CSV, exact to 0.1 % (figures of at least
half a kWh, as the API gives kWh to the watt-hour). One node per case, so that the
cases do not mix: steady power on a card the job has alone; a linear ramp (the trapezoid rule is
exact on it) over a job that starts and ends mid-series, so the interval before its first sample
counts; a card shared by two jobs in proportion to their use (75 % and 25 %), and two cards both
jobs use with none of it (equal shares); a job holding an idle card by its Slurm allocation
(gres/gpu=2, one card used), charged the idle card's draw; a gap of 20 cadences that is missing,
not interpolated, and reported; a card's energy counter preferred to its power, and the power
taking the one interval in which the counter was reset; a job on a node without GPUs (null); a multi-node job whose
allocation's count is split evenly among its nodes; co2e_kg from carbon-intensity and pue, and
malformed settings refused at start. ClusterCockpit's node, CPU and memory metrics: two jobs sharing
a node by CPU time (3:1), a job alone with a CPU energy counter and memory power, and metrics of
other names that a cluster.json marks with "energy": "power" or "energy". Run on SQLite, and on PostgreSQL with
FJ_TEST_DB=postgres (CTest registers both)."""
import csv
import io
import json
import os
import shutil
import tempfile

from api_common import rfc
from harness import Failure, Fjord, check, finish

CLUSTER = "energy.test"
T0 = 1_700_000_000 - 1_700_000_000 % 3600
STEP = 60
N = 61  # samples k = 0..60: an hour
S = (N - 1) * STEP
META = {"producer": "sonar", "version": "0.19.0"}


def kwh(j):
    return j / 3.6e6


class Node:
    """A node sampled every STEP at ks with cards whose power at sample k is power(card, k) (None:
    no reading), and jobs: {job: (user, ks of the job, {card: util(k)})}."""

    def __init__(self, name, cards, power, jobs, ks=range(N), counter=None):
        self.name, self.cards, self.power, self.jobs, self.ks = name, cards, power, jobs, list(ks)
        self.counter = counter  # counter(card, k): the card's energy counter (mJ), as fjord-push sends it

    def envelopes(self):
        out = []
        for k in self.ks:
            gpus = []
            for c in range(self.cards):
                g = {"index": c, "uuid": "GPU-%s-%d" % (self.name, c)}
                p = self.power(c, k)
                if p is not None:
                    g["power"] = p
                if self.counter:
                    g["energy_mj"] = self.counter(c, k)
                gpus.append(g)
            jobs = []
            for job, spec in sorted(self.jobs.items()):
                user, jks, cards = spec[:3]
                cores = spec[3] if len(spec) > 3 else 1.0
                if k not in jks:
                    continue
                procs = [{"pid": 100 + job % 100, "ppid": 1, "cmd": "main", "resident_memory": 1024,
                          "cpu_util": 100.0 * cores, "cpu_avg": 100.0 * cores,
                          "cpu_time": int(cores * STEP * (k + 1))}]
                for i, (c, util) in enumerate(sorted(cards.items())):
                    procs.append({"pid": 1000 + 10 * job % 1000 + i, "ppid": procs[0]["pid"], "cmd": "gpu",
                                  "resident_memory": 1024,
                                  "gpus": [{"index": c, "uuid": "GPU-%s-%d" % (self.name, c),
                                            "gpu_util": util(k), "gpu_memory": 1024}]})
                jobs.append({"job": job, "user": user, "epoch": 0, "processes": procs})
            attrs = {"time": rfc(T0 + k * STEP), "cluster": CLUSTER, "node": self.name, "jobs": jobs}
            if self.cards:
                attrs["system"] = {"gpus": gpus}
            out.append({"meta": META, "data": {"type": "sample", "attributes": attrs}})
        return out


def steady(w):
    return lambda c, k: w


# The cases, and what each job's GPU energy is in joules (worked out by hand, not by fjord's rules
# as code: steady power x seconds, a ramp's trapezoid, the shares).
NODES = [
    # 201: 2 kW for the 60 intervals ending at samples 1..60 (sample 0 has no reading before it)
    Node("e1", 1, steady(2000), {201: ("ann", range(0, N), {0: lambda k: 50.0})}),
    # 202: p = 1000 + 50k W; the job is in samples 10..40, so the intervals ending there: from
    # sample 9 (1450 W) to sample 40 (3000 W), 31 intervals
    Node("e2", 1, lambda c, k: 1000 + 50 * k, {202: ("bob", range(10, 41), {0: lambda k: 80.0})}),
    # card 0 (3 kW): 203 at 75 %, 204 at 25 %; card 1 (1 kW): both at 0 % (equal shares)
    Node("e3", 2, lambda c, k: 3000 if c == 0 else 1000,
         {203: ("cy", range(0, N), {0: lambda k: 75.0, 1: lambda k: 0.0}),
          204: ("cy", range(0, N), {0: lambda k: 25.0, 1: lambda k: 0.0})}),
    # 205 holds two cards (gres/gpu=2), uses card 0 (2.5 kW), leaves card 1 idle (800 W)
    Node("e4", 2, lambda c, k: 2500 if c == 0 else 800, {205: ("dee", range(0, N), {0: lambda k: 50.0})}),
    # 206: 1 kW, but no sample between 20 and 40: that interval (20 cadences) is missing
    Node("e5", 1, steady(1000), {206: ("eve", range(0, N), {0: lambda k: 90.0})},
         ks=list(range(0, 21)) + list(range(40, N))),
    # 207: no GPUs on the node: no energy
    Node("e6", 0, steady(0), {207: ("fay", range(0, N), {})}),
    # 208 on two nodes holding gres/gpu=4 (2 per node), using one card of each: the other is idle
    Node("e7", 2, lambda c, k: 1200 if c == 0 else 600, {208: ("gus", range(0, N), {0: lambda k: 60.0})}),
    Node("e8", 2, lambda c, k: 1800 if c == 0 else 400, {208: ("gus", range(0, N), {0: lambda k: 60.0})}),
    # 209: the card's energy counter (fjord-push) rises 2 kW's worth an interval while its power
    # gauge says 500 W: the counter wins; at sample 30 the driver reloaded (the counter starts
    # again from 7 J), and that one interval is taken from the power
    Node("e9", 1, steady(500), {209: ("hal", range(0, N), {0: lambda k: 99.0})},
         counter=lambda c, k: 10**9 + 2000 * STEP * 1000 * k if k < 30 else 7000 + 2000 * STEP * 1000 * (k - 30)),
]
TRUTH = {
    201: (2000 * S, "measured", 0),
    202: ((1450 + 3000) / 2 * 31 * STEP, "measured", 0),
    203: (0.75 * 3000 * S + 0.5 * 1000 * S, "apportioned", 0),
    204: (0.25 * 3000 * S + 0.5 * 1000 * S, "apportioned", 0),
    205: ((2500 + 800) * S, "apportioned", 800 * S),
    206: (1000 * 40 * STEP, "measured", 0),
    208: ((1200 + 600 + 1800 + 400) * S, "apportioned", (600 + 400) * S),
    209: (2000 * STEP * 59 + 500 * STEP, "measured", 0),
}
GPU_FROM = {209: "counter+power"}  # every other job's: power

# ClusterCockpit's node, CPU and memory metrics (line protocol, as cc-metric-collector sends them)
# every 10 s from a minute before the nodes' first Sonar sample to a minute after their last. The
# node-samples end every minute: an interval goes to the jobs by their CPU time in the node-sample
# that ends it, and before the node's first node-sample only the minute before it counts: 11
# minutes in all (660 s).
CC_NODES = [
    # 301 (3 cores) and 302 (1 core) share c1; its node_power is 400 W
    Node("c1", 0, steady(0), {301: ("ivy", range(0, 11), {}, 3.0), 302: ("jo", range(0, 11), {}, 1.0)}, ks=range(0, 11)),
    # 303 alone on c2: cpu_energy, a counter (J) rising 150 W's worth, and mem_power 20 W
    Node("c2", 0, steady(0), {303: ("kim", range(0, 11), {}, 2.0)}, ks=range(0, 11)),
    # 304 alone on c3, whose metrics have names of their own that the cluster.json marks as energy
    # metrics: socket_pkg_w ("power": CPU by its name) 80 W, node_board_j ("energy") 300 W's worth
    Node("c3", 0, steady(0), {304: ("lee", range(0, 11), {}, 1.0)}, ks=range(0, 11)),
]
CLUSTER_JSON = {"name": "energy.test", "metricConfig": [
    {"name": "socket_pkg_w", "unit": {"base": "W"}, "scope": "socket", "timestep": 10, "aggregation": "sum",
     "energy": "power"},
    {"name": "node_board_j", "unit": {"base": "J"}, "scope": "node", "timestep": 10, "aggregation": "sum",
     "energy": "energy"},
    {"name": "cpu_load", "unit": {"base": ""}, "scope": "node", "timestep": 10, "aggregation": "avg"}]}
CC_SPAN = 660
CC_TRUTH = {  # job: {part: (joules, how)}
    301: {"node": (0.75 * 400 * CC_SPAN, "apportioned")},
    302: {"node": (0.25 * 400 * CC_SPAN, "apportioned")},
    303: {"cpu": (150 * CC_SPAN, "measured"), "mem": (20 * CC_SPAN, "measured")},
    304: {"cpu": (80 * CC_SPAN, "measured"), "node": (300 * CC_SPAN, "measured")},
}


def cc_lines():
    out = []
    for t in range(T0 - 60, T0 + 10 * STEP + 61, 10):
        out.append("node_power,hostname=c1,type=node value=400 %d" % t)
        out.append("cpu_energy,hostname=c2,type=socket,type-id=0 value=%d %d" % (10**6 + 150 * (t - T0 + 60), t))
        out.append("mem_power,hostname=c2,type=node value=20 %d" % t)
        out.append("socket_pkg_w,hostname=c3,type=socket,type-id=0 value=80 %d" % t)
        out.append("node_board_j,hostname=c3,type=node value=%d %d" % (300 * (t - T0 + 60), t))
        out.append("cpu_load,hostname=c3,type=node value=1 %d" % t)  # not an energy metric
    return "\n".join(out) + "\n"
SLURM = {205: ("e4", "cpu=4,gres/gpu=2,mem=8G,node=1"), 208: ("e7,e8", "cpu=8,gres/gpu=4,node=2")}


def post(f, tok, envs):
    body = "\n".join(json.dumps(e) for e in envs)
    r = f.post("/api/v1/ingest/sonar", body, auth=(CLUSTER, tok))
    check(r.status == 200, "post: %d %s" % (r.status, r.body[:300]))


def near(got, want, what):
    check(got is not None, "%s: null, want %.9g" % (what, want))
    check(abs(got - want) <= 1e-3 * abs(want) + 1e-12, "%s: %.9g, want %.9g (0.1 %%)" % (what, got, want))


CARBON_G, PUE = 500, 1.5


def bad_settings():
    """A malformed carbon-intensity or pue stops the server at start, naming the option."""
    for opt, val in (("--carbon-intensity", "energy.test=500"), ("--carbon-intensity", "energy.test:lots"),
                     ("--pue", "0.5")):
        f = Fjord(opt, val)
        try:
            f.start()
            check(False, "%s %s: accepted" % (opt, val))
            f.stop()
        except Failure as e:
            check(opt[2:] in str(e), "%s %s: refused naming the option: %s" % (opt, val, str(e)[-200:]))
        f.cleanup()


def main():
    bad_settings()
    cfg = os.path.join(tempfile.mkdtemp(prefix="fjord-energy-"), "cluster.json")
    with open(cfg, "w") as fh:
        json.dump(CLUSTER_JSON, fh)
    f = Fjord("--carbon-intensity", "other.test:20,%s:%d" % (CLUSTER, CARBON_G), "--pue", str(PUE),
              "--cc-cluster-config", cfg)
    tok = f.token(CLUSTER)
    reader = f.token("reader", "--read-only")
    f.start()
    try:
        for nd in NODES + CC_NODES:
            post(f, tok, nd.envelopes())
        r = f.post("/api/write?cluster=%s" % CLUSTER, cc_lines(), auth=(CLUSTER, tok),
                   headers={"Content-Type": "text/plain"})
        check(r.status == 200, "ClusterCockpit metrics: %d %s" % (r.status, r.body[:300]))
        slurm = [{"job_id": j, "job_name": "j%d" % j, "job_state": "COMPLETED", "user_name": "u", "partition": "p",
                  "nodes": nodes.split(","), "allocated_resources": tres, "start_time": rfc(T0),
                  "end_time": rfc(T0 + S)} for j, (nodes, tres) in SLURM.items()]
        post(f, tok, [{"meta": META, "data": {"type": "job", "attributes": {
            "time": rfc(T0 + S + 100), "cluster": CLUSTER, "slurm_jobs": slurm}}}])

        r = f.get("/api/v1/jobs?cluster=%s&from=%d&to=%d&limit=100" % (CLUSTER, T0 - 10, T0 + 2 * S),
                  auth=("reader", reader))
        check(r.status == 200, "jobs: %d %s" % (r.status, r.body[:300]))
        rows = {j["job"]: j for j in json.loads(r.body)["jobs"]}
        check(set(rows) == set(TRUTH) | set(CC_TRUTH) | {207}, "jobs listed: %s" % sorted(rows))
        for job, parts in CC_TRUTH.items():
            j = rows[job]
            total = sum(jl for jl, _ in parts.values())
            near(j["energy_how"].get("joules") if j["energy_how"] else None, total, "job %d joules" % job)
            check(j["energy_kwh"] is not None and abs(j["energy_kwh"] - kwh(total)) <= 5e-4 + 1e-9,
                  "job %d kWh to the watt-hour: %s" % (job, j["energy_kwh"]))
            for part in ("cpu", "mem", "node"):
                want = parts.get(part)
                got = j["energy_%s_kwh" % part]
                if want:
                    check(got is not None and abs(got - kwh(want[0])) <= 5e-4 + 1e-9, "job %d %s: %s, want %.6g kWh"
                          % (job, part, got, kwh(want[0])))
                    check(j["energy_how"].get(part) == want[1], "job %d %s how: %s" % (job, part, j["energy_how"]))
                else:
                    check(got is None and part not in j["energy_how"], "job %d: no %s: %s" % (job, part, j))
            check(j["energy_gpu_kwh"] is None and "gpu" not in j["energy_how"], "job %d: no GPU" % job)
        for job, (joules, how, idle) in TRUTH.items():
            j = rows[job]
            near(j["energy_gpu_kwh"], kwh(joules), "job %d GPU" % job)
            near(j["energy_kwh"], kwh(joules), "job %d total" % job)
            near(j["energy_how"].get("joules"), joules, "job %d joules, unrounded" % job)
            check(j["energy_cpu_kwh"] is None and j["energy_mem_kwh"] is None and j["energy_node_kwh"] is None,
                  "job %d: parts without readings are null: %s" % (job, j))
            check(j["energy_how"]["gpu"] == how, "job %d how: %s, want %s" % (job, j["energy_how"], how))
            check(j["energy_how"].get("gpu_from") == GPU_FROM.get(job, "power"),
                  "job %d integrated from: %s" % (job, j["energy_how"]))
            if idle:
                near(j["energy_how"].get("gpu_idle_kwh"), kwh(idle), "job %d idle cards" % job)
            else:
                check("gpu_idle_kwh" not in j["energy_how"], "job %d: no idle card: %s" % (job, j["energy_how"]))
            co2 = kwh(joules) * PUE * CARBON_G / 1000
            check(j["co2e_kg"] is not None and abs(j["co2e_kg"] - co2) <= max(1e-3 * co2, 5e-4),
                  "job %d co2e_kg: %s, want %.6g" % (job, j["co2e_kg"], co2))
        check(rows[206]["energy_missing_s"] == 20 * STEP and rows[206]["energy_how"]["gaps"] == 1,
              "the gap is reported: %s %s" % (rows[206]["energy_missing_s"], rows[206]["energy_how"]))
        check(rows[201]["energy_missing_s"] == 0, "no gap: %s" % rows[201]["energy_missing_s"])
        j = rows[207]
        check(j["energy_kwh"] is None and j["energy_gpu_kwh"] is None and j["energy_how"] is None
              and j["energy_missing_s"] is None and j["co2e_kg"] is None, "no GPU on the node: null energy: %s" % j)

        # energy=false: the columns are there, null
        r = f.get("/api/v1/jobs?cluster=%s&from=%d&energy=false&limit=100" % (CLUSTER, T0 - 10), auth=("reader", reader))
        off = {j["job"]: j for j in json.loads(r.body)["jobs"]} if r.status == 200 else {}
        check(set(off) == set(rows) and all(j["energy_kwh"] is None and j["energy_how"] is None for j in off.values()),
              "energy=false: every job, no energy: %d %s" % (r.status, r.body[:200]))

        # the job page says the same
        r = f.get("/api/v1/jobs/%d?cluster=%s" % (rows[205]["id"], CLUSTER), auth=("reader", reader))
        check(r.status == 200, "job: %d %s" % (r.status, r.body[:300]))
        one = json.loads(r.body)["job"]
        one = one[0] if isinstance(one, list) else one
        near(one["energy_kwh"], kwh(TRUTH[205][0]), "job page 205")
        check(one["energy_how"] == rows[205]["energy_how"], "job page's how: %s" % one["energy_how"])

        # and the CSV
        r = f.get("/api/v1/jobs?cluster=%s&from=%d&format=csv&limit=100" % (CLUSTER, T0 - 10), auth=("reader", reader))
        check(r.status == 200, "csv: %d" % r.status)
        by_job = {int(x["job"]): x for x in csv.DictReader(io.StringIO(r.body))}
        for job, (joules, _, _) in TRUTH.items():
            near(float(by_job[job]["energy_kwh"]), kwh(joules), "CSV job %d" % job)
        check(by_job[207]["energy_kwh"] == "", "CSV: null is empty: %r" % by_job[207]["energy_kwh"])
    finally:
        check(f.stop() == 0, "SIGTERM exits 0")
        f.cleanup()
        shutil.rmtree(os.path.dirname(cfg), ignore_errors=True)
    finish()


if __name__ == "__main__":
    main()
