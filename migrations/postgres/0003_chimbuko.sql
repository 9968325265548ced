-- 0003_chimbuko.sql — Chimbuko (docs/chimbuko.md): the parameter server's packets
-- (POST /api/anomalydata) and the provenance database's records
-- (POST /api/v1/ingest/chimbuko/{anomalies,normalexecs,metadata,func_stats,counter_stats}).
-- The tables, columns and natural keys of migrations/sqlite/0005_chimbuko.sql, whose comments give
-- every column; written by storage/pg_chimbuko.c.
--
-- Conventions as in 0001, except times: Chimbuko's are TAU trace times in microseconds since 1970
-- (_us), the packets' created_at in milliseconds (_ms); they are kept at that resolution. run_id is
-- the strings.id of the run label the sender chose (?run=, "default" when none). Every table has a
-- natural key written with INSERT ... ON CONFLICT DO NOTHING, so a re-sent packet or record adds
-- nothing. RunStats blocks and other JSON members are kept as the decoder's canonical compact JSON
-- in text columns (not jsonb, which would re-format them: both backends answer the same text).
--
-- Not partitioned. Retention in this backend drops whole week partitions keyed by `time` in
-- seconds (fj_ensure_partitions and fj_drop_partitions act on every partitioned table of the
-- schema); Chimbuko rows carry microseconds or milliseconds, some none at all (metadata, final
-- profiles), and a run is analysed as a whole: dropping its first weeks would leave a torso.
-- Their volume is that of one packet a second per run plus the anomalies Chimbuko chose to keep,
-- far below the sample tables'.

