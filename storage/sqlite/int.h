/* storage/sqlite/int.h — what the files of the SQLite backend share: the handle, the prepared-statement
 * cache, the name-interning caches and the error mapping. Not a public header: only
 * storage/sqlite*.c include it. */
#ifndef FJ_SQLITE_INT_H
#define FJ_SQLITE_INT_H

#include "storage/core/driver.h"
#include "storage/core/intern.h"
#include "storage/core/store.h"
#include "storage/core/store_chimbuko.h"
#include "storage/core/store_measure.h"
#include "storage/core/store_query.h"
#include "storage/core/store_ts.h"
#include "storage/core/write_values.h"

#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>

/* A small open-addressing map (namespace, string) -> id, used to intern cluster, node and string
 * names without a query per use. Keys are copied. Rows of the interning tables are never deleted,
 * so a cached id stays right as long as the transaction that created it committed (caches are
 * cleared on rollback). */
/* The handle's name cache is an fj_intern (storage/core/intern.h), read with fj_intern_get. */
typedef fj_intern fj_sq_map;
/* fj_intern_put, but the map starts over when it grows past a bound (it is only a cache).
 * FJ_OK or FJ_ENOMEM. */
fj_status fj_sq_map_put(fj_sq_map *m, int64_t ns, const char *key, size_t len, int64_t id);

/* Every statement the backend runs more than once, prepared on first use and kept on the handle.
 * The Slurm statements are built from the column list in storage/sqlite/write.c (sql NULL here). */
