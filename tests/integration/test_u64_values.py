"""Unsigned 64-bit values are stored and answered exactly, or refused with 400 naming the field;
never changed. SQLite's and PostgreSQL's integers are signed 64-bit, so 2^63-1 is the largest value
fjord keeps: it must come back digit for digit (not 9.223372036854776e+18), and 2^63 and 2^64-1 are
refused — cc-backend's start_job and stop_job (jobId, times, counts; its job ids are int64 too), the
same payloads as line-protocol job events, and Sonar envelopes (job ids, CPU times, counters)."""
import copy
import json
import os

from harness import Fjord, check, finish, SHARED

MAX = 2 ** 63 - 1
TOO_BIG = (2 ** 63, 2 ** 64 - 1)
START = json.load(open(os.path.join(SHARED, "data", "cc", "cc-backend_startJobPayload.json")))


def post(f, path, obj, auth):
    return f.post(path, json.dumps(obj), auth=auth)


def error_path(r):
    try:
        return r.json()["error"].get("path")
    except Exception:
        return None


def cc_jobs(f, token):
    r = f.get("/api/v1/cc/jobs?cluster=fritz&from=1&to=%d&limit=100" % MAX, auth=token)
    check(r.status == 200, "cc jobs listed (%d %s)" % (r.status, r.body[:200]))
    return r.body, (r.json()["jobs"] if r.status == 200 else [])


def cc_checks(f, fritz):
    before = f.query("SELECT count(*) FROM cc_jobs")[0][0]
    for field in ("jobId", "startTime", "numNodes", "numHwthreads", "numAcc"):
        for v in TOO_BIG:
            job = dict(START, jobId=4711)
            job[field] = v
            r = post(f, "/api/jobs/start_job/", job, fritz)
            check(r.status == 400 and error_path(r) == field and str(v) in r.body,
                  "start_job with %s %d: 400 naming it (%d %s)" % (field, v, r.status, r.body))
    r = post(f, "/api/jobs/stop_job/", {"jobId": 2 ** 64 - 1, "cluster": "fritz", "stopTime": 1649730000}, fritz)
    check(r.status == 400 and error_path(r) == "jobId", "stop_job with jobId 2^64-1: 400 (%d %s)" % (r.status, r.body))
    # the same payload as a line-protocol job event is a bad line, not a job -1
    ev = json.dumps(dict(START, jobId=2 ** 64 - 1)).replace("\\", "\\\\").replace('"', '\\"')
    r = f.post("/api/write?cluster=fritz", ('job,function=start_job event="%s" 1649723812\n' % ev).encode(),
               headers={"Content-Type": "text/plain"}, auth=fritz)
    check(r.status == 400 and "jobId" in r.body, "start_job event with jobId 2^64-1: a bad line (%d %s)" % (r.status, r.body))
    check(f.query("SELECT count(*) FROM cc_jobs")[0][0] == before, "nothing refused was stored")

    # 2^63-1 is kept and answered exactly
    r = post(f, "/api/jobs/start_job/", dict(START, jobId=MAX, numHwthreads=MAX), fritz)
    check(r.status == 201, "start_job with jobId 2^63-1: 201 (%d %s)" % (r.status, r.body))
    body, jobs = cc_jobs(f, fritz)
    mine = [j for j in jobs if j["jobId"] == MAX]
    check(len(mine) == 1 and '"jobId":%d' % MAX in body, "jobId 2^63-1 answered digit for digit: %s" % body[:400])
    check(not any(j["jobId"] < 0 for j in jobs), "no negative job id: %s" % body[:400])
    r = post(f, "/api/jobs/stop_job/", {"jobId": MAX, "cluster": "fritz", "startTime": START["startTime"],
                                        "stopTime": START["startTime"] + 60}, fritz)
    check(r.status == 200 and r.json().get("jobId") == MAX and '"jobId":%d' % MAX in r.body,
          "stop_job answers jobId 2^63-1 exactly (%d %s)" % (r.status, r.body))


def sample(job, cpu_time, cpus, stats):
    return {"meta": {"producer": "sonar", "version": "0.18.0"},
            "data": {"type": "sample", "attributes": {
                "time": "2025-11-25T10:52:00Z", "cluster": "fox.educloud.no", "node": "c1-10.fox",
                "system": {"cpus": cpus, "disks": [{"name": "sda", "major": 8, "minor": 0, "stats": stats}],
                           "used_memory": 100},
                "jobs": [{"job": job, "user": "alice", "epoch": 0,
                          "processes": [{"pid": 1000, "cmd": "python", "cpu_avg": 1.5, "cpu_time": cpu_time}]}]}}}


def sonar_checks(f, fox):
    before = f.row_counts()
    cases = [("job", lambda v: sample(v, 5, [1, 2], [1, 2, 3]), "data.attributes.jobs[0].job"),
             ("cpu_time", lambda v: sample(7, v, [1, 2], [1, 2, 3]), "data.attributes.jobs[0].processes[0].cpu_time"),
             ("cpus", lambda v: sample(7, 5, [1, v], [1, 2, 3]), "data.attributes.system.cpus[1]"),
             ("disk stats", lambda v: sample(7, 5, [1, 2], [1, v, 3]), "data.attributes.system.disks[0].stats[1]")]
    for name, make, path in cases:
        for v in TOO_BIG:
            r = post(f, "/api/v1/insert/sample", make(v), ("fox.educloud.no", fox))
            check(r.status == 400 and error_path(r) == path and str(v) in r.body,
                  "Sonar %s %d: 400 naming %s (%d %s)" % (name, v, path, r.status, r.body[:300]))
    after = f.row_counts()
    changed = {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)}
    check(all("error" in k or "note" in k or k in ("clusters", "nodes") for k in changed),
          "refused envelopes stored no data rows: %s" % changed)

    # 2^63-1 is stored as an integer and answered digit for digit
    r = post(f, "/api/v1/insert/sample", sample(MAX, MAX, [1, MAX], [1, MAX, 3]), ("fox.educloud.no", fox))
    check(r.status in (200, 201), "Sonar sample with 2^63-1 values accepted (%d %s)" % (r.status, r.body[:300]))
    r = f.get("/api/v1/jobs?cluster=fox.educloud.no&from=2025-11-25T00:00:00Z&to=2025-11-26T00:00:00Z", auth=fox)
    job = r.json()["jobs"][0] if r.status == 200 and r.json()["jobs"] else {}
    check(job.get("job") == MAX and '"job":%d,' % MAX in r.body,
          "the job list answers job 2^63-1 digit for digit (%d %s)" % (r.status, r.body[:300]))
    rows = f.query("SELECT cpu_time FROM sample_procs WHERE pid = 1000")
    check(rows == [(MAX,)], "cpu_time 2^63-1 stored as that integer: %s" % rows)


def main():
    f = Fjord()
    try:
        fritz = f.token("fritz")
        fox = f.token("fox.educloud.no")
        f.start()
        cc_checks(f, fritz)
        sonar_checks(f, fox)
        # and after a restart, from the database alone
        check(f.stop() == 0, "clean stop")
        f.start()
        body, jobs = cc_jobs(f, fritz)
        check(any(j["jobId"] == MAX for j in jobs), "jobId 2^63-1 after a restart: %s" % body[:300])
    finally:
        f.cleanup()
    finish()


if __name__ == "__main__":
    main()
