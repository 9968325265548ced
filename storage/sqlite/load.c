/* storage/sqlite/load.c — what the SQLite backend does its own way for load: its reading of many
 * nodes at once (storage/query/load.h's fj_qload_bulk: the driver's load_bulk, which the node and
 * cluster load queries use), and the writer's hourly roll-ups (migrations/sqlite/0006). The load
 * queries, their SQL, the bucketing, the roll-ups' use and the rows are storage/query/load.c's.
 *
 * Two ways to read the samples, with the same result:
 *  - per node (storage/query/load.c): an index range on samples(node_id, time), and the node's GPU rows;
 *    for a few nodes.
 *  - one pass: samples arrive in time order, so the window's samples of all nodes sit in one
 *    rowid range, read sequentially (about 3x faster than 1,000 index ranges, whose every row is
 *    a seek into the table); likewise sample_gpus by its sample_id key. A node whose rows in that
 *    range are not all its window's rows in time order (late or back-filled data) is read again
 *    per node, so the result never depends on arrival order. With many nodes and buckets the
 *    later half of the buckets is read by a second thread on its own connection.
 *
 * The writer keeps the roll-ups with the per-node reading (fj_sq_load_rollup_drain: new samples
 * appended, an hour a late sample changes recomputed), so answering from them or from the
 * samples gives the same figures. */
#include "storage/query/load.h"
#include "storage/sqlite/query_int.h"

#include "alloc.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Prepares sql in x as SQLite's own statement (read directly in the hot loops below). */
static fj_status fj_sqq_prepare(fj_sqq *x, const char *sql, sqlite3_stmt **st)
{
    fj_qrows r;
    fj_status rs = fj_sq_driver_prepare(x, sql, &r);
    *st = r.st;
    return rs;
}

/* Maps a failed sqlite3_step result. */
static fj_status fj_sqq_fail(fj_sqq *x, int rc, const char *what)
{
    return fj_sq_fail(x->s, rc, what, x->err);
}

/* More nodes than this are read in one pass. */
#define SCAN_MIN_NODES 16
/* Bucket memory of all nodes at once (one pass) at most; above, nodes are read one by one. */
#define SCAN_MAX_BUCKET_BYTES ((size_t)256 << 20)
/* At least this many nodes (and 4 buckets): the later half of the buckets is read by a second
 * thread on its own connection. */
#define SPLIT_MIN_NODES 64
/* A rowid range more than this many times the window's samples is not worth one pass. */
#define SCAN_MAX_WASTE 3
/* Largest rowid range mapped sample id -> node for the GPU pass (entries). */
#define SCAN_MAX_MAP ((int64_t)32 << 20)

/* --- statements ---------------------------------------------------------------------------------- */

/* The one pass's own statements on a connection: each node's window rows, how many, and the
 * rowids of the first and the last by time. */
typedef struct pass_stmts {
    fj_sqq *x;
    sqlite3_stmt *count, *first, *last;
} pass_stmts;

static fj_status pass_stmts_prepare(fj_sqq *x, pass_stmts *p)
{
    p->x = x;
    fj_status rs;
    if ((rs = fj_sqq_prepare(x, "SELECT count(*) FROM samples WHERE node_id = ?1 AND time >= ?2 AND time <= ?3",
                             &p->count)) != FJ_OK ||
        (rs = fj_sqq_prepare(x, "SELECT id FROM samples WHERE node_id = ?1 AND time >= ?2 AND time <= ?3"
                                " ORDER BY time LIMIT 1", &p->first)) != FJ_OK)
        return rs;
    return fj_sqq_prepare(x, "SELECT id FROM samples WHERE node_id = ?1 AND time >= ?2 AND time <= ?3"
                             " ORDER BY time DESC LIMIT 1", &p->last);
}

static void pass_stmts_free(pass_stmts *p)
{
    sqlite3_finalize(p->count);
    sqlite3_finalize(p->first);
    sqlite3_finalize(p->last);
}

/* --- one pass ------------------------------------------------------------------------------------ */

/* A node as the one pass sees it. */
typedef struct pass_node {
    fj_time last_t;
    int64_t expect, seen;
    bool redo; /* read it alone */
} pass_node;