#define FJ_SQ_STMTS(X)                                                                                   \
    X(BEGIN, "BEGIN IMMEDIATE")                                                                          \
    X(COMMIT, "COMMIT")                                                                                  \
    X(CLUSTER_GET, "SELECT id FROM clusters WHERE name=?1")                                              \
    X(CLUSTER_INS, "INSERT INTO clusters(name) VALUES(?1)")                                              \
    X(NODE_GET, "SELECT id FROM nodes WHERE cluster_id=?1 AND name=?2")                                  \
    X(NODE_INS, "INSERT INTO nodes(cluster_id,name) VALUES(?1,?2)")                                      \
    X(STRING_GET, "SELECT id FROM strings WHERE s=?1")                                                   \
    X(STRING_INS, "INSERT INTO strings(s) VALUES(?1)")                                                   \
    X(ENVELOPE_INS, "INSERT OR IGNORE INTO envelopes(cluster_id,node_id,kind,time,producer,version,"    \
                    "format,unknown_fields) VALUES(?,?,?,?,?,?,?,?)")                                    \
    X(ERROR_INS, "INSERT OR IGNORE INTO errors(cluster_id,node_id,time,source,kind,detail) "             \
                 "VALUES(?,?,?,?,?,?)")                                                                  \
    X(NOTE_INS, "INSERT OR IGNORE INTO notes(cluster_id,node_id,kind,time,path,note,detail) "            \
                "VALUES(?,?,?,?,?,?,?)")                                                                 \
    X(BLOB_FIND, "SELECT id,codec,data FROM blobs WHERE hash=?1 AND size=?2")                            \
    X(BLOB_INS, "INSERT INTO blobs(hash,size,codec,data) VALUES(?,?,?,?)")                               \
    X(SYSINFO_INS, "INSERT OR IGNORE INTO sysinfo(node_id,time,os_name,os_release,architecture,"         \
                   "cpu_model,numa_nodes,sockets,cores_per_socket,threads_per_core,memory_kb,n_gpus,"    \
                   "topo_svg_blob,topo_text_blob,distances) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")      \
    X(SYSGPU_INS, "INSERT OR IGNORE INTO sysinfo_gpus(node_id,time,idx,uuid,address,manufacturer,"      \
                  "model,architecture,driver,firmware,memory_kb,power_limit,max_power_limit,"            \
                  "min_power_limit,max_ce_clock,max_memory_clock) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)") \
    X(SAMPLE_INS, "INSERT OR IGNORE INTO samples(node_id,time,boot,used_memory_kb,load1,load5,load15,"   \
                  "runnable_entities,existing_entities,cpus) VALUES(?,?,?,?,?,?,?,?,?,?)")               \
    X(SAMPLE_GET, "SELECT id FROM samples WHERE node_id=?1 AND time=?2")                                 \
    X(ROLLUP_MARK, "INSERT INTO load_hourly_todo(node_id,hour,recompute) VALUES(?1,?2,?3) ON CONFLICT" \
                   "(node_id,hour) DO UPDATE SET recompute=max(recompute,excluded.recompute)")         \
    X(ROLLUP_LATER, "SELECT 1 FROM samples WHERE node_id=?1 AND time>?2 LIMIT 1")                       \
    X(ROLLUP_NEXT, "SELECT time FROM samples WHERE node_id=?1 AND time>?2 AND cpus IS NOT NULL "        \
                   "ORDER BY time LIMIT 1")                                                              \
    X(SGPU_INS, "INSERT OR IGNORE INTO sample_gpus(sample_id,idx,uuid_id,failing,fan,compute_mode_id,"   \
                "performance_state,memory_kb,ce_util,memory_util,temperature,power,power_limit,"         \
                "ce_clock,memory_clock,energy_mj) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")              \
    X(SDISK_INS, "INSERT OR IGNORE INTO sample_disks(sample_id,name_id,major,minor,stats) "              \
                 "VALUES(?,?,?,?,?)")                                                                    \
    X(SJOB_KEYS, "SELECT job,epoch FROM sample_jobs WHERE sample_id=?1")                                  \
    X(PROC_NEXT_ID, "SELECT coalesce(max(id),0)+1 FROM sample_procs")                                    \
    X(DATA_VERSION, "PRAGMA data_version")                                                               \
    X(RJOB_FIND_ALL, "SELECT id,first_seen,last_seen,n_samples,nproc_sum,nproc_peak,cpu_sum_m,"          \
                     "cpu_peak_m,mem_sum_kb,mem_peak_kb,gpu_sum_m,gpu_peak_m,gpumem_sum_kb,gpumem_peak_kb " \
                     "FROM jobs WHERE cluster_id=?1 AND job=?2 AND node_id=?3 AND epoch=?4 AND pid=?5 "  \
                     "AND ppid=?6 AND cmd_id=?7 ORDER BY id LIMIT 3")                                    \
    X(RJOB_FIND, "SELECT id,first_seen,last_seen,n_samples,nproc_sum,nproc_peak,cpu_sum_m,cpu_peak_m,"   \
                 "mem_sum_kb,mem_peak_kb,gpu_sum_m,gpu_peak_m,gpumem_sum_kb,gpumem_peak_kb FROM jobs "   \
                 "WHERE cluster_id=?1 AND job=?2 AND node_id=?3 AND epoch=?4 AND pid=?5 AND ppid=?6 "    \
                 "AND cmd_id=?7 AND first_seen<=?8 AND last_seen>=?9 ORDER BY id")                       \
    /* last_day (0014) from last_seen, ?10 */                                                         \
    X(RJOB_INS, "INSERT INTO jobs(cluster_id,job,node_id,epoch,pid,ppid,cmd_id,user_id,first_seen,"      \
                "last_seen,n_samples,nproc_sum,nproc_peak,cpu_sum_m,cpu_peak_m,mem_sum_kb,mem_peak_kb,"  \
                "gpu_sum_m,gpu_peak_m,gpumem_sum_kb,gpumem_peak_kb,last_day) "                           \
                "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?10/86400)")                           \
    /* a job's last sample moved to a later day: the one write of the index jobs_last_day */        \
    X(RJOB_DAY, "UPDATE jobs SET last_day=?2 WHERE id=?1")                                               \
    X(RJOB_UPD, "UPDATE jobs SET user_id=coalesce(user_id,?2),first_seen=?3,last_seen=?4,n_samples=?5,"  \
                "nproc_sum=?6,nproc_peak=?7,mem_sum_kb=?10,mem_peak_kb=?11,"                            \
                "gpu_sum_m=?12,gpu_peak_m=?13,gpumem_sum_kb=?14,gpumem_peak_kb=?15 WHERE id=?1")         \
    /* RJOB_UPD without first_seen (?3 unused): first_seen is in the index jobs_first_seen, and      \
     * setting it, even to its old value, rewrites the index entry. */                                \
    X(RJOB_UPD_LAST, "UPDATE jobs SET user_id=coalesce(user_id,?2),last_seen=?4,n_samples=?5,"          \
                     "nproc_sum=?6,nproc_peak=?7,mem_sum_kb=?10,"                                   \
                     "mem_peak_kb=?11,gpu_sum_m=?12,gpu_peak_m=?13,gpumem_sum_kb=?14,"                  \
                     "gpumem_peak_kb=?15 WHERE id=?1")                                                   \
    /* RJOB_UPD and RJOB_UPD_LAST with the job's CPU summary kept in memory (fj_sq_jcpu_take):    \
     * one write of the job's row per transaction. */                                                \
    X(RJOB_UPD_CPU, "UPDATE jobs SET user_id=coalesce(user_id,?2),first_seen=?3,last_seen=?4,n_samples=?5," \
                    "nproc_sum=?6,nproc_peak=?7,cpu_sum_m=?8,cpu_peak_m=?9,mem_sum_kb=?10,mem_peak_kb=?11," \
                    "gpu_sum_m=?12,gpu_peak_m=?13,gpumem_sum_kb=?14,gpumem_peak_kb=?15,"              \
                    "cpu_win_peak_m=nullif(?16,-1) WHERE id=?1")                                       \
    X(RJOB_UPD_LAST_CPU, "UPDATE jobs SET user_id=coalesce(user_id,?2),last_seen=?4,n_samples=?5,"     \
                         "nproc_sum=?6,nproc_peak=?7,cpu_sum_m=?8,cpu_peak_m=?9,mem_sum_kb=?10,"       \
                         "mem_peak_kb=?11,gpu_sum_m=?12,gpu_peak_m=?13,gpumem_sum_kb=?14,"            \
                         "gpumem_peak_kb=?15,cpu_win_peak_m=nullif(?16,-1) WHERE id=?1")              \
    /* The job CPU upkeep (storage/core/jobcpu.h; RJOB_UPD leaves the CPU columns to it). */               \
    X(JCPU_ROWS, "SELECT time,cpu_m,coalesce(cpu_win_m,-1) FROM job_samples WHERE rjob_id=?1 AND "       \
                 "node_id=?2 AND time>=?3 AND time<=?4 ORDER BY time")                                   \
    X(JCPU_BEFORE, "SELECT time FROM job_samples WHERE rjob_id=?1 AND node_id=?2 AND time<=?3 "          \
                   "ORDER BY time DESC LIMIT 1")                                                         \
    X(JCPU_AFTER, "SELECT time FROM job_samples WHERE rjob_id=?1 AND node_id=?2 AND time>?3 "            \
                  "ORDER BY time LIMIT 1")                                                               \
    X(JCPU_PLACE, "SELECT proc_first,n_procs FROM job_samples WHERE rjob_id=?1 AND node_id=?2 AND time=?3") \
    X(JCPU_PROCS, "SELECT pid,ppid,cmd_id,cpu_time,cpu_avg_m,cpu_util_m,num_threads,rolledup "           \
                  "FROM sample_procs WHERE id>=?1 AND id<?2")                                            \
    X(JCPU_PRODUCER, "SELECT producer,version FROM envelopes WHERE cluster_id=?1 AND node_id=?2 AND "            \
                     "kind='sample' AND time=?3")                                                        \
    X(JCPU_SET, "UPDATE job_samples SET cpu_m=?4,cpu_win_m=nullif(?5,-1) WHERE rjob_id=?1 AND "          \
                "node_id=?2 AND time=?3")                                                                \
    X(JCPU_JOB, "SELECT job,pid,ppid,cmd_id,cluster_id,cpu_sum_m,n_samples,coalesce(cpu_win_peak_m,-1) " \
                "FROM jobs WHERE id=?1")                                                                 \
    X(JCPU_ALL, "SELECT coalesce(sum(cpu_m),0),coalesce(max(cpu_win_m),-1) FROM job_samples "            \
                "WHERE rjob_id=?1")                                                                      \
    X(JCPU_JOB_SET, "UPDATE jobs SET cpu_sum_m=?2,cpu_win_peak_m=nullif(?3,-1),cpu_peak_m=?4 WHERE id=?1") \
    X(JCPU_TODO, "SELECT rjob_id,node_id FROM job_cpu_todo ORDER BY rjob_id,node_id")                    \
    X(JCPU_TODO_DEL, "DELETE FROM job_cpu_todo")                                                         \
    X(RJOB_DEL, "DELETE FROM jobs WHERE id=?1")                                                          \
    X(RJS_MOVE, "UPDATE OR IGNORE job_samples SET rjob_id=?1 WHERE rjob_id=?2")                          \
    X(RJS_DEL, "DELETE FROM job_samples WHERE rjob_id=?1")                                               \
    X(RJH_MOVE, "UPDATE OR IGNORE job_hosts SET rjob_id=?1 WHERE rjob_id=?2")                            \
    X(RJH_DEL, "DELETE FROM job_hosts WHERE rjob_id=?1")                                                 \
    X(RJC_MOVE, "UPDATE OR IGNORE job_cmds SET rjob_id=?1 WHERE rjob_id=?2")                             \
    X(RJC_DEL, "DELETE FROM job_cmds WHERE rjob_id=?1")                                                  \
    X(SLURM_INS, NULL)                                                                                   \
    X(SLURM_CUR_UPSERT, NULL)                                                                            \
    X(SLURM_CUR_RECOMPUTE, NULL)                                                                         \
    X(SLURM_NODE_INS, "INSERT OR IGNORE INTO slurm_job_nodes(cluster_id,job_id,job_step,node_id) "       \
                      "VALUES(?,?,?,?)")                                                                 \
    X(CLUSTER_INFO_INS, "INSERT OR IGNORE INTO cluster_info(cluster_id,time,slurm) VALUES(?,?,?)")       \
    X(PART_INS, "INSERT OR IGNORE INTO partitions(cluster_id,time,name_id,n_nodes) VALUES(?,?,?,?)")     \
    X(PART_NODE_INS, "INSERT OR IGNORE INTO partition_nodes(cluster_id,time,name_id,node_id) "           \
                     "VALUES(?,?,?,?)")                                                                  \
    X(NODE_STATE_INS, "INSERT OR IGNORE INTO node_states(node_id,time,state_id) VALUES(?,?,?)")

