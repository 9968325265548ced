/* storage/sqlite/write.c — the SQLite write path. One call is one transaction (group commit): every
 * record of every envelope goes to its table with INSERT OR IGNORE on its natural key, counted as
 * inserted or duplicate, and rectification (jobs, job_samples, job_hosts, job_cmds) runs in the
 * same transaction. On any failure everything is rolled back and the counts are zeroed.
 *
 * Counted rows (fj_write_count) are the envelope's own records: a sample (1), its GPUs, disks,
 * jobs, processes and process GPUs; a sysinfo (1) and its cards; each Slurm job record; a cluster
 * (1), its partitions, partition memberships and node states; each error object. Interned names,
 * notes, envelope meta, Slurm "current" rows and rectification rows are bookkeeping, not counted. */
#include "storage/sqlite/int.h"
#include "storage/core/grow.h"
#include "storage/core/try.h"
#include "storage/sqlite/chimbuko.h"

#include "alloc.h"
#include "storage/query/loadagg.h"
#include "storage/core/jobcpu.h"
#include "storage/core/rectify.h"
#include "storage/core/write_values.h"

#include <stdlib.h>
#include <string.h>

typedef struct wctx {
    fj_store *s;
    fj_err *err;
    const fj_envelope *e;
    int64_t cluster_id, node_id;
    fj_write_count *cnt;
    bool rollups; /* load_hourly_todo has rows to recompute before COMMIT */
    bool fresh_sample; /* the sample being written is a new row (its envelope row is this one) */
    /* the GPU cards of the sample job being written (job != 0): its processes' utilisation summed
     * per card, as its sample_proc_gpus rows hold it, for job_gpu_activity */
    struct fj_sq_card *cards;
    size_t n_cards;
} wctx;

