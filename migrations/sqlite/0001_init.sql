-- 0001_init.sql — fjord's first SQLite schema: Sonar envelopes, rectified jobs, tokens.
--
-- Conventions (see storage/sqlite.c for the write path):
--  * Times are INTEGER seconds since 1970 UTC.
--  * Names are interned to small integers (clusters, nodes, strings) so high-volume rows stay small;
--    node_id 0 means "no node" (cluster and job envelopes), cluster ids and node ids start at 1.
--  * Every table has a natural key and is written with INSERT OR IGNORE: a re-sent envelope adds
--    nothing. High-volume tables are WITHOUT ROWID with that key as primary key. The one exception
--    is sample_procs (the biggest table), whose key is enforced by the writer instead of an index:
--    see the table.
--  * Percentages in high-volume tables are INTEGER milli-percent (suffix _m: 398.23 % -> 398230).
--  * Unsigned values above 2^63-1 are stored as REAL. A Sonar ExtendedUint that was unset is NULL,
--    "infinite" is -1. In Slurm records, 0 means absent (Sonar omits zero values) and is NULL.
--  * Packed arrays (samples.cpus, sample_disks.stats) are BLOBs of unsigned LEB128 varints, in order:
--    7 bits per byte, low group first, high bit set on every byte but the last.
--  * No FOREIGN KEY clauses: the single writer keeps references consistent, and the checks would
--    cost time on the hot path.
-- The schema_migrations table is created by the migration runner itself.

-- --- Interned names --------------------------------------------------------------------------
CREATE TABLE clusters (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE
);

CREATE TABLE nodes (
    id INTEGER PRIMARY KEY,
    cluster_id INTEGER NOT NULL,
    name TEXT NOT NULL,
    UNIQUE (cluster_id, name)
);

-- User names, commands, GPU uuids, compute modes, disk names, partition and state names.
CREATE TABLE strings (
    id INTEGER PRIMARY KEY,
    s TEXT NOT NULL UNIQUE
);

-- --- Envelope bookkeeping --------------------------------------------------------------------
-- Meta of each envelope (one row per (cluster, node, kind, time); Slurm job data split into
-- several envelopes with one timestamp shares a row).
CREATE TABLE envelopes (
    cluster_id INTEGER NOT NULL,
    node_id INTEGER NOT NULL,
    kind TEXT NOT NULL,            -- sample, sysinfo, job, cluster
    time INTEGER NOT NULL,
    producer TEXT,
    version TEXT,
    format INTEGER,
    unknown_fields INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (cluster_id, node_id, kind, time)
) WITHOUT ROWID;

-- ErrorObjects: envelopes that carried `errors` instead of `data` (source 'envelope') and a
-- sample's attributes.errors (source 'sample').
CREATE TABLE errors (
    cluster_id INTEGER NOT NULL,
    node_id INTEGER NOT NULL,
    time INTEGER NOT NULL,
    source TEXT NOT NULL,
    kind TEXT NOT NULL,            -- the envelope kind it came with
    detail TEXT NOT NULL,
    PRIMARY KEY (cluster_id, node_id, time, source, detail)
) WITHOUT ROWID;

-- What the decoder normalised or ignored, per envelope, for operators (detail is truncated).
CREATE TABLE notes (
    cluster_id INTEGER NOT NULL,
    node_id INTEGER NOT NULL,
    kind TEXT NOT NULL,            -- envelope kind
    time INTEGER NOT NULL,
    path TEXT NOT NULL,
    note TEXT NOT NULL,            -- state_suffix, none_assigned, unknown_field, ...
    detail TEXT,
    PRIMARY KEY (cluster_id, node_id, kind, time, path, note)
) WITHOUT ROWID;

-- --- Sysinfo ---------------------------------------------------------------------------------
-- Large texts (topo_svg, topo_text) kept once per distinct content. hash is FNV-1a 64 of the text
-- as sent; equal hashes are confirmed by comparing the text. codec 'zstd' (data compressed) or
-- 'none'; size is the uncompressed length.
CREATE TABLE blobs (
    id INTEGER PRIMARY KEY,
    hash INTEGER NOT NULL,
    size INTEGER NOT NULL,
    codec TEXT NOT NULL,
    data BLOB NOT NULL
);
CREATE INDEX blobs_hash ON blobs (hash);