typedef enum fj_sq_stmt_id {
#define FJ_SQ_ENUM(name, sql) FJ_SQ_##name,
    FJ_SQ_STMTS(FJ_SQ_ENUM)
#undef FJ_SQ_ENUM
    FJ_SQ__COUNT
} fj_sq_stmt_id;

/* Tables whose rows the write path buffers and inserts many per statement (a multi-row VALUES
 * costs about half of single-row statements per row): name, whether the row starts with the
 * rowid SQLite is expected to assign (checked, not bound: an explicit rowid costs a seek per row),
 * columns bound, statement head. Rows are buffered only when the writer knows what the insert
 * will do without asking (a new sample's children; bookkeeping rows with OR IGNORE), so counts
 * stay exact. Buffers are flushed when full, before COMMIT, and before anything in the
 * transaction reads or rewrites those tables. OR FAIL: a multi-row INSERT that may abort halfway
 * otherwise keeps a statement journal (a copy of each page it changes, to undo the statement
 * alone); the write path only ever undoes whole transactions, and a failing row still fails the
 * group. */
#define FJ_SQ_BUFS(X)                                                                                    \
    X(SJOBS, 0, 6, "INSERT OR FAIL INTO sample_jobs(sample_id,job,epoch,user_id,proc_first,n_procs) VALUES", "")     \
    X(PROCS, 1, 14, "INSERT OR FAIL INTO sample_procs(pid,ppid,cmd_id,resident_kb,virtual_kb,num_threads,"       \
                    "cpu_avg_m,cpu_util_m,cpu_time,data_read_kb,data_written_kb,data_cancelled_kb,"     \
                    "rolledup,flags) VALUES", "")                                                            \
    X(PGPUS, 0, 6, "INSERT OR FAIL INTO sample_proc_gpus(proc_id,idx,uuid_id,gpu_util_m,gpu_memory_kb,"         \
                   "gpu_memory_util_m) VALUES", "")                                                          \
    X(SGPUS, 0, 16, "INSERT OR FAIL INTO sample_gpus(sample_id,idx,uuid_id,failing,fan,compute_mode_id,"        \
                    "performance_state,memory_kb,ce_util,memory_util,temperature,power,power_limit,"     \
                    "ce_clock,memory_clock,energy_mj) VALUES", "")                                           \
    X(JSAMPLES, 0, 12, "INSERT OR IGNORE INTO job_samples(rjob_id,sample_id,nproc,cpu_m,mem_kb,gpu_m,"  \
                       "gpumem_kb,node_id,time,proc_first,n_procs,cpu_win_m) VALUES", "")                           \
    X(JHOSTS, 0, 2, "INSERT OR IGNORE INTO job_hosts(rjob_id,node_id) VALUES", "")                           \
    X(JCMDS, 0, 2, "INSERT OR IGNORE INTO job_cmds(rjob_id,cmd_id) VALUES", "")                       \
    /* when each job was last busy on each node and card (migrations 0010, 0011, 0016): upserts   \
     * whose columns are minima and maxima, so rows of one key in one statement, re-sent samples  \
     * and any order give the same row */                                                         \
    X(JACT, 0, 6, "INSERT INTO job_activity(rjob_id,node_id,first_time,last_time,cpu_busy_last,"      \
                  "gpu_busy_last) VALUES", " ON CONFLICT(rjob_id,node_id) DO UPDATE SET "            \
                  "first_time=min(first_time,excluded.first_time),"                                 \
                  "last_time=max(last_time,excluded.last_time),"                                    \
                  "cpu_busy_last=max(cpu_busy_last,excluded.cpu_busy_last),"                        \
                  "gpu_busy_last=max(gpu_busy_last,excluded.gpu_busy_last)")                        \
    X(JGACT, 0, 6, "INSERT INTO job_gpu_activity(rjob_id,node_id,card,first_time,last_time,"         \
                   "busy_last) VALUES", " ON CONFLICT(rjob_id,node_id,card) DO UPDATE SET "         \
                   "first_time=min(first_time,excluded.first_time),"                                \
                   "last_time=max(last_time,excluded.last_time),busy_last=max(busy_last,excluded.busy_last)")

