-- 0005_chimbuko.sql — Chimbuko (docs/chimbuko.md): the parameter server's packets
-- (POST /api/anomalydata) and the provenance database's records
-- (POST /api/v1/ingest/chimbuko/{anomalies,normalexecs,metadata,func_stats,counter_stats}).
--
-- Conventions as in 0001, except times: Chimbuko's are TAU trace times in microseconds since 1970
-- (_us), the packets' created_at in milliseconds (_ms); they are kept at that resolution. run_id
-- is the strings.id of the run label the sender chose (?run=, "default" when none): Chimbuko's
-- own identifiers (program index, rank, event label) are unique only within one run. Every table
-- has a natural key written with INSERT OR IGNORE, so a re-sent packet or record adds nothing.
-- RunStats blocks are kept whole as compact JSON ({count, accumulate, minimum, maximum, mean,
-- stddev, skewness, kurtosis}; null for unknown and for the sentinels of an empty RunStats), with
-- the values queries select on in their own columns. Tables whose rows carry large JSON keep a
-- rowid and a UNIQUE natural key; the others are WITHOUT ROWID.

-- --- Parameter-server packets (about one a second) -------------------------------------------
CREATE TABLE chimbuko_packets (
    cluster_id INTEGER NOT NULL,
    run_id INTEGER NOT NULL,
    created_at_ms INTEGER NOT NULL,
    version INTEGER NOT NULL,          -- 0: a packet without version (before Chimbuko's v2)
    received INTEGER NOT NULL,         -- arrival, seconds
    n_ranks INTEGER NOT NULL,
    n_steps INTEGER NOT NULL,
    n_funcs INTEGER NOT NULL,
    n_counters INTEGER NOT NULL,
    n_metrics INTEGER NOT NULL,
    PRIMARY KEY (cluster_id, run_id, created_at_ms)
) WITHOUT ROWID;

-- anomaly_stats.anomaly[*].stats: a rank's anomalies per IO step since the run began, as of a packet
-- (a rank appears only in packets after new anomalies).
CREATE TABLE chimbuko_rank_stats (
    cluster_id INTEGER NOT NULL,
    run_id INTEGER NOT NULL,
    app INTEGER NOT NULL,
    rank INTEGER NOT NULL,
    created_at_ms INTEGER NOT NULL,
    anomalies REAL,                    -- stats.accumulate: anomalies since the run began
    steps INTEGER NOT NULL,            -- stats.count: IO steps reported
    stats TEXT NOT NULL,
    PRIMARY KEY (cluster_id, run_id, app, rank, created_at_ms)
) WITHOUT ROWID;

-- anomaly_stats.anomaly[*].data[*]: one IO step of a rank with anomalies (each step is sent once).
CREATE TABLE chimbuko_rank_steps (
    cluster_id INTEGER NOT NULL,
    run_id INTEGER NOT NULL,
    app INTEGER NOT NULL,
    rank INTEGER NOT NULL,
    step INTEGER NOT NULL,
    created_at_ms INTEGER NOT NULL,    -- the packet that brought it
    min_ts_us INTEGER NOT NULL,
    max_ts_us INTEGER NOT NULL,
    n_anomalies INTEGER NOT NULL,
    score_max REAL,
    score_mean REAL,
    scores TEXT,                       -- outlier_scores RunStats (NULL before 2021-05)
    PRIMARY KEY (cluster_id, run_id, app, rank, step)
) WITHOUT ROWID;
CREATE INDEX chimbuko_rank_steps_time ON chimbuko_rank_steps (cluster_id, max_ts_us);

-- anomaly_stats.func[*]: every function's cumulative profile, sent in every packet; a row is
-- written only when it differs from the function's previous row (at or before its created_at).
CREATE TABLE chimbuko_func_stats (
    id INTEGER PRIMARY KEY,
    cluster_id INTEGER NOT NULL,
    run_id INTEGER NOT NULL,
    app INTEGER NOT NULL,
    fid INTEGER NOT NULL,
    created_at_ms INTEGER NOT NULL,
    name_id INTEGER NOT NULL,          -- strings.id
    anomalies REAL,                    -- stats.accumulate
    calls INTEGER NOT NULL,            -- inclusive.count
    anomaly_stats TEXT NOT NULL,
    inclusive TEXT NOT NULL,
    exclusive TEXT NOT NULL,
    UNIQUE (cluster_id, run_id, app, fid, created_at_ms)
);

-- counter_stats (packets): cumulative, in every packet; written when changed, as func_stats.
CREATE TABLE chimbuko_counter_stats (
    cluster_id INTEGER NOT NULL,
    run_id INTEGER NOT NULL,
    app INTEGER NOT NULL,
    counter_id INTEGER NOT NULL,       -- strings.id
    created_at_ms INTEGER NOT NULL,
    count INTEGER NOT NULL,
    total REAL,
    stats TEXT NOT NULL,
    PRIMARY KEY (cluster_id, run_id, app, counter_id, created_at_ms)
) WITHOUT ROWID;

-- anomaly_metrics[*]: one (app, rank, function) with anomalies since the previous packet.
CREATE TABLE chimbuko_func_metrics (
    id INTEGER PRIMARY KEY,
    cluster_id INTEGER NOT NULL,
    run_id INTEGER NOT NULL,
    app INTEGER NOT NULL,
    rank INTEGER NOT NULL,
    fid INTEGER NOT NULL,
    created_at_ms INTEGER NOT NULL,
    name_id INTEGER NOT NULL,
    anomalies REAL,                    -- new_data.count.accumulate
    score_max REAL,                    -- new_data.score.maximum
    severity_total REAL,               -- new_data.severity.accumulate
    first_io_step INTEGER NOT NULL,
    last_io_step INTEGER NOT NULL,
    min_ts_us INTEGER NOT NULL,
    max_ts_us INTEGER NOT NULL,
    new_data TEXT NOT NULL,
    all_data TEXT NOT NULL,
    UNIQUE (cluster_id, run_id, app, rank, fid, created_at_ms)
);
CREATE INDEX chimbuko_func_metrics_time ON chimbuko_func_metrics (cluster_id, created_at_ms);

-- --- Provenance database: main DB ------------------------------------------------------------
-- anomalies (anomaly = 1) and normalexecs (0). The event label is rid:io_step:idx; JSON members
-- are canonical compact JSON as decoded (ingest/chimbuko.h).
CREATE TABLE chimbuko_events (
    id INTEGER PRIMARY KEY,
    cluster_id INTEGER NOT NULL,
    run_id INTEGER NOT NULL,
    anomaly INTEGER NOT NULL,
    pid INTEGER NOT NULL,
    rid INTEGER NOT NULL,
    io_step INTEGER NOT NULL,
    idx INTEGER NOT NULL,
    version INTEGER NOT NULL,          -- 0: a record before schema version 2
    tid INTEGER NOT NULL,
    fid INTEGER NOT NULL,
    func_id INTEGER NOT NULL,          -- strings.id
    entry_us INTEGER NOT NULL,
    exit_us INTEGER,                   -- NULL: had not exited (Chimbuko's 0)
    runtime_total_us INTEGER NOT NULL,
    runtime_exclusive_us INTEGER NOT NULL,
    io_step_tstart_us INTEGER NOT NULL,
    io_step_tend_us INTEGER NOT NULL,
    outlier_score REAL,
    outlier_severity REAL,
    host_id INTEGER,                   -- strings.id of hostname
    is_gpu INTEGER,                    -- NULL: not said
    gpu_thread INTEGER,                -- NULL: no gpu_location
    gpu_device INTEGER,
    gpu_context INTEGER,
    gpu_stream INTEGER,
    gpu_parent_event TEXT,
    gpu_parent_tid INTEGER,
    gpu_parent_error TEXT,
    algo TEXT,                         -- sstd, histogram, NULL
    algo_params TEXT,
    call_stack TEXT,
    counter_events TEXT,
    event_window TEXT,
    node_state TEXT,
    gpu_parent TEXT,
    UNIQUE (cluster_id, run_id, anomaly, pid, rid, io_step, idx)
);
CREATE INDEX chimbuko_events_entry ON chimbuko_events (cluster_id, entry_us);
CREATE INDEX chimbuko_events_fid ON chimbuko_events (cluster_id, fid, entry_us);

-- metadata: the AD re-sends the whole set every step; the first value of a key is kept.
CREATE TABLE chimbuko_metadata (
    cluster_id INTEGER NOT NULL,
    run_id INTEGER NOT NULL,
    pid INTEGER NOT NULL,
    rid INTEGER NOT NULL,
    tid INTEGER NOT NULL,
    descr_id INTEGER NOT NULL,         -- strings.id
    value TEXT NOT NULL,
    PRIMARY KEY (cluster_id, run_id, pid, rid, tid, descr_id)
) WITHOUT ROWID;

-- --- Provenance database: global DB (written once by the pserver at the end of a run) --------
CREATE TABLE chimbuko_profiles (
    id INTEGER PRIMARY KEY,
    cluster_id INTEGER NOT NULL,
    run_id INTEGER NOT NULL,
    app INTEGER NOT NULL,
    fid INTEGER NOT NULL,
    name_id INTEGER NOT NULL,
    anomalies REAL,                    -- anomaly_metrics.anomaly_count.accumulate; NULL: none
    exclusive_total_us REAL,           -- runtime_profile.exclusive_runtime.accumulate
    inclusive TEXT,
    exclusive TEXT,
    anomaly_metrics TEXT,
    UNIQUE (cluster_id, run_id, app, fid)
);

CREATE TABLE chimbuko_counters (
    cluster_id INTEGER NOT NULL,
    run_id INTEGER NOT NULL,
    app INTEGER NOT NULL,
    counter_id INTEGER NOT NULL,
    count INTEGER NOT NULL,
    total REAL,
    stats TEXT NOT NULL,
    PRIMARY KEY (cluster_id, run_id, app, counter_id)
) WITHOUT ROWID;
