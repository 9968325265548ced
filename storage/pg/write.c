/* storage/pg/write.c — the PostgreSQL write path. One call is one transaction (group commit) with the
 * results and counts of the SQLite backend (docs/storage.md), written table by table: the rows of
 * every envelope of the group for one table go in one statement, INSERT ... SELECT FROM
 * unnest($1::bigint[], ...) ON CONFLICT DO NOTHING on the natural key. Counted tables return the
 * ordinals of the rows they inserted, so each envelope's rows are counted as inserted or duplicate
 * (the first copy of a row repeated within the group wins, as in SQLite). All statements are
 * prepared once per connection.
 *
 * Order of a transaction: names (clusters, nodes, strings), envelope meta, errors, notes, samples
 * and their children, new sample jobs and their processes, rectification, sysinfo, Slurm, cluster,
 * aicr snapshots. Within a statement rows are sorted by key, and every writer takes the tables in
 * this order, so two writers (threads of one server, or servers) wait for each other at worst,
 * without deadlocking (PostgreSQL would break a deadlock anyway: the write answers 503 and is
 * retried). Within rectification (locks, instances, job hosts and commands, the job CPU drain,
 * then the jobs and their job_samples rows, written once with their CPU figures; jobs first when
 * stored jobs merge) every row written belongs to a job whose node or Slurm row the transaction
 * has locked, so the order of those tables does not matter.
 *
 * Rectification with several writers: the instances of a job key are read, merged and updated by
 * one transaction at a time. Keys of one node (local jobs, job 0 processes) are serialised by
 * locking the node's row (SELECT ... FOR UPDATE on nodes); a Slurm job, which spans nodes and so
 * writers, has exactly one row (partial unique index jobs_slurm_key), created empty if needed with
 * INSERT ... ON CONFLICT DO NOTHING and then locked with SELECT ... FOR UPDATE. Instances are read
 * after the locks are held, in READ COMMITTED, so they include everything other writers committed;
 * the summaries are then computed in memory with storage/core/rectify.h and written back in batches.
 * The Slurm current view is recomputed from history under the lock of its row, likewise. */
#include "storage/pg/int.h"
#include "storage/core/try.h"
#include "storage/pg/ts.h"

#include "alloc.h"
#include "storage/core/cmp.h"
#include "storage/core/grow.h"
#include "storage/core/rectify.h"
#include "storage/core/write_values.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- generated SQL --------------------------------------------------------------------------- */

/* The Slurm record fields after (cluster_id, job_id, job_step), with their types (t text,
 * b bigint), in the order of the columns and of add_slurm below. */
#define SLURM_FIELDS(X)                                                                                  \
    X(job_name, t) X(job_state, t) X(job_state_raw, t) X(array_job_id, b) X(array_task_id, b)            \
    X(het_job_id, b) X(het_job_offset, b) X(user_name, t) X(account, t) X(partition, t)                  \
    X(reservation, t) X(distribution, t) X(submit_time, b) X(start_time, b) X(end_time, b)               \
    X(time_limit_s, b) X(priority, b) X(nodes, t) X(requested_resources, t) X(allocated_resources, t)    \
    X(requested_cpus, b) X(requested_memory_per_node_kb, b) X(requested_node_count, b)                   \
    X(minimum_cpus_per_node, b) X(suspend_time_s, b) X(exit_code, b) X(sacct_alloc_tres, t)              \
    X(sacct_ave_cpu, b) X(sacct_ave_disk_read, b) X(sacct_ave_disk_write, b) X(sacct_ave_rss, b)         \
    X(sacct_ave_vmsize, b) X(sacct_elapsed_raw, b) X(sacct_max_rss, b) X(sacct_max_vmsize, b)            \
    X(sacct_min_cpu, b) X(sacct_system_cpu, b) X(sacct_user_cpu, b)

#define SF_COL(f, t) "," #f
#define SF_TYPE(f, t) #t
#define SF_ONE(f, t) +1
#define SF_SET(f, t) "," #f "=r." #f
#define SF_LATEST(f, t) ",(array_agg(h." #f " ORDER BY h.time DESC) FILTER (WHERE h." #f " IS NOT NULL))[1] AS " #f

enum { SLURM_NF = 0 SLURM_FIELDS(SF_ONE), SLURM_NCOLS = SLURM_NF + 4 };
_Static_assert(FJ_WV_SLURM_N == SLURM_NF + 2, "fj_wv_slurm gives job_id, job_step and the fields");

#define JOB_SUM_COLS                                                                                     \
    "first_seen,last_seen,n_samples,nproc_sum,nproc_peak,cpu_sum_m,cpu_peak_m,mem_sum_kb,mem_peak_kb,"   \
    "gpu_sum_m,gpu_peak_m,gpumem_sum_kb,gpumem_peak_kb"
#define JOB_COLS "id,cluster_id,job,node_id,epoch,pid,ppid,cmd_id,user_id," JOB_SUM_COLS ",cpu_win_peak_m"
#define JOB_XCOLS                                                                                        \
    "x.id,x.cluster_id,x.job,x.node_id,x.epoch,x.pid,x.ppid,x.cmd_id,x.user_id,x.first_seen,x.last_seen," \
    "x.n_samples,x.nproc_sum,x.nproc_peak,x.cpu_sum_m,x.cpu_peak_m,x.mem_sum_kb,x.mem_peak_kb,"          \
    "x.gpu_sum_m,x.gpu_peak_m,x.gpumem_sum_kb,x.gpumem_peak_kb,coalesce(x.cpu_win_peak_m,-1)"

/* One batched statement. The high-volume ones send their rows with COPY (text format), which
 * PostgreSQL parses several times faster than array parameters: straight into the table (DIRECT,
 * plain inserts), or into a temporary staging table of the session from which a prepared
 * INSERT ... SELECT ... ON CONFLICT DO NOTHING takes them (ORDERED), counting the inserted rows
 * (COUNTED: the statement returns their ordinals). The statement takes them with DELETE ...
 * RETURNING, so the table is empty again for the next group without being truncated at COMMIT
 * (ON COMMIT DELETE ROWS truncated every staging table of the session at every commit: 5 % of
 * the machine's CPU under the Sonar benchmark). Rows of a group that rolled back are gone with
 * it; what the deleted rows leave behind is truncated every STAGE_GROUPS groups (empty_stages).
 * ARRAY statements take their rows as array parameters, INSERT ... SELECT FROM unnest($1::bigint[],
 * ...): used where the rows are joined with a big table, since the planner's estimate for unnest
 * (not for a staging table whose size it only learns when planning) keeps that join an index
 * lookup per row. Rows go in sorted by order, then by arrival, so the first copy of a row
 * repeated within a group wins. */
typedef enum { SP_ARRAY, SP_DIRECT, SP_ORDERED, SP_COUNTED } sp_kind;

typedef struct spec {
    fj_pg_stmt_id id;
    sp_kind kind;
    const char *table;
    const char *stage; /* ORDERED, COUNTED: the staging table */
    const char *cols;  /* comma-separated, no spaces */
    const char *types; /* one letter per column: b bigint, t text, f float8, y bytea, i integer */
    const char *order; /* ORDERED, COUNTED */
    const char *keys;  /* COUNTED: the natural key */
} spec;

static const spec specs[] = {
    {FJ_PG_ENV_INS, SP_ORDERED, "envelopes", "fjs_envelopes",
     "cluster_id,node_id,kind,time,producer,version,format,unknown_fields", "bbtbttbb", "cluster_id,node_id,kind,time",
     NULL},
    {FJ_PG_ERROR_INS, SP_COUNTED, "errors", "fjs_errors", "cluster_id,node_id,time,source,kind,detail", "bbbttt",
     "cluster_id,node_id,time,source,md5(detail)", "cluster_id,node_id,time,source,detail"},
    {FJ_PG_NOTE_INS, SP_ORDERED, "notes", "fjs_notes", "cluster_id,node_id,kind,time,path,note,detail", "bbtbttt",
     "cluster_id,node_id,kind,time,path,note", NULL},
    {FJ_PG_SAMPLE_INS, SP_COUNTED, "samples", "fjs_samples",
     "node_id,time,boot,used_memory_kb,load1,load5,load15,runnable_entities,existing_entities,cpus", "bbbbfffbby",
     "node_id,time", "node_id,time"},
    {FJ_PG_SGPU_INS, SP_COUNTED, "sample_gpus", "fjs_sample_gpus",
     "node_id,time,idx,uuid_id,failing,fan,compute_mode_id,performance_state,memory_kb,ce_util,memory_util,"
     "temperature,power,power_limit,ce_clock,memory_clock,energy_mj",
     "bbbbbbbbbbbbbbbbb", "node_id,time,idx", "node_id,time,idx"},
    {FJ_PG_SDISK_INS, SP_COUNTED, "sample_disks", "fjs_sample_disks", "node_id,time,name_id,major,minor,stats",
     "bbbbby", "node_id,time,name_id", "node_id,time,name_id"},
    /* a node-sample's new sample jobs and their processes, one array a column
     * (migrations/postgres/0008_process_sets.sql, 0012_sample_jobs_in_sets.sql) */
    {FJ_PG_PROC_INS, SP_DIRECT, "sample_proc_sets", NULL,
     "node_id,time,job,epoch,seq,pid,ppid,cmd_id,resident_kb,virtual_kb,num_threads,cpu_avg_m,cpu_util_m,cpu_time,"
     "data_read_kb,data_written_kb,data_cancelled_kb,rolledup,flags,sj_job,sj_epoch,sj_user_id,sj_n_procs",
     "bbbbibbbbbbbbbbbbbibbbb", NULL, NULL},
    {FJ_PG_PGPU_INS, SP_DIRECT, "sample_proc_gpus", NULL,
     "node_id,time,job,epoch,seq,idx,uuid_id,gpu_util_m,gpu_memory_kb,gpu_memory_util_m", "bbbbibbbbb", NULL, NULL},
    {FJ_PG_RJ_INS, SP_DIRECT, "jobs", NULL, JOB_COLS, "bbbbbbbbbbbbbbbbbbbbbbb", NULL, NULL},
    {FJ_PG_RJ_FIND, SP_ARRAY, NULL, NULL, NULL, "bbbbbbbbb", NULL, NULL},
    {FJ_PG_RJ_UPD, SP_ARRAY, NULL, NULL, NULL, "bbbbbbbbbbbbbbbb", NULL, NULL},
    {FJ_PG_RJS_INS, SP_ORDERED, "job_samples", "fjs_job_samples",
     "rjob_id,node_id,time,nproc,cpu_m,mem_kb,gpu_m,gpumem_kb,cpu_win_m", "bbbbbbbbb", "rjob_id,node_id,time", NULL},
    {FJ_PG_RJH_INS, SP_ORDERED, "job_hosts", "fjs_job_hosts", "rjob_id,node_id", "bb", "rjob_id,node_id", NULL},
    {FJ_PG_RJC_INS, SP_ORDERED, "job_cmds", "fjs_job_cmds", "rjob_id,cmd_id", "bb", "rjob_id,cmd_id", NULL},
    {FJ_PG_SLURM_INS, SP_COUNTED, "slurm_jobs", "fjs_slurm_jobs", "cluster_id,job_id,job_step" SLURM_FIELDS(SF_COL) ",time",
     "bbt" SLURM_FIELDS(SF_TYPE) "b", "cluster_id,job_id,job_step,time", "cluster_id,job_id,job_step,time"},
    {FJ_PG_SLURM_NODE_INS, SP_ORDERED, "slurm_job_nodes", "fjs_slurm_job_nodes", "cluster_id,job_id,job_step,node_id",
     "bbtb", "cluster_id,job_id,job_step,node_id", NULL},
    {FJ_PG_CINFO_INS, SP_COUNTED, "cluster_info", "fjs_cluster_info", "cluster_id,time,slurm", "bbi", "cluster_id,time",
     "cluster_id,time"},
    {FJ_PG_PART_INS, SP_COUNTED, "partitions", "fjs_partitions", "cluster_id,time,name_id,n_nodes", "bbbb",
     "cluster_id,time,name_id", "cluster_id,time,name_id"},
    {FJ_PG_PNODE_INS, SP_COUNTED, "partition_nodes", "fjs_partition_nodes", "cluster_id,time,name_id,node_id", "bbbb",
     "cluster_id,time,name_id,node_id", "cluster_id,time,name_id,node_id"},
    {FJ_PG_NSTATE_INS, SP_COUNTED, "node_states", "fjs_node_states", "node_id,time,state_id", "bbb",
     "node_id,time,state_id", "node_id,time,state_id"},
};
#define N_SPECS (sizeof specs / sizeof specs[0])
#define NONE_SPEC ((size_t)-1)

static const char rj_slurm_place_sql[] =
    "INSERT INTO jobs(cluster_id,job,epoch,node_id,pid,ppid,cmd_id," JOB_SUM_COLS ") "
    "SELECT c, j, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 FROM unnest($1::bigint[],$2::bigint[]) u(c,j) "
    "ORDER BY c, j ON CONFLICT (cluster_id, job) WHERE epoch = 0 AND job <> 0 DO NOTHING";
static const char rj_slurm_lock_sql[] =
    "SELECT " JOB_XCOLS " FROM jobs x JOIN unnest($1::bigint[],$2::bigint[]) u(c,j) ON x.cluster_id = u.c AND "
    "x.job = u.j WHERE x.epoch = 0 AND x.job <> 0 ORDER BY x.cluster_id, x.job FOR UPDATE OF x";
static const char rj_find_sql[] =
    "SELECT " JOB_XCOLS " FROM jobs x JOIN unnest($1::bigint[],$2::bigint[],$3::bigint[],$4::bigint[],"
    "$5::bigint[],$6::bigint[],$7::bigint[],$8::bigint[],$9::bigint[]) u(c,jb,n,e,p,pp,cm,lo,hi) "
    "ON x.cluster_id = u.c AND x.job = u.jb AND x.node_id = u.n AND x.epoch = u.e AND x.pid = u.p AND "
    "x.ppid = u.pp AND x.cmd_id = u.cm WHERE x.first_seen <= u.hi AND x.last_seen >= u.lo ORDER BY x.id";