typedef enum fj_sq_buf_id {
#define FJ_SQ_BUF_ENUM(name, rowid, ncol, head, tail) FJ_SQ_BUF_##name,
    FJ_SQ_BUFS(FJ_SQ_BUF_ENUM)
#undef FJ_SQ_BUF_ENUM
    FJ_SQ_BUF__COUNT
} fj_sq_buf_id;

#define FJ_SQ_BUF_LOG2 5                       /* rows per full statement: 32 */
#define FJ_SQ_BUF_ROWS (1 << FJ_SQ_BUF_LOG2)
#define FJ_SQ_BUF_COLS 16                      /* the widest row above (sample_gpus), rowid included */

/* One value of a buffered row: SQLITE_NULL, SQLITE_INTEGER (i) or SQLITE_FLOAT (r). */
typedef struct fj_sq_val {
    union {
        int64_t i;
        double r;
    } u;
    int type;
} fj_sq_val;

typedef struct fj_sq_buf {
    size_t n; /* rows buffered */
    fj_sq_val v[FJ_SQ_BUF_ROWS * FJ_SQ_BUF_COLS];
    sqlite3_stmt *st[FJ_SQ_BUF_LOG2 + 1]; /* st[k] inserts 1 << k rows; prepared on first use */
    /* What st[k] has bound (reset keeps bindings): a value bound again is skipped. Sonar omits
     * zeros, so about half the values of a process row are the same 0 as the row before. */
    fj_sq_val *bound[FJ_SQ_BUF_LOG2 + 1];
} fj_sq_buf;

