"""PostgreSQL only (FJ_TEST_DB=postgres; exits 77, skipped, otherwise): migrations 0008 and 0012
pack the process and sample-job rows of a database an older fjord left into sample_proc_sets, and
every answer stays.

Real ML-node samples are posted at several times (with a Slurm job added, and one sample re-sent
with a sample job more, which gives its node-sample a second row of processes); the answers that
read processes (job list, job details, profiles by host and by process) and every process row are
recorded. The database is then put back as fjord left it before 0008 (sample_procs and sample_jobs
partitioned tables with a row per process and per sample job), `fjord migrate up` runs, and the
answers and rows must be the same; new samples after the migration are written and counted, and
re-sent ones are duplicates, also a re-send that adds a sample job after the migration.
"""
import datetime
import json
import os
import sys

import harness
from harness import Fjord, SHARED, check, finish, run_cli
from pg_older import V_PROCESSES, undo_jobs_last_day, undo_sample_job_sets

CLUSTER = "mlx.hpc.uio.no"
NODES = ("ml1", "ml2", "ml3")
BASE = datetime.datetime(2026, 3, 2, 8, 0, 0, tzinfo=datetime.timezone.utc)
T0 = int(BASE.timestamp())
PG_SETS_VERSION = 8

# The table as migrations/postgres/0001_init.sql made it.
OLD_TABLE = """
CREATE TABLE sample_procs (
    node_id bigint NOT NULL, time bigint NOT NULL, job bigint NOT NULL, epoch bigint NOT NULL,
    seq integer NOT NULL, pid bigint NOT NULL, ppid bigint NOT NULL, cmd_id bigint NOT NULL,
    resident_kb bigint, virtual_kb bigint, num_threads bigint, cpu_avg_m bigint, cpu_util_m bigint,
    cpu_time bigint, data_read_kb bigint, data_written_kb bigint, data_cancelled_kb bigint,
    rolledup bigint, flags integer
) PARTITION BY RANGE (time);
CREATE INDEX sample_procs_node_time ON sample_procs (node_id, time);
"""
PROC_COLS = ("node_id, time, job, epoch, seq, pid, ppid, cmd_id, resident_kb, virtual_kb, num_threads, cpu_avg_m,"
             " cpu_util_m, cpu_time, data_read_kb, data_written_kb, data_cancelled_kb, rolledup, flags")


def sample(node, i, extra_job=False):
    """The real sample of node as its i-th (a minute apart), with Slurm job 9001 (and 9002)."""
    env = json.load(open(os.path.join(SHARED, "data", "sonar", "real", "0+sample-%s.hpc.uio.no.json" % node)))
    a = env["data"]["attributes"]
    a["time"] = (BASE + datetime.timedelta(minutes=i)).strftime("%Y-%m-%dT%H:%M:%SZ")
    a["jobs"].append({"job": 9001, "user": "alice", "epoch": 0,
                      "processes": [{"pid": 4242, "ppid": 1, "cmd": "solver", "resident_memory": 100 + i,
                                     "cpu_util": 99.5, "cpu_time": 10 + 60 * i, "num_threads": 3},
                                    {"pid": 4243, "ppid": 4242, "cmd": "helper", "resident_memory": 50,
                                     "cpu_util": 12.5, "cpu_time": 5 + 7 * i}]})
    if extra_job:
        a["jobs"].append({"job": 9002, "user": "bob", "epoch": 0,
                          "processes": [{"pid": 777, "ppid": 1, "cmd": "late", "cpu_time": 3}]})
    return json.dumps(env)