/* The first column of st's first row for (node, from, to) into *v (0 when no row). */
static fj_status node_int(const pass_stmts *p, const fj_qload *l, sqlite3_stmt *st, int64_t node, int64_t *v)
{
    sqlite3_bind_int64(st, 1, node);
    sqlite3_bind_int64(st, 2, l->from);
    sqlite3_bind_int64(st, 3, l->to);
    int r = sqlite3_step(st);
    *v = r == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_reset(st);
    return r == SQLITE_ROW || r == SQLITE_DONE ? FJ_OK : fj_sqq_fail(p->x, r, "sample range");
}

/* The rowid range [*r0, *r1] holding the window's rows of every node, as far as its first and last
 * rows by time tell (in time-ordered data they are its smallest and largest rowids; a node for
 * which they are not is caught by its count), and their total. Three cheap index lookups per node;
 * min(id)/max(id) over the range would cost more than the scan saves. */
static fj_status pass_range(const pass_stmts *p, const fj_qload *l, pass_node *pn, int64_t *r0, int64_t *r1,
                            int64_t *total)
{
    *r0 = INT64_MAX, *r1 = INT64_MIN, *total = 0;
    for (size_t i = 0; i < l->n_ns; i++) {
        int64_t id = l->ns[i].id, a = 0, b = 0;
        fj_status rs = node_int(p, l, p->count, id, &pn[i].expect);
        if (rs == FJ_OK && pn[i].expect > 0 && (rs = node_int(p, l, p->first, id, &a)) == FJ_OK)
            rs = node_int(p, l, p->last, id, &b);
        if (rs != FJ_OK)
            return rs;
        if (pn[i].expect > 0) {
            *r0 = a < *r0 ? a : *r0;
            *r1 = b > *r1 ? b : *r1;
            *total += pn[i].expect;
        }
    }
    return FJ_OK;
}

/* Index of a node id among l->ns (sorted copy of ids), or -1. */
typedef struct idslot {
    int64_t id;
    size_t slot;
} idslot;

static int cmp_idslot(const void *a, const void *b)
{
    const idslot *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

static long find_slot(const idslot *v, size_t n, int64_t id)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && v[lo].id == id ? (long)v[lo].slot : -1;
}

/* A sample row from column c on (time, boot, used_memory_kb, load1, load5, load15, cpus), read
 * straight from the statement: this is the hot loop of a cluster's load. */
static void column_sample(sqlite3_stmt *st, int c, fj_qload_sample *s)
{
    s->t = sqlite3_column_int64(st, c);
    s->boot = sqlite3_column_int64(st, c + 1);
    s->cpus = sqlite3_column_blob(st, c + 6);
    s->cpus_len = (size_t)sqlite3_column_bytes(st, c + 6);
    s->has_mem = sqlite3_column_type(st, c + 2) != SQLITE_NULL;
    s->mem_kb = s->has_mem ? sqlite3_column_double(st, c + 2) : 0;
    s->has_load = sqlite3_column_type(st, c + 3) != SQLITE_NULL;
    s->load1 = s->has_load ? sqlite3_column_double(st, c + 3) : 0;
    s->load5 = s->has_load ? sqlite3_column_double(st, c + 4) : 0;
    s->load15 = s->has_load ? sqlite3_column_double(st, c + 5) : 0;
}

/* Where the GPU pass finds a sample id's node and time: rowid - r0 -> slot + 1 (0: none). */
typedef struct sample_map {
    int64_t r0;
    int32_t *slot;
    fj_time *t;
} sample_map;

/* Prepares sql, a pass over the rowid range [r0, r1] (?1, ?2), with the range bound. */
static fj_status prepare_range(fj_sqq *x, const char *sql, int64_t r0, int64_t r1, sqlite3_stmt **st)
{
    fj_status rs = fj_sqq_prepare(x, sql, st);
    if (rs == FJ_OK) {
        sqlite3_bind_int64(*st, 1, r0);
        sqlite3_bind_int64(*st, 2, r1);
    }
    return rs;
}