struct fj_store {
    const fj_driver *driver; /* first: fj_driver_of (storage/core/driver.h) finds it through it */
    sqlite3 *db;
    struct fj_sq_ts *ts;     /* line-protocol metrics state (storage/sqlite/ts.c); NULL until used */
    struct fj_sq_rollup *rollup; /* the load roll-up drain's statements (storage/sqlite/load.c) */
    fj_store_mode mode;
    bool migrating;
    int64_t job_gap_s;
    struct fj_quota *quota;  /* per-cluster quotas (storage/core/quota.h); NULL: none set */
    int64_t quota_cluster;   /* the cluster id whose nodes are being counted (storage/sqlite/quota.c) */
    fj_intern jobs_seen;     /* job keys seen recently, for max-new-jobs-per-minute (quota.c) */
    char *path;              /* as given, for messages */
    sqlite3_stmt *stmts[FJ_SQ__COUNT]; /* the driver's statement cache (storage/sqlite/driver.c) */
    /* The SQL of a cached statement, set at open (storage/sqlite/backend.c): the
     * driver below asks the top for texts instead of calling up into the writers. */
    const char *(*stmt_text)(fj_sq_stmt_id id);
    fj_sq_map names;         /* ns -1: clusters, ns 0: strings, ns > 0: nodes of cluster ns */
    unsigned char *bytes;    /* reusable scratch for packed varints (write path) */
    size_t bytes_cap;
    int64_t *ids;            /* reusable scratch for distinct command ids (write path) */
    size_t ids_cap;
    struct fj_wv_pkey *pkeys; /* reusable scratch: process keys of one sample job */
    size_t pkeys_cap;
    struct fj_jcpu_proc *jprocs; /* reusable scratch: one sample job's processes for its CPU */
    size_t jprocs_cap;
    struct fj_sq_card *cards;    /* reusable scratch: one sample job's GPU cards (write.c) */
    size_t cards_cap;
    uint64_t *seen;          /* reusable scratch: hash set of one sample's (job, epoch) pairs */
    size_t seen_cap;
    fj_sq_buf bufs[FJ_SQ_BUF__COUNT]; /* buffered rows of the open write transaction */
    int64_t next_proc_id;    /* next sample_procs.id in this transaction; 0 = not fetched yet */
    int64_t data_version;    /* PRAGMA data_version after our last transaction */
    /* Rectification cache: the instances of recently used job keys and the (job, host) and
     * (job, command) pairs already stored, so that the steady state costs one UPDATE and one
     * buffered INSERT per job and sample. Summaries of cached instances are written once per
     * transaction (rj_pend, flushed before COMMIT), however many samples a job got in it. Valid
     * while no other connection writes (checked with data_version when a transaction begins);
     * cleared on rollback. */
    struct fj_sq_rjent *rj;
    size_t rj_n, rj_cap;
    uint32_t *rj_slots;      /* open addressing over rj: 1 + index, 0 = empty */
    size_t rj_slots_cap;
    fj_intern rj_pairs;       /* (rjob id, tag + id) -> 1, for instances whose own list is full */
    struct fj_sq_rjpend *rj_pend; /* cached instances whose summary awaits its UPDATE */
    size_t rj_pend_n, rj_pend_cap;
    struct fj_sq_jcpu *jcpu;      /* new job_samples rows of the transaction (storage/sqlite/jobcpu.c) */
    fj_sq_val upd_bound[4][16];   /* what RJOB_UPD(_LAST)(_CPU) have bound (type 0: nothing) */
    /* Checkpoints of a writer handle (storage/sqlite/backend.c): the thread is started when the WAL first grows. */
    struct fj_sq_ckpt *ckpt;
    int open_flags;               /* as the handle was opened, for the checkpoint connection */
    char sync[8];                 /* PRAGMA synchronous of the handle */
    /* Retention of Sonar's raw rows (storage/sqlite/retention.c): the settings and the pass under
     * way, if any. */
    struct fj_sq_retention {
        fj_retention keep;        /* seconds per kind, 0: keep forever */
        int64_t every_s;          /* the shortest set retention: passes run a quarter of it apart */
        int phase;                /* 0: no pass under way */
        int64_t cursor, end;      /* the phase's next id and the last id it visits */
        /* the pass deletes rows with time before these (INT64_MIN: a kind kept forever) */
        int64_t cut_proc, cut_node, cut_err, cut_slurm;
        int64_t deleted;          /* samples deleted by the pass, for the log */
        int64_t next_ns;          /* monotonic time the next pass may start */
        bool started;             /* a pass has started since open (the first one starts at once) */
    } ret;
};

