-- 0009_retention.sql — retention per kind of raw data (docs/storage.md, "Retention").
--
-- retention_marks: per kind ('process_samples', 'node_samples', 'errors', 'slurm'), the time before
-- which retention has deleted its raw rows; only ever moves forward. Queries over earlier times
-- say so in their answer (raw_expired_before, docs/api.md).
--
-- job_hosts keeps what the job list read from a host's raw process rows (the processes'
-- cumulative CPU time and I/O in the job's last sample on the host): retention writes it, and sets
-- usage_kept, before that sample's rows go, so the job's cpu_time_s, read_kb and written_kb
-- outlive them. The partial index finds the hosts not yet done.
--
-- slurm_jobs_current_time finds the job steps whose latest record is older than retention-slurm.
CREATE TABLE retention_marks (
    kind TEXT PRIMARY KEY,
    expired_before INTEGER NOT NULL
) WITHOUT ROWID;

ALTER TABLE job_hosts ADD COLUMN usage_kept INTEGER NOT NULL DEFAULT 0;
ALTER TABLE job_hosts ADD COLUMN cpu_time_s INTEGER;
ALTER TABLE job_hosts ADD COLUMN read_kb INTEGER;
ALTER TABLE job_hosts ADD COLUMN written_kb INTEGER;
CREATE INDEX job_hosts_usage_todo ON job_hosts (rjob_id) WHERE usage_kept = 0;

CREATE INDEX slurm_jobs_current_time ON slurm_jobs_current (time);