/* The samples of the rowid range [r0, r1] into the nodes' buckets, and into map when there is one. */
static fj_status pass_samples(const pass_stmts *p, fj_qload *l, pass_node *pn, const idslot *ids, int64_t r1,
                              sample_map *map)
{
    sqlite3_stmt *st = NULL;
    fj_status rs = prepare_range(p->x,
                                 "SELECT id, node_id, time, boot, used_memory_kb, load1, load5, load15, cpus"
                                 " FROM samples WHERE id >= ?1 AND id <= ?2",
                                 map->r0, r1, &st);
    if (rs != FJ_OK)
        return rs;
    fj_qload_sample s;
    int r;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        fj_time t = sqlite3_column_int64(st, 2); /* the window is checked here: cheaper than in SQL */
        if (t < l->from || t > l->to)
            continue;
        long slot = find_slot(ids, l->n_ns, sqlite3_column_int64(st, 1));
        if (slot < 0 || pn[slot].redo)
            continue;
        if (pn[slot].seen && t <= pn[slot].last_t) { /* not in time order: read this node alone */
            pn[slot].redo = true;
            continue;
        }
        pn[slot].seen++;
        pn[slot].last_t = t;
        column_sample(st, 2, &s);
        if ((rs = fj_qload_add_sample(l, &l->ns[slot], &s)) != FJ_OK)
            break;
        if (map->slot) {
            int64_t k = sqlite3_column_int64(st, 0) - map->r0;
            map->slot[k] = (int32_t)slot + 1;
            map->t[k] = t;
        }
    }
    sqlite3_finalize(st);
    if (rs == FJ_OK && r != SQLITE_DONE)
        rs = fj_sqq_fail(p->x, r, "samples");
    return rs;
}

/* The GPU rows of the rowid range, grouped by sample, into the buckets of the sample's node. */
static fj_status pass_cards(const pass_stmts *p, fj_qload *l, const pass_node *pn, int64_t r1,
                            const sample_map *map)
{
    sqlite3_stmt *st = NULL;
    fj_status rs = prepare_range(p->x,
                                 "SELECT sample_id, ce_util, memory_kb, power, temperature FROM sample_gpus"
                                 " WHERE sample_id >= ?1 AND sample_id <= ?2",
                                 map->r0, r1, &st);
    if (rs != FJ_OK)
        return rs;
    fj_qload_cards c = {0};
    int64_t cur = -1;
    fj_qload_node *n = NULL;
    int r;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t sid = sqlite3_column_int64(st, 0);
        if (sid != cur) {
            if (n)
                fj_qload_cards_flush(l, n, &c);
            cur = sid;
            int32_t slot = map->slot[sid - map->r0];
            n = slot && !pn[slot - 1].redo ? &l->ns[slot - 1] : NULL;
            c.t = n ? map->t[sid - map->r0] : 0;
        }
        if (n)
            fj_qload_card_add(&c, sqlite3_column_double(st, 1), sqlite3_column_double(st, 2),
                              sqlite3_column_double(st, 3), sqlite3_column_double(st, 4));
    }
    if (n)
        fj_qload_cards_flush(l, n, &c);
    sqlite3_finalize(st);
    return r == SQLITE_DONE ? FJ_OK : fj_sqq_fail(p->x, r, "gpu samples");
}

/* Reads every node of l in one pass over the window's rowid range. Nodes it cannot vouch for
 * are marked redo. false in *used when the range is not worth it (nothing read). */