def answers(f, reader):
    """What the API answers from process rows, and the rows themselves."""
    auth = ("reader", reader)
    out = {}
    q = "cluster=%s&from=%d&to=%d" % (CLUSTER, T0 - 3600, T0 + 7200)
    r = f.get("/api/v1/jobs?%s&limit=1000" % q, auth=auth)
    check(r.status == 200, "jobs: %d %s" % (r.status, r.body[:200]))
    out["jobs"] = r.body
    jobs = r.json().get("jobs", []) if r.status == 200 else []
    check(any(j.get("job") == 9001 for j in jobs), "Slurm job 9001 listed")
    picks = [j for j in jobs if j.get("job") in (9001, 9002)] + [j for j in jobs if j.get("job") == 0][:3]
    for j in picks:
        for path in ("/api/v1/jobs/%d?cluster=%s" % (j["id"], CLUSTER),
                     "/api/v1/jobs/%d/profile?cluster=%s&bucket=60&by=host" % (j["id"], CLUSTER),
                     "/api/v1/jobs/%d/profile?cluster=%s&bucket=60&by=process" % (j["id"], CLUSTER)):
            r = f.get(path, auth=auth)
            check(r.status == 200, "%s: %d %s" % (path, r.status, r.body[:200]))
            out[path] = r.body
    out["rows"] = f.query("SELECT %s FROM sample_procs ORDER BY node_id, time, job, epoch, seq" % PROC_COLS)
    out["sample_jobs"] = f.query("SELECT * FROM sample_jobs ORDER BY node_id, time, job, epoch")
    out["v_processes"] = f.query("SELECT * FROM v_processes ORDER BY node, time, job, epoch, seq")
    out["job_gpu_activity"] = f.query("SELECT * FROM job_gpu_activity ORDER BY rjob_id, node_id, card")
    return out


def to_older(f):
    """The schema as fjord left it before migration 0008, with the same rows."""
    undo_jobs_last_day(f)
    undo_sample_job_sets(f)
    weeks = f.query("SELECT DISTINCT time - ((time - 345600) % 604800 + 604800) % 604800 FROM sample_procs")
    # job_activity (0009) and job_gpu_activity (0010, 0011) came after: their tables, triggers and
    # functions go too (and 0014's view of job_activity, 0015's alloc_gpus), and 0009 to 0018 make them again
    # the later migrations first, latest first: 0018's load_daily, 0017's field types, 0016's energy_mj
    f.execute("DROP TABLE load_daily; DROP TABLE ts_strings, ts_string_chunk; ALTER TABLE ts_series DROP COLUMN ftype;"
              "ALTER TABLE sample_gpus DROP COLUMN energy_mj;")
    f.execute("ALTER TABLE slurm_jobs_current DROP COLUMN alloc_gpus; DROP VIEW job_activity_now;")
    f.execute("DROP TRIGGER job_gpu_activity_insert ON job_samples; DROP TRIGGER job_gpu_activity_move ON job_samples;"
              "DROP TRIGGER job_gpu_activity_job_gone ON jobs; DROP FUNCTION fj_job_gpu_activity_note();"
              "DROP FUNCTION fj_job_gpu_activity_job_gone(); DROP FUNCTION fj_job_gpu_activity_note_rows();"
              "DROP TABLE job_gpu_activity;")
    f.execute("DROP TRIGGER job_activity_insert ON job_samples; DROP TRIGGER job_activity_update ON job_samples;"
              "DROP TRIGGER job_activity_job_gone ON jobs; DROP FUNCTION fj_job_activity_note();"
              "DROP FUNCTION fj_job_activity_job_gone(); DROP FUNCTION fj_job_activity_note_rows();"
              "DROP TABLE job_activity; DROP INDEX jobs_last_seen;")
    f.execute("CREATE TABLE procs_kept AS SELECT %s FROM sample_procs;"
              "DROP VIEW v_processes; DROP VIEW sample_procs; DROP TABLE sample_proc_sets;" % PROC_COLS
              + OLD_TABLE)
    for (ws,) in weeks:
        f.execute("SELECT fj_ensure_partitions(%d)" % ws)
    f.execute("INSERT INTO sample_procs SELECT * FROM procs_kept; DROP TABLE procs_kept;" + V_PROCESSES
              + "ALTER TABLE jobs RESET (fillfactor);"
              "DELETE FROM schema_migrations WHERE version >= %d;" % PG_SETS_VERSION)


def post(f, tok, body, what):
    r = f.post("/api/v1/ingest/sonar", body, auth=(CLUSTER, tok))
    check(r.status == 200, "%s: %d %s" % (what, r.status, r.body[:200]))
    items = r.json().get("items", []) if r.status == 200 else []
    return items[0].get("envelope", {}) if items else {}


