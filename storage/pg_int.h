/* pg_int.h — what the files of the PostgreSQL backend share: the handle, the prepared statements,
 * the error mapping, column arrays for batched writes and the name cache. Not a public header:
 * only storage/pg*.c include it. */
#ifndef FJ_PG_INT_H
#define FJ_PG_INT_H

#include "buf.h"
#include "store.h"

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>

/* --- name cache: (namespace, string) -> id ----------------------------------------------------- */

typedef struct fj_pg_map_ent {
    uint64_t hash; /* 0 = empty slot */
    int64_t ns;
    int64_t id;
    char *key;
    size_t len;
} fj_pg_map_ent;

typedef struct fj_pg_map {
    fj_pg_map_ent *slots;
    size_t cap, n;
} fj_pg_map;

/* The id for (ns, key), or 0 when absent. */
int64_t fj_pg_map_get(const fj_pg_map *m, int64_t ns, const char *key, size_t len);
/* FJ_OK or FJ_ENOMEM. Keys are copied. */
fj_status fj_pg_map_put(fj_pg_map *m, int64_t ns, const char *key, size_t len, int64_t id);
void fj_pg_map_clear(fj_pg_map *m);

#define FJ_PG_NS_CLUSTER (-1)
#define FJ_PG_NS_STRING 0 /* ns > 0: the nodes of cluster ns */

/* --- prepared statements ----------------------------------------------------------------------- */

/* Every statement fjord sends with data in it, prepared once per connection on first use. The
 * SQL of the long batched ones is built in pg_write.c (sql NULL here). Parameters are text; the
 * SQL casts them. */
