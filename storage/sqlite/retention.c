/* storage/sqlite/retention.c — retention on SQLite (storage/core/retention.h): the writer's
 * maintenance deletes each kind of Sonar's raw rows once older than its retention, the same tables
 * PostgreSQL drops by week partition (storage/pg/weeks.c), in short transactions so that ingest
 * waits at most one slice.
 *
 * A pass fixes its cut-offs (now - the retention of each kind) when it starts and walks cursors,
 * each step touching a bounded number of rows through a key:
 *   jobs.id      per job first seen before the process cut: what the job list reads from a host's
 *                last sample is kept in job_hosts (usage_kept) and job_activity's latest time in its
 *                last_time once that sample expires, then the
 *                job_samples before the cut go (before the samples: a sample id is not freed while
 *                a job_samples row still names it),
 *   samples.id   the sample jobs and processes (and their GPUs) of samples before the process cut,
 *                the samples with their GPUs and disks before the node cut,
 *   nodes.id     envelopes and node states of one node (node cut),
 *   clusters.id  partition memberships and envelopes of no node (node_id 0) of one cluster (node
 *                cut), and its errors (errors cut),
 *   slurm        job steps whose latest record is before the Slurm cut, oldest first.
 * When a pass ends, retention_marks records each kind's cut. Job summaries (jobs, job_hosts,
 * job_cmds), the hourly load roll-ups, sysinfo, partitions' sizes and Chimbuko rows stay, as on
 * PostgreSQL. The pages freed go back to the file system by incremental vacuum (databases made by
 * fjord use auto_vacuum=INCREMENTAL). */
#include "storage/sqlite/int.h"

#include "log.h"
#include "storage/core/try.h"
#include "storage/ts/writer.h"
#include "timefmt.h"

#include <stdio.h>

#define STEP_IDS 512                   /* ids of samples or jobs looked at per step */
#define STEP_ROWS 4096                 /* envelopes, node states or memberships deleted per step and kind */
#define SLICE_NS (50 * 1000000LL)      /* one maintenance call's transaction, at most about this */
#define RELEASE_PAGES 1024             /* pages returned to the file system per call */
#define NS 1000000000LL

enum { PHASE_IDLE, PHASE_JOB_SAMPLES, PHASE_SAMPLES, PHASE_NODES, PHASE_CLUSTERS, PHASE_SLURM };
#define NEVER INT64_MIN /* the cut of a kind kept forever: no time is before it */

/* Runs sql with ?1.. bound to the int64s v[0..n-1]; *changed (if given) gets the rows deleted. */
static fj_status run(fj_store *s, const char *sql, const int64_t *v, int n, int64_t *changed, fj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
    for (int i = 0; rc == SQLITE_OK && i < n; i++)
        rc = sqlite3_bind_int64(st, i + 1, v[i]);
    if (rc == SQLITE_OK)
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return fj_sq_fail(s, rc, "retention", err);
    if (changed)
        *changed = sqlite3_changes64(s->db);
    return FJ_OK;
}

static fj_status max_id(fj_store *s, const char *table, int64_t *out, fj_err *err)
{
    char sql[64];
    snprintf(sql, sizeof sql, "SELECT coalesce(max(id), 0) FROM %s", table);
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    *out = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? FJ_OK : fj_sq_fail(s, rc, "retention", err);
}

static const char *const phase_table[] = {NULL, "jobs", "samples", "nodes", "clusters", NULL};

/* Moves to the next phase (or ends the pass), its cursor at the start of its table. */
static fj_status next_phase(fj_store *s, fj_err *err)
{
    struct fj_sq_retention *r = &s->ret;
    r->phase = r->phase == PHASE_SLURM ? PHASE_IDLE : r->phase + 1;
    r->cursor = 0;
    r->end = 0;
    /* a phase with nothing to delete is skipped */
    if ((r->phase == PHASE_JOB_SAMPLES && r->cut_proc == NEVER) ||
        (r->phase == PHASE_SAMPLES && r->cut_proc == NEVER && r->cut_node == NEVER) ||
        (r->phase == PHASE_NODES && r->cut_node == NEVER) ||
        (r->phase == PHASE_CLUSTERS && r->cut_node == NEVER && r->cut_err == NEVER))
        return next_phase(s, err);
    return r->phase == PHASE_IDLE || !phase_table[r->phase] ? FJ_OK : max_id(s, phase_table[r->phase], &r->end, err);
}

