/* storage/chimbuko/rows.h — the write half of Chimbuko storage that does not depend on the backend
 * (docs/chimbuko.md): the tables a Chimbuko envelope is written to, with their columns in one
 * order, which record field goes in which column, and the counting rules. Each backend supplies
 * its statements and transactions and a column writer over its own statement type; a change of
 * what is stored is made here once. Not a public header. */
#ifndef FJ_CHIMBUKO_ROWS_H
#define FJ_CHIMBUKO_ROWS_H

#include "ingest/records/chimbuko.h"
#include "storage/core/store.h"

#include <stdbool.h>
#include <stdint.h>

/* --- the tables (migrations/sqlite/0005_chimbuko.sql, migrations/postgres/0003_chimbuko.sql) -- */

typedef enum fj_cb_table {
    FJ_CBT_PACKETS = 0,   /* one row a packet; a packet's other rows are written only when it is new */
    FJ_CBT_RANK_STATS,    /* per (app, rank) of a packet */
    FJ_CBT_RANK_STEPS,    /* per (app, rank, IO step) with anomalies */
    FJ_CBT_FUNC_STATS,    /* a function's cumulative profile: a point only when it changed */
    FJ_CBT_COUNTER_STATS, /* a counter's cumulative statistics: a point only when they changed */
    FJ_CBT_FUNC_METRICS,  /* per (app, rank, function) of a packet */
    FJ_CBT_EVENTS,        /* provenance anomalies and normal executions */
    FJ_CBT_METADATA,
    FJ_CBT_PROFILES,      /* provenance func_stats */
    FJ_CBT_COUNTERS,      /* provenance counter_stats */
    FJ_CBT__COUNT
} fj_cb_table;

typedef struct fj_cb_tabledef {
    const char *name;
    const char *cols;  /* comma-separated, no spaces: the order of the fj_cb_row_* functions */
    const char *types; /* one letter per column: b integer, f real, t text, o boolean */
    const char *key;   /* the natural key's columns, comma-separated */
} fj_cb_tabledef;

/* The table's definition; t must be below FJ_CBT__COUNT. */
const fj_cb_tabledef *fj_cb_table_def(fj_cb_table t);

/* --- a backend's column writer ---------------------------------------------------------------- */

/* Sets column col (0-based, in the table's order) of the row being built. The row functions
 * below set every column exactly once, so a backend need not clear a row beforehand. Strings
 * are borrowed: they belong to the envelope, which outlives the row's statement. */
typedef struct fj_cb_colw_ops {
    void (*null)(void *ctx, int col);
    void (*i64)(void *ctx, int col, int64_t v);
    void (*u64)(void *ctx, int col, uint64_t v); /* past INT64_MAX: as the backend keeps such values */
    void (*real)(void *ctx, int col, double v);  /* never NaN: that is null */
    void (*text)(void *ctx, int col, const char *s); /* never NULL: that is null */
    void (*boolean)(void *ctx, int col, bool v);
} fj_cb_colw_ops;

typedef struct fj_cb_colw {
    const fj_cb_colw_ops *ops;
    void *ctx;
} fj_cb_colw;

/* --- rows ------------------------------------------------------------------------------------- */

/* Every table's leading columns: the cluster and the run label's interned id. */
typedef struct fj_cb_key {
    int64_t cluster_id, run_id;
} fj_cb_key;

/* The run label of an envelope: the sender's, or "default". */
const char *fj_cb_run_label(const fj_chimbuko *cb);

/* One row each, every column set through w. Interned names come in as ids (the backend interns
 * them); `at` is the packet's created_at_ms; `received` the wall clock of the write. */
void fj_cb_row_packet(const fj_cb_colw *w, fj_cb_key k, const fj_cb_packet *p, fj_time received);
void fj_cb_row_rank(const fj_cb_colw *w, fj_cb_key k, int64_t at, const fj_cb_rank *r);
void fj_cb_row_step(const fj_cb_colw *w, fj_cb_key k, int64_t at, const fj_cb_step *s);
void fj_cb_row_func(const fj_cb_colw *w, fj_cb_key k, int64_t at, const fj_cb_func *f, int64_t name_id);
void fj_cb_row_counter_point(const fj_cb_colw *w, fj_cb_key k, int64_t at, const fj_cb_counter *c,
                             int64_t counter_id);
void fj_cb_row_metrics(const fj_cb_colw *w, fj_cb_key k, int64_t at, const fj_cb_func_metrics *m,
                       int64_t name_id);

/* The sender's records (a collection other than a packet), written by one loop over their tables,
 * FJ_CBT_RECORDS_FIRST to FJ_CBT_RECORDS_LAST in order: how many records of table t cb holds, the
 * names record i interns (names[1]: an event's hostname, else NULL and nothing to intern; a NULL
 * names[0] stands for ""), and its row from the ids of those names (ids[1] read only when
 * names[1] was set). */
#define FJ_CBT_RECORDS_FIRST FJ_CBT_EVENTS
#define FJ_CBT_RECORDS_LAST FJ_CBT_COUNTERS
size_t fj_cb_record_count(const fj_chimbuko *cb, fj_cb_table t);
void fj_cb_record_names(const fj_chimbuko *cb, fj_cb_table t, size_t i, const char *names[2]);
void fj_cb_row_record(const fj_cb_colw *w, fj_cb_key k, const fj_chimbuko *cb, fj_cb_table t, size_t i,
                      const int64_t ids[2]);

/* --- counting --------------------------------------------------------------------------------- */

/* The IO-step rows of a packet. */
size_t fj_cb_packet_steps(const fj_cb_packet *p);
/* Every row a packet stands for (itself included): all of them count as duplicates when the
 * packet was stored before, since it was committed with everything in it. */
uint64_t fj_cb_packet_rows(const fj_cb_packet *p);
/* Counts one row of the sender's records as inserted or duplicate. */
void fj_cb_count(fj_write_count *cnt, bool added);

#endif
