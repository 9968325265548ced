"""energy_kwh and co2e_kg of GET /api/v1/usage (docs/storage.md "Usage and efficiency", docs/energy.md
"In usage") against truth: Sonar samples with per-card power readings posted over HTTP to a real
fjord, and each group's energy per bucket computed here, independently, from the readings: every
interval between two of a node's readings that ends at a sample of the job is integrated by the
trapezoid rule (the line between the two readings, integrated in closed form over the part inside
the bucket), times the job's share of the card (its use over the card's users' use). Cases: a job
across a day's edge whose samples are off the edge (the interval across it is split); a job across
the window's start and one across its end (cut there); two jobs sharing a card by use (3:1) and one
of them on a second card alone; a job whose first sample follows a day's edge (its interval across
the edge all in its first day); a job holding an idle card by its Slurm allocation (gres/gpu=2, one
used: the idle card's draw charged); a CPU-only user (energy null) and a GPU job without card
readings (null too). By user, account and cluster, without buckets and per day; co2e_kg from
carbon-intensity and pue; sorting by energy_kwh; energy=false. Exact to 0.1 % (the answer gives kWh to the
watt-hour: every figure here is above a kWh). Run on SQLite, and on PostgreSQL with
FJ_TEST_DB=postgres (CTest registers both)."""
import json

from api_common import rfc
from harness import Fjord, check, finish

CLUSTER = "usage-energy.test"
T0 = 1682812800  # 2023-04-30T00:00:00Z
D = 86400
H = 3600
STEP = 300
OFF = 100  # samples at T0 + OFF + k * STEP: no sample on a day's edge
FROM, TO = T0, T0 + 2 * D
CARBON_G, PUE = 300, 1.25
META = {"producer": "sonar", "version": "0.19.0"}


def t_of(k):
    return T0 + OFF + k * STEP