#define STMT(var, id)                                                                                    \
    sqlite3_stmt *var = fj_sq_stmt(w->s, FJ_SQ_##id, w->err);                                            \
    if (!var)                                                                                            \
        return FJ_EIO;

/* --- binding ------------------------------------------------------------------------------ */

/* SQLite integers are signed: values past INT64_MAX are stored as REAL (see the migration). */
static void bind_id(sqlite3_stmt *st, int i, int64_t id)
{
    if (id)
        sqlite3_bind_int64(st, i, id);
    else
        sqlite3_bind_null(st, i);
}

/* Runs an insert; counts the row for the envelope when count is set; tells whether it was new. */
static fj_status run_ins(wctx *w, sqlite3_stmt *st, const char *what, bool count, bool *added)
{
    bool a;
    FJ_TRY(fj_sq_insert(w->s, st, what, &a, w->err));
    if (count) {
        if (a)
            w->cnt->inserted++;
        else
            w->cnt->duplicates++;
    }
    if (added)
        *added = a;
    return FJ_OK;
}

/* Inserts a row of statement id whose first two columns are integers (cluster and node, or node
 * and time) and the rest the values v[0 .. n), counted as run_ins counts. */
static fj_status insert_row(wctx *w, fj_sq_stmt_id id, int64_t a, int64_t b, const fj_wval *v, size_t n,
                            const char *what, bool count)
{
    sqlite3_stmt *st = fj_sq_stmt(w->s, id, w->err);
    if (!st)
        return FJ_EIO;
    sqlite3_bind_int64(st, 1, a);
    sqlite3_bind_int64(st, 2, b);
    fj_sq_bind_vals(st, 3, v, n);
    return run_ins(w, st, what, count, NULL);
}

/* The single id a lookup returns; FJ_EINTERNAL when there is none (it was just inserted or ignored). */
static fj_status get_id(wctx *w, sqlite3_stmt *st, const char *what, int64_t *id)
{
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *id = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    if (rc == SQLITE_ROW)
        return FJ_OK;
    if (rc == SQLITE_DONE)
        return fj_err_set(w->err, FJ_EINTERNAL, "db", "%s: row vanished", what);
    return fj_sq_fail(w->s, rc, what, w->err);
}

/* The handle's scratch for packed varints, grown to hold FJ_WV_VARINTS_MAX(n) bytes. */
static fj_status varint_bytes(wctx *w, size_t n, unsigned char **out)
{
    if (!fj_grow(&w->s->bytes, &w->s->bytes_cap, FJ_WV_VARINTS_MAX(n), 1, FJ_WV_VARINTS_MAX(n)))
        return fj_err_set(w->err, FJ_ENOMEM, "db", "out of memory");
    *out = w->s->bytes;
    return FJ_OK;
}

/* --- envelope meta, errors, notes ----------------------------------------------------------- */

static fj_status write_meta(wctx *w)
{
    fj_wval v[FJ_WV_ENVELOPE_N];
    fj_wv_envelope(v, w->e);
    return insert_row(w, FJ_SQ_ENVELOPE_INS, w->cluster_id, w->node_id, v, FJ_WV_ENVELOPE_N, "insert envelope", false);
}

static fj_status write_errors(wctx *w)
{
    const fj_envelope *e = w->e;
    for (size_t i = 0; i < e->n_errors; i++) {
        const fj_error_rec *r = &e->errors[i];
        int64_t cid = w->cluster_id, nid = w->node_id;
        if (r->cluster && (!e->cluster || strcmp(r->cluster, e->cluster) != 0))
            FJ_TRY(fj_sq_cluster_id(w->s, r->cluster, &cid, w->err));
        if (r->node && (cid != w->cluster_id || !e->node || strcmp(r->node, e->node) != 0))
            FJ_TRY(fj_sq_node_id(w->s, cid, r->node, &nid, w->err));
        fj_wval v[FJ_WV_ERROR_N];
        fj_wv_error(v, e, r);
        FJ_TRY(insert_row(w, FJ_SQ_ERROR_INS, cid, nid, v, FJ_WV_ERROR_N, "insert error", true));
    }
    return FJ_OK;
}

static fj_status write_notes(wctx *w)
{
    const fj_envelope *e = w->e;
    for (size_t i = 0; i < e->n_notes; i++) {
        fj_wval v[FJ_WV_NOTE_N];
        fj_wv_note(v, e, &e->notes[i]);
        FJ_TRY(insert_row(w, FJ_SQ_NOTE_INS, w->cluster_id, w->node_id, v, FJ_WV_NOTE_N, "insert note", false));
    }
    return FJ_OK;
}

/* --- buffered rows (FJ_SQ_BUFS) ------------------------------------------------------------ */

static const struct {
    int rowid; /* 1: each row starts with the rowid SQLite must assign, checked, not bound */
    int ncol;  /* columns bound */
    const char *head, *tail; /* the statement: head, the rows' VALUES, tail (an upsert's clause) */
} buf_def[FJ_SQ_BUF__COUNT] = {
#define FJ_SQ_BUF_DEF(name, rowid, ncol, head, tail) {rowid, ncol, head, tail},
    FJ_SQ_BUFS(FJ_SQ_BUF_DEF)
#undef FJ_SQ_BUF_DEF
};
/* a buffered row holds rowid + ncol values in FJ_SQ_BUF_COLS: a wider table would overrun it */
#define FJ_SQ_BUF_FITS(name, rowid, ncol, head, tail) \
    _Static_assert((rowid) + (ncol) <= FJ_SQ_BUF_COLS, "FJ_SQ_BUF_COLS is narrower than the rows of " #name);
FJ_SQ_BUFS(FJ_SQ_BUF_FITS)
#undef FJ_SQ_BUF_FITS

static void v_null(fj_sq_val *v)
{
    v->type = SQLITE_NULL;
}

static void v_int(fj_sq_val *v, int64_t x)
{
    v->type = SQLITE_INTEGER;
    v->u.i = x;
}

/* As fj_sq_bind_u64: past INT64_MAX as REAL. */
static void v_u64(fj_sq_val *v, uint64_t x)
{
    if (x <= (uint64_t)INT64_MAX) {
        v_int(v, (int64_t)x);
    } else {
        v->type = SQLITE_FLOAT;
        v->u.r = (double)x;
    }
}

static void v_id(fj_sq_val *v, int64_t id)
{
    if (id)
        v_int(v, id);
    else
        v_null(v);
}

/* A buffered row's values from v[0 .. n) (storage/core/write_values.h), as fj_sq_bind_vals would
 * bind them: the buffered tables hold numbers only. Inlined and unrolled: with an inline fill (fj_wv_proc) every
 * type is known at compile time and the row costs what setting its values one by one did. */
static inline __attribute__((always_inline)) void buf_vals(fj_sq_val *out, const fj_wval *v, size_t n)
{
#pragma GCC unroll 16
    for (size_t k = 0; k < n; k++) {
        switch (v[k].type) {
        case FJ_WV_INT: v_int(&out[k], v[k].u.i); break;
        case FJ_WV_U64: v_u64(&out[k], v[k].u.u); break;
        case FJ_WV_REAL:
            out[k].type = SQLITE_FLOAT;
            out[k].u.r = v[k].u.r;
            break;
        default: v_null(&out[k]); break;
        }
    }
}

/* Do two unsigned values land on one stored value (fj_sq_bind_u64 / v_u64)? Values past INT64_MAX are
 * stored as REAL, so distinct ones may collide there, as they do in a key. */
static bool same_u64(uint64_t a, uint64_t b)
{
    return a == b || (a > (uint64_t)INT64_MAX && b > (uint64_t)INT64_MAX && (double)a == (double)b);
}

/* Does a card before card i of a process (of a sample) store under the same index? */
static bool proc_card_taken(const fj_proc_gpu *g, size_t i)
{
    for (size_t h = 0; h < i; h++)
        if (same_u64(g[h].index, g[i].index))
            return true;
    return false;
}

static bool sample_card_taken(const fj_sample_gpu *g, size_t i)
{
    for (size_t h = 0; h < i; h++)
        if (same_u64(g[h].index, g[i].index))
            return true;
    return false;
}

/* The statement inserting 1 << k rows of buffer b, prepared on first use. */
static fj_status buf_stmt(wctx *w, fj_sq_buf_id b, int k, sqlite3_stmt **out)
{
    fj_sq_buf *bf = &w->s->bufs[b];
    if ((*out = bf->st[k]) != NULL)
        return FJ_OK;
    size_t rows = (size_t)1 << k, ncol = (size_t)buf_def[b].ncol, hlen = strlen(buf_def[b].head);
    size_t tlen = strlen(buf_def[b].tail);
    char *sql = fj_malloc(hlen + rows * (2 * ncol + 2) + tlen + 1);
    if (!sql)
        return fj_err_set(w->err, FJ_ENOMEM, "db", "out of memory");
    char *p = sql;
    memcpy(p, buf_def[b].head, hlen);
    p += hlen;
    for (size_t r = 0; r < rows; r++) {
        *p++ = r ? ',' : '(';
        if (r)
            *p++ = '(';
        for (size_t c = 0; c < ncol; c++) {
            if (c)
                *p++ = ',';
            *p++ = '?';
        }
        *p++ = ')';
    }
    memcpy(p, buf_def[b].tail, tlen);
    p += tlen;
    *p = '\0';
    fj_free(bf->bound[k]);
    bf->bound[k] = fj_malloc(rows * ncol * sizeof *bf->bound[k]);
    if (!bf->bound[k]) {
        fj_free(sql);
        return fj_err_set(w->err, FJ_ENOMEM, "db", "out of memory");
    }
    for (size_t i = 0; i < rows * ncol; i++)
        bf->bound[k][i].type = SQLITE_NULL; /* a new statement's parameters are NULL */
    int rc = sqlite3_prepare_v3(w->s->db, sql, (int)(p - sql), SQLITE_PREPARE_PERSISTENT, &bf->st[k], NULL);
    fj_free(sql);
    if (rc != SQLITE_OK) {
        bf->st[k] = NULL;
        return fj_sq_fail(w->s, rc, "prepare", w->err);
    }
    *out = bf->st[k];
    return FJ_OK;
}

static bool same_val(const fj_sq_val *a, const fj_sq_val *b)
{
    return a->type == b->type && (a->type == SQLITE_NULL || memcmp(&a->u, &b->u, sizeof a->u) == 0);
}

/* Inserts the rows buffered for b, FJ_SQ_BUF_ROWS per statement, the rest in halves. */
static fj_status buf_flush(wctx *w, fj_sq_buf_id b)
{
    fj_sq_buf *bf = &w->s->bufs[b];
    size_t lead = (size_t)buf_def[b].rowid, ncol = (size_t)buf_def[b].ncol, width = lead + ncol, done = 0;
    while (done < bf->n) {
        int k = FJ_SQ_BUF_LOG2;
        while (((size_t)1 << k) > bf->n - done)
            k--;
        size_t rows = (size_t)1 << k;
        sqlite3_stmt *st;
        FJ_TRY(buf_stmt(w, b, k, &st));
        fj_sq_val *bound = bf->bound[k];
        int i = 1;
        for (size_t r = 0; r < rows; r++) {
            const fj_sq_val *v = &bf->v[(done + r) * width + lead];
            for (size_t c = 0; c < ncol; c++, i++, bound++) {
                if (same_val(&v[c], bound))
                    continue;
                switch (v[c].type) {
                case SQLITE_INTEGER: sqlite3_bind_int64(st, i, v[c].u.i); break;
                case SQLITE_FLOAT: sqlite3_bind_double(st, i, v[c].u.r); break;
                default: sqlite3_bind_null(st, i); break;
                }
                *bound = v[c];
            }
        }
        int rc = sqlite3_step(st);
        sqlite3_reset(st);
        if (rc != SQLITE_DONE)
            return fj_sq_fail(w->s, rc, "insert buffered rows", w->err);
        /* the ids SQLite handed out must be the ones the rows were numbered with */
        if (lead && sqlite3_last_insert_rowid(w->s->db) != bf->v[(done + rows - 1) * width].u.i)
            return fj_err_set(w->err, FJ_EINTERNAL, "db", "row ids out of step in a buffered insert");
        done += rows;
    }
    bf->n = 0;
    return FJ_OK;
}

static fj_status buf_flush_all(wctx *w)
{
    for (int b = 0; b < FJ_SQ_BUF__COUNT; b++)
        FJ_TRY(buf_flush(w, (fj_sq_buf_id)b));
    return FJ_OK;
}

/* Room for one more row of b (flushing a full buffer first); *row has buf_def[b].ncol values. A
 * full buffer goes in after the buffers listed before it: a job_samples row's triggers read its
 * sample job's sample_proc_gpus rows (migration 0011). */
static fj_status buf_row(wctx *w, fj_sq_buf_id b, fj_sq_val **row)
{
    fj_sq_buf *bf = &w->s->bufs[b];
    if (bf->n == FJ_SQ_BUF_ROWS)
        for (int k = 0; k <= (int)b; k++)
            FJ_TRY(buf_flush(w, (fj_sq_buf_id)k));
    *row = &bf->v[bf->n++ * (size_t)(buf_def[b].rowid + buf_def[b].ncol)];
    return FJ_OK;
}

/* --- when each job was last busy (job_activity, job_gpu_activity) ------------------------- */

/* What sqlite3_column_int64 reads back of a value bound as fj_sq_bind_vals binds it. */
static int64_t stored_int(const fj_wval *v)
{
    double r;
    switch (v->type) {
    case FJ_WV_INT: return v->u.i;
    case FJ_WV_U64:
        if (v->u.u <= (uint64_t)INT64_MAX)
            return (int64_t)v->u.u;
        r = (double)v->u.u;
        break;
    case FJ_WV_REAL: r = v->u.r; break;
    default: return 0;
    }
    if (r <= (double)INT64_MIN)
        return INT64_MIN;
    if (r >= (double)INT64_MAX)
        return INT64_MAX;
    return (int64_t)r;
}

/* A card's utilisation summed over one node-sample's processes of a job (sample_proc_gpus). */
struct fj_sq_card {
    int64_t idx, util_m;
};

/* The job_activity row of a new node-sample and, for a batch job (job != 0), a job_gpu_activity row
 * per card its processes were on (w->cards): what migration 0010's and 0011's insert triggers
 * wrote, written by the writer since 0016 as upserts of its buffers, and since 0017 the
 * job_activity row only when more than its last_time moves. */
static fj_status activity_rows(wctx *w, int64_t rid, fj_time t, int64_t cpu_m, int64_t gpu_m)
{
    fj_sq_val *v;
    fj_time cpu_busy = cpu_m > 0 ? t : 0, gpu_busy = gpu_m > 0 ? t : 0;
    /* a row that would change only last_time is not written: readers take it from job_samples */
    if (!fj_sq_jcpu_activity_current(w->s, rid, w->node_id, t, cpu_busy, gpu_busy)) {
        FJ_TRY(buf_row(w, FJ_SQ_BUF_JACT, &v));
        v_int(&v[0], rid);
        v_int(&v[1], w->node_id);
        v_int(&v[2], t);
        v_int(&v[3], t);
        v_int(&v[4], cpu_busy);
        v_int(&v[5], gpu_busy);
    }
    for (size_t i = 0; i < w->n_cards; i++) {
        FJ_TRY(buf_row(w, FJ_SQ_BUF_JGACT, &v));
        v_int(&v[0], rid);
        v_int(&v[1], w->node_id);
        v_int(&v[2], w->cards[i].idx);
        v_int(&v[3], t);
        v_int(&v[4], t);
        v_int(&v[5], w->cards[i].util_m > 0 ? t : 0);
    }
    return FJ_OK;
}

/* Adds a stored sample_proc_gpus row (its idx and gpu_util_m as bound) to the sample job's cards. */
static fj_status card_add(wctx *w, const fj_wval *gv)
{
    int64_t idx = stored_int(&gv[0]), util = stored_int(&gv[2]);
    for (size_t i = 0; i < w->n_cards; i++)
        if (w->cards[i].idx == idx) {
            w->cards[i].util_m += util;
            return FJ_OK;
        }
    if (!fj_grow(&w->s->cards, &w->s->cards_cap, w->n_cards + 1, sizeof *w->s->cards, 16))
        return fj_err_set(w->err, FJ_ENOMEM, "db", "out of memory");
    w->cards = w->s->cards;
    w->cards[w->n_cards++] = (struct fj_sq_card){idx, util};
    return FJ_OK;
}

/* --- rectification ------------------------------------------------------------------------- */

#define MAX_INSTANCES 8 /* at most 2 instances of a key can match one time (see rectify.h) */

static void bind_sum(sqlite3_stmt *st, int i, const fj_jobsum *s)
{
    fj_wval v[FJ_WV_JOBSUM_N];
    fj_wv_jobsum(v, s);
    fj_sq_bind_vals(st, i, v, FJ_WV_JOBSUM_N);
}

static void sum_from_row(sqlite3_stmt *st, fj_jobsum *s)
{
    int64_t v[FJ_WV_JOBSUM_N];
    for (int i = 0; i < FJ_WV_JOBSUM_N; i++)
        v[i] = sqlite3_column_int64(st, 1 + i);
    fj_wv_jobsum_read(s, v);
}

/* Writes a job's summary; first_changed: first_seen differs from the stored row. The job's CPU
 * summary goes with it when one computed in memory awaits its write. Values the statement still has
 * bound from its last run (the time, zero GPU sums, the user) are not bound again. */
static fj_status rj_update(wctx *w, int64_t rid, int64_t user_id, const fj_jobsum *sum, bool first_changed,
                           int64_t *day)
{
    int64_t cpu_sum, cpu_peak, cpu_win;
    bool cpu = fj_sq_jcpu_take(w->s, rid, &cpu_sum, &cpu_peak, &cpu_win);
    static const fj_sq_stmt_id ids[2][2] = {{FJ_SQ_RJOB_UPD_LAST, FJ_SQ_RJOB_UPD},
                                            {FJ_SQ_RJOB_UPD_LAST_CPU, FJ_SQ_RJOB_UPD_CPU}};
    sqlite3_stmt *upd = fj_sq_stmt(w->s, ids[cpu][first_changed], w->err);
    if (!upd)
        return FJ_EIO;
    fj_wval sv[FJ_WV_JOBSUM_N];
    fj_wv_jobsum(sv, sum);
    fj_sq_val v[2 + FJ_WV_JOBSUM_N + 1];
    v_int(&v[0], rid);
    v_id(&v[1], user_id);
    buf_vals(&v[2], sv, FJ_WV_JOBSUM_N);
    int n = 2 + FJ_WV_JOBSUM_N; /* ?8, ?9 (cpu_sum_m, cpu_peak_m) are bound only with the CPU */
    if (cpu) {
        v_int(&v[7], cpu_sum);
        v_int(&v[8], cpu_peak);
        v_int(&v[n++], cpu_win);
    }
    fj_sq_val *bound = w->s->upd_bound[2 * cpu + first_changed];
    for (int i = 0; i < n; i++) {
        if ((i == 2 && !first_changed) || ((i == 7 || i == 8) && !cpu) || same_val(&v[i], &bound[i]))
            continue; /* RJOB_UPD_LAST has no ?3, the statements without the CPU no ?8, ?9 */
        if (v[i].type == SQLITE_NULL)
            sqlite3_bind_null(upd, i + 1);
        else
            sqlite3_bind_int64(upd, i + 1, v[i].u.i);
        bound[i] = v[i];
    }
    FJ_TRY(fj_sq_done(w->s, upd, "update job", w->err));
    /* jobs.last_day (migration 0014) follows last_seen; day NULL: its stored value is not known */
    int64_t now_day = sum->last_seen / 86400;
    if (day && *day == now_day)
        return FJ_OK;
    STMT(set_day, RJOB_DAY);
    sqlite3_bind_int64(set_day, 1, rid);
    sqlite3_bind_int64(set_day, 2, now_day);
    FJ_TRY(fj_sq_done(w->s, set_day, "update job day", w->err));
    if (day)
        *day = now_day;
    return FJ_OK;
}

/* Moves the rows of rectified job `from` to `to` and deletes `from` (a bridging merge). */
static fj_status move_rjob(wctx *w, int64_t to, int64_t from)
{
    static const fj_sq_stmt_id moves[][2] = {
        {FJ_SQ_RJS_MOVE, FJ_SQ_RJS_DEL}, {FJ_SQ_RJH_MOVE, FJ_SQ_RJH_DEL}, {FJ_SQ_RJC_MOVE, FJ_SQ_RJC_DEL}};
    for (size_t i = 0; i < sizeof moves / sizeof moves[0]; i++) {
        sqlite3_stmt *mv = fj_sq_stmt(w->s, moves[i][0], w->err);
        if (!mv)
            return FJ_EIO;
        sqlite3_bind_int64(mv, 1, to);
        sqlite3_bind_int64(mv, 2, from);
        FJ_TRY(fj_sq_done(w->s, mv, "merge jobs", w->err));
        /* rows that already existed under `to` (same host, same command) stay behind: drop them */
        sqlite3_stmt *del = fj_sq_stmt(w->s, moves[i][1], w->err);
        if (!del)
            return FJ_EIO;
        sqlite3_bind_int64(del, 1, from);
        FJ_TRY(fj_sq_done(w->s, del, "merge jobs", w->err));
    }
    STMT(del, RJOB_DEL);
    sqlite3_bind_int64(del, 1, from);
    return fj_sq_done(w->s, del, "merge jobs", w->err);
}

/* --- rectification cache (see struct fj_store) --- */

#define RJ_MAX 2             /* instances of one key kept in the cache; keys with more go uncached */
#define RJ_CACHE_MAX 65536   /* keys cached; past this the cache starts over */
#define RJ_PAIRS 6           /* (host / command) pairs an instance remembers itself; more go to rj_pairs */
#define RJ_PAIRS_MAX 262144

typedef struct rj_inst {
    int64_t id;
    int64_t day;             /* its stored last_day; -1: unknown (written at the next update) */
    fj_jobsum sum;           /* as it will be stored once the pending UPDATE (if any) ran */
    uint32_t pend;           /* 1 + index into s->rj_pend while the summary awaits its UPDATE */
    uint32_t n_pairs;
    int64_t pairs[RJ_PAIRS]; /* stored (rjob, host) and (rjob, command) pairs: id << 1 | is_host */
    fj_sq_jcpu_hint jcpu;    /* where its job CPU memory was last (storage/sqlite/jobcpu.c) */
} rj_inst;

struct fj_sq_rjent {
    fj_rjkey key;
    uint64_t hash;
    bool valid; /* false: the key has more than RJ_MAX instances, ask the database */
    size_t n;
    rj_inst in[RJ_MAX];
};

/* A cached instance whose summary is newer than its row. Instances do not move while pending:
 * merges and cache resets flush first. */
struct fj_sq_rjpend {
    int64_t rid;
    size_t ent, slot;    /* s->rj[ent].in[slot] */
    int64_t user_id;     /* the first user id given since the row was written; 0 = none */
    bool first_changed;  /* first_seen moved since the row was written */
};

static void rj_forget(fj_store *s)
{
    if (s->rj_slots)
        memset(s->rj_slots, 0, s->rj_slots_cap * sizeof *s->rj_slots);
    fj_intern_clear(&s->rj_pairs);
    s->rj_n = 0;
}

void fj_sq_rj_clear(fj_store *s)
{
    rj_forget(s);
    s->rj_pend_n = 0;
    for (int b = 0; b < FJ_SQ_BUF__COUNT; b++)
        s->bufs[b].n = 0;
}

void fj_sq_write_free(fj_store *s)
{
    for (int b = 0; b < FJ_SQ_BUF__COUNT; b++)
        for (int k = 0; k <= FJ_SQ_BUF_LOG2; k++) {
            sqlite3_finalize(s->bufs[b].st[k]);
            fj_free(s->bufs[b].bound[k]);
        }
    fj_sq_rj_clear(s);
    fj_sq_jcpu_free(s);
    fj_free(s->rj);
    fj_free(s->rj_slots);
    fj_free(s->rj_pend);
    fj_free(s->bytes);
    fj_free(s->ids);
    fj_free(s->pkeys);
    fj_free(s->jprocs);
    fj_free(s->cards);
    fj_free(s->seen);
}

static int pend_cmp(const void *a, const void *b)
{
    const struct fj_sq_rjpend *x = a, *y = b;
    return x->rid < y->rid ? -1 : x->rid > y->rid;
}

/* Writes every pending summary, in id order (neighbouring rows share pages); usually the jobs
 * came in that order already. */
static fj_status rj_flush(wctx *w)
{
    fj_store *s = w->s;
    size_t run = 1;
    while (run < s->rj_pend_n && s->rj_pend[run - 1].rid < s->rj_pend[run].rid)
        run++;
    if (run < s->rj_pend_n)
        qsort(s->rj_pend, s->rj_pend_n, sizeof *s->rj_pend, pend_cmp);
    for (size_t i = 0; i < s->rj_pend_n; i++) {
        const struct fj_sq_rjpend *p = &s->rj_pend[i];
        rj_inst *in = &s->rj[p->ent].in[p->slot];
        FJ_TRY(rj_update(w, p->rid, p->user_id, &in->sum, p->first_changed, &in->day));
        in->pend = 0;
    }
    s->rj_pend_n = 0;
    return FJ_OK;
}

/* Marks instance slot of entry ent as pending (its new summary is already in the cache). */
static fj_status rj_defer(wctx *w, size_t ent, size_t slot, int64_t user_id, bool first_changed)
{
    fj_store *s = w->s;
    rj_inst *in = &s->rj[ent].in[slot];
    if (in->pend) {
        struct fj_sq_rjpend *p = &s->rj_pend[in->pend - 1];
        if (!p->user_id) /* UPDATE keeps the first non-NULL user: coalesce(user_id, ?) */
            p->user_id = user_id;
        p->first_changed |= first_changed;
        return FJ_OK;
    }
    if (!fj_grow(&s->rj_pend, &s->rj_pend_cap, s->rj_pend_n + 1, sizeof *s->rj_pend, 256))
        return fj_err_set(w->err, FJ_ENOMEM, "db", "out of memory");
    s->rj_pend[s->rj_pend_n] = (struct fj_sq_rjpend){in->id, ent, slot, user_id, first_changed};
    in->pend = (uint32_t)++s->rj_pend_n;
    return FJ_OK;
}

static void bind_key(sqlite3_stmt *st, const fj_rjkey *k)
{
    sqlite3_bind_int64(st, 1, k->cluster_id);
    sqlite3_bind_int64(st, 2, k->job);
    sqlite3_bind_int64(st, 3, k->node_id);
    sqlite3_bind_int64(st, 4, k->epoch);
    sqlite3_bind_int64(st, 5, k->pid);
    sqlite3_bind_int64(st, 6, k->ppid);
    sqlite3_bind_int64(st, 7, k->cmd_id);
}

/* Reads instances from a RJOB_FIND* statement (bound); *more when there were more than cap. */
static fj_status read_instances(wctx *w, sqlite3_stmt *st, size_t cap, int64_t *ids, fj_jobsum *sums, size_t *n,
                                bool *more)
{
    int rc;
    *n = 0;
    *more = false;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            *more = true;
            break;
        }
        ids[*n] = sqlite3_column_int64(st, 0);
        sum_from_row(st, &sums[*n]);
        ++*n;
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW)
        return fj_sq_fail(w->s, rc, "find job", w->err);
    return FJ_OK;
}

