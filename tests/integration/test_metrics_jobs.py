"""ClusterCockpit jobs: cc-backend's REST job API (POST /api/jobs/start_job/, /api/jobs/stop_job/) with
its payloads and answers (201, 200 with the job, 422 duplicate start / stop of a stopped job, 404
unknown job, 400 stop before start or bad payload, 401 other cluster), and the two line-protocol forms
of job events (`job,function=start_job event="{json}"` and measurement start_job/stop_job)."""
import json
import os
import time
from datetime import datetime

from harness import Fjord, check, finish, SHARED

START = json.load(open(os.path.join(SHARED, "data", "cc", "cc-backend_startJobPayload.json")))
STOP = json.load(open(os.path.join(SHARED, "data", "cc", "cc-backend_stopJobPayload.json")))


def post(f, path, obj, auth):
    return f.post(path, json.dumps(obj), auth=auth)


def cc_job(f, job_id):
    return f.query("SELECT start_time, stop_time, state, c.user, project, num_nodes, hosts FROM cc_jobs c "
                   "JOIN clusters k ON k.id=c.cluster_id WHERE k.name='fritz' AND job_id=?", job_id)


def lp_event(measurement, tags, payload, ts):
    esc = json.dumps(payload).replace("\\", "\\\\").replace('"', '\\"')
    return ('%s%s event="%s" %d\n' % (measurement, tags, esc, ts)).encode()


