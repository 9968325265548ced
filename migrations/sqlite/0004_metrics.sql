-- 0004_metrics.sql — line-protocol metrics (the time-series engine's catalog and chunks), the
-- request log that makes unsealed points durable, and ClusterCockpit events, logs, controls and
-- jobs. Written by storage/sqlite_ts.c; see docs/metrics.md.
--
-- Departure from 0001's convention: times here are nanoseconds since 1970 UTC (line protocol's
-- resolution), except cc_jobs, whose times are cc-backend's epoch seconds.

-- The series catalog: the engine's uint32 id and the key it stands for. An absent tag is ''.
CREATE TABLE ts_series (
    id INTEGER PRIMARY KEY,
    cluster TEXT NOT NULL,
    host TEXT NOT NULL,
    metric TEXT NOT NULL,
    type TEXT NOT NULL,
    type_id TEXT NOT NULL,
    stype TEXT NOT NULL,
    stype_id TEXT NOT NULL
);
CREATE INDEX ts_series_host ON ts_series(cluster, host, metric);
CREATE INDEX ts_series_metric ON ts_series(cluster, metric);

-- Sealed chunks (storage/ts_codec.h blobs). seq orders chunks of one series by write time: equal
-- times resolve to the larger seq. A read scans (series_id, t_last >= from) and filters t_first.
CREATE TABLE ts_chunk (
    series_id INTEGER NOT NULL,
    t_last INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    t_first INTEGER NOT NULL,
    count INTEGER NOT NULL,
    blob BLOB NOT NULL,
    PRIMARY KEY (series_id, t_last, seq)
) WITHOUT ROWID;

-- The raw body of every accepted line-protocol request, zstd-compressed, committed with (and
-- before the answer to) the request. lsn increases; rows from the durable lsn on are replayed
-- at startup; older ones are trimmed (setting request-log-keep).
CREATE TABLE request_log (
    lsn INTEGER PRIMARY KEY,
    received INTEGER NOT NULL,   -- arrival, ns: the time of lines without a timestamp
    cluster TEXT,                -- the request's default cluster
    unit_ns INTEGER NOT NULL,    -- ns per timestamp unit; 0 = inferred per timestamp
    max_future_ns INTEGER NOT NULL,
    size INTEGER NOT NULL,       -- uncompressed bytes
    body BLOB NOT NULL           -- zstd frame
);

-- Small key/value state of the engine: 'durable_lsn' (replay from here), 'next_lsn'.
CREATE TABLE ts_state (
    key TEXT PRIMARY KEY,
    value INTEGER NOT NULL
) WITHOUT ROWID;

-- ClusterCockpit events, logs and controls (kind 'event', 'log', 'control'). hash is FNV-1a 64 of
-- tags and payload, so that a re-sent message adds nothing.
CREATE TABLE cc_messages (
    cluster_id INTEGER NOT NULL,
    time INTEGER NOT NULL,
    kind TEXT NOT NULL,
    name TEXT NOT NULL,          -- measurement: event class, component id, control class
    host TEXT NOT NULL,
    hash INTEGER NOT NULL,
    tags TEXT NOT NULL,          -- JSON object of every tag
    payload TEXT NOT NULL,
    PRIMARY KEY (cluster_id, time, kind, name, host, hash)
) WITHOUT ROWID;

-- ClusterCockpit jobs (cc-backend's start_job/stop_job, by REST or as job events). They join
-- Sonar's Slurm jobs on (cluster, job id): jobs.job = cc_jobs.job_id with jobs.epoch = 0.
CREATE TABLE cc_jobs (
    id INTEGER PRIMARY KEY,
    cluster_id INTEGER NOT NULL,
    job_id INTEGER NOT NULL,
    start_time INTEGER NOT NULL,  -- epoch seconds
    stop_time INTEGER,            -- NULL while running
    state TEXT NOT NULL,          -- running, completed, failed, ...
    user TEXT,
    project TEXT,
    partition TEXT,
    subcluster TEXT,
    num_nodes INTEGER,
    num_hwthreads INTEGER,
    num_acc INTEGER,
    hosts TEXT,                   -- JSON array of host names
    payload TEXT,                 -- the start payload as received
    UNIQUE (cluster_id, job_id, start_time)
);
