-- 0018_load_daily.sql — daily per-node load roll-ups: the table of migrations/sqlite/0021_load_daily.sql,
-- whose comments give the rules. Not partitioned: retention keeps it, and a year of 1,000 nodes is
-- 365,000 rows. The writer upserts the days it recomputes (an update in place, in the row's page
-- while there is room: hence the fillfactor) rather than deleting and inserting them.
--
-- load_daily holds, per node and UTC day (epoch seconds, a multiple of 86400), the merge of that
-- day's hourly roll-ups (load_hourly, 0004): the same columns, counts and sums added, cores and
-- cards the most, each maximum the largest among the hours with values, last_time the latest.
-- The writer keeps it with load_hourly: before COMMIT, in the transaction that brings the hours
-- of load_hourly_todo up to date, it recomputes the days of those hours from load_hourly, so a
-- reader never sees one without the other. Node and cluster load read it for buckets that are
-- whole days inside the window (a year at one day: 365 rows a node instead of 8,760). Retention
-- keeps it, as it keeps load_hourly.
CREATE TABLE load_daily (
    node_id bigint NOT NULL,
    day bigint NOT NULL,
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
    PRIMARY KEY (node_id, day)
) WITH (fillfactor = 50); -- today's rows are rewritten in place at every group commit (storage/pg/rollup.c)

-- Backfill from the hourly roll-ups there are (hours still listed in load_hourly_todo get their
-- days recomputed when the writer or `fjord migrate up` computes them).
INSERT INTO load_daily
SELECT h.node_id, h.hour - ((h.hour % 86400) + 86400) % 86400,
       sum(h.samples), max(h.cores), max(h.gpus), sum(h.cpu_n), sum(h.cpu_s), sum(h.cpu_util_sum),
       coalesce(max(CASE WHEN h.cpu_n > 0 THEN h.cpu_util_max END), 0), sum(h.cpu_cores_sum),
       sum(h.mem_n), sum(h.mem_sum), coalesce(max(CASE WHEN h.mem_n > 0 THEN h.mem_max END), 0),
       sum(h.load_n), sum(h.load1_sum), coalesce(max(CASE WHEN h.load_n > 0 THEN h.load1_max END), 0),
       sum(h.load5_sum), sum(h.load15_sum), sum(h.gpu_n), sum(h.gpu_util_sum),
       coalesce(max(CASE WHEN h.gpu_n > 0 THEN h.gpu_util_max END), 0), sum(h.gpu_mem_sum),
       coalesce(max(CASE WHEN h.gpu_n > 0 THEN h.gpu_mem_max END), 0), sum(h.gpu_power_sum),
       coalesce(max(CASE WHEN h.gpu_n > 0 THEN h.gpu_power_max END), 0), sum(h.gpu_temp_sum),
       coalesce(max(CASE WHEN h.gpu_n > 0 THEN h.gpu_temp_max END), 0), max(h.last_time)
FROM load_hourly h
GROUP BY h.node_id, h.hour - ((h.hour % 86400) + 86400) % 86400;
