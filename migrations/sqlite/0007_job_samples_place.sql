-- 0007_job_samples_place.sql — where a job's node-sample is, kept in its job_samples row.
--
-- A job's profile reads every node-sample of the job in a window and the process rows behind each.
-- Through sample_id alone that costs three seeks per node-sample before the processes: samples (for
-- the node and time), sample_jobs (for the range of process rows), then sample_procs. With the
-- node, the time and the process range copied into job_samples, the profile walks the job's
-- job_samples rows in key order and seeks only into sample_procs (docs/storage.md, "Job profiles").
--
-- node_id and time are the sample's; proc_first and n_procs are those of the sample_jobs row of
-- (sample, job, epoch) the contribution came from: for a job of processes (job 0) that range holds
-- the other processes of the sample's job 0 too, and the profile still picks the job's process
-- by (pid, ppid, cmd). The writer fills all four for every new row; the update below fills them
-- for the rows already stored (fjord migrate up; on a large database it reads every job_samples
-- row once).
ALTER TABLE job_samples ADD COLUMN node_id INTEGER;
ALTER TABLE job_samples ADD COLUMN time INTEGER;
ALTER TABLE job_samples ADD COLUMN proc_first INTEGER;
ALTER TABLE job_samples ADD COLUMN n_procs INTEGER;

UPDATE job_samples
   SET (node_id, time) = (SELECT s.node_id, s.time FROM samples s WHERE s.id = job_samples.sample_id),
       (proc_first, n_procs) = (SELECT sj.proc_first, sj.n_procs
                                  FROM jobs j CROSS JOIN sample_jobs sj
                                    ON sj.sample_id = job_samples.sample_id AND sj.job = j.job
                                   AND sj.epoch = j.epoch
                                 WHERE j.id = job_samples.rjob_id);