CREATE TABLE sysinfo (
    node_id INTEGER NOT NULL,
    time INTEGER NOT NULL,
    os_name TEXT,
    os_release TEXT,
    architecture TEXT,
    cpu_model TEXT,
    numa_nodes INTEGER,
    sockets INTEGER,
    cores_per_socket INTEGER,
    threads_per_core INTEGER,
    memory_kb INTEGER,
    n_gpus INTEGER NOT NULL,
    topo_svg_blob INTEGER,         -- blobs.id
    topo_text_blob INTEGER,        -- blobs.id
    distances TEXT,                -- NUMA distance matrix as JSON, e.g. [[10,21],[21,10]]
    PRIMARY KEY (node_id, time)
) WITHOUT ROWID;

CREATE TABLE sysinfo_gpus (
    node_id INTEGER NOT NULL,
    time INTEGER NOT NULL,
    idx INTEGER NOT NULL,
    uuid TEXT,
    address TEXT,
    manufacturer TEXT,
    model TEXT,
    architecture TEXT,
    driver TEXT,
    firmware TEXT,
    memory_kb INTEGER,
    power_limit INTEGER,
    max_power_limit INTEGER,
    min_power_limit INTEGER,
    max_ce_clock INTEGER,
    max_memory_clock INTEGER,
    PRIMARY KEY (node_id, time, idx)
) WITHOUT ROWID;

-- --- Samples ---------------------------------------------------------------------------------
-- One row per (node, time): the anchor of everything in a sample envelope, and the node's system
-- sample (NULL fields when the envelope had no `system`). cpus: packed varints, one per core,
-- cumulative CPU-seconds since boot. A samples row is never deleted without the rows that point to
-- it (and ids are max + 1): when the row is new, the writer knows its children are new too and
-- writes them without asking, many per statement.
CREATE TABLE samples (
    id INTEGER PRIMARY KEY,
    node_id INTEGER NOT NULL,
    time INTEGER NOT NULL,
    boot INTEGER,
    used_memory_kb INTEGER,
    load1 REAL,
    load5 REAL,
    load15 REAL,
    runnable_entities INTEGER,
    existing_entities INTEGER,
    cpus BLOB,
    UNIQUE (node_id, time)
);

CREATE TABLE sample_gpus (
    sample_id INTEGER NOT NULL,
    idx INTEGER NOT NULL,
    uuid_id INTEGER,               -- strings.id
    failing INTEGER,
    fan INTEGER,
    compute_mode_id INTEGER,       -- strings.id
    performance_state INTEGER,     -- the real P-state; NULL when unknown
    memory_kb INTEGER,
    ce_util INTEGER,
    memory_util INTEGER,
    temperature INTEGER,
    power INTEGER,
    power_limit INTEGER,
    ce_clock INTEGER,
    memory_clock INTEGER,
    PRIMARY KEY (sample_id, idx)
) WITHOUT ROWID;

-- stats: packed varints (the /proc/diskstats fields as sent).
CREATE TABLE sample_disks (
    sample_id INTEGER NOT NULL,
    name_id INTEGER NOT NULL,      -- strings.id
    major INTEGER,
    minor INTEGER,
    stats BLOB,
    PRIMARY KEY (sample_id, name_id)
) WITHOUT ROWID;

-- One row per (sample, job). Its processes are the sample_procs rows with ids proc_first ..
-- proc_first + n_procs - 1 (written together, with consecutive ids, when this row is new).
-- WITHOUT ROWID: the key is the only way in, and one B-tree instead of a table and its index makes
-- the insert (52 per sample on a busy ML node) about a quarter cheaper.
CREATE TABLE sample_jobs (
    sample_id INTEGER NOT NULL,
    job INTEGER NOT NULL,
    epoch INTEGER NOT NULL,
    user_id INTEGER,               -- strings.id
    proc_first INTEGER,            -- sample_procs.id of the first process; NULL when none
    n_procs INTEGER NOT NULL,
    PRIMARY KEY (sample_id, job, epoch)
) WITHOUT ROWID;