/* The samples in [lo, hi) before the cut; hi stays below the newest sample's id, so that the
 * writer's next id (max + 1) never names a deleted sample. */
#define EXPIRED_SAMPLES "SELECT id FROM samples WHERE id >= ?1 AND id < ?2 AND time < ?3"

/* The sample jobs and processes of samples before the process cut, then the samples (with their
 * GPUs, disks and whatever processes are left) before the node cut. */
static fj_status step_samples(fj_store *s, fj_err *err)
{
    struct fj_sq_retention *r = &s->ret;
    int64_t hi = r->cursor + STEP_IDS < r->end ? r->cursor + STEP_IDS : r->end;
    static const char *const procs[] = {
        /* the processes a sample job lists: ids proc_first .. proc_first + n_procs - 1 */
        "WITH RECURSIVE p(id, last) AS (SELECT proc_first, proc_first + n_procs - 1 FROM sample_jobs "
        "WHERE sample_id IN (" EXPIRED_SAMPLES ") AND proc_first IS NOT NULL AND n_procs > 0 "
        "UNION ALL SELECT id + 1, last FROM p WHERE id < last) "
        "DELETE FROM sample_proc_gpus WHERE proc_id IN (SELECT id FROM p)",
        "WITH RECURSIVE p(id, last) AS (SELECT proc_first, proc_first + n_procs - 1 FROM sample_jobs "
        "WHERE sample_id IN (" EXPIRED_SAMPLES ") AND proc_first IS NOT NULL AND n_procs > 0 "
        "UNION ALL SELECT id + 1, last FROM p WHERE id < last) "
        "DELETE FROM sample_procs WHERE id IN (SELECT id FROM p)",
        "DELETE FROM sample_jobs WHERE sample_id IN (" EXPIRED_SAMPLES ")",
    };
    static const char *const node[] = {
        "DELETE FROM sample_gpus WHERE sample_id IN (" EXPIRED_SAMPLES ")",
        "DELETE FROM sample_disks WHERE sample_id IN (" EXPIRED_SAMPLES ")",
        "DELETE FROM samples WHERE id IN (" EXPIRED_SAMPLES ")",
    };
    /* the process cut is never before the node cut: the processes go first */
    int64_t vp[] = {r->cursor, hi, r->cut_proc};
    int64_t vn[] = {r->cursor, hi, r->cut_node}, n = 0;
    for (size_t i = 0; vp[2] != NEVER && i < sizeof procs / sizeof *procs; i++)
        FJ_TRY(run(s, procs[i], vp, 3, NULL, err));
    for (size_t i = 0; vn[2] != NEVER && i < sizeof node / sizeof *node; i++)
        FJ_TRY(run(s, node[i], vn, 3, &n, err));
    r->deleted += n; /* counted as samples: the last statement's */
    r->cursor = hi;
    fj_sq_jcpu_forget(s); /* a kept previous node-sample may have lost its raw rows */
    return r->cursor >= r->end ? next_phase(s, err) : FJ_OK;
}

/* The latest job sample of host h of job j, at or before the job's last (as the job list reads it);
 * job_samples' key is (rjob_id, node_id, time), migration 0013. */
#define LAST_JOB_SAMPLE(col)                                                                        \
    "(SELECT " col " FROM job_samples js WHERE js.rjob_id = h.rjob_id AND js.node_id = h.node_id "  \
    "AND js.time <= j.last_seen ORDER BY js.time DESC LIMIT 1)"

/* What the job list reads from raw process rows (storage/query/jobs.c, job_usage of the driver's
 * layout): the sums of the processes' cumulative CPU time and I/O in the job's last sample on a
 * host. For the hosts of jobs ?1 <= id < ?2 first seen before the process cut ?3 whose last sample
 * is before the cut and whose usage is not kept yet (job_hosts_usage_todo), the sums go into
 * job_hosts now, before that sample's rows are deleted; a host with no sample left is marked done
 * with nulls, as the job list would answer. */