/* The SQL part of the SQLite driver (storage/sqlite/driver.c; contracts: storage/core/driver.h),
 * named by the driver's table at the top (storage/sqlite/backend.c, fj_sqlite_driver), and its
 * statement reader. */
fj_status fj_sq_driver_begin_read(fj_qx *x);
void fj_sq_driver_end_read(fj_qx *x, fj_status st);
fj_status fj_sq_driver_prepare(fj_qx *x, const char *sql, fj_qrows *r);
void fj_sq_driver_finalize(const fj_qrows *r);
fj_status fj_sq_driver_exec(fj_store *s, const char *sql, const char *what, fj_err *err);
void fj_sq_driver_rollback(fj_store *s);
bool fj_sq_driver_writable(const fj_store *s);
fj_status fj_sq_driver_run(fj_store *s, const char *sql, int n, const char *const *params,
                           void (*row)(void *ctx, int ncols, const char *const *cells), void *ctx,
                           int64_t *changed, const char *what, fj_err *err);
extern const fj_layout_sql fj_sq_driver_layout;
extern const fj_qrows_ops fj_sq_qrows_ops;
/* Column i of st: null, or the given type (INT, REAL, TEXT, TIME). */
fj_value fj_sq_value_col(sqlite3_stmt *st, int i, fj_vtype t);

#define FJ_SQ_NS_CLUSTER (-1)
#define FJ_SQ_NS_STRING 0

/* Maps an SQLite result code: BUSY/LOCKED -> FJ_EBUSY, NOMEM -> FJ_ENOMEM, else FJ_EIO. */
fj_status fj_sq_status(int rc);

/* Fills err with "what: sqlite's message" and returns the mapped status of rc. */
fj_status fj_sq_fail(fj_store *s, int rc, const char *what, fj_err *err);

/* The cached statement id, prepared on first use (reset and ready to bind), or NULL with err set. */
sqlite3_stmt *fj_sq_stmt(fj_store *s, fj_sq_stmt_id id, fj_err *err);