-- One row per process record: the highest-volume table, so it carries no key columns of its own and
-- no index. Its natural key is (sample job, pid, ppid, cmd): the writer stores a sample job's
-- processes only when the sample_jobs row is new (a re-sent sample is a duplicate as a whole) and
-- drops repeated (pid, ppid, cmd) within one job; the rowid range in sample_jobs finds them (a
-- rowid range seek, see v_processes). pid is 0 for rolled-up groups in one-shot mode, hence ppid and
-- cmd in the key. flags: bit 0 in_container, bit 1 synthetic pid (a rolled-up group).
CREATE TABLE sample_procs (
    id INTEGER PRIMARY KEY,
    pid INTEGER NOT NULL,
    ppid INTEGER NOT NULL,
    cmd_id INTEGER NOT NULL,       -- strings.id
    resident_kb INTEGER,
    virtual_kb INTEGER,
    num_threads INTEGER,           -- threads - 1, as sent
    cpu_avg_m INTEGER,
    cpu_util_m INTEGER,
    cpu_time INTEGER,
    data_read_kb INTEGER,
    data_written_kb INTEGER,
    data_cancelled_kb INTEGER,
    rolledup INTEGER,              -- additional processes merged, as sent
    flags INTEGER
);

CREATE TABLE sample_proc_gpus (
    proc_id INTEGER NOT NULL,      -- sample_procs.id
    idx INTEGER NOT NULL,
    uuid_id INTEGER,
    gpu_util_m INTEGER,
    gpu_memory_kb INTEGER,
    gpu_memory_util_m INTEGER,
    PRIMARY KEY (proc_id, idx)
) WITHOUT ROWID;

-- --- Rectified jobs --------------------------------------------------------------------------
-- One row per rectified job instance (ingest/rectify.h). Key columns not used by the key kind are
-- 0: node_id for Slurm jobs; pid for jobs other than job 0; ppid and cmd_id unless the job-0
-- process is a rolled-up group. Summaries are updated incrementally: avg = *_sum / n_samples.
CREATE TABLE jobs (
    id INTEGER PRIMARY KEY,
    cluster_id INTEGER NOT NULL,
    job INTEGER NOT NULL,
    epoch INTEGER NOT NULL,
    node_id INTEGER NOT NULL,
    pid INTEGER NOT NULL,
    ppid INTEGER NOT NULL,
    cmd_id INTEGER NOT NULL,
    user_id INTEGER,
    first_seen INTEGER NOT NULL,
    last_seen INTEGER NOT NULL,
    n_samples INTEGER NOT NULL,
    nproc_sum INTEGER NOT NULL,
    nproc_peak INTEGER NOT NULL,
    cpu_sum_m INTEGER NOT NULL,
    cpu_peak_m INTEGER NOT NULL,
    mem_sum_kb INTEGER NOT NULL,
    mem_peak_kb INTEGER NOT NULL,
    gpu_sum_m INTEGER NOT NULL,
    gpu_peak_m INTEGER NOT NULL,
    gpumem_sum_kb INTEGER NOT NULL,
    gpumem_peak_kb INTEGER NOT NULL
);
CREATE INDEX jobs_key ON jobs (cluster_id, job, node_id, epoch, pid, ppid, cmd_id);
CREATE INDEX jobs_first_seen ON jobs (cluster_id, first_seen);

-- Each node-sample's contribution to a job, recorded when its sample_jobs row is new (so re-sent
-- data is never counted twice). Keyed by job first: a job's samples are read together.
CREATE TABLE job_samples (
    rjob_id INTEGER NOT NULL,      -- jobs.id
    sample_id INTEGER NOT NULL,    -- samples.id (gives node and time)
    nproc INTEGER NOT NULL,
    cpu_m INTEGER NOT NULL,
    mem_kb INTEGER NOT NULL,
    gpu_m INTEGER NOT NULL,
    gpumem_kb INTEGER NOT NULL,
    PRIMARY KEY (rjob_id, sample_id)
) WITHOUT ROWID;

CREATE TABLE job_hosts (
    rjob_id INTEGER NOT NULL,
    node_id INTEGER NOT NULL,
    PRIMARY KEY (rjob_id, node_id)
) WITHOUT ROWID;