static const char rj_upd_sql[] =
    "UPDATE jobs x SET user_id = u.user_id, first_seen = u.first_seen, last_seen = u.last_seen, n_samples = "
    "u.n_samples, nproc_sum = u.nproc_sum, nproc_peak = u.nproc_peak, cpu_sum_m = u.cpu_sum_m, cpu_peak_m = "
    "u.cpu_peak_m, mem_sum_kb = u.mem_sum_kb, mem_peak_kb = u.mem_peak_kb, gpu_sum_m = u.gpu_sum_m, gpu_peak_m = "
    "u.gpu_peak_m, gpumem_sum_kb = u.gpumem_sum_kb, gpumem_peak_kb = u.gpumem_peak_kb, cpu_win_peak_m = "
    "nullif(u.cpu_win_peak_m, -1) FROM unnest($1::bigint[],$2::bigint[],$3::bigint[],$4::bigint[],$5::bigint[],"
    "$6::bigint[],$7::bigint[],$8::bigint[],$9::bigint[],$10::bigint[],$11::bigint[],$12::bigint[],$13::bigint[],"
    "$14::bigint[],$15::bigint[],$16::bigint[]) u(id,user_id," JOB_SUM_COLS ",cpu_win_peak_m) WHERE x.id = u.id";
static const char slurm_recompute_sql[] =
    "UPDATE slurm_jobs_current x SET time = r.time" SLURM_FIELDS(SF_SET) " FROM (SELECT h.cluster_id, h.job_id, "
    "h.job_step, max(h.time) AS time" SLURM_FIELDS(SF_LATEST) " FROM slurm_jobs h JOIN unnest($1::bigint[],"
    "$2::bigint[],$3::text[]) u(c,j,s) ON h.cluster_id = u.c AND h.job_id = u.j AND h.job_step = u.s "
    "GROUP BY h.cluster_id, h.job_id, h.job_step) r WHERE x.cluster_id = r.cluster_id AND x.job_id = r.job_id AND "
    "x.job_step = r.job_step";

/* Built once per process into static storage, without the allocation wrapper: they are part of
 * the program, not of a request, and must not be lost to an injected allocation failure. An entry
 * that does not fit stays empty, and using it fails cleanly. */
#define SPEC_SQL_MAX 8192
static char spec_sql[N_SPECS][SPEC_SQL_MAX];   /* the prepared statement (not for DIRECT) */
static char spec_copy[N_SPECS][SPEC_SQL_MAX];  /* COPY ... FROM STDIN */
static char spec_stage[N_SPECS][SPEC_SQL_MAX]; /* CREATE TEMP TABLE of the staging table */
static pthread_once_t spec_once = PTHREAD_ONCE_INIT;

static bool fits(int len)
{
    return len >= 0 && len < SPEC_SQL_MAX;
}

static void build_spec(const spec *p, size_t k)
{
    if (p->kind == SP_ARRAY)
        return;
    char *sql = spec_sql[k], *copy = spec_copy[k], *stage = spec_stage[k];
    bool ok;
    if (p->kind == SP_DIRECT) {
        ok = fits(snprintf(copy, SPEC_SQL_MAX, "COPY %s(%s) FROM STDIN", p->table, p->cols));
    } else {
        /* the staging table: the columns with their types, then the ordinal */
        char decl[SPEC_SQL_MAX / 2];
        size_t off = 0;
        const char *c = p->cols;
        for (size_t i = 0; p->types[i] && off < sizeof decl; i++) {
            size_t len = strcspn(c, ",");
            off += (size_t)snprintf(decl + off, sizeof decl - off, "%.*s %s,", (int)len, c, fj_pg_type_name(p->types[i]));
            c += len + (c[len] == ',');
        }
        ok = off < sizeof decl &&
             fits(snprintf(stage, SPEC_SQL_MAX, "CREATE TEMP TABLE IF NOT EXISTS %s (%so bigint)", p->stage, decl)) &&
             fits(snprintf(copy, SPEC_SQL_MAX, "COPY %s(%s,o) FROM STDIN", p->stage, p->cols));
        if (ok && p->kind == SP_COUNTED)
            ok = fits(snprintf(sql, SPEC_SQL_MAX,
                               "WITH d AS (DELETE FROM %s RETURNING *), i AS (INSERT INTO %s(%s) SELECT %s FROM d "
                               "ORDER BY %s,o ON CONFLICT DO NOTHING RETURNING %s) SELECT min(u.o) FROM d u JOIN i "
                               "USING (%s) GROUP BY %s",
                               p->stage, p->table, p->cols, p->cols, p->order, p->keys, p->keys, p->keys));
        else if (ok)
            ok = fits(snprintf(sql, SPEC_SQL_MAX,
                               "WITH d AS (DELETE FROM %s RETURNING *) INSERT INTO %s(%s) SELECT %s FROM d ORDER BY "
                               "%s,o ON CONFLICT DO NOTHING",
                               p->stage, p->table, p->cols, p->cols, p->order));
    }
    if (!ok)
        sql[0] = copy[0] = stage[0] = '\0';
}

static void build_all(void)
{
    for (size_t i = 0; i < N_SPECS; i++)
        build_spec(&specs[i], i);
}

static size_t spec_index(fj_pg_stmt_id id)
{
    for (size_t i = 0; i < N_SPECS; i++)
        if (specs[i].id == id)
            return i;
    return NONE_SPEC;
}

const char *fj_pg_built_sql(fj_pg_stmt_id id)
{
    switch (id) {
    case FJ_PG_RJ_SLURM_PLACE: return rj_slurm_place_sql;
    case FJ_PG_RJ_SLURM_LOCK: return rj_slurm_lock_sql;
    case FJ_PG_RJ_FIND: return rj_find_sql;
    case FJ_PG_RJ_UPD: return rj_upd_sql;
    case FJ_PG_SLURM_CUR_RECOMPUTE: return slurm_recompute_sql;
    default: break;
    }
    pthread_once(&spec_once, build_all);
    size_t k = spec_index(id);
    return k != NONE_SPEC && spec_sql[k][0] ? spec_sql[k] : NULL;
}

/* --- write state ------------------------------------------------------------------------------ */

typedef struct wenv {
    const fj_envelope *e;
    fj_write_count *cnt;
    int64_t cluster_id, node_id;
    bool sample_new; /* a sample whose node-sample (samples row) this group inserted */
} wenv;

/* A sample job of the group: its sorted process keys are pk[pk0 .. pk0 + n). */
typedef struct sjrow {
    size_t env;
    const fj_sample_job *j;
    int64_t user_id;
    size_t pk0, n, n_unique;
} sjrow;

/* A distinct job key of the group; its live instances form a list in id order. */
typedef struct rk {
    fj_rjkey k;
    int64_t gap;
    fj_time lo, hi;
    bool slurm;
    size_t head, tail;
} rk;

/* An instance of a key: loaded (existing) or created in this group (id 0 until written). */
typedef struct ri {
    int64_t id;
    size_t key, next;
    fj_jobsum sum;
    int64_t win_m; /* cpu_win_peak_m, -1 = NULL */
    int64_t user_id;
    bool existing, dirty, dead;
    size_t into; /* dead: merged into this one */
} ri;

/* A node-sample's (or, for job 0, a process's) contribution to its job. */
typedef struct rc {
    size_t key;
    fj_time t;
    int64_t node_id, user_id;
    fj_jobcontrib c;
    size_t cmd0, ncmd;
    size_t inst;
} rc;

#define NONE ((size_t)-1)

/* The group's envelopes that keep() accepts: k the index, we the envelope's state. (The inner
 * loop runs once per kept envelope, so continue goes on with the next.) */
#define FOR_ENVS(w, k, we, keep)                                                                         \
    for (size_t k = 0; k < (w)->n_envs; k++)                                                             \
        for (const wenv *we = &(w)->envs[k]; we && keep(we->e); we = NULL)

/* The array columns of a sample_proc_sets row: job, epoch, seq, then the process's values; then
 * the sample jobs' job, epoch, user_id and n_procs. */
enum { SET_COLS = 3 + FJ_WV_PROC_N, SJ_COLS = 4 };

struct fj_pg_wstate {
    fj_pg_cols t;
    fj_pg_cols set;   /* one node-sample's processes as array literals, a column each */
    fj_pg_cols sjset; /* and its new sample jobs */
    fj_sort_key *sj_keys; /* the group's sample jobs: (node, time, job, epoch) and place, sorted */
    size_t cap_sj_keys;
    wenv *envs;
    size_t n_envs, cap_envs;
    bool *flags; /* per row of the last counted statement: inserted */
    size_t cap_flags;
    fj_wv_pkey *pk;
    size_t n_pk, cap_pk;
    sjrow *sj;
    size_t n_sj, cap_sj;
    fj_intern keymap; /* fj_rjkey -> 1 + index into keys */
    rk *keys;
    size_t n_keys, cap_keys;
    ri *inst;
    size_t n_inst, cap_inst;
    rc *con;
    size_t n_con, cap_con;
    fj_pg_jcpu_added *added; /* per contribution: its job_samples row's CPU figures (jobcpu.c) */
    size_t cap_added;
    fj_pg_jcpu_job *pjobs; /* the jobs the group writes, for the drain (pending_jobs) */
    size_t n_pjobs, cap_pjobs;
    fj_pg_jcpu_sjob *msj; /* the group's new sample jobs and their processes, for the drain */
    size_t n_msj, cap_msj;
    fj_jcpu_proc *mprocs;
    size_t n_mprocs, cap_mprocs;
    int64_t *cmds;
    size_t n_cmds, cap_cmds;
    size_t *scratch; /* live instances of one key, and which of them a time matches */
    size_t cap_scratch;
    fj_jobsum *sums;
    size_t cap_sums;
    unsigned char *bytes; /* packed varints */
    size_t cap_bytes;
    fj_time *times;
    size_t cap_times;
    /* (job, host) and (job, command) pairs this connection has committed (job id -> the pair's
     * code, pair_code): they are not sent again (write_hosts_cmds). Job ids are never handed out
     * twice and a job's pairs are deleted only with the job (a merge moves them to the
     * survivor), so a committed pair stays true for every id a later group can write; what
     * another connection committed is merely sent again and ignored (ON CONFLICT). The group's
     * own pairs wait in pair_new until its COMMIT. */
    fj_intern pairs;
    int64_t *pair_new; /* (job id, code) */
    size_t n_pair_new, cap_pair_new;
};

#define PAIRS_MAX 262144 /* committed pairs remembered; past this the memory starts over */

typedef struct wctx {
    fj_store *s;
    struct fj_pg_wstate *w;
    fj_err *err;
    bool rollups; /* load_hourly_todo has rows to recompute before COMMIT */
} wctx;

static fj_status oom(wctx *x)
{
    return fj_err_set(x->err, FJ_ENOMEM, "db", "out of memory");
}

/* Room for need elements in the heap array arr (storage/core/grow.h), or out of memory. */
#define GROW(x, arr, cap, need) (fj_grow(&(arr), &(cap), (need), sizeof *(arr), 64) ? FJ_OK : oom(x))

void fj_pg_write_free(fj_store *s)
{
    struct fj_pg_wstate *w = s->w;
    if (!w)
        return;
    fj_pg_cols_free(&w->t);
    fj_pg_cols_free(&w->set);
    fj_pg_cols_free(&w->sjset);
    fj_intern_clear(&w->keymap);
    fj_intern_clear(&w->pairs);
    void *heap[] = {w->sj_keys, w->envs,   w->flags,   w->pk,   w->sj,   w->keys,  w->inst,     w->con, w->added,
                    w->pjobs,   w->msj,    w->mprocs,  w->cmds, w->scratch, w->sums, w->bytes, w->times,
                    w->pair_new, w};
    for (size_t i = 0; i < sizeof heap / sizeof heap[0]; i++)
        fj_free(heap[i]);
    s->w = NULL;
}

/* --- running batched statements --------------------------------------------------------------- */

/* Starts the rows of a batched statement (a spec): COPY text or arrays as the spec says. */
static void begin_rows(wctx *x, fj_pg_stmt_id id)
{
    fj_pg_cols *t = &x->w->t;
    fj_pg_cols_reset(t);
    size_t k = spec_index(id);
    t->ncols = k == NONE_SPEC ? 0 : (int)strlen(specs[k].types);
    if (k != NONE_SPEC && specs[k].kind != SP_ARRAY)
        fj_pg_cols_copy(t, specs[k].kind != SP_DIRECT);
}

static fj_status cols_status(wctx *x)
{
    fj_status st = x->w->t.st;
    if (st == FJ_ETOOBIG)
        return fj_err_set(x->err, FJ_ETOOBIG, "db", "a group commit holds more rows than one statement takes");
    return st == FJ_OK ? FJ_OK : oom(x);
}

/* Sends the rows of x->w->t (COPY text) with COPY ... FROM STDIN. */
static fj_status copy_in(wctx *x, const char *copy_sql, const char *what)
{
    PGconn *c = x->s->conn;
    if (!copy_sql[0])
        return fj_err_set(x->err, FJ_EINTERNAL, "db", "postgres: %s: statement too long", what);
    if (!c || PQstatus(c) != CONNECTION_OK)
        return fj_pg_fail(x->s, NULL, what, x->err);
    PGresult *r = PQexec(c, copy_sql);
    if (!r || PQresultStatus(r) != PGRES_COPY_IN) {
        fj_status st = fj_pg_fail(x->s, r, what, x->err);
        PQclear(r);
        return st;
    }
    PQclear(r);
    const fj_buf *b = &x->w->t.c[0].b;
    bool sent = true;
    for (size_t off = 0; sent && off < b->len;) { /* in pieces: PQputCopyData takes an int */
        size_t n = b->len - off < ((size_t)1 << 20) ? b->len - off : (size_t)1 << 20;
        sent = PQputCopyData(c, b->data + off, (int)n) == 1;
        off += n;
    }
    bool ended = PQputCopyEnd(c, sent ? NULL : "fjord: sending rows failed") == 1;
    fj_status st = FJ_OK;
    while ((r = PQgetResult(c))) {
        if (st == FJ_OK && PQresultStatus(r) != PGRES_COMMAND_OK)
            st = fj_pg_fail(x->s, r, what, x->err);
        PQclear(r);
    }
    if (st == FJ_OK && (!sent || !ended))
        st = fj_pg_fail(x->s, NULL, what, x->err);
    return st;
}

