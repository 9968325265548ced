"""Retention per kind of raw data moves time on both backends: samples (with processes), error
records and Slurm job records ten days old and an hour old are posted over HTTP to a real fjord
without retention; restarted with --retention-process-samples 2d --retention-node-samples 30d
--retention-errors 2d --retention-slurm 2d, its first pass deletes the old processes and job
samples but keeps the old node samples (their load still answers at one-minute buckets), deletes
the old errors and the old Slurm job step, and keeps everything recent. retention_marks records
each kind's horizon, and the answers say where raw data expired (raw_expired_before). The old
job keeps every figure, the CPU time and I/O read from its process rows included. Old records
of each kind are refused with a reason naming the setting. Settings that contradict each other
are refused when the server starts."""
import json
import os
import time

from api_common import envelope, epoch, rfc
from harness import Fjord, check, finish, run_cli, split_envelopes, PG, SHARED
from test_retention import VM0, sample

SLURM = os.path.join(SHARED, "data", "sonar", "formats-testdata", "newfmt_slurmjobs.json")
DAY = 86400
WAIT_S = 30


def slurm_env(t, job_id):
    """The real Slurm job envelope as test.local's at time t, its jobs renumbered from job_id."""
    e = split_envelopes(open(SLURM).read())[0]
    a = e["data"]["attributes"]
    a["cluster"] = "test.local"
    a["time"] = rfc(t)
    for i, j in enumerate(a["slurm_jobs"]):
        j["job_id"] = job_id + i
    return e


def error_env(t, detail):
    e = [x for x in split_envelopes(open(SLURM).read()) if "errors" in x][0]
    e["errors"][0].update({"cluster": "test.local", "node": "vm", "time": rfc(t), "detail": detail})
    return e


def count(f, sql, *args):
    return f.query(sql, *args)[0][0]


