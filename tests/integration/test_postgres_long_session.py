"""PostgreSQL only (FJ_TEST_DB=postgres; exits 77, skipped, otherwise): one writer connection over
many write groups keeps every row right while what it remembers between groups turns over
(storage/pg/write.c): the session's statements are prepared again every 256 groups, the staging
tables truncated every 64, and the (job, host) and (job, command) pairs it has committed are not
sent again.

- 320 samples, each its own group (one writer, posted one after the other): 32 nodes x 10
  samples of the real ML-node envelope with Slurm job 9001 added, whose process runs a different
  command on every fourth sample: every upload committed, every node-sample stored once.
- job_hosts is exactly the (job, node) pairs of job_samples, job_cmds exactly the (job, command)
  pairs of the stored processes (Slurm and other non-zero jobs): nothing lost because a pair was
  remembered, nothing added twice.
- The roll-ups: one load_hourly row per node and hour with samples.
- Everything sent again adds nothing.
"""
import os
import sys

from harness import Fjord, check, finish
from test_postgres import SAMPLE, CLUSTER, sample

N_NODES, N_SAMPLES = 32, 10


def varied(template, node, i):
    """The sample with the Slurm job's process running command solver-<i // 4>."""
    return sample(template, node, i).replace('"cmd": "solver"', '"cmd": "solver-%d"' % (i // 4))


def counts(f):
    return f.query("SELECT (SELECT count(*) FROM samples), (SELECT count(*) FROM job_samples),"
                   " (SELECT count(*) FROM job_hosts), (SELECT count(*) FROM job_cmds),"
                   " (SELECT count(*) FROM sample_procs), (SELECT count(*) FROM jobs)")[0]


def main():
    if not os.environ.get("FJ_TEST_DB", "").startswith("postgres"):
        print("PostgreSQL only (FJ_TEST_DB=postgres)")
        sys.exit(77)
    template = open(SAMPLE).read()
    f = Fjord("--writers", "1")
    secret = f.token(CLUSTER)
    f.start()
    try:
        auth = (CLUSTER, secret)
        bad = []
        for i in range(N_SAMPLES):
            for k in range(N_NODES):
                r = f.post("/api/v1/insert/sample", varied(template, "long-%d" % k, i), auth=auth)
                if r.status != 200:
                    bad.append((k, i, r.status, r.body[:200]))
        check(not bad, "every upload committed: %s" % bad[:3])
        stored = counts(f)
        check(stored[0] == N_NODES * N_SAMPLES, "every node-sample stored once: %s" % (stored,))

        hosts = f.query("SELECT rjob_id, node_id FROM job_hosts ORDER BY 1, 2")
        truth = f.query("SELECT DISTINCT rjob_id, node_id FROM job_samples ORDER BY 1, 2")
        check(hosts == truth, "job_hosts: the (job, node) pairs of job_samples: %d, %d"
              % (len(hosts), len(truth)))
        cmds = f.query("SELECT c.rjob_id, c.cmd_id FROM job_cmds c JOIN jobs j ON j.id = c.rjob_id"
                       " WHERE j.job <> 0 ORDER BY 1, 2")
        truth = f.query("SELECT DISTINCT j.id, p.cmd_id FROM jobs j JOIN job_samples js ON js.rjob_id = j.id"
                        " JOIN sample_procs p ON p.node_id = js.node_id AND p.time = js.time AND p.job = j.job"
                        " AND p.epoch = j.epoch WHERE j.job <> 0 ORDER BY 1, 2")
        check(cmds == truth, "job_cmds: the (job, command) pairs of the stored processes: %d, %d"
              % (len(cmds), len(truth)))
        slurm = f.query("SELECT count(*) FROM job_cmds c JOIN jobs j ON j.id = c.rjob_id"
                        " WHERE j.job = 9001 AND j.epoch = 0")[0][0]
        check(slurm == (N_SAMPLES + 3) // 4, "the Slurm job's commands: %d" % slurm)
        hours = f.query("SELECT count(*), count(DISTINCT (node_id, hour)) FROM load_hourly")[0]
        truth = f.query("SELECT count(DISTINCT (node_id, time - time % 3600)) FROM samples")[0][0]
        check(hours == (truth, truth), "one roll-up per node and hour with samples: %s, %d" % (hours, truth))

        for i in range(N_SAMPLES):
            for k in range(0, N_NODES, 3):
                r = f.post("/api/v1/insert/sample", varied(template, "long-%d" % k, i), auth=auth)
                if r.status != 200 or r.json().get("inserted") != 0:
                    bad.append((k, i, r.status, r.body[:200]))
        check(not bad, "re-sent samples: 200, nothing inserted: %s" % bad[:3])
        check(counts(f) == stored, "re-sending adds no row: %s, %s" % (counts(f), stored))
    finally:
        f.stop()
    finish()


if __name__ == "__main__":
    main()