static const char KEEP_USAGE[] =
    "UPDATE job_hosts AS h SET usage_kept = 1, (cpu_time_s, read_kb, written_kb) = "
    "(SELECT sum(p.cpu_time), sum(p.data_read_kb), sum(p.data_written_kb) FROM sample_procs p "
    "WHERE p.id >= " LAST_JOB_SAMPLE("js.proc_first") " AND p.id < " LAST_JOB_SAMPLE("js.proc_first + js.n_procs")
    " AND (j.job <> 0 OR (p.pid = j.pid AND (j.cmd_id = 0 OR (p.ppid = j.ppid AND p.cmd_id = j.cmd_id))))) "
    "FROM jobs j WHERE j.id = h.rjob_id AND j.id >= ?1 AND j.id < ?2 AND j.first_seen < ?3 AND h.usage_kept = 0 "
    "AND coalesce(" LAST_JOB_SAMPLE("js.time") ", ?3 - 1) < ?3";

/* job_activity's last_time is read from the raw rows while they exist (the view job_activity_now,
 * migration 0017): for the jobs ?1 <= id < ?2 first seen before the cut ?3, the latest time of the
 * rows about to go is folded into the stored column first, where it is later. */
static const char KEEP_ACTIVITY_LAST[] =
    "UPDATE job_activity AS a SET last_time = "
    "(SELECT max(js.time) FROM job_samples js WHERE js.rjob_id = a.rjob_id AND js.node_id = a.node_id AND js.time < ?3) "
    "WHERE a.rjob_id IN (SELECT id FROM jobs WHERE id >= ?1 AND id < ?2 AND first_seen < ?3) "
    "AND EXISTS (SELECT 1 FROM job_samples js WHERE js.rjob_id = a.rjob_id AND js.node_id = a.node_id "
    "AND js.time > a.last_time AND js.time < ?3)";

static fj_status step_job_samples(fj_store *s, fj_err *err)
{
    struct fj_sq_retention *r = &s->ret;
    int64_t hi = r->cursor + STEP_IDS;
    int64_t v[] = {r->cursor, hi, r->cut_proc};
    FJ_TRY(run(s, KEEP_USAGE, v, 3, NULL, err));
    FJ_TRY(run(s, KEEP_ACTIVITY_LAST, v, 3, NULL, err));
    FJ_TRY(run(s,
               "DELETE FROM job_samples WHERE rjob_id IN "
               "(SELECT id FROM jobs WHERE id >= ?1 AND id < ?2 AND first_seen < ?3) AND time < ?3",
               v, 3, NULL, err));
    r->cursor = hi;
    fj_sq_jcpu_forget(s); /* the windows kept in memory may name deleted rows */
    return r->cursor > r->end ? next_phase(s, err) : FJ_OK;
}

/* Prepares one of delete_oldest's statements and binds what both take: ?1 a, ?2 b, ?3 text (when
 * given), ?4 the time rows are older than. SQLite's result code (*st NULL when not OK). */
static int prepare_oldest(fj_store *s, const char *sql, int64_t a, int64_t b, const char *text, int64_t before,
                          sqlite3_stmt **st)
{
    int rc = sqlite3_prepare_v2(s->db, sql, -1, st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(*st, 1, a);
        sqlite3_bind_int64(*st, 2, b);
        if (text)
            sqlite3_bind_text(*st, 3, text, -1, SQLITE_STATIC);
        sqlite3_bind_int64(*st, 4, before);
    }
    return rc;
}

/* Deletes the oldest rows of table matching `where` (?1, ?2: integers, ?3: text or unused) before
 * cut, at most about STEP_ROWS: up to the time of the STEP_ROWS-th oldest, when there is one
 * (*more then). Both statements seek the table's key: `where` fixes its leading columns, time
 * follows them. */
static fj_status delete_oldest(fj_store *s, const char *table, const char *where, int64_t a, int64_t b,
                               const char *text, int64_t cut, bool *more, fj_err *err)
{
    if (cut == NEVER)
        return FJ_OK;
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT time FROM %s WHERE %s AND time < ?4 ORDER BY time LIMIT 1 OFFSET ?5", table,
             where);
    sqlite3_stmt *st = NULL;
    int rc = prepare_oldest(s, sql, a, b, text, cut, &st);
    int64_t until = cut;
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(st, 5, STEP_ROWS);
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            until = sqlite3_column_int64(st, 0);
            *more = true;
            rc = SQLITE_DONE;
        }
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return fj_sq_fail(s, rc, "retention", err);
    snprintf(sql, sizeof sql, "DELETE FROM %s WHERE %s AND time < ?4", table, where);
    if ((rc = prepare_oldest(s, sql, a, b, text, until, &st)) == SQLITE_OK)
        rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? FJ_OK : fj_sq_fail(s, rc, "retention", err);
}

