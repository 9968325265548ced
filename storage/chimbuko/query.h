/* storage/chimbuko/query.h — the read half of Chimbuko storage that does not depend on the backend
 * (docs/chimbuko.md, storage/core/store_chimbuko.h): the filters every Chimbuko query applies, and how the
 * rows a backend reads become the rows of the result tables (storage/chimbuko/cols.c), events with their
 * labels and pages included. Each backend supplies its SQL, statements and read transaction; the
 * filters append to the shared SQL builder (storage/query/sqlbuf.h) and rows are read through the
 * backend's statement reader (storage/query/qx.h). The queries themselves
 * (fj_store_chimbuko_*, storage/core/store_chimbuko.h) are storage/chimbuko/query.c's too, their SQL written once in the driver's
 * dialect. A change of what a query means is made here once. Not a public header. */
#ifndef FJ_CHIMBUKO_QUERY_H
#define FJ_CHIMBUKO_QUERY_H

#include "fj_status.h"
#include "storage/query/qx.h"
#include "storage/query/sqlbuf.h"
#include "storage/core/store.h"
#include "storage/core/store_chimbuko.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* --- filters ---------------------------------------------------------------------------------- */

/* The row sets a Chimbuko query reads, each with its own filters. The backend's SELECT names the
 * table t (events: e), the run label's strings r, the function or counter name's strings n
 * (events: f; metadata: none). */
typedef enum fj_cb_rows {
    FJ_CBQ_RANK_STEPS,     /* cb_series ranks: chimbuko_rank_steps */
    FJ_CBQ_FUNC_STATS,     /* cb_series functions: chimbuko_func_stats */
    FJ_CBQ_FUNC_METRICS,   /* cb_series metrics and cb_top functions: chimbuko_func_metrics */
    FJ_CBQ_COUNTER_STATS,  /* cb_series counters: chimbuko_counter_stats */
    FJ_CBQ_TOP_RANKS,      /* cb_top ranks: chimbuko_rank_steps, every IO step */
    FJ_CBQ_EVENTS,         /* cb_records events: chimbuko_events, but the collection's condition */
    FJ_CBQ_METADATA,       /* cb_records metadata: chimbuko_metadata */
    FJ_CBQ_PROFILES,       /* cb_records func_stats: chimbuko_profiles */
    FJ_CBQ_COUNTERS        /* cb_records counter_stats: chimbuko_counters */
} fj_cb_rows;

/* Appends " WHERE ..." with every filter of q that applies to the row set: the cluster always,
 * as the statement's first parameter (later SQL may name it again: $1, ?1), then run, program,
 * rank, function, IO steps, time window and the page after q->after, as the row set takes them.
 * The backend may append more conditions (" AND ..."). */
void fj_cb_filters(fj_sqlbuf *b, const fj_cb_query *q, int64_t cluster_id, fj_cb_rows rows);
/* " LIMIT q->limit + extra" when q has a limit. */
void fj_cb_limit(fj_sqlbuf *b, const fj_cb_query *q, size_t extra);

/* Calls k->table(t), then k->row once per row of r, whose columns are t's in order. */
fj_status fj_cb_emit(const fj_qrows *r, fj_sink *k, const fj_qtable *t);

/* The columns an event listing selects, in this order (table chimbuko_events e, run label r.s,
 * function name f.s, host name h.s): the JSON columns may be selected as NULL when q->brief. */
enum {
    FJ_CB_EV_ID, FJ_CB_EV_RID, FJ_CB_EV_STEP, FJ_CB_EV_IDX, FJ_CB_EV_ANOMALY, FJ_CB_EV_RUN, FJ_CB_EV_PID,
    FJ_CB_EV_TID, FJ_CB_EV_FID, FJ_CB_EV_FUNC, FJ_CB_EV_HOST, FJ_CB_EV_ENTRY, FJ_CB_EV_EXIT, FJ_CB_EV_RT,
    FJ_CB_EV_RX, FJ_CB_EV_SCORE, FJ_CB_EV_SEV, FJ_CB_EV_GPU, FJ_CB_EV_GT, FJ_CB_EV_GD, FJ_CB_EV_GC, FJ_CB_EV_GS,
    FJ_CB_EV_GPE, FJ_CB_EV_GPERR, FJ_CB_EV_ALGO, FJ_CB_EV_ALGOP, FJ_CB_EV_CS, FJ_CB_EV_CE, FJ_CB_EV_EW,
    FJ_CB_EV_NS, FJ_CB_EV_GP, FJ_CB_EV_VERSION, FJ_CB_EV__COUNT
};

/* Emits the rows of r (in FJ_CB_EV_* order, fetched with fj_cb_limit(..., 1)) as table
 * fj_qt_cb_events: at most q->limit of them, setting q->next to the last row sent when one more
 * follows (q->next cleared otherwise). err: for an internal failure. */
fj_status fj_cb_emit_events(const fj_qrows *r, fj_cb_query *q, fj_sink *k, fj_err *err);

#endif
