-- 0004_load_hourly.sql — hourly per-node load roll-ups: the tables of
-- migrations/sqlite/0006_load_hourly.sql, whose comments give every column and the rules. Written
-- by the writer (storage/pg_write.c lists the hours a group's new samples change;
-- storage/pg_query_load.c recomputes them before COMMIT), read by node and cluster load.
--
-- load_hourly is partitioned by week like the samples it summarises (an hour lies in the week of
-- its samples), so retention drops a week's roll-ups with its samples. load_hourly_todo is empty
-- outside a write transaction, except right after this migration until its backfill (listed
-- below, computed by fjord migrate up) is done; queries read samples while it is not empty.
CREATE TABLE load_hourly (
    node_id bigint NOT NULL,
    hour bigint NOT NULL,
    samples bigint NOT NULL,
    cores bigint NOT NULL,
    gpus bigint NOT NULL,
    cpu_n bigint NOT NULL,
    cpu_s double precision NOT NULL,
    cpu_util_sum double precision NOT NULL,
    cpu_util_max double precision NOT NULL,
    cpu_cores_sum double precision NOT NULL,
    mem_n bigint NOT NULL,
    mem_sum double precision NOT NULL,
    mem_max double precision NOT NULL,
    load_n bigint NOT NULL,
    load1_sum double precision NOT NULL,
    load1_max double precision NOT NULL,
    load5_sum double precision NOT NULL,
    load15_sum double precision NOT NULL,
    gpu_n bigint NOT NULL,
    gpu_util_sum double precision NOT NULL,
    gpu_util_max double precision NOT NULL,
    gpu_mem_sum double precision NOT NULL,
    gpu_mem_max double precision NOT NULL,
    gpu_power_sum double precision NOT NULL,
    gpu_power_max double precision NOT NULL,
    gpu_temp_sum double precision NOT NULL,
    gpu_temp_max double precision NOT NULL,
    last_time bigint NOT NULL,
    PRIMARY KEY (node_id, hour)
) PARTITION BY RANGE (hour);

CREATE TABLE load_hourly_todo (
    node_id bigint NOT NULL,
    hour bigint NOT NULL,
    recompute integer NOT NULL DEFAULT 1,  -- this backend always recomputes (pg_query_load.c)
    PRIMARY KEY (node_id, hour)
);

-- Backfill: the week partitions of the weeks that have samples, and every hour with samples.
DO $$
DECLARE
    ws bigint;
BEGIN
    FOR ws IN SELECT DISTINCT time - ((time - 345600) % 604800 + 604800) % 604800 FROM samples LOOP
        PERFORM fj_ensure_partitions(ws);
    END LOOP;
END $$;
INSERT INTO load_hourly_todo (node_id, hour)
SELECT DISTINCT node_id, time - (time % 3600 + 3600) % 3600 FROM samples;
