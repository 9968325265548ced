/* Tests of storage/ts/engine.c with a fake backend (an in-memory table of chunk rows): appends,
 * sealing, emit/commit/rollback, reads merged across chunks and buffer with last write winning,
 * catalog loading, many series, and a reader racing the writer. */
#include "alloc.h"
#include "storage/ts/engine.h"

#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S INT64_C(1000000000)

/* ---- fake backend ----------------------------------------------------------------------- */

typedef struct row {
    fj_ts_chunk c;
    unsigned char *blob;
} row;

typedef struct checkpoint_ref {
    uint32_t id;
    int64_t t_last, t_hi; /* a range of t_last and seq (fj_ts_drop_range), one chunk for a drop */
    uint64_t seq, seq_hi;
} checkpoint_ref;

typedef struct db {
    pthread_mutex_t mu;
    row *rows;
    size_t n, cap;
    size_t n_in_txn;     /* rows inserted by the open transaction */
    uint32_t series_ids[4096];
    size_t n_series, series_in_txn;
    int fail_after;      /* sink fails after this many more calls (-1: never) */
    checkpoint_ref drops[4096]; /* rows the open transaction deletes (at its commit) */
    size_t n_drops;
} db;

static void db_init(db *d)
{
    memset(d, 0, sizeof *d);
    pthread_mutex_init(&d->mu, NULL);
    d->fail_after = -1;
}

static void db_free(db *d)
{
    for (size_t i = 0; i < d->n; i++)
        free(d->rows[i].blob);
    free(d->rows);
    pthread_mutex_destroy(&d->mu);
}

static fj_status sink_series(void *ud, uint32_t id, const fj_ts_key *key)
{
    db *d = ud;
    (void)key;
    if (d->fail_after == 0)
        return FJ_EIO;
    if (d->fail_after > 0)
        d->fail_after--;
    if (d->n_series < 4096)
        d->series_ids[d->n_series++] = id;
    d->series_in_txn++;
    return FJ_OK;
}

static fj_status sink_chunk(void *ud, const fj_ts_chunk *c)
{
    db *d = ud;
    if (d->fail_after == 0)
        return FJ_EIO;
    if (d->fail_after > 0)
        d->fail_after--;
    pthread_mutex_lock(&d->mu);
    if (d->n == d->cap) {
        d->cap = d->cap ? d->cap * 2 : 64;
        d->rows = realloc(d->rows, d->cap * sizeof *d->rows);
    }
    row *r = &d->rows[d->n++];
    r->c = *c;
    r->blob = malloc(c->len);
    memcpy(r->blob, c->blob, c->len);
    r->c.blob = r->blob;
    d->n_in_txn++;
    pthread_mutex_unlock(&d->mu);
    return FJ_OK;
}

static fj_status sink_drop(void *ud, uint32_t id, int64_t t_last, uint64_t seq)
{
    db *d = ud;
    if (d->fail_after == 0)
        return FJ_EIO;
    if (d->fail_after > 0)
        d->fail_after--;
    cr_assert_lt(d->n_drops, 4096);
    d->drops[d->n_drops++] = (checkpoint_ref){id, t_last, t_last, seq, seq};
    return FJ_OK;
}

static fj_status sink_drop_range(void *ud, uint32_t id, int64_t t_lo, int64_t t_hi, uint64_t seq_lo, uint64_t seq_hi)
{
    db *d = ud;
    cr_assert_lt(d->n_drops, 4096);
    d->drops[d->n_drops++] = (checkpoint_ref){id, t_lo, t_hi, seq_lo, seq_hi};
    return FJ_OK;
}

/* Transaction end: commit keeps the rows and deletes the dropped ones (each drop must find one
 * at least), rollback forgets the rows and drops of the transaction. */
static void db_commit(db *d, fj_ts_engine *e)
{
    pthread_mutex_lock(&d->mu);
    for (size_t k = 0; k < d->n_drops; k++) {
        const checkpoint_ref *r = &d->drops[k];
        size_t found = 0;
        for (size_t i = 0; i < d->n;) {
            const fj_ts_chunk *c = &d->rows[i].c;
            if (c->series_id == r->id && c->t_last >= r->t_last && c->t_last <= r->t_hi && c->seq >= r->seq &&
                c->seq <= r->seq_hi) {
                free(d->rows[i].blob);
                memmove(d->rows + i, d->rows + i + 1, (d->n - i - 1) * sizeof *d->rows);
                d->n--;
                found++;
            } else {
                i++;
            }
        }
        cr_assert_gt(found, 0, "dropped chunk %llu of series %u is not stored", (unsigned long long)r->seq, r->id);
    }
    d->n_drops = 0;
    d->n_in_txn = 0;
    d->series_in_txn = 0;
    pthread_mutex_unlock(&d->mu);
    fj_ts_engine_committed(e);
}

static void db_rollback(db *d, fj_ts_engine *e)
{
    pthread_mutex_lock(&d->mu);
    for (size_t i = d->n - d->n_in_txn; i < d->n; i++)
        free(d->rows[i].blob);
    d->n -= d->n_in_txn;
    d->n_in_txn = 0;
    d->n_series -= d->series_in_txn;
    d->series_in_txn = 0;
    d->n_drops = 0;
    pthread_mutex_unlock(&d->mu);
    fj_ts_engine_rolled_back(e);
}

static fj_status emit_commit(db *d, fj_ts_engine *e)
{
    fj_ts_sink sink = {sink_series, sink_chunk, d, sink_drop};
    fj_status st = fj_ts_engine_emit(e, &sink);
    if (st == FJ_OK)
        db_commit(d, e);
    else
        db_rollback(d, e);
    return st;
}

/* Iterator over the committed rows of one series; the snapshot (row count) is taken at the first
 * call, as a database read transaction would. shuffle yields them in a scrambled order. */
typedef struct iter {
    db *d;
    uint32_t id;
    size_t i, end;
    bool started, shuffle;
} iter;

static fj_status next_chunk(void *ud, fj_ts_chunk *out)
{
    iter *it = ud;
    pthread_mutex_lock(&it->d->mu);
    if (!it->started) {
        it->end = it->d->n - it->d->n_in_txn;
        it->started = true;
    }
    fj_status st = FJ_ENOTFOUND;
    while (it->i < it->end) {
        size_t k = it->shuffle ? it->end - 1 - it->i : it->i;
        it->i++;
        if (it->d->rows[k].c.series_id == it->id) {
            *out = it->d->rows[k].c;
            st = FJ_OK;
            break;
        }
    }
    pthread_mutex_unlock(&it->d->mu);
    return st;
}

/* Reads [from, to] of id through the engine and the fake database. */
static fj_status rd(fj_ts_engine *e, db *d, uint32_t id, int64_t from, int64_t to, fj_ts_points *p)
{
    iter it = {.d = d, .id = id};
    return fj_ts_read(e, NULL, id, from, to, d ? next_chunk : NULL, &it, p, NULL);
}

static fj_ts_key key_of(const char *host, const char *metric, const char *type_id)
{
    fj_ts_key k = {0};
    k.cluster = (fj_ts_str){"fritz", 5};
    k.host = (fj_ts_str){host, strlen(host)};
    k.metric = (fj_ts_str){metric, strlen(metric)};
    k.type = (fj_ts_str){"hwthread", 8};
    k.type_id = (fj_ts_str){type_id, strlen(type_id)};
    return k;
}

static fj_ts_engine *open_engine(uint32_t seal_points, int64_t seal_age_ns, size_t max_buffered)
{
    fj_ts_opts o = {.seal_points = seal_points, .seal_age_ns = seal_age_ns,
                    .max_buffered_points = max_buffered};
    fj_ts_engine *e;
    cr_assert_eq(fj_ts_engine_open(&o, &e), FJ_OK);
    return e;
}

