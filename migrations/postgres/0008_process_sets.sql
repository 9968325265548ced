-- 0008_process_sets.sql — a node-sample's processes in one row of arrays, not a row each.
--
-- sample_procs held one row per process of every sample: some 190 bytes each on disk (a 24-byte
-- tuple header and item pointer, 19 fixed-width columns, an index entry), against SQLite's ~40.
-- sample_proc_sets holds the processes of a node-sample's new sample jobs in one row, one array a
-- column in the same order (element i of every array is one process); PostgreSQL compresses
-- such rows (TOAST, pglz), so a process costs a few tens of bytes. A re-sent sample that adds a
-- sample job adds a second row for the same (node_id, time): rows are not unique by node-sample,
-- sample_jobs' key keeps processes from being stored twice, as before.
--
-- sample_procs stays, as a view that unnests the arrays, with the columns it had: the shared
-- queries, the job CPU upkeep and people at the psql prompt read it as before. A filter on node_id
-- and time reaches the table's index; one on job, epoch or pid picks elements of the rows found.
CREATE TABLE sample_proc_sets (
    node_id bigint NOT NULL,
    time bigint NOT NULL,
    job bigint[] NOT NULL,
    epoch bigint[] NOT NULL,
    seq integer[] NOT NULL,
    pid bigint[] NOT NULL,
    ppid bigint[] NOT NULL,
    cmd_id bigint[] NOT NULL,
    resident_kb bigint[] NOT NULL,
    virtual_kb bigint[] NOT NULL,
    num_threads bigint[] NOT NULL,
    cpu_avg_m bigint[] NOT NULL,
    cpu_util_m bigint[] NOT NULL,
    cpu_time bigint[] NOT NULL,
    data_read_kb bigint[] NOT NULL,
    data_written_kb bigint[] NOT NULL,
    data_cancelled_kb bigint[] NOT NULL,
    rolledup bigint[] NOT NULL,
    flags integer[] NOT NULL
) PARTITION BY RANGE (time);
CREATE INDEX sample_proc_sets_node_time ON sample_proc_sets (node_id, time);

-- The week partitions of every week that has processes (the others get theirs as before: the
-- writer creates all tables' partitions of a week together).
DO $$
DECLARE
    ws bigint;
BEGIN
    FOR ws IN SELECT DISTINCT time - ((time - 345600) % 604800 + 604800) % 604800 FROM sample_procs LOOP
        PERFORM fj_ensure_partitions(ws);
    END LOOP;
END $$;
-- ... and of every week that has a partition of another table already (created ahead).
DO $$
DECLARE
    ws bigint;
BEGIN
    FOR ws IN SELECT DISTINCT extract(epoch FROM to_date(substring(c.relname FROM '_w([0-9]{8})$'), 'YYYYMMDD')::timestamp)::bigint
              FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
              WHERE c.relnamespace = current_schema()::regnamespace AND c.relname ~ '^samples_w[0-9]{8}$' LOOP
        PERFORM fj_ensure_partitions(ws);
    END LOOP;
END $$;

INSERT INTO sample_proc_sets
SELECT node_id, time,
       array_agg(job ORDER BY job, epoch, seq), array_agg(epoch ORDER BY job, epoch, seq),
       array_agg(seq ORDER BY job, epoch, seq), array_agg(pid ORDER BY job, epoch, seq),
       array_agg(ppid ORDER BY job, epoch, seq), array_agg(cmd_id ORDER BY job, epoch, seq),
       array_agg(resident_kb ORDER BY job, epoch, seq), array_agg(virtual_kb ORDER BY job, epoch, seq),
       array_agg(num_threads ORDER BY job, epoch, seq), array_agg(cpu_avg_m ORDER BY job, epoch, seq),
       array_agg(cpu_util_m ORDER BY job, epoch, seq), array_agg(cpu_time ORDER BY job, epoch, seq),
       array_agg(data_read_kb ORDER BY job, epoch, seq), array_agg(data_written_kb ORDER BY job, epoch, seq),
       array_agg(data_cancelled_kb ORDER BY job, epoch, seq), array_agg(rolledup ORDER BY job, epoch, seq),
       array_agg(flags ORDER BY job, epoch, seq)
FROM sample_procs GROUP BY node_id, time;

DROP VIEW IF EXISTS v_processes;
DROP TABLE sample_procs;

CREATE VIEW sample_procs AS
SELECT s.node_id, s.time, p.job, p.epoch, p.seq, p.pid, p.ppid, p.cmd_id, p.resident_kb, p.virtual_kb,
       p.num_threads, p.cpu_avg_m, p.cpu_util_m, p.cpu_time, p.data_read_kb, p.data_written_kb,
       p.data_cancelled_kb, p.rolledup, p.flags
FROM sample_proc_sets s
CROSS JOIN LATERAL unnest(s.job, s.epoch, s.seq, s.pid, s.ppid, s.cmd_id, s.resident_kb, s.virtual_kb,
                          s.num_threads, s.cpu_avg_m, s.cpu_util_m, s.cpu_time, s.data_read_kb,
                          s.data_written_kb, s.data_cancelled_kb, s.rolledup, s.flags)
    AS p(job, epoch, seq, pid, ppid, cmd_id, resident_kb, virtual_kb, num_threads, cpu_avg_m, cpu_util_m,
         cpu_time, data_read_kb, data_written_kb, data_cancelled_kb, rolledup, flags);

-- As in 0001, over the view.
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

-- Job summaries are updated in place at every sample of their job: room on each page lets those
-- updates stay on the page (HOT, no new index entries; no indexed column changes) instead of
-- leaving a dead row and an index entry behind each time.
ALTER TABLE jobs SET (fillfactor = 70);