#define FJ_PG_STMTS(X)                                                                                   \
    X(CLUSTER_INS, "INSERT INTO clusters(name) SELECT v FROM unnest($1::text[]) v ORDER BY v "           \
                   "ON CONFLICT DO NOTHING")                                                             \
    X(CLUSTER_GET, "SELECT c.id, c.name FROM clusters c JOIN unnest($1::text[]) v ON c.name = v")        \
    X(NODE_INS, "INSERT INTO nodes(cluster_id,name) SELECT c, n FROM unnest($1::bigint[],$2::text[]) "   \
                "u(c,n) ORDER BY c, n ON CONFLICT DO NOTHING")                                           \
    X(NODE_GET, "SELECT x.id, x.cluster_id, x.name FROM nodes x JOIN unnest($1::bigint[],$2::text[]) "   \
                "u(c,n) ON x.cluster_id = u.c AND x.name = u.n")                                         \
    X(STRING_INS, "INSERT INTO strings(s) SELECT v FROM unnest($1::text[]) v ORDER BY v "                \
                  "ON CONFLICT DO NOTHING")                                                              \
    X(STRING_GET, "SELECT x.id, x.s FROM strings x JOIN unnest($1::text[]) v ON x.s = v")               \
    X(ENSURE_WEEK, "SELECT fj_ensure_partitions($1::bigint)")                                            \
    X(DROP_BEFORE, "SELECT fj_drop_partitions($1::bigint)")                                              \
    X(LOCK_NODES, "SELECT id FROM nodes WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE")            \
    X(ENV_INS, NULL)                                                                                     \
    X(ERROR_INS, NULL)                                                                                   \
    X(NOTE_INS, NULL)                                                                                    \
    X(SAMPLE_INS, NULL)                                                                                  \
    X(SGPU_INS, NULL)                                                                                    \
    X(SDISK_INS, NULL)                                                                                   \
    X(SJOB_INS, NULL)                                                                                    \
    X(PROC_INS, NULL)                                                                                    \
    X(PGPU_INS, NULL)                                                                                    \
    X(RJ_SLURM_PLACE, NULL)                                                                              \
    X(RJ_SLURM_LOCK, NULL)                                                                               \
    X(RJ_FIND, NULL)                                                                                     \
    X(RJ_IDS, "SELECT nextval(pg_get_serial_sequence('jobs','id')) FROM generate_series(1, $1::int)")    \
    X(RJ_INS, NULL)                                                                                      \
    X(RJ_UPD, NULL)                                                                                      \
    X(RJ_MOVE_JS, "INSERT INTO job_samples(rjob_id,node_id,time,nproc,cpu_m,mem_kb,gpu_m,gpumem_kb) "    \
                  "SELECT m.t, x.node_id, x.time, x.nproc, x.cpu_m, x.mem_kb, x.gpu_m, x.gpumem_kb "     \
                  "FROM job_samples x JOIN unnest($1::bigint[],$2::bigint[]) m(f,t) ON x.rjob_id = m.f " \
                  "ORDER BY 1, 2, 3 ON CONFLICT DO NOTHING")                                             \
    X(RJ_DEL_JS, "DELETE FROM job_samples WHERE rjob_id = ANY($1::bigint[])")                            \
    X(RJ_MOVE_JH, "INSERT INTO job_hosts(rjob_id,node_id) SELECT m.t, x.node_id FROM job_hosts x "       \
                  "JOIN unnest($1::bigint[],$2::bigint[]) m(f,t) ON x.rjob_id = m.f ORDER BY 1, 2 "      \
                  "ON CONFLICT DO NOTHING")                                                              \
    X(RJ_DEL_JH, "DELETE FROM job_hosts WHERE rjob_id = ANY($1::bigint[])")                              \
    X(RJ_MOVE_JC, "INSERT INTO job_cmds(rjob_id,cmd_id) SELECT m.t, x.cmd_id FROM job_cmds x "           \
                  "JOIN unnest($1::bigint[],$2::bigint[]) m(f,t) ON x.rjob_id = m.f ORDER BY 1, 2 "      \
                  "ON CONFLICT DO NOTHING")                                                              \
    X(RJ_DEL_JC, "DELETE FROM job_cmds WHERE rjob_id = ANY($1::bigint[])")                               \
    X(RJ_DEL, "DELETE FROM jobs WHERE id = ANY($1::bigint[])")                                           \
    X(RJS_INS, NULL)                                                                               \
    X(RJH_INS, NULL)                                                                               \
    X(RJC_INS, NULL)                                                                               \
    X(BLOB_FIND, "SELECT id, codec, data FROM blobs WHERE hash = $1::bigint AND size = $2::bigint "      \
                 "ORDER BY id")                                                                          \
    X(BLOB_INS, "INSERT INTO blobs(hash,size,codec,data) VALUES($1::bigint,$2::bigint,$3::text,"         \
                "$4::bytea) RETURNING id")                                                               \
    X(SYSINFO_INS, "INSERT INTO sysinfo(node_id,time,os_name,os_release,architecture,cpu_model,"         \
                   "numa_nodes,sockets,cores_per_socket,threads_per_core,memory_kb,n_gpus,"              \
                   "topo_svg_blob,topo_text_blob,distances) VALUES($1::bigint,$2::bigint,$3::text,"      \
                   "$4::text,$5::text,$6::text,$7::bigint,$8::bigint,$9::bigint,$10::bigint,"            \
                   "$11::bigint,$12::bigint,$13::bigint,$14::bigint,$15::text) ON CONFLICT DO NOTHING "  \
                   "RETURNING 1")                                                                        \
    X(SYSGPU_INS, "INSERT INTO sysinfo_gpus(node_id,time,idx,uuid,address,manufacturer,model,"           \
                  "architecture,driver,firmware,memory_kb,power_limit,max_power_limit,min_power_limit,"  \
                  "max_ce_clock,max_memory_clock) VALUES($1::bigint,$2::bigint,$3::bigint,$4::text,"     \
                  "$5::text,$6::text,$7::text,$8::text,$9::text,$10::text,$11::bigint,$12::bigint,"      \
                  "$13::bigint,$14::bigint,$15::bigint,$16::bigint) ON CONFLICT DO NOTHING RETURNING 1") \
    X(SLURM_INS, NULL)                                                                                   \
    X(SLURM_CUR_PLACE, "INSERT INTO slurm_jobs_current(cluster_id,job_id,job_step,time) "                \
                       "SELECT c, j, s, 0 FROM unnest($1::bigint[],$2::bigint[],$3::text[]) u(c,j,s) "   \
                       "ORDER BY c, j, s ON CONFLICT DO NOTHING")                                        \
    X(SLURM_CUR_LOCK, "SELECT 1 FROM slurm_jobs_current x JOIN unnest($1::bigint[],$2::bigint[],"        \
                      "$3::text[]) u(c,j,s) ON x.cluster_id = u.c AND x.job_id = u.j AND "               \
                      "x.job_step = u.s ORDER BY x.cluster_id, x.job_id, x.job_step FOR UPDATE OF x")    \
    X(SLURM_CUR_RECOMPUTE, NULL)                                                                         \
    X(SLURM_NODE_INS, NULL)                                                                        \
    X(CINFO_INS, NULL)                                                                                   \
    X(PART_INS, NULL)                                                                                    \
    X(PNODE_INS, NULL)                                                                                   \
    X(NSTATE_INS, NULL)                                                                                  \
    X(MS_LATEST, "SELECT time, hash, snapshot FROM measurement_snapshots WHERE cluster_id = $1::bigint " \
                 "AND node_id = $2::bigint ORDER BY time DESC LIMIT 1")                                  \
    X(MS_SNAP_INS, "INSERT INTO measurement_snapshots(cluster_id,node_id,time,hash,n_measurements,"      \
                   "n_subtypes,snapshot) VALUES($1::bigint,$2::bigint,$3::bigint,$4::bigint,$5::bigint," \
                   "$6::bigint,$7::text) ON CONFLICT DO NOTHING RETURNING 1")                            \
    X(MS_SUB_INS, "INSERT INTO measurements(cluster_id,node_id,time,type,instance,subtype,data) "        \
                  "VALUES($1::bigint,$2::bigint,$3::bigint,$4::text,$5::bigint,$6::text,$7::text) "      \
                  "ON CONFLICT DO NOTHING RETURNING 1")                                                  \
    X(MS_ENV_INS, "INSERT INTO envelopes(cluster_id,node_id,kind,time,producer,version,format,"          \
                  "unknown_fields) VALUES($1::bigint,$2::bigint,$3::text,$4::bigint,$5::text,$6::text,"  \
                  "$7::bigint,$8::bigint) ON CONFLICT DO NOTHING")                                       \
    X(TOKEN_PUT, "INSERT INTO tokens(cluster,hash,read_only,created) VALUES($1::text,$2::text,"          \
                 "$3::boolean,$4::bigint) ON CONFLICT (cluster) DO UPDATE SET hash = excluded.hash, "    \
                 "read_only = excluded.read_only, created = excluded.created")                           \
    X(TOKEN_GET, "SELECT cluster, hash, read_only, created FROM tokens WHERE cluster = $1::text")        \
    X(TOKEN_LIST, "SELECT cluster, hash, read_only, created FROM tokens ORDER BY cluster COLLATE \"C\"") \
    X(TOKEN_DEL, "DELETE FROM tokens WHERE cluster = $1::text")                                          \
    X(Q_JOBS, "SELECT j.id, j.cluster_id, j.job, j.epoch, n.name, u.s, j.first_seen, j.last_seen, "      \
              "j.n_samples, j.nproc_peak, j.cpu_sum_m, j.cpu_peak_m, j.mem_sum_kb, j.mem_peak_kb, "      \
              "j.gpu_sum_m, j.gpu_peak_m, j.gpumem_sum_kb, j.gpumem_peak_kb, j.pid "                     \
              "FROM jobs j JOIN clusters c ON c.id = j.cluster_id LEFT JOIN nodes n ON n.id = j.node_id " \
              "LEFT JOIN strings u ON u.id = j.user_id WHERE c.name = $1::text AND "                     \
              "($2::bigint = 0 OR j.last_seen >= $2::bigint) AND ($3::bigint = 0 OR j.first_seen <= "    \
              "$3::bigint) ORDER BY j.first_seen, j.id LIMIT $4::bigint")                                \
    X(Q_JOB_HOSTS, "SELECT h.rjob_id, n.name FROM job_hosts h JOIN nodes n ON n.id = h.node_id "         \
                   "WHERE h.rjob_id = ANY($1::bigint[]) ORDER BY h.rjob_id, n.name COLLATE \"C\"")       \
    X(Q_JOB_CMDS, "SELECT c.rjob_id, x.s FROM job_cmds c JOIN strings x ON x.id = c.cmd_id "             \
                  "WHERE c.rjob_id = ANY($1::bigint[]) ORDER BY c.rjob_id, x.s COLLATE \"C\"")           \
    X(Q_JOB_SLURM, NULL)                                                                                 \
    X(Q_NODES, "SELECT n.id, n.name, greatest(coalesce((SELECT max(time) FROM samples WHERE node_id = "  \
               "n.id), 0), coalesce((SELECT max(time) FROM sysinfo WHERE node_id = n.id), 0)) "          \
               "FROM nodes n JOIN clusters c ON c.id = n.cluster_id WHERE c.name = $1::text "            \
               "ORDER BY n.name COLLATE \"C\"")                                                          \
    X(Q_NODE_SYSINFO, "SELECT DISTINCT ON (s.node_id) s.node_id, s.time, s.cpu_model, s.sockets, "       \
                      "s.cores_per_socket, s.threads_per_core, s.memory_kb, s.os_name, s.os_release, "   \
                      "s.architecture, s.n_gpus FROM sysinfo s JOIN nodes n ON n.id = s.node_id "        \
                      "JOIN clusters c ON c.id = n.cluster_id WHERE c.name = $1::text "                  \
                      "ORDER BY s.node_id, s.time DESC")                                                 \
    X(Q_NODE_STATES, "SELECT ns.node_id, x.s FROM node_states ns JOIN strings x ON x.id = ns.state_id "  \
                     "JOIN nodes n ON n.id = ns.node_id JOIN clusters c ON c.id = n.cluster_id "         \
                     "WHERE c.name = $1::text AND ns.time = (SELECT max(time) FROM node_states "         \
                     "WHERE node_id = ns.node_id) ORDER BY ns.node_id, x.s COLLATE \"C\"")               \
    X(Q_MEASURE_LATEST, "SELECT m.time, m.snapshot FROM measurement_snapshots m JOIN clusters c ON "     \
                        "c.id = m.cluster_id JOIN nodes n ON n.id = m.node_id AND n.cluster_id = c.id "  \
                        "WHERE c.name = $1::text AND n.name = $2::text ORDER BY m.time DESC LIMIT 1")