static uint64_t rj_hash(const fj_rjkey *k)
{
    const int64_t *v = &k->cluster_id;
    uint64_t h = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < 7; i++) { /* fj_rjkey is seven int64_t, no padding */
        h = (h ^ (uint64_t)v[i]) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    return h;
}

/* The slot of s->rj_slots where k is, or the empty one where it would go. */
static uint32_t *rj_slot(fj_store *s, const fj_rjkey *k, uint64_t h)
{
    size_t mask = s->rj_slots_cap - 1;
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        uint32_t *slot = &s->rj_slots[i];
        if (!*slot)
            return slot;
        const struct fj_sq_rjent *e = &s->rj[*slot - 1];
        if (e->hash == h && memcmp(&e->key, k, sizeof *k) == 0)
            return slot;
    }
}

/* The index into s->rj of a key's cache entry, loaded from the database on a miss. The entries
 * are found through an open-addressing table of indexes (s->rj_slots, at most half full) that
 * compares the key stored in the entry: one cache miss for the slot, one for the entry. No
 * pending summary can concern a key that is not cached (see struct fj_sq_rjpend), so the rows
 * read here are current. */
static fj_status rj_lookup(wctx *w, const fj_rjkey *k, size_t *out)
{
    fj_store *s = w->s;
    uint64_t h = rj_hash(k);
    if (s->rj_n) {
        uint32_t *slot = rj_slot(s, k, h);
        if (*slot) {
            *out = *slot - 1;
            return FJ_OK;
        }
    }
    if (s->rj_n >= RJ_CACHE_MAX) {
        FJ_TRY(rj_flush(w));
        rj_forget(s);
    }
    if (!s->rj_slots) {
        s->rj_slots = fj_calloc(2 * RJ_CACHE_MAX, sizeof *s->rj_slots);
        if (!s->rj_slots)
            return fj_err_set(w->err, FJ_ENOMEM, "db", "out of memory");
        s->rj_slots_cap = 2 * RJ_CACHE_MAX;
    }
    if (!fj_grow(&s->rj, &s->rj_cap, s->rj_n + 1, sizeof *s->rj, 1024))
        return fj_err_set(w->err, FJ_ENOMEM, "db", "out of memory");
    struct fj_sq_rjent *e = &s->rj[s->rj_n];
    e->key = *k;
    e->hash = h;
    STMT(find, RJOB_FIND_ALL);
    bind_key(find, k);
    bool more;
    int64_t ids[RJ_MAX];
    fj_jobsum sums[RJ_MAX];
    FJ_TRY(read_instances(w, find, RJ_MAX, ids, sums, &e->n, &more));
    e->valid = !more;
    for (size_t i = 0; i < e->n; i++) {
        e->in[i].id = ids[i];
        e->in[i].sum = sums[i];
        e->in[i].pend = 0;
        e->in[i].n_pairs = 0;
        e->in[i].day = -1;
    }
    *rj_slot(s, k, h) = (uint32_t)(s->rj_n + 1);
    *out = s->rj_n++;
    return FJ_OK;
}