CREATE TABLE job_cmds (
    rjob_id INTEGER NOT NULL,
    cmd_id INTEGER NOT NULL,
    PRIMARY KEY (rjob_id, cmd_id)
) WITHOUT ROWID;

-- --- Slurm job records -----------------------------------------------------------------------
-- History: every record as received. Keyed with time, so job data split over several envelopes
-- with one timestamp are different rows (different jobs), and a re-sent record is a duplicate.
CREATE TABLE slurm_jobs (
    cluster_id INTEGER NOT NULL,
    job_id INTEGER NOT NULL,
    job_step TEXT NOT NULL,        -- '' for the job itself
    time INTEGER NOT NULL,
    job_name TEXT,
    job_state TEXT,
    job_state_raw TEXT,
    array_job_id INTEGER,
    array_task_id INTEGER,
    het_job_id INTEGER,
    het_job_offset INTEGER,
    user_name TEXT,
    account TEXT,
    partition TEXT,
    reservation TEXT,
    distribution TEXT,
    submit_time INTEGER,
    start_time INTEGER,
    end_time INTEGER,
    time_limit_s INTEGER,
    priority INTEGER,
    nodes TEXT,                    -- the ranges as sent, joined with ','
    requested_resources TEXT,
    allocated_resources TEXT,
    requested_cpus INTEGER,
    requested_memory_per_node_kb INTEGER,
    requested_node_count INTEGER,
    minimum_cpus_per_node INTEGER,
    suspend_time_s INTEGER,
    exit_code INTEGER,
    sacct_alloc_tres TEXT,
    sacct_ave_cpu INTEGER,
    sacct_ave_disk_read INTEGER,
    sacct_ave_disk_write INTEGER,
    sacct_ave_rss INTEGER,
    sacct_ave_vmsize INTEGER,
    sacct_elapsed_raw INTEGER,
    sacct_max_rss INTEGER,
    sacct_max_vmsize INTEGER,
    sacct_min_cpu INTEGER,
    sacct_system_cpu INTEGER,
    sacct_user_cpu INTEGER,
    PRIMARY KEY (cluster_id, job_id, job_step, time)
) WITHOUT ROWID;

-- Current state: per field, the value of the latest record in which it was set (NULL fields of a
-- later record do not erase earlier values), so arrival order does not matter. time is the latest
-- record's time.
CREATE TABLE slurm_jobs_current (
    cluster_id INTEGER NOT NULL,
    job_id INTEGER NOT NULL,
    job_step TEXT NOT NULL,
    time INTEGER NOT NULL,
    job_name TEXT,
    job_state TEXT,
    job_state_raw TEXT,
    array_job_id INTEGER,
    array_task_id INTEGER,
    het_job_id INTEGER,
    het_job_offset INTEGER,
    user_name TEXT,
    account TEXT,
    partition TEXT,
    reservation TEXT,
    distribution TEXT,
    submit_time INTEGER,
    start_time INTEGER,
    end_time INTEGER,
    time_limit_s INTEGER,
    priority INTEGER,
    nodes TEXT,
    requested_resources TEXT,
    allocated_resources TEXT,
    requested_cpus INTEGER,
    requested_memory_per_node_kb INTEGER,
    requested_node_count INTEGER,
    minimum_cpus_per_node INTEGER,
    suspend_time_s INTEGER,
    exit_code INTEGER,
    sacct_alloc_tres TEXT,
    sacct_ave_cpu INTEGER,
    sacct_ave_disk_read INTEGER,
    sacct_ave_disk_write INTEGER,
    sacct_ave_rss INTEGER,
    sacct_ave_vmsize INTEGER,
    sacct_elapsed_raw INTEGER,
    sacct_max_rss INTEGER,
    sacct_max_vmsize INTEGER,
    sacct_min_cpu INTEGER,
    sacct_system_cpu INTEGER,
    sacct_user_cpu INTEGER,
    PRIMARY KEY (cluster_id, job_id, job_step)
) WITHOUT ROWID;

-- Expanded node lists of Slurm jobs (union over all records of the job step).
CREATE TABLE slurm_job_nodes (
    cluster_id INTEGER NOT NULL,
    job_id INTEGER NOT NULL,
    job_step TEXT NOT NULL,
    node_id INTEGER NOT NULL,
    PRIMARY KEY (cluster_id, job_id, job_step, node_id)
) WITHOUT ROWID;