/* One node's envelopes (kind by kind: the key is cluster, node, kind, time) and node states. The
 * cursor moves on once nothing expired is left of it. */
static fj_status step_node(fj_store *s, fj_err *err)
{
    struct fj_sq_retention *r = &s->ret;
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->db, "SELECT cluster_id FROM nodes WHERE id = ?1", -1, &st, NULL);
    int64_t cluster = -1;
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, r->cursor);
        if ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            cluster = sqlite3_column_int64(st, 0);
            rc = SQLITE_DONE;
        }
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return fj_sq_fail(s, rc, "retention", err);
    bool more = false;
    for (int k = 0; cluster >= 0 && k < FJ_KIND__COUNT; k++)
        FJ_TRY(delete_oldest(s, "envelopes", "cluster_id = ?1 AND node_id = ?2 AND kind = ?3", cluster, r->cursor,
                             fj_kind_name((fj_kind)k), r->cut_node, &more, err));
    if (cluster >= 0)
        FJ_TRY(delete_oldest(s, "node_states", "node_id = ?2 AND ?1 = ?1", cluster, r->cursor, NULL, r->cut_node,
                             &more, err));
    if (!more)
        r->cursor++;
    return r->cursor > r->end ? next_phase(s, err) : FJ_OK;
}

static fj_status step_cluster(fj_store *s, fj_err *err)
{
    struct fj_sq_retention *r = &s->ret;
    bool more = false;
    FJ_TRY(delete_oldest(s, "partition_nodes", "cluster_id = ?1 AND ?2 = ?2", r->cursor, 0, NULL, r->cut_node, &more,
                         err));
    /* envelopes of no node (a cluster's partitions and node states) have node_id 0 */
    for (int k = 0; k < FJ_KIND__COUNT; k++)
        FJ_TRY(delete_oldest(s, "envelopes", "cluster_id = ?1 AND node_id = ?2 AND kind = ?3", r->cursor, 0,
                             fj_kind_name((fj_kind)k), r->cut_node, &more, err));
    /* errors_time is (cluster_id, time) */
    FJ_TRY(delete_oldest(s, "errors", "cluster_id = ?1 AND ?2 = ?2", r->cursor, 0, NULL, r->cut_err, &more, err));
    if (!more)
        r->cursor++;
    return r->cursor > r->end ? next_phase(s, err) : FJ_OK;
}

/* Up to STEP_IDS Slurm job steps whose latest record is before the cut, oldest first
 * (slurm_jobs_current_time), with their records and nodes. */
static fj_status step_slurm(fj_store *s, fj_err *err)
{
    struct fj_sq_retention *r = &s->ret;
    int64_t v[] = {r->cut_slurm, STEP_IDS}, n = 0;
    static const char *const del[] = {
        "DELETE FROM slurm_jobs WHERE (cluster_id, job_id, job_step) IN (SELECT cluster_id, job_id, job_step "
        "FROM slurm_jobs_current WHERE time < ?1 ORDER BY time LIMIT ?2)",
        "DELETE FROM slurm_job_nodes WHERE (cluster_id, job_id, job_step) IN (SELECT cluster_id, job_id, job_step "
        "FROM slurm_jobs_current WHERE time < ?1 ORDER BY time LIMIT ?2)",
        "DELETE FROM slurm_jobs_current WHERE (cluster_id, job_id, job_step) IN (SELECT cluster_id, job_id, job_step "
        "FROM slurm_jobs_current WHERE time < ?1 ORDER BY time LIMIT ?2)",
    };
    for (size_t i = 0; r->cut_slurm != NEVER && i < sizeof del / sizeof *del; i++)
        FJ_TRY(run(s, del[i], v, 2, &n, err));
    return n < STEP_IDS ? next_phase(s, err) : FJ_OK;
}

static fj_status step(fj_store *s, fj_err *err)
{
    switch (s->ret.phase) {
    case PHASE_JOB_SAMPLES:
        return step_job_samples(s, err);
    case PHASE_SAMPLES:
        return step_samples(s, err);
    case PHASE_NODES:
        return step_node(s, err);
    case PHASE_CLUSTERS:
        return step_cluster(s, err);
    case PHASE_SLURM:
        return step_slurm(s, err);
    default:
        return FJ_OK;
    }
}