static fj_status one_pass(const pass_stmts *p, fj_qload *l, pass_node *pn, bool *used)
{
    *used = false;
    int64_t r0, r1, total;
    fj_status rs = pass_range(p, l, pn, &r0, &r1, &total);
    if (rs != FJ_OK || total == 0 || r1 < r0 || (r1 - r0 + 1) > SCAN_MAX_WASTE * total)
        return rs;
    *used = true;

    idslot *ids = fj_arena_alloc(l->e.a, l->n_ns * sizeof *ids);
    if (!ids)
        return fj_err_set(l->e.err, FJ_ENOMEM, NULL, "out of memory");
    for (size_t i = 0; i < l->n_ns; i++)
        ids[i] = (idslot){l->ns[i].id, i};
    qsort(ids, l->n_ns, sizeof *ids, cmp_idslot);
    for (size_t i = 0; i < l->n_ns; i++)
        if ((rs = fj_qload_node_start(l, &l->ns[i])) != FJ_OK)
            return rs;

    int64_t span = r1 - r0 + 1;
    sample_map map = {.r0 = r0};
    if (span <= SCAN_MAX_MAP) {
        map.slot = fj_calloc((size_t)span, sizeof *map.slot);
        map.t = fj_malloc((size_t)span * sizeof *map.t);
        if (!map.slot || !map.t)
            rs = fj_err_set(l->e.err, FJ_ENOMEM, NULL, "out of memory");
    }
    if (rs == FJ_OK)
        rs = pass_samples(p, l, pn, ids, r1, &map);
    for (size_t i = 0; rs == FJ_OK && i < l->n_ns; i++)
        if (pn[i].seen != pn[i].expect || !map.slot)
            pn[i].redo = true; /* some of its rows lie outside the range, or its GPUs were not mapped */
    if (rs == FJ_OK && map.slot)
        rs = pass_cards(p, l, pn, r1, &map);
    fj_free(map.slot);
    fj_free(map.t);
    return rs;
}

/* Reads every node of l: one pass, then the nodes the pass could not vouch for one by one (or
 * every node, when the pass was not worth it). */
static fj_status read_nodes(const pass_stmts *p, fj_qload *l)
{
    pass_node *pn = fj_arena_calloc(l->e.a, l->n_ns + 1, sizeof *pn);
    if (!pn)
        return fj_err_set(l->e.err, FJ_ENOMEM, NULL, "out of memory");
    bool used = false;
    fj_status rs = one_pass(p, l, pn, &used);
    for (size_t i = 0; rs == FJ_OK && i < l->n_ns; i++)
        if (!used || pn[i].redo)
            rs = fj_qload_read_node(l, &l->ns[i]);
    return rs;
}

/* --- the second thread --------------------------------------------------------------------------- */

/* The later half of a long query, read by a second thread on a read connection of its own (so
 * a cluster-wide day takes two cores, not one). Its buckets are disjoint from the first half's;
 * the sample before its window opens its first CPU interval, exactly as a single pass would. The
 * halves read two snapshots taken a moment apart: at worst the later half shows a commit the
 * earlier does not, as if it had been asked a moment later. */
typedef struct half {
    struct fj_store st;
    fj_sqq x;
    fj_err err;
    fj_qload_stmts node;
    pass_stmts pass;
    fj_qload l;
    fj_status rs;
    pthread_t th;
} half;

static void *half_main(void *arg)
{
    half *h = arg;
    if ((h->rs = fj_qload_stmts_prepare(&h->x, &h->node)) == FJ_OK &&
        (h->rs = pass_stmts_prepare(&h->x, &h->pass)) == FJ_OK) {
        h->l.st = h->node;
        h->rs = read_nodes(&h->pass, &h->l);
    }
    return NULL;
}

/* The read connection of the second half, in a read transaction; false when it could not. */
static bool half_connect(const fj_sqq *x, half *h)
{
    const char *file = sqlite3_db_filename(x->s->db, "main");
    if (!file || !*file)
        return false;
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(file, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        sqlite3_close(db);
        return false;
    }
    sqlite3_busy_timeout(db, 5000);
    if (sqlite3_exec(db, "PRAGMA cache_size=-65536; PRAGMA mmap_size=17179869184; BEGIN", NULL, NULL, NULL) !=
        SQLITE_OK) {
        sqlite3_close(db);
        return false;
    }
    h->st.driver = x->s->driver;
    h->st.db = db;
    h->st.mode = FJ_STORE_READ;
    h->st.path = x->s->path;
    return true;
}

/* Starts the second half over buckets [cut, l->b_hi) of l's nodes; false when it could not (the
 * caller then reads everything itself). */