/* Builds the SQL of the statements whose text is NULL in FJ_SQ_STMTS (storage/sqlite/write.c). Returns a
 * static string. */
const char *fj_sq_built_sql(fj_sq_stmt_id id);

/* Binds v past INT64_MAX as REAL, as everywhere in the schema (unsigned values). */
void fj_sq_bind_u64(sqlite3_stmt *st, int i, uint64_t v);
/* Binds the values v[0 .. n) (storage/core/write_values.h) from parameter i on, text and blobs
 * without a copy; returns the next index. */
int fj_sq_bind_vals(sqlite3_stmt *st, int i, const fj_wval *v, size_t n);

/* Steps a statement that returns no rows, then resets it. */
fj_status fj_sq_done(fj_store *s, sqlite3_stmt *st, const char *what, fj_err *err);
/* Steps an insert (OR IGNORE), then resets it; *added tells whether it added its row (false: a
 * duplicate the database ignored). */
fj_status fj_sq_insert(fj_store *s, sqlite3_stmt *st, const char *what, bool *added, fj_err *err);

/* Runs sql (one or more statements without parameters: pragmas, BEGIN, schema checks); an error
 * names the text. */
fj_status fj_sq_exec(fj_store *s, const char *sql, fj_err *err);
/* The integer in the first column of sql's first row (0 when no row): counts, pragmas, state. */
fj_status fj_sq_query_i64(fj_store *s, const char *sql, int64_t *out, fj_err *err);

/* Interning: the id of a name, created when new. Must run inside a write transaction. */
fj_status fj_sq_cluster_id(fj_store *s, const char *name, int64_t *id, fj_err *err);
fj_status fj_sq_node_id(fj_store *s, int64_t cluster_id, const char *name, int64_t *id, fj_err *err);

/* storage/sqlite/quota.c: whether a Sonar envelope of cluster_id stays within its cluster's node
 * and job quotas. *ok false: it must not be written, cnt->limit says which limit refused it. */
fj_status fj_sq_quota_admit(fj_store *s, const fj_envelope *e, int64_t cluster_id, fj_write_count *cnt, bool *ok,
                            fj_err *err);
/* NULL gives id 0 when allow_null, else interns "". */
fj_status fj_sq_string_id(fj_store *s, const char *str, bool allow_null, int64_t *id, fj_err *err);

/* Forgets the rectification cache and drops pending summaries and buffered rows (storage/sqlite/write.c):
 * after a rollback, or when another connection wrote. */
void fj_sq_rj_clear(fj_store *s);

/* Finalizes the write path's statements and frees its scratch and caches (storage/sqlite/write.c); for
 * close only (the handle is freed next), before the connection is closed. */
void fj_sq_write_free(fj_store *s);

/* The write path (storage/sqlite/write.c). */
fj_status fj_sq_write(fj_store *s, fj_batch *const *batches, size_t n_batches, fj_write_count *counts,
                      fj_err *err);
/* aicr snapshots (storage/sqlite/measure.c): one envelope's write inside the write transaction (the
 * read is written once: storage/query/measure.c). */
fj_status fj_sq_write_measurements(fj_store *s, const fj_envelope *e, int64_t cluster_id, int64_t node_id,
                                   fj_write_count *cnt, fj_err *err);

/* Line-protocol metrics and ClusterCockpit records (storage/sqlite/ts.c). fj_sq_write calls
 * fj_sq_write_metrics per FJ_KIND_METRICS envelope, fj_sq_ts_precommit right before COMMIT (it
 * hands the engine's new series and sealed chunks to the tables) and fj_sq_ts_end after COMMIT
 * or ROLLBACK; sq_close calls fj_sq_ts_close first (flushes and commits what is buffered). */
/* Retention of Sonar's raw rows (storage/sqlite/retention.c). init records the settings at open; maintain, called by the writer thread between write transactions, runs
 * one slice of a pass (one short transaction) when a pass is due or under way. fj_sq_maintain is
 * the writer's whole periodic hook: the metrics' upkeep, then retention. */
void fj_sq_retention_init(fj_store *s, const fj_retention *keep);
fj_status fj_sq_retention_maintain(fj_store *s, fj_err *err);
fj_status fj_sq_maintain(fj_store *s, fj_err *err);

fj_status fj_sq_write_metrics(fj_store *s, const fj_envelope *e, fj_write_count *cnt, fj_err *err);
fj_status fj_sq_ts_precommit(fj_store *s, fj_err *err);