/* Stores the (rjob, host) or (rjob, command) pair unless it is known to be there: in the
 * instance's own list (in, NULL for uncached instances) or in rj_pairs. */
static fj_status rj_pair(wctx *w, rj_inst *in, bool host, int64_t rid, int64_t val)
{
    int64_t code = (int64_t)((uint64_t)val << 1) | (host ? 1 : 0);
    if (in)
        for (uint32_t i = 0; i < in->n_pairs; i++)
            if (in->pairs[i] == code)
                return FJ_OK;
    char key[1 + sizeof val];
    key[0] = host ? 'h' : 'c';
    memcpy(key + 1, &val, sizeof val);
    bool own = in && in->n_pairs < RJ_PAIRS;
    if (!own && fj_intern_get(&w->s->rj_pairs, rid, key, sizeof key))
        return FJ_OK;
    fj_sq_val *v;
    FJ_TRY(buf_row(w, host ? FJ_SQ_BUF_JHOSTS : FJ_SQ_BUF_JCMDS, &v));
    v_int(&v[0], rid);
    v_int(&v[1], val);
    if (own) {
        in->pairs[in->n_pairs++] = code;
        return FJ_OK;
    }
    if (w->s->rj_pairs.n >= RJ_PAIRS_MAX)
        fj_intern_clear(&w->s->rj_pairs);
    if (fj_intern_put(&w->s->rj_pairs, rid, key, sizeof key, 1) != FJ_OK)
        return fj_err_set(w->err, FJ_ENOMEM, "db", "out of memory");
    return FJ_OK;
}

/* The sample_jobs row a contribution comes from: its sample and its range of process rows, which
 * job_samples copies so that a profile need not look them up (migration 0007). */
typedef struct sj_place {
    int64_t sample_id, proc_first, n_procs;
} sj_place;

/* The jobs table holds job, epoch and pid as SQLite integers: two's complement past 2^63 - 1. */
static int64_t stored_key(uint64_t v)
{
    return (int64_t)v;
}

/* Adds one new node-sample contribution to its rectified job: find the instances of the key the
 * time joins (fj_rect_match), create one or merge the bridged ones, update the summary, record
 * the contribution, the host and the commands. The caller guarantees the contribution is new. */
static fj_status rectify(wctx *w, const fj_sample_job *j, const fj_sample_proc *p, int64_t proc_cmd_id,
                         const sj_place *at, const fj_jobcontrib *c, int64_t user_id, const int64_t *cmds,
                         size_t n_cmds, const fj_jcpu_sample *cur)
{
    fj_store *s = w->s;
    const fj_envelope *e = w->e;
    fj_jobkey k = fj_jobkey_of(e->cluster, e->node, j, p);
    int64_t gap = fj_jobkey_gap(&k, s->job_gap_s);
    fj_rjkey key = fj_rjkey_of(&k, p, w->cluster_id, w->node_id, proc_cmd_id, stored_key);
    fj_time t = e->time;

    size_t ei = 0;
    FJ_TRY(rj_lookup(w, &key, &ei));
    /* s->rj is not reallocated below (only rj_lookup grows it), so ent stays valid */
    struct fj_sq_rjent *ent = &s->rj[ei];
    int64_t ids[MAX_INSTANCES];
    fj_jobsum inst[MAX_INSTANCES];
    size_t n;
    if (ent->valid) {
        n = ent->n;
        for (size_t i = 0; i < n; i++) {
            ids[i] = ent->in[i].id;
            inst[i] = ent->in[i].sum;
        }
    } else {
        /* many instances: only those near t can match (at most two, see rectify.h) */
        STMT(find, RJOB_FIND);
        bind_key(find, &key);
        sqlite3_bind_int64(find, 8, fj_sat_add(t, gap));
        sqlite3_bind_int64(find, 9, fj_sat_add(t, -gap));
        bool more;
        FJ_TRY(read_instances(w, find, MAX_INSTANCES, ids, inst, &n, &more));
        if (more)
            return fj_err_set(w->err, FJ_EINTERNAL, "db", "more than %d instances of job %llu overlap",
                              MAX_INSTANCES, (unsigned long long)k.job);
    }

    size_t match[MAX_INSTANCES];
    fj_jobsum sum;
    size_t m = fj_rect_join(inst, n, t, gap, c, match, &sum);
    int64_t rid;
    rj_inst *in = NULL; /* the cached instance, when there is one */
    if (m == 0) {
        STMT(ins, RJOB_INS);
        int i = 1;
        sqlite3_bind_int64(ins, i++, key.cluster_id);
        sqlite3_bind_int64(ins, i++, key.job);
        sqlite3_bind_int64(ins, i++, key.node_id);
        sqlite3_bind_int64(ins, i++, key.epoch);
        sqlite3_bind_int64(ins, i++, key.pid);
        sqlite3_bind_int64(ins, i++, key.ppid);
        sqlite3_bind_int64(ins, i++, key.cmd_id);
        bind_id(ins, i++, user_id);
        bind_sum(ins, i, &sum);
        FJ_TRY(fj_sq_done(s, ins, "insert job", w->err));
        rid = sqlite3_last_insert_rowid(s->db);
        if (ent->valid) {
            if (ent->n < RJ_MAX) {
                in = &ent->in[ent->n++];
                in->id = rid;
                in->day = sum.last_seen / 86400; /* as RJOB_INS stored it */
                in->sum = sum;
                in->pend = 0;
                in->n_pairs = 0;
                in->jcpu = (fj_sq_jcpu_hint){0, 0};
            } else {
                /* from now on RJOB_FIND reads this key's rows: they must be current */
                FJ_TRY(rj_flush(w));
                ent->valid = false;
            }
        }
    } else if (m == 1) {
        size_t x = match[0];
        rid = ids[x];
        bool first_changed = sum.first_seen != inst[x].first_seen;
        if (ent->valid) {
            in = &ent->in[x];
            in->sum = sum;
            FJ_TRY(rj_defer(w, ei, x, user_id, first_changed));
        } else {
            FJ_TRY(rj_update(w, rid, user_id, &sum, first_changed, NULL));
        }
    } else {
        /* A bridging merge rewrites rows of the jobs and their job_* tables: write everything
         * pending first. Rare (out-of-order arrival), so simple beats fast here. */
        FJ_TRY(rj_flush(w));
        FJ_TRY(buf_flush_all(w));
        rid = ids[match[0]];
        for (size_t i = 1; i < m; i++) {
            FJ_TRY(move_rjob(w, rid, ids[match[i]]));
            fj_sq_jcpu_moved(s, rid, ids[match[i]]);
        }
        /* pairs of the merged ids are gone, and a deleted id may be handed out again */
        fj_intern_clear(&s->rj_pairs);
        FJ_TRY(fj_sq_jcpu_note(s, rid, -1, t, w->err)); /* its CPU totals are read again */
        FJ_TRY(rj_update(w, rid, user_id, &sum, true, NULL));
        if (ent->valid) {
            for (size_t i = m; i-- > 1;) {
                size_t x = match[i];
                memmove(&ent->in[x], &ent->in[x + 1], (ent->n - x - 1) * sizeof ent->in[0]);
                ent->n--;
            }
            in = &ent->in[match[0]]; /* match is ascending: the survivor did not move */
            in->sum = sum;
            in->day = sum.last_seen / 86400; /* rj_update above wrote it */
            in->n_pairs = 0;
        }
    }

    /* its CPU: computed now when the job's previous node-samples are in memory, else before COMMIT */
    int64_t cpu_m, win_m;
    FJ_TRY(fj_sq_jcpu_add(s, rid, w->node_id, t, m > 1 ? NULL : cur, m == 0, sum.n_samples, in ? &in->jcpu : NULL,
                          &cpu_m, &win_m, w->err));
    fj_sq_val *v;
    FJ_TRY(buf_row(w, FJ_SQ_BUF_JSAMPLES, &v));
    v_int(&v[0], rid);
    v_int(&v[1], at->sample_id);
    v_int(&v[2], c->nproc);
    v_int(&v[3], cpu_m);
    v_int(&v[4], c->mem_kb);
    v_int(&v[5], c->gpu_m);
    v_int(&v[6], c->gpumem_kb);
    v_int(&v[7], w->node_id);
    v_int(&v[8], t);
    v_id(&v[9], at->proc_first);
    v_int(&v[10], at->n_procs);
    if (win_m >= 0)
        v_int(&v[11], win_m);
    else
        v_null(&v[11]);
    FJ_TRY(activity_rows(w, rid, t, cpu_m, c->gpu_m));

    FJ_TRY(rj_pair(w, in, true, rid, w->node_id));
    for (size_t i = 0; i < n_cmds; i++)
        FJ_TRY(rj_pair(w, in, false, rid, cmds[i]));
    return FJ_OK;
}