static void put(fj_ts_engine *e, const fj_ts_key *k, int64_t t, double v)
{
    fj_ts_point p = {*k, t, v};
    cr_assert_eq(fj_ts_append(e, &p, 1, NULL, NULL, NULL), FJ_OK);
}

static uint32_t id_of(fj_ts_engine *e, const fj_ts_key *k)
{
    uint32_t id = 0;
    cr_assert_eq(fj_ts_series_find(e, k, &id), FJ_OK);
    return id;
}

/* ---- tests ------------------------------------------------------------------------------ */

Test(ts_engine, append_then_read_from_buffer)
{
    fj_ts_engine *e = open_engine(0, 0, 0);
    fj_ts_key k = key_of("f0101", "cpu_user", "3");
    for (int i = 0; i < 10; i++)
        put(e, &k, (100 + i * 60) * S, i * 1.5);
    fj_ts_points p = {0};
    cr_assert_eq(rd(e, NULL, id_of(e, &k), 0, INT64_MAX, &p), FJ_OK);
    cr_assert_eq(p.n, 10);
    for (int i = 0; i < 10; i++) {
        cr_assert_eq(p.t[i], (100 + i * 60) * S);
        cr_assert_eq(p.v[i], i * 1.5);
    }
    /* a sub-range */
    cr_assert_eq(rd(e, NULL, id_of(e, &k), 160 * S, 280 * S, &p), FJ_OK);
    cr_assert_eq(p.n, 3);
    cr_assert_eq(p.t[0], 160 * S);
    cr_assert_eq(rd(e, NULL, id_of(e, &k), 5, 4, &p), FJ_EINVAL);
    fj_ts_points_free(&p);
    fj_ts_engine_close(e);
}

Test(ts_engine, seal_by_count_emit_commit_and_read_back)
{
    fj_ts_engine *e = open_engine(10, 0, 0);
    db d;
    db_init(&d);
    fj_ts_key k = key_of("f0101", "flops_any", "0");
    for (int i = 0; i < 95; i++)
        put(e, &k, i * 60 * S, i * 0.25);
    fj_ts_stats st;
    fj_ts_engine_stats(e, &st);
    cr_assert_geq(st.pending_chunks, 8);
    cr_assert_eq(st.series, 1);
    cr_assert_eq(st.sealed_points + st.buffered_points, 95);
    /* before emit: the unsealed chunks are read from memory */
    fj_ts_points p = {0};
    cr_assert_eq(rd(e, &d, id_of(e, &k), INT64_MIN, INT64_MAX, &p), FJ_OK);
    cr_assert_eq(p.n, 95);
    cr_assert_eq(emit_commit(&d, e), FJ_OK);
    cr_assert_eq(d.n_series, 1);
    cr_assert_eq(d.n, st.pending_chunks);
    for (size_t i = 0; i < d.n; i++) {
        cr_assert_leq(d.rows[i].c.count, 10);
        cr_assert_eq(d.rows[i].c.seq, i + 1);
        if (i)
            cr_assert_gt(d.rows[i].c.t_first, d.rows[i - 1].c.t_last);
    }
    fj_ts_engine_stats(e, &st);
    cr_assert_eq(st.pending_chunks, 0);
    /* after commit: from the database */
    cr_assert_eq(rd(e, &d, id_of(e, &k), INT64_MIN, INT64_MAX, &p), FJ_OK);
    cr_assert_eq(p.n, 95);
    for (int i = 0; i < 95; i++) {
        cr_assert_eq(p.t[i], i * 60 * S);
        cr_assert_eq(p.v[i], i * 0.25);
    }
    /* the engine alone no longer has the sealed points; the database alone has no buffer */
    cr_assert_eq(rd(e, NULL, id_of(e, &k), INT64_MIN, INT64_MAX, &p), FJ_OK);
    cr_assert_eq(p.n, st.buffered_points);
    cr_assert_eq(rd(NULL, &d, id_of(e, &k), INT64_MIN, INT64_MAX, &p), FJ_OK);
    cr_assert_eq(p.n, 95 - st.buffered_points);
    fj_ts_points_free(&p);
    fj_ts_engine_close(e);
    db_free(&d);
}

Test(ts_engine, out_of_order_and_late_points)
{
    fj_ts_engine *e = open_engine(0, 0, 0);
    db d;
    db_init(&d);
    fj_ts_key k = key_of("f0102", "ipc", "7");
    int64_t ts[] = {500, 300, 900, 100, 700, 200};
    for (int i = 0; i < 6; i++)
        put(e, &k, ts[i] * S, (double)ts[i]);
    uint32_t id = id_of(e, &k);
    fj_ts_points p = {0};
    cr_assert_eq(rd(e, &d, id, INT64_MIN, INT64_MAX, &p), FJ_OK);
    int64_t want[] = {100, 200, 300, 500, 700, 900};
    cr_assert_eq(p.n, 6);
    for (int i = 0; i < 6; i++) {
        cr_assert_eq(p.t[i], want[i] * S);
        cr_assert_eq(p.v[i], (double)want[i]);
    }
    cr_assert_eq(fj_ts_engine_flush(e), FJ_OK);
    cr_assert_eq(emit_commit(&d, e), FJ_OK);
    /* late points, older than everything and in between: a new chunk overlapping the old */
    put(e, &k, 50 * S, 50);
    put(e, &k, 400 * S, 400);
    put(e, &k, 1000 * S, 1000);
    cr_assert_eq(rd(e, &d, id, INT64_MIN, INT64_MAX, &p), FJ_OK);
    int64_t want2[] = {50, 100, 200, 300, 400, 500, 700, 900, 1000};
    cr_assert_eq(p.n, 9);
    for (int i = 0; i < 9; i++)
        cr_assert_eq(p.t[i], want2[i] * S);
    cr_assert_eq(fj_ts_engine_flush(e), FJ_OK);
    cr_assert_eq(emit_commit(&d, e), FJ_OK);
    cr_assert_eq(d.n, 2);
    cr_assert_eq(d.rows[1].c.t_first, 50 * S);
    cr_assert_eq(d.rows[1].c.t_last, 1000 * S);
    cr_assert_eq(rd(e, &d, id, 150 * S, 450 * S, &p), FJ_OK);
    cr_assert_eq(p.n, 3);
    cr_assert_eq(p.t[0], 200 * S);
    cr_assert_eq(p.t[2], 400 * S);
    fj_ts_points_free(&p);
    fj_ts_engine_close(e);
    db_free(&d);
}