typedef enum fj_pg_stmt_id {
#define FJ_PG_ENUM(name, sql) FJ_PG_##name,
    FJ_PG_STMTS(FJ_PG_ENUM)
#undef FJ_PG_ENUM
    FJ_PG__COUNT
} fj_pg_stmt_id;

/* The SQL of the statements whose text is NULL in FJ_PG_STMTS (pg_write.c, pg_query.c). */
const char *fj_pg_built_sql(fj_pg_stmt_id id);
const char *fj_pg_query_sql(fj_pg_stmt_id id);

/* --- column arrays for batched writes ---------------------------------------------------------- */

/* One column of a batch, as the text of a PostgreSQL array literal ("{1,NULL,\"x\"}"), or (COPY
 * mode) all rows of the batch in COPY's text format in the first column's buffer. */
typedef struct fj_pg_arr {
    fj_buf b;
    size_t n; /* elements */
} fj_pg_arr;

#define FJ_PG_MAXCOLS 48

/* The rows of one table for one statement: ncols arrays, and for each row the index of the
 * envelope it belongs to (for the inserted/duplicate counts). Appends after an allocation
 * failure do nothing; st keeps the failure. */
typedef struct fj_pg_cols {
    fj_pg_arr c[FJ_PG_MAXCOLS];
    int ncols;
    bool copy;     /* rows in COPY text format (c[0].b), each ended by its ordinal when ord */
    bool ord;
    int in_row;    /* COPY mode: values of the current row so far */
    size_t nrows;
    size_t *env;
    size_t env_cap;
    fj_status st;
} fj_pg_cols;

