"""PostgreSQL only (FJ_TEST_DB=postgres; exits 77, skipped, otherwise): one fjord server with
several writer connections (the setting `writers`) writes side by side and stays consistent.

- `writers = 3` opens two writer connections more than `writers = 1` (PostgreSQL counts them).
- Many nodes post concurrently, all running one Slurm job, while line-protocol points arrive too
  (only the first writer holds the metrics engine): every upload is committed (200), every
  node-sample stored once, the Slurm job counts every node-sample once, no job_samples row or
  sample job is stored twice, and the answers' inserted counts add up to the rows stored.
- The same sample sent on several connections at once, and so to different writers: one copy is
  inserted, the others are duplicates, also its sample jobs.
- Every point of the line protocol is read back once.
"""
import json
import os
import sys
import threading
import time

from harness import Fjord, check, finish
from test_postgres import SAMPLE, CLUSTER, sample

MBASE = 1700000000

N_NODES, N_SAMPLES, N_POINTS = 12, 6, 40


def fjord_connections(f):
    return f.query("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                   " AND application_name = 'fjord'")[0][0]


def main():
    if not os.environ.get("FJ_TEST_DB", "").startswith("postgres"):
        print("PostgreSQL only (FJ_TEST_DB=postgres)")
        sys.exit(77)
    template = open(SAMPLE).read()
    one = Fjord("--writers", "1").start()
    try:
        secret = one.token(CLUSTER)
        base = fjord_connections(one)
    finally:
        one.stop()
    f = Fjord("--writers", "3", "--metrics-flush-interval", "1s", db=one.db).start()
    try:
        check(fjord_connections(f) == base + 2, "writers = 3: two writer connections more than one writer: %d, %d"
              % (fjord_connections(f), base))
        auth = (CLUSTER, secret)
        results, lock = [], threading.Lock()

        def sender(k):
            for i in range(N_SAMPLES):
                r = f.post("/api/v1/insert/sample", sample(template, "w-%d" % k, i), auth=auth)
                with lock:
                    results.append((k, i, r.status, r.json() if r.status == 200 else r.body[:200]))

        def points():
            for i in range(N_POINTS):
                body = "load_w,cluster=%s,hostname=w-0,type=node value=%d %d\n" % (CLUSTER, i, MBASE + i)
                r = f.post("/api/write?cluster=%s" % CLUSTER, body.encode(), headers={"Content-Type": "text/plain"},
                           auth=auth)
                with lock:
                    results.append(("lp", i, r.status, r.body[:200]))

        def resender():
            r = f.post("/api/v1/insert/sample", sample(template, "resent", 0), auth=auth)
            with lock:
                results.append(("resent", 0, r.status, r.json() if r.status == 200 else r.body[:200]))

        threads = [threading.Thread(target=sender, args=(k,)) for k in range(N_NODES)]
        threads += [threading.Thread(target=points)] + [threading.Thread(target=resender) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        bad = [x for x in results if x[2] not in (200, 204)]
        check(not bad, "every upload committed: %s" % bad[:3])

        rows = f.query("SELECT count(*), count(DISTINCT (node_id, time)) FROM samples")[0]
        check(rows == (N_NODES * N_SAMPLES + 1,) * 2, "every node-sample stored once: %s" % (rows,))
        job = f.query("SELECT count(*), sum(n_samples) FROM jobs WHERE job = 9001 AND epoch = 0")[0]
        check(job == (1, N_NODES * N_SAMPLES + 1), "one Slurm job, every node-sample once: %s" % (job,))
        dup = f.query("SELECT count(*) FROM (SELECT rjob_id, node_id, time FROM job_samples GROUP BY 1, 2, 3"
                      " HAVING count(*) > 1) x")[0][0]
        check(dup == 0, "no job_samples row twice")
        dup = f.query("SELECT count(*) FROM (SELECT node_id, time, job, epoch FROM sample_jobs GROUP BY 1, 2, 3, 4"
                      " HAVING count(*) > 1) x")[0][0]
        check(dup == 0, "no sample job twice")
        resent = [x[3] for x in results if x[0] == "resent"]
        firsts = [r for r in resent if r.get("inserted", 0) > 0]
        check(len(firsts) == 1 and all(r.get("inserted") == 0 and r.get("duplicates") == firsts[0]["inserted"]
                                       for r in resent if r is not firsts[0]),
              "one copy of the sample sent four times at once is inserted: %s"
              % [(r.get("inserted"), r.get("duplicates")) for r in resent])
        inserted = sum(x[3].get("inserted", 0) for x in results if x[0] != "lp")
        stored = sum(f.query("SELECT count(*) FROM %s" % t)[0][0]
                     for t in ("samples", "sample_gpus", "sample_disks", "sample_jobs", "sample_procs",
                               "sample_proc_gpus", "errors"))
        check(inserted == stored, "the answers' inserted counts add up to the rows stored: %d, %d" % (inserted, stored))

        time.sleep(3.5)  # the metric buffers are sealed and committed (flush interval 1 s)
        q = {"cluster": CLUSTER, "from": MBASE, "to": MBASE + N_POINTS,
             "queries": [{"metric": "load_w", "host": "w-0", "resolution": 1}]}
        r = f.request("POST", "/api/query", json.dumps(q), headers={"Content-Type": "application/json"}, auth=auth)
        check(r.status == 200, "metrics read back: %d %s" % (r.status, r.body[:200]))
        got = r.json()["results"][0][0].get("data") if r.status == 200 else None
        check(got == [float(i) for i in range(N_POINTS)], "every point once, in order: %s" % (got,))
        chunks = f.query("SELECT coalesce(sum(count), 0) FROM ts_chunk")[0][0]
        check(chunks == N_POINTS, "every point stored once: %d" % chunks)
    finally:
        f.cleanup()
    finish()


if __name__ == "__main__":
    main()
