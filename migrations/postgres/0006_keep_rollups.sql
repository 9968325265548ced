-- 0006_keep_rollups.sql — retention keeps the hourly load roll-ups.
--
-- load_hourly is partitioned by week like the samples it summarises, and fj_drop_partitions dropped
-- every week partition older than `retention`, roll-ups included: a node's load over an expired
-- week then answered nothing. The roll-ups are one row per node and hour (a few hundred bytes),
-- the summary that is meant to outlive the raw samples, as job summaries do and as on SQLite
-- (docs/storage.md, "Retention"). Retention now drops the raw tables' weeks only.
CREATE OR REPLACE FUNCTION fj_drop_partitions(horizon bigint) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    r record;
    n integer := 0;
BEGIN
    PERFORM pg_advisory_xact_lock(7236828405719760898);
    FOR r IN SELECT c.relname AS part,
                    extract(epoch FROM to_date(substring(c.relname FROM '_w([0-9]{8})$'), 'YYYYMMDD')::timestamp)::bigint AS ws
             FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
             JOIN pg_partitioned_table p ON p.partrelid = i.inhparent
             WHERE c.relnamespace = current_schema()::regnamespace AND c.relname ~ '_w[0-9]{8}$'
               AND i.inhparent <> 'load_hourly'::regclass LOOP
        IF r.ws + 604800 <= horizon THEN
            EXECUTE format('DROP TABLE %I', r.part);
            n := n + 1;
        END IF;
    END LOOP;
    RETURN n;
END $$;