void fj_pg_cols_init(fj_pg_cols *t, int ncols);
void fj_pg_cols_reset(fj_pg_cols *t); /* empties, keeping memory; back to array mode */
/* Switches an empty batch to COPY mode (ord: end every row with its 1-based ordinal). */
void fj_pg_cols_copy(fj_pg_cols *t, bool ord);
void fj_pg_cols_free(fj_pg_cols *t);
void fj_pg_null(fj_pg_cols *t, int col);
void fj_pg_i64(fj_pg_cols *t, int col, int64_t v);
void fj_pg_u64(fj_pg_cols *t, int col, uint64_t v); /* saturates at INT64_MAX */
void fj_pg_f64(fj_pg_cols *t, int col, double v);
void fj_pg_text(fj_pg_cols *t, int col, const char *s); /* NULL -> SQL NULL */
void fj_pg_textn(fj_pg_cols *t, int col, const char *s, size_t n);
void fj_pg_bytea(fj_pg_cols *t, int col, const unsigned char *p, size_t n);
/* Ends a row that belongs to envelope env. */
void fj_pg_row(fj_pg_cols *t, size_t env);
/* Closes the arrays and points vals[0..ncols) at them. FJ_ENOMEM after a failed append. */
fj_status fj_pg_cols_finish(fj_pg_cols *t, const char **vals);

