-- 0021_load_daily.sql — daily per-node load roll-ups (docs/storage.md, "Load roll-ups").
--
-- load_daily holds, per node and UTC day (epoch seconds, a multiple of 86400), the merge of that
-- day's hourly roll-ups (load_hourly, 0006): the same columns, counts and sums added, cores and
-- cards the most, each maximum the largest among the hours with values, last_time the latest.
-- The writer keeps it with load_hourly: before COMMIT, in the transaction that brings the hours
-- of load_hourly_todo up to date, it recomputes the days of those hours from load_hourly, so a
-- reader never sees one without the other. Node and cluster load read it for buckets that are
-- whole days inside the window (a year at one day: 365 rows a node instead of 8,760). Retention
-- keeps it, as it keeps load_hourly.
CREATE TABLE load_daily (
    node_id INTEGER NOT NULL,
    day INTEGER NOT NULL,
    samples INTEGER NOT NULL,
    cores INTEGER NOT NULL,
    gpus INTEGER NOT NULL,
    cpu_n INTEGER NOT NULL,
    cpu_s REAL NOT NULL,
    cpu_util_sum REAL NOT NULL,
    cpu_util_max REAL NOT NULL,
    cpu_cores_sum REAL NOT NULL,
    mem_n INTEGER NOT NULL,
    mem_sum REAL NOT NULL,
    mem_max REAL NOT NULL,
    load_n INTEGER NOT NULL,
    load1_sum REAL NOT NULL,
    load1_max REAL NOT NULL,
    load5_sum REAL NOT NULL,
    load15_sum REAL NOT NULL,
    gpu_n INTEGER NOT NULL,
    gpu_util_sum REAL NOT NULL,
    gpu_util_max REAL NOT NULL,
    gpu_mem_sum REAL NOT NULL,
    gpu_mem_max REAL NOT NULL,
    gpu_power_sum REAL NOT NULL,
    gpu_power_max REAL NOT NULL,
    gpu_temp_sum REAL NOT NULL,
    gpu_temp_max REAL NOT NULL,
    last_time INTEGER NOT NULL,
    PRIMARY KEY (node_id, day)
) WITHOUT ROWID;

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