static bool half_start(const pass_stmts *p, const fj_qload *l, half *h, size_t cut)
{
    memset(h, 0, sizeof *h);
    if (!half_connect(p->x, h))
        return false;
    fj_sqq *x = &h->x;
    x->s = &h->st;
    x->d = p->x->d;
    x->q = p->x->q;
    x->err = &h->err;
    x->cluster_id = p->x->cluster_id;
    fj_qload *m = &h->l;
    if (!(x->a = fj_arena_create()) || !(m->ns = fj_arena_calloc(x->a, l->n_ns + 1, sizeof *m->ns)))
        goto fail;
    m->e = fj_qx_env(x);
    m->g = l->g;
    m->from = l->g.from + (int64_t)cut * l->g.step;
    m->to = l->to;
    m->b_lo = cut;
    m->b_hi = l->b_hi;
    m->n_ns = l->n_ns;
    for (size_t i = 0; i < l->n_ns; i++) {
        m->ns[i].id = l->ns[i].id;
        m->ns[i].name = l->ns[i].name;
        m->ns[i].b = l->ns[i].b;
    }
    if (pthread_create(&h->th, NULL, half_main, h) != 0)
        goto fail;
    return true;
fail:
    fj_arena_destroy(x->a);
    x->a = NULL;
    sqlite3_close(h->st.db);
    return false;
}

static fj_status half_join(half *h)
{
    pthread_join(h->th, NULL);
    fj_qload_stmts_free(&h->x, &h->node);
    pass_stmts_free(&h->pass);
    for (size_t i = 0; i < h->l.n_ns; i++)
        fj_free(h->l.ns[i].cpu.c);
    sqlite3_exec(h->st.db, "COMMIT", NULL, NULL, NULL);
    sqlite3_close(h->st.db);
    fj_arena_destroy(h->x.a);
    return h->rs;
}

/* The bulk reader (storage/query/load.h): one pass, its later half on a second thread when there are many
 * nodes and buckets. */
static fj_status read_all(fj_qload *l, void *ctx)
{
    const pass_stmts *p = ctx;
    size_t cut = l->b_lo + (l->b_hi - l->b_lo) / 2;
    half h;
    if (l->n_ns < SPLIT_MIN_NODES || l->b_hi - l->b_lo < 4 || !half_start(p, l, &h, cut))
        return read_nodes(p, l);
    fj_time to = l->to;
    size_t b_hi = l->b_hi;
    l->b_hi = cut;
    l->to = l->g.from + (int64_t)cut * l->g.step - 1;
    fj_status rs = read_nodes(p, l);
    l->to = to;
    l->b_hi = b_hi;
    fj_status hs = half_join(&h);
    if (rs == FJ_OK && hs != FJ_OK) {
        rs = hs;
        *l->e.err = h.err;
    }
    return rs;
}

/* Frees the bulk reader's statements. */
static void bulk_done(void *ctx)
{
    pass_stmts_free(ctx);
}

fj_status fj_sq_load_bulk(fj_qx *x, fj_qload_bulk *b)
{
    pass_stmts *p = fj_arena_calloc(x->a, 1, sizeof *p);
    if (!p)
        return fj_err_set(x->err, FJ_ENOMEM, NULL, "out of memory");
    *b = (fj_qload_bulk){SCAN_MIN_NODES, SCAN_MAX_BUCKET_BYTES, read_all, bulk_done, p};
    return pass_stmts_prepare(x, p);
}

/* --- the writer's hourly roll-ups ---------------------------------------------------------------- */

/* The drain's statements, prepared on first use and kept with the handle until
 * fj_sq_load_rollup_free: a write group drains whenever it adds samples, and preparing them for
 * every group was most of the roll-ups' writer cost at a steady rate (docs/benchmarks.md). */
struct fj_sq_rollup {
    fj_qload_stmts node; /* its x is the drain's, set anew by each (node_rows) */
    sqlite3_stmt *todo, *get, *put, *del, *last, *clear;
    /* load_daily: a day's row read and written (an appended hour's new samples added to it), and
     * the days of the recomputed hours cleared, then merged anew from their hours */
    sqlite3_stmt *day_get, *day_set, *day_del, *day_put;
};

enum { ROLLUP_NSTMTS = 14 };