/* --- the handle -------------------------------------------------------------------------------- */

struct fj_store {
    const fj_store_ops *ops; /* first: store.c finds the ops table through it */
    PGconn *conn;
    char *url;               /* as given (passwords included): for reconnecting */
    char *shown;             /* the URL without its password, for messages */
    fj_store_mode mode;
    bool migrating;
    int64_t job_gap_s;
    int64_t retention_s;     /* 0: keep forever */
    bool prepared[FJ_PG__COUNT];
    bool staged[FJ_PG__COUNT]; /* the statement's staging table exists in this session */
    fj_pg_map names;         /* interned names: see FJ_PG_NS_* */
    /* Week partitions known to exist (week start times). */
    int64_t *weeks;
    size_t n_weeks, cap_weeks;
    fj_time retention_ran;   /* when retention last ran (writer) */
    struct fj_pg_wstate *w;  /* the write path's reusable scratch (pg_write.c) */
};

/* Maps a failed result (or a failed connection when r is NULL) to fj_status and fills err with
 * "postgres: what: message". Connection failures give FJ_EBUSY and mark the handle for
 * reconnection; lock timeouts, deadlocks and serialization failures give FJ_EBUSY; data errors
 * FJ_EINVAL; anything else FJ_EIO. */
fj_status fj_pg_fail(fj_store *s, const PGresult *r, const char *what, fj_err *err);

/* Runs the prepared statement id with n text parameters (a NULL value is SQL NULL). On success
 * *res (when res is not NULL) holds the result, to be freed with PQclear. */
fj_status fj_pg_run(fj_store *s, fj_pg_stmt_id id, int n, const char *const *vals, PGresult **res,
                    const char *what, fj_err *err);

/* Runs SQL without parameters (transaction control, SET LOCAL). */
fj_status fj_pg_exec(fj_store *s, const char *sql, const char *what, fj_err *err);

/* Makes sure the connection is up: reconnects when it was lost. FJ_EBUSY when the server cannot
 * be reached. */
fj_status fj_pg_connect(fj_store *s, fj_err *err);

/* BEGIN (read-only snapshot when read_only), reconnecting once first when the connection turns
 * out to have been lost since the last use: a restarted server costs no failed request. */
fj_status fj_pg_begin(fj_store *s, bool read_only, fj_err *err);
/* ROLLBACK when a transaction is open (errors ignored). */
void fj_pg_rollback(fj_store *s);

/* Makes sure the week partitions holding times[0..n) exist (in its own transaction when
 * in_tx is false). */
fj_status fj_pg_ensure_weeks(fj_store *s, const fj_time *times, size_t n, bool in_tx, fj_err *err);
/* The Monday 00:00 UTC on or before t. */
int64_t fj_pg_week_of(fj_time t);
/* Forgets which partitions exist (after one was found missing). */
void fj_pg_weeks_forget(fj_store *s);

/* Drops the week partitions older than the retention setting, at most once an hour. */
fj_status fj_pg_retention(fj_store *s, bool force, fj_err *err);

/* Parses a decimal integer column value (0 for NULL or garbage). */
int64_t fj_pg_int(const PGresult *r, int row, int col);

/* The write path (pg_write.c) and queries (pg_query.c). */
fj_status fj_pg_write(fj_store *s, fj_batch *const *batches, size_t n_batches, fj_write_count *counts,
                      fj_err *err);
void fj_pg_write_free(fj_store *s);
fj_status fj_pg_query_jobs(fj_store *s, const fj_job_query *q, fj_buf *out, fj_err *err);
fj_status fj_pg_query_nodes(fj_store *s, const char *cluster, fj_buf *out, fj_err *err);
fj_status fj_pg_measurement_latest(fj_store *s, const char *cluster, const char *node, fj_time *time, fj_buf *out,
                                   fj_err *err);

#endif