def main():
    f = Fjord()
    try:
        fritz = f.token("fritz")
        other = f.token("other")
        f.start()
        r = post(f, "/api/jobs/start_job/", START, fritz)
        check(r.status == 201, "start_job: 201 (%d %s)" % (r.status, r.body))
        check(r.json().get("msg") == "success" and r.json().get("id", 0) > 0, "answer names the new job: %s" % r.body)
        rows = cc_job(f, 123000)
        check(rows == [(1649723812, None, "running", "k106eb10", "k106eb", 1, '["f0726"]')], "stored as running: %s" % rows)
        r = post(f, "/api/jobs/start_job/", START, fritz)
        check(r.status == 422, "duplicate start: 422 (%d %s)" % (r.status, r.body))
        later = dict(START, startTime=START["startTime"] + 3600)
        r = post(f, "/api/jobs/start_job/", later, fritz)
        check(r.status == 422, "same job id started less than a day later: 422 (%d)" % r.status)
        r = post(f, "/api/jobs/start_job", dict(START, cluster="other"), fritz)
        check(r.status == 401, "start for another cluster: 401 (%d)" % r.status)
        bad = dict(START)
        del bad["resources"]
        r = post(f, "/api/jobs/start_job/", bad, fritz)
        check(r.status == 400 and "resources" in r.body, "start without resources: 400 (%d %s)" % (r.status, r.body))
        r = f.post("/api/jobs/start_job/", "{oops", auth=fritz)
        check(r.status == 400, "bad JSON: 400 (%d)" % r.status)

        early = dict(STOP, stopTime=START["startTime"] - 10)
        r = post(f, "/api/jobs/stop_job/", early, fritz)
        check(r.status == 400, "stop before start: 400 (%d %s)" % (r.status, r.body))
        r = post(f, "/api/jobs/stop_job/", STOP, fritz)
        check(r.status == 200, "stop_job: 200 (%d %s)" % (r.status, r.body))
        j = r.json()
        check(j.get("jobId") == 123000 and j.get("jobState") == "completed" and
              j.get("duration") == STOP["stopTime"] - START["startTime"], "answer is the stopped job: %s" % r.body)
        check(cc_job(f, 123000)[0][1:3] == (1649763839, "completed"), "stored as completed")
        r = post(f, "/api/jobs/stop_job/", STOP, fritz)
        check(r.status == 422, "stop of a job not running: 422 (%d %s)" % (r.status, r.body))
        r = post(f, "/api/jobs/stop_job/", dict(STOP, jobId=999), fritz)
        check(r.status == 404, "stop of an unknown job: 404 as cc-backend (%d)" % r.status)
        r = post(f, "/api/jobs/stop_job/", dict(STOP, jobState="exploded"), fritz)
        check(r.status == 400, "invalid jobState: 400 (%d)" % r.status)
        r = post(f, "/api/jobs/stop_job/", STOP, other)
        check(r.status == 401, "stop for another cluster: 401 (%d)" % r.status)
        # without startTime the latest start of the job is stopped
        s2 = dict(START, jobId=5, startTime=1700000000)
        check(post(f, "/api/jobs/start_job/", s2, fritz).status == 201, "start job 5")
        r = post(f, "/api/jobs/stop_job/", {"jobId": 5, "cluster": "fritz", "stopTime": 1700000600, "jobState": "failed"},
                 fritz)
        check(r.status == 200 and r.json()["jobState"] == "failed" and r.json()["startTime"] == 1700000000,
              "stop without startTime: %s" % r.body)

        # line-protocol job events, both forms; the events are also kept as events
        p1 = dict(START, jobId=69, startTime=1738800000)
        body = lp_event("job", ",hostname=mngmt02,type=node,function=start_job", p1, 1740027951)
        body += lp_event("stop_job", ",hostname=mngmt02", {"jobId": 69, "cluster": "fritz", "stopTime": 1738842306,
                                                           "jobState": "completed"}, 1740027952)
        body += lp_event("start_job", "", dict(START, jobId=70, startTime=1738800000), 1740027953)
        r = f.post("/api/write?cluster=fritz", body, headers={"Content-Type": "text/plain"}, auth=fritz)
        check(r.status == 200, "job events accepted (%d %s)" % (r.status, r.body))
        check(cc_job(f, 69)[0][1:3] == (1738842306, "completed"), "job,function=start_job then stop_job: %s" % cc_job(f, 69))
        check(cc_job(f, 70)[0][2] == "running", "measurement start_job")
        r = f.get("/api/v1/events?cluster=fritz&kind=event", auth=fritz)
        check(len(r.json()["events"]) == 3, "job events are listed as events too")
        r = f.post("/api/write?cluster=fritz", b'job,function=start_job event="{broken" 1740027951\n',
                   headers={"Content-Type": "text/plain"}, auth=fritz)
        check(r.status == 400 and "job event payload" in r.body, "a bad job payload is a bad line (%d)" % r.status)

        rows = f.query("SELECT count(*) FROM cc_jobs")
        check(rows[0][0] == 4, "four cc jobs stored: %s" % rows)
        r = f.get("/api/v1/cc/jobs?cluster=fritz", auth=fritz)
        jobs = r.json()["jobs"]
        check([j["jobId"] for j in jobs] == [123000, 5, 69, 70], "cc jobs listed oldest first: %s" % r.body[:300])
        check(jobs[0]["jobState"] == "completed" and jobs[0]["hosts"] == ["f0726"] and jobs[0]["sonar"] is None,
              "listing fields; no Sonar data for this job: %s" % jobs[0])
        r = f.get("/api/v1/cc/jobs?cluster=fritz&from=1700000000", auth=fritz)
        check([j["jobId"] for j in r.json()["jobs"]] == [5, 69, 70], "from: jobs running at or after it (%s)" % r.body[:200])
        check(f.get("/api/v1/cc/jobs?cluster=fritz", auth=other).status == 403, "another cluster's jobs: 403")

        # joined with Sonar's Slurm jobs of the same (cluster, job id)
        sample = json.load(open(os.path.join(SHARED, "data", "sonar", "real", "0+sample-ml1.hpc.uio.no.json")))
        attrs = sample["data"]["attributes"]
        cluster, job = attrs["cluster"], attrs["jobs"][0]["job"]
        attrs["jobs"][0]["epoch"] = 0  # a Slurm job
        old_job, lone_job = attrs["jobs"][1]["job"], attrs["jobs"][2]["job"]
        attrs["jobs"][1]["epoch"] = attrs["jobs"][2]["epoch"] = 0  # Slurm jobs too
        seen = int(datetime.fromisoformat(attrs["time"]).timestamp())  # the job's only sample
        mlx = f.token(cluster)
        time.sleep(2.5)  # the server re-reads credentials every 2 s
        r = f.post("/api/v1/insert/sample", json.dumps(sample), auth=(cluster, mlx))
        check(r.status == 200, "Sonar sample with a Slurm job: %d %s" % (r.status, r.body[:200]))
        r = post(f, "/api/jobs/start_job/", dict(START, cluster=cluster, jobId=job, startTime=1764060000), mlx)
        check(r.status == 201, "cc start of the same job: %d %s" % (r.status, r.body))
        cc_id = r.json().get("id")
        r = f.get("/api/v1/cc/jobs?cluster=" + cluster, auth=mlx)
        j = r.json()["jobs"][0]
        check(j["jobId"] == job and j["sonar"] and j["sonar"]["samples"] >= 1 and j["sonar"]["instances"] == 1,
              "the cc job carries its Sonar job: %s" % j)

        # ... and the other way: the Sonar job's detail carries its cc job. Slurm started the job
        # (cc startTime) before Sonar's first sample of it, so the cc job joins by overlapping runs.
        r = post(f, "/api/jobs/stop_job/", {"jobId": job, "cluster": cluster, "stopTime": seen + 600,
                                            "jobState": "failed"}, mlx)
        check(r.status == 200, "cc stop of the joined job: %d %s" % (r.status, r.body))
        # job ids are reused: a later run of the id (started after the Sonar job's last sample) is not
        # this Sonar job's, nor is an earlier run that stopped before its first sample
        r = post(f, "/api/jobs/start_job/", dict(START, cluster=cluster, jobId=job, startTime=seen + 2 * 86400), mlx)
        check(r.status == 201, "a later start of the job id: %d %s" % (r.status, r.body))
        r = post(f, "/api/jobs/start_job/", dict(START, cluster=cluster, jobId=old_job, startTime=seen - 3 * 86400), mlx)
        check(r.status == 201, "an earlier run of another job id: %d %s" % (r.status, r.body))
        r = post(f, "/api/jobs/stop_job/", {"jobId": old_job, "cluster": cluster, "stopTime": seen - 2 * 86400}, mlx)
        check(r.status == 200, "stop of the earlier run: %d %s" % (r.status, r.body))

        def detail(job_id):
            r = f.get("/api/v1/jobs?cluster=%s&job=%d" % (cluster, job_id), auth=mlx)
            rows = r.json()["jobs"] if r.status == 200 else []
            check(len(rows) == 1, "one Sonar job %d: %d %s" % (job_id, r.status, r.body[:300]))
            r = f.get("/api/v1/jobs/%d?cluster=%s" % (rows[0]["id"], cluster), auth=mlx)
            check(r.status == 200, "job detail of %d: %d %s" % (job_id, r.status, r.body[:300]))
            return rows[0], r.json()["job"]

        row, d = detail(job)
        want = {"id": cc_id, "jobId": job, "startTime": 1764060000, "stopTime": seen + 600, "jobState": "failed",
                "user": "k106eb10", "project": "k106eb", "partition": "main", "subCluster": "main", "numNodes": 1,
                "numHwthreads": 72, "numAcc": 0, "hosts": ["f0726"]}
        check(d.get("clustercockpit") == want, "the job detail carries its cc job: %s" % d.get("clustercockpit"))
        # the list leaves the join out (it cost measurably): docs/api.md
        check(not [k for k in row if k.startswith("c") and k not in ("cluster", "commands", "cpu_avg", "cpu_peak",
                                                                      "cpu_time_s", "co2e_kg", "cpu_eff")],
              "the job list carries no cc fields: %s" % sorted(row))
        check({k: v for k, v in d.items() if k != "clustercockpit"} == row, "the detail's other fields are the list's")
        for other, why in ((old_job, "a cc run that stopped before the job's first sample"), (lone_job, "no cc job")):
            _, d = detail(other)
            check("clustercockpit" in d and d["clustercockpit"] is None, "%s: null (%s)" % (why, d.get("clustercockpit")))
        r = f.get("/api/v1/jobs/%d?cluster=%s&format=csv" % (row["id"], cluster), auth=mlx)
        head, line = r.body.split("\r\n")[:2]
        check(head.split(",")[-1] == "clustercockpit" and '""jobState"":""failed""' in line,
              "CSV: the object as JSON text in the last column: %s" % line[-200:])
        check(f.stop() == 0, "clean stop")
    finally:
        f.cleanup()
    finish()


if __name__ == "__main__":
    main()