static void rollup_stmts(const struct fj_sq_rollup *r, sqlite3_stmt *all[ROLLUP_NSTMTS])
{
    sqlite3_stmt *p[ROLLUP_NSTMTS] = {r->node.prev.st, r->node.samples.st, r->node.gpus.st, r->node.has_gpus.st,
                                      r->todo, r->get, r->put, r->del, r->last, r->clear, r->day_get, r->day_set,
                                      r->day_del, r->day_put};
    memcpy(all, p, sizeof p);
}

/* The kept per-node statements as statements of the drain's query x. */
static fj_qload_stmts node_rows(fj_sqq *x, fj_qload_stmts st)
{
    st.prev.x = st.samples.x = st.gpus.x = st.has_gpus.x = x;
    return st;
}

void fj_sq_load_rollup_free(fj_store *s)
{
    struct fj_sq_rollup *r = s->rollup;
    if (!r)
        return;
    sqlite3_stmt *all[ROLLUP_NSTMTS];
    rollup_stmts(r, all);
    for (int i = 0; i < ROLLUP_NSTMTS; i++)
        sqlite3_finalize(all[i]);
    fj_free(r);
    s->rollup = NULL;
}

/* The day of a listed hour (load_daily, migration 0021). */
#define TODO_DAY FJ_LOADAGG_DAY_OF_SQL("hour")

