"""`retention` (the older setting: both kinds of samples) moves time: Sonar samples of a job three
weeks old and of a job an hour old are posted over HTTP to a real fjord without retention; after a
restart with --retention 2d (retention's first pass runs right after the start, on both backends)
the old raw rows are gone (samples, their jobs, processes, GPUs and disks, job samples,
envelopes) and the recent ones kept, while the old job's summary (/api/v1/jobs, the CPU time and
I/O it read from the process rows included), its activity per node (job_activity_now, what the
problem-jobs report reads) and its node's hourly load (/api/v1/load/nodes, read from the roll-ups)
answer exactly as before, and say that raw data before the horizon expired.
Re-sending an old sample is refused (400, "expired") and changes nothing. On PostgreSQL the old
week's partitions are dropped: three weeks back is past any week boundary a 2-day retention
could leave standing."""
import copy
import json
import time

from api_common import envelope, epoch as parse_rfc, rfc
from harness import Fjord, check, finish, split_envelopes, PG, SHARED
import os

VM0 = "sonar-0.19-output/head-sample-default.json"  # node vm of test.local, with processes
CLUSTER = os.path.join(SHARED, "data", "sonar", "formats-testdata", "newfmt_cluster.json")  # partitions, node states
DAY = 86400
WAIT_S = 30


def sample(base, t, job):
    """The real envelope at time t, its processes all in Slurm job `job`."""
    e = copy.deepcopy(base)
    a = e["data"]["attributes"]
    a["time"] = rfc(t)
    procs = [p for j in a["jobs"] for p in j["processes"]]
    a["jobs"] = [{"job": job, "user": "alice", "epoch": 0, "processes": procs}]
    return e


RAW_OLD = {  # table: rows before the cut (PostgreSQL and SQLite name them alike)
    "samples": "SELECT count(*) FROM samples WHERE time < ?",
    "envelopes": "SELECT count(*) FROM envelopes WHERE time < ?",
    "job_samples": "SELECT count(*) FROM job_samples WHERE time < ?",
    "partition_nodes": "SELECT count(*) FROM partition_nodes WHERE time < ?",
    "node_states": "SELECT count(*) FROM node_states WHERE time < ?",
}


def cluster_env(t):
    """The real cluster envelope (partitions, node states) as test.local's at time t."""
    e = split_envelopes(open(CLUSTER).read())[0]
    e["data"]["attributes"]["cluster"] = "test.local"
    e["data"]["attributes"]["time"] = rfc(t)
    return e


RAW_FIGURES = ("cpu_time_s", "read_kb", "written_kb")  # /api/v1/jobs reads these from process rows


def strip(jobs):
    return [{k: v for k, v in j.items() if k not in RAW_FIGURES} for j in jobs]


def raw_old(f, cut):
    return {k: f.query(q, cut)[0][0] for k, q in RAW_OLD.items()}


ACTIVITY = "SELECT rjob_id, node_id, first_time, last_time, cpu_busy_last, gpu_busy_last FROM job_activity_now" \
    " ORDER BY rjob_id, node_id"


def children(f):
    """Rows of the tables below samples (on SQLite they carry no time of their own)."""
    return {t: f.query("SELECT count(*) FROM %s" % t)[0][0] for t in ("sample_jobs", "sample_procs", "sample_disks")}


