"""Job CPU against an independently computed truth (docs/storage.md, "Job CPU"). Synthetic Sonar
process series whose true CPU use is known are posted over HTTP to a real fjord: cpu_time is the
true cumulative CPU truncated to whole seconds at the (jittered) sampling instant, cpu_util is a
noisy ~100 ms glimpse (biased high, as measured against the real Sonar), cpu_avg the true lifetime
average. The job list's cpu_avg and cpu_peak and the profile must match the truth; a child that
is sampled and then reaped is counted once under Sonar's cpu_time (children included), fjord-push
0.2's (the same) and fjord-push 0.1's (own time only), told apart by meta.version (0.2's data read
as 0.1's would count the child twice), in order and out of order; the issue's three envelopes (a
child without cpu_time, reaped into its parent's counter) give 1 CPU-second in 20 s; a pid reused
(counter reset) starts a new series; arrival out of order gives the same figures as in order."""
import json
import random

from api_common import rfc
from harness import Fjord, check, finish

T0 = 1_700_000_000
STEP = 30
N = 41  # 20 minutes


def proc_record(pid, ppid, cmd, cpu_s, avg, util, threads=1):
    r = {"pid": pid, "ppid": ppid, "cmd": cmd, "resident_memory": 1000, "cpu_avg": round(avg, 2),
         "cpu_util": round(util, 2)}
    if threads > 1:
        r["num_threads"] = threads - 1
    if int(cpu_s) > 0:
        r["cpu_time"] = int(cpu_s)  # Sonar omits zero values
    return r


def sample(node, t, job, procs, producer="sonar", version="0.19.0"):
    return {"meta": {"producer": producer, "version": version},
            "data": {"type": "sample", "attributes": {
                "time": rfc(t), "cluster": "cpu.test", "node": node,
                "jobs": [{"job": job, "user": "alice", "epoch": 0, "processes": procs}]}}}


class Series:
    """A process busy at `rate` (fraction of a core) from `start`; cumulative CPU at time t."""

    def __init__(self, pid, ppid, cmd, rate, start, end=None, born=None):
        self.pid, self.ppid, self.cmd, self.rate, self.start, self.end = pid, ppid, cmd, rate, start, end
        self.born = born if born is not None else start - 600  # it ran before the job was sampled

    def used(self, t):
        t = min(t, self.end) if self.end is not None else t
        return max(0.0, (t - self.born) * self.rate)

    def alive(self, t):
        return self.start <= t and (self.end is None or t < self.end)


def truth(series, times, extra=None):
    """Per node-sample: the first is the processes' lifetime averages, every later one the CPU used
    in the interval ending there over its length; the job's average is their mean."""
    vals = []
    for k, t in enumerate(times):
        if k == 0:
            vals.append(sum(100.0 * s.rate for s in series if s.alive(t)))
            continue
        tp = times[k - 1]
        vals.append(100.0 * sum(s.used(t) - s.used(tp) for s in series) / (t - tp))
    return vals


def post_all(f, tok, envs):
    for e in envs:
        r = f.post("/api/v1/ingest/sonar", json.dumps(e), auth=("cpu.test", tok))
        check(r.status == 200, "post: %d %s" % (r.status, r.body[:200]))


def job_row(f, reader, job):
    r = f.get("/api/v1/jobs?cluster=cpu.test&from=%d&to=%d" % (T0 - 3600, T0 + 7200), auth=("reader", reader))
    check(r.status == 200, "jobs: %d %s" % (r.status, r.body[:200]))
    rows = [j for j in r.json().get("jobs", []) if j.get("job") == job]
    check(len(rows) == 1, "job %d listed once: %s" % (job, rows))
    return rows[0] if rows else {}


def profile(f, reader, jid, by="host"):
    r = f.get("/api/v1/jobs/%d/profile?cluster=cpu.test&bucket=1h&by=%s" % (jid, by), auth=("reader", reader))
    check(r.status == 200, "profile: %d %s" % (r.status, r.body[:200]))
    return r.json().get("profile", []) if r.status == 200 else []


def near(got, want, rel, what):
    ok = got is not None and abs(got - want) <= rel * abs(want)
    check(ok, "%s: got %s, truth %.3f (within %.1f %%)" % (what, got, want, 100 * rel))