/* --- samples ------------------------------------------------------------------------------- */

/* A process of a node-sample for the job CPU upkeep, as the drain would read it from its row. */
static fj_jcpu_proc jcpu_proc_of(const fj_wval *pv)
{
    return (fj_jcpu_proc){.pid = stored_int(&pv[0]), .ppid = stored_int(&pv[1]), .cmd_id = stored_int(&pv[2]),
                          .cpu_time = stored_int(&pv[8]), .cpu_avg_m = stored_int(&pv[6]),
                          .cpu_util_m = stored_int(&pv[7]), .num_threads = stored_int(&pv[5]),
                          .rolledup = stored_int(&pv[12])};
}

/* The next sample_procs.id, fetched once per transaction; ids are then handed out in order (the
 * rows themselves are buffered, so the maximum is read before any of this transaction's). */
static fj_status next_proc_id(wctx *w, int64_t *id)
{
    if (!w->s->next_proc_id) {
        STMT(st, PROC_NEXT_ID);
        int rc = sqlite3_step(st);
        if (rc == SQLITE_ROW)
            w->s->next_proc_id = sqlite3_column_int64(st, 0);
        sqlite3_reset(st);
        if (rc != SQLITE_ROW)
            return fj_sq_fail(w->s, rc, "next process id", w->err);
    }
    *id = w->s->next_proc_id;
    return FJ_OK;
}

static size_t proc_rows(const fj_sample_proc *p)
{
    return 1 + p->n_gpus;
}

/* The processes of a new sample_jobs row: all new (fresh ids), so they are buffered and counted
 * here; a repeated (pid, ppid, cmd), or a GPU index repeated within a process, is a duplicate, as
 * the natural keys say. */
static fj_status write_procs(wctx *w, const fj_sample_job *j, const sj_place *at, int64_t user_id,
                             const fj_wv_pkey *pk, size_t n)
{
    size_t n_cmds = 0;
    fj_jobcontrib c;
    memset(&c, 0, sizeof c);
    /* the node-sample's processes for its CPU; only for a new sample, whose envelope row (and so
     * producer) is this envelope's */
    if (!fj_grow(&w->s->jprocs, &w->s->jprocs_cap, n + 1, sizeof *w->s->jprocs, n + 1))
        return fj_err_set(w->err, FJ_ENOMEM, "db", "out of memory");
    fj_jcpu_sample cur = {.time = w->e->time, .procs = w->s->jprocs, .n = 0,
                          .children_counted = fj_jcpu_counts_children(w->e->producer, w->e->version)};
    w->n_cards = 0; /* job 0's processes are each their own job, and no card is judged for them */
    const fj_jcpu_sample *curp = w->fresh_sample ? &cur : NULL;
    for (size_t i = 0; i < n; i++) {
        const fj_sample_proc *p = &j->procs[pk[i].idx];
        if (i > 0 && fj_wv_pkey_same(&pk[i], &pk[i - 1])) {
            /* the same process twice in one job: the natural key says it is one row */
            w->cnt->duplicates += proc_rows(p);
            continue;
        }
        int64_t proc_id = w->s->next_proc_id++;
        fj_wval pv[FJ_WV_PROC_N];
        fj_wv_proc(pv, p, pk[i].cmd_id);
        cur.procs[cur.n++] = jcpu_proc_of(pv);
        fj_sq_val *v;
        FJ_TRY(buf_row(w, FJ_SQ_BUF_PROCS, &v));
        v_int(&v[0], proc_id); /* the rowid SQLite assigns: max + 1, as next_proc_id counts */
        buf_vals(&v[1], pv, FJ_WV_PROC_N);
        w->cnt->inserted++;
        for (size_t g = 0; g < p->n_gpus; g++) {
            const fj_proc_gpu *pg = &p->gpus[g];
            int64_t uuid_id;
            FJ_TRY(fj_sq_string_id(w->s, pg->uuid, true, &uuid_id, w->err));
            if (proc_card_taken(p->gpus, g)) { /* key (proc_id, idx): the first one wins */
                w->cnt->duplicates++;
                continue;
            }
            fj_wval gv[FJ_WV_PROC_GPU_N];
            fj_wv_proc_gpu(gv, pg, uuid_id);
            if (j->job != 0)
                FJ_TRY(card_add(w, gv));
            FJ_TRY(buf_row(w, FJ_SQ_BUF_PGPUS, &v));
            v_int(&v[0], proc_id);
            buf_vals(&v[1], gv, FJ_WV_PROC_GPU_N);
            w->cnt->inserted++;
        }
        if (j->job == 0) { /* job 0: every process is its own rectified job */
            fj_jobcontrib pc;
            memset(&pc, 0, sizeof pc);
            fj_jobcontrib_add_proc(&pc, p);
            /* its own node-sample: this process (the drain picks it from the sample's job-0
             * range by the key, all of that pid when the key has no command) */
            fj_jcpu_sample own = {cur.time, &cur.procs[cur.n - 1], 1, cur.children_counted};
            FJ_TRY(rectify(w, j, p, pk[i].cmd_id, at, &pc, user_id, &pk[i].cmd_id, 1,
                           curp && pk[i].cmd_id ? &own : NULL));
            continue;
        }
        fj_jobcontrib_add_proc(&c, p);
        size_t k = 0;
        while (k < n_cmds && w->s->ids[k] != pk[i].cmd_id)
            k++;
        if (k == n_cmds)
            w->s->ids[n_cmds++] = pk[i].cmd_id;
    }
    if (j->job != 0) {
        fj_jcpu_sort(&cur);
        FJ_TRY(rectify(w, j, NULL, 0, at, &c, user_id, w->s->ids, n_cmds, curp));
    }
    return FJ_OK;
}

/* The value an unsigned number is stored as, as a key (see same_u64): past INT64_MAX, the REAL it
 * becomes, as the integer it rounds to (UINT64_MAX for 2^64), which no smaller value has. */
static uint64_t stored_u64(uint64_t v)
{
    if (v <= (uint64_t)INT64_MAX)
        return v;
    double d = (double)v;
    return d >= 18446744073709551616.0 ? UINT64_MAX : (uint64_t)d;
}

/* The (job, epoch) pairs of one sample written so far: an open-addressing set of slots
 * {used, job, epoch} over s->seen, at most half full, cleared per sample. */
typedef struct seen_set {
    uint64_t *v;
    size_t mask; /* slots - 1 */
} seen_set;

static fj_status seen_init(wctx *w, seen_set *set, size_t n)
{
    size_t slots = 16;
    while (slots < 2 * n)
        slots *= 2;
    if (!fj_grow(&w->s->seen, &w->s->seen_cap, 3 * slots, sizeof *w->s->seen, 3 * slots))
        return fj_err_set(w->err, FJ_ENOMEM, "db", "out of memory");
    memset(w->s->seen, 0, 3 * slots * sizeof *w->s->seen);
    set->v = w->s->seen;
    set->mask = slots - 1;
    return FJ_OK;
}

