-- 0007_retention.sql — retention per kind of raw data (docs/storage.md, "Retention"), as
-- migrations/sqlite/0009_retention.sql: retention_marks, the job_hosts columns that keep what the
-- job list read from raw process rows, the index of Slurm steps by their latest time.
--
-- fj_drop_partitions_by drops the week partitions of the tables named in proc_tables (the process
-- samples) that end at or before proc_horizon, and those of every other partitioned table but
-- load_hourly (the node samples) that end at or before node_horizon; a NULL horizon drops none.
-- A partitioned table added later counts as node samples until it is named.
CREATE TABLE retention_marks (
    kind text PRIMARY KEY,
    expired_before bigint NOT NULL
);

ALTER TABLE job_hosts ADD COLUMN usage_kept bigint NOT NULL DEFAULT 0,
                      ADD COLUMN cpu_time_s bigint,
                      ADD COLUMN read_kb bigint,
                      ADD COLUMN written_kb bigint;
CREATE INDEX job_hosts_usage_todo ON job_hosts (rjob_id) WHERE usage_kept = 0;

CREATE INDEX slurm_jobs_current_time ON slurm_jobs_current (time);

CREATE FUNCTION fj_drop_partitions_by(proc_horizon bigint, proc_tables text[], node_horizon bigint)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    r record;
    n integer := 0;
    horizon bigint;
BEGIN
    PERFORM pg_advisory_xact_lock(7236828405719760898);
    FOR r IN SELECT c.relname AS part, pc.relname AS parent,
                    extract(epoch FROM to_date(substring(c.relname FROM '_w([0-9]{8})$'), 'YYYYMMDD')::timestamp)::bigint AS ws
             FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
             JOIN pg_partitioned_table p ON p.partrelid = i.inhparent
             JOIN pg_class pc ON pc.oid = i.inhparent
             WHERE c.relnamespace = current_schema()::regnamespace AND c.relname ~ '_w[0-9]{8}$'
               AND i.inhparent <> 'load_hourly'::regclass LOOP
        horizon := CASE WHEN r.parent = ANY (proc_tables) THEN proc_horizon ELSE node_horizon END;
        IF horizon IS NOT NULL AND r.ws + 604800 <= horizon THEN
            EXECUTE format('DROP TABLE %I', r.part);
            n := n + 1;
        END IF;
    END LOOP;
    RETURN n;
END $$;