def envelopes_for(node, job, series, times, rng, producer="sonar", version="0.19.0"):
    """Sonar, and fjord-push from 0.2, add reaped children's time to the parent's cpu_time;
    fjord-push before 0.2 sent own time only."""
    children_in_parent = producer != "fjord-push" or version >= "0.2"
    envs = []
    for t in times:
        jitter = rng.uniform(0.0, 0.9)  # /proc is read a moment after the timestamp
        procs = []
        for s in series:
            if not s.alive(t):
                continue
            cpu = s.used(t + jitter)
            if children_in_parent:  # reaped children's time too
                cpu += sum(c.used(t + jitter) for c in series if c.ppid == s.pid and c.end is not None
                           and c.end <= t)
            util = 100.0 * s.rate * rng.uniform(0.95, 1.35)
            procs.append(proc_record(s.pid, s.ppid, s.cmd, cpu, 100.0 * s.rate, util))
        envs.append(sample(node, t, job, procs, producer, version))
    return envs


def main():
    f = Fjord()
    try:
        tok = f.token("cpu.test")
        reader = f.token("reader", "--read-only")
        f.start()
        rng = random.Random(12)
        times = [T0 + STEP * k for k in range(N)]

        # 1. one single-threaded process at 48.5 % of a core; cpu_util noisy and biased high
        s1 = [Series(100, 1, "busy", 0.485, T0)]
        post_all(f, tok, envelopes_for("n1", 101, s1, times, rng))
        want = truth(s1, times)
        avg = sum(want) / len(want)
        row = job_row(f, reader, 101)
        near(row.get("cpu_avg"), avg, 0.01, "job 101 cpu_avg")
        # the peak is over >= 120 s: cpu_time's 1 s moves it by < 1 % of a core, never past 100 %
        check(row.get("cpu_peak") is not None and abs(row["cpu_peak"] - 48.5) <= 1.0,
              "job 101 cpu_peak %s near 48.5" % row.get("cpu_peak"))
        prof = profile(f, reader, row.get("id", 0))
        check(len(prof) == 1 and len(prof[0].get("points", [])) == 1, "one host, one bucket: %s" % prof)
        if prof and prof[0].get("points"):
            near(prof[0]["points"][0]["cpu"], avg, 0.01, "job 101 profile cpu")
            check(prof[0]["points"][0]["cpu_max"] <= 100.0, "profile cpu_max within one core")
        print("truth %.2f %% -> cpu_avg %s, cpu_peak %s" % (avg, row.get("cpu_avg"), row.get("cpu_peak")))

        # 2. a full-core process: no peak above one core however cpu_time truncates
        s2 = [Series(200, 1, "spin", 1.0, T0)]
        post_all(f, tok, envelopes_for("n2", 102, s2, times, rng))
        row = job_row(f, reader, 102)
        check(row.get("cpu_peak") is not None and 99.0 <= row["cpu_peak"] <= 100.0,
              "single-threaded full core: cpu_peak %s in [99, 100]" % row.get("cpu_peak"))

        # 3. a child sampled, then reaped: the parent counter of Sonar and of fjord-push from 0.2
        # jumps by the child's time, and that of fjord-push before 0.2 (own time only) does not;
        # the server tells them by meta.producer and meta.version, and the child's CPU is counted
        # once in each
        for job, node, producer, version in ((103, "n3", "sonar", "0.19.0"), (104, "n4", "fjord-push", "0.1.0"),
                                             (107, "n7", "fjord-push", "0.2.0")):
            parent = Series(300, 1, "driver", 0.2, T0)
            child = Series(301, 300, "worker", 0.9, T0 + 2 * STEP, end=T0 + 10 * STEP + 1, born=T0 + 2 * STEP - 5)
            s3 = [parent, child]
            post_all(f, tok, envelopes_for(node, job, s3, times, rng, producer, version))
            want = truth(s3, times)
            row = job_row(f, reader, job)
            near(row.get("cpu_avg"), sum(want) / len(want), 0.01,
                 "job %d (%s %s, reaped child) cpu_avg" % (job, producer, version))
        # the new form read with the old rule would count the child twice: the version matters
        twice = envelopes_for("n8", 108, s3, times, rng, "fjord-push", "0.2.0")
        for e in twice:
            e["meta"]["version"] = "0.1.0"
        post_all(f, tok, twice)
        row = job_row(f, reader, 108)
        check(row.get("cpu_avg", 0) > 1.1 * sum(want) / len(want),
              "children's time read as own time counts the child twice: %s vs %.2f" % (row.get("cpu_avg"),
                                                                                     sum(want) / len(want)))

        # each form read back from the database (arrival out of order) as it was computed in order
        for version, (j_in, j_out) in (("0.1.0", (111, 112)), ("0.2.0", (113, 114))):
            envs = envelopes_for("n%d" % j_in, j_in, s3, times, random.Random(7), "fjord-push", version)
            post_all(f, tok, envs)
            shuffled = json.loads(json.dumps(envs))
            for e in shuffled:
                e["data"]["attributes"]["node"] = "n%d" % j_out
                e["data"]["attributes"]["jobs"][0]["job"] = j_out
            random.Random(3).shuffle(shuffled)
            post_all(f, tok, shuffled)
            a, b = job_row(f, reader, j_in), job_row(f, reader, j_out)
            for k in ("cpu_avg", "cpu_peak"):
                check(a.get(k) is not None and a.get(k) == b.get(k),
                      "fjord-push %s out of order %s: %s, in order %s" % (version, k, b.get(k), a.get(k)))

        # 3b. the three envelopes: a parent at cpu_time 1, 1, 2 at t, t+10, t+20 and at
        # t+10 only a child of it at 100 % for a moment, without cpu_time (Sonar omits 0). The
        # job used 1 CPU-second in 20 s: per node-sample 1 (the parent's cpu_avg), 0, 10
        for job, node, producer, version in ((109, "n9", "sonar", "0.19.0"), (110, "n10", "fjord-push", "0.2.0")):
            par = lambda c: {"pid": 900, "ppid": 1, "cmd": "make", "cpu_avg": 1.0, "cpu_time": c}
            kid = {"pid": 901, "ppid": 900, "cmd": "cc1", "cpu_avg": 100.0, "cpu_util": 100.0}
            post_all(f, tok, [sample(node, T0, job, [par(1)], producer, version),
                              sample(node, T0 + 10, job, [par(1), kid], producer, version),
                              sample(node, T0 + 20, job, [par(2)], producer, version)])
            row = job_row(f, reader, job)
            near(row.get("cpu_avg"), 11.0 / 3, 0.001, "job %d (%s): (1 + 0 + 10) / 3" % (job, producer))
            check(row.get("cpu_time_s") == 2, "job %d: cpu_time_s is the last counter: %s" % (job, row.get("cpu_time_s")))
            prof = profile(f, reader, row.get("id", 0), "process")
            kid_pts = [x for x in prof if x.get("pid") == 901]
            check(len(kid_pts) == 1 and kid_pts[0]["points"][0]["cpu"] == 0,
                  "job %d: the child's own figure is 0, its time is its parent's: %s" % (job, kid_pts))

        # 4. pid reuse: the counter goes down, a new series starts (no negative, no jump)
        # (a process's CPU after its last sample is seen by no one: `a` ends right after one)
        a = Series(400, 1, "step", 0.6, T0, end=T0 + 19 * STEP + 1)
        b = Series(400, 1, "step", 0.3, T0 + 20 * STEP, born=T0 + 19 * STEP + 5)
        s4 = [a, b]
        post_all(f, tok, envelopes_for("n5", 105, s4, times, rng))
        want = truth(s4, times)
        row = job_row(f, reader, 105)
        near(row.get("cpu_avg"), sum(want) / len(want), 0.01, "job 105 (pid reused) cpu_avg")

        # 5. out of order: the same series as job 101, shuffled, gives the same figures
        rng5 = random.Random(12)
        envs = envelopes_for("n6", 106, s1, times, rng5)
        order = list(range(len(envs)))
        random.Random(5).shuffle(order)
        in_order = job_row(f, reader, 101)
        post_all(f, tok, [envs[i] for i in order])
        row = job_row(f, reader, 106)
        for k in ("cpu_avg", "cpu_peak"):
            check(row.get(k) == in_order.get(k), "out of order %s: %s, in order %s" % (k, row.get(k), in_order.get(k)))
        p_in = profile(f, reader, in_order.get("id", 0), "process")
        p_out = profile(f, reader, row.get("id", 0), "process")
        strip = lambda p: [(x.get("pid"), x.get("points")) for x in p]
        check(strip(p_in) == strip(p_out), "out-of-order profile equals in-order")
    finally:
        f.cleanup()
    finish()


if __name__ == "__main__":
    main()