/* Adds (job, epoch) as stored (stored_u64); false when it was there. */
static bool seen_add_key(seen_set *set, uint64_t kj, uint64_t ke)
{
    uint64_t h = (kj * 0x9E3779B97F4A7C15ull) ^ (ke * 0xC2B2AE3D27D4EB4Full);
    h ^= h >> 29;
    for (size_t i = (size_t)h & set->mask;; i = (i + 1) & set->mask) {
        uint64_t *slot = &set->v[3 * i];
        if (!slot[0]) {
            slot[0] = 1;
            slot[1] = kj;
            slot[2] = ke;
            return true;
        }
        if (slot[1] == kj && slot[2] == ke)
            return false;
    }
}

static bool seen_add(seen_set *set, uint64_t job, uint64_t epoch)
{
    return seen_add_key(set, stored_u64(job), stored_u64(epoch));
}

/* A stored unsigned column as stored_u64 gives it. */
static uint64_t column_key(sqlite3_stmt *st, int i)
{
    if (sqlite3_column_type(st, i) != SQLITE_FLOAT)
        return (uint64_t)sqlite3_column_int64(st, i);
    double d = sqlite3_column_double(st, i);
    return d >= 18446744073709551616.0 ? UINT64_MAX : d <= 0 ? 0 : (uint64_t)d;
}

/* The set of a sample's (job, epoch) pairs: those already stored (none for a new sample row) and
 * room for the n_jobs the envelope lists. */
static fj_status seen_load(wctx *w, seen_set *set, int64_t sample_id, bool fresh, size_t n_jobs)
{
    fj_store *s = w->s;
    size_t n = 0;
    if (!fresh) {
        STMT(st, SJOB_KEYS);
        sqlite3_bind_int64(st, 1, sample_id);
        int rc;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            if (!fj_grow(&s->ids, &s->ids_cap, 2 * n + 2, sizeof *s->ids, 128)) {
                sqlite3_reset(st);
                return fj_err_set(w->err, FJ_ENOMEM, "db", "out of memory");
            }
            s->ids[2 * n] = (int64_t)column_key(st, 0);
            s->ids[2 * n + 1] = (int64_t)column_key(st, 1);
            n++;
        }
        sqlite3_reset(st);
        if (rc != SQLITE_DONE)
            return fj_sq_fail(s, rc, "find sample jobs", w->err);
    }
    FJ_TRY(seen_init(w, set, n + n_jobs));
    for (size_t i = 0; i < n; i++)
        seen_add_key(set, (uint64_t)s->ids[2 * i], (uint64_t)s->ids[2 * i + 1]);
    return FJ_OK;
}

/* A sample job and its processes. The processes are written only with a new sample_jobs row, with
 * consecutive ids, so a re-sent sample costs no more than reading its (job, epoch) pairs; and the
 * job's contribution to its rectified job is added exactly then, so re-sent data is never counted
 * twice. seen holds the sample's pairs stored and listed so far: a pair not in it is new, and its
 * row is buffered without asking the database. */
static fj_status write_sample_job(wctx *w, int64_t sample_id, const fj_sample_job *j, seen_set *seen)
{
    fj_store *s = w->s;
    int64_t user_id;
    FJ_TRY(fj_sq_string_id(s, j->user, true, &user_id, w->err));
    size_t n = j->n_procs;
    if (!fj_grow(&s->pkeys, &s->pkeys_cap, n + 1, sizeof *s->pkeys, n + 1) ||
        !fj_grow(&s->ids, &s->ids_cap, n + 1, sizeof *s->ids, n + 1))
        return fj_err_set(w->err, FJ_ENOMEM, "db", "out of memory");
    fj_wv_pkey *pk = s->pkeys;
    for (size_t i = 0; i < n; i++) {
        const fj_sample_proc *p = &j->procs[i];
        pk[i].pid = p->pid;
        pk[i].ppid = p->ppid;
        pk[i].idx = i;
        FJ_TRY(fj_sq_string_id(s, p->cmd, false, &pk[i].cmd_id, w->err));
    }
    size_t n_unique = fj_wv_pkeys_sort(pk, n);

    int64_t first = 0;
    if (n_unique)
        FJ_TRY(next_proc_id(w, &first));
    bool sj_new = seen_add(seen, j->job, j->epoch);
    if (sj_new) {
        fj_wval jv[FJ_WV_SAMPLE_JOB_N];
        fj_wv_sample_job(jv, j, user_id);
        fj_sq_val *v;
        FJ_TRY(buf_row(w, FJ_SQ_BUF_SJOBS, &v));
        v_int(&v[0], sample_id);
        buf_vals(&v[1], jv, FJ_WV_SAMPLE_JOB_N);
        v_id(&v[4], first);
        v_int(&v[5], (int64_t)n_unique);
        w->cnt->inserted++;
    } else {
        w->cnt->duplicates++;
    }
    if (!sj_new) {
        for (size_t i = 0; i < n; i++)
            w->cnt->duplicates += proc_rows(&j->procs[i]);
        return FJ_OK;
    }
    sj_place at = {sample_id, first, (int64_t)n_unique};
    return write_procs(w, j, &at, user_id, pk, n);
}

/* The node's hourly load roll-ups this sample changes, listed for fj_sq_load_rollup_drain before
 * COMMIT. A new sample later than all of its node's (the usual case) is appended to its hour's
 * roll-up. Otherwise (a late sample, or `changed`: a card added to a stored sample) its hour is
 * recomputed, and so is, when it has counters, the hour of the node's next sample with counters,
 * whose CPU interval now starts here. */
static fj_status rollup_mark(wctx *w, fj_time t, bool counters, bool changed)
{
    bool late = changed;
    if (!late) {
        STMT(later, ROLLUP_LATER);
        sqlite3_bind_int64(later, 1, w->node_id);
        sqlite3_bind_int64(later, 2, t);
        int r = sqlite3_step(later);
        sqlite3_reset(later);
        if (r != SQLITE_ROW && r != SQLITE_DONE)
            return fj_sq_fail(w->s, r, "later sample", w->err);
        late = r == SQLITE_ROW;
    }
    STMT(mark, ROLLUP_MARK);
    sqlite3_bind_int64(mark, 1, w->node_id);
    sqlite3_bind_int64(mark, 2, fj_loadagg_hour(t));
    sqlite3_bind_int(mark, 3, late);
    FJ_TRY(fj_sq_done(w->s, mark, "list load roll-up", w->err));
    w->rollups = true;
    if (!counters || !late)
        return FJ_OK;
    STMT(next, ROLLUP_NEXT);
    sqlite3_bind_int64(next, 1, w->node_id);
    sqlite3_bind_int64(next, 2, t);
    int r = sqlite3_step(next);
    fj_time later = r == SQLITE_ROW ? sqlite3_column_int64(next, 0) : 0;
    sqlite3_reset(next);
    if (r != SQLITE_ROW && r != SQLITE_DONE)
        return fj_sq_fail(w->s, r, "next sample", w->err);
    if (r == SQLITE_DONE || fj_loadagg_hour(later) == fj_loadagg_hour(t))
        return FJ_OK;
    sqlite3_bind_int64(mark, 1, w->node_id);
    sqlite3_bind_int64(mark, 2, fj_loadagg_hour(later));
    sqlite3_bind_int(mark, 3, 1);
    return fj_sq_done(w->s, mark, "list load roll-up", w->err);
}

static fj_status write_sample(wctx *w)
{
    const fj_envelope *e = w->e;
    const fj_sample *sm = &e->u.sample;
    unsigned char *bytes;
    FJ_TRY(varint_bytes(w, sm->n_cpus, &bytes));
    fj_wval sv[FJ_WV_SAMPLE_N];
    fj_wv_sample(sv, sm, bytes);
    STMT(st, SAMPLE_INS);
    sqlite3_bind_int64(st, 1, w->node_id);
    sqlite3_bind_int64(st, 2, e->time);
    fj_sq_bind_vals(st, 3, sv, FJ_WV_SAMPLE_N);
    /* A new sample row has a new id, and rows are never deleted, so none of its children exist
     * yet: they are buffered and counted without asking (fresh). For a sample seen before (re-sent,
     * perhaps earlier in this very transaction) its GPUs go row by row with INSERT OR IGNORE and
     * its stored (job, epoch) pairs are read; both must see this transaction's rows. */
    bool fresh;
    FJ_TRY(run_ins(w, st, "insert sample", true, &fresh));
    w->fresh_sample = fresh;
    int64_t sample_id = 0;
    if (fresh) {
        sample_id = sqlite3_last_insert_rowid(w->s->db);
        FJ_TRY(rollup_mark(w, e->time, sm->has_system && sm->n_cpus, false));
    } else {
        FJ_TRY(buf_flush(w, FJ_SQ_BUF_SGPUS));
        FJ_TRY(buf_flush(w, FJ_SQ_BUF_SJOBS));
        STMT(get, SAMPLE_GET);
        sqlite3_bind_int64(get, 1, w->node_id);
        sqlite3_bind_int64(get, 2, e->time);
        FJ_TRY(get_id(w, get, "find sample", &sample_id));
    }

    for (size_t i = 0; i < sm->n_gpus; i++) {
        const fj_sample_gpu *g = &sm->gpus[i];
        int64_t uuid_id, mode_id;
        FJ_TRY(fj_sq_string_id(w->s, g->uuid, true, &uuid_id, w->err));
        FJ_TRY(fj_sq_string_id(w->s, g->compute_mode, true, &mode_id, w->err));
        fj_wval gv[FJ_WV_SAMPLE_GPU_N];
        fj_wv_sample_gpu(gv, g, uuid_id, mode_id);
        if (fresh) {
            if (sample_card_taken(sm->gpus, i)) { /* key (sample_id, idx): the first one wins */
                w->cnt->duplicates++;
                continue;
            }
            fj_sq_val *v;
            FJ_TRY(buf_row(w, FJ_SQ_BUF_SGPUS, &v));
            v_int(&v[0], sample_id);
            buf_vals(&v[1], gv, FJ_WV_SAMPLE_GPU_N);
            w->cnt->inserted++;
            continue;
        }
        STMT(gs, SGPU_INS);
        sqlite3_bind_int64(gs, 1, sample_id);
        fj_sq_bind_vals(gs, 2, gv, FJ_WV_SAMPLE_GPU_N);
        bool added;
        FJ_TRY(run_ins(w, gs, "insert sample gpu", true, &added));
        if (added) /* a card the first sending lacked */
            FJ_TRY(rollup_mark(w, e->time, false, true));
    }

    for (size_t i = 0; i < sm->n_disks; i++) {
        const fj_sample_disk *d = &sm->disks[i];
        int64_t name_id;
        FJ_TRY(fj_sq_string_id(w->s, d->name, false, &name_id, w->err));
        unsigned char *stats;
        FJ_TRY(varint_bytes(w, d->n_stats, &stats));
        fj_wval dv[FJ_WV_SAMPLE_DISK_N];
        fj_wv_sample_disk(dv, d, name_id, stats);
        STMT(ds, SDISK_INS);
        sqlite3_bind_int64(ds, 1, sample_id);
        fj_sq_bind_vals(ds, 2, dv, FJ_WV_SAMPLE_DISK_N);
        FJ_TRY(run_ins(w, ds, "insert sample disk", true, NULL));
    }

    if (!sm->n_jobs)
        return FJ_OK;
    seen_set seen = {NULL, 0};
    FJ_TRY(seen_load(w, &seen, sample_id, fresh, sm->n_jobs));
    for (size_t i = 0; i < sm->n_jobs; i++)
        FJ_TRY(write_sample_job(w, sample_id, &sm->jobs[i], &seen));
    return FJ_OK;
}