#define STAGE_GROUPS 64 /* write groups between two truncations of the staging tables */
/* Write groups between two preparations of the session's statements. PostgreSQL keeps a prepared
 * statement's plan (made for no particular parameters) until something invalidates it, and makes
 * it with the tables' sizes of that moment: a plan made while a young table had a few pages reads
 * all of it for every key once it has grown (jobs, envelopes: 5 ms a group at 50,000 rows in a
 * benchmark's fresh database) until autovacuum's next ANALYZE of the table, a minute or more
 * away. Preparing again every so many groups bounds that; the first runs after it are planned for
 * their values, some 0.2 ms each: under 0.2 ms a group on average. */
#define PLAN_GROUPS 256

/* Every STAGE_GROUPS groups, the space the staging tables' deleted rows hold is given back: they
 * are truncated (in the group's transaction; a rollback keeps them as they were, which is as
 * correct, only larger). PostgreSQL does not vacuum temporary tables. */
static fj_status empty_stages(wctx *x)
{
    fj_store *s = x->s;
    if (++s->stage_groups < STAGE_GROUPS)
        return FJ_OK;
    s->stage_groups = 0;
    char sql[1024] = "TRUNCATE ";
    const size_t start = strlen(sql);
    size_t off = start;
    for (size_t k = 0; k < N_SPECS; k++)
        if (specs[k].stage && s->staged[specs[k].id] && off + strlen(specs[k].stage) + 2 < sizeof sql)
            off += (size_t)snprintf(sql + off, sizeof sql - off, "%s%s", off > start ? "," : "", specs[k].stage);
    return off > start ? fj_pg_exec(s, sql, "empty staging tables", x->err) : FJ_OK;
}

/* Runs a batched statement over the rows of x->w->t (nothing when there are none). */
static fj_status run_rows(wctx *x, fj_pg_stmt_id id, PGresult **res, const char *what)
{
    if (res)
        *res = NULL;
    if (!x->w->t.nrows)
        return FJ_OK;
    const char *vals[FJ_PG_MAXCOLS];
    if (fj_pg_cols_finish(&x->w->t, vals) != FJ_OK)
        return cols_status(x);
    if (!x->w->t.copy)
        return fj_pg_run(x->s, id, x->w->t.ncols, vals, res, what, x->err);
    pthread_once(&spec_once, build_all);
    size_t k = spec_index(id);
    if (k == NONE_SPEC)
        return fj_err_set(x->err, FJ_EINTERNAL, "db", "postgres: %s: not a batched statement", what);
    const spec *p = &specs[k];
    if (p->kind != SP_DIRECT && !x->s->staged[id]) { /* once per session */
        if (!spec_stage[k][0])
            return fj_err_set(x->err, FJ_EINTERNAL, "db", "postgres: %s: statement too long", what);
        FJ_TRY(fj_pg_exec(x->s, spec_stage[k], what, x->err));
        x->s->staged[id] = true;
    }
    FJ_TRY(copy_in(x, spec_copy[k], what));
    if (p->kind == SP_DIRECT)
        return FJ_OK;
    return fj_pg_run(x->s, id, 0, NULL, res, what, x->err);
}

/* A counted insert: marks which rows were inserted (x->w->flags) and, when count is set, counts
 * every row for its envelope. */
static fj_status run_counted(wctx *x, fj_pg_stmt_id id, const char *what, bool count)
{
    struct fj_pg_wstate *w = x->w;
    size_t n = w->t.nrows;
    FJ_TRY(GROW(x, w->flags, w->cap_flags, n + 1));
    memset(w->flags, 0, (n + 1) * sizeof *w->flags);
    PGresult *r;
    FJ_TRY(run_rows(x, id, &r, what));
    if (!r)
        return FJ_OK;
    for (int i = 0; i < PQntuples(r); i++) {
        int64_t o = fj_pg_int(r, i, 0);
        if (o >= 1 && (size_t)o <= n)
            w->flags[o - 1] = true;
    }
    PQclear(r);
    if (count)
        for (size_t i = 0; i < n; i++) {
            fj_write_count *c = w->envs[w->t.env[i]].cnt;
            if (w->flags[i])
                c->inserted++;
            else
                c->duplicates++;
        }
    return FJ_OK;
}

/* --- values ----------------------------------------------------------------------------------- */

/* Sets the columns from col on to the values v[0 .. n) (storage/core/write_values.h). */
static void put_vals(fj_pg_cols *t, int col, const fj_wval *v, size_t n)
{
    for (size_t k = 0; k < n; k++, col++) {
        switch (v[k].type) {
        case FJ_WV_INT: fj_pg_i64(t, col, v[k].u.i); break;
        case FJ_WV_U64: fj_pg_u64(t, col, v[k].u.u); break;
        case FJ_WV_REAL: fj_pg_f64(t, col, v[k].u.r); break;
        case FJ_WV_TEXT: fj_pg_textn(t, col, v[k].u.s.p, v[k].u.s.n); break;
        case FJ_WV_BLOB: fj_pg_bytea(t, col, (const unsigned char *)v[k].u.s.p, v[k].u.s.n); break;
        default: fj_pg_null(t, col); break;
        }
    }
}

/* The first two columns of most rows: their node (or cluster) and the envelope's time. */
static void put_at(fj_pg_cols *t, int64_t id, fj_time time)
{
    fj_pg_i64(t, 0, id);
    fj_pg_i64(t, 1, time);
}

static void col_id(fj_pg_cols *t, int col, int64_t id) /* 0 = none */
{
    if (id)
        fj_pg_i64(t, col, id);
    else
        fj_pg_null(t, col);
}

static int64_t u64_i64(uint64_t v)
{
    return v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v;
}

/* The scratch for packed varints, grown to hold FJ_WV_VARINTS_MAX(n) bytes. */
static fj_status varint_bytes(wctx *x, size_t n, unsigned char **out)
{
    FJ_TRY(GROW(x, x->w->bytes, x->w->cap_bytes, FJ_WV_VARINTS_MAX(n)));
    *out = x->w->bytes;
    return FJ_OK;
}

/* --- names ------------------------------------------------------------------------------------ */

/* Names are collected in three passes (clusters, then nodes, which need cluster ids, then strings);
 * each name missing from the cache is marked pending (id -1) and inserted and read back with the
 * others of its kind in two statements. The cache is cleared when a transaction fails, since ids
 * created in it are gone. */
typedef struct names {
    wctx *x;
    fj_pg_cols *t; /* col 0 (cluster ids, for nodes) and col 1 (names) */
    int64_t ns;    /* for strings and clusters; nodes take theirs per call */
} names;

static void need(names *nm, int64_t ns, const char *s)
{
    if (!s)
        return;
    fj_store *st = nm->x->s;
    size_t len = strlen(s);
    if (fj_intern_get(&st->names, ns, s, len))
        return;
    if (fj_intern_put(&st->names, ns, s, len, -1) != FJ_OK) {
        nm->t->st = FJ_ENOMEM;
        return;
    }
    if (ns > 0)
        fj_pg_i64(nm->t, 0, ns);
    else
        fj_pg_i64(nm->t, 0, 0);
    fj_pg_text(nm->t, 1, s);
    fj_pg_row(nm->t, 0);
}

static int64_t name_id(fj_store *s, int64_t ns, const char *str)
{
    int64_t id = fj_intern_get(&s->names, ns, str, strlen(str));
    return id > 0 ? id : 0;
}

static int64_t cluster_of(fj_store *s, const char *name)
{
    return name_id(s, FJ_PG_NS_CLUSTER, name ? name : "");
}

static int64_t node_of(fj_store *s, int64_t cluster_id, const char *name)
{
    return name_id(s, cluster_id, name ? name : "");
}

/* NULL gives 0 when allow_null, else the id of "". */
static int64_t string_of(fj_store *s, const char *str, bool allow_null)
{
    if (!str && allow_null)
        return 0;
    return name_id(s, FJ_PG_NS_STRING, str ? str : "");
}

/* Inserts and reads back the pending names in nm->t: kind 0 clusters, 1 nodes, 2 strings. */
static fj_status resolve(wctx *x, int kind)
{
    static const fj_pg_stmt_id ins[] = {FJ_PG_CLUSTER_INS, FJ_PG_NODE_INS, FJ_PG_STRING_INS};
    static const fj_pg_stmt_id get[] = {FJ_PG_CLUSTER_GET, FJ_PG_NODE_GET, FJ_PG_STRING_GET};
    fj_pg_cols *t = &x->w->t;
    FJ_TRY(cols_status(x));
    if (!t->nrows)
        return FJ_OK;
    const char *vals[2];
    FJ_TRY(fj_pg_cols_finish(t, vals) == FJ_OK ? FJ_OK : cols_status(x));
    const char *const *args = kind == 1 ? vals : vals + 1;
    int nargs = kind == 1 ? 2 : 1;
    FJ_TRY(fj_pg_run(x->s, ins[kind], nargs, args, NULL, "intern names", x->err));
    PGresult *r;
    FJ_TRY(fj_pg_run(x->s, get[kind], nargs, args, &r, "look up names", x->err));
    fj_status st = FJ_OK;
    for (int i = 0; st == FJ_OK && i < PQntuples(r); i++) {
        int64_t id = fj_pg_int(r, i, 0);
        int64_t ns = kind == 0 ? FJ_PG_NS_CLUSTER : kind == 1 ? fj_pg_int(r, i, 1) : FJ_PG_NS_STRING;
        const char *name = PQgetvalue(r, i, kind == 1 ? 2 : 1);
        if (fj_intern_put(&x->s->names, ns, name, strlen(name), id) != FJ_OK)
            st = oom(x);
    }
    if (st == FJ_OK && (size_t)PQntuples(r) != t->nrows)
        st = fj_err_set(x->err, FJ_EINTERNAL, "db", "postgres: %zu names interned, %d found", t->nrows, PQntuples(r));
    PQclear(r);
    return st;
}

static fj_status intern_all(wctx *x)
{
    struct fj_pg_wstate *w = x->w;
    fj_store *s = x->s;
    fj_pg_cols *t = &w->t;
    names nm = {x, t, 0};

    fj_pg_cols_reset(t);
    t->ncols = 2;
    for (size_t k = 0; k < w->n_envs; k++) {
        const fj_envelope *e = w->envs[k].e;
        need(&nm, FJ_PG_NS_CLUSTER, e->cluster ? e->cluster : "");
        for (size_t i = 0; i < e->n_errors; i++)
            need(&nm, FJ_PG_NS_CLUSTER, e->errors[i].cluster);
    }
    FJ_TRY(resolve(x, 0));

    fj_pg_cols_reset(t);
    t->ncols = 2;
    for (size_t k = 0; k < w->n_envs; k++) {
        wenv *we = &w->envs[k];
        const fj_envelope *e = we->e;
        int64_t cid = we->cluster_id = cluster_of(s, e->cluster);
        if (e->node)
            need(&nm, cid, e->node);
        for (size_t i = 0; i < e->n_errors; i++) {
            const fj_error_rec *r = &e->errors[i];
            int64_t ecid = cid;
            if (r->cluster && (!e->cluster || strcmp(r->cluster, e->cluster) != 0))
                ecid = cluster_of(s, r->cluster);
            if (r->node && (ecid != cid || !e->node || strcmp(r->node, e->node) != 0))
                need(&nm, ecid, r->node);
        }
        if (e->is_error)
            continue;
        if (e->kind == FJ_KIND_JOB) {
            for (size_t j = 0; j < e->u.jobs.n_jobs; j++)
                for (size_t n = 0; n < e->u.jobs.jobs[j].n_nodes; n++)
                    need(&nm, cid, e->u.jobs.jobs[j].nodes[n]);
        } else if (e->kind == FJ_KIND_CLUSTER) {
            const fj_cluster_info *ci = &e->u.cluster_info;
            for (size_t p = 0; p < ci->n_partitions; p++)
                for (size_t n = 0; n < ci->partitions[p].n_nodes; n++)
                    need(&nm, cid, ci->partitions[p].nodes[n]);
            for (size_t n = 0; n < ci->n_nodes; n++)
                need(&nm, cid, ci->nodes[n].node ? ci->nodes[n].node : "");
        }
    }
    FJ_TRY(resolve(x, 1));

    fj_pg_cols_reset(t);
    t->ncols = 2;
    for (size_t k = 0; k < w->n_envs; k++) {
        wenv *we = &w->envs[k];
        const fj_envelope *e = we->e;
        we->node_id = e->node ? node_of(s, we->cluster_id, e->node) : 0;
        if (e->is_error)
            continue;
        if (e->kind == FJ_KIND_SAMPLE) {
            const fj_sample *sm = &e->u.sample;
            for (size_t i = 0; i < sm->n_gpus; i++) {
                need(&nm, FJ_PG_NS_STRING, sm->gpus[i].uuid);
                need(&nm, FJ_PG_NS_STRING, sm->gpus[i].compute_mode);
            }
            for (size_t i = 0; i < sm->n_disks; i++)
                need(&nm, FJ_PG_NS_STRING, sm->disks[i].name ? sm->disks[i].name : "");
            for (size_t i = 0; i < sm->n_jobs; i++) {
                const fj_sample_job *j = &sm->jobs[i];
                need(&nm, FJ_PG_NS_STRING, j->user);
                for (size_t p = 0; p < j->n_procs; p++) {
                    need(&nm, FJ_PG_NS_STRING, j->procs[p].cmd ? j->procs[p].cmd : "");
                    for (size_t g = 0; g < j->procs[p].n_gpus; g++)
                        need(&nm, FJ_PG_NS_STRING, j->procs[p].gpus[g].uuid);
                }
            }
        } else if (e->kind == FJ_KIND_CLUSTER) {
            const fj_cluster_info *ci = &e->u.cluster_info;
            for (size_t p = 0; p < ci->n_partitions; p++)
                need(&nm, FJ_PG_NS_STRING, ci->partitions[p].name ? ci->partitions[p].name : "");
            for (size_t n = 0; n < ci->n_nodes; n++)
                for (size_t i = 0; i < ci->nodes[n].n_states; i++)
                    need(&nm, FJ_PG_NS_STRING, ci->nodes[n].states[i] ? ci->nodes[n].states[i] : "");
        }
    }
    return resolve(x, 2);
}