void fj_sq_retention_init(fj_store *s, const fj_retention *keep)
{
    s->ret = (struct fj_sq_retention){.keep = *keep};
    const int64_t k[] = {keep->process_samples_s, keep->node_samples_s, keep->errors_s, keep->slurm_s};
    for (size_t i = 0; i < sizeof k / sizeof *k; i++)
        if (k[i] > 0 && (!s->ret.every_s || k[i] < s->ret.every_s))
            s->ret.every_s = k[i];
}

static int64_t cut_of(fj_time now, int64_t keep_s)
{
    return keep_s > 0 ? now - keep_s : NEVER;
}

/* Each kind's cut goes to retention_marks once its pass is complete; a mark only moves forward. */
static fj_status record_marks(fj_store *s, fj_err *err)
{
    const struct fj_sq_retention *r = &s->ret;
    const struct {
        const char *kind;
        int64_t cut;
    } marks[] = {{FJ_RET_PROCESS_SAMPLES, r->cut_proc},
                 {FJ_RET_NODE_SAMPLES, r->cut_node},
                 {FJ_RET_ERRORS, r->cut_err},
                 {FJ_RET_SLURM, r->cut_slurm}};
    for (size_t i = 0; i < sizeof marks / sizeof *marks; i++) {
        if (marks[i].cut == NEVER)
            continue;
        sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(s->db,
                                    "INSERT INTO retention_marks (kind, expired_before) VALUES (?1, ?2) "
                                    "ON CONFLICT (kind) DO UPDATE SET expired_before = "
                                    "max(expired_before, excluded.expired_before)",
                                    -1, &st, NULL);
        if (rc == SQLITE_OK) {
            sqlite3_bind_text(st, 1, marks[i].kind, -1, SQLITE_STATIC);
            sqlite3_bind_int64(st, 2, marks[i].cut);
            rc = sqlite3_step(st);
        }
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE)
            return fj_sq_fail(s, rc, "retention: marks", err);
    }
    return FJ_OK;
}

fj_status fj_sq_retention_maintain(fj_store *s, fj_err *err)
{
    struct fj_sq_retention *r = &s->ret;
    if (r->every_s <= 0 || s->mode != FJ_STORE_WRITE || s->migrating)
        return FJ_OK;
    int64_t start = fj_mono_ns();
    if (r->phase == PHASE_IDLE) {
        if (r->started && start < r->next_ns)
            return FJ_OK;
        r->started = true;
        fj_time now = fj_time_now();
        r->cut_proc = cut_of(now, r->keep.process_samples_s);
        r->cut_node = cut_of(now, r->keep.node_samples_s);
        if (r->cut_node > r->cut_proc) /* processes go with their node samples at the latest */
            r->cut_proc = r->cut_node;
        r->cut_err = cut_of(now, r->keep.errors_s);
        r->cut_slurm = cut_of(now, r->keep.slurm_s);
        r->deleted = 0;
        FJ_TRY(next_phase(s, err));
    }
    int rc = sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        return fj_sq_fail(s, rc, "retention: begin", err);
    fj_status st = FJ_OK;
    do
        st = step(s, err);
    while (st == FJ_OK && r->phase != PHASE_IDLE && fj_mono_ns() - start < SLICE_NS);
    if (st == FJ_OK && r->phase == PHASE_IDLE)
        st = record_marks(s, err);
    if (st == FJ_OK && (rc = sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL)) != SQLITE_OK)
        st = fj_sq_fail(s, rc, "retention: commit", err);
    if (st != FJ_OK) {
        if (!sqlite3_get_autocommit(s->db))
            sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
        r->phase = PHASE_IDLE; /* the next pass starts over, after the usual wait */
        r->next_ns = fj_mono_ns() + fj_tsw_retention_every(r->every_s * NS);
        return st;
    }
    char sql[48];
    snprintf(sql, sizeof sql, "PRAGMA incremental_vacuum(%d)", RELEASE_PAGES);
    if ((rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL)) != SQLITE_OK)
        return fj_sq_fail(s, rc, "retention: incremental vacuum", err);
    if (r->phase == PHASE_IDLE) {
        r->next_ns = fj_mono_ns() + fj_tsw_retention_every(r->every_s * NS);
        if (r->deleted)
            fj_info("sqlite: retention deleted %lld node samples (and their rows) older than %lld",
                    (long long)r->deleted, (long long)r->cut_node);
    }
    return FJ_OK;
}

fj_status fj_sq_maintain(fj_store *s, fj_err *err)
{
    FJ_TRY(fj_sq_ts_maintain(s, err));
    return fj_sq_retention_maintain(s, err);
}