/* --- sysinfo ------------------------------------------------------------------------------- */

/* The blobs.id holding text (stored once per distinct content, zstd-compressed when that is
 * smaller); 0 for NULL. */
static fj_status blob_id(wctx *w, const char *text, int64_t *id)
{
    *id = 0;
    if (!text)
        return FJ_OK;
    size_t n = strlen(text);
    int64_t h = (int64_t)fj_wv_hash(text, n);
    STMT(find, BLOB_FIND);
    sqlite3_bind_int64(find, 1, h);
    sqlite3_bind_int64(find, 2, (int64_t)n);
    int rc;
    while ((rc = sqlite3_step(find)) == SQLITE_ROW) {
        const char *codec = (const char *)sqlite3_column_text(find, 1);
        const void *data = sqlite3_column_blob(find, 2);
        size_t dlen = (size_t)sqlite3_column_bytes(find, 2);
        if (codec && fj_wv_blob_equals(codec, data, dlen, text, n)) {
            *id = sqlite3_column_int64(find, 0);
            break;
        }
    }
    sqlite3_reset(find);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return fj_sq_fail(w->s, rc, "find blob", w->err);
    if (*id)
        return FJ_OK;

    fj_wv_blob b;
    if (fj_wv_blob_pack(&b, text, n) != FJ_OK)
        return fj_err_set(w->err, FJ_ENOMEM, "db", "out of memory");
    sqlite3_stmt *ins = fj_sq_stmt(w->s, FJ_SQ_BLOB_INS, w->err);
    if (!ins) {
        fj_wv_blob_free(&b);
        return FJ_EIO;
    }
    sqlite3_bind_int64(ins, 1, h);
    sqlite3_bind_int64(ins, 2, (int64_t)n);
    sqlite3_bind_text(ins, 3, b.codec, -1, SQLITE_STATIC);
    sqlite3_bind_blob(ins, 4, b.data, (int)b.len, SQLITE_STATIC);
    fj_status st = fj_sq_done(w->s, ins, "insert blob", w->err);
    fj_wv_blob_free(&b);
    if (st == FJ_OK)
        *id = sqlite3_last_insert_rowid(w->s->db);
    return st;
}

static fj_status write_sysinfo(wctx *w)
{
    const fj_envelope *e = w->e;
    const fj_sysinfo *si = &e->u.sysinfo;
    int64_t svg_id, text_id;
    FJ_TRY(blob_id(w, si->topo_svg, &svg_id));
    FJ_TRY(blob_id(w, si->topo_text, &text_id));

    fj_buf dist;
    FJ_TRY(fj_wv_distances_json(si, &dist, w->err));

    fj_wval v[FJ_WV_SYSINFO_N];
    fj_wv_sysinfo(v, si, svg_id, text_id, &dist);
    fj_status st = insert_row(w, FJ_SQ_SYSINFO_INS, w->node_id, e->time, v, FJ_WV_SYSINFO_N, "insert sysinfo", true);
    fj_buf_free(&dist);
    if (st != FJ_OK)
        return st;

    for (size_t k = 0; k < si->n_cards; k++) {
        fj_wval gv[FJ_WV_SYSINFO_GPU_N];
        fj_wv_sysinfo_gpu(gv, &si->cards[k]);
        FJ_TRY(insert_row(w, FJ_SQ_SYSGPU_INS, w->node_id, e->time, gv, FJ_WV_SYSINFO_GPU_N, "insert sysinfo gpu",
                          true));
    }
    return FJ_OK;
}

/* --- Slurm jobs ---------------------------------------------------------------------------- */

/* The record fields, in the order of the columns after (cluster_id, job_id, job_step) and of
 * bind_slurm below; the tables slurm_jobs and slurm_jobs_current share them. */
#define SLURM_FIELDS(X)                                                                                  \
    X(job_name) X(job_state) X(job_state_raw) X(array_job_id) X(array_task_id) X(het_job_id)             \
    X(het_job_offset) X(user_name) X(account) X(partition) X(reservation) X(distribution)                \
    X(submit_time) X(start_time) X(end_time) X(time_limit_s) X(priority) X(nodes)                        \
    X(requested_resources) X(allocated_resources) X(requested_cpus) X(requested_memory_per_node_kb)      \
    X(requested_node_count) X(minimum_cpus_per_node) X(suspend_time_s) X(exit_code) X(sacct_alloc_tres)  \
    X(sacct_ave_cpu) X(sacct_ave_disk_read) X(sacct_ave_disk_write) X(sacct_ave_rss)                     \
    X(sacct_ave_vmsize) X(sacct_elapsed_raw) X(sacct_max_rss) X(sacct_max_vmsize) X(sacct_min_cpu)       \
    X(sacct_system_cpu) X(sacct_user_cpu)

#define SF_COL(f) #f ","
#define SF_QM(f) "?,"
#define SF_ONE(f) +1
/* In-order record: a field the new record sets wins, an unset one keeps the stored value. */
#define SF_COALESCE(f) #f "=coalesce(excluded." #f "," #f "),"
/* Out-of-order record: every field again from the history, the latest record that set it. */
#define SF_RECOMPUTE(f)                                                                                  \
    #f "=(SELECT h." #f " FROM slurm_jobs h WHERE h.cluster_id=?1 AND h.job_id=?2 AND h.job_step=?3 "    \
       "AND h." #f " IS NOT NULL ORDER BY h.time DESC LIMIT 1),"

enum { SLURM_NF = 0 SLURM_FIELDS(SF_ONE) };
_Static_assert(FJ_WV_SLURM_N == SLURM_NF + 2, "fj_wv_slurm gives job_id, job_step and the fields");

static const char slurm_ins_sql[] = "INSERT OR IGNORE INTO slurm_jobs(cluster_id,job_id,job_step," SLURM_FIELDS(
    SF_COL) "time) VALUES(?,?,?," SLURM_FIELDS(SF_QM) "?)";

static const char slurm_upsert_sql[] =
    "INSERT INTO slurm_jobs_current(cluster_id,job_id,job_step," SLURM_FIELDS(SF_COL) "time) VALUES(?,?,?," SLURM_FIELDS(
        SF_QM) "?) ON CONFLICT(cluster_id,job_id,job_step) DO UPDATE SET " SLURM_FIELDS(SF_COALESCE) "time="
               "excluded.time WHERE excluded.time>=slurm_jobs_current.time";

static const char slurm_recompute_sql[] = "UPDATE slurm_jobs_current SET " SLURM_FIELDS(
    SF_RECOMPUTE) "time=time WHERE cluster_id=?1 AND job_id=?2 AND job_step=?3";

const char *fj_sq_built_sql(fj_sq_stmt_id id)
{
    switch (id) {
    case FJ_SQ_SLURM_INS: return slurm_ins_sql;
    case FJ_SQ_SLURM_CUR_UPSERT: return slurm_upsert_sql;
    case FJ_SQ_SLURM_CUR_RECOMPUTE: return slurm_recompute_sql;
    default: return "SELECT 'no such statement'";
    }
}

/* Binds key, fields and time of one Slurm record; returns the next parameter index. */
static int bind_slurm(sqlite3_stmt *st, int64_t cluster_id, fj_time t, const fj_slurm_job *j)
{
    fj_wval v[FJ_WV_SLURM_N];
    fj_wv_slurm(v, j);
    sqlite3_bind_int64(st, 1, cluster_id);
    int i = fj_sq_bind_vals(st, 2, v, FJ_WV_SLURM_N);
    sqlite3_bind_int64(st, i++, t);
    return i;
}