/* --- envelope meta, errors, notes -------------------------------------------------------------- */

/* aicr snapshots write their own meta and nothing else here (as in SQLite). */
static bool plain_kind(const fj_envelope *e)
{
    return e->kind != FJ_KIND_MEASUREMENTS;
}

static fj_status write_meta(wctx *x)
{
    struct fj_pg_wstate *w = x->w;
    fj_pg_cols *t = &w->t;
    begin_rows(x, FJ_PG_ENV_INS);
    for (size_t k = 0; k < w->n_envs; k++) {
        const wenv *we = &w->envs[k];
        const fj_envelope *e = we->e;
        if (!plain_kind(e) || e->kind == FJ_KIND_CHIMBUKO) /* Chimbuko: notes only, as in SQLite */
            continue;
        fj_wval v[FJ_WV_ENVELOPE_N];
        fj_wv_envelope(v, e);
        fj_pg_i64(t, 0, we->cluster_id);
        fj_pg_i64(t, 1, we->node_id);
        put_vals(t, 2, v, FJ_WV_ENVELOPE_N);
        fj_pg_row(t, k);
    }
    FJ_TRY(run_rows(x, FJ_PG_ENV_INS, NULL, "insert envelopes"));

    begin_rows(x, FJ_PG_ERROR_INS);
    for (size_t k = 0; k < w->n_envs; k++) {
        const wenv *we = &w->envs[k];
        const fj_envelope *e = we->e;
        if (!plain_kind(e))
            continue;
        for (size_t i = 0; i < e->n_errors; i++) {
            const fj_error_rec *r = &e->errors[i];
            int64_t cid = we->cluster_id, nid = we->node_id;
            if (r->cluster && (!e->cluster || strcmp(r->cluster, e->cluster) != 0))
                cid = cluster_of(x->s, r->cluster);
            if (r->node && (cid != we->cluster_id || !e->node || strcmp(r->node, e->node) != 0))
                nid = node_of(x->s, cid, r->node);
            fj_wval v[FJ_WV_ERROR_N];
            fj_wv_error(v, e, r);
            fj_pg_i64(t, 0, cid);
            fj_pg_i64(t, 1, nid);
            put_vals(t, 2, v, FJ_WV_ERROR_N);
            fj_pg_row(t, k);
        }
    }
    FJ_TRY(run_counted(x, FJ_PG_ERROR_INS, "insert errors", true));

    begin_rows(x, FJ_PG_NOTE_INS);
    for (size_t k = 0; k < w->n_envs; k++) {
        const wenv *we = &w->envs[k];
        const fj_envelope *e = we->e;
        if (!plain_kind(e))
            continue;
        for (size_t i = 0; i < e->n_notes; i++) {
            fj_wval v[FJ_WV_NOTE_N];
            fj_wv_note(v, e, &e->notes[i]);
            fj_pg_i64(t, 0, we->cluster_id);
            fj_pg_i64(t, 1, we->node_id);
            put_vals(t, 2, v, FJ_WV_NOTE_N);
            fj_pg_row(t, k);
        }
    }
    return run_rows(x, FJ_PG_NOTE_INS, NULL, "insert notes");
}

/* --- samples ---------------------------------------------------------------------------------- */

static bool sample_env(const fj_envelope *e)
{
    return !e->is_error && e->kind == FJ_KIND_SAMPLE;
}

/* The hourly load roll-ups the group's new samples change (the rows the last counted statement
 * inserted), listed in load_hourly_todo for fj_pg_load_rollup_drain before COMMIT: each new
 * sample's hour and, for one with counters, the hour of the node's next sample with counters (a
 * late sample starts that one's CPU interval). One statement for the group. */
static fj_status list_rollups(wctx *x)
{
    struct fj_pg_wstate *w = x->w;
    fj_buf nodes, times, cpus;
    fj_buf_init(&nodes, SIZE_MAX);
    fj_buf_init(&times, SIZE_MAX);
    fj_buf_init(&cpus, SIZE_MAX);
    fj_status st = FJ_OK;
    size_t n = 0;
    for (size_t i = 0; st == FJ_OK && i < w->t.nrows; i++) {
        if (!w->flags[i])
            continue;
        const wenv *we = &w->envs[w->t.env[i]];
        const fj_sample *sm = &we->e->u.sample;
        const char *sep = n++ ? "," : "{";
        if ((st = fj_buf_printf(&nodes, "%s%lld", sep, (long long)we->node_id)) == FJ_OK &&
            (st = fj_buf_printf(&times, "%s%lld", sep, (long long)we->e->time)) == FJ_OK)
            st = fj_buf_printf(&cpus, "%s%s", sep, sm->has_system && sm->n_cpus ? "t" : "f");
    }
    if (st == FJ_OK && n && (st = fj_buf_puts(&nodes, "}")) == FJ_OK && (st = fj_buf_puts(&times, "}")) == FJ_OK)
        st = fj_buf_puts(&cpus, "}");
    if (st == FJ_OK && n) {
        const char *v[3] = {nodes.data, times.data, cpus.data};
        st = fj_pg_run(x->s, FJ_PG_ROLLUP_TODO, 3, v, NULL, "list load roll-ups", x->err);
        x->rollups = true;
    } else if (st != FJ_OK) {
        st = oom(x);
    }
    fj_buf_free(&nodes);
    fj_buf_free(&times);
    fj_buf_free(&cpus);
    return st;
}

static fj_status write_samples(wctx *x)
{
    struct fj_pg_wstate *w = x->w;
    fj_pg_cols *t = &w->t;
    fj_store *s = x->s;

    begin_rows(x, FJ_PG_SAMPLE_INS);
    FOR_ENVS(w, k, we, sample_env) {
        const fj_sample *sm = &we->e->u.sample;
        unsigned char *bytes;
        FJ_TRY(varint_bytes(x, sm->n_cpus, &bytes));
        fj_wval v[FJ_WV_SAMPLE_N];
        fj_wv_sample(v, sm, bytes);
        put_at(t, we->node_id, we->e->time);
        put_vals(t, 2, v, FJ_WV_SAMPLE_N);
        fj_pg_row(t, k);
    }
    FJ_TRY(run_counted(x, FJ_PG_SAMPLE_INS, "insert samples", true));
    for (size_t k = 0, row = 0; k < w->n_envs; k++)
        if (sample_env(w->envs[k].e))
            w->envs[k].sample_new = w->flags[row++];
    FJ_TRY(list_rollups(x));

    begin_rows(x, FJ_PG_SGPU_INS);
    FOR_ENVS(w, k, we, sample_env) {
        const fj_sample *sm = &we->e->u.sample;
        for (size_t i = 0; i < sm->n_gpus; i++) {
            const fj_sample_gpu *g = &sm->gpus[i];
            fj_wval v[FJ_WV_SAMPLE_GPU_N];
            fj_wv_sample_gpu(v, g, string_of(s, g->uuid, true), string_of(s, g->compute_mode, true));
            put_at(t, we->node_id, we->e->time);
            put_vals(t, 2, v, FJ_WV_SAMPLE_GPU_N);
            fj_pg_row(t, k);
        }
    }
    FJ_TRY(run_counted(x, FJ_PG_SGPU_INS, "insert sample gpus", true));
    FJ_TRY(list_rollups(x)); /* a card that a re-sent sample adds changes its hour too */

    begin_rows(x, FJ_PG_SDISK_INS);
    FOR_ENVS(w, k, we, sample_env) {
        const fj_sample *sm = &we->e->u.sample;
        for (size_t i = 0; i < sm->n_disks; i++) {
            const fj_sample_disk *d = &sm->disks[i];
            unsigned char *bytes;
            FJ_TRY(varint_bytes(x, d->n_stats, &bytes));
            fj_wval v[FJ_WV_SAMPLE_DISK_N];
            fj_wv_sample_disk(v, d, string_of(s, d->name, false), bytes);
            put_at(t, we->node_id, we->e->time);
            put_vals(t, 2, v, FJ_WV_SAMPLE_DISK_N);
            fj_pg_row(t, k);
        }
    }
    return run_counted(x, FJ_PG_SDISK_INS, "insert sample disks", true);
}

static uint64_t proc_rows(const fj_sample_proc *p)
{
    return 1 + (uint64_t)p->n_gpus;
}

/* --- rectification: keys, instances, contributions -------------------------------------------- */

static fj_status key_index(wctx *x, const fj_rjkey *k, bool slurm, int64_t gap, fj_time t, size_t *out)
{
    struct fj_pg_wstate *w = x->w;
    int64_t v = fj_intern_get(&w->keymap, 0, k, sizeof *k);
    if (v) {
        rk *e = &w->keys[v - 1];
        if (t < e->lo)
            e->lo = t;
        if (t > e->hi)
            e->hi = t;
        *out = (size_t)v - 1;
        return FJ_OK;
    }
    FJ_TRY(GROW(x, w->keys, w->cap_keys, w->n_keys + 1));
    if (fj_intern_put(&w->keymap, 0, k, sizeof *k, (int64_t)w->n_keys + 1) != FJ_OK)
        return oom(x);
    w->keys[w->n_keys] = (rk){*k, gap, t, t, slurm, NONE, NONE};
    *out = w->n_keys++;
    return FJ_OK;
}

static fj_status add_contrib(wctx *x, const wenv *we, const fj_sample_job *j, const fj_sample_proc *p,
                             int64_t proc_cmd_id, const fj_jobcontrib *c, int64_t user_id, const int64_t *cmds,
                             size_t n_cmds)
{
    struct fj_pg_wstate *w = x->w;
    const fj_envelope *e = we->e;
    fj_jobkey jk = fj_jobkey_of(e->cluster, e->node, j, p);
    fj_rjkey k = fj_rjkey_of(&jk, p, we->cluster_id, we->node_id, proc_cmd_id, u64_i64);
    size_t key = 0;
    FJ_TRY(key_index(x, &k, jk.kind == FJ_JOBKEY_SLURM, fj_jobkey_gap(&jk, x->s->job_gap_s), e->time, &key));
    FJ_TRY(GROW(x, w->con, w->cap_con, w->n_con + 1));
    FJ_TRY(GROW(x, w->cmds, w->cap_cmds, w->n_cmds + n_cmds + 1));
    memcpy(w->cmds + w->n_cmds, cmds, n_cmds * sizeof *cmds);
    w->con[w->n_con++] = (rc){key, e->time, we->node_id, user_id, *c, w->n_cmds, n_cmds, NONE};
    w->n_cmds += n_cmds;
    return FJ_OK;
}

/* --- sample jobs and processes ---------------------------------------------------------------- */

/* The first five columns of a process's rows: node, time, job, epoch and its place in the job. */
static void put_proc_at(fj_pg_cols *t, const wenv *we, const fj_sample_job *j, int seq)
{
    put_at(t, we->node_id, we->e->time);
    fj_pg_u64(t, 2, j->job);
    fj_pg_u64(t, 3, j->epoch);
    fj_pg_i64(t, 4, seq);
}

/* Ends the sample_proc_sets row of envelope env's node-sample: its new sample jobs gathered in
 * w->sjset and their processes in w->set, one array literal a column, become one COPY row of w->t
 * (nothing when it has no new sample job). */
static fj_status end_proc_set(wctx *x, size_t env)
{
    struct fj_pg_wstate *w = x->w;
    if (!w->sjset.nrows)
        return FJ_OK;
    const char *procs[FJ_PG_MAXCOLS], *sjobs[FJ_PG_MAXCOLS];
    if (fj_pg_cols_finish(&w->set, procs) != FJ_OK || fj_pg_cols_finish(&w->sjset, sjobs) != FJ_OK) {
        w->t.st = w->set.st != FJ_OK ? w->set.st : w->sjset.st;
        return cols_status(x);
    }
    const wenv *we = &w->envs[env];
    put_at(&w->t, we->node_id, we->e->time);
    /* digits, commas, NULL: nothing COPY escapes */
    for (int c = 0; c < SET_COLS; c++)
        fj_pg_text(&w->t, 2 + c, procs[c]);
    for (int c = 0; c < SJ_COLS; c++)
        fj_pg_text(&w->t, 2 + SET_COLS + c, sjobs[c]);
    fj_pg_row(&w->t, env);
    fj_pg_cols_reset(&w->set);
    fj_pg_cols_reset(&w->sjset);
    return FJ_OK;
}

/* Which of the group's sample jobs are new (is_new), each counted for its envelope as inserted or
 * duplicate: a sample job is stored once per node-sample. The first of a key within the group
 * wins; a node-sample the group inserted has no stored sample jobs; for one already stored (a
 * re-send), its samples row is locked, so that a writer re-sending it at the same time waits, and
 * the sample jobs stored with it are read. */