Test(ts_engine, same_time_twice_last_write_wins_everywhere)
{
    fj_ts_engine *e = open_engine(0, 0, 0);
    db d;
    db_init(&d);
    fj_ts_key k = key_of("f0103", "clock", "1");
    /* within the buffer: consecutive and not */
    put(e, &k, 10 * S, 1);
    put(e, &k, 10 * S, 2);
    put(e, &k, 20 * S, 3);
    put(e, &k, 10 * S, 4);
    put(e, &k, 30 * S, 5);
    uint32_t id = id_of(e, &k);
    fj_ts_points p = {0};
    cr_assert_eq(rd(e, &d, id, INT64_MIN, INT64_MAX, &p), FJ_OK);
    cr_assert_eq(p.n, 3);
    cr_assert_eq(p.v[0], 4);
    cr_assert_eq(p.v[1], 3);
    cr_assert_eq(p.v[2], 5);
    cr_assert_eq(fj_ts_engine_flush(e), FJ_OK);
    /* across chunks: chunk 1 (seq 1) has 10→4, chunk 2 overwrites 20 */
    put(e, &k, 20 * S, 6);
    cr_assert_eq(fj_ts_engine_flush(e), FJ_OK);
    /* buffer over chunks: 30 overwritten, not sealed */
    put(e, &k, 30 * S, 7);
    cr_assert_eq(rd(e, &d, id, INT64_MIN, INT64_MAX, &p), FJ_OK); /* from memory (pending) */
    cr_assert_eq(p.n, 3);
    cr_assert_eq(p.v[0], 4);
    cr_assert_eq(p.v[1], 6);
    cr_assert_eq(p.v[2], 7);
    cr_assert_eq(emit_commit(&d, e), FJ_OK);
    for (int shuffle = 0; shuffle < 2; shuffle++) {
        iter it = {.d = &d, .id = id, .shuffle = shuffle};
        cr_assert_eq(fj_ts_read(e, NULL, id, INT64_MIN, INT64_MAX, next_chunk, &it, &p, NULL), FJ_OK);
        cr_assert_eq(p.n, 3);
        cr_assert_eq(p.v[0], 4);
        cr_assert_eq(p.v[1], 6);
        cr_assert_eq(p.v[2], 7);
    }
    /* and once everything is sealed and stored: the buffer (30→7, then 10→8) is a third chunk */
    put(e, &k, 10 * S, 8);
    cr_assert_eq(fj_ts_engine_flush(e), FJ_OK);
    cr_assert_eq(emit_commit(&d, e), FJ_OK);
    cr_assert_eq(d.n, 3);
    for (int shuffle = 0; shuffle < 2; shuffle++) {
        iter it = {.d = &d, .id = id, .shuffle = shuffle};
        cr_assert_eq(fj_ts_read(NULL, NULL, id, INT64_MIN, INT64_MAX, next_chunk, &it, &p, NULL), FJ_OK);
        cr_assert_eq(p.n, 3);
        cr_assert_eq(p.v[0], 8);
        cr_assert_eq(p.v[1], 6);
        cr_assert_eq(p.v[2], 7);
    }
    fj_ts_points_free(&p);
    fj_ts_engine_close(e);
    db_free(&d);
}

/* ts_read in two steps, as a backend that reads many series with one statement does: every
 * series' engine part is copied before the statement's snapshot, so a seal and commit in between
 * loses nothing, and each answer is fj_ts_read's. */
Test(ts_engine, two_step_read_of_several_series_equals_one_step)
{
    fj_ts_engine *e = open_engine(4, 0, 0);
    db d;
    db_init(&d);
    fj_ts_key k[3] = {key_of("f0101", "cpu_user", "0"), key_of("f0101", "cpu_user", "1"),
                      key_of("f0102", "cpu_user", "0")};
    uint32_t ids[3];
    fj_ts_points want[3] = {{0}}, got = {0};
    /* per series: committed chunks, then a sealed chunk not committed yet and buffered points */
    for (int s = 0; s < 3; s++)
        for (int i = 0; i < 6 + s; i++)
            put(e, &k[s], (100 + i * 60) * S, s * 100 + i);
    cr_assert_eq(emit_commit(&d, e), FJ_OK);
    for (int s = 0; s < 3; s++) {
        for (int i = 6 + s; i < 12 + s; i++)
            put(e, &k[s], (100 + i * 60) * S, s * 100 + i);
        ids[s] = id_of(e, &k[s]);
        cr_assert_eq(rd(e, &d, ids[s], 0, INT64_MAX, &want[s]), FJ_OK);
        cr_assert_eq(want[s].n, 12 + (size_t)s);
    }
    fj_ts_read_part *parts[3];
    for (int s = 0; s < 3; s++)
        cr_assert_eq(fj_ts_read_begin(e, NULL, ids[s], 0, INT64_MAX, &parts[s], NULL), FJ_OK);
    /* everything sealed and committed after the copies, before the statement runs */
    cr_assert_eq(fj_ts_engine_flush(e), FJ_OK);
    cr_assert_eq(emit_commit(&d, e), FJ_OK);
    for (int s = 0; s < 3; s++) {
        iter it = {.d = &d, .id = ids[s]};
        cr_assert_eq(fj_ts_read_end(parts[s], next_chunk, &it, &got, NULL), FJ_OK);
        cr_assert_eq(got.n, want[s].n);
        for (size_t i = 0; i < got.n; i++) {
            cr_assert_eq(got.t[i], want[s].t[i]);
            cr_assert_eq(got.v[i], want[s].v[i]);
        }
    }
    /* errors as fj_ts_read's; a part not ended is discarded */
    fj_ts_read_part *part = NULL;
    cr_assert_eq(fj_ts_read_begin(e, NULL, ids[0], 5, 4, &part, NULL), FJ_EINVAL);
    cr_assert_null(part);
    cr_assert_eq(fj_ts_read_begin(e, NULL, ids[0], 0, INT64_MAX, &part, NULL), FJ_OK);
    fj_ts_read_discard(part);
    fj_ts_read_discard(NULL);
    for (int s = 0; s < 3; s++)
        fj_ts_points_free(&want[s]);
    fj_ts_points_free(&got);
    fj_ts_engine_close(e);
    db_free(&d);
}

Test(ts_engine, seq_continues_after_restart)
{
    fj_ts_opts o = {.seq_start = 1000};
    fj_ts_engine *e;
    cr_assert_eq(fj_ts_engine_open(&o, &e), FJ_OK);
    db d;
    db_init(&d);
    fj_ts_key k = key_of("f0104", "mem_bw", "0");
    put(e, &k, S, 1);
    cr_assert_eq(fj_ts_engine_flush(e), FJ_OK);
    cr_assert_eq(emit_commit(&d, e), FJ_OK);
    cr_assert_eq(d.rows[0].c.seq, 1000);
    fj_ts_engine_close(e);
    db_free(&d);
    o.seq_start = UINT64_MAX;
    cr_assert_eq(fj_ts_engine_open(&o, &e), FJ_EINVAL);
}

Test(ts_engine, rollback_and_sink_failure_hand_things_again)
{
    fj_ts_engine *e = open_engine(4, 0, 0);
    db d;
    db_init(&d);
    fj_ts_key a = key_of("f0105", "cpu_user", "0"), b = key_of("f0105", "cpu_user", "1");
    for (int i = 0; i < 8; i++) {
        put(e, &a, i * S, i);
        put(e, &b, i * S, -i);
    }
    fj_ts_stats st;
    fj_ts_engine_stats(e, &st);
    size_t chunks = st.pending_chunks;
    cr_assert_geq(chunks, 2);
    /* the sink fails on its third call: rollback, then everything again */
    d.fail_after = 2;
    cr_assert_eq(emit_commit(&d, e), FJ_EIO);
    cr_assert_eq(d.n, 0);
    cr_assert_eq(d.n_series, 0);
    d.fail_after = -1;
    cr_assert_eq(emit_commit(&d, e), FJ_OK);
    cr_assert_eq(d.n_series, 2);
    cr_assert_eq(d.n, chunks);
    /* an explicit rollback after a successful emit */
    put(e, &a, 100 * S, 1);
    cr_assert_eq(fj_ts_engine_flush(e), FJ_OK);
    fj_ts_sink sink = {sink_series, sink_chunk, &d, sink_drop};
    cr_assert_eq(fj_ts_engine_emit(e, &sink), FJ_OK);
    cr_assert_eq(d.n, chunks + 2); /* a's buffer sealed, b's too */
    /* emitting again in the same transaction hands nothing twice */
    cr_assert_eq(fj_ts_engine_emit(e, &sink), FJ_OK);
    cr_assert_eq(d.n, chunks + 2);
    db_rollback(&d, e);
    cr_assert_eq(d.n, chunks);
    /* the chunks are still readable from memory */
    fj_ts_points p = {0};
    cr_assert_eq(rd(e, &d, id_of(e, &a), INT64_MIN, INT64_MAX, &p), FJ_OK);
    cr_assert_eq(p.n, 9);
    cr_assert_eq(emit_commit(&d, e), FJ_OK);
    cr_assert_eq(d.n, chunks + 2);
    cr_assert_eq(rd(e, &d, id_of(e, &a), INT64_MIN, INT64_MAX, &p), FJ_OK);
    cr_assert_eq(p.n, 9);
    fj_ts_points_free(&p);
    fj_ts_engine_close(e);
    db_free(&d);
}