/* Hourly load roll-ups (storage/sqlite/load.c): brings every (node, hour) listed in load_hourly_todo
 * up to date from the samples (appending or recomputing) and empties the list. Inside a write
 * transaction, after the buffered rows went in; also completes the backfill of migration 0006. */
fj_status fj_sq_load_rollup_drain(fj_store *s, fj_err *err);

struct fj_jcpu_sample;
/* Job CPU upkeep (storage/sqlite/jobcpu.c, storage/core/jobcpu.h). The writer notes each new job_samples row
 * (and, with node -1, a job whose rows a merge joined); before COMMIT, with the rows flushed,
 * fj_sq_jcpu_drain computes their figures and the jobs' CPU summaries, then works off
 * job_cpu_todo (the backfill migration 0008 lists). A failed transaction clears the notes. */
fj_status fj_sq_jcpu_note(fj_store *s, int64_t rjob, int64_t node, fj_time t, fj_err *err);
/* A new node-sample of rjob on node at t, cur its processes as stored (sorted, with the producer's
 * children_counted), or NULL when the writer cannot give them; created: rjob was made by it;
 * n_samples: the job's node-samples with it; hint: NULL, or where the job's entries were last
 * (read and updated). *cpu_m and *win_m (-1: none) are what its row is
 * stored with: its figure and candidate when the job's previous node-samples are in memory (the
 * job's summary is then written by the drain or with the job's row), else 0 and -1, and it is noted
 * for the drain to compute from the stored rows. */
/* Where a job's entries were found the last time (1 + index; 0: not known), which the writer
 * keeps with its cached job instance: a hint that is checked against the key before use, so the
 * next node-sample of the job finds its summary and tail without a hash look-up. */
typedef struct fj_sq_jcpu_hint {
    uint32_t jsum, tail;
} fj_sq_jcpu_hint;
fj_status fj_sq_jcpu_add(fj_store *s, int64_t rjob, int64_t node, fj_time t, const struct fj_jcpu_sample *cur,
                         bool created, int64_t n_samples, fj_sq_jcpu_hint *hint, int64_t *cpu_m, int64_t *win_m,
                         fj_err *err);
void fj_sq_jcpu_moved(fj_store *s, int64_t to, int64_t from);
/* Whether the job_activity row of (rjob, node), as stored or buffered in this transaction, already
 * holds what a node-sample at t whose busy times are cpu_busy and gpu_busy (0: not busy) adds,
 * last_time aside (readers take it from job_samples, migration 0017): true only when the pair's
 * memory is current and says so. When false the caller writes the row, and memory, where current,
 * notes what it will hold. Dropped with the rest of the memory (rollback, data_version, retention,
 * bounds); a merge or a late sample makes the pair's memory stale. */
bool fj_sq_jcpu_activity_current(fj_store *s, int64_t rjob, int64_t node, fj_time t, fj_time cpu_busy,
                                 fj_time gpu_busy);
/* The job's CPU summary when one computed in memory awaits its write: *sum_m, *peak_m and *win_m
 * (-1: none) to write with the job's row now, which takes it off the drain's list. */
bool fj_sq_jcpu_take(fj_store *s, int64_t rjob, int64_t *sum_m, int64_t *peak_m, int64_t *win_m);
/* Drops what the writer keeps of jobs' CPU between transactions (rows changed behind it). */
void fj_sq_jcpu_forget(fj_store *s);
fj_status fj_sq_jcpu_drain(fj_store *s, fj_err *err);
void fj_sq_jcpu_clear(fj_store *s);
void fj_sq_jcpu_free(fj_store *s);
/* Finalizes the statements the drain keeps prepared (at close). */
void fj_sq_load_rollup_free(fj_store *s);
void fj_sq_ts_end(fj_store *s, bool committed);
void fj_sq_ts_close(fj_store *s);
fj_status fj_sq_ts_start(fj_store *s, const fj_store_opts *opts, fj_err *err);
fj_ts_engine *fj_sq_ts_engine(fj_store *s);
fj_status fj_sq_ts_maintain(fj_store *s, fj_err *err);
fj_status fj_sq_ts_series(fj_store *s, const fj_ts_sel *sel,
                          fj_status (*cb)(void *ud, uint32_t id, const fj_ts_key *key), void *ud, fj_err *err);
fj_status fj_sq_ts_read(fj_store *s, fj_ts_engine *live, uint32_t series_id, int64_t from, int64_t to,
                        fj_ts_points *out, fj_err *err);

#endif