-- --- Cluster envelopes -----------------------------------------------------------------------
CREATE TABLE cluster_info (
    cluster_id INTEGER NOT NULL,
    time INTEGER NOT NULL,
    slurm INTEGER NOT NULL,
    PRIMARY KEY (cluster_id, time)
) WITHOUT ROWID;

CREATE TABLE partitions (
    cluster_id INTEGER NOT NULL,
    time INTEGER NOT NULL,
    name_id INTEGER NOT NULL,      -- strings.id
    n_nodes INTEGER NOT NULL,
    PRIMARY KEY (cluster_id, time, name_id)
) WITHOUT ROWID;

CREATE TABLE partition_nodes (
    cluster_id INTEGER NOT NULL,
    time INTEGER NOT NULL,
    name_id INTEGER NOT NULL,
    node_id INTEGER NOT NULL,
    PRIMARY KEY (cluster_id, time, name_id, node_id)
) WITHOUT ROWID;

-- One row per (node, time, state): states are upper-case words (IDLE, DRAIN, ...).
CREATE TABLE node_states (
    node_id INTEGER NOT NULL,
    time INTEGER NOT NULL,
    state_id INTEGER NOT NULL,     -- strings.id
    PRIMARY KEY (node_id, time, state_id)
) WITHOUT ROWID;

-- --- Credentials -----------------------------------------------------------------------------
CREATE TABLE tokens (
    cluster TEXT PRIMARY KEY,
    hash TEXT NOT NULL,            -- sha256$<salt hex>$<digest hex>; never the secret
    read_only INTEGER NOT NULL,
    created INTEGER NOT NULL
);

-- --- Views for people at the sqlite3 prompt (names and times instead of ids) ----------------
CREATE VIEW v_processes AS
SELECT c.name AS cluster, n.name AS node, s.time AS time, datetime(s.time, 'unixepoch') AS time_utc,
       sj.job, sj.epoch, u.s AS user, p.pid, p.ppid, cmd.s AS cmd,
       p.resident_kb, p.virtual_kb, p.num_threads, p.cpu_avg_m / 1000.0 AS cpu_avg,
       p.cpu_util_m / 1000.0 AS cpu_util, p.cpu_time, p.data_read_kb, p.data_written_kb,
       p.data_cancelled_kb, p.rolledup, p.flags & 1 AS in_container, (p.flags >> 1) & 1 AS synthetic_pid,
       p.id AS proc_id
FROM sample_jobs sj
JOIN samples s ON s.id = sj.sample_id
JOIN nodes n ON n.id = s.node_id
JOIN clusters c ON c.id = n.cluster_id
LEFT JOIN strings u ON u.id = sj.user_id
-- CROSS JOIN keeps sample_procs in the innermost loop (a rowid range seek per sample job); without
-- statistics the planner would otherwise scan it whole.
CROSS JOIN sample_procs p ON p.id >= sj.proc_first AND p.id < sj.proc_first + sj.n_procs
LEFT JOIN strings cmd ON cmd.id = p.cmd_id;

CREATE VIEW v_jobs AS
SELECT j.id, c.name AS cluster, j.job, j.epoch, n.name AS node, u.s AS user,
       datetime(j.first_seen, 'unixepoch') AS first_seen, datetime(j.last_seen, 'unixepoch') AS last_seen,
       j.n_samples, j.nproc_peak AS processes,
       j.cpu_sum_m / 1000.0 / j.n_samples AS cpu_avg, j.cpu_peak_m / 1000.0 AS cpu_peak,
       j.mem_sum_kb / j.n_samples AS mem_avg_kb, j.mem_peak_kb,
       j.gpu_sum_m / 1000.0 / j.n_samples AS gpu_avg, j.gpu_peak_m / 1000.0 AS gpu_peak,
       j.gpumem_sum_kb / j.n_samples AS gpumem_avg_kb, j.gpumem_peak_kb
FROM jobs j
JOIN clusters c ON c.id = j.cluster_id
LEFT JOIN nodes n ON n.id = j.node_id
LEFT JOIN strings u ON u.id = j.user_id;