Test(ts_engine, catalog_load_and_new_series_reporting)
{
    fj_ts_engine *e = open_engine(0, 0, 0);
    db d;
    db_init(&d);
    fj_ts_key a = key_of("f0106", "cpu_user", "0"), b = key_of("f0106", "cpu_user", "1"),
              c = key_of("f0106", "cpu_user", "2");
    cr_assert_eq(fj_ts_engine_load_series(e, 5, &a), FJ_OK);
    cr_assert_eq(fj_ts_engine_load_series(e, 7, &b), FJ_OK);
    cr_assert_eq(fj_ts_engine_load_series(e, 9, &a), FJ_ECONFLICT);
    cr_assert_eq(fj_ts_engine_load_series(e, 7, &c), FJ_ECONFLICT);
    cr_assert_eq(fj_ts_engine_load_series(e, 0, &c), FJ_EINVAL);
    uint32_t id;
    cr_assert_eq(fj_ts_series_get(e, &a, false, &id), FJ_OK);
    cr_assert_eq(id, 5);
    cr_assert_eq(fj_ts_series_get(e, &c, false, &id), FJ_ENOTFOUND);
    put(e, &a, S, 1);
    put(e, &c, S, 2);
    cr_assert_eq(id_of(e, &c), 8);
    cr_assert_eq(emit_commit(&d, e), FJ_OK);
    cr_assert_eq(d.n_series, 1);
    cr_assert_eq(d.series_ids[0], 8);
    /* the key back from an id */
    char buf[128];
    fj_ts_key k;
    cr_assert_eq(fj_ts_series_key(e, 8, buf, sizeof buf, &k), FJ_OK);
    cr_assert_str_eq(k.host.p, "f0106");
    cr_assert_str_eq(k.type_id.p, "2");
    cr_assert_str_eq(k.stype.p, "");
    cr_assert_eq(k.metric.n, 8);
    cr_assert_eq(fj_ts_series_key(e, 8, buf, 10, &k), FJ_ETOOBIG);
    cr_assert_eq(fj_ts_series_key(e, 6, buf, sizeof buf, &k), FJ_ENOTFOUND);
    cr_assert_eq(fj_ts_series_key(e, 0, buf, sizeof buf, &k), FJ_ENOTFOUND);
    cr_assert_eq(fj_ts_series_key(e, 100000, buf, sizeof buf, &k), FJ_ENOTFOUND);
    /* keys differ by any field, and field boundaries matter */
    fj_ts_key x = key_of("ab", "c", "1"), y = key_of("a", "bc", "1");
    put(e, &x, S, 1);
    put(e, &y, S, 2);
    cr_assert_neq(id_of(e, &x), id_of(e, &y));
    /* too long */
    static char big[FJ_TS_KEY_MAX];
    memset(big, 'h', sizeof big);
    fj_ts_key z = key_of("f", "m", "0");
    z.host = (fj_ts_str){big, sizeof big};
    fj_ts_point pt = {z, S, 1};
    size_t done = 99;
    fj_err err = {0};
    cr_assert_eq(fj_ts_append(e, &pt, 1, NULL, &done, &err), FJ_EINVAL);
    cr_assert_eq(done, 0);
    cr_assert_neq(err.message[0], '\0');
    cr_assert_eq(fj_ts_series_find(e, &z, &id), FJ_ENOTFOUND);
    fj_ts_engine_close(e);
    db_free(&d);
}

Test(ts_engine, many_series)
{
    enum { NS = 200000 };
    fj_ts_engine *e = open_engine(0, 0, 0);
    fj_ts_point *pts = malloc(NS * sizeof *pts);
    char (*names)[16] = malloc(NS * sizeof *names);
    for (int i = 0; i < NS; i++) {
        snprintf(names[i], 16, "n%05d", i / 519);
        pts[i].key = key_of(names[i], i % 2 ? "cpu_user" : "clock", "0");
        char *tid = names[i] + 8;
        snprintf(tid, 8, "%d", i % 519);
        pts[i].key.type_id = (fj_ts_str){tid, strlen(tid)};
    }
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < NS; i++) {
            pts[i].t = (1700000040 + 60 * round) * S;
            pts[i].v = i + round;
        }
        size_t done;
        cr_assert_eq(fj_ts_append(e, pts, NS, NULL, &done, NULL), FJ_OK);
        cr_assert_eq(done, NS);
    }
    fj_ts_stats st;
    fj_ts_engine_stats(e, &st);
    cr_assert_eq(st.series, NS);
    cr_assert_eq(st.buffered_points, 3 * NS);
    /* memory: 8 points of room (16 bytes each) plus the series struct, index slots and key bytes,
     * under 256 bytes a series even with every array just doubled */
    cr_assert_lt(st.buffer_bytes, (size_t)NS * (8 * 16 + 256), "%zu", st.buffer_bytes);
    fj_ts_points p = {0};
    for (int i = 0; i < NS; i += 997) {
        uint32_t id;
        cr_assert_eq(fj_ts_series_find(e, &pts[i].key, &id), FJ_OK);
        cr_assert_eq(id, (uint32_t)i + 1);
        cr_assert_eq(rd(e, NULL, id, INT64_MIN, INT64_MAX, &p), FJ_OK);
        cr_assert_eq(p.n, 3);
        cr_assert_eq(p.v[2], i + 2);
    }
    cr_assert_eq(fj_ts_engine_flush(e), FJ_OK);
    fj_ts_engine_stats(e, &st);
    cr_assert_eq(st.buffered_points, 0);
    cr_assert_eq(st.sealed_chunks, NS);
    fj_ts_points_free(&p);
    free(pts);
    free(names);
    fj_ts_engine_close(e);
}

Test(ts_engine, seal_by_age_and_gap_split)
{
    fj_ts_engine *e = open_engine(1000, 100 * S, 0);
    db d;
    db_init(&d);
    fj_ts_key a = key_of("f0107", "cpu_load", "0"), b = key_of("f0107", "mem_used", "0");
    put(e, &a, 0, 1); /* a goes quiet */
    for (int i = 0; i <= 30; i++)
        put(e, &b, i * 10 * S, i);
    /* data time is 300 s: a's buffer (opened at 0) was sealed by the sweep, b's by age */
    cr_assert_eq(emit_commit(&d, e), FJ_OK);
    bool a_sealed = false;
    for (size_t i = 0; i < d.n; i++)
        a_sealed |= d.rows[i].c.series_id == id_of(e, &a);
    cr_assert(a_sealed);
    fj_ts_stats st;
    fj_ts_engine_stats(e, &st);
    cr_assert_lt(st.buffered_points, 31);
    /* a backlog far in the past does not seal point by point */
    fj_ts_key c = key_of("f0107", "ib_recv", "0");
    for (int i = 0; i < 20; i++)
        put(e, &c, (-100000 + i) * S, i);
    cr_assert_eq(emit_commit(&d, e), FJ_OK);
    for (size_t i = 0; i < d.n; i++)
        cr_assert_neq(d.rows[i].c.series_id, id_of(e, &c));
    /* a gap longer than the seal age splits the chunk */
    cr_assert_eq(fj_ts_engine_flush(e), FJ_OK);
    cr_assert_eq(emit_commit(&d, e), FJ_OK);
    fj_ts_key g = key_of("f0107", "nfs4_read", "0");
    put(e, &g, 1000 * S, 1);
    put(e, &g, 1010 * S, 2);
    put(e, &g, 5000 * S, 3);
    size_t before = d.n;
    cr_assert_eq(fj_ts_engine_flush(e), FJ_OK);
    cr_assert_eq(emit_commit(&d, e), FJ_OK);
    size_t gchunks = 0;
    for (size_t i = before; i < d.n; i++)
        gchunks += d.rows[i].c.series_id == id_of(e, &g);
    cr_assert_eq(gchunks, 2);
    fj_ts_points p = {0};
    cr_assert_eq(rd(e, &d, id_of(e, &g), INT64_MIN, INT64_MAX, &p), FJ_OK);
    cr_assert_eq(p.n, 3);
    fj_ts_points_free(&p);
    fj_ts_engine_close(e);
    db_free(&d);
}

