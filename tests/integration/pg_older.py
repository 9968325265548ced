"""Undoing PostgreSQL migrations, for the tests that put a database back as an older fjord left it
and check that `fjord migrate up` brings it forward with every answer the same.

Latest first:
undo_jobs_last_day(f) undoes 0013 (jobs indexed on the day of their last sample): the column
last_day goes, the index on last_seen is back, job_activity's pages are filled again.
undo_sample_job_sets(f) undoes 0012 (sample jobs in sample_proc_sets' arrays): sample_jobs is a
partitioned table again with the same rows, v_processes reads it, and the rows of
sample_proc_sets that held only sample jobs go. Run it before undoing anything older.
"""

SAMPLE_JOBS_TABLE = """
CREATE TABLE sample_jobs (
    node_id bigint NOT NULL, time bigint NOT NULL, job bigint NOT NULL, epoch bigint NOT NULL,
    user_id bigint, n_procs bigint NOT NULL,
    PRIMARY KEY (node_id, time, job, epoch)
) PARTITION BY RANGE (time);
"""

# v_processes as 0001 and 0008 made it: over the table sample_jobs (0012 made that a view).
V_PROCESSES = """
CREATE VIEW v_processes AS
SELECT c.name AS cluster, n.name AS node, s.time AS time, to_timestamp(s.time) AT TIME ZONE 'UTC' AS time_utc,
       sj.job, sj.epoch, u.s AS "user", p.pid, p.ppid, cmd.s AS cmd,
       p.resident_kb, p.virtual_kb, p.num_threads, (p.cpu_avg_m / 1000.0)::float8 AS cpu_avg,
       (p.cpu_util_m / 1000.0)::float8 AS cpu_util, p.cpu_time, p.data_read_kb, p.data_written_kb,
       p.data_cancelled_kb, p.rolledup, p.flags & 1 AS in_container, (p.flags >> 1) & 1 AS synthetic_pid,
       p.seq
FROM sample_jobs sj
JOIN samples s ON s.node_id = sj.node_id AND s.time = sj.time
JOIN nodes n ON n.id = s.node_id
JOIN clusters c ON c.id = n.cluster_id
LEFT JOIN strings u ON u.id = sj.user_id
JOIN sample_procs p ON p.node_id = sj.node_id AND p.time = sj.time AND p.job = sj.job AND p.epoch = sj.epoch
LEFT JOIN strings cmd ON cmd.id = p.cmd_id;
"""


def undo_sample_job_sets(f):
    weeks = f.query("SELECT DISTINCT time - ((time - 345600) % 604800 + 604800) % 604800 FROM sample_jobs")
    f.execute("CREATE TABLE sample_jobs_kept AS SELECT * FROM sample_jobs;"
              "DROP VIEW v_processes; DROP VIEW sample_jobs;"
              "DELETE FROM sample_proc_sets WHERE cardinality(pid) = 0;"
              "ALTER TABLE sample_proc_sets DROP COLUMN sj_job, DROP COLUMN sj_epoch, DROP COLUMN sj_user_id,"
              " DROP COLUMN sj_n_procs;" + SAMPLE_JOBS_TABLE)
    for (ws,) in weeks:
        f.execute("SELECT fj_ensure_partitions(%d)" % ws)
    f.execute("INSERT INTO sample_jobs SELECT * FROM sample_jobs_kept; DROP TABLE sample_jobs_kept;" + V_PROCESSES)


def undo_jobs_last_day(f):
    f.execute("ALTER TABLE jobs DROP COLUMN last_day; CREATE INDEX jobs_last_seen ON jobs (cluster_id, last_seen);"
              "ALTER TABLE job_activity RESET (fillfactor);")