static fj_status write_jobs(wctx *w)
{
    const fj_envelope *e = w->e;
    const fj_jobs *js = &e->u.jobs;
    for (size_t k = 0; k < js->n_jobs; k++) {
        const fj_slurm_job *j = &js->jobs[k];
        STMT(ins, SLURM_INS);
        if (bind_slurm(ins, w->cluster_id, e->time, j) != SLURM_NF + 5) {
            sqlite3_reset(ins);
            return fj_err_set(w->err, FJ_EINTERNAL, "db", "Slurm column list and binding disagree");
        }
        bool added;
        FJ_TRY(run_ins(w, ins, "insert slurm job", true, &added));
        if (added) {
            STMT(up, SLURM_CUR_UPSERT);
            bind_slurm(up, w->cluster_id, e->time, j);
            bool changed;
            FJ_TRY(run_ins(w, up, "update current slurm job", false, &changed));
            if (!changed) {
                /* An older record than the current one arrived late: rebuild the row from history
                 * so the result is what in-order arrival would have given. */
                STMT(re, SLURM_CUR_RECOMPUTE);
                sqlite3_bind_int64(re, 1, w->cluster_id);
                fj_sq_bind_u64(re, 2, j->job_id);
                sqlite3_bind_text(re, 3, fj_wv_job_step(j), -1, SQLITE_STATIC);
                FJ_TRY(fj_sq_done(w->s, re, "recompute current slurm job", w->err));
            }
        }
        for (size_t n = 0; n < j->n_nodes; n++) {
            int64_t nid;
            FJ_TRY(fj_sq_node_id(w->s, w->cluster_id, j->nodes[n], &nid, w->err));
            STMT(sn, SLURM_NODE_INS);
            sqlite3_bind_int64(sn, 1, w->cluster_id);
            fj_sq_bind_u64(sn, 2, j->job_id);
            sqlite3_bind_text(sn, 3, fj_wv_job_step(j), -1, SQLITE_STATIC);
            sqlite3_bind_int64(sn, 4, nid);
            FJ_TRY(run_ins(w, sn, "insert slurm job node", false, NULL));
        }
    }
    return FJ_OK;
}

/* --- cluster ------------------------------------------------------------------------------- */

static fj_status write_cluster(wctx *w)
{
    const fj_envelope *e = w->e;
    const fj_cluster_info *ci = &e->u.cluster_info;
    const fj_wval slurm = fj_wv_int(ci->slurm ? 1 : 0);
    FJ_TRY(insert_row(w, FJ_SQ_CLUSTER_INFO_INS, w->cluster_id, e->time, &slurm, 1, "insert cluster", true));

    for (size_t k = 0; k < ci->n_partitions; k++) {
        const fj_partition *p = &ci->partitions[k];
        int64_t name_id;
        FJ_TRY(fj_sq_string_id(w->s, p->name, false, &name_id, w->err));
        const fj_wval part[] = {fj_wv_int(name_id), fj_wv_int((int64_t)p->n_nodes)};
        FJ_TRY(insert_row(w, FJ_SQ_PART_INS, w->cluster_id, e->time, part, 2, "insert partition", true));
        for (size_t n = 0; n < p->n_nodes; n++) {
            int64_t nid;
            FJ_TRY(fj_sq_node_id(w->s, w->cluster_id, p->nodes[n], &nid, w->err));
            const fj_wval node[] = {fj_wv_int(name_id), fj_wv_int(nid)};
            FJ_TRY(insert_row(w, FJ_SQ_PART_NODE_INS, w->cluster_id, e->time, node, 2, "insert partition node", true));
        }
    }

    for (size_t k = 0; k < ci->n_nodes; k++) {
        const fj_node_state *ns = &ci->nodes[k];
        int64_t nid;
        FJ_TRY(fj_sq_node_id(w->s, w->cluster_id, ns->node, &nid, w->err));
        for (size_t i = 0; i < ns->n_states; i++) {
            int64_t state_id;
            FJ_TRY(fj_sq_string_id(w->s, ns->states[i], false, &state_id, w->err));
            STMT(ss, NODE_STATE_INS);
            sqlite3_bind_int64(ss, 1, nid);
            sqlite3_bind_int64(ss, 2, e->time);
            sqlite3_bind_int64(ss, 3, state_id);
            FJ_TRY(run_ins(w, ss, "insert node state", true, NULL));
        }
    }
    return FJ_OK;
}

/* --- transaction --------------------------------------------------------------------------- */

static fj_status write_env(wctx *w)
{
    const fj_envelope *e = w->e;
    if (e->kind == FJ_KIND_METRICS) /* line protocol (many clusters per envelope): storage/sqlite/ts.c */
        return fj_sq_write_metrics(w->s, e, w->cnt, w->err);
    FJ_TRY(fj_sq_cluster_id(w->s, e->cluster, &w->cluster_id, w->err));
    bool admitted;
    FJ_TRY(fj_sq_quota_admit(w->s, e, w->cluster_id, w->cnt, &admitted, w->err));
    if (!admitted)
        return FJ_OK; /* over its cluster's quota: nothing of it is written; the answer says why */
    w->node_id = 0;
    if (e->node)
        FJ_TRY(fj_sq_node_id(w->s, w->cluster_id, e->node, &w->node_id, w->err));
    if (e->kind == FJ_KIND_MEASUREMENTS) /* aicr snapshot: storage/sqlite/measure.c writes it and its meta */
        return fj_sq_write_measurements(w->s, e, w->cluster_id, w->node_id, w->cnt, w->err);
    if (e->kind == FJ_KIND_CHIMBUKO) /* Chimbuko packets and provenance records: storage/sqlite/chimbuko.c */
        return fj_sq_write_chimbuko(w->s, e, w->cluster_id, w->cnt, w->err);
    FJ_TRY(write_meta(w));
    FJ_TRY(write_errors(w));
    FJ_TRY(write_notes(w));
    if (e->is_error)
        return FJ_OK;
    switch (e->kind) {
    case FJ_KIND_SAMPLE: return write_sample(w);
    case FJ_KIND_SYSINFO: return write_sysinfo(w);
    case FJ_KIND_JOB: return write_jobs(w);
    case FJ_KIND_CLUSTER: return write_cluster(w);
    default: return fj_err_set(w->err, FJ_EINTERNAL, "db", "unknown envelope kind %d", (int)e->kind);
    }
}

static fj_status run_simple(fj_store *s, fj_sq_stmt_id id, const char *what, fj_err *err)
{
    sqlite3_stmt *st = fj_sq_stmt(s, id, err);
    if (!st)
        return FJ_EIO;
    return fj_sq_done(s, st, what, err);
}

fj_status fj_sq_write(fj_store *s, fj_batch *const *batches, size_t n_batches, fj_write_count *counts,
                      fj_err *err)
{
    if (s->mode != FJ_STORE_WRITE)
        return fj_err_set(err, FJ_EINVAL, "db", "write on a read-only handle");
    size_t n_counts = 0;
    for (size_t b = 0; b < n_batches; b++)
        n_counts += batches[b] ? batches[b]->n_envs : 0;
    if (counts)
        memset(counts, 0, n_counts * sizeof *counts);

    fj_status st = run_simple(s, FJ_SQ_BEGIN, "begin", err);
    if (st != FJ_OK)
        return st;
    s->next_proc_id = 0;
    /* Another connection committed since our last transaction: what the rectification cache
     * knows may be stale. (Our own commits do not change data_version.) */
    sqlite3_stmt *dv = fj_sq_stmt(s, FJ_SQ_DATA_VERSION, err);
    if (!dv) {
        st = FJ_EIO;
    } else {
        int64_t v = sqlite3_step(dv) == SQLITE_ROW ? sqlite3_column_int64(dv, 0) : -1;
        sqlite3_reset(dv);
        if (v < 0 || v != s->data_version) { /* unknown counts as changed */
            fj_sq_rj_clear(s);
            fj_sq_jcpu_forget(s);
        }
        s->data_version = v;
    }
    wctx w = {.s = s, .err = err};
    fj_write_count scratch;
    size_t k = 0;
    for (size_t b = 0; st == FJ_OK && b < n_batches; b++) {
        if (!batches[b])
            continue;
        for (size_t i = 0; st == FJ_OK && i < batches[b]->n_envs; i++, k++) {
            memset(&scratch, 0, sizeof scratch);
            w.e = &batches[b]->envs[i];
            w.cnt = counts ? &counts[k] : &scratch;
            st = write_env(&w);
        }
    }
    /* what the group left in memory goes in before COMMIT */
    if (st == FJ_OK)
        st = rj_flush(&w);
    if (st == FJ_OK)
        st = buf_flush_all(&w);
    if (st == FJ_OK)
        st = fj_sq_jcpu_drain(s, err); /* the summaries kept in memory, then the noted node-samples */
    if (st == FJ_OK && w.rollups)
        st = fj_sq_load_rollup_drain(s, err); /* reads the flushed sample rows */
    if (st == FJ_OK)
        st = fj_sq_ts_precommit(s, err); /* the time-series engine's new series and chunks */
    if (st == FJ_OK)
        st = run_simple(s, FJ_SQ_COMMIT, "commit", err);
    fj_sq_ts_end(s, st == FJ_OK);
    if (st == FJ_OK)
        return FJ_OK;

    /* Nothing half-written: undo the whole group, forget names interned in it, zero the counts. */
    for (int i = 0; i < FJ_SQ__COUNT; i++)
        if (s->stmts[i])
            sqlite3_reset(s->stmts[i]);
    for (int b = 0; b < FJ_SQ_BUF__COUNT; b++)
        for (int q = 0; q <= FJ_SQ_BUF_LOG2; q++)
            if (s->bufs[b].st[q])
                sqlite3_reset(s->bufs[b].st[q]);
    if (!sqlite3_get_autocommit(s->db))
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    fj_intern_clear(&s->names);
    fj_quota_forget_totals(s->quota); /* nodes counted for this group were not made */
    fj_sq_rj_clear(s);
    fj_sq_jcpu_clear(s);
    s->next_proc_id = 0;
    if (counts)
        memset(counts, 0, n_counts * sizeof *counts);
    return st;
}