static fj_status new_sample_jobs(wctx *x, bool *is_new)
{
    struct fj_pg_wstate *w = x->w;
    size_t n = w->n_sj;
    FJ_TRY(GROW(x, w->sj_keys, w->cap_sj_keys, n + 1));
    fj_sort_key *keys = w->sj_keys;
    for (size_t q = 0; q < n; q++) {
        const wenv *we = &w->envs[w->sj[q].env];
        /* job and epoch as stored (saturated), to match what is read back */
        keys[q] = (fj_sort_key){{we->node_id, we->e->time, u64_i64(w->sj[q].j->job), u64_i64(w->sj[q].j->epoch)}, q};
        is_new[q] = true;
    }
    qsort(keys, n, sizeof *keys, fj_sort_key_cmp);
    for (size_t i = 1; i < n; i++)
        if (fj_sort_key_fields(&keys[i], &keys[i - 1], 4) == 0)
            is_new[keys[i].at] = false;

    fj_pg_cols *t = &w->t;
    fj_pg_cols_reset(t);
    t->ncols = 2;
    for (size_t i = 0; i < n; i++) {
        if (w->envs[w->sj[keys[i].at].env].sample_new || (i && fj_sort_key_fields(&keys[i - 1], &keys[i], 2) == 0))
            continue;
        fj_pg_i64(t, 0, keys[i].k[0]);
        fj_pg_i64(t, 1, keys[i].k[1]);
        fj_pg_row(t, 0);
    }
    if (t->nrows) {
        const char *vals[2];
        PGresult *r;
        if (fj_pg_cols_finish(t, vals) != FJ_OK)
            return cols_status(x);
        FJ_TRY(fj_pg_run(x->s, FJ_PG_SJOB_LOCK, 2, vals, NULL, "lock re-sent samples", x->err));
        FJ_TRY(fj_pg_run(x->s, FJ_PG_SJOB_STORED, 2, vals, &r, "read stored sample jobs", x->err));
        for (int row = 0, rows = PQntuples(r); row < rows; row++) {
            /* stored: the group's first of the key is a duplicate too (the later ones are already) */
            fj_sort_key want = {{fj_pg_int(r, row, 0), fj_pg_int(r, row, 1), fj_pg_int(r, row, 2),
                                 fj_pg_int(r, row, 3)}, 0};
            size_t lo = fj_sort_key_lower(keys, n, &want);
            if (lo < n && fj_sort_key_fields(&keys[lo], &want, 4) == 0)
                is_new[keys[lo].at] = false;
        }
        PQclear(r);
    }
    for (size_t q = 0; q < n; q++) {
        fj_write_count *c = w->envs[w->sj[q].env].cnt;
        if (is_new[q])
            c->inserted++;
        else
            c->duplicates++;
    }
    return FJ_OK;
}

/* The new sample jobs of node-samples the group inserted, with their processes as stored, in
 * (node, time, job, epoch) order, for the job CPU drain (fj_pg_jcpu_sjob): it need not read back
 * what was just written. (Those of a re-sent node-sample it reads: their envelope, which says
 * whether cpu_time counts children, is the first one stored.) */
static fj_status keep_new_sample_jobs(wctx *x, const bool *is_new)
{
    struct fj_pg_wstate *w = x->w;
    w->n_msj = w->n_mprocs = 0;
    for (size_t i = 0; i < w->n_sj; i++) {
        size_t q = w->sj_keys[i].at;
        const sjrow *r = &w->sj[q];
        const wenv *we = &w->envs[r->env];
        if (!is_new[q] || !we->sample_new)
            continue;
        FJ_TRY(GROW(x, w->msj, w->cap_msj, w->n_msj + 1));
        FJ_TRY(GROW(x, w->mprocs, w->cap_mprocs, w->n_mprocs + r->n + 1));
        const char *producer = we->e->producer;
        fj_pg_jcpu_sjob *m = &w->msj[w->n_msj++];
        *m = (fj_pg_jcpu_sjob){we->node_id, we->e->time, u64_i64(r->j->job), u64_i64(r->j->epoch),
                               fj_jcpu_counts_children(producer, we->e->version), w->n_mprocs, 0};
        const fj_wv_pkey *pk = w->pk + r->pk0;
        for (size_t k = 0; k < r->n; k++) {
            if (k > 0 && fj_wv_pkey_same(&pk[k], &pk[k - 1]))
                continue;
            const fj_sample_proc *p = &r->j->procs[pk[k].idx];
            w->mprocs[w->n_mprocs++] = (fj_jcpu_proc){u64_i64(p->pid), u64_i64(p->ppid), pk[k].cmd_id,
                                                      u64_i64(p->cpu_time), fj_pct_to_m(p->cpu_avg),
                                                      fj_pct_to_m(p->cpu_util), u64_i64(p->num_threads),
                                                      u64_i64(p->rolledup)};
            m->n++;
        }
    }
    return FJ_OK;
}

static fj_status write_sample_jobs(wctx *x)
{
    struct fj_pg_wstate *w = x->w;
    fj_pg_cols *t = &w->t;
    fj_store *s = x->s;

    /* Process keys of every sample job, sorted, so repeated (pid, ppid, cmd) can be dropped. */
    w->n_sj = w->n_pk = 0;
    FOR_ENVS(w, k, we, sample_env) {
        const fj_sample *sm = &we->e->u.sample;
        for (size_t i = 0; i < sm->n_jobs; i++) {
            const fj_sample_job *j = &sm->jobs[i];
            FJ_TRY(GROW(x, w->sj, w->cap_sj, w->n_sj + 1));
            FJ_TRY(GROW(x, w->pk, w->cap_pk, w->n_pk + j->n_procs + 1));
            sjrow *r = &w->sj[w->n_sj++];
            *r = (sjrow){k, j, string_of(s, j->user, true), w->n_pk, j->n_procs, 0};
            fj_wv_pkey *pk = w->pk + r->pk0;
            for (size_t p = 0; p < j->n_procs; p++)
                pk[p] = (fj_wv_pkey){j->procs[p].pid, j->procs[p].ppid, string_of(s, j->procs[p].cmd, false), p};
            r->n_unique = fj_wv_pkeys_sort(pk, r->n);
            w->n_pk += r->n;
        }
    }

    /* Processes only with a new sample job (a re-sent sample is a duplicate as a whole), and
     * each new sample job's contribution to its rectified job: exactly once per node-sample. */
    bool *is_new = fj_malloc((w->n_sj ? w->n_sj : 1) * sizeof *is_new);
    if (!is_new)
        return oom(x);
    fj_status st = new_sample_jobs(x, is_new);
    if (st == FJ_OK)
        st = keep_new_sample_jobs(x, is_new);
    /* A node-sample's new sample jobs and their processes: one sample_proc_sets row (sj rows come
     * envelope by envelope). */
    if (st == FJ_OK)
        begin_rows(x, FJ_PG_PROC_INS);
    fj_pg_cols *set = &w->set, *sjset = &w->sjset;
    fj_pg_cols_reset(set);
    fj_pg_cols_reset(sjset);
    for (size_t q = 0; st == FJ_OK && q < w->n_sj; q++) {
        const sjrow *r = &w->sj[q];
        const wenv *we = &w->envs[r->env];
        const fj_sample_job *j = r->j;
        if (is_new[q]) {
            fj_wval v[FJ_WV_SAMPLE_JOB_N];
            fj_wv_sample_job(v, j, r->user_id);
            put_vals(sjset, 0, v, FJ_WV_SAMPLE_JOB_N);
            fj_pg_i64(sjset, FJ_WV_SAMPLE_JOB_N, (int64_t)r->n_unique);
            fj_pg_row(sjset, r->env);
        }
        if (!is_new[q]) {
            for (size_t p = 0; p < j->n_procs; p++)
                we->cnt->duplicates += proc_rows(&j->procs[p]);
        } else {
            const fj_wv_pkey *pk = w->pk + r->pk0;
            int seq = 0;
            for (size_t i = 0; i < r->n; i++) {
                const fj_sample_proc *p = &j->procs[pk[i].idx];
                if (i > 0 && fj_wv_pkey_same(&pk[i], &pk[i - 1])) {
                    we->cnt->duplicates += proc_rows(p); /* the same process twice in one job */
                    continue;
                }
                fj_wval v[FJ_WV_PROC_N];
                fj_wv_proc(v, p, pk[i].cmd_id);
                fj_pg_u64(set, 0, j->job);
                fj_pg_u64(set, 1, j->epoch);
                fj_pg_i64(set, 2, seq++);
                put_vals(set, 3, v, FJ_WV_PROC_N);
                fj_pg_row(set, r->env);
                we->cnt->inserted += proc_rows(p);
            }
        }
        if (q + 1 == w->n_sj || w->sj[q + 1].env != r->env)
            st = end_proc_set(x, r->env);
    }
    if (st == FJ_OK)
        st = run_rows(x, FJ_PG_PROC_INS, NULL, "insert processes");

    if (st == FJ_OK)
        begin_rows(x, FJ_PG_PGPU_INS);
    for (size_t q = 0; st == FJ_OK && q < w->n_sj; q++) {
        const sjrow *r = &w->sj[q];
        if (!is_new[q])
            continue;
        const wenv *we = &w->envs[r->env];
        const fj_sample_job *j = r->j;
        const fj_wv_pkey *pk = w->pk + r->pk0;
        int seq = 0;
        for (size_t i = 0; i < r->n; i++) {
            if (i > 0 && fj_wv_pkey_same(&pk[i], &pk[i - 1]))
                continue;
            const fj_sample_proc *p = &j->procs[pk[i].idx];
            for (size_t g = 0; g < p->n_gpus; g++) {
                const fj_proc_gpu *pg = &p->gpus[g];
                fj_wval v[FJ_WV_PROC_GPU_N];
                fj_wv_proc_gpu(v, pg, string_of(s, pg->uuid, true));
                put_proc_at(t, we, j, seq);
                put_vals(t, 5, v, FJ_WV_PROC_GPU_N);
                fj_pg_row(t, r->env);
            }
            seq++;
        }
    }
    if (st == FJ_OK)
        st = run_rows(x, FJ_PG_PGPU_INS, NULL, "insert process gpus");

    /* Contributions, in the order the SQLite backend applies them. */
    for (size_t q = 0; st == FJ_OK && q < w->n_sj; q++) {
        const sjrow *r = &w->sj[q];
        if (!is_new[q])
            continue;
        const wenv *we = &w->envs[r->env];
        const fj_sample_job *j = r->j;
        const fj_wv_pkey *pk = w->pk + r->pk0;
        fj_jobcontrib c;
        memset(&c, 0, sizeof c);
        /* distinct commands of the job, in order of first appearance: room for n */
        size_t mark = w->n_cmds, n_cmds = 0;
        if ((st = GROW(x, w->cmds, w->cap_cmds, mark + r->n + 1)) != FJ_OK)
            break;
        for (size_t i = 0; st == FJ_OK && i < r->n; i++) {
            if (i > 0 && fj_wv_pkey_same(&pk[i], &pk[i - 1]))
                continue;
            const fj_sample_proc *p = &j->procs[pk[i].idx];
            if (j->job == 0) { /* job 0: every process is its own rectified job */
                fj_jobcontrib pc;
                memset(&pc, 0, sizeof pc);
                fj_jobcontrib_add_proc(&pc, p);
                st = add_contrib(x, we, j, p, pk[i].cmd_id, &pc, r->user_id, &pk[i].cmd_id, 1);
                continue;
            }
            fj_jobcontrib_add_proc(&c, p);
            size_t m = 0;
            while (m < n_cmds && w->cmds[mark + m] != pk[i].cmd_id)
                m++;
            if (m == n_cmds)
                w->cmds[mark + n_cmds++] = pk[i].cmd_id;
        }
        if (st == FJ_OK && j->job != 0) {
            /* add_contrib copies the command list to the end of cmds: copy it out first */
            int64_t small[16], *list = n_cmds <= 16 ? small : fj_malloc(n_cmds * sizeof *list);
            if (!list) {
                st = oom(x);
                break;
            }
            memcpy(list, w->cmds + mark, n_cmds * sizeof *list);
            st = add_contrib(x, we, j, NULL, 0, &c, r->user_id, list, n_cmds);
            if (list != small)
                fj_free(list);
        }
    }
    fj_free(is_new);
    return st;
}

/* --- rectification: locks, instances, summaries, write-back ----------------------------------- */

static fj_status add_inst(wctx *x, size_t key, int64_t id, const fj_jobsum *sum, int64_t user_id, bool existing,
                          size_t *out)
{
    struct fj_pg_wstate *w = x->w;
    FJ_TRY(GROW(x, w->inst, w->cap_inst, w->n_inst + 1));
    size_t i = w->n_inst++;
    w->inst[i] = (ri){id, key, NONE, *sum, -1, user_id, existing, !existing, false, NONE};
    rk *k = &w->keys[key];
    if (k->tail == NONE)
        k->head = i;
    else
        w->inst[k->tail].next = i;
    k->tail = i;
    if (out)
        *out = i;
    return FJ_OK;
}

/* Loads instances from a RJ_FIND / RJ_SLURM_LOCK result (columns JOB_XCOLS). */
static fj_status load_instances(wctx *x, PGresult *r)
{
    struct fj_pg_wstate *w = x->w;
    for (int i = 0; i < PQntuples(r); i++) {
        fj_rjkey k;
        int c = 1;
        k.cluster_id = fj_pg_int(r, i, c++);
        k.job = fj_pg_int(r, i, c++);
        k.node_id = fj_pg_int(r, i, c++);
        k.epoch = fj_pg_int(r, i, c++);
        k.pid = fj_pg_int(r, i, c++);
        k.ppid = fj_pg_int(r, i, c++);
        k.cmd_id = fj_pg_int(r, i, c++);
        int64_t user_id = fj_pg_int(r, i, c++);
        int64_t cols[FJ_WV_JOBSUM_N];
        for (int f = 0; f < FJ_WV_JOBSUM_N; f++)
            cols[f] = fj_pg_int(r, i, c++);
        fj_jobsum s;
        fj_wv_jobsum_read(&s, cols);
        int64_t v = fj_intern_get(&w->keymap, 0, &k, sizeof k);
        if (!v)
            return fj_err_set(x->err, FJ_EINTERNAL, "db", "postgres: a job instance of an unknown key");
        size_t at;
        FJ_TRY(add_inst(x, (size_t)v - 1, fj_pg_int(r, i, 0), &s, user_id, true, &at));
        w->inst[at].win_m = fj_pg_int(r, i, c++);
    }
    return FJ_OK;
}