def main():
    if not os.environ.get("FJ_TEST_DB", "").startswith("postgres"):
        print("PostgreSQL only (FJ_TEST_DB=postgres)")
        sys.exit(77)
    f = Fjord()
    try:
        tok = f.token(CLUSTER)
        reader = f.token("reader", "--read-only")
        f.start()
        for i in range(6):
            for node in NODES:
                post(f, tok, sample(node, i), "sample %s %d" % (node, i))
        # a re-send with one sample job more: that job's processes are a second row of the node-sample
        r = post(f, tok, sample("ml1", 2, extra_job=True), "re-send with a new job")
        check(r.get("inserted") == 2, "only the new sample job and its process are inserted: %s" % r)
        sets = f.query("SELECT count(*), count(DISTINCT (node_id, time)) FROM sample_proc_sets")[0]
        check(sets == (len(NODES) * 6 + 1, len(NODES) * 6), "a row per node-sample, two for the re-sent: %s"
              % (sets,))
        before = answers(f, reader)
        check(len(before["rows"]) > 100 * len(NODES) * 6, "process rows read back: %d" % len(before["rows"]))
        check(f.stop() == 0, "SIGTERM exits 0")

        to_older(f)
        check(f.query("SELECT count(*) FROM pg_class WHERE relname IN ('sample_procs', 'sample_jobs')"
                      " AND relkind = 'p'")[0][0] == 2,
              "the older schema: sample_procs and sample_jobs are partitioned tables")
        check(f.query("SELECT count(*) FROM sample_jobs")[0][0] == len(before["sample_jobs"]),
              "the older schema holds every sample job")
        r = run_cli("serve", "--db", f.db, "--listen", "127.0.0.1:0", check_rc=False)
        check(r.returncode != 0 and "fjord migrate up" in r.stderr, "the older schema is refused: %r" % r.stderr[-200:])
        out = run_cli("migrate", "up", db=f.db).stdout
        check("applied " in out, "migrate up applies the process sets: %r" % out)
        check(f.query("SELECT relkind FROM pg_class WHERE relname IN ('sample_procs', 'sample_jobs')") == [("v",), ("v",)],
              "sample_procs and sample_jobs are views after the migration")
        sets = f.query("SELECT count(*), count(DISTINCT (node_id, time)) FROM sample_proc_sets")[0]
        check(sets == (len(NODES) * 6, len(NODES) * 6), "the migration packs a row per node-sample: %s" % (sets,))
        f.start()
        after = answers(f, reader)
        for k in before:
            check(after.get(k) == before[k], "%s: the same after the migration" % k)

        # writing goes on: new samples are counted, re-sent ones are duplicates
        r = post(f, tok, sample("ml2", 7), "a new sample after the migration")
        n_new = r.get("inserted", 0)
        check(n_new > 100, "a new sample's rows are inserted: %s" % r)
        r = post(f, tok, sample("ml2", 7), "the same sample again")
        check(r.get("inserted") == 0 and r.get("duplicates", 0) == n_new, "a re-send adds nothing: %s" % r)
        check(f.query("SELECT count(*) FROM sample_procs")[0][0] > len(before["rows"]), "its processes are stored")
        n_sj = f.query("SELECT count(*) FROM sample_jobs")[0][0]
        r = post(f, tok, sample("ml2", 7, extra_job=True), "a re-send with a new job after the migration")
        check(r.get("inserted") == 2 and r.get("duplicates") == n_new, "only the new job and its process: %s" % r)
        r = post(f, tok, sample("ml2", 7, extra_job=True), "that re-send again")
        check(r.get("inserted") == 0, "the added job is stored once: %s" % r)
        check(f.query("SELECT count(*) FROM sample_jobs")[0][0] == n_sj + 1, "one sample job more")
        check(f.query("SELECT count(*) FROM (SELECT node_id, time, job, epoch FROM sample_jobs GROUP BY 1, 2, 3, 4"
                      " HAVING count(*) > 1) d")[0][0] == 0, "no sample job stored twice")
    finally:
        f.cleanup()
    finish()


if __name__ == "__main__":
    main()
