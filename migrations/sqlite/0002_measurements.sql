-- 0002_measurements.sql — NVIDIA aicr snapshots (the Measurement schema; ingest/aicr.h), as sent by
-- fjord-push (NetworkTopology) and by aicr itself, to POST /api/v1/ingest/measurements.
--
-- A snapshot is decoded, validated and normalised before it gets here (both spellings seen in the
-- wild become one); storage keeps its text and never parses it. Conventions as in 0001: interned
-- cluster and node ids, times in seconds since 1970 UTC, a natural key written with
-- INSERT OR IGNORE so that a re-sent snapshot adds nothing.

-- One row per snapshot of a node: the whole normalised snapshot, which
-- GET /api/v1/nodes/{node}/measurements reads (the latest one) to resolve constraint paths.
CREATE TABLE measurement_snapshots (
    cluster_id INTEGER NOT NULL,
    node_id INTEGER NOT NULL,
    time INTEGER NOT NULL,          -- metadata.timestamp; the arrival time when the snapshot had none
    hash INTEGER NOT NULL,          -- FNV-1a 64 of snapshot (as a signed integer): cheap comparison
                                    -- with the node's latest snapshot for snapshots without a time
    n_measurements INTEGER NOT NULL,
    n_subtypes INTEGER NOT NULL,
    snapshot TEXT NOT NULL,         -- normalised snapshot, compact JSON
    PRIMARY KEY (cluster_id, node_id, time)
) WITHOUT ROWID;

-- One row per subtype of a snapshot, so one subtype can be read (or compared over time) without
-- the whole snapshot. instance numbers repeated measurements of one type within a snapshot (aicr
-- plans one NetworkTopology per hardware group); today it is 0.
CREATE TABLE measurements (
    cluster_id INTEGER NOT NULL,
    node_id INTEGER NOT NULL,
    time INTEGER NOT NULL,          -- as in measurement_snapshots
    type TEXT NOT NULL,             -- K8s, GPU, OS, SystemD, NodeTopology, NetworkTopology (aicr's case)
    instance INTEGER NOT NULL,
    subtype TEXT NOT NULL,
    data TEXT NOT NULL,             -- the normalised subtype, compact JSON: subtype, context, data, items
    PRIMARY KEY (cluster_id, node_id, time, type, instance, subtype)
) WITHOUT ROWID;
