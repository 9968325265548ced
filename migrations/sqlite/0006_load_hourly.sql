-- 0006_load_hourly.sql — hourly per-node load roll-ups (docs/storage.md, "Load roll-ups").
--
-- load_hourly holds, per node and hour (epoch seconds, a multiple of 3600), the accumulators of
-- the node-load bucket of that hour exactly as the query would compute them from the raw samples
-- (storage/loadagg.h lists the columns): sample count, most cores, most GPU cards, CPU utilisation
-- and busy cores weighted by interval seconds (an interval belongs to the hour of its end, and
-- starts at the node's previous sample with counters, in whatever hour that is), memory, load
-- averages, GPU figures. Cluster and node load answer buckets that are whole multiples of an hour,
-- inside the window, from these rows.
--
-- load_hourly_todo lists the (node, hour) pairs whose roll-up must be brought up to date from the
-- samples: the writer adds the hour of every new sample, and for a late one (the node has a later
-- sample) the hour of the node's next sample with counters (its interval changed), then updates
-- them and empties the table before COMMIT. A sample newer than all of its node's is appended to
-- the hour's roll-up (recompute = 0: only the samples after last_time are read); any other change
-- recomputes the hour from its samples (recompute = 1). So outside a write transaction the table
-- is empty, except right after this migration until the backfill below is done (fjord migrate up
-- does it at once; the writer would do it in its next transaction with a new sample); a query
-- finding it non-empty reads raw samples.
CREATE TABLE load_hourly (
    node_id INTEGER NOT NULL,
    hour INTEGER NOT NULL,
    samples INTEGER NOT NULL,
    cores INTEGER NOT NULL,
    gpus INTEGER NOT NULL,
    cpu_n INTEGER NOT NULL,          -- CPU intervals ending in the hour
    cpu_s REAL NOT NULL,             -- their seconds (the weight)
    cpu_util_sum REAL NOT NULL,      -- sum of utilisation (percent) x seconds
    cpu_util_max REAL NOT NULL,
    cpu_cores_sum REAL NOT NULL,     -- sum of busy cores x seconds
    mem_n INTEGER NOT NULL,
    mem_sum REAL NOT NULL,
    mem_max REAL NOT NULL,
    load_n INTEGER NOT NULL,
    load1_sum REAL NOT NULL,
    load1_max REAL NOT NULL,
    load5_sum REAL NOT NULL,
    load15_sum REAL NOT NULL,
    gpu_n INTEGER NOT NULL,          -- sample times with GPU cards
    gpu_util_sum REAL NOT NULL,      -- of the mean over cards
    gpu_util_max REAL NOT NULL,      -- busiest card
    gpu_mem_sum REAL NOT NULL,       -- of the sum over cards
    gpu_mem_max REAL NOT NULL,
    gpu_power_sum REAL NOT NULL,
    gpu_power_max REAL NOT NULL,
    gpu_temp_sum REAL NOT NULL,      -- of the mean over cards
    gpu_temp_max REAL NOT NULL,      -- hottest card
    last_time INTEGER NOT NULL,      -- the latest sample summed in (where appending continues)
    PRIMARY KEY (node_id, hour)
) WITHOUT ROWID;

CREATE TABLE load_hourly_todo (
    node_id INTEGER NOT NULL,
    hour INTEGER NOT NULL,
    recompute INTEGER NOT NULL DEFAULT 1, -- 0: only samples after the roll-up's last_time are new
    PRIMARY KEY (node_id, hour)
) WITHOUT ROWID;

-- Backfill: every hour that has samples (floor division, also for times before 1970).
INSERT INTO load_hourly_todo (node_id, hour)
SELECT DISTINCT node_id, time - ((time % 3600) + 3600) % 3600 FROM samples;
