-- 0012_sample_jobs_in_sets.sql — a node-sample's sample jobs in its sample_proc_sets row, not a
-- row each.
--
-- sample_jobs held one row per (node-sample, job, epoch): some 160 bytes on disk each (tuple
-- header, six bigints, a four-column key index), as much as the processes of the job once they
-- were packed (0008). The sample jobs now go in four more arrays of the sample_proc_sets row that
-- holds their processes (element i of every sj_ array is one sample job); a sample job without
-- stored processes is in a row with empty process arrays. A re-sent sample that adds sample jobs
-- adds a row with them, as for processes; the writer keeps a sample job from being stored twice
-- (storage/pg/write.c: a new node-sample's sample jobs are new, and for a re-sent one it reads
-- those stored, under the lock of the samples row).
--
-- sample_jobs stays, as a view that unnests the arrays, with the columns it had.
ALTER TABLE sample_proc_sets ADD COLUMN sj_job bigint[] NOT NULL DEFAULT '{}',
                             ADD COLUMN sj_epoch bigint[] NOT NULL DEFAULT '{}',
                             ADD COLUMN sj_user_id bigint[] NOT NULL DEFAULT '{}',
                             ADD COLUMN sj_n_procs bigint[] NOT NULL DEFAULT '{}';

-- The stored sample jobs go into a row of their node-sample (of several, the first found), or
-- into a row of their own, with no processes, where the node-sample has none.
CREATE TEMPORARY TABLE sj_agg ON COMMIT DROP AS
SELECT node_id, time, array_agg(job ORDER BY job, epoch) AS job, array_agg(epoch ORDER BY job, epoch) AS epoch,
       array_agg(user_id ORDER BY job, epoch) AS user_id, array_agg(n_procs ORDER BY job, epoch) AS n_procs
  FROM sample_jobs GROUP BY node_id, time;

UPDATE sample_proc_sets s
   SET sj_job = a.job, sj_epoch = a.epoch, sj_user_id = a.user_id, sj_n_procs = a.n_procs
  FROM sj_agg a,
       (SELECT DISTINCT ON (node_id, time) node_id, time, ctid FROM sample_proc_sets ORDER BY node_id, time, ctid) f
 WHERE f.node_id = a.node_id AND f.time = a.time AND s.node_id = f.node_id AND s.time = f.time AND s.ctid = f.ctid;

INSERT INTO sample_proc_sets (node_id, time, job, epoch, seq, pid, ppid, cmd_id, resident_kb, virtual_kb,
                              num_threads, cpu_avg_m, cpu_util_m, cpu_time, data_read_kb, data_written_kb,
                              data_cancelled_kb, rolledup, flags, sj_job, sj_epoch, sj_user_id, sj_n_procs)
SELECT node_id, time, '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}',
       '{}', job, epoch, user_id, n_procs
  FROM sj_agg a
 WHERE NOT EXISTS (SELECT 1 FROM sample_proc_sets x WHERE x.node_id = a.node_id AND x.time = a.time);

DROP VIEW v_processes;
DROP TABLE sample_jobs;

CREATE VIEW sample_jobs AS
SELECT s.node_id, s.time, j.job, j.epoch, j.user_id, j.n_procs
FROM sample_proc_sets s
CROSS JOIN LATERAL unnest(s.sj_job, s.sj_epoch, s.sj_user_id, s.sj_n_procs) AS j(job, epoch, user_id, n_procs);

-- As in 0008, over the view.
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