Test(ts_engine, seal_age_can_be_off)
{
    fj_ts_engine *e = open_engine(1000, -1, 0);
    fj_ts_key a = key_of("f0114", "cpu_load", "0"), b = key_of("f0114", "mem_used", "0");
    put(e, &a, 0, 1);
    for (int i = 0; i < 100; i++)
        put(e, &b, (int64_t)i * 86400 * S, i); /* daily: no age, no gap split */
    fj_ts_stats st;
    fj_ts_engine_stats(e, &st);
    cr_assert_eq(st.sealed_chunks, 0);
    cr_assert_eq(fj_ts_engine_flush(e), FJ_OK);
    fj_ts_engine_stats(e, &st);
    cr_assert_eq(st.sealed_chunks, 2);
    fj_ts_engine_close(e);
}

Test(ts_engine, memory_limit_seals_round_robin)
{
    fj_ts_engine *e = open_engine(720, 0, 1000);
    char names[100][12];
    fj_ts_key k[100];
    for (int i = 0; i < 100; i++) {
        snprintf(names[i], sizeof names[i], "%d", i);
        k[i] = key_of("f0108", "cpu_user", names[i]);
    }
    fj_ts_stats st;
    for (int r = 0; r < 100; r++) {
        for (int i = 0; i < 100; i++)
            put(e, &k[i], r * 60 * S, r);
        fj_ts_engine_stats(e, &st);
        cr_assert_leq(st.buffered_points, 1000);
    }
    cr_assert_gt(st.sealed_chunks, 100);
    fj_ts_engine_close(e);
}

Test(ts_engine, durable_lsn_follows_commits)
{
    fj_ts_engine *e = open_engine(0, 0, 0);
    db d;
    db_init(&d);
    fj_ts_key a = key_of("f0109", "cpu_user", "0"), b = key_of("f0109", "cpu_user", "1");
    cr_assert_eq(fj_ts_engine_durable_lsn(e), UINT64_MAX);
    fj_ts_engine_set_lsn(e, 10);
    put(e, &a, S, 1);
    fj_ts_engine_set_lsn(e, 11);
    put(e, &b, S, 1);
    put(e, &a, 2 * S, 1);
    cr_assert_eq(fj_ts_engine_durable_lsn(e), 10);
    cr_assert_eq(fj_ts_engine_flush(e), FJ_OK);
    cr_assert_eq(fj_ts_engine_durable_lsn(e), 10); /* sealed, not committed */
    fj_ts_sink sink = {sink_series, sink_chunk, &d, sink_drop};
    cr_assert_eq(fj_ts_engine_emit(e, &sink), FJ_OK);
    fj_ts_engine_set_lsn(e, 12);
    put(e, &b, 3 * S, 1);
    db_commit(&d, e);
    cr_assert_eq(fj_ts_engine_durable_lsn(e), 12);
    /* the value is kept between calls: a later first point into an empty buffer does not raise
     * it, a commit of everything empties it, and the next point starts it again */
    fj_ts_engine_set_lsn(e, 13);
    put(e, &a, 4 * S, 1);
    cr_assert_eq(fj_ts_engine_durable_lsn(e), 12);
    cr_assert_eq(fj_ts_engine_flush(e), FJ_OK);
    cr_assert_eq(fj_ts_engine_emit(e, &sink), FJ_OK);
    db_commit(&d, e);
    cr_assert_eq(fj_ts_engine_durable_lsn(e), UINT64_MAX);
    fj_ts_engine_set_lsn(e, 20);
    put(e, &b, 5 * S, 1);
    cr_assert_eq(fj_ts_engine_durable_lsn(e), 20);
    fj_ts_engine_close(e);
    db_free(&d);
}

static fj_status iter_fail(void *ud, fj_ts_chunk *out)
{
    (void)ud;
    (void)out;
    return FJ_EIO;
}

typedef struct one {
    fj_ts_chunk c;
    bool done;
} one;

static fj_status iter_one(void *ud, fj_ts_chunk *out)
{
    one *o = ud;
    if (o->done)
        return FJ_ENOTFOUND;
    o->done = true;
    *out = o->c;
    return FJ_OK;
}

Test(ts_engine, read_errors)
{
    fj_ts_engine *e = open_engine(0, 0, 0);
    fj_ts_key a = key_of("f0110", "cpu_user", "0");
    put(e, &a, S, 1);
    uint32_t id = id_of(e, &a);
    fj_ts_points p = {0};
    fj_err err = {0};
    cr_assert_eq(fj_ts_read(e, NULL, id, 0, 10 * S, iter_fail, NULL, &p, &err), FJ_EIO);
    cr_assert_eq(p.n, 0);
    unsigned char junk[] = {1, 5, 0x80};
    one o = {.c = {.series_id = id, .seq = 3, .blob = junk, .len = sizeof junk}};
    cr_assert_eq(fj_ts_read(e, NULL, id, 0, 10 * S, iter_one, &o, &p, &err), FJ_EIO);
    cr_assert(strstr(err.message, "corrupt"));
    o = (one){.c = {.series_id = id + 1, .seq = 3, .blob = junk, .len = sizeof junk}};
    cr_assert_eq(fj_ts_read(e, NULL, id, 0, 10 * S, iter_one, &o, &p, &err), FJ_EIO);
    /* an unknown series is not an error: nothing in memory */
    cr_assert_eq(fj_ts_read(e, NULL, 777, 0, 10 * S, NULL, NULL, &p, NULL), FJ_OK);
    cr_assert_eq(p.n, 0);
    size_t done;
    uint32_t bad = 777;
    int64_t t = 1;
    double v = 1;
    cr_assert_eq(fj_ts_append_ids(e, &bad, &t, &v, 1, &done), FJ_ENOTFOUND);
    cr_assert_eq(done, 0);
    fj_ts_points_free(&p);
    fj_ts_engine_close(e);
}

Test(ts_engine, append_ids_and_nan_values)
{
    fj_ts_engine *e = open_engine(16, 0, 0);
    db d;
    db_init(&d);
    fj_ts_key a = key_of("f0111", "cpu_user", "0");
    uint32_t id;
    cr_assert_eq(fj_ts_series_get(e, &a, true, &id), FJ_OK);
    enum { N = 100 };
    uint32_t ids[N];
    int64_t t[N];
    double v[N];
    for (int i = 0; i < N; i++) {
        ids[i] = id;
        t[i] = i * S;
        v[i] = i % 7 == 0 ? NAN : i * 0.5;
    }
    size_t done;
    cr_assert_eq(fj_ts_append_ids(e, ids, t, v, N, &done), FJ_OK);
    cr_assert_eq(done, N);
    cr_assert_eq(fj_ts_engine_flush(e), FJ_OK);
    cr_assert_eq(emit_commit(&d, e), FJ_OK);
    fj_ts_points p = {0};
    cr_assert_eq(rd(e, &d, id, INT64_MIN, INT64_MAX, &p), FJ_OK);
    cr_assert_eq(p.n, N);
    for (int i = 0; i < N; i++)
        cr_assert(memcmp(&p.v[i], &v[i], 8) == 0);
    fj_ts_points_free(&p);
    fj_ts_engine_close(e);
    db_free(&d);
}