-- --- Parameter-server packets (about one a second) -------------------------------------------
CREATE TABLE chimbuko_packets (
    cluster_id bigint NOT NULL,
    run_id bigint NOT NULL,
    created_at_ms bigint NOT NULL,
    version bigint NOT NULL,           -- 0: a packet without version (before Chimbuko's v2)
    received bigint NOT NULL,          -- arrival, seconds
    n_ranks bigint NOT NULL,
    n_steps bigint NOT NULL,
    n_funcs bigint NOT NULL,
    n_counters bigint NOT NULL,
    n_metrics bigint NOT NULL,
    PRIMARY KEY (cluster_id, run_id, created_at_ms)
);

-- anomaly_stats.anomaly[*].stats: a rank's anomalies per IO step since the run began, as of a packet.
CREATE TABLE chimbuko_rank_stats (
    cluster_id bigint NOT NULL,
    run_id bigint NOT NULL,
    app bigint NOT NULL,
    rank bigint NOT NULL,
    created_at_ms bigint NOT NULL,
    anomalies double precision,        -- stats.accumulate
    steps bigint NOT NULL,             -- stats.count
    stats text NOT NULL,
    PRIMARY KEY (cluster_id, run_id, app, rank, created_at_ms)
);

-- anomaly_stats.anomaly[*].data[*]: one IO step of a rank with anomalies (each step is sent once).
CREATE TABLE chimbuko_rank_steps (
    cluster_id bigint NOT NULL,
    run_id bigint NOT NULL,
    app bigint NOT NULL,
    rank bigint NOT NULL,
    step bigint NOT NULL,
    created_at_ms bigint NOT NULL,     -- the packet that brought it
    min_ts_us bigint NOT NULL,
    max_ts_us bigint NOT NULL,
    n_anomalies bigint NOT NULL,
    score_max double precision,
    score_mean double precision,
    scores text,                       -- outlier_scores RunStats (NULL before 2021-05)
    PRIMARY KEY (cluster_id, run_id, app, rank, step)
);
CREATE INDEX chimbuko_rank_steps_time ON chimbuko_rank_steps (cluster_id, max_ts_us);

-- anomaly_stats.func[*]: every function's cumulative profile, sent in every packet; a row is
-- written only when it differs from the function's previous row (at or before its created_at).
CREATE TABLE chimbuko_func_stats (
    cluster_id bigint NOT NULL,
    run_id bigint NOT NULL,
    app bigint NOT NULL,
    fid bigint NOT NULL,
    created_at_ms bigint NOT NULL,
    name_id bigint NOT NULL,           -- strings.id
    anomalies double precision,        -- stats.accumulate
    calls bigint NOT NULL,             -- inclusive.count
    anomaly_stats text NOT NULL,
    inclusive text NOT NULL,
    exclusive text NOT NULL,
    PRIMARY KEY (cluster_id, run_id, app, fid, created_at_ms)
);

-- counter_stats (packets): cumulative, in every packet; written when changed, as func_stats.
CREATE TABLE chimbuko_counter_stats (
    cluster_id bigint NOT NULL,
    run_id bigint NOT NULL,
    app bigint NOT NULL,
    counter_id bigint NOT NULL,        -- strings.id
    created_at_ms bigint NOT NULL,
    count bigint NOT NULL,
    total double precision,
    stats text NOT NULL,
    PRIMARY KEY (cluster_id, run_id, app, counter_id, created_at_ms)
);

-- anomaly_metrics[*]: one (app, rank, function) with anomalies since the previous packet.
CREATE TABLE chimbuko_func_metrics (
    cluster_id bigint NOT NULL,
    run_id bigint NOT NULL,
    app bigint NOT NULL,
    rank bigint NOT NULL,
    fid bigint NOT NULL,
    created_at_ms bigint NOT NULL,
    name_id bigint NOT NULL,
    anomalies double precision,        -- new_data.count.accumulate
    score_max double precision,        -- new_data.score.maximum
    severity_total double precision,   -- new_data.severity.accumulate
    first_io_step bigint NOT NULL,
    last_io_step bigint NOT NULL,
    min_ts_us bigint NOT NULL,
    max_ts_us bigint NOT NULL,
    new_data text NOT NULL,
    all_data text NOT NULL,
    PRIMARY KEY (cluster_id, run_id, app, rank, fid, created_at_ms)
);
CREATE INDEX chimbuko_func_metrics_time ON chimbuko_func_metrics (cluster_id, created_at_ms);

-- --- Provenance database: main DB ------------------------------------------------------------
-- anomalies (anomaly true) and normalexecs (false). The event label is rid:io_step:idx. id orders
-- rows of equal entry time in arrival order (the listing's keyset pages), as SQLite's rowid does.
CREATE TABLE chimbuko_events (
    id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    cluster_id bigint NOT NULL,
    run_id bigint NOT NULL,
    anomaly boolean NOT NULL,
    pid bigint NOT NULL,
    rid bigint NOT NULL,
    io_step bigint NOT NULL,
    idx bigint NOT NULL,
    version bigint NOT NULL,           -- 0: a record before schema version 2
    tid bigint NOT NULL,
    fid bigint NOT NULL,
    func_id bigint NOT NULL,           -- strings.id
    entry_us bigint NOT NULL,
    exit_us bigint,                    -- NULL: had not exited (Chimbuko's 0)
    runtime_total_us bigint NOT NULL,
    runtime_exclusive_us bigint NOT NULL,
    io_step_tstart_us bigint NOT NULL,
    io_step_tend_us bigint NOT NULL,
    outlier_score double precision,
    outlier_severity double precision,
    host_id bigint,                    -- strings.id of hostname
    is_gpu boolean,                    -- NULL: not said
    gpu_thread bigint,                 -- NULL: no gpu_location
    gpu_device bigint,
    gpu_context bigint,
    gpu_stream bigint,
    gpu_parent_event text,
    gpu_parent_tid bigint,
    gpu_parent_error text,
    algo text,                         -- sstd, histogram, NULL
    algo_params text,
    call_stack text,
    counter_events text,
    event_window text,
    node_state text,
    gpu_parent text,
    UNIQUE (cluster_id, run_id, anomaly, pid, rid, io_step, idx)
);
CREATE INDEX chimbuko_events_entry ON chimbuko_events (cluster_id, entry_us, id);
CREATE INDEX chimbuko_events_fid ON chimbuko_events (cluster_id, fid, entry_us);

-- metadata: the AD re-sends the whole set every step; the first value of a key is kept.
CREATE TABLE chimbuko_metadata (
    cluster_id bigint NOT NULL,
    run_id bigint NOT NULL,
    pid bigint NOT NULL,
    rid bigint NOT NULL,
    tid bigint NOT NULL,
    descr_id bigint NOT NULL,          -- strings.id
    value text NOT NULL,
    PRIMARY KEY (cluster_id, run_id, pid, rid, tid, descr_id)
);

-- --- Provenance database: global DB (written once by the pserver at the end of a run) --------
CREATE TABLE chimbuko_profiles (
    cluster_id bigint NOT NULL,
    run_id bigint NOT NULL,
    app bigint NOT NULL,
    fid bigint NOT NULL,
    name_id bigint NOT NULL,
    anomalies double precision,        -- anomaly_metrics.anomaly_count.accumulate; NULL: none
    exclusive_total_us double precision, -- runtime_profile.exclusive_runtime.accumulate
    inclusive text,
    exclusive text,
    anomaly_metrics text,
    PRIMARY KEY (cluster_id, run_id, app, fid)
);

CREATE TABLE chimbuko_counters (
    cluster_id bigint NOT NULL,
    run_id bigint NOT NULL,
    app bigint NOT NULL,
    counter_id bigint NOT NULL,
    count bigint NOT NULL,
    total double precision,
    stats text NOT NULL,
    PRIMARY KEY (cluster_id, run_id, app, counter_id)
);