/* Takes the locks and reads the instances every contribution may join. */
static fj_status lock_and_load(wctx *x)
{
    struct fj_pg_wstate *w = x->w;
    fj_pg_cols *t = &w->t;

    /* Node-scoped keys: the rows of their nodes, in id order. */
    int64_t *nodes = fj_malloc((w->n_keys ? w->n_keys : 1) * sizeof *nodes);
    if (!nodes)
        return oom(x);
    size_t n_nodes = 0;
    for (size_t i = 0; i < w->n_keys; i++)
        if (!w->keys[i].slurm)
            nodes[n_nodes++] = w->keys[i].k.node_id;
    qsort(nodes, n_nodes, sizeof *nodes, fj_cmp_i64_elems);
    fj_pg_cols_reset(t);
    t->ncols = 1;
    for (size_t i = 0; i < n_nodes; i++)
        if (i == 0 || nodes[i] != nodes[i - 1]) {
            fj_pg_i64(t, 0, nodes[i]);
            fj_pg_row(t, 0);
        }
    fj_free(nodes);
    FJ_TRY(run_rows(x, FJ_PG_LOCK_NODES, NULL, "lock nodes"));

    /* Slurm keys: their one row, created empty when new, then locked. */
    fj_pg_cols_reset(t);
    t->ncols = 2;
    for (size_t i = 0; i < w->n_keys; i++)
        if (w->keys[i].slurm) {
            fj_pg_i64(t, 0, w->keys[i].k.cluster_id);
            fj_pg_i64(t, 1, w->keys[i].k.job);
            fj_pg_row(t, 0);
        }
    if (t->nrows) {
        const char *vals[2];
        if (fj_pg_cols_finish(t, vals) != FJ_OK)
            return cols_status(x);
        FJ_TRY(fj_pg_run(x->s, FJ_PG_RJ_SLURM_PLACE, 2, vals, NULL, "create Slurm jobs", x->err));
        PGresult *r;
        FJ_TRY(fj_pg_run(x->s, FJ_PG_RJ_SLURM_LOCK, 2, vals, &r, "lock Slurm jobs", x->err));
        fj_status st = load_instances(x, r);
        PQclear(r);
        FJ_TRY(st);
    }

    /* Node-scoped keys: the instances within the gap of this group's times. */
    fj_pg_cols_reset(t);
    t->ncols = 9;
    for (size_t i = 0; i < w->n_keys; i++) {
        const rk *k = &w->keys[i];
        if (k->slurm)
            continue;
        fj_pg_i64(t, 0, k->k.cluster_id);
        fj_pg_i64(t, 1, k->k.job);
        fj_pg_i64(t, 2, k->k.node_id);
        fj_pg_i64(t, 3, k->k.epoch);
        fj_pg_i64(t, 4, k->k.pid);
        fj_pg_i64(t, 5, k->k.ppid);
        fj_pg_i64(t, 6, k->k.cmd_id);
        fj_pg_i64(t, 7, fj_sat_add(k->lo, -k->gap));
        fj_pg_i64(t, 8, fj_sat_add(k->hi, k->gap));
        fj_pg_row(t, 0);
    }
    PGresult *r;
    FJ_TRY(run_rows(x, FJ_PG_RJ_FIND, &r, "find jobs"));
    if (!r)
        return FJ_OK;
    fj_status st = load_instances(x, r);
    PQclear(r);
    return st;
}

static size_t final_of(const struct fj_pg_wstate *w, size_t i)
{
    while (w->inst[i].dead)
        i = w->inst[i].into;
    return i;
}

/* Applies the contributions in order, in memory (fj_rect_join decides what each does to its key's
 * instances, as for the SQLite backend, which takes the steps one statement at a time). */
static fj_status apply(wctx *x)
{
    struct fj_pg_wstate *w = x->w;
    for (size_t q = 0; q < w->n_con; q++) {
        rc *c = &w->con[q];
        rk *k = &w->keys[c->key];
        size_t n = 0;
        for (size_t i = k->head; i != NONE; i = w->inst[i].next)
            n++;
        FJ_TRY(GROW(x, w->scratch, w->cap_scratch, 2 * n + 2)); /* the instances, then the matches */
        FJ_TRY(GROW(x, w->sums, w->cap_sums, n + 1));
        size_t *live = w->scratch, *match = w->scratch + n + 1;
        n = 0;
        for (size_t i = k->head; i != NONE; i = w->inst[i].next) {
            live[n] = i;
            w->sums[n++] = w->inst[i].sum;
        }
        fj_jobsum sum;
        size_t m = fj_rect_join(w->sums, n, c->t, k->gap, &c->c, match, &sum);
        if (m == 0) {
            FJ_TRY(add_inst(x, c->key, 0, &sum, c->user_id, false, &c->inst));
            continue;
        }
        size_t surv = live[match[0]];
        for (size_t i = 1; i < m; i++) { /* a bridge: the later instances merge into the first */
            size_t d = live[match[i]];
            w->inst[d].dead = true;
            w->inst[d].into = surv;
        }
        if (m > 1) { /* relink the key's live instances without the merged ones */
            k->head = k->tail = NONE;
            for (size_t i = 0; i < n; i++) {
                size_t v = live[i];
                if (w->inst[v].dead)
                    continue;
                w->inst[v].next = NONE;
                if (k->tail == NONE)
                    k->head = v;
                else
                    w->inst[k->tail].next = v;
                k->tail = v;
            }
        }
        ri *sv = &w->inst[surv];
        sv->sum = sum;
        if (!sv->user_id)
            sv->user_id = c->user_id;
        sv->dirty = true;
        c->inst = surv;
    }
    return FJ_OK;
}

static void add_sum_cols(fj_pg_cols *t, int col, const fj_jobsum *s)
{
    fj_wval v[FJ_WV_JOBSUM_N];
    fj_wv_jobsum(v, s);
    put_vals(t, col, v, FJ_WV_JOBSUM_N);
}

/* Ids for the instances created here that survived. */
static fj_status allocate_ids(wctx *x)
{
    struct fj_pg_wstate *w = x->w;
    size_t n_new = 0;
    for (size_t i = 0; i < w->n_inst; i++)
        n_new += !w->inst[i].existing && !w->inst[i].dead;
    if (!n_new)
        return FJ_OK;
    char nv[24];
    snprintf(nv, sizeof nv, "%zu", n_new);
    const char *vals[] = {nv};
    PGresult *r;
    FJ_TRY(fj_pg_run(x->s, FJ_PG_RJ_IDS, 1, vals, &r, "allocate job ids", x->err));
    if ((size_t)PQntuples(r) != n_new) {
        PQclear(r);
        return fj_err_set(x->err, FJ_EINTERNAL, "db", "postgres: job id allocation returned too few ids");
    }
    int row = 0;
    for (size_t i = 0; i < w->n_inst; i++)
        if (!w->inst[i].existing && !w->inst[i].dead)
            w->inst[i].id = fj_pg_int(r, row++, 0);
    PQclear(r);
    return FJ_OK;
}

static void put_win(fj_pg_cols *t, int col, int64_t win_m)
{
    if (win_m < 0)
        fj_pg_null(t, col);
    else
        fj_pg_i64(t, col, win_m);
}

/* The group's jobs as their instances hold them: the new ones inserted, the stored ones that
 * changed updated. */
static fj_status write_jobs(wctx *x)
{
    struct fj_pg_wstate *w = x->w;
    fj_pg_cols *t = &w->t;
    begin_rows(x, FJ_PG_RJ_INS);
    for (size_t i = 0; i < w->n_inst; i++) {
        const ri *in = &w->inst[i];
        if (in->existing || in->dead)
            continue;
        const fj_rjkey *k = &w->keys[in->key].k;
        fj_pg_i64(t, 0, in->id);
        fj_pg_i64(t, 1, k->cluster_id);
        fj_pg_i64(t, 2, k->job);
        fj_pg_i64(t, 3, k->node_id);
        fj_pg_i64(t, 4, k->epoch);
        fj_pg_i64(t, 5, k->pid);
        fj_pg_i64(t, 6, k->ppid);
        fj_pg_i64(t, 7, k->cmd_id);
        col_id(t, 8, in->user_id);
        add_sum_cols(t, 9, &in->sum);
        put_win(t, 9 + FJ_WV_JOBSUM_N, in->win_m);
        fj_pg_row(t, 0);
    }
    FJ_TRY(run_rows(x, FJ_PG_RJ_INS, NULL, "insert jobs"));

    fj_pg_cols_reset(t);
    t->ncols = 3 + FJ_WV_JOBSUM_N;
    for (size_t i = 0; i < w->n_inst; i++) {
        const ri *in = &w->inst[i];
        if (!in->existing || in->dead || !in->dirty)
            continue;
        fj_pg_i64(t, 0, in->id);
        col_id(t, 1, in->user_id);
        add_sum_cols(t, 2, &in->sum);
        fj_pg_i64(t, 2 + FJ_WV_JOBSUM_N, in->win_m); /* -1: NULL (the statement's nullif) */
        fj_pg_row(t, 0);
    }
    return run_rows(x, FJ_PG_RJ_UPD, NULL, "update jobs");
}

static bool has_merges(const struct fj_pg_wstate *w)
{
    for (size_t i = 0; i < w->n_inst; i++)
        if (w->inst[i].existing && w->inst[i].dead)
            return true;
    return false;
}

static fj_status write_merges(wctx *x)
{
    struct fj_pg_wstate *w = x->w;
    fj_pg_cols *t = &w->t;
    /* Stored instances merged into another: their rows move to the survivor, then go. */
    fj_pg_cols_reset(t);
    t->ncols = 2;
    for (size_t i = 0; i < w->n_inst; i++) {
        const ri *in = &w->inst[i];
        if (!in->existing || !in->dead)
            continue;
        fj_pg_i64(t, 0, in->id);
        fj_pg_i64(t, 1, w->inst[final_of(w, i)].id);
        fj_pg_row(t, 0);
    }
    if (t->nrows) {
        const char *vals[2];
        if (fj_pg_cols_finish(t, vals) != FJ_OK)
            return cols_status(x);
        static const fj_pg_stmt_id moves[][2] = {
            {FJ_PG_RJ_MOVE_JS, FJ_PG_RJ_DEL_JS}, {FJ_PG_RJ_MOVE_JH, FJ_PG_RJ_DEL_JH}, {FJ_PG_RJ_MOVE_JC, FJ_PG_RJ_DEL_JC}};
        for (size_t i = 0; i < sizeof moves / sizeof moves[0]; i++) {
            FJ_TRY(fj_pg_run(x->s, moves[i][0], 2, vals, NULL, "merge jobs", x->err));
            FJ_TRY(fj_pg_run(x->s, moves[i][1], 1, vals, NULL, "merge jobs", x->err));
        }
        FJ_TRY(fj_pg_run(x->s, FJ_PG_RJ_DEL, 1, vals, NULL, "merge jobs", x->err));
    }

    return FJ_OK;
}

/* A (job, host) or (job, command) pair's code in fj_pg_wstate.pairs, beside the job's id. */
static int64_t pair_code(bool host, int64_t val)
{
    return (int64_t)((uint64_t)val << 1) | (host ? 1 : 0);
}

/* Adds the pair to the statement's rows unless this connection has committed it. */
static fj_status pair_row(wctx *x, bool host, int64_t id, int64_t val)
{
    struct fj_pg_wstate *w = x->w;
    int64_t code = pair_code(host, val);
    if (fj_intern_get(&w->pairs, id, &code, sizeof code))
        return FJ_OK;
    FJ_TRY(GROW(x, w->pair_new, w->cap_pair_new, 2 * (w->n_pair_new + 1)));
    w->pair_new[2 * w->n_pair_new] = id;
    w->pair_new[2 * w->n_pair_new++ + 1] = code;
    fj_pg_i64(&w->t, 0, id);
    fj_pg_i64(&w->t, 1, val);
    fj_pg_row(&w->t, 0);
    return FJ_OK;
}

/* After the group's COMMIT: its pairs are stored. (Out of memory only forgets them: they are sent
 * again.) */
static void pairs_committed(struct fj_pg_wstate *w)
{
    if (w->pairs.n + w->n_pair_new > PAIRS_MAX)
        fj_intern_clear(&w->pairs);
    for (size_t i = 0; i < w->n_pair_new; i++)
        if (fj_intern_put(&w->pairs, w->pair_new[2 * i], &w->pair_new[2 * i + 1], sizeof(int64_t), 1) != FJ_OK)
            break;
}

static fj_status write_hosts_cmds(wctx *x)
{
    struct fj_pg_wstate *w = x->w;
    begin_rows(x, FJ_PG_RJH_INS);
    for (size_t q = 0; q < w->n_con; q++)
        FJ_TRY(pair_row(x, true, w->inst[final_of(w, w->con[q].inst)].id, w->con[q].node_id));
    FJ_TRY(run_rows(x, FJ_PG_RJH_INS, NULL, "insert job hosts"));

    begin_rows(x, FJ_PG_RJC_INS);
    for (size_t q = 0; q < w->n_con; q++) {
        const rc *c = &w->con[q];
        int64_t id = w->inst[final_of(w, c->inst)].id;
        for (size_t i = 0; i < c->ncmd; i++)
            FJ_TRY(pair_row(x, false, id, w->cmds[c->cmd0 + i]));
    }
    return run_rows(x, FJ_PG_RJC_INS, NULL, "insert job commands");
}

/* The group's job_samples rows, one per contribution, with the CPU figures job_cpu gave them
 * (w->added). The callback of fj_pg_jcpu_drain, or called after it. */
static fj_status insert_job_samples(void *arg, fj_err *err)
{
    wctx *x = arg;
    struct fj_pg_wstate *w = x->w;
    fj_pg_cols *t = &w->t;
    (void)err; /* x->err, the same */
    begin_rows(x, FJ_PG_RJS_INS);
    for (size_t q = 0; q < w->n_con; q++) {
        const rc *c = &w->con[q];
        const fj_pg_jcpu_added *a = &w->added[q];
        fj_pg_i64(t, 0, a->rjob);
        fj_pg_i64(t, 1, a->node);
        fj_pg_i64(t, 2, a->t);
        fj_pg_i64(t, 3, c->c.nproc);
        fj_pg_i64(t, 4, a->cpu_m);
        fj_pg_i64(t, 5, c->c.mem_kb);
        fj_pg_i64(t, 6, c->c.gpu_m);
        fj_pg_i64(t, 7, c->c.gpumem_kb);
        if (a->win_m < 0)
            fj_pg_null(t, 8);
        else
            fj_pg_i64(t, 8, a->win_m);
        fj_pg_row(t, 0);
    }
    return run_rows(x, FJ_PG_RJS_INS, NULL, "insert job samples");
}