Test(ts_engine, out_of_memory_on_append_is_reported)
{
    fj_ts_engine *e = open_engine(8, 0, 0);
    fj_ts_key a = key_of("f0112", "cpu_user", "0");
    put(e, &a, S, 1);
    fj_ts_key b = key_of("f0112", "cpu_user", "1");
    fj_ts_point p = {b, S, 1};
    size_t done = 9;
    fj_alloc_fail_after(0);
    fj_status st = fj_ts_append(e, &p, 1, NULL, &done, NULL);
    fj_alloc_fail_after(-1);
    cr_assert_eq(st, FJ_ENOMEM);
    cr_assert_eq(done, 0);
    /* every append answered FJ_OK is kept, a failing seal included (the compressed buffer may
     * need memory to grow before the seal is reached: those appends say FJ_ENOMEM) */
    for (int i = 2; i < 7; i++)
        put(e, &a, i * S, i);
    size_t ok = 0;
    fj_alloc_fail_after(0);
    for (int i = 7; i < 12; i++) {
        fj_ts_point q = {a, i * S, i};
        ok += fj_ts_append(e, &q, 1, NULL, NULL, NULL) == FJ_OK;
    }
    fj_alloc_fail_after(-1);
    fj_ts_points r = {0};
    cr_assert_eq(rd(e, NULL, id_of(e, &a), INT64_MIN, INT64_MAX, &r), FJ_OK);
    cr_assert_eq(r.n, 6 + ok);
    for (size_t i = 0; i < r.n; i++)
        cr_assert_eq(r.v[i], (double)(i + 1));
    cr_assert_eq(fj_ts_engine_flush(e), FJ_OK);
    fj_ts_points_free(&r);
    fj_ts_engine_close(e);
}

/* Emit, checkpoint and commit, as the writer's own transaction does. */
static void checkpoint_commit(db *d, fj_ts_engine *e)
{
    fj_ts_sink sink = {sink_series, sink_chunk, d, sink_drop};
    cr_assert_eq(fj_ts_engine_emit(e, &sink), FJ_OK);
    cr_assert_eq(fj_ts_engine_checkpoint(e, &sink), FJ_OK);
    db_commit(d, e);
}

/* A checkpoint stores each open buffer with writes only the request log held, so the log can go
 * (the durable lsn passes them); a value replaced afterwards is such a write again; the next
 * checkpoint replaces the stored one, and the seal of the buffer deletes it. Reads, from the
 * engine with the database or from the database alone (as after a crash), see every point once. */
Test(ts_engine, checkpoint_makes_open_buffers_durable_and_the_seal_deletes_it)
{
    fj_ts_engine *e = open_engine(100, 0, 0);
    db d;
    db_init(&d);
    fj_ts_key a = key_of("f0112", "cpu_user", "0"), b = key_of("f0112", "cpu_user", "1");
    fj_ts_engine_set_lsn(e, 1);
    for (int i = 0; i < 10; i++)
        put(e, &a, i * S, i + 0.5);
    fj_ts_engine_set_lsn(e, 2);
    for (int i = 0; i < 5; i++)
        put(e, &b, i * S, -i);
    cr_assert_eq(emit_commit(&d, e), FJ_OK);
    cr_assert_eq(fj_ts_engine_durable_lsn(e), 1);
    cr_assert_eq(d.n, 0);

    checkpoint_commit(&d, e);
    cr_assert_eq(d.n, 2);
    cr_assert_eq(fj_ts_engine_durable_lsn(e), UINT64_MAX); /* nothing waits for the log */
    fj_ts_stats st;
    fj_ts_engine_stats(e, &st);
    cr_assert_eq(st.buffered_points, 15); /* the buffers stay open */
    cr_assert_eq(st.unckpt_writes, 0);
    fj_ts_points p = {0};
    cr_assert_eq(rd(e, &d, id_of(e, &a), INT64_MIN, INT64_MAX, &p), FJ_OK);
    cr_assert_eq(p.n, 10);
    cr_assert_eq(rd(NULL, &d, id_of(e, &a), INT64_MIN, INT64_MAX, &p), FJ_OK);
    cr_assert_eq(p.n, 10);
    cr_assert_eq(p.v[9], 9.5);

    /* nothing new: a second checkpoint hands nothing */
    checkpoint_commit(&d, e);
    cr_assert_eq(d.n, 2);

    /* the newest value replaced, and one more point: only a's buffer is written again */
    fj_ts_engine_set_lsn(e, 3);
    put(e, &a, 9 * S, 99);
    cr_assert_eq(fj_ts_engine_durable_lsn(e), 3);
    put(e, &a, 10 * S, 100);
    cr_assert_eq(emit_commit(&d, e), FJ_OK);
    cr_assert_eq(fj_ts_engine_durable_lsn(e), 3);
    uint64_t b_seq = 0;
    for (size_t i = 0; i < d.n; i++)
        if (d.rows[i].c.series_id == id_of(e, &b))
            b_seq = d.rows[i].c.seq;
    checkpoint_commit(&d, e);
    cr_assert_eq(d.n, 2);
    cr_assert_eq(fj_ts_engine_durable_lsn(e), UINT64_MAX);
    for (size_t i = 0; i < d.n; i++)
        if (d.rows[i].c.series_id == id_of(e, &b))
            cr_assert_eq(d.rows[i].c.seq, b_seq, "b's checkpoint was written again");
    cr_assert_eq(rd(NULL, &d, id_of(e, &a), INT64_MIN, INT64_MAX, &p), FJ_OK);
    cr_assert_eq(p.n, 11);
    cr_assert_eq(p.v[9], 99);
    cr_assert_eq(p.v[10], 100);

    /* a checkpoint rolled back is handed again and changes nothing */
    fj_ts_engine_set_lsn(e, 4);
    put(e, &b, 5 * S, -5);
    fj_ts_sink sink = {sink_series, sink_chunk, &d, sink_drop};
    cr_assert_eq(fj_ts_engine_checkpoint(e, &sink), FJ_OK);
    db_rollback(&d, e);
    cr_assert_eq(fj_ts_engine_durable_lsn(e), 4);
    checkpoint_commit(&d, e);
    cr_assert_eq(fj_ts_engine_durable_lsn(e), UINT64_MAX);
    cr_assert_eq(d.n, 2);

    /* the seal: the chunks replace the checkpoints */
    cr_assert_eq(fj_ts_engine_flush(e), FJ_OK);
    cr_assert_eq(emit_commit(&d, e), FJ_OK);
    cr_assert_eq(d.n, 2);
    fj_ts_engine_stats(e, &st);
    cr_assert_eq(st.buffered_points, 0);
    cr_assert_eq(rd(e, &d, id_of(e, &a), INT64_MIN, INT64_MAX, &p), FJ_OK);
    cr_assert_eq(p.n, 11);
    cr_assert_eq(p.v[9], 99);
    cr_assert_eq(rd(NULL, &d, id_of(e, &b), INT64_MIN, INT64_MAX, &p), FJ_OK);
    cr_assert_eq(p.n, 6);
    fj_ts_points_free(&p);
    fj_ts_engine_close(e);
    db_free(&d);
}

