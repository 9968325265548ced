"""The job CPU figures a writer computes from what it keeps in memory (a running job's samples in
order) equal what it computes from the stored rows (docs/storage.md, "Job CPU"): a mixed workload
is posted to a real fjord (jobs on several nodes, a job on two nodes, lone processes of job 0,
cadences of 10 s to 5 min, children that come and go, a pid reused, fjord-push and Sonar, bulk
bodies and single envelopes, a restart in the middle, samples that arrive late, a re-sent body, a
late sample that bridges two instances of a lone process so that they merge). Then every (job, node)
is listed in job_cpu_todo, which the next write transaction recomputes from the stored rows alone:
no node-sample figure, candidate or job summary may change."""
import json
import random

from api_common import rfc
from harness import Fjord, check, finish

T0 = 1_700_000_000
CLUSTER = "mem.test"


def proc(pid, ppid, cmd, cpu_s, rate, threads=1):
    r = {"pid": pid, "ppid": ppid, "cmd": cmd, "resident_memory": 1000, "cpu_avg": round(100 * rate, 2),
         "cpu_util": round(100 * rate * 1.1, 2)}
    if threads > 1:
        r["num_threads"] = threads - 1
    if int(cpu_s) > 0:
        r["cpu_time"] = int(cpu_s)  # Sonar omits zero values
    return r


def envelope(node, t, jobs, producer):
    return {"meta": {"producer": producer, "version": "0.19.0"},
            "data": {"type": "sample", "attributes": {
                "time": rfc(t), "cluster": CLUSTER, "node": node,
                "jobs": [{"job": j, "user": "u%d" % (j % 3), "epoch": 0 if j else T0 - 86400, "processes": ps}
                         for j, ps in jobs]}}}


def node_envelopes(node, step, count, job_ids, rng, producer="sonar", start=T0):
    """count samples of node every step seconds: per job a parent and children that come and go (one
    pid reused with a counter reset), plus two lone processes of job 0."""
    envs = []
    born = {}
    for k in range(count):
        t = start + k * step
        jobs = []
        for j in job_ids:
            ps = []
            rate = 0.2 + (j % 5) * 0.15
            ps.append(proc(1000 + j, 1, "main%d" % j, (t - start + 600) * rate, rate, threads=1 + j % 3))
            for c in range(3):
                pid = 5000 + j * 10 + c
                if rng.random() < 0.6:  # alive in this sample
                    b = born.setdefault(pid, t - rng.randint(1, step))
                    ps.append(proc(pid, 1000 + j, "worker", (t - b) * 0.9, 0.9))
                else:
                    born.pop(pid, None)  # reaped: a later one with this pid starts a new series
            jobs.append((j, ps))
        jobs.append((0, [proc(7000, 1, "sshd", (t - start) * 0.01 + 3, 0.01),
                         proc(7001, 1, "cron", 0, 0.0)]))
        envs.append(envelope(node, t, jobs, producer))
    return envs


def post(f, tok, envs):
    body = "\n".join(json.dumps(e) for e in envs)
    r = f.post("/api/v1/ingest/sonar", body, auth=(CLUSTER, tok))
    check(r.status == 200, "post: %d %s" % (r.status, r.body[:300]))


def snapshot(f):
    samples = f.query("SELECT rjob_id, node_id, time, cpu_m, cpu_win_m FROM job_samples "
                      "ORDER BY rjob_id, node_id, time")
    jobs = f.query("SELECT id, cpu_sum_m, cpu_peak_m, cpu_win_peak_m FROM jobs ORDER BY id")
    return samples, jobs


def differences(a, b):
    return [(x, y) for x, y in zip(a, b) if x != y] + ([("count", len(a), len(b))] if len(a) != len(b) else [])


def main():
    f = Fjord()
    try:
        tok = f.token(CLUSTER)
        f.start()
        rng = random.Random(29)
        streams = {
            "n1": node_envelopes("n1", 30, 30, [11, 12, 99], rng),
            "n2": node_envelopes("n2", 30, 30, [21, 99], rng),       # job 99 runs on n1 and n2
            "n3": node_envelopes("n3", 10, 60, [31, 32], rng, "fjord-push"),
            "n4": node_envelopes("n4", 300, 8, [41], rng),
        }
        late = [streams["n1"].pop(17), streams["n3"].pop(40), streams["n4"].pop(3)]
        # a lone process seen, then 7 h later again: two instances, until a sample between arrives
        lone = [envelope("n5", T0 + dt, [(0, [proc(8000, 1, "daemon", 50 + dt * 0.05, 0.05)])], "sonar")
                for dt in (0, 60, 120, 7 * 3600, 7 * 3600 + 60)]
        bridge = envelope("n5", T0 + 3 * 3600 + 1800, [(0, [proc(8000, 1, "daemon", 50 + 12600 * 0.05, 0.05)])],
                          "sonar")
        post(f, tok, lone)

        # in order, interleaved across nodes; half in bulk bodies, half one by one
        merged = sorted((e for s in streams.values() for e in s), key=lambda e: e["data"]["attributes"]["time"])
        half = len(merged) // 2
        for i in range(0, half, 7):
            post(f, tok, merged[i:i + 7])
        f.stop()
        f.start()  # what the writer kept is gone: the next samples are read against stored rows
        for e in merged[half:]:
            post(f, tok, [e])
        post(f, tok, merged[half:half + 5])  # re-sent: adds nothing
        for e in late:
            post(f, tok, [e])
        post(f, tok, [bridge])
        check(len(f.query("SELECT id FROM jobs WHERE pid = 8000")) == 1, "the bridged lone process merged")

        if not f.db.startswith("postgres"):
            wrong = f.query("SELECT count(*) FROM jobs WHERE last_day IS NOT last_seen / 86400")[0][0]
            check(wrong == 0, "jobs.last_day follows last_seen across midnight: %d rows differ" % wrong)
            days = f.query("SELECT count(DISTINCT last_day) FROM jobs")[0][0]
            check(days >= 2, "the workload's jobs end on two days at least: %d" % days)
        before = snapshot(f)
        check(len(before[0]) > 300, "node-samples stored: %d" % len(before[0]))
        check(any(r[4] is not None for r in before[0]), "some node-samples have a peak candidate")
        f.execute("INSERT INTO job_cpu_todo (rjob_id, node_id) SELECT DISTINCT rjob_id, node_id FROM job_samples")
        # any write transaction works the list off; this one touches a node of its own
        post(f, tok, [envelope("n9", T0, [(1, [proc(1, 0, "init", 5, 0.1)])], "sonar")])
        check(not f.query("SELECT 1 FROM job_cpu_todo"), "the recompute list was worked off")
        after = snapshot(f)
        node9 = {r[0] for r in f.query("SELECT id FROM nodes WHERE name = 'n9'")}
        job9 = {r[0] for r in f.query("SELECT rjob_id FROM job_samples WHERE node_id IN (SELECT id FROM nodes "
                                      "WHERE name = 'n9')")}
        after = ([r for r in after[0] if r[1] not in node9], [r for r in after[1] if r[0] not in job9])
        d = differences(before[0], after[0])
        check(not d, "node-sample figures equal the recompute from stored rows: %s" % d[:5])
        d = differences(before[1], after[1])
        check(not d, "job CPU summaries equal the recompute from stored rows: %s" % d[:5])
        print("%d node-samples, %d jobs: memory and stored rows agree" % (len(before[0]), len(before[1])))
    finally:
        f.cleanup()
    finish()


if __name__ == "__main__":
    main()