static fj_status rollup_prepare(fj_sqq *x)
{
    fj_store *s = x->s;
    if (s->rollup)
        return FJ_OK;
    struct fj_sq_rollup *r = fj_calloc(1, sizeof *r);
    if (!r)
        return fj_err_set(x->err, FJ_ENOMEM, NULL, "out of memory");
    s->rollup = r;
    fj_status rs;
    if ((rs = fj_qload_stmts_prepare(x, &r->node)) != FJ_OK ||
        (rs = fj_sqq_prepare(x, "SELECT node_id, hour, recompute FROM load_hourly_todo", &r->todo)) != FJ_OK ||
        (rs = fj_sqq_prepare(x,
                             "SELECT last_time," FJ_LOADAGG_COLS_SQL
                             " FROM load_hourly WHERE node_id = ?1 AND hour = ?2",
                             &r->get)) != FJ_OK ||
        (rs = fj_sqq_prepare(x, "INSERT OR REPLACE INTO load_hourly(node_id,hour,last_time," FJ_LOADAGG_COLS_SQL
                                ") VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                             &r->put)) != FJ_OK ||
        (rs = fj_sqq_prepare(x, "DELETE FROM load_hourly WHERE node_id = ?1 AND hour = ?2", &r->del)) != FJ_OK ||
        (rs = fj_sqq_prepare(x, "SELECT max(time) FROM samples WHERE node_id = ?1 AND time >= ?2 AND time <= ?3",
                             &r->last)) != FJ_OK ||
        (rs = fj_sqq_prepare(x,
                             "SELECT last_time," FJ_LOADAGG_COLS_SQL
                             " FROM load_daily WHERE node_id = ?1 AND day = ?2",
                             &r->day_get)) != FJ_OK ||
        (rs = fj_sqq_prepare(x, "INSERT OR REPLACE INTO load_daily(node_id,day,last_time," FJ_LOADAGG_COLS_SQL
                                ") VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                             &r->day_set)) != FJ_OK ||
        (rs = fj_sqq_prepare(x, "DELETE FROM load_daily WHERE (node_id, day) IN (SELECT node_id, " TODO_DAY
                                " FROM load_hourly_todo WHERE recompute)", &r->day_del)) != FJ_OK ||
        (rs = fj_sqq_prepare(x, "INSERT INTO load_daily(node_id,day," FJ_LOADAGG_COLS_SQL ",last_time)"
                                " SELECT h.node_id, t.day," FJ_LOADAGG_MERGE_SQL ",max(h.last_time)"
                                " FROM (SELECT DISTINCT node_id, " TODO_DAY " AS day FROM load_hourly_todo"
                                " WHERE recompute) t"
                                " JOIN load_hourly h ON h.node_id = t.node_id AND h.hour >= t.day"
                                " AND h.hour < t.day + 86400 GROUP BY h.node_id, t.day",
                             &r->day_put)) != FJ_OK ||
        (rs = fj_sqq_prepare(x, "DELETE FROM load_hourly_todo", &r->clear)) != FJ_OK) {
        fj_sq_load_rollup_free(s);
        return rs;
    }
    return FJ_OK;
}

/* The roll-up of (node, hour) as stored into *b and its last_time into *last; false when none. */
static fj_status stored_rollup(fj_sqq *x, sqlite3_stmt *st, int64_t node, fj_time hour, fj_loadagg_bucket *b,
                               fj_time *last, bool *found)
{
    sqlite3_bind_int64(st, 1, node);
    sqlite3_bind_int64(st, 2, hour);
    int r = sqlite3_step(st);
    if ((*found = r == SQLITE_ROW)) {
        double v[FJ_LOADAGG_NCOLS];
        for (int c = 0; c < FJ_LOADAGG_NCOLS; c++)
            v[c] = sqlite3_column_double(st, c + 1);
        fj_loadagg_from_row(b, v);
        *last = sqlite3_column_int64(st, 0);
    }
    sqlite3_reset(st);
    return r == SQLITE_ROW || r == SQLITE_DONE ? FJ_OK : fj_sqq_fail(x, r, "stored load roll-up");
}

/* The time of the node's last sample in [hour, to] into *t (0 when none). */
static fj_status last_sample(fj_sqq *x, sqlite3_stmt *st, int64_t node, fj_time hour, fj_time to, fj_time *t)
{
    sqlite3_bind_int64(st, 1, node);
    sqlite3_bind_int64(st, 2, hour);
    sqlite3_bind_int64(st, 3, to);
    int r = sqlite3_step(st);
    *t = r == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_reset(st);
    return r == SQLITE_ROW ? FJ_OK : fj_sqq_fail(x, r, "last sample of the hour");
}

/* Writes the roll-up b of (node, key) with put, or deletes it with del when b has no samples (the
 * hour's rows went away; del may be NULL when that cannot be). */
static fj_status store_row(fj_sqq *x, sqlite3_stmt *put, sqlite3_stmt *del, int64_t node, fj_time key,
                           fj_time last_time, const fj_loadagg_bucket *b)
{
    if (!b->samples && !del)
        return FJ_OK;
    sqlite3_stmt *st = b->samples ? put : del;
    sqlite3_bind_int64(st, 1, node);
    sqlite3_bind_int64(st, 2, key);
    if (b->samples) {
        sqlite3_bind_int64(st, 3, last_time);
        double v[FJ_LOADAGG_NCOLS];
        fj_loadagg_to_row(b, v);
        for (int c = 0; c < FJ_LOADAGG_NCOLS; c++) {
            if (fj_loadagg_col_is_int(c))
                sqlite3_bind_int64(st, c + 4, (int64_t)v[c]);
            else
                sqlite3_bind_double(st, c + 4, v[c]);
        }
    }
    int w = sqlite3_step(st);
    sqlite3_reset(st);
    return w == SQLITE_DONE ? FJ_OK : fj_sqq_fail(x, w, "write load roll-up");
}

static fj_status store_rollup(fj_sqq *x, const struct fj_sq_rollup *r, int64_t node, fj_time hour,
                              fj_time last_time, const fj_loadagg_bucket *b)
{
    return store_row(x, r->put, r->del, node, hour, last_time, b);
}

/* Adds the new samples of an appended hour (add, ending at last_time) to the node's row of that
 * day, as the hour's own roll-up was added to: the day is then the merge of its hours, up to the
 * rounding of sums taken in parts. */
static fj_status add_to_day(fj_sqq *x, const struct fj_sq_rollup *r, int64_t node, fj_time hour, fj_time last_time,
                            const fj_loadagg_bucket *add)
{
    fj_time day = fj_loadagg_day(hour), day_last = 0;
    fj_loadagg_bucket d;
    bool found = false;
    fj_status rs = stored_rollup(x, r->day_get, node, day, &d, &day_last, &found);
    if (rs != FJ_OK)
        return rs;
    if (!found)
        d = *add;
    else
        fj_loadagg_merge(&d, add);
    return store_row(x, r->day_set, NULL, node, day, last_time > day_last ? last_time : day_last, &d);
}

/* Brings every (node, hour) of load_hourly_todo up to date with the query's own reading, and the
 * days of those hours in load_daily (an appended hour's new samples added to its day's row; the
 * days of recomputed hours merged anew from load_hourly), and empties the table. Recomputed: the samples of that hour (fj_qload_read_hour), so the roll-up is
 * what a query of that hour from the samples answers. Appended (recompute 0: every new sample of
 * the hour is later than the stored roll-up's last_time): the samples after last_time, their
 * first interval opened likewise, added to the stored accumulators; the same figures up to the
 * rounding of a sum taken in two parts. Runs on the write connection inside the writer's
 * transaction, after the buffered sample rows went in. */
fj_status fj_sq_load_rollup_drain(fj_store *s, fj_err *err)
{
    fj_query q;
    memset(&q, 0, sizeof q);
    fj_sqq x = {.s = s, .d = fj_driver_of(s), .q = &q, .err = err};
    fj_status rs;
    if (!(x.a = fj_arena_create()))
        return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
    if ((rs = rollup_prepare(&x)) != FJ_OK) {
        fj_arena_destroy(x.a);
        return rs;
    }
    struct fj_sq_rollup *cache = s->rollup;
    fj_qenv e = fj_qx_env(&x);
    fj_qload_stmts st = node_rows(&x, cache->node);
    fj_qload l;
    fj_qload_hour_init(&l, &e, &st);
    fj_loadagg_bucket b, old;
    fj_qload_node n = {.b = &b};
    sqlite3_stmt *todo = cache->todo;
    int r;
    while ((r = sqlite3_step(todo)) == SQLITE_ROW) {
        n.id = sqlite3_column_int64(todo, 0);
        fj_time hour = sqlite3_column_int64(todo, 1), last_time = 0;
        bool found = false;
        if ((!sqlite3_column_int(todo, 2) &&
             (rs = stored_rollup(&x, cache->get, n.id, hour, &old, &last_time, &found)) != FJ_OK) ||
            (rs = fj_qload_read_hour(&l, &n, hour, found ? last_time + 1 : hour)) != FJ_OK)
            goto out;
        fj_loadagg_bucket added = b; /* appended: what the day's row gains */
        if (found) {
            fj_loadagg_merge(&old, &b);
            b = old;
        }
        if ((rs = last_sample(&x, cache->last, n.id, hour, hour + FJ_LOADAGG_ROLLUP_S - 1, &last_time)) != FJ_OK ||
            (rs = store_rollup(&x, cache, n.id, hour, last_time, &b)) != FJ_OK)
            goto out;
        /* a recomputed hour's day is merged anew from its hours below */
        if (!sqlite3_column_int(todo, 2) && added.samples &&
            (rs = add_to_day(&x, cache, n.id, hour, last_time, &added)) != FJ_OK)
            goto out;
    }
    if (r != SQLITE_DONE) {
        rs = fj_sqq_fail(&x, r, "load roll-ups to do");
        goto out;
    }
    sqlite3_reset(todo);
    /* the days of the recomputed hours: each the merge of its hourly roll-ups */
    if ((r = sqlite3_step(cache->day_del)) != SQLITE_DONE || (r = sqlite3_step(cache->day_put)) != SQLITE_DONE) {
        rs = fj_sqq_fail(&x, r, "daily load roll-ups");
        goto out;
    }
    if ((r = sqlite3_step(cache->clear)) != SQLITE_DONE)
        rs = fj_sqq_fail(&x, r, "load roll-ups done");
out:;
    /* kept for the next group: reset, so no statement holds a read snapshot */
    sqlite3_stmt *all[ROLLUP_NSTMTS];
    rollup_stmts(cache, all);
    for (int i = 0; i < ROLLUP_NSTMTS; i++) {
        sqlite3_reset(all[i]);
        sqlite3_clear_bindings(all[i]);
    }
    fj_free(n.cpu.c);
    fj_arena_destroy(x.a);
    return rs;
}