/* A buffer that took a late point (plain pairs) is checkpointed sorted, its last write winning. */
Test(ts_engine, checkpoint_of_a_buffer_with_late_points)
{
    fj_ts_engine *e = open_engine(100, 0, 0);
    db d;
    db_init(&d);
    fj_ts_key a = key_of("f0112", "cpu_user", "0");
    fj_ts_engine_set_lsn(e, 1);
    put(e, &a, 10 * S, 1);
    put(e, &a, 20 * S, 2);
    put(e, &a, 5 * S, 3);
    put(e, &a, 10 * S, 4);
    checkpoint_commit(&d, e);
    cr_assert_eq(d.n, 1);
    fj_ts_points p = {0};
    cr_assert_eq(rd(NULL, &d, id_of(e, &a), INT64_MIN, INT64_MAX, &p), FJ_OK);
    cr_assert_eq(p.n, 3);
    cr_assert_eq(p.t[0], 5 * S);
    cr_assert_eq(p.v[1], 4);
    cr_assert_eq(rd(e, &d, id_of(e, &a), INT64_MIN, INT64_MAX, &p), FJ_OK);
    cr_assert_eq(p.n, 3);
    cr_assert_eq(p.v[1], 4);
    fj_ts_points_free(&p);
    fj_ts_engine_close(e);
    db_free(&d);
}

/* A seal that runs out of memory part way (a buffer spanning a gap, so two chunks) takes back
 * the chunks it made: the points stay buffered, whole, and are sealed once memory is back. */
Test(ts_engine, seal_failing_part_way_keeps_the_buffer_whole)
{
    for (long k = 0; k < 40; k++) {
        fj_ts_engine *e = open_engine(0, 10 * S, 0);
        fj_ts_key a = key_of("f0112", "cpu_user", "0");
        /* 104..108 s, then late points at 0..4 s: one buffer, not aged (its data time is 108 s),
         * with a gap of 100 s inside */
        for (int i = 0; i < 5; i++)
            put(e, &a, (104 + i) * S, i + 10.5);
        for (int i = 0; i < 5; i++)
            put(e, &a, i * S, i + 0.25);
        fj_alloc_fail_after(k);
        fj_status st = fj_ts_engine_flush(e);
        fj_alloc_fail_after(-1);
        cr_assert(st == FJ_OK || st == FJ_ENOMEM);
        fj_ts_stats ss;
        fj_ts_engine_stats(e, &ss);
        cr_assert(st == FJ_OK ? ss.pending_chunks == 2 && ss.buffered_points == 0
                              : ss.pending_chunks == 0 && ss.buffered_points == 10,
                  "after %ld allocations: %s, %zu chunks, %zu buffered", k, fj_status_name(st), ss.pending_chunks,
                  ss.buffered_points);
        cr_assert_eq(fj_ts_engine_flush(e), FJ_OK);
        fj_ts_engine_stats(e, &ss);
        cr_assert_eq(ss.pending_chunks, 2);
        cr_assert_eq(ss.sealed_points, 10);
        fj_ts_points r = {0};
        cr_assert_eq(rd(e, NULL, id_of(e, &a), INT64_MIN, INT64_MAX, &r), FJ_OK);
        cr_assert_eq(r.n, 10);
        cr_assert_eq(r.t[5], 104 * S);
        cr_assert_eq(r.v[9], 14.5);
        fj_ts_points_free(&r);
        fj_ts_engine_close(e);
    }
}

/* A writer appends one point after another to one series, sealing often and committing to the
 * fake database, while a reader reads the whole series: every point the writer had finished
 * before the read started must be in the result, in order, exactly once. */
typedef struct race {
    fj_ts_engine *e;
    db *d;
    fj_ts_key k;
    atomic_long written;
    atomic_bool stop;
    atomic_int reads;
    int failures;
} race;

static void *writer(void *arg)
{
    race *r = arg;
    for (long i = 1; i <= 20000; i++) {
        fj_ts_point p = {r->k, i * S, (double)i};
        fj_ts_append(r->e, &p, 1, NULL, NULL, NULL);
        atomic_store(&r->written, i);
        if (i % 37 == 0)
            emit_commit(r->d, r->e);
        /* on a loaded machine the reader might not run at all before the writer is done: wait
         * for a few reads at two points so they really overlap seals and commits */
        if (i == 5000 || i == 15000) {
            int want = atomic_load(&r->reads) + 3;
            while (atomic_load(&r->reads) < want)
                sched_yield();
        }
    }
    atomic_store(&r->stop, true);
    return NULL;
}

static void *reader(void *arg)
{
    race *r = arg;
    fj_ts_points p = {0};
    fj_ts_codec *c = fj_ts_codec_create();
    uint32_t id = 0;
    while (!atomic_load(&r->stop)) {
        if (!id && fj_ts_series_find(r->e, &r->k, &id) != FJ_OK)
            continue;
        long before = atomic_load(&r->written);
        iter it = {.d = r->d, .id = id};
        if (fj_ts_read(r->e, c, id, INT64_MIN, INT64_MAX, next_chunk, &it, &p, NULL) != FJ_OK) {
            r->failures++;
            continue;
        }
        atomic_fetch_add(&r->reads, 1);
        if ((long)p.n < before)
            r->failures++;
        for (size_t i = 0; i < p.n; i++)
            if (p.t[i] != (int64_t)(i + 1) * S || p.v[i] != (double)(i + 1)) {
                r->failures++;
                break;
            }
    }
    fj_ts_points_free(&p);
    fj_ts_codec_destroy(c);
    return NULL;
}

Test(ts_engine, reader_never_misses_points_during_seal_and_commit)
{
    race r = {.e = open_engine(25, 0, 0), .k = key_of("f0113", "cpu_user", "0")};
    db d;
    db_init(&d);
    r.d = &d;
    pthread_t w, rt;
    pthread_create(&rt, NULL, reader, &r);
    pthread_create(&w, NULL, writer, &r);
    pthread_join(w, NULL);
    pthread_join(rt, NULL);
    cr_assert_eq(r.failures, 0, "%d of %d reads wrong", r.failures, atomic_load(&r.reads));
    cr_assert_geq(atomic_load(&r.reads), 6);
    fj_ts_engine_close(r.e);
    db_free(&d);
}

/* ---- the lazy catalog ------------------------------------------------------------------- */

/* The database's catalog as the fake holds it: hosts "s<id>" of metric "m", ids 1..n_stored, and
 * what the engine asked. admit refuses hosts starting with 'x'. */
typedef struct fake_cat {
    uint32_t n_stored;
    int finds, keys, admits;
    char host[16];
} fake_cat;

static fj_status cat_find(void *ud, const fj_ts_key *k, uint32_t *id, uint8_t *ftype)
{
    fake_cat *c = ud;
    *ftype = FJ_TS_FLOAT;
    c->finds++;
    unsigned n = 0;
    if (k->host.n < 2 || k->host.p[0] != 's' || sscanf(k->host.p + 1, "%u", &n) != 1 || n == 0 || n > c->n_stored)
        return FJ_ENOTFOUND;
    *id = n;
    return FJ_OK;
}

static fj_status cat_key(void *ud, uint32_t id, fj_ts_key *out)
{
    fake_cat *c = ud;
    c->keys++;
    if (id == 0 || id > c->n_stored)
        return FJ_ENOTFOUND;
    snprintf(c->host, sizeof c->host, "s%u", id);
    *out = key_of(c->host, "m", "0");
    return FJ_OK;
}

static bool cat_admit(void *ud, const fj_ts_key *k)
{
    fake_cat *c = ud;
    c->admits++;
    return k->host.n && k->host.p[0] != 'x';
}