/* The CPU summaries the drain gave the group's jobs (w->pjobs), into their instances. */
static void take_job_cpu(struct fj_pg_wstate *w)
{
    for (size_t p = 0; p < w->n_pjobs; p++) {
        const fj_pg_jcpu_job *j = &w->pjobs[p];
        if (!j->set)
            continue;
        ri *in = &w->inst[j->tag];
        in->sum.sum.cpu_m = j->sum_m;
        in->sum.peak.cpu_m = j->peak_m;
        in->win_m = j->win_m;
    }
}

/* What the drain has not let wait any longer, or what is left to write after it: the jobs (unless
 * written before it) with their CPU summaries, then the job_samples rows with their figures. */
static fj_status write_pending(void *arg, fj_err *err)
{
    wctx *x = arg;
    (void)err; /* x->err, the same */
    if (x->w->n_pjobs) {
        take_job_cpu(x->w);
        FJ_TRY(write_jobs(x));
    }
    return insert_job_samples(x, x->err);
}

static int pjob_cmp(const void *a, const void *b)
{
    return fj_cmp_i64(((const fj_pg_jcpu_job *)a)->id, ((const fj_pg_jcpu_job *)b)->id);
}

/* The group's jobs that it writes (new instances, changed stored ones), for the drain to work on
 * in memory, sorted by id; each tagged with its instance. */
static fj_status pending_jobs(wctx *x)
{
    struct fj_pg_wstate *w = x->w;
    FJ_TRY(GROW(x, w->pjobs, w->cap_pjobs, w->n_inst + 1));
    bool merges = has_merges(w); /* a stored job merged into a new one: its rows move to it */
    size_t n = 0;
    for (size_t i = 0; i < w->n_inst; i++) {
        const ri *in = &w->inst[i];
        if (in->dead || (in->existing && !in->dirty))
            continue;
        const fj_rjkey *k = &w->keys[in->key].k;
        w->pjobs[n++] = (fj_pg_jcpu_job){in->id, k->job, k->epoch, k->pid, k->ppid, k->cmd_id, k->cluster_id,
                                         in->sum.sum.cpu_m, in->sum.n_samples, in->win_m, 0, false, i,
                                         !in->existing && !merges};
    }
    qsort(w->pjobs, n, sizeof *w->pjobs, pjob_cmp);
    w->n_pjobs = n;
    return FJ_OK;
}

/* The new node-samples' CPU and their jobs' CPU summaries (storage/core/jobcpu.h), then what the
 * group has not written yet with them: its jobs (jobs_written: they are already) and the new
 * node-samples' job_samples rows. A stored job merged into another: the survivor's largest
 * candidate is read again (its summed figures came with the merged sums). */
static fj_status job_cpu(wctx *x, bool jobs_written)
{
    struct fj_pg_wstate *w = x->w;
    FJ_TRY(GROW(x, w->added, w->cap_added, w->n_con + 1));
    for (size_t q = 0; q < w->n_con; q++) {
        const rc *c = &w->con[q];
        w->added[q] = (fj_pg_jcpu_added){w->inst[final_of(w, c->inst)].id, c->node_id, c->t, c->c.cpu_m, -1};
    }
    w->n_pjobs = 0;
    if (!jobs_written)
        FJ_TRY(pending_jobs(x));
    size_t n = w->n_con + w->n_inst;
    int64_t *v = fj_malloc((3 * n + 1) * sizeof *v);
    if (!v)
        return oom(x);
    int64_t *rjob = v, *node = v + n, *t = v + 2 * n;
    size_t k = 0;
    for (size_t q = 0; q < w->n_con; q++, k++) {
        rjob[k] = w->inst[final_of(w, w->con[q].inst)].id;
        node[k] = w->con[q].node_id;
        t[k] = w->con[q].t;
    }
    for (size_t i = 0; i < w->n_inst; i++)
        if (w->inst[i].existing && w->inst[i].dead) {
            rjob[k] = w->inst[final_of(w, i)].id;
            node[k] = -1;
            t[k++] = INT64_MAX;
        }
    fj_pg_jcpu_pending p = {.added = w->added,
                            .n_added = w->n_con,
                            .jobs = jobs_written ? NULL : w->pjobs,
                            .n_jobs = w->n_pjobs,
                            .sjobs = w->msj,
                            .n_sjobs = w->n_msj,
                            .procs = w->mprocs,
                            .insert = write_pending,
                            .arg = x};
    fj_status st = fj_pg_jcpu_drain(x->s, rjob, node, t, k, &p, x->err);
    fj_free(v);
    if (st == FJ_OK && !p.inserted)
        st = write_pending(x, x->err);
    return st;
}

static fj_status rectify(wctx *x)
{
    if (!x->w->n_con)
        return FJ_OK;
    FJ_TRY(lock_and_load(x));
    FJ_TRY(apply(x));
    FJ_TRY(allocate_ids(x));
    /* Merged stored jobs move their rows into the survivor, whose row must be there first (the
     * activity triggers read it): then the jobs are written before the drain, which updates
     * their CPU summaries. Otherwise they are written once, after it. */
    bool merges = has_merges(x->w);
    if (merges) {
        FJ_TRY(write_jobs(x));
        FJ_TRY(write_merges(x));
    }
    FJ_TRY(write_hosts_cmds(x));
    return job_cpu(x, merges);
}

/* --- sysinfo (one envelope at a time: one per node and day) ------------------------------------ */

/* Text parameters of one single-row statement. */
typedef struct params {
    char num[24][24];
    const char *v[24];
    int n;
} params;

static void p_null(params *p)
{
    p->v[p->n++] = NULL;
}

static void p_i64(params *p, int64_t v)
{
    snprintf(p->num[p->n], sizeof p->num[0], "%lld", (long long)v);
    p->v[p->n] = p->num[p->n];
    p->n++;
}

static void p_u64(params *p, uint64_t v)
{
    p_i64(p, u64_i64(v));
}

static void p_text(params *p, const char *s)
{
    p->v[p->n++] = s;
}

/* The values v[0 .. n) (storage/core/write_values.h) as parameters: numbers and whole (terminated) texts. */
static void p_vals(params *p, const fj_wval *v, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        switch (v[k].type) {
        case FJ_WV_INT: p_i64(p, v[k].u.i); break;
        case FJ_WV_U64: p_u64(p, v[k].u.u); break;
        case FJ_WV_TEXT: p_text(p, v[k].u.s.p); break;
        default: p_null(p); break;
        }
    }
}

/* The blobs.id holding text (stored once per distinct content, zstd-compressed when smaller). */
static fj_status blob_id(wctx *x, const char *text, int64_t *id)
{
    *id = 0;
    if (!text)
        return FJ_OK;
    size_t n = strlen(text);
    params p = {.n = 0};
    p_i64(&p, (int64_t)fj_wv_hash(text, n));
    p_i64(&p, (int64_t)n);
    PGresult *r;
    FJ_TRY(fj_pg_run(x->s, FJ_PG_BLOB_FIND, 2, p.v, &r, "find blob", x->err));
    for (int i = 0; i < PQntuples(r) && !*id; i++) {
        size_t dlen = 0;
        unsigned char *data = PQunescapeBytea((const unsigned char *)PQgetvalue(r, i, 2), &dlen);
        if (data && fj_wv_blob_equals(PQgetvalue(r, i, 1), data, dlen, text, n))
            *id = fj_pg_int(r, i, 0);
        PQfreemem(data);
    }
    PQclear(r);
    if (*id)
        return FJ_OK;

    fj_wv_blob b;
    if (fj_wv_blob_pack(&b, text, n) != FJ_OK)
        return oom(x);
    char *hex = fj_malloc(2 * b.len + 3);
    if (!hex) {
        fj_wv_blob_free(&b);
        return oom(x);
    }
    static const char digits[] = "0123456789abcdef";
    hex[0] = '\\';
    hex[1] = 'x';
    for (size_t i = 0; i < b.len; i++) {
        hex[2 + 2 * i] = digits[b.data[i] >> 4];
        hex[3 + 2 * i] = digits[b.data[i] & 15];
    }
    hex[2 + 2 * b.len] = '\0';
    p_text(&p, b.codec);
    fj_wv_blob_free(&b);
    p_text(&p, hex);
    fj_status st = fj_pg_run(x->s, FJ_PG_BLOB_INS, 4, p.v, &r, "insert blob", x->err);
    fj_free(hex);
    if (st == FJ_OK) {
        *id = PQntuples(r) ? fj_pg_int(r, 0, 0) : 0;
        PQclear(r);
    }
    return st;
}

static fj_status count_returning(wctx *x, fj_pg_stmt_id id, params *p, const char *what, fj_write_count *cnt,
                                 bool *added)
{
    PGresult *r;
    FJ_TRY(fj_pg_run(x->s, id, p->n, p->v, &r, what, x->err));
    bool a = PQntuples(r) > 0;
    PQclear(r);
    if (cnt) {
        if (a)
            cnt->inserted++;
        else
            cnt->duplicates++;
    }
    if (added)
        *added = a;
    return FJ_OK;
}

static fj_status write_sysinfo(wctx *x, const wenv *we)
{
    const fj_envelope *e = we->e;
    const fj_sysinfo *si = &e->u.sysinfo;
    int64_t svg_id, text_id;
    FJ_TRY(blob_id(x, si->topo_svg, &svg_id));
    FJ_TRY(blob_id(x, si->topo_text, &text_id));

    fj_buf dist;
    FJ_TRY(fj_wv_distances_json(si, &dist, x->err));
    fj_wval v[FJ_WV_SYSINFO_N];
    fj_wv_sysinfo(v, si, svg_id, text_id, &dist);
    params p = {.n = 0};
    p_i64(&p, we->node_id);
    p_i64(&p, e->time);
    p_vals(&p, v, FJ_WV_SYSINFO_N);
    fj_status st = count_returning(x, FJ_PG_SYSINFO_INS, &p, "insert sysinfo", we->cnt, NULL);
    fj_buf_free(&dist);
    FJ_TRY(st);

    for (size_t k = 0; k < si->n_cards; k++) {
        fj_wval gv[FJ_WV_SYSINFO_GPU_N];
        fj_wv_sysinfo_gpu(gv, &si->cards[k]);
        p.n = 0;
        p_i64(&p, we->node_id);
        p_i64(&p, e->time);
        p_vals(&p, gv, FJ_WV_SYSINFO_GPU_N);
        FJ_TRY(count_returning(x, FJ_PG_SYSGPU_INS, &p, "insert sysinfo gpu", we->cnt, NULL));
    }
    return FJ_OK;
}

/* --- Slurm jobs ------------------------------------------------------------------------------- */

/* The key of a Slurm record's rows: cluster, job, step. */
static void put_slurm_key(fj_pg_cols *t, int64_t cluster_id, const fj_slurm_job *j)
{
    fj_pg_i64(t, 0, cluster_id);
    fj_pg_u64(t, 1, j->job_id);
    fj_pg_text(t, 2, fj_wv_job_step(j));
}

static void add_slurm(fj_pg_cols *t, int64_t cluster_id, fj_time time, const fj_slurm_job *j)
{
    fj_wval v[FJ_WV_SLURM_N];
    fj_wv_slurm(v, j);
    fj_pg_i64(t, 0, cluster_id);
    put_vals(t, 1, v, FJ_WV_SLURM_N);
    fj_pg_i64(t, 1 + FJ_WV_SLURM_N, time);
}

static bool jobs_env(const fj_envelope *e)
{
    return !e->is_error && e->kind == FJ_KIND_JOB;
}

static fj_status write_slurm(wctx *x)
{
    struct fj_pg_wstate *w = x->w;
    fj_pg_cols *t = &w->t;
    begin_rows(x, FJ_PG_SLURM_INS);
    FOR_ENVS(w, k, we, jobs_env) {
        for (size_t i = 0; i < we->e->u.jobs.n_jobs; i++) {
            add_slurm(t, we->cluster_id, we->e->time, &we->e->u.jobs.jobs[i]);
            fj_pg_row(t, k);
        }
    }
    if (!t->nrows)
        return FJ_OK;
    FJ_TRY(run_counted(x, FJ_PG_SLURM_INS, "insert Slurm jobs", true));

    /* The current view of every job step that got a new record: recomputed from the history,
     * field by field (the latest record that set each field), under the row's lock so that two
     * writers cannot interleave. The rows that got no new record are left alone. */
    bool *added = fj_malloc(w->t.nrows * sizeof *added + 1);
    if (!added)
        return oom(x);
    memcpy(added, w->flags, w->t.nrows * sizeof *added);
    size_t row = 0;
    fj_pg_cols_reset(t);
    t->ncols = 3;
    FOR_ENVS(w, k, we, jobs_env) {
        for (size_t i = 0; i < we->e->u.jobs.n_jobs; i++, row++) {
            if (!added[row])
                continue;
            put_slurm_key(t, we->cluster_id, &we->e->u.jobs.jobs[i]);
            fj_pg_row(t, k);
        }
    }
    fj_free(added);
    if (t->nrows) {
        const char *vals[3];
        if (fj_pg_cols_finish(t, vals) != FJ_OK)
            return cols_status(x);
        FJ_TRY(fj_pg_run(x->s, FJ_PG_SLURM_CUR_PLACE, 3, vals, NULL, "create current Slurm jobs", x->err));
        FJ_TRY(fj_pg_run(x->s, FJ_PG_SLURM_CUR_LOCK, 3, vals, NULL, "lock current Slurm jobs", x->err));
        FJ_TRY(fj_pg_run(x->s, FJ_PG_SLURM_CUR_RECOMPUTE, 3, vals, NULL, "update current Slurm jobs", x->err));
    }

    begin_rows(x, FJ_PG_SLURM_NODE_INS);
    FOR_ENVS(w, k, we, jobs_env) {
        for (size_t i = 0; i < we->e->u.jobs.n_jobs; i++) {
            const fj_slurm_job *j = &we->e->u.jobs.jobs[i];
            for (size_t n = 0; n < j->n_nodes; n++) {
                put_slurm_key(t, we->cluster_id, j);
                fj_pg_i64(t, 3, node_of(x->s, we->cluster_id, j->nodes[n]));
                fj_pg_row(t, k);
            }
        }
    }
    return run_rows(x, FJ_PG_SLURM_NODE_INS, NULL, "insert Slurm job nodes");
}