def main():
    base = envelope(VM0)
    now = int(time.time())
    old = now - 10 * DAY
    old -= old % 3600
    new = now - 3600
    olds = [old + 60 * i for i in range(5)]
    news = [new + 60 * i for i in range(5)]
    cut = now - 2 * DAY

    f = Fjord()
    token = f.token("test.local")
    reader = f.token("reader", "--read-only")
    f.start()
    try:
        def post(env):
            return f.post("/api/v1/ingest/sonar", json.dumps(env), auth=("test.local", token))

        for t in olds:
            check(post(sample(base, t, 111)).status == 200, "old sample stored")
        for t in news:
            check(post(sample(base, t, 222)).status == 200, "new sample stored")
        for t, jid, what in ((old, 1000, "old"), (new, 2000, "new")):
            r = post(slurm_env(t, jid))
            check(r.status == 200, "%s Slurm envelope: %d %s" % (what, r.status, r.body[:200]))
            r = post(error_env(t, "%s trouble" % what))
            check(r.status == 200, "%s error envelope: %d %s" % (what, r.status, r.body[:200]))

        def get(path):
            r = f.get(path, auth=("reader", reader))
            check(r.status == 200, "GET %s: %d %s" % (path, r.status, r.body[:200]))
            return r.json() if r.status == 200 else {}

        jobs_q = "/api/v1/jobs?cluster=test.local&from=%s&to=%s" % (rfc(old - DAY), rfc(now + 60))
        fine_q = "/api/v1/load/nodes?cluster=test.local&from=%s&to=%s&bucket=60" % (rfc(old), rfc(old + 600))
        jobs_before = get(jobs_q).get("jobs", [])
        fine_before = get(fine_q).get("load", [])
        check(sorted(j.get("job") for j in jobs_before) == [111, 222], "both jobs listed: %s" % jobs_before)
        check(fine_before and len(fine_before[0].get("points", [])) == len(olds), "one-minute load: %s" % fine_before)
        old_procs = count(f, "SELECT count(*) FROM job_samples WHERE time < ?", cut)
        check(old_procs > 0, "old job samples stored")
        errors_before = count(f, "SELECT count(*) FROM errors")
        slurm_before = count(f, "SELECT count(*) FROM slurm_jobs_current WHERE time < ?", cut)
        check(errors_before >= 2 and slurm_before > 0, "errors %d, old Slurm steps %d" % (errors_before, slurm_before))
        check(f.stop() == 0, "SIGTERM exits 0")

        f2 = Fjord("--retention-process-samples", "2d", "--retention-node-samples", "30d", "--retention-errors", "2d",
                   "--retention-slurm", "2d", db=f.db, tmp=f.tmp)
        f2.start()
        f = f2

        def old_rows():
            return {
                "job_samples": count(f, "SELECT count(*) FROM job_samples WHERE time < ?", cut),
                "sample_jobs": count(f, "SELECT count(*) FROM sample_jobs sj JOIN samples s ON s.id = sj.sample_id "
                                        "WHERE s.time < ?" if not PG else
                                        "SELECT count(*) FROM sample_jobs WHERE time < ?", cut),
                "errors": count(f, "SELECT count(*) FROM errors WHERE time < ?", cut),
                "slurm_jobs_current": count(f, "SELECT count(*) FROM slurm_jobs_current WHERE time < ?", cut),
                "slurm_jobs": count(f, "SELECT count(*) FROM slurm_jobs WHERE time < ?", cut),
            }
        deadline = time.time() + WAIT_S
        gone = old_rows()
        while any(gone.values()) and time.time() < deadline:
            time.sleep(0.2)
            gone = old_rows()
        check(not any(gone.values()), "old processes, errors and Slurm steps deleted: %s" % gone)
        check(count(f, "SELECT count(*) FROM samples WHERE time < ?", cut) == len(olds),
              "old node samples kept (retention-node-samples 30d)")
        check(count(f, "SELECT count(*) FROM job_samples WHERE time >= ?", cut) > 0, "recent job samples kept")
        check(count(f, "SELECT count(*) FROM errors WHERE time >= ?", cut) >= 1, "recent error kept")
        check(count(f, "SELECT count(*) FROM slurm_jobs_current WHERE time >= ?", cut) > 0, "recent Slurm step kept")
        check(count(f, "SELECT count(*) FROM slurm_job_nodes n WHERE n.job_id < 2000") == 0,
              "the old steps' nodes deleted")
        marks = dict(f.query("SELECT kind, expired_before FROM retention_marks"))
        check(sorted(marks) == ["errors", "node_samples", "process_samples", "slurm"], "marks: %s" % marks)
        check(all(abs(marks[k] - cut) < 60 for k in ("errors", "slurm")), "row-wise marks at the cut: %s" % marks)
        if PG:  # whole weeks: the start of the week holding the cut
            check(marks["process_samples"] <= cut and cut - marks["process_samples"] < 7 * DAY,
                  "process mark at a week start before the cut: %s" % marks)
        else:
            check(abs(marks["process_samples"] - cut) < 60, "process mark at the cut: %s" % marks)

        answer = get(jobs_q)
        check(answer.get("jobs") == jobs_before, "jobs answer as before:\n%s\nwant\n%s" % (answer.get("jobs"), jobs_before))
        check(answer.get("raw_expired_before") == rfc(marks["process_samples"]),
              "the job list names the process samples' horizon: %s" % answer.get("raw_expired_before"))
        fine = get(fine_q)
        check(fine.get("load") == fine_before, "node samples kept: one-minute load as before")
        check(fine.get("raw_expired_before") is None, "nothing of the node samples expired: %s" % fine)
        errs = get("/api/v1/errors?cluster=test.local&from=%s" % rfc(old - DAY))
        check([e.get("detail") for e in errs.get("errors", [])] == ["new trouble"] and
              errs.get("raw_expired_before") == rfc(marks["errors"]), "errors: %s" % errs)

        # old records of each kind are refused, naming the setting; nothing is stored again
        for env, setting in ((sample(base, olds[0], 111), "retention-process-samples"),
                             (error_env(old, "old trouble"), "retention-errors"),
                             (slurm_env(old, 1000), "retention-slurm")):
            r = post(env)
            e = r.json().get("items", [{}])[0].get("error", {}) if r.status == 400 else {}
            check(r.status == 400 and e.get("code") == "expired" and setting in e.get("message", ""),
                  "old record refused naming %s: %d %s" % (setting, r.status, r.body[:300]))
        check(not any(old_rows().values()), "nothing old stored again: %s" % old_rows())
        check(get(jobs_q).get("jobs") == jobs_before, "the old job's summary is unchanged")
        check(f.stop() == 0, "SIGTERM exits 0")

        # settings that cannot hold are refused at start, naming the setting
        for args, name in ((["--retention-process-samples", "40d", "--retention-node-samples", "30d"],
                            "retention-process-samples"),
                           (["--retention-process-samples", "0", "--retention", "30d"], "retention-process-samples"),
                           (["--metrics-retention", "7d", "--retention-metrics", "8d"], "retention-metrics")):
            p = run_cli("serve", "--listen", "127.0.0.1:0", *args, db=f.db, check_rc=False)
            check(p.returncode != 0 and name in p.stderr, "%s refused: %d %s" % (args, p.returncode, p.stderr))
        # the older names still work: retention sets both sample kinds (test_retention.py), and
        # metrics-retention agrees with retention-metrics when both say the same
        p = run_cli("serve", "--help", check_rc=False)
        for name in ("retention-process-samples", "retention-node-samples", "retention-errors", "retention-slurm",
                     "retention-metrics", "metrics-retention", "--retention "):
            check(name in p.stdout, "serve --help lists %s" % name)
    finally:
        f.cleanup()
    finish()


if __name__ == "__main__":
    main()