Test(ts_engine, lazy_catalog_loads_on_first_use_and_admits_new_series)
{
    fj_ts_engine *e = open_engine(100, 0, 0);
    fake_cat c = {.n_stored = 1000};
    fj_ts_catalog cat = {cat_find, cat_key, cat_admit, &c};
    fj_ts_engine_set_catalog(e, &cat, c.n_stored + 1);
    fj_ts_stats st;
    fj_ts_engine_stats(e, &st);
    cr_assert_eq(st.series, 0, "nothing is read at start");

    fj_ts_key stored = key_of("s500", "m", "0"), fresh = key_of("n1", "m", "0"), refused = key_of("x1", "m", "0");
    fj_ts_point pts[4] = {{stored, 10 * S, 1}, {fresh, 10 * S, 2}, {refused, 10 * S, 3}, {stored, 20 * S, 4}};
    uint32_t ids[4];
    cr_assert_eq(fj_ts_append(e, pts, 4, ids, NULL, NULL), FJ_OK, "a refused series is no failure");
    cr_assert_eq(ids[0], 500, "a stored series keeps its id");
    cr_assert_eq(ids[1], 1001, "a new one gets the next id after the stored ones");
    cr_assert_eq(ids[2], 0, "a refused one's point is dropped");
    cr_assert_eq(ids[3], 500);
    cr_assert_eq(c.finds, 3, "each key is looked up once: the second point of s500 is found in memory");
    cr_assert_eq(c.admits, 2, "admit is asked only for keys the catalog does not have");
    fj_ts_engine_stats(e, &st);
    cr_assert_eq(st.series, 2);
    cr_assert_eq(st.loaded, 1);
    cr_assert_eq(st.refused, 1);
    cr_assert_eq(st.buffered_points, 3, "the refused point is not buffered");

    /* replay of a logged point names an id the engine does not hold */
    uint32_t rid[2] = {7, 5000};
    int64_t t[2] = {10 * S, 10 * S};
    double v[2] = {1, 2};
    size_t done = 0;
    cr_assert_eq(fj_ts_append_ids(e, rid, t, v, 1, &done), FJ_OK);
    cr_assert_eq(done, 1);
    fj_ts_key k7 = key_of("s7", "m", "0");
    cr_assert_eq(id_of(e, &k7), 7, "loaded by its key");
    cr_assert_eq(fj_ts_append_ids(e, rid + 1, t, v, 1, &done), FJ_ENOTFOUND, "an id the catalog lacks");
    size_t held = 0, loaded = 0;
    fj_ts_engine_series_held(e, &held, &loaded);
    cr_assert_eq(held, 3);
    cr_assert_eq(loaded, 2);
    fj_ts_engine_close(e);
}

/* Emit, share and commit, as the writer's own transaction does when it shares. */
static void share_commit(db *d, fj_ts_engine *e)
{
    fj_ts_sink sink = {sink_series, sink_chunk, d, sink_drop};
    cr_assert_eq(fj_ts_engine_emit(e, &sink), FJ_OK);
    cr_assert_eq(fj_ts_engine_share(e, &sink, sink_drop_range), FJ_OK);
    db_commit(d, e);
}

static size_t rows_of(const db *d, uint32_t id)
{
    size_t n = 0;
    for (size_t i = 0; i < d->n; i++)
        n += d->rows[i].c.series_id == id;
    return n;
}

/* A share stores a buffer once, then only what was written since (a piece: the replaced newest
 * point again), so what it writes follows the writes, not the buffer; at FJ_TS_SHARE_PIECES
 * pieces it stores the buffer whole instead, and the seal deletes every piece. The database
 * alone (another server, or after a crash) reads every point with its last value; the engine's
 * reads skip its own pieces. */
Test(ts_engine, share_stores_pieces_folds_them_and_the_seal_deletes_them)
{
    fj_ts_engine *e = open_engine(700, 0, 0);
    db d;
    db_init(&d);
    fj_ts_key a = key_of("f0112", "cpu_user", "0");
    fj_ts_engine_set_lsn(e, 1);
    for (int i = 0; i < 10; i++)
        put(e, &a, i * S, i + 0.5);
    cr_assert_eq(emit_commit(&d, e), FJ_OK);
    uint32_t id = id_of(e, &a);
    share_commit(&d, e);
    cr_assert_eq(rows_of(&d, id), 1);
    cr_assert_eq(d.rows[0].c.count, 10); /* the first share: the whole buffer */
    cr_assert_eq(fj_ts_engine_durable_lsn(e), UINT64_MAX);

    share_commit(&d, e); /* nothing new: nothing handed */
    cr_assert_eq(rows_of(&d, id), 1);

    fj_ts_engine_set_lsn(e, 2);
    put(e, &a, 10 * S, 10.5);
    put(e, &a, 11 * S, 11.5);
    share_commit(&d, e);
    cr_assert_eq(rows_of(&d, id), 2);
    cr_assert_eq(d.rows[1].c.count, 2, "a piece holds the two new points, not the buffer");
    put(e, &a, 11 * S, 77); /* the newest point replaced: handed again */
    share_commit(&d, e);
    cr_assert_eq(rows_of(&d, id), 3);
    cr_assert_eq(d.rows[2].c.count, 1);
    put(e, &a, 11 * S, 77); /* re-sent as it is: nothing to share, nothing waits for the log */
    cr_assert_eq(fj_ts_engine_durable_lsn(e), UINT64_MAX);
    share_commit(&d, e);
    cr_assert_eq(rows_of(&d, id), 3);

    fj_ts_points p = {0};
    cr_assert_eq(rd(NULL, &d, id, INT64_MIN, INT64_MAX, &p), FJ_OK); /* the database alone */
    cr_assert_eq(p.n, 12);
    cr_assert_eq(p.v[11], 77);
    cr_assert_eq(p.v[10], 10.5);
    cr_assert_eq(rd(e, &d, id, INT64_MIN, INT64_MAX, &p), FJ_OK);
    cr_assert_eq(p.n, 12);
    cr_assert_eq(p.v[11], 77);

    /* pieces up to the limit, then one checkpoint of the whole buffer replaces them */
    int t = 12;
    while (rows_of(&d, id) < FJ_TS_SHARE_PIECES) {
        put(e, &a, t * S, t);
        t++;
        share_commit(&d, e);
    }
    put(e, &a, t * S, t);
    t++;
    share_commit(&d, e);
    cr_assert_eq(rows_of(&d, id), 1, "folded into one");
    cr_assert_eq(d.rows[d.n - 1].c.count, (uint32_t)t);
    cr_assert_eq(rd(NULL, &d, id, INT64_MIN, INT64_MAX, &p), FJ_OK);
    cr_assert_eq(p.n, (size_t)t);
    cr_assert_eq(p.v[11], 77);

    /* more pieces, then the seal deletes them all with its chunk */
    for (int k = 0; k < 3; k++, t++) {
        put(e, &a, t * S, t);
        share_commit(&d, e);
    }
    cr_assert_eq(rows_of(&d, id), 4);
    cr_assert_eq(fj_ts_engine_flush(e), FJ_OK);
    cr_assert_eq(emit_commit(&d, e), FJ_OK);
    cr_assert_eq(rows_of(&d, id), 1);
    cr_assert_eq(d.rows[d.n - 1].c.count, (uint32_t)t);
    cr_assert_eq(rd(NULL, &d, id, INT64_MIN, INT64_MAX, &p), FJ_OK);
    cr_assert_eq(p.n, (size_t)t);
    cr_assert_eq(p.v[11], 77);

    /* a late point (plain pairs): the share stores the whole buffer, sorted, the last write winning */
    put(e, &a, 100 * S, 1);
    share_commit(&d, e);
    put(e, &a, 101 * S, 2);
    share_commit(&d, e);
    cr_assert_eq(rows_of(&d, id), 3);
    put(e, &a, 50 * S, 3);
    put(e, &a, 101 * S, 4);
    share_commit(&d, e);
    cr_assert_eq(rows_of(&d, id), 2, "the sealed chunk and one checkpoint of the whole buffer");
    cr_assert_eq(rd(NULL, &d, id, 50 * S, INT64_MAX, &p), FJ_OK);
    cr_assert_eq(p.n, 3);
    cr_assert_eq(p.v[0], 3);
    cr_assert_eq(p.v[2], 4);
    fj_ts_points_free(&p);
    fj_ts_engine_close(e);
    db_free(&d);
}