/* --- cluster ---------------------------------------------------------------------------------- */

static bool cluster_env(const fj_envelope *e)
{
    return !e->is_error && e->kind == FJ_KIND_CLUSTER;
}

static fj_status write_clusters(wctx *x)
{
    struct fj_pg_wstate *w = x->w;
    fj_pg_cols *t = &w->t;
    fj_store *s = x->s;
    begin_rows(x, FJ_PG_CINFO_INS);
    FOR_ENVS(w, k, we, cluster_env) {
        put_at(t, we->cluster_id, we->e->time);
        fj_pg_i64(t, 2, we->e->u.cluster_info.slurm ? 1 : 0);
        fj_pg_row(t, k);
    }
    FJ_TRY(run_counted(x, FJ_PG_CINFO_INS, "insert cluster", true));

    begin_rows(x, FJ_PG_PART_INS);
    FOR_ENVS(w, k, we, cluster_env) {
        const fj_cluster_info *ci = &we->e->u.cluster_info;
        for (size_t p = 0; p < ci->n_partitions; p++) {
            put_at(t, we->cluster_id, we->e->time);
            fj_pg_i64(t, 2, string_of(s, ci->partitions[p].name, false));
            fj_pg_i64(t, 3, (int64_t)ci->partitions[p].n_nodes);
            fj_pg_row(t, k);
        }
    }
    FJ_TRY(run_counted(x, FJ_PG_PART_INS, "insert partitions", true));

    begin_rows(x, FJ_PG_PNODE_INS);
    FOR_ENVS(w, k, we, cluster_env) {
        const fj_cluster_info *ci = &we->e->u.cluster_info;
        for (size_t p = 0; p < ci->n_partitions; p++) {
            int64_t name_id = string_of(s, ci->partitions[p].name, false);
            for (size_t n = 0; n < ci->partitions[p].n_nodes; n++) {
                put_at(t, we->cluster_id, we->e->time);
                fj_pg_i64(t, 2, name_id);
                fj_pg_i64(t, 3, node_of(s, we->cluster_id, ci->partitions[p].nodes[n]));
                fj_pg_row(t, k);
            }
        }
    }
    FJ_TRY(run_counted(x, FJ_PG_PNODE_INS, "insert partition nodes", true));

    begin_rows(x, FJ_PG_NSTATE_INS);
    FOR_ENVS(w, k, we, cluster_env) {
        const fj_cluster_info *ci = &we->e->u.cluster_info;
        for (size_t n = 0; n < ci->n_nodes; n++) {
            int64_t nid = node_of(s, we->cluster_id, ci->nodes[n].node);
            for (size_t i = 0; i < ci->nodes[n].n_states; i++) {
                put_at(t, nid, we->e->time);
                fj_pg_i64(t, 2, string_of(s, ci->nodes[n].states[i], false));
                fj_pg_row(t, k);
            }
        }
    }
    return run_counted(x, FJ_PG_NSTATE_INS, "insert node states", true);
}

/* --- aicr snapshots (rare: one statement per row) ---------------------------------------------- */

/* As storage/sqlite/measure.c: the snapshot (1) and each subtype are counted. A snapshot without its own
 * time is a duplicate when it equals the node's latest; otherwise it is stored at its arrival time
 * or one second after the node's newest, whichever is later. */
static fj_status write_measurements(wctx *x, const wenv *we)
{
    const fj_envelope *e = we->e;
    const fj_measurements *m = &e->u.measurements;
    const uint64_t rows = 1 + (uint64_t)m->n_rows;
    const int64_t hash = (int64_t)fj_wv_hash(m->json, strlen(m->json));
    fj_time t = e->time;
    params p = {.n = 0};

    if (m->arrival_time) {
        p_i64(&p, we->cluster_id);
        p_i64(&p, we->node_id);
        PGresult *r;
        FJ_TRY(fj_pg_run(x->s, FJ_PG_MS_LATEST, 2, p.v, &r, "find latest snapshot", x->err));
        bool have = PQntuples(r) > 0;
        fj_time newest = have ? fj_pg_int(r, 0, 0) : 0;
        bool same = have && fj_pg_int(r, 0, 1) == hash && strcmp(PQgetvalue(r, 0, 2), m->json) == 0;
        PQclear(r);
        if (same) {
            we->cnt->duplicates += rows;
            if (m->stored_time)
                *m->stored_time = newest;
            return FJ_OK;
        }
        if (have && newest >= t)
            t = newest + 1;
    }
    if (m->stored_time)
        *m->stored_time = t;
    /* t may have moved into a week no partition was made for yet (envelope meta is partitioned) */
    FJ_TRY(fj_pg_ensure_weeks(x->s, &t, 1, true, x->err));

    p.n = 0;
    p_i64(&p, we->cluster_id);
    p_i64(&p, we->node_id);
    p_i64(&p, t);
    p_i64(&p, hash);
    p_u64(&p, m->n_measurements);
    p_u64(&p, m->n_rows);
    p_text(&p, m->json);
    bool added;
    FJ_TRY(count_returning(x, FJ_PG_MS_SNAP_INS, &p, "insert snapshot", NULL, &added));
    if (!added) { /* this node's snapshot of that time is stored: nothing of this one is written */
        we->cnt->duplicates += rows;
        return FJ_OK;
    }
    we->cnt->inserted++;
    for (size_t i = 0; i < m->n_rows; i++) {
        const fj_measure_row *row = &m->rows[i];
        p.n = 0;
        p_i64(&p, we->cluster_id);
        p_i64(&p, we->node_id);
        p_i64(&p, t);
        p_text(&p, row->type);
        p_i64(&p, row->instance);
        p_text(&p, row->subtype);
        p_text(&p, row->json);
        FJ_TRY(count_returning(x, FJ_PG_MS_SUB_INS, &p, "insert measurement", we->cnt, NULL));
    }
    p.n = 0;
    p_i64(&p, we->cluster_id);
    p_i64(&p, we->node_id);
    p_text(&p, fj_kind_name(e->kind));
    p_i64(&p, t);
    p_text(&p, e->producer && *e->producer ? e->producer : NULL);
    p_text(&p, e->version && *e->version ? e->version : NULL);
    p_null(&p);
    p_u64(&p, e->unknown_fields);
    return fj_pg_run(x->s, FJ_PG_MS_ENV_INS, p.n, p.v, NULL, "insert envelope", x->err);
}

/* --- Chimbuko (storage/pg/chimbuko.c) ---------------------------------------------------------------- */

static fj_status write_chimbuko(wctx *x)
{
    struct fj_pg_wstate *w = x->w;
    size_t n = 0;
    for (size_t k = 0; k < w->n_envs; k++)
        n += !w->envs[k].e->is_error && w->envs[k].e->kind == FJ_KIND_CHIMBUKO;
    if (!n)
        return FJ_OK;
    fj_pg_cb_env *v = fj_malloc(n * sizeof *v);
    if (!v)
        return oom(x);
    n = 0;
    for (size_t k = 0; k < w->n_envs; k++)
        if (!w->envs[k].e->is_error && w->envs[k].e->kind == FJ_KIND_CHIMBUKO)
            v[n++] = (fj_pg_cb_env){w->envs[k].e, w->envs[k].cluster_id, w->envs[k].cnt};
    fj_status st = fj_pg_write_chimbuko(x->s, v, n, x->err);
    fj_free(v);
    return st;
}

/* --- transaction ------------------------------------------------------------------------------ */

static fj_status write_all(wctx *x)
{
    struct fj_pg_wstate *w = x->w;
    for (size_t k = 0; k < w->n_envs; k++) {
        fj_kind kind = w->envs[k].e->kind;
        if (w->envs[k].e->is_error) /* meta and errors only, whatever the kind it names */
            continue;
        if (kind >= FJ_KIND__COUNT)
            return fj_err_set(x->err, FJ_EINTERNAL, "db", "unknown envelope kind %d", (int)kind);
        /* Not stored by this backend yet: a kind this writer does not know is refused whole. */
        if (kind != FJ_KIND_SAMPLE && kind != FJ_KIND_SYSINFO && kind != FJ_KIND_JOB && kind != FJ_KIND_CLUSTER &&
            kind != FJ_KIND_MEASUREMENTS && kind != FJ_KIND_CHIMBUKO)
            return fj_err_set(x->err, FJ_EUNSUPPORTED, "db", "the postgres backend does not store %s data",
                              fj_kind_name(kind));
    }
    FJ_TRY(intern_all(x));
    FJ_TRY(write_meta(x));
    FJ_TRY(write_samples(x));
    FJ_TRY(write_sample_jobs(x));
    FJ_TRY(rectify(x));
    for (size_t k = 0; k < w->n_envs; k++)
        if (!w->envs[k].e->is_error && w->envs[k].e->kind == FJ_KIND_SYSINFO)
            FJ_TRY(write_sysinfo(x, &w->envs[k]));
    FJ_TRY(write_slurm(x));
    FJ_TRY(write_clusters(x));
    for (size_t k = 0; k < w->n_envs; k++)
        if (w->envs[k].e->kind == FJ_KIND_MEASUREMENTS)
            FJ_TRY(write_measurements(x, &w->envs[k]));
    FJ_TRY(write_chimbuko(x));
    if (x->rollups) /* after the samples' GPU rows */
        FJ_TRY(fj_pg_load_rollup_drain(x->s, x->err));
    return FJ_OK;
}

static void reset_group(struct fj_pg_wstate *w)
{
    w->n_envs = w->n_sj = w->n_pk = 0;
    fj_intern_clear(&w->keymap);
    w->n_keys = w->n_inst = w->n_con = w->n_cmds = w->n_pair_new = 0;
}

fj_status fj_pg_write(fj_store *s, fj_batch *const *batches, size_t n_batches, fj_write_count *counts, fj_err *err)
{
    if (s->mode != FJ_STORE_WRITE)
        return fj_err_set(err, FJ_EINVAL, "db", "write on a read-only handle");
    size_t n_counts = 0;
    for (size_t b = 0; b < n_batches; b++)
        n_counts += batches[b] ? batches[b]->n_envs : 0;
    if (counts)
        memset(counts, 0, n_counts * sizeof *counts);
    if (!s->w) {
        s->w = fj_calloc(1, sizeof *s->w);
        if (!s->w)
            return fj_err_set(err, FJ_ENOMEM, "db", "out of memory");
        fj_pg_cols_init(&s->w->t, 0);
        fj_pg_cols_init(&s->w->set, SET_COLS);
        fj_pg_cols_init(&s->w->sjset, SJ_COLS);
    }
    struct fj_pg_wstate *w = s->w;
    wctx x = {s, w, err, false};
    reset_group(w);

    fj_write_count *scratch = counts ? NULL : fj_calloc(n_counts ? n_counts : 1, sizeof *scratch);
    fj_status st = counts || scratch ? GROW(&x, w->envs, w->cap_envs, n_counts + 1) : oom(&x);
    if (st == FJ_OK)
        st = GROW(&x, w->times, w->cap_times, n_counts + 1);
    size_t k = 0, n = 0;
    for (size_t b = 0; st == FJ_OK && b < n_batches; b++) {
        if (!batches[b])
            continue;
        for (size_t i = 0; i < batches[b]->n_envs; i++, k++) {
            if (batches[b]->envs[i].kind == FJ_KIND_METRICS)
                continue; /* line protocol: storage/pg/ts.c writes it, after the other tables */
            fj_write_count *cnt = counts ? &counts[k] : &scratch[k];
            bool admitted = true;
            if ((st = fj_pg_quota_admit(s, &batches[b]->envs[i], cnt, &admitted, err)) != FJ_OK)
                break;
            if (!admitted)
                continue; /* over its cluster's quota: nothing of it is written; the answer says why */
            w->envs[n] = (wenv){&batches[b]->envs[i], cnt, 0, 0, false};
            /* Chimbuko rows are not partitioned (their envelope time may be 0): this week's
             * partition, which is ensured anyway, stands in for theirs. */
            w->times[n++] = batches[b]->envs[i].kind == FJ_KIND_CHIMBUKO ? fj_time_now() : batches[b]->envs[i].time;
        }
    }
    w->n_envs = n;

    if (st == FJ_OK && ++s->plan_groups >= PLAN_GROUPS) {
        s->plan_groups = 0;
        st = fj_pg_forget_plans(s, err);
    }
    /* Old partitions go and the weeks this group writes get theirs, each in a short transaction
     * of its own, before the group's transaction takes any lock. */
    if (st == FJ_OK)
        st = fj_pg_retention(s, false, err);
    if (st == FJ_OK)
        st = fj_pg_ensure_weeks(s, w->times, w->n_envs, false, err);
    if (st == FJ_OK) /* metric series ids, committed on their own before the group takes locks */
        st = fj_pg_ts_prepare(s, batches, n_batches, err);
    if (st == FJ_OK)
        st = fj_pg_begin(s, false, err);
    if (st == FJ_OK)
        st = empty_stages(&x);
    if (st == FJ_OK)
        st = write_all(&x);
    if (st == FJ_OK)
        st = fj_pg_ts_write(s, batches, n_batches, counts ? counts : scratch, err);
    if (st == FJ_OK)
        st = fj_pg_commit(s, err);
    fj_pg_ts_end(s, st == FJ_OK);
    if (st == FJ_OK)
        pairs_committed(w);
    fj_free(scratch);
    reset_group(w);
    if (st == FJ_OK)
        return FJ_OK;

    /* Nothing half-written: the whole group is undone, names interned in it are forgotten (their
     * ids are gone), and so are partitions and staging tables it may have created; the counts are
     * zeroed. */
    fj_pg_rollback(s);
    fj_intern_clear(&s->names);
    fj_pg_quota_forget(s); /* nodes counted for this group were not made */
    fj_pg_weeks_forget(s);
    memset(s->staged, 0, sizeof s->staged); /* staging tables created in the group are gone too */
    if (counts)
        memset(counts, 0, n_counts * sizeof *counts);
    return st;
}