def k_at(t):
    """The sample index at or after time t."""
    return -((OFF + T0 - t) // STEP)


class Node:
    """A node sampled at ks with cards whose power at sample k is power(card, k) (None: no reading),
    and jobs: {job: (user, ks of the job, {card: util})}."""

    def __init__(self, name, cards, power, jobs, ks):
        self.name, self.cards, self.power, self.jobs, self.ks = name, cards, power, jobs, list(ks)

    def envelopes(self):
        out = []
        for k in self.ks:
            gpus = []
            for c in range(self.cards):
                g = {"index": c, "uuid": "GPU-%s-%d" % (self.name, c)}
                p = self.power(c, k)
                if p is not None:  # a card without power would read 0 W: no card, no reading
                    g["power"] = p
                    gpus.append(g)
            jobs = []
            for job, (user, jks, cards) in sorted(self.jobs.items()):
                if k not in jks:
                    continue
                procs = [{"pid": 100 + job % 100, "ppid": 1, "cmd": "main", "resident_memory": 1024,
                          "cpu_util": 100.0, "cpu_avg": 100.0, "cpu_time": STEP * (k + 1000)}]
                for i, (c, util) in enumerate(sorted(cards.items())):
                    procs.append({"pid": 1000 + 10 * job % 1000 + i, "ppid": procs[0]["pid"], "cmd": "gpu",
                                  "resident_memory": 1024,
                                  "gpus": [{"index": c, "uuid": "GPU-%s-%d" % (self.name, c), "gpu_util": util,
                                            "gpu_memory": 1024}]})
                jobs.append({"job": job, "user": user, "epoch": 0, "processes": procs})
            attrs = {"time": rfc(t_of(k)), "cluster": CLUSTER, "node": self.name, "jobs": jobs}
            if gpus:
                attrs["system"] = {"gpus": gpus}
            out.append({"meta": META, "data": {"type": "sample", "attributes": attrs}})
        return out


def rng(a, b):
    return range(k_at(a), k_at(b) + 1)


# Varying power with known values at every reading (the truth integrates the line between them).
def wave(base):
    return lambda c, k: base + 40 * c + 25 * ((3 * k + c) % 7)


NODES = [
    # 501 across the day's edge (20 h to 28 h), card 0 alone; the node read an hour either side
    Node("g1", 1, wave(600), {501: ("ann", rng(T0 + 20 * H, T0 + 28 * H), {0: 90})},
         rng(T0 + 19 * H, T0 + 29 * H)),
    # 502 across the window's start (-3 h to 4 h), two cards
    Node("g2", 2, wave(500), {502: ("bob", rng(T0 - 3 * H, T0 + 4 * H), {0: 80, 1: 40})},
         rng(T0 - 4 * H, T0 + 5 * H)),
    # 503 and 504 share card 1 by use (60 against 20); 503 has card 0 alone; card 2 nobody's
    Node("g3", 3, wave(450), {503: ("bob", rng(T0 + 30 * H, T0 + 36 * H), {0: 70, 1: 60}),
                              504: ("cy", rng(T0 + 30 * H, T0 + 36 * H), {1: 20})},
         rng(T0 + 29 * H, T0 + 37 * H)),
    # 505 holds two cards (Slurm gres/gpu=2) and uses one: the idle card's draw is its too
    Node("g4", 2, wave(400), {505: ("dan", rng(T0 + 6 * H, T0 + 10 * H), {0: 50})},
         rng(T0 + 5 * H, T0 + 11 * H)),
    # 506 across the window's end (45 h to 50 h)
    Node("g5", 1, wave(700), {506: ("cy", rng(T0 + 45 * H, T0 + 50 * H), {0: 95})},
         rng(T0 + 44 * H, T0 + 51 * H)),
    # 509 begins just after the day's edge: the interval before its first sample, across the edge, is
    # all in its first day (a bucket does not cut a job's own first interval)
    Node("g7", 1, wave(650), {509: ("gus", rng(T0 + 24 * H, T0 + 27 * H), {0: 85})},
         rng(T0 + 23 * H, T0 + 28 * H)),
    # 507: a CPU job, no cards (energy null for eve)
    Node("c1", 0, lambda c, k: None, {507: ("eve", rng(T0 + 2 * H, T0 + 9 * H), {})}, rng(T0 + 2 * H, T0 + 9 * H)),
    # 508: a GPU job whose node sends no card readings (its energy missing: null for fay)
    Node("g6", 1, lambda c, k: None, {508: ("fay", rng(T0 + 2 * H, T0 + 9 * H), {0: 50})},
         rng(T0 + 2 * H, T0 + 9 * H)),
]
ACCOUNT = {501: "a1", 502: "a2", 503: "a1", 504: "a2", 505: "a3", 506: "a1", 507: "a3", 508: "a4", 509: "a4"}
ALLOC_GPUS = {501: 1, 502: 2, 503: 2, 504: 1, 505: 2, 507: 0, 508: 1, 509: 1}  # 506: no TRES


def segment(t0, p0, t1, p1, lo, hi):
    """The integral of the line from (t0, p0) to (t1, p1) over [t0, t1] ∩ [lo, hi]."""
    a, b = max(t0, lo), min(t1, hi)
    if b <= a:
        return 0.0
    f = lambda t: p0 * (t - t0) + (p1 - p0) * (t - t0) ** 2 / (2 * (t1 - t0))  # the antiderivative
    return f(b) - f(a)


def job_energy(job, lo, hi):
    """Joules of job's GPU part inside [lo, hi], from the design; None when it has no figure."""
    total, any_ = 0.0, False
    for n in NODES:
        if job not in n.jobs:
            continue
        user, jks, cards = n.jobs[job]
        for k in jks:
            i = n.ks.index(k)
            if i == 0:
                continue
            kp = n.ks[i - 1]
            used = {c for c in range(n.cards) if any(c in s[2] for j, s in n.jobs.items() if k in s[1])}
            for c in range(n.cards):
                if n.power(c, k) is None or n.power(c, kp) is None:
                    continue
                e = segment(t_of(kp), n.power(c, kp), t_of(k), n.power(c, k), lo, hi)
                if c in cards:
                    users = [s[2][c] for j, s in n.jobs.items() if k in s[1] and c in s[2]]
                    total += e * cards[c] / sum(users)
                    any_ = True
                elif c not in used and len(cards) < ALLOC_GPUS.get(job, 0):
                    free = [x for x in range(n.cards) if x not in used]
                    total += e * min(ALLOC_GPUS[job] - len(cards), len(free)) / len(free)
                    any_ = True
    return total if any_ else None


def job_span(job):
    for n in NODES:
        if job in n.jobs:
            ks = n.jobs[job][1]
            return t_of(ks[0]), t_of(ks[-1]), n.jobs[job][0]
    raise KeyError(job)


def key_of(job, by):
    return {"user": job_span(job)[2], "account": ACCOUNT[job], "cluster": CLUSTER}[by]


def truth(by, edges):
    """{(bucket start, group): kWh or None} of the design. A bucket cuts a job's energy at its edges,
    but the job's first bucket takes all of its first interval unless the window cuts it."""
    out = {}
    for i, (b0, b1) in enumerate(zip(edges, edges[1:])):
        for job in ACCOUNT:
            first, last, _ = job_span(job)
            if last < FROM or first >= TO or not (first < b1 and last >= b0):
                continue
            lo = float("-inf") if b0 <= first < b1 and b0 > FROM else b0
            e = job_energy(job, lo, b1)
            k = (b0, key_of(job, by))
            if e is None:
                out.setdefault(k, None)
            else:
                out[k] = (out.get(k) or 0.0) + e / 3.6e6
    return out


def near(got, want):
    if got is None or want is None:
        return got is None and want is None
    return abs(got - want) <= max(0.001 * abs(want), 0.0005) + 1e-9


def main():
    f = Fjord("--carbon-intensity", "%s:%d" % (CLUSTER, CARBON_G), "--pue", str(PUE))
    tok = f.token(CLUSTER)
    reader = f.token("reader", "--read-only")
    f.start()
    try:
        envs = sorted((e for n in NODES for e in n.envelopes()), key=lambda e: e["data"]["attributes"]["time"])
        r = f.post("/api/v1/ingest/sonar", "\n".join(json.dumps(e) for e in envs), auth=(CLUSTER, tok))
        check(r.status == 200, "post samples: %d %s" % (r.status, r.body[:300]))
        slurm = []
        for job, acc in ACCOUNT.items():
            first, last, user = job_span(job)
            nodes = [n.name for n in NODES if job in n.jobs]
            rec = {"job_id": job, "job_name": "j%d" % job, "job_state": "COMPLETED", "user_name": user,
                   "account": acc, "partition": "gpu", "nodes": nodes, "start_time": rfc(first),
                   "end_time": rfc(last), "requested_cpus": 4}
            if job in ALLOC_GPUS:
                rec["allocated_resources"] = "cpu=4,gres/gpu=%d,node=1" % ALLOC_GPUS[job]
            slurm.append(rec)
        r = f.post("/api/v1/ingest/sonar", json.dumps({"meta": META, "data": {"type": "job", "attributes": {
            "time": rfc(T0 + 3 * D), "cluster": CLUSTER, "slurm_jobs": slurm}}}), auth=(CLUSTER, tok))
        check(r.status == 200, "post Slurm: %d %s" % (r.status, r.body[:300]))

        def get(path):
            r = f.get(path, auth=("reader", reader))
            check(r.status == 200, "%s: %d %s" % (path, r.status, r.body[:300]))
            return r.json().get("usage", []) if r.status == 200 else []

        win = "cluster=%s&from=%d&to=%d" % (CLUSTER, FROM, TO)
        for by in ("user", "account", "cluster"):
            for bucket, edges in (("none", [FROM, TO]), ("day", [FROM, FROM + D, TO])):
                want = truth(by, edges)
                rows = get("/api/v1/usage?%s&by=%s&bucket=%s&energy=true" % (win, by, bucket))
                got = {((x["bucket"] if bucket != "none" else None), x["group"]): x for x in rows}
                want = {((rfc(b) if bucket != "none" else None), g): v for (b, g), v in want.items()}
                check(set(got) == set(want), "by %s per %s: rows %s, want %s" % (by, bucket, sorted(got, key=str),
                                                                               sorted(want, key=str)))
                for k, v in want.items():
                    x = got.get(k, {})
                    check(near(x.get("energy_kwh"), v), "by %s per %s %s: energy_kwh %s, want %s"
                          % (by, bucket, k, x.get("energy_kwh"), v))
                    co2 = None if v is None else v * PUE * CARBON_G / 1000
                    check(near(x.get("co2e_kg"), co2), "by %s per %s %s: co2e_kg %s, want %s"
                          % (by, bucket, k, x.get("co2e_kg"), co2))

        # energy=false: the energy columns null, every other figure as before
        plain = {x["group"]: x for x in get("/api/v1/usage?%s&by=user&energy=false" % win)}
        full = {x["group"]: x for x in get("/api/v1/usage?%s&by=user&energy=true" % win)}
        default = {x["group"]: x for x in get("/api/v1/usage?%s&by=user" % win)}
        check(default == plain, "energy is read only when asked: the default answer is energy=false's: %s" % default)
        check(set(plain) == set(full) and all(x["energy_kwh"] is None and x["co2e_kg"] is None for x in plain.values())
              and all({k: v for k, v in plain[g].items() if k not in ("energy_kwh", "co2e_kg")}
                      == {k: v for k, v in full[g].items() if k not in ("energy_kwh", "co2e_kg")} for g in plain),
              "energy=false: energy null, the rest unchanged: %s" % plain)

        # the cases one by one, against the design's own figures
        users = {x["group"]: x for x in get("/api/v1/usage?%s&by=user&energy=true" % win)}
        check(users.get("eve", {}).get("energy_kwh") is None and users.get("fay", {}).get("energy_kwh") is None,
              "a CPU job and a GPU job without card readings: null (%s, %s)" % (users.get("eve"), users.get("fay")))
        idle = job_energy(505, float("-inf"), float("inf")) / 3.6e6
        alone = sum(segment(t_of(k - 1), NODES[3].power(0, k - 1), t_of(k), NODES[3].power(0, k), -1e12, 1e12)
                    for k in NODES[3].jobs[505][1]) / 3.6e6
        check(idle > 1.5 * alone and near(users.get("dan", {}).get("energy_kwh"), idle),
              "505 charged its idle card: %s, want %s (its own card alone: %s)"
              % (users.get("dan", {}).get("energy_kwh"), idle, alone))
        # a job inside the window: its buckets add up to the job list's figure
        r = f.get("/api/v1/jobs?cluster=%s&from=%d&to=%d&limit=100" % (CLUSTER, FROM - D, TO + D),
                  auth=("reader", reader))
        jobs = {x["job"]: x for x in r.json().get("jobs", [])} if r.status == 200 else {}
        ann = get("/api/v1/usage?%s&by=user&user=ann&bucket=day&energy=true" % win)
        check(len(ann) == 2 and near(sum(x["energy_kwh"] for x in ann), jobs.get(501, {}).get("energy_kwh")),
              "501's two days add up to its job-list energy_kwh %s: %s" % (jobs.get(501, {}).get("energy_kwh"), ann))
        # sorted by energy, most first, nulls last
        tot = truth("user", [FROM, TO])
        order = sorted((g for (_, g) in tot), key=lambda g: (tot[(FROM, g)] is None, -(tot[(FROM, g)] or 0), g))
        rows = get("/api/v1/usage?%s&by=user&sort=energy_kwh" % win)
        check([x["group"] for x in rows] == order, "sort=energy_kwh: %s, want %s" % ([x["group"] for x in rows], order))
        rows = get("/api/v1/usage?%s&by=account&sort=co2e_kg&limit=1" % win)
        acc = truth("account", [FROM, TO])
        top = max((g for (_, g) in acc if acc[(FROM, g)] is not None), key=lambda g: acc[(FROM, g)])
        check([x["group"] for x in rows] == [top], "sort=co2e_kg&limit=1: %s, want %s" % (rows, top))
    finally:
        check(f.stop() == 0, "SIGTERM exits 0")
        f.cleanup()
    finish()


if __name__ == "__main__":
    main()