def main():
    base = envelope(VM0)
    now = int(time.time())
    old = now - 21 * DAY
    old -= old % 3600  # the old job's samples fill one hour: its roll-up is complete
    new = now - 3600
    olds = [old + 60 * i for i in range(5)]
    news = [new + 60 * i for i in range(5)]

    f = Fjord()
    token = f.token("test.local")
    reader = f.token("reader", "--read-only")
    f.start()
    try:
        for t in olds:
            r = f.post("/api/v1/ingest/sonar", json.dumps(sample(base, t, 111)), auth=("test.local", token))
            check(r.status == 200, "old sample: %d %s" % (r.status, r.body[:200]))
        for t in (old, new):
            r = f.post("/api/v1/ingest/sonar", json.dumps(cluster_env(t)), auth=("test.local", token))
            check(r.status == 200, "cluster envelope: %d %s" % (r.status, r.body[:200]))
        for t in news:
            r = f.post("/api/v1/ingest/sonar", json.dumps(sample(base, t, 222)), auth=("test.local", token))
            check(r.status == 200, "new sample: %d %s" % (r.status, r.body[:200]))

        def get(path):
            r = f.get(path, auth=("reader", reader))
            check(r.status == 200, "GET %s: %d %s" % (path, r.status, r.body[:200]))
            return r.json() if r.status == 200 else {}

        jobs_q = "/api/v1/jobs?cluster=test.local&from=%s&to=%s" % (rfc(old - DAY), rfc(now + 60))
        load_q = "/api/v1/load/nodes?cluster=test.local&from=%s&to=%s&bucket=1h" % (rfc(old), rfc(old + 3600))
        jobs_before = get(jobs_q).get("jobs", [])
        load_before = get(load_q).get("load", [])
        check(sorted(j.get("job") for j in jobs_before) == [111, 222], "both jobs listed: %s" % jobs_before)
        check(load_before and load_before[0].get("points"), "the old hour has load: %s" % load_before)

        cut = now - 2 * DAY
        before = raw_old(f, cut)
        check(all(n > 0 for n in before.values()), "old raw rows stored before retention: %s" % before)
        kids_before = children(f)
        recent_before = {k: f.query(q.replace("<", ">="), cut)[0][0] for k, q in RAW_OLD.items()}
        partitions_before = f.query("SELECT count(*) FROM partitions")[0][0]
        # when each job was last busy and last seen per node (the problem-jobs report's rows): on
        # SQLite the writer leaves job_activity's last_time behind while job_samples hold it
        # (migration 0017), so retention must fold it in before it deletes them
        activity_before = f.query(ACTIVITY)
        check(len(activity_before) == 2, "job activity of both jobs: %s" % activity_before)
        if not PG:
            stored = f.query("SELECT rjob_id, node_id, last_time FROM job_activity ORDER BY rjob_id, node_id")
            check(any(s[2] < a[3] for s, a in zip(stored, activity_before)),
                  "the writer left a stored last_time behind: %s %s" % (stored, activity_before))
        check(f.stop() == 0, "SIGTERM exits 0")

        # A fresh process on the same database: retention's first pass starts right away.
        f2 = Fjord("--retention", "2d", db=f.db, tmp=f.tmp)
        f2.start()
        f = f2
        deadline = time.time() + WAIT_S
        after = raw_old(f, cut)
        while any(after.values()) and time.time() < deadline:
            time.sleep(0.2)
            after = raw_old(f, cut)
        check(not any(after.values()), "old raw rows deleted within %d s: %s" % (WAIT_S, after))
        kept = f.query("SELECT count(*) FROM samples WHERE time >= ?", cut)[0][0]
        check(kept == len(news), "recent samples kept: %d, want %d" % (kept, len(news)))
        recent = {k: f.query(q.replace("<", ">="), cut)[0][0] for k, q in RAW_OLD.items()}
        check(recent == recent_before and all(recent.values()), "recent rows kept: %s, want %s" % (recent, recent_before))
        partitions = f.query("SELECT count(*) FROM partitions")[0][0]
        check(partitions == partitions_before, "partition sizes kept: %d of %d" % (partitions, partitions_before))
        kids = children(f)
        # the old and new samples carried the same processes and disks: half of each go
        for t, n in kids.items():
            check(n * 2 == kids_before[t] and n > 0, "%s: %d rows left of %d" % (t, n, kids_before[t]))
        if not PG:
            orphans = f.query("SELECT count(*) FROM job_samples js LEFT JOIN samples s ON s.id = js.sample_id "
                              "WHERE s.id IS NULL")[0][0]
            check(orphans == 0, "no job sample names a deleted sample: %d" % orphans)

        answer = get(jobs_q)
        jobs_after = answer.get("jobs", [])
        # CPU time and I/O come from the raw process rows: retention kept them in the job's
        # summary before the rows went, so every figure answers as before
        old_after = [j for j in jobs_after if j.get("job") == 111]
        check(len(old_after) == 1, "the old job is still listed")
        check(all(j.get(k) is not None for j in jobs_before for k in RAW_FIGURES), "figures known before")
        check(jobs_after == jobs_before,
              "job summaries outlive the raw rows:\n%s\nwant\n%s" % (jobs_after, jobs_before))
        # the answer says that raw rows before the horizon are gone (the process samples' cut)
        horizon = answer.get("raw_expired_before")
        check(isinstance(horizon, str) and cut - 10 <= parse_rfc(horizon) <= time.time() - 2 * DAY + 10
              if not PG else isinstance(horizon, str) and parse_rfc(horizon) <= cut,
              "the job list names the horizon: %s (cut %s)" % (horizon, rfc(cut)))
        recent_q = "/api/v1/jobs?cluster=test.local&from=%s" % rfc(new - 60)
        check(get(recent_q).get("raw_expired_before", "absent") is None,
              "a window after the horizon has nothing expired: %s" % get(recent_q))
        check(f.query(ACTIVITY) == activity_before,
              "job activity outlives the raw rows: %s, want %s" % (f.query(ACTIVITY), activity_before))
        load_answer = get(load_q)
        load_after = load_answer.get("load", [])
        check(load_after == load_before, "hourly load outlives the raw rows:\n%s\nwant\n%s" % (load_after, load_before))
        check(isinstance(load_answer.get("raw_expired_before"), str),
              "node load over the old hour names the horizon: %s" % load_answer.get("raw_expired_before"))

        # Re-sending an old sample adds nothing: its raw rows are gone, so it is refused rather
        # than counted into the old job a second time; the bulk path says which envelope and why.
        r = f.post("/api/v1/ingest/sonar", json.dumps(sample(base, olds[-1], 111)), auth=("test.local", token))
        err = r.json().get("items", [{}])[0].get("error", {}) if r.status == 400 else {}
        check(r.status == 400 and err.get("code") == "expired" and err.get("path") == "data.attributes.time"
              and "retention-process-samples" in err.get("message", ""),
              "a re-sent expired sample is refused: %d %s" % (r.status, r.body[:300]))
        r = f.post("/api/v1/insert/sample", json.dumps(sample(base, olds[0], 111)), auth=("test.local", token))
        check(r.status == 400 and r.json().get("error", {}).get("code") == "expired",
              "also on the insert path: %d %s" % (r.status, r.body[:300]))
        check(get(jobs_q).get("jobs", []) == jobs_before, "the old job's summary is unchanged by the re-sent samples")
        check(raw_old(f, cut) == {k: 0 for k in RAW_OLD}, "nothing old was stored again")
        check(f.stop() == 0, "SIGTERM exits 0")
    finally:
        f.cleanup()
    finish()


if __name__ == "__main__":
    main()
